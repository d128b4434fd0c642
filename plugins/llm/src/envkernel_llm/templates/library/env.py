# Tools of a lending library. Each tool is tool(env, **arguments); env.db is SQLite (rows as dicts),
# env.new_id(prefix) and env.now() are deterministic; raise ToolError(code, message) on bad input.

def _new_id(env, table, prefix):
    while True:  # env.new_id counts from 1 and does not know the seed's ids
        new = env.new_id(prefix)
        if env.db.execute(f"SELECT 1 FROM {table} WHERE id = ?", (new,)).fetchone() is None:
            return new


def _member(env, member_id):
    row = env.db.execute("SELECT id, name, email FROM members WHERE id = ?", (member_id,)).fetchone()
    if row is None:
        raise ToolError("not_found", f"no member {member_id!r}; use get_member with their email")
    return row


def _loan(env, loan_id):
    row = env.db.execute("SELECT id, book_id, member_id, status, borrowed_at FROM loans WHERE id = ?", (loan_id,)).fetchone()
    if row is None:
        raise ToolError("not_found", f"no loan {loan_id!r}; use list_loans to see a member's loans")
    return row


def search_books(env, query):
    if not isinstance(query, str) or not query.strip():
        raise ToolError("invalid", "query must be a non-empty string")
    like = "%" + query.strip().lower() + "%"
    return env.db.execute(
        "SELECT id, title, author, available FROM books WHERE lower(title) LIKE ? OR lower(author) LIKE ? ORDER BY id",
        (like, like),
    ).fetchall()


def get_member(env, email):
    row = env.db.execute("SELECT id, name, email FROM members WHERE lower(email) = lower(?)", (email,)).fetchone()
    if row is None:
        raise ToolError("not_found", f"no member with email {email!r}")
    return row


def list_loans(env, member_id, status=None):
    _member(env, member_id)
    if status is not None and status not in ("open", "returned"):
        raise ToolError("invalid", "status must be 'open' or 'returned'")
    sql, params = "SELECT id, book_id, member_id, status, borrowed_at FROM loans WHERE member_id = ?", [member_id]
    if status is not None:
        sql += " AND status = ?"
        params.append(status)
    return env.db.execute(sql + " ORDER BY borrowed_at, id", params).fetchall()


def borrow_book(env, member_id, book_id):
    _member(env, member_id)
    book = env.db.execute("SELECT id, title, available FROM books WHERE id = ?", (book_id,)).fetchone()
    if book is None:
        raise ToolError("not_found", f"no book {book_id!r}; use search_books")
    if book["available"] < 1:
        raise ToolError("conflict", f"no copy of {book['title']!r} is available")
    loan_id = _new_id(env, "loans", "loan")
    env.db.execute("UPDATE books SET available = available - 1 WHERE id = ?", (book_id,))
    env.db.execute(
        "INSERT INTO loans (id, book_id, member_id, status, borrowed_at) VALUES (?, ?, ?, 'open', ?)",
        (loan_id, book_id, member_id, env.now()),
    )
    return _loan(env, loan_id)


def return_book(env, loan_id):
    loan = _loan(env, loan_id)
    if loan["status"] != "open":
        raise ToolError("conflict", f"loan {loan_id} was already returned")
    env.db.execute("UPDATE loans SET status = 'returned' WHERE id = ?", (loan_id,))
    env.db.execute("UPDATE books SET available = available + 1 WHERE id = ?", (loan["book_id"],))
    return _loan(env, loan_id)
