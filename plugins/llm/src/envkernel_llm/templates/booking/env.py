# Meeting-room reservations: tool(env, **arguments) over env.db; ToolError(code, message) on bad input.

def _new_id(env, table, prefix):
    while True:  # env.new_id counts from 1 and does not know the seed's ids
        new = env.new_id(prefix)
        if env.db.execute(f"SELECT 1 FROM {table} WHERE id = ?", (new,)).fetchone() is None:
            return new


def _slot(value, name):
    if not isinstance(value, str) or len(value) < 16 or value[4] != "-" or "T" not in value:
        raise ToolError("invalid", f"{name} must be an ISO 8601 date-time like 2026-02-02T09:00:00Z, got {value!r}")
    return value


def list_rooms(env, min_capacity=1):
    if isinstance(min_capacity, bool) or not isinstance(min_capacity, int) or min_capacity < 1:
        raise ToolError("invalid", "min_capacity must be a positive integer")
    return env.db.execute("SELECT id, name, capacity FROM rooms WHERE capacity >= ? ORDER BY capacity, id", (min_capacity,)).fetchall()


def reserve_room(env, room_id, organizer, starts_at, ends_at, attendees):
    room = env.db.execute("SELECT id, capacity FROM rooms WHERE id = ?", (room_id,)).fetchone()
    if room is None:
        raise ToolError("not_found", f"no room {room_id!r}; use list_rooms")
    starts_at, ends_at = _slot(starts_at, "starts_at"), _slot(ends_at, "ends_at")
    if ends_at <= starts_at:
        raise ToolError("invalid", "ends_at must be after starts_at")
    if isinstance(attendees, bool) or not isinstance(attendees, int) or attendees < 1:
        raise ToolError("invalid", "attendees must be a positive integer")
    if attendees > room["capacity"]:
        raise ToolError("invalid", f"room {room_id} holds {room['capacity']} people, not {attendees}")
    clash = env.db.execute(
        "SELECT id FROM reservations WHERE room_id = ? AND status = 'confirmed' AND starts_at < ? AND ends_at > ?",
        (room_id, ends_at, starts_at),
    ).fetchone()
    if clash is not None:
        raise ToolError("conflict", f"room {room_id} is taken then (reservation {clash['id']})")
    res_id = _new_id(env, "reservations", "res")
    env.db.execute(
        "INSERT INTO reservations VALUES (?, ?, ?, ?, ?, ?, 'confirmed')",
        (res_id, room_id, organizer, starts_at, ends_at, attendees),
    )
    return env.db.execute("SELECT id, room_id, organizer, starts_at, ends_at, attendees, status FROM reservations WHERE id = ?", (res_id,)).fetchone()


def cancel_reservation(env, reservation_id):
    row = env.db.execute("SELECT id, status FROM reservations WHERE id = ?", (reservation_id,)).fetchone()
    if row is None:
        raise ToolError("not_found", f"no reservation {reservation_id!r}")
    if row["status"] != "confirmed":
        raise ToolError("conflict", f"reservation {reservation_id} is already cancelled")
    env.db.execute("UPDATE reservations SET status = 'cancelled' WHERE id = ?", (reservation_id,))
    return {"id": reservation_id, "status": "cancelled"}
