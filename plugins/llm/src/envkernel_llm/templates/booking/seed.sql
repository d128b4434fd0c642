CREATE TABLE rooms (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    capacity INTEGER NOT NULL CHECK (capacity > 0)
);
CREATE TABLE reservations (
    id TEXT PRIMARY KEY,
    room_id TEXT NOT NULL REFERENCES rooms (id),
    organizer TEXT NOT NULL,
    starts_at TEXT NOT NULL,
    ends_at TEXT NOT NULL,
    attendees INTEGER NOT NULL CHECK (attendees > 0),
    status TEXT NOT NULL CHECK (status IN ('confirmed', 'cancelled'))
);
INSERT INTO rooms VALUES ('room_0001', 'Aurora', 4), ('room_0002', 'Borealis', 12);
INSERT INTO reservations VALUES
    ('res_0001', 'room_0001', 'kim@example.com', '2026-02-02T09:00:00Z', '2026-02-02T10:00:00Z', 3, 'confirmed'),
    ('res_0002', 'room_0002', 'lee@example.com', '2026-02-02T13:00:00Z', '2026-02-02T15:00:00Z', 10, 'confirmed');
