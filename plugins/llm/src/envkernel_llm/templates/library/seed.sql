CREATE TABLE books (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    author TEXT NOT NULL,
    copies INTEGER NOT NULL CHECK (copies >= 0),
    available INTEGER NOT NULL CHECK (available >= 0)
);
CREATE TABLE members (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE
);
CREATE TABLE loans (
    id TEXT PRIMARY KEY,
    book_id TEXT NOT NULL REFERENCES books (id),
    member_id TEXT NOT NULL REFERENCES members (id),
    status TEXT NOT NULL CHECK (status IN ('open', 'returned')),
    borrowed_at TEXT NOT NULL
);
INSERT INTO books VALUES
    ('bk_0001', 'The Left Hand of Darkness', 'Ursula K. Le Guin', 2, 1),
    ('bk_0002', 'Middlemarch', 'George Eliot', 1, 1),
    ('bk_0003', 'Invisible Cities', 'Italo Calvino', 1, 0);
INSERT INTO members VALUES
    ('mem_0001', 'Ada Osei', 'ada.osei@example.org'),
    ('mem_0002', 'Tomas Berg', 'tomas.berg@example.org');
INSERT INTO loans VALUES
    ('loan_0001', 'bk_0001', 'mem_0001', 'open', '2026-01-10T10:00:00Z'),
    ('loan_0002', 'bk_0003', 'mem_0002', 'open', '2026-01-11T15:30:00Z');
