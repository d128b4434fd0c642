CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    balance_cents INTEGER NOT NULL CHECK (balance_cents >= 0)
);
CREATE TABLE transfers (
    id TEXT PRIMARY KEY,
    from_account TEXT NOT NULL REFERENCES accounts (id),
    to_account TEXT NOT NULL REFERENCES accounts (id),
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    memo TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
INSERT INTO accounts VALUES ('acc_0001', 'Maya Patel', 125000), ('acc_0002', 'Jon Reyes', 4000), ('acc_0003', 'Maya Patel', 0);
INSERT INTO transfers VALUES ('trf_0001', 'acc_0001', 'acc_0002', 2500, 'rent share', '2026-01-05T08:00:00Z');
