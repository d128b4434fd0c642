"""Deliberately broken environments: the suite a verifier's recall is measured on.

Two families:

- **code faults**: variants of a small notes app written as ``env.py`` (notebooks and notes),
  each with one bug planted in one tool (:data:`CODE_FAULTS`): a write that does not persist, a
  wrong 404, broken pagination, a list that omits rows, a delete that deletes nothing, an update
  that changes the wrong row, and more. ``notes_env()`` without a fault is the healthy control.
- **model faults**: a model environment (for example from the shipped OpenAPI corpus) with the
  engine's ``test_fault`` knob set on one tool (:func:`model_faults`). Only tests set that knob.

A verifier *catches* a broken environment when it drops the faulty tool or rejects the
environment (:func:`caught`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from envkernel_runtime.model import Operation, ResourceModel, TestFault, model_of
from envkernel_schemas import CodeBehaviour, EnvSpec, ModelBehaviour, ToolSpec, VerifyReport

CODE_FAULTS: dict[str, tuple[str, str]] = {
    "create_no_persist": ("create_note", "create answers with a note but never stores it"),
    "create_wrong_value": ("create_note", "create stores a truncated title"),
    "create_overwrites": ("create_note", "create reuses the first note's id and overwrites it"),
    "get_wrong_404": ("get_note", "get says not found for notes created after the seed"),
    "get_no_404": ("get_note", "get of an unknown id returns the first note"),
    "get_wrong_row": ("get_note", "get returns the next note"),
    "get_stale_field": ("get_note", "get returns the title the note had in the seed"),
    "list_omits": ("list_notes", "list leaves out the last note"),
    "list_new_rows_hidden": ("list_notes", "list only shows notes of the seed"),
    "list_pagination": ("list_notes", "offset is ignored: every page is the first"),
    "list_limit_off_by_one": ("list_notes", "list returns one row more than the limit"),
    "list_filter_ignored": ("list_notes", "the status filter is ignored"),
    "update_noop": ("update_note", "update answers with the new title but stores nothing"),
    "update_wrong_row": ("update_note", "update changes the first note instead"),
    "update_clears_body": ("update_note", "update clears the body when only the title is given"),
    "update_all_rows": ("update_note", "update changes every note of the notebook"),
    "delete_noop": ("delete_note", "delete answers ok and deletes nothing"),
    "delete_wrong_row": ("delete_note", "delete removes another note"),
    "archive_noop": ("archive_note", "archive answers ok and changes nothing"),
    "schema_violation": ("get_note", "get returns pinned as a string"),
    "accepts_missing": ("update_note", "update of an unknown id answers ok"),
}
"""Fault -> (the tool it breaks, what is wrong)."""

NOTES_SEED = """\
CREATE TABLE notebooks (id TEXT PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE notes (
    id TEXT PRIMARY KEY, notebook_id TEXT NOT NULL REFERENCES notebooks (id), title TEXT NOT NULL,
    body TEXT NOT NULL DEFAULT '', status TEXT NOT NULL DEFAULT 'active', pinned INTEGER NOT NULL \
DEFAULT 0,
    created_at TEXT NOT NULL
);
INSERT INTO notebooks VALUES ('nb_0001', 'Work'), ('nb_0002', 'Personal'), ('nb_0003', 'Travel');
INSERT INTO notes VALUES
    ('note_0001', 'nb_0001', 'Quarterly planning', 'Draft the Q1 goals.', 'active', 1, \
'2026-01-02T10:00:00Z'),
    ('note_0002', 'nb_0001', 'Design review', 'Bring the mockups.', 'active', 0, \
'2026-01-03T10:00:00Z'),
    ('note_0003', 'nb_0002', 'Grocery list', 'Eggs, milk, bread.', 'archived', 0, \
'2026-01-04T10:00:00Z'),
    ('note_0004', 'nb_0002', 'Gift ideas', 'A scarf for Sam.', 'active', 0, '2026-01-05T10:00:00Z'),
    ('note_0005', 'nb_0003', 'Packing list', 'Passport, charger.', 'active', 1, \
'2026-01-06T10:00:00Z'),
    ('note_0006', 'nb_0001', 'Hiring panel', 'Questions for the panel.', 'archived', 0, \
'2026-01-07T10:00:00Z'),
    ('note_0007', 'nb_0003', 'Hotel options', 'Three near the station.', 'active', 0, \
'2026-01-08T10:00:00Z');
"""

NOTES_ENV = """\
# The notes app of the verifier's recall suite (FAULT, set above, plants one bug).


def _note(env, note_id):
    row = env.db.execute("SELECT * FROM notes WHERE id = ?", (note_id,)).fetchone()
    if row is None:
        raise ToolError("not_found", f"no note {note_id!r}")
    return row


def _out(row):
    out = dict(row)
    out["pinned"] = bool(out["pinned"])
    return out


def list_notebooks(env):
    return env.db.execute("SELECT * FROM notebooks ORDER BY id").fetchall()


def get_notebook(env, notebook_id):
    row = env.db.execute("SELECT * FROM notebooks WHERE id = ?", (notebook_id,)).fetchone()
    if row is None:
        raise ToolError("not_found", f"no notebook {notebook_id!r}")
    return row


def create_note(env, notebook_id, title, body=""):
    get_notebook(env, notebook_id)
    n = env.db.execute("SELECT COUNT(*) AS n FROM notes").fetchone()["n"]
    note_id = f"note_{n + 1:04d}"
    while env.db.execute("SELECT 1 FROM notes WHERE id = ?", (note_id,)).fetchone():
        n += 1
        note_id = f"note_{n + 1:04d}"
    stored = title[: max(1, len(title) // 2)] if FAULT == "create_wrong_value" else title
    row = {"id": note_id, "notebook_id": notebook_id, "title": stored, "body": body, "status": \
"active", "pinned": 0, "created_at": env.now()}
    if FAULT == "create_overwrites":
        row["id"] = "note_0001"
        env.db.execute("DELETE FROM notes WHERE id = 'note_0001'")
    if FAULT != "create_no_persist":
        env.db.execute("INSERT INTO notes VALUES (:id, :notebook_id, :title, :body, :status, \
:pinned, :created_at)", row)
    row["title"] = title
    return _out(row)


def get_note(env, note_id):
    if FAULT == "get_no_404":
        row = env.db.execute("SELECT * FROM notes WHERE id = ?", (note_id,)).fetchone()
        return _out(row or env.db.execute("SELECT * FROM notes ORDER BY id LIMIT 1").fetchone())
    row = _note(env, note_id)
    if FAULT == "get_wrong_404" and row["created_at"] >= "2026-01-15":
        raise ToolError("not_found", f"no note {note_id!r}")
    if FAULT == "get_wrong_row":
        row = env.db.execute("SELECT * FROM notes WHERE id > ? ORDER BY id LIMIT 1", \
(note_id,)).fetchone() or row
    out = _out(row)
    if FAULT == "get_stale_field":  # the title as it was in the seed
        seed = {"note_0001": "Quarterly planning", "note_0002": "Design review", "note_0003": \
"Grocery list", "note_0004": "Gift ideas",
                "note_0005": "Packing list", "note_0006": "Hiring panel", "note_0007": \
"Hotel options"}
        out["title"] = seed.get(row["id"], out["title"])
    if FAULT == "schema_violation":
        out["pinned"] = "yes" if out["pinned"] else "no"
    return out


def list_notes(env, notebook_id=None, status=None, limit=20, offset=0):
    sql, params = "SELECT * FROM notes WHERE 1 = 1", []
    if notebook_id is not None:
        sql += " AND notebook_id = ?"
        params.append(notebook_id)
    if status is not None and FAULT != "list_filter_ignored":
        sql += " AND status = ?"
        params.append(status)
    if FAULT == "list_new_rows_hidden":
        sql += " AND created_at < '2026-01-15'"
    rows = env.db.execute(sql + " ORDER BY id", params).fetchall()
    if FAULT == "list_omits" and rows:
        rows = rows[:-1]
    if FAULT == "list_pagination":
        offset = 0
    end = offset + limit + (1 if FAULT == "list_limit_off_by_one" else 0)
    page = rows[offset:end]
    return {"items": [_out(r) for r in page], "total": len(rows)}


def update_note(env, note_id, title=None, body=None):
    row = None
    try:
        row = _note(env, note_id)
    except ToolError:
        if FAULT != "accepts_missing":
            raise
        return {"id": note_id, "title": title or "", "body": body or "", "status": "active", \
"pinned": False,
                "notebook_id": "nb_0001", "created_at": env.now()}
    target = "note_0001" if FAULT == "update_wrong_row" and note_id != "note_0001" else note_id
    sets = {}
    if title is not None:
        sets["title"] = title
    if body is not None:
        sets["body"] = body
    if FAULT == "update_clears_body" and body is None:
        sets["body"] = ""
    if FAULT != "update_noop":
        for col, v in sets.items():
            if FAULT == "update_all_rows":
                env.db.execute(f"UPDATE notes SET {col} = ? WHERE notebook_id = ?", (v, \
row["notebook_id"]))
            else:
                env.db.execute(f"UPDATE notes SET {col} = ? WHERE id = ?", (v, target))
    out = _out(row)
    out.update(sets)
    return out


def delete_note(env, note_id):
    _note(env, note_id)
    target = note_id
    if FAULT == "delete_wrong_row":
        target = env.db.execute("SELECT id FROM notes WHERE id != ? ORDER BY id LIMIT 1", \
(note_id,)).fetchone()["id"]
    if FAULT != "delete_noop":
        env.db.execute("DELETE FROM notes WHERE id = ?", (target,))
    return {"deleted": True, "id": note_id}


def archive_note(env, note_id):
    row = _note(env, note_id)
    if row["status"] == "archived":
        raise ToolError("conflict", f"note {note_id} is archived already")
    if FAULT != "archive_noop":
        env.db.execute("UPDATE notes SET status = 'archived' WHERE id = ?", (note_id,))
    out = _out(row)
    out["status"] = "archived"
    return out
"""


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": required or [],
        "additionalProperties": False,
    }


_NOTE = _obj(
    {
        "id": {"type": "string"},
        "notebook_id": {"type": "string"},
        "title": {"type": "string"},
        "body": {"type": "string"},
        "status": {"type": "string", "enum": ["active", "archived"]},
        "pinned": {"type": "boolean"},
        "created_at": {"type": "string"},
    },
    ["id", "notebook_id", "title", "status", "pinned"],
)
_NOTEBOOK = _obj({"id": {"type": "string"}, "name": {"type": "string"}}, ["id", "name"])
_ID = {"type": "string", "description": "Note id, like note_0001."}

NOTES_TOOLS = [
    ToolSpec(
        name="list_notebooks",
        description="List notebooks.",
        parameters=_obj({}),
        returns={"type": "array", "items": _NOTEBOOK},
    ),
    ToolSpec(
        name="get_notebook",
        description="Get a notebook.",
        parameters=_obj({"notebook_id": {"type": "string"}}, ["notebook_id"]),
        returns=_NOTEBOOK,
    ),
    ToolSpec(
        name="create_note",
        description="Create a note in a notebook.",
        mutates=True,
        returns=_NOTE,
        parameters=_obj(
            {
                "notebook_id": {"type": "string"},
                "title": {"type": "string", "minLength": 1},
                "body": {"type": "string"},
            },
            ["notebook_id", "title"],
        ),
    ),
    ToolSpec(
        name="get_note",
        description="Get a note.",
        parameters=_obj({"note_id": _ID}, ["note_id"]),
        returns=_NOTE,
    ),
    ToolSpec(
        name="list_notes",
        description="List notes, optionally of one notebook or status, a page at a time.",
        parameters=_obj(
            {
                "notebook_id": {"type": "string"},
                "status": {"type": "string", "enum": ["active", "archived"]},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                "offset": {"type": "integer", "minimum": 0},
            }
        ),
        returns=_obj(
            {"items": {"type": "array", "items": _NOTE}, "total": {"type": "integer"}},
            ["items", "total"],
        ),
    ),
    ToolSpec(
        name="update_note",
        description="Change a note's title or body.",
        mutates=True,
        returns=_NOTE,
        parameters=_obj(
            {
                "note_id": _ID,
                "title": {"type": "string", "minLength": 1},
                "body": {"type": "string"},
            },
            ["note_id"],
        ),
    ),
    ToolSpec(
        name="delete_note",
        description="Delete a note.",
        mutates=True,
        parameters=_obj({"note_id": _ID}, ["note_id"]),
        returns=_obj({"deleted": {"type": "boolean"}, "id": {"type": "string"}}, ["deleted", "id"]),
    ),
    ToolSpec(
        name="archive_note",
        description="Archive an active note.",
        mutates=True,
        parameters=_obj({"note_id": _ID}, ["note_id"]),
        returns=_NOTE,
    ),
]


def notes_env(fault: str | None = None) -> EnvSpec:
    """The notes app, healthy (``fault=None``) or with one of :data:`CODE_FAULTS` planted."""
    if fault is not None and fault not in CODE_FAULTS:
        raise ValueError(f"unknown fault {fault!r}; faults: {', '.join(CODE_FAULTS)}")
    source = f"FAULT = {fault!r}\n" + NOTES_ENV
    return EnvSpec(
        id=f"notes-{fault or 'ok'}".replace("_", "-"),
        name="Notes",
        domain="productivity",
        tools=list(NOTES_TOOLS),
        behaviour=CodeBehaviour(source=source),
        seed_sql=NOTES_SEED,
        generated={"notes": ["id", "created_at"]},
    )


_FAULT_KIND: dict[str, tuple[str, ...]] = {
    "create_no_persist": ("create",),
    "create_wrong_value": ("create",),
    "create_reuses_id": ("create",),
    "get_wrong_404": ("get",),
    "get_no_404": ("get",),
    "get_wrong_row": ("get",),
    "schema_violation": ("get",),
    "list_omits": ("list",),
    "list_pagination": ("list",),
    "list_filter_ignored": ("list",),
    "list_sort_ignored": ("list",),
    "list_total_wrong": ("list",),
    "update_noop": ("update", "patch"),
    "update_wrong_row": ("update", "patch"),
    "update_partial": ("update", "patch"),
    "patch_clears": ("update", "patch"),
    "delete_noop": ("delete",),
    "delete_wrong_row": ("delete",),
    "transition_noop": ("action",),
}


def _paged(op: Operation, model: ResourceModel) -> bool:
    page = op.page
    return bool(page is not None and page.limit and (page.offset or page.page or page.cursor))


def _eq_filtered(op: Operation, model: ResourceModel) -> bool:
    return any(f.op == "eq" for f in op.filters.values())


def _sorted(op: Operation, model: ResourceModel) -> bool:
    return bool(op.sort is not None and op.sort.arg)


def _totalled(op: Operation, model: ResourceModel) -> bool:
    return op.output is not None and "total" in op.output.keys


def _created_later(op: Operation, model: ResourceModel) -> bool:
    """Rows of the resource can be created (only rows created after the seed are affected)."""
    return any(o.kind == "create" and o.resource == op.resource for o in model.operations.values())


def _two_fields(op: Operation, model: ResourceModel) -> bool:
    return len(op.body) >= 2


def _transitions(op: Operation, model: ResourceModel) -> bool:
    return bool(op.transition is not None and op.transition.field)


def _writes_text(op: Operation, model: ResourceModel) -> bool:
    """The operation writes a plain text field (no enum, no reference)."""
    res = model.resources.get(op.resource)
    fields = res.fields if res is not None else {}
    return any(
        (f := fields.get(c)) is not None and f.type == "string" and not f.enum and not f.ref
        for c in op.body.values()
    )


_APPLIES: dict[str, Callable[[Operation, ResourceModel], bool]] = {
    "list_pagination": _paged,
    "list_filter_ignored": _eq_filtered,
    "list_sort_ignored": _sorted,
    "list_total_wrong": _totalled,
    "get_wrong_404": _created_later,
    "update_partial": _two_fields,
    "patch_clears": _two_fields,
    "transition_noop": _transitions,
    "create_wrong_value": _writes_text,
}
"""Fault -> what an operation of its kind needs for the fault to show (others: nothing more)."""


def _applies(fault: str, op: Operation, model: ResourceModel) -> bool:
    if op.kind not in _FAULT_KIND[fault]:
        return False
    needs = _APPLIES.get(fault)
    return needs is None or needs(op, model)


def model_faults(env: EnvSpec) -> list[tuple[str, str, EnvSpec]]:
    """Every (fault, tool, broken env) the engine's ``test_fault`` knob can plant in a model env
    (one tool per fault: the first it applies to)."""
    model = model_of(env)
    if model is None:
        return []
    out = []
    for fault in _FAULT_KIND:
        tool = next((n for n, op in model.operations.items() if _applies(fault, op, model)), None)
        if tool is None:
            continue
        planted = msgspec.structs.replace(model, test_fault=TestFault(tool=tool, kind=fault))
        broken = msgspec.structs.replace(
            env,
            id=f"{env.id}--{fault.replace('_', '-')}",
            behaviour=ModelBehaviour(model=planted.to_json()),
        )
        out.append((fault, tool, broken))
    return out


def caught(report: VerifyReport, tool: str) -> bool:
    """True when the verifier dropped the faulty tool or rejected the environment."""
    return (not report.kept) or tool in report.tools_dropped
