# Accounts and transfers in integer cents: tool(env, **arguments) over env.db; ToolError on bad input.

def _new_id(env, table, prefix):
    while True:  # env.new_id counts from 1 and does not know the seed's ids
        new = env.new_id(prefix)
        if env.db.execute(f"SELECT 1 FROM {table} WHERE id = ?", (new,)).fetchone() is None:
            return new


def _account(env, account_id):
    row = env.db.execute("SELECT id, owner, balance_cents FROM accounts WHERE id = ?", (account_id,)).fetchone()
    if row is None:
        raise ToolError("not_found", f"no account {account_id!r}")
    return row


def get_balance(env, account_id):
    return _account(env, account_id)


def list_transfers(env, account_id):
    _account(env, account_id)
    return env.db.execute(
        "SELECT id, from_account, to_account, amount_cents, memo, created_at FROM transfers"
        " WHERE from_account = ? OR to_account = ? ORDER BY created_at, id",
        (account_id, account_id),
    ).fetchall()


def transfer(env, from_account, to_account, amount_cents, memo=""):
    if isinstance(amount_cents, bool) or not isinstance(amount_cents, int) or amount_cents < 1:
        raise ToolError("invalid", "amount_cents must be a positive integer")
    if from_account == to_account:
        raise ToolError("invalid", "from_account and to_account must differ")
    source, _target = _account(env, from_account), _account(env, to_account)
    if source["balance_cents"] < amount_cents:
        raise ToolError("conflict", f"account {from_account} holds {source['balance_cents']} cents, less than {amount_cents}")
    env.db.execute("UPDATE accounts SET balance_cents = balance_cents - ? WHERE id = ?", (amount_cents, from_account))
    env.db.execute("UPDATE accounts SET balance_cents = balance_cents + ? WHERE id = ?", (amount_cents, to_account))
    trf_id = _new_id(env, "transfers", "trf")
    env.db.execute("INSERT INTO transfers VALUES (?, ?, ?, ?, ?, ?)", (trf_id, from_account, to_account, amount_cents, memo or "", env.now()))
    return env.db.execute("SELECT id, from_account, to_account, amount_cents, memo, created_at FROM transfers WHERE id = ?", (trf_id,)).fetchone()
