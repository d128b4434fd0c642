"""envkernel's resource-model engine: runs a ``{"kind": "model"}`` environment inside the sandbox.

Standard library only, and never imports envkernel: the executor loads this file from its own
folder (it may run inside a container that holds only those files). An environment made from an
API description is *data* — a resource model — and this fixed engine interprets it. Nothing from
the model is ever templated into Python; identifiers that reach SQL are checked against a strict
pattern and quoted, and every value is a bound parameter.

The model (what the ``openapi`` synthesizer writes; all keys but ``resources`` and ``operations``
are optional)::

    {
      "engine": 1,
      "resources": {
        "orders": {                                # table name
          "key": "id",                             # key column
          "id_prefix": "ord",                      # new ids: ord_0001, ord_0002, ... (string keys)
          "new_keys": ["MG3f...", ...],  # or these, in order (keys fitting a declared pattern)
          "fields": {                              # column -> field, in column order
            "id": {"type": "string", "generated": "id"},
            "customer_id": {"type": "string", "ref": "customers"},
            "status": {"type": "string", "enum": ["pending", "shipped"], "default": "pending"},
            "items": {"type": "array"},            # objects and arrays are stored as JSON text
            "created_at": {"type": "string", "format": "date-time", "generated": "created"},
            "shop_id": {"type": "string", "ref": "shops", "hidden": true}   # stored, not shown
          },
          "unique": ["email"],                     # a create/update that repeats one: conflict
          "nouns": {"singular": "order", "plural": "orders", "label": "order"}  # "no order ..."
        }
      },
      "operations": {
        "cancel_order": {
          "kind": "action",                        # create get list update patch delete action
          "resource": "orders",
          "parameters": {...JSON Schema of the arguments...},
          "key": "order_id",                       # argument holding the key (get/update/...)
          "parents": [{"arg": "customer_id", "resource": "customers", "field": "customer_id"}],
          "body": {"reason": "cancel_reason"},     # argument -> column written
          "filters": {"status": {"field": "status", "op": "eq"}},       # list: eq in contains
          "search": {"arg": "q", "fields": ["name"]},                   # list: gte lte gt lt
          "page": {"limit": "limit", "offset": "offset", "page": "page", "cursor": "cursor",
                   "default_limit": 20, "first": 1},               # first: number of the first page
          "sort": {"arg": "sort", "order_arg": "order", "fields": ["created_at", "total"]},
          "output": {"shape": "row"},              # row | list | envelope | deleted (+ "keys",
                                                   # "nullable", "constants" of an envelope)
          "transition": {"field": "status", "to": "cancelled", "from": ["pending"],
                         "stamp": ["cancelled_at"]},
          "errors": [404, 409, 422]
        }
      },
      "seed": {"orders": [{"id": "ord_0001", ...}]},
      "crud": {"orders": {"create": "create_order", "get": "get_order", ...}},
      "test_fault": null
    }

Errors come back as tool errors: ``not_found`` (HTTP 404), ``conflict`` (409) and ``invalid``
(400/422, including arguments that do not fit the tool's JSON Schema).

``test_fault`` (``{"tool": NAME, "kind": KIND}``) makes one tool misbehave on purpose. Only tests
set it (the verifier's recall suite); no synthesizer ever writes it. See :data:`FAULTS`.
"""

from __future__ import annotations

import json
import operator
import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is never imported at run time: it would slow the executor's start
    import sqlite3
    import types
    from collections.abc import Callable
    from typing import Any, Protocol, TypeAlias

    Spec: TypeAlias = dict[str, Any]
    """A part of the model, a JSON Schema or a tool's arguments: a JSON object."""
    Row: TypeAlias = dict[str, Any]
    """A row as the executor's database gives it: column -> value."""

    class Env(Protocol):
        """What the engine uses of the executor's ``env``."""

        db: sqlite3.Connection

        def now(self) -> str: ...

        def new_id(self, prefix: str) -> str: ...


ENGINE_VERSION = 1
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
"""What a table, column or tool name must look like."""
KINDS = ("create", "get", "list", "update", "patch", "delete", "action")
TYPES = ("string", "integer", "number", "boolean", "object", "array")
_SQL_TYPES = {
    "string": "TEXT",
    "integer": "INTEGER",
    "number": "REAL",
    "boolean": "INTEGER",
    "object": "TEXT",
    "array": "TEXT",
}
FILTER_OPS = ("eq", "in", "contains", "gte", "lte", "gt", "lt")
_CMP = {"gte": ">=", "lte": "<=", "gt": ">", "lt": "<"}
FAULTS = (
    "create_no_persist",  # create answers as if it wrote, but writes nothing
    "create_wrong_value",  # create stores a different value than it was given
    "create_reuses_id",  # create overwrites an existing row instead of adding one
    "get_wrong_404",  # get says not found for rows created after the seed
    "get_no_404",  # get of an unknown key returns some other row
    "get_wrong_row",  # get returns the row after the one asked for
    "list_omits",  # list leaves out the last row
    "list_pagination",  # the second page repeats the first
    "list_filter_ignored",  # list ignores its filters
    "list_sort_ignored",  # list ignores the sort order
    "list_total_wrong",  # the envelope's total is off by one
    "update_noop",  # update answers with the new values but writes nothing
    "update_wrong_row",  # update writes another row
    "update_partial",  # update writes only the first of the fields it was given
    "patch_clears",  # patch/update clears the fields it was not given
    "delete_noop",  # delete answers as if it deleted, but deletes nothing
    "delete_wrong_row",  # delete removes another row
    "transition_noop",  # an action answers with the new status but writes nothing
    "schema_violation",  # get returns a field with the wrong type
)
"""Faults ``test_fault`` can inject (for testing verifiers only)."""

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")


class ModelError(ValueError):
    """The model is malformed (reported as ``load_failed`` by the executor)."""


def _q(name: str) -> str:
    if not isinstance(name, str) or not IDENT.match(name):
        raise ModelError(
            f"{name!r} is not a valid identifier (letters, digits and _, not starting with a digit)"
        )
    return '"' + name + '"'


def _human(name: str) -> str:
    return name.replace("_", " ")


def _show(v: object) -> str:
    text = json.dumps(v, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


# --------------------------------------------------------------------------- argument checks


def _type_ok(t: str, v: object) -> bool:
    if t == "null":
        return v is None
    if t == "boolean":
        return isinstance(v, bool)
    if t == "integer":
        return (
            isinstance(v, int)
            and not isinstance(v, bool)
            or (isinstance(v, float) and v.is_integer())
        )
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "string":
        return isinstance(v, str)
    if t == "array":
        return isinstance(v, list)
    if t == "object":
        return isinstance(v, dict)
    return True


_ARTICLE = {"integer": "an integer", "object": "an object", "array": "an array"}


def _check_type(schema: Spec, value: object, where: str) -> str:
    """Why ``value`` is not of the schema's ``type``, or ""."""
    t = schema.get("type")
    types = t if isinstance(t, list) else [t] if t else []
    if types and not any(_type_ok(x, value) for x in types):
        want = " or ".join(_ARTICLE.get(x, f"a {x}") for x in types)
        return f"{where} must be {want}, got {_show(value)}"
    return ""


def _check_choice(schema: Spec, value: object, where: str) -> str:
    """Why ``value`` is not one of the schema's ``enum``, or not its ``const``, or ""."""
    if "enum" in schema and isinstance(schema["enum"], list) and value not in schema["enum"]:
        return f"{where} must be one of {', '.join(map(str, schema['enum']))}; got {_show(value)}"
    if "const" in schema and value != schema["const"]:
        return f"{where} must be {_show(schema['const'])}, got {_show(value)}"
    return ""


_BOUNDS = (
    ("minimum", operator.ge, "at least"),
    ("maximum", operator.le, "at most"),
    ("exclusiveMinimum", operator.gt, "more than"),
    ("exclusiveMaximum", operator.lt, "less than"),
)
"""Number bounds: keyword, the test a value passes, what the message says."""


def _check_number(schema: Spec, value: Any, where: str) -> str:
    """Why a number is out of the schema's bounds, or ""."""
    for key, ok, word in _BOUNDS:
        bound = schema.get(key)
        if isinstance(bound, (int, float)) and not isinstance(bound, bool) and not ok(value, bound):
            return f"{where} must be {word} {bound:g}, got {value:g}"
    return ""


def _check_size(schema: Spec, size: int, where: str, keys: tuple[str, str], noun: str) -> str:
    """Why a size is out of the schema's ``(min, max)`` keys (``minLength``, ``maxItems``), or
    ""."""
    low, high = (schema.get(k) for k in keys)
    if isinstance(low, int) and size < low:
        return f"{where} must have at least {low} {noun}"
    if isinstance(high, int) and size > high:
        return f"{where} must have at most {high} {noun}"
    return ""


_FORMATS = {
    "email": (_EMAIL, "an email address"),
    "date": (_DATE, "a date like 2026-01-15"),
    "date-time": (_DATETIME, "a date and time like 2026-01-15T09:00:00Z"),
}
"""String formats checked: the pattern and what a value must be."""


def _check_string(schema: Spec, value: str, where: str) -> str:
    """Why a string does not fit the schema's length, pattern or format, or ""."""
    problem = _check_size(schema, len(value), where, ("minLength", "maxLength"), "characters")
    if problem:
        return problem
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            if re.search(pattern, value) is None:
                return f"{where} must match the pattern {pattern}, got {_show(value)}"
        except re.error:
            pass
    fmt = _FORMATS.get(str(schema.get("format")))
    if fmt is not None and not fmt[0].match(value):
        return f"{where} must be {fmt[1]}, got {_show(value)}"
    return ""


def _check_array(schema: Spec, value: list[Any], where: str) -> str:
    """Why a list does not fit the schema's size or its items' schema, or ""."""
    problem = _check_size(schema, len(value), where, ("minItems", "maxItems"), "items")
    if problem:
        return problem
    items = schema.get("items")
    for i, item in enumerate(value):
        problem = check(items, item, f"{where}[{i}]")
        if problem:
            return problem
    return ""


def _check_object(schema: Spec, value: dict[str, Any], where: str) -> str:
    """Why an object lacks a required field, has an unexpected one or a field that does not fit,
    or ""."""
    props = schema.get("properties")
    if not isinstance(props, dict):
        props = {}
    for r in schema.get("required") or []:
        if r not in value:
            return f"{where} needs {r!r}"
    if schema.get("additionalProperties") is False:
        extra = [k for k in value if k not in props]
        if extra:
            return f"{where} has unexpected field(s) {', '.join(map(repr, extra))}"
    for k, v in value.items():
        problem = check(props[k], v, f"{where}.{k}") if k in props else ""
        if problem:
            return problem
    return ""


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_BY_KIND: tuple[tuple[Callable[[object], bool], Callable[[Spec, Any, str], str]], ...] = (
    (_is_number, _check_number),
    (lambda v: isinstance(v, str), _check_string),
    (lambda v: isinstance(v, list), _check_array),
    (lambda v: isinstance(v, dict), _check_object),
)
"""The keywords checked for each kind of value: which values, and their check."""


def check(schema: object, value: Any, where: str) -> str:
    """Why ``value`` does not fit ``schema`` (a JSON Schema subset), or ""."""
    if not isinstance(schema, dict) or not schema:
        return ""
    problem = _check_type(schema, value, where)
    if problem or value is None:
        return problem
    problem = _check_choice(schema, value, where)
    if problem:
        return problem
    for applies, check_kind in _BY_KIND:
        if applies(value):
            return check_kind(schema, value, where)
    return ""


def check_arguments(schema: Spec, args: Spec) -> str:
    """Why ``args`` do not fit a tool's parameter schema, or "" (names the arguments it takes)."""
    props = schema.get("properties")
    if not isinstance(props, dict):
        props = {}
    required = [r for r in schema.get("required") or [] if isinstance(r, str)]

    def accepted() -> str:
        names = [p if p in required else p + "?" for p in props]
        return f" (arguments: {', '.join(names) or 'none'})"

    extra = [k for k in args if k not in props]
    if extra:
        return f"unexpected argument(s) {', '.join(map(repr, extra))}" + accepted()
    missing = [r for r in required if r not in args]
    if missing:
        return f"missing required argument(s) {', '.join(map(repr, missing))}" + accepted()
    for k, v in args.items():
        problem = check(props.get(k), v, k)
        if problem:
            return problem
    return ""


# --------------------------------------------------------------------------- the model


def _fields(name: str, spec: Spec) -> dict[str, Spec]:
    """A resource's fields, each with a known type."""
    fields = spec.get("fields")
    if not isinstance(fields, dict) or not fields:
        raise ModelError(f"resource {name!r} has no fields")
    out: dict[str, Spec] = {}
    for col, f in fields.items():
        _q(col)
        if not isinstance(f, dict) or f.get("type") not in TYPES:
            raise ModelError(f"field {name}.{col} needs a type, one of {', '.join(TYPES)}")
        out[col] = f
    return out


class _Resource:
    def __init__(self, name: str, spec: Spec) -> None:
        _q(name)
        if not isinstance(spec, dict):
            raise ModelError(f"resource {name!r} must be an object")
        self.name = name
        nouns = spec.get("nouns")
        label = nouns.get("label") if isinstance(nouns, dict) else None
        self.noun = (
            label if isinstance(label, str) and label else _human(name)
        )  # the synthesizer names it
        self.fields = _fields(name, spec)
        self.key = spec.get("key", "id")
        if self.key not in self.fields:
            raise ModelError(f"resource {name!r}: key {self.key!r} is not one of its fields")
        self.key_type = self.fields[self.key]["type"]
        self.prefix = str(spec.get("id_prefix") or name[:3])
        if not IDENT.match(self.prefix):
            raise ModelError(f"resource {name!r}: id_prefix {self.prefix!r} is not valid")
        self.new_keys = [k for k in spec.get("new_keys") or [] if isinstance(k, str)]
        self.unique = [c for c in spec.get("unique") or [] if c in self.fields]
        self.shown = [c for c, f in self.fields.items() if not f.get("hidden")]

    # values between JSON and SQLite
    def to_db(self, col: str, v: Any) -> Any:
        if v is None:
            return None
        t = self.fields[col]["type"]
        if t == "boolean":
            return 1 if v else 0
        if t in ("object", "array"):
            return json.dumps(v, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        if t == "integer" and isinstance(v, float) and v.is_integer():
            return int(v)
        if t == "number" and isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v) if isinstance(v, int) else v
        return v

    def from_db(self, col: str, v: Any) -> Any:
        if v is None:
            return None
        t = self.fields[col]["type"]
        if t == "boolean":
            return bool(v)
        if t in ("object", "array") and isinstance(v, str):
            try:
                return json.loads(v)
            except ValueError:
                return v
        return v

    def out(self, row: Row) -> Row:
        """A stored row as the API shows it (null optional values left out unless nullable)."""
        result = {}
        for col in self.shown:
            v = self.from_db(col, row.get(col))
            if v is None and not self.fields[col].get("nullable"):
                continue
            result[col] = v
        return result


def _list_where(
    op: Spec, res: _Resource, args: Spec, filtered: bool
) -> tuple[list[str], list[Any]]:
    """The WHERE terms and their parameters of a list call: its parents, and (``filtered``) its
    filters and search."""
    where: list[str] = []
    params: list[Any] = []
    for p in op.get("parents") or []:
        where.append(f"{_q(p['field'])} = ?")
        params.append(res.to_db(p["field"], args[p["arg"]]))
    if not filtered:
        return where, params
    for arg, flt in (op.get("filters") or {}).items():
        if arg in args and args[arg] is not None:
            _filter_term(res, flt, args[arg], where, params)
    search = op.get("search")
    if search and args.get(search.get("arg")) not in (None, ""):
        text = str(args[search["arg"]])
        ors = [
            f"instr(lower(COALESCE({_q(c)}, '')), lower(?)) > 0" for c in search.get("fields") or []
        ]
        if ors:
            where.append("(" + " OR ".join(ors) + ")")
            params.extend([text] * len(ors))
    return where, params


def _filter_term(res: _Resource, flt: Spec, v: Any, where: list[str], params: list[Any]) -> None:
    """Add one filter's WHERE term: equal (text without case), in a set, contains, or compared."""
    col, kind = flt["field"], flt.get("op", "eq")
    f = res.fields[col]
    if kind == "eq":
        nocase = f["type"] == "string" and not f.get("enum") and not f.get("ref") and col != res.key
        where.append(f"{_q(col)} = ? COLLATE NOCASE" if nocase else f"{_q(col)} = ?")
        params.append(res.to_db(col, v))
    elif kind == "in":
        vals = v if isinstance(v, list) else [x.strip() for x in str(v).split(",") if x.strip()]
        if vals:
            where.append(f"{_q(col)} IN ({', '.join('?' * len(vals))})")
            params.extend(res.to_db(col, x) for x in vals)
    elif kind == "contains":
        where.append(f"instr(lower({_q(col)}), lower(?)) > 0")
        params.append(str(v))
    else:
        where.append(f"{_q(col)} {_CMP[kind]} ?")
        params.append(res.to_db(col, v) if f["type"] != "array" else v)


def _envelope(
    output: Spec, items: list[Any], total: int, said_total: int, offset: int, limit: int | None
) -> dict[str, Any]:
    """A page of ``items`` in the operation's envelope: its keys for the items, the total (as
    said: ``said_total``), count, limit, offset, page, has_more and next cursor, offset or page
    (a null only where the envelope allows it), and its constants."""
    end = offset + len(items)
    out: dict[str, Any] = {}
    keys = output.get("keys") or {}
    out[keys.get("items", "items")] = items
    values = {
        "total": said_total,
        "count": len(items),
        "limit": limit if limit is not None else len(items),
        "offset": offset,
        "page": (offset // limit + 1) if limit else 1,
        "has_more": end < total,
        "next_cursor": f"c{end}" if end < total else None,
        "next_offset": end if end < total else None,
        "next_page": ((offset // limit + 2) if limit else None) if end < total else None,
    }
    for meaning, prop in keys.items():
        if meaning == "items":
            continue
        v = values.get(meaning)
        if v is None and meaning not in output.get("nullable", []):
            continue
        out[prop] = v
    for prop, v in (output.get("constants") or {}).items():
        out.setdefault(prop, v)
    return out


def _body_use(op: Spec, fields: Spec, resources: Spec) -> str:
    for arg, col in (op.get("body") or {}).items():
        if col not in fields:
            return f"argument {arg!r} writes unknown field {col!r}"
    return ""


def _parents_use(op: Spec, fields: Spec, resources: Spec) -> str:
    for p in op.get("parents") or []:
        if p.get("resource") not in resources or p.get("field") not in fields:
            return f"bad parent {p!r}"
    return ""


def _filters_use(op: Spec, fields: Spec, resources: Spec) -> str:
    for arg, flt in (op.get("filters") or {}).items():
        if (
            not isinstance(flt, dict)
            or flt.get("field") not in fields
            or flt.get("op", "eq") not in FILTER_OPS
        ):
            return f"bad filter {arg!r}"
    return ""


def _search_use(op: Spec, fields: Spec, resources: Spec) -> str:
    search = op.get("search")
    if search and any(c not in fields for c in search.get("fields") or []):
        return "search over unknown fields"
    return ""


def _sort_use(op: Spec, fields: Spec, resources: Spec) -> str:
    sort = op.get("sort")
    if sort and any(c not in fields for c in sort.get("fields") or []):
        return "sort by unknown fields"
    return ""


def _transition_use(op: Spec, fields: Spec, resources: Spec) -> str:
    tr = op.get("transition")
    if tr and (
        tr.get("field") not in fields or any(c not in fields for c in tr.get("stamp") or [])
    ):
        return f"bad transition {tr!r}"
    return ""


_FIELD_USES = (_body_use, _parents_use, _filters_use, _search_use, _sort_use, _transition_use)
"""Checks of an operation's parts that name fields (of its resource) or resources: each says what
is wrong, or ""."""


def _op_problem(name: object, op: object, resources: dict[str, _Resource]) -> str:
    """What is wrong with operation ``name`` of a model with these resources, or ""."""
    if not isinstance(name, str) or not IDENT.match(name) or name.startswith("_"):
        return f"operation name {name!r} is not a valid tool name"
    if not isinstance(op, dict) or op.get("kind") not in KINDS:
        return f"operation {name!r} needs a kind, one of {', '.join(KINDS)}"
    if op.get("resource") not in resources:
        return f"operation {name!r} is about unknown resource {op.get('resource')!r}"
    fields = resources[op["resource"]].fields
    for use in _FIELD_USES:
        problem = use(op, fields, resources)
        if problem:
            return f"operation {name!r}: {problem}"
    return ""


def _resources(model: Spec) -> dict[str, _Resource]:
    """The model's resources, each field's ``ref`` a resource of the model."""
    resources = model.get("resources")
    if not isinstance(resources, dict) or not resources:
        raise ModelError("the model has no resources")
    out = {n: _Resource(n, r) for n, r in resources.items()}
    for r in out.values():
        for col, f in r.fields.items():
            ref = f.get("ref")
            if ref is not None and ref not in out:
                raise ModelError(f"field {r.name}.{col} refers to unknown resource {ref!r}")
    return out


def _operations(model: Spec, resources: dict[str, _Resource]) -> dict[str, Spec]:
    """The model's operations, each checked against its resources."""
    ops = model.get("operations")
    if not isinstance(ops, dict) or not ops:
        raise ModelError("the model has no operations")
    for name, op in ops.items():
        problem = _op_problem(name, op, resources)
        if problem:
            raise ModelError(problem)
    return dict(ops)


def _stamp_and_default(env: Env, res: _Resource, values: Spec) -> None:
    """A new row's generated timestamps (one for all), and the defaults of the fields not given."""
    stamp = None
    for col, f in res.fields.items():
        gen = f.get("generated")
        if gen in ("created", "updated"):
            stamp = stamp or env.now()
            values[col] = stamp
        elif col not in values and "default" in f:
            values[col] = res.to_db(col, f["default"])


def _cut_a_value(res: _Resource, values: Spec) -> None:
    """Test fault ``create_wrong_value``: the first plain text value stored cut in half."""
    for col, v in values.items():
        if isinstance(v, str) and col != res.key and _plain(res.fields[col]):
            values[col] = v[: max(1, len(v) // 2)]
            return


def _plain(f: Spec) -> bool:
    """A field whose value is the caller's own text: no reference, not generated, no enum."""
    return not (f.get("ref") or f.get("generated") or f.get("enum"))


def _reuse_first_key(env: Env, res: _Resource, values: Spec) -> None:
    """Test fault ``create_reuses_id``: the new row takes the first row's key (that row gone)."""
    first = env.db.execute(
        f"SELECT {_q(res.key)} AS k FROM {_q(res.name)} ORDER BY rowid LIMIT 1"
    ).fetchone()
    if first is not None:
        env.db.execute(f"DELETE FROM {_q(res.name)} WHERE {_q(res.key)} = ?", (first["k"],))
        values[res.key] = first["k"]


class Engine:
    """A validated model: creates the state and makes one function per operation."""

    def __init__(self, model: Spec, tool_error: Callable[[str, str], Exception]) -> None:
        if not isinstance(model, dict):
            raise ModelError("the model must be an object")
        version = model.get("engine", ENGINE_VERSION)
        if version != ENGINE_VERSION:
            raise ModelError(
                f"the model is for engine version {version!r}; this engine runs version "
                f"{ENGINE_VERSION}"
            )
        self.ToolError = tool_error
        self.resources = _resources(model)
        self.ops: dict[str, Spec] = _operations(model, self.resources)
        seed = model.get("seed") or {}
        if not isinstance(seed, dict) or any(t not in self.resources for t in seed):
            raise ModelError("the seed names a resource the model does not have")
        self.seed = seed
        fault = model.get("test_fault")
        self.fault: Spec | None = (
            fault if isinstance(fault, dict) and fault.get("kind") in FAULTS else None
        )
        self.seed_counts: dict[str, int] = {}

    # ----------------------------------------------------------------- state

    def setup(self, db: sqlite3.Connection) -> None:
        """Create the tables and insert the seed rows (parameterized statements only)."""
        db.execute("BEGIN")
        for r in self.resources.values():
            cols = []
            for col, f in r.fields.items():
                cols.append(
                    f"{_q(col)} {_SQL_TYPES[f['type']]}" + (" PRIMARY KEY" if col == r.key else "")
                )
            db.execute(f"CREATE TABLE {_q(r.name)} ({', '.join(cols)})")
        for table, rows in self.seed.items():
            r = self.resources[table]
            if not isinstance(rows, list):
                raise ModelError(f"seed of {table!r} must be a list of rows")
            for i, row in enumerate(rows):
                if not isinstance(row, dict):
                    raise ModelError(f"seed row {table}[{i}] must be an object")
                unknown = [c for c in row if c not in r.fields]
                if unknown:
                    raise ModelError(f"seed row {table}[{i}] has unknown field(s) {unknown}")
                cols = list(row)
                sql = (
                    f"INSERT INTO {_q(table)} ({', '.join(map(_q, cols))}) VALUES "
                    f"({', '.join('?' * len(cols))})"
                )
                db.execute(sql, [r.to_db(c, row[c]) for c in cols])
            self.seed_counts[table] = len(rows)
        db.execute("COMMIT")

    def functions(self) -> dict[str, Callable[..., Any]]:
        """One function per operation: ``fn(env, /, **arguments)``, named after it."""
        out = {}
        for name, op in self.ops.items():
            out[name] = self._function(name, op)
        return out

    def _function(self, name: str, op: Spec) -> Callable[..., Any]:
        engine = self
        handler = getattr(self, "_" + op["kind"])
        schema = op.get("parameters")
        if not isinstance(schema, dict):
            schema = {"type": "object", "properties": {}}
        res = self.resources[op["resource"]]

        def tool(env: Env, /, **args: Any) -> Any:
            problem = check_arguments(schema, args)
            if problem:
                raise engine.ToolError("invalid", f"{name}: {problem}")
            return handler(env, name, op, res, args)

        tool.__name__ = tool.__qualname__ = name
        tool.__module__ = "env"
        tool.__doc__ = str(op.get("summary") or "")
        return tool

    # ----------------------------------------------------------------- helpers

    def _faulty(self, name: str, *kinds: str) -> str:
        f = self.fault
        if f and f.get("kind") in kinds and f.get("tool") in (None, name):
            kind: str = f["kind"]
            return kind
        return ""

    def _err(self, code: str, message: str) -> Exception:
        return self.ToolError(code, message)

    def _row(self, db: sqlite3.Connection, res: _Resource, key: Any) -> Row | None:
        row: Row | None = db.execute(
            f"SELECT rowid AS __rowid, * FROM {_q(res.name)} WHERE {_q(res.key)} = ?",
            (res.to_db(res.key, key),),
        ).fetchone()
        return row

    def _stored(self, db: sqlite3.Connection, res: _Resource, key: Any) -> Row:
        """The row under ``key`` that this call just wrote (so it is there)."""
        row = self._row(db, res, key)
        assert row is not None, f"{res.name} {key!r} was just written"
        return row

    def _clean(self, row: Row) -> Row:
        return {k: v for k, v in row.items() if k != "__rowid"}

    def _fetch(self, env: Env, op: Spec, res: _Resource, args: Spec, what: str = "") -> Row:
        """The row the key argument names (inside its parents), or a not_found error."""
        key_arg: Any = op.get("key")  # the argument that names the row
        key = args.get(key_arg)
        self._check_parents(env, op, args)
        row = self._row(env.db, res, key)
        if row is not None:
            for p in op.get("parents") or []:
                if res.to_db(p["field"], args.get(p["arg"])) != row.get(p["field"]):
                    row = None
                    break
        if row is None:
            raise self._err(
                "not_found",
                f"no {res.noun} with {_human(res.key)} {_show(key)}" + self._under(op, args),
            )
        return row

    def _under(self, op: Spec, args: Spec) -> str:
        parents = op.get("parents") or []
        if not parents:
            return ""
        p = parents[-1]
        return f" under {self.resources[p['resource']].noun} {_show(args.get(p['arg']))}"

    def _check_parents(self, env: Env, op: Spec, args: Spec) -> None:
        for p in op.get("parents") or []:
            parent = self.resources[p["resource"]]
            if self._row(env.db, parent, args.get(p["arg"])) is None:
                raise self._err(
                    "not_found",
                    f"no {parent.noun} with {_human(parent.key)} {_show(args.get(p['arg']))}",
                )

    def _check_refs(self, env: Env, res: _Resource, values: Row) -> None:
        for col, v in values.items():
            ref = res.fields[col].get("ref")
            if ref is None or v is None:
                continue
            target = self.resources[ref]
            if self._row(env.db, target, v) is None:
                raise self._err(
                    "not_found",
                    f"no {target.noun} with {_human(target.key)} {_show(v)} (given as {col})",
                )

    def _check_unique(self, env: Env, res: _Resource, values: Row, own_key: Any = None) -> None:
        for col in res.unique:
            if values.get(col) is None:
                continue
            rows = env.db.execute(
                f"SELECT {_q(res.key)} AS k FROM {_q(res.name)} WHERE {_q(col)} = ?",
                (res.to_db(col, values[col]),),
            ).fetchall()
            if any(r["k"] != own_key for r in rows):
                raise self._err(
                    "conflict",
                    f"a {res.noun} with {_human(col)} {_show(values[col])} already exists",
                )

    def _new_key(self, env: Env, res: _Resource) -> Any:
        if res.key_type == "integer":
            row = env.db.execute(f"SELECT MAX({_q(res.key)}) AS m FROM {_q(res.name)}").fetchone()
            return int(row["m"] or 0) + 1
        for k in res.new_keys:  # keys the synthesizer made to fit the key's declared schema
            if self._row(env.db, res, k) is None:
                return k
        while True:  # ids continue after the seed's own
            k = env.new_id(res.prefix)
            if self._row(env.db, res, k) is None:
                return k

    def _body(self, op: Spec, res: _Resource, args: Spec) -> Row:
        return {
            col: res.to_db(col, args[arg])
            for arg, col in (op.get("body") or {}).items()
            if arg in args
        }

    def _shape(self, env: Env, op: Spec, res: _Resource, row: Row, violate: bool = False) -> Row:
        out = res.out(row)
        if violate:
            for col, v in out.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    out[col] = str(v)
                    break
                if isinstance(v, str) and col != res.key:
                    out[col] = len(v)
                    break
        return out

    # ----------------------------------------------------------------- operations

    def _create(self, env: Env, name: str, op: Spec, res: _Resource, args: Spec) -> Any:
        self._check_parents(env, op, args)
        values = self._body(op, res, args)
        for p in op.get("parents") or []:
            values[p["field"]] = res.to_db(p["field"], args[p["arg"]])
        self._check_refs(env, res, {c: res.from_db(c, v) for c, v in values.items()})
        _stamp_and_default(env, res, values)
        self._claim_key(env, res, values)
        self._check_unique(env, res, values)
        fault = self._faulty(name, "create_no_persist", "create_wrong_value", "create_reuses_id")
        if fault == "create_wrong_value":
            _cut_a_value(res, values)
        if fault == "create_reuses_id":
            _reuse_first_key(env, res, values)
        cols = list(values)
        if fault != "create_no_persist":
            env.db.execute(
                f"INSERT INTO {_q(res.name)} ({', '.join(map(_q, cols))}) VALUES "
                f"({', '.join('?' * len(cols))})",
                [values[c] for c in cols],
            )
            row = self._clean(self._stored(env.db, res, values[res.key]))
        else:
            row = {c: values.get(c) for c in res.fields}
        if fault == "create_wrong_value":  # answer with what was asked, store something else
            row = dict(row)
            row.update(self._body(op, res, args))
        return self._shape(env, op, res, row)

    def _claim_key(self, env: Env, res: _Resource, values: Spec) -> None:
        """A new row's key: a fresh one when not given; a given one already used is a conflict."""
        if values.get(res.key) is None:
            values[res.key] = self._new_key(env, res)
        elif self._row(env.db, res, values[res.key]) is not None:
            raise self._err(
                "conflict",
                f"a {res.noun} with {_human(res.key)} {_show(values[res.key])} already exists",
            )

    def _get(self, env: Env, name: str, op: Spec, res: _Resource, args: Spec) -> Any:
        fault = self._faulty(
            name, "get_wrong_404", "get_no_404", "get_wrong_row", "schema_violation"
        )
        key_arg: Any = op.get("key")  # the argument that names the row
        key = args.get(key_arg)
        if fault == "get_no_404" and self._row(env.db, res, key) is None:
            row = env.db.execute(f"SELECT * FROM {_q(res.name)} ORDER BY rowid LIMIT 1").fetchone()
            if row is not None:
                return res.out(row)
        row = self._fetch(env, op, res, args)
        if fault == "get_wrong_404" and row["__rowid"] > self.seed_counts.get(res.name, 0):
            raise self._err("not_found", f"no {res.noun} with {_human(res.key)} {_show(key)}")
        if fault == "get_wrong_row":
            nxt = env.db.execute(
                f"SELECT * FROM {_q(res.name)} WHERE rowid > ? ORDER BY rowid LIMIT 1",
                (row["__rowid"],),
            ).fetchone()
            row = nxt or row
        return self._shape(env, op, res, self._clean(row), violate=fault == "schema_violation")

    def _list(self, env: Env, name: str, op: Spec, res: _Resource, args: Spec) -> Any:
        """A list call: the rows its parents, filters and search pick, sorted, one page of them,
        bare or in the operation's envelope."""
        fault = self._faulty(
            name,
            "list_omits",
            "list_pagination",
            "list_filter_ignored",
            "list_sort_ignored",
            "list_total_wrong",
        )
        self._check_parents(env, op, args)
        where, params = _list_where(op, res, args, filtered=fault != "list_filter_ignored")
        order = self._list_order(name, op, args) if fault != "list_sort_ignored" else "rowid"
        sql = (
            f"SELECT * FROM {_q(res.name)}"
            + (f" WHERE {' AND '.join(where)}" if where else "")
            + f" ORDER BY {order}"
        )
        rows = env.db.execute(sql, params).fetchall()
        if fault == "list_omits" and rows:
            rows = rows[:-1]
        total = len(rows)
        offset, limit = self._page(name, op, args)
        if fault == "list_pagination" and offset > 0:
            offset = max(0, offset - (limit or 1))
        shown = rows[offset:] if limit is None else rows[offset : offset + limit]
        items = [res.out(r) for r in shown]
        output = op.get("output") or {"shape": "list"}
        if output.get("shape") != "envelope":
            return items
        said_total = total + (1 if fault == "list_total_wrong" else 0)
        return _envelope(output, items, total, said_total, offset, limit)

    def _list_order(self, name: str, op: Spec, args: Spec) -> str:
        """The ORDER BY of a list call: its sort argument (``-field`` descending) and order
        argument, else the operation's default, else insertion order."""
        sort = op.get("sort")
        if not sort:
            return "rowid"
        raw = args.get(sort.get("arg")) if sort.get("arg") else None
        desc = False
        if raw is not None:
            raw = str(raw)
            if raw.startswith("-"):
                desc, raw = True, raw[1:]
            elif raw.startswith("+"):
                raw = raw[1:]
            if raw not in (sort.get("fields") or []):
                raise self._err(
                    "invalid",
                    f"{name}: cannot sort by {raw!r}; sort by one of "
                    f"{', '.join(sort.get('fields') or [])}",
                )
        direction = args.get(sort.get("order_arg")) if sort.get("order_arg") else None
        if direction is not None:
            if str(direction).lower() not in ("asc", "desc"):
                raise self._err("invalid", f"{name}: {sort['order_arg']} must be asc or desc")
            desc = str(direction).lower() == "desc"
        col = raw or sort.get("default")
        return f"{_q(col)} {'DESC' if desc else 'ASC'}, rowid" if col else "rowid"

    def _page(self, name: str, op: Spec, args: Spec) -> tuple[int, int | None]:
        """(offset, limit) of a list call from its page arguments (limit, offset, page number or
        cursor); (0, None) when the operation does not page."""
        page = op.get("page") or {}
        if not page:
            return 0, None
        offset, limit = 0, page.get("default_limit")
        if page.get("limit") and args.get(page["limit"]) is not None:
            limit = int(args[page["limit"]])
        if page.get("offset") and args.get(page["offset"]) is not None:
            offset = int(args[page["offset"]])
        if page.get("page") and args.get(page["page"]) is not None:
            n, first = int(args[page["page"]]), int(page.get("first", 1))
            if n < first:
                raise self._err("invalid", f"{name}: {page['page']} starts at {first}")
            offset = (n - first) * (limit or 0)
        if page.get("cursor") and args.get(page["cursor"]) not in (None, ""):
            c = str(args[page["cursor"]])
            if not re.fullmatch(r"c\d{1,9}", c):
                raise self._err(
                    "invalid",
                    f"{name}: {page['cursor']} {c!r} is not a cursor this API returned",
                )
            offset = int(c[1:])
        if limit is not None and limit < 0 or offset < 0:
            raise self._err("invalid", f"{name}: limit and offset cannot be negative")
        return offset, limit

    def _write(self, env: Env, name: str, op: Spec, res: _Resource, args: Spec, patch: bool) -> Any:
        row = self._fetch(env, op, res, args)
        key = row[res.key]
        values = self._body(op, res, args)
        values.pop(res.key, None)
        self._check_refs(env, res, {c: res.from_db(c, v) for c, v in values.items()})
        self._check_unique(env, res, values, own_key=key)
        fault = self._faulty(
            name, "update_noop", "update_wrong_row", "update_partial", "patch_clears"
        )
        if fault == "update_partial" and len(values) > 1:
            values = dict([next(iter(values.items()))])
        if fault == "patch_clears":
            for col in (op.get("body") or {}).values():
                if col not in values and col != res.key and not res.fields[col].get("generated"):
                    values[col] = None
        stamp = None
        for col, f in res.fields.items():
            if f.get("generated") in ("updated", "edited"):
                stamp = stamp or env.now()
                values[col] = stamp
        target = key
        if fault == "update_wrong_row":
            other = env.db.execute(
                f"SELECT {_q(res.key)} AS k FROM {_q(res.name)} WHERE {_q(res.key)} != ? "
                "ORDER BY rowid LIMIT 1",
                (key,),
            ).fetchone()
            target = other["k"] if other else key
        if values and fault != "update_noop":
            sets = ", ".join(f"{_q(c)} = ?" for c in values)
            env.db.execute(
                f"UPDATE {_q(res.name)} SET {sets} WHERE {_q(res.key)} = ?",
                [*values.values(), target],
            )
        if fault in ("update_noop", "update_wrong_row"):
            out = self._clean(row)
            out.update(self._body(op, res, args))
            return self._shape(env, op, res, out)
        return self._shape(env, op, res, self._clean(self._stored(env.db, res, key)))

    def _update(self, env: Env, name: str, op: Spec, res: _Resource, args: Spec) -> Any:
        return self._write(env, name, op, res, args, patch=False)

    def _patch(self, env: Env, name: str, op: Spec, res: _Resource, args: Spec) -> Any:
        return self._write(env, name, op, res, args, patch=True)

    def _delete(self, env: Env, name: str, op: Spec, res: _Resource, args: Spec) -> Any:
        row = self._fetch(env, op, res, args)
        key = row[res.key]
        if 409 in (op.get("errors") or []):
            for other in self.resources.values():
                for col, f in other.fields.items():
                    if f.get("ref") == res.name:
                        n = env.db.execute(
                            f"SELECT COUNT(*) AS n FROM {_q(other.name)} WHERE {_q(col)} = ?",
                            (key,),
                        ).fetchone()["n"]
                        if n:
                            raise self._err(
                                "conflict",
                                f"{res.noun} {_show(key)} cannot be deleted: {n} "
                                f"{_human(other.name)} refer to it",
                            )
        fault = self._faulty(name, "delete_noop", "delete_wrong_row")
        target = key
        if fault == "delete_wrong_row":
            other = env.db.execute(
                f"SELECT {_q(res.key)} AS k FROM {_q(res.name)} WHERE {_q(res.key)} != ? "
                "ORDER BY rowid LIMIT 1",
                (key,),
            ).fetchone()
            target = other["k"] if other else key
        if fault != "delete_noop":
            env.db.execute(f"DELETE FROM {_q(res.name)} WHERE {_q(res.key)} = ?", (target,))
        shape = (op.get("output") or {}).get("shape", "deleted")
        if shape == "row":
            return res.out(self._clean(row))
        return {"deleted": True, res.key: res.from_db(res.key, key)}

    def _action(self, env: Env, name: str, op: Spec, res: _Resource, args: Spec) -> Any:
        row = self._fetch(env, op, res, args)
        key = row[res.key]
        tr = op.get("transition") or {}
        values = self._body(op, res, args)
        values.pop(res.key, None)
        self._check_refs(env, res, {c: res.from_db(c, v) for c, v in values.items()})
        col = tr.get("field")
        if col:
            to = tr.get("to")
            current = res.from_db(col, row.get(col))
            label = f"{res.noun} {_show(key)}"
            if current == to:
                raise self._err(
                    "conflict",
                    f"{label} is already {_human(str(to)) if isinstance(to, str) else to}",
                )
            allowed = tr.get("from")
            if allowed and current not in allowed:
                says = " or ".join(str(a) for a in allowed)
                raise self._err(
                    "conflict",
                    f"{label} is {current}; only a {res.noun} that is {says} can be changed "
                    "this way",
                )
            values[col] = res.to_db(col, to)
        stamp = None
        for c in tr.get("stamp") or []:
            stamp = stamp or env.now()
            values[c] = stamp
        for c, f in res.fields.items():
            if f.get("generated") == "updated":
                stamp = stamp or env.now()
                values[c] = stamp
        if values and not self._faulty(name, "transition_noop"):
            sets = ", ".join(f"{_q(c)} = ?" for c in values)
            env.db.execute(
                f"UPDATE {_q(res.name)} SET {sets} WHERE {_q(res.key)} = ?", [*values.values(), key]
            )
            return self._shape(env, op, res, self._clean(self._stored(env.db, res, key)))
        out = self._clean(row)
        out.update(values)
        return self._shape(env, op, res, out)


def install(
    module: types.ModuleType, model: Spec, env: Env, tool_error: Callable[[str, str], Exception]
) -> list[str]:
    """Load ``model`` into a sandbox: create the tables in ``env.db``, insert the seed rows, and set
    one function per operation on ``module`` (``__module__ == "env"``). Returns the tool names."""
    engine = Engine(model, tool_error)
    engine.setup(env.db)
    fns = engine.functions()
    for name, fn in fns.items():
        setattr(module, name, fn)
    vars(module)["__envkernel_engine__"] = ENGINE_VERSION
    return list(fns)
