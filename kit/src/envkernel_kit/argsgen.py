"""Valid-looking tool arguments, built from an environment's state and a tool's JSON Schema.

Values come, best first, from:

1. the schema itself (``enum``, ``const``);
2. ids of the table a parameter names (``order_id`` -> ``orders.id``; plain ``id`` -> the tool's
   own table);
3. values of a column with the parameter's name (the tool's table first, then any table);
4. for free-text search parameters (``query``, ``q``...), name-like columns of the tool's table;
5. defaults from the type and ``format`` (respecting ``minimum``/``maximum``).

A parameter whose schema carries :data:`ID_HINT` (``{"table": "customers", "column": "id"}``,
written by synthesizers that know which keys an argument takes, whatever its name: Stripe's
``{customer}``) takes that column's values first; with ``"via": ["cards", "customer"]`` (the
column of the tool's own table holding it) the argument sets of a nested tool come from one row
of that table, so parent and key belong together.

Every value is coerced to the schema's type and checked against its constraints.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from typing import Any

from envkernel_schemas import ToolSpec

from .naming import (
    CREATE_VERBS,
    NAME_LIKE,
    State,
    column_values,
    id_column,
    id_entity,
    is_id_name,
    match_table,
    singular,
    tool_parts,
    words,
)

SEARCH_NAMES = frozenset(
    {
        "query",
        "q",
        "search",
        "term",
        "keyword",
        "keywords",
        "text",
        "filter",
        "pattern",
        "name_contains",
    }
)
"""Parameter names that take free text to search with."""
FRESH_NAMES = frozenset(
    {"email", "username", "login", "sku", "code", "slug", "handle", "name", "title", "phone"}
)
"""String parameters that a create-tool likely wants unique: fresh values are tried first."""

FIRST_NAMES = ("Alex", "Sam", "Jordan", "Robin", "Casey", "Morgan", "Taylor", "Jamie")
"""Given names used for generated person names."""
LAST_NAMES = ("Rivera", "Chen", "Novak", "Okafor", "Lindqvist", "Haddad", "Moreau", "Sato")
"""Family names used for generated person names."""

ID_HINT = "x-envkernel-ids"
"""Schema key naming the table and column whose values an argument takes (see the module
docstring)."""
NO_VALUE = object()
"""What :func:`coerce` returns when a value cannot be made to fit its schema."""


def schema_type(schema: Any) -> str:
    """The main JSON type of a JSON Schema or OpenAPI 3.0/3.1 schema ("" when untyped):
    ``["string", "null"]`` -> ``string``; the first typed ``oneOf``/``anyOf`` member; ``object`` for
    ``properties``/``allOf``, ``array`` for ``items``, the type of the first ``enum`` value."""
    return _type_and_null(schema)[0]


def schema_nullable(schema: Any) -> bool:
    """True when the schema admits null (``nullable: true``, a ``"null"`` type or member)."""
    return _type_and_null(schema)[1]


_ENUM_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}
"""The JSON type of an ``enum``'s first value."""


def _implied_type(schema: dict[str, Any]) -> str | None:
    """The type an untyped schema's keywords imply (``properties``: object, ``items``: array, an
    ``enum``'s first value), or None."""
    if "allOf" in schema or "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    if schema.get("enum"):
        return _ENUM_TYPES.get(type(schema["enum"][0]), "")
    return None


def _union_type(schema: dict[str, Any]) -> tuple[str, bool] | None:
    """The first typed member of a ``oneOf``/``anyOf`` and whether a member admits null, or
    None."""
    for key in ("oneOf", "anyOf"):
        subs = schema.get(key) or []
        types = [_type_and_null(s) for s in subs if isinstance(s, dict)]
        real = [x for x, _ in types if x and x != "null"]
        if real:
            return real[0], any(x == "null" or n for x, n in types)
    return None


def _type_and_null(schema: Any) -> tuple[str, bool]:
    if not isinstance(schema, dict):
        return "", False
    nullable = bool(schema.get("nullable"))
    t = schema.get("type")
    if isinstance(t, list):
        nullable = nullable or "null" in t
        t = next((x for x in t if x != "null"), "")
    if not t:
        union = _union_type(schema)
        if union:
            return union[0], nullable or union[1]
        implied = _implied_type(schema)
        if implied is not None:
            return implied, nullable
    return (t if isinstance(t, str) else ""), nullable


def _to_integer(v: Any) -> Any:
    if isinstance(v, bool):
        return NO_VALUE
    if isinstance(v, float):
        return int(v) if v.is_integer() else NO_VALUE
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            return NO_VALUE
    return v if isinstance(v, int) else NO_VALUE


def _to_number(v: Any) -> Any:
    if isinstance(v, bool):
        return NO_VALUE
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            return NO_VALUE
    return v if isinstance(v, (int, float)) else NO_VALUE


def _to_string(v: Any) -> Any:
    if isinstance(v, bool) or isinstance(v, (dict, list)) or v is None:
        return NO_VALUE
    return v if isinstance(v, str) else str(v)


def _only(kind: type) -> Callable[[Any], Any]:
    """A converter that takes values of ``kind`` as they are and nothing else."""
    return lambda v: v if isinstance(v, kind) else NO_VALUE


_CONVERT: dict[str, Callable[[Any], Any]] = {
    "integer": _to_integer,
    "number": _to_number,
    "string": _to_string,
    "boolean": _only(bool),
    "array": _only(list),
    "object": _only(dict),
}
"""Schema type -> the conversion of a value to it (``NO_VALUE``: it cannot be)."""


def _fits_number(v: float, schema: dict[str, Any]) -> bool:
    if "minimum" in schema and v < schema["minimum"]:
        return False
    if "maximum" in schema and v > schema["maximum"]:
        return False
    low, high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if isinstance(low, (int, float)) and v <= low:
        return False
    return not (isinstance(high, (int, float)) and v >= high)


def _fits_string(v: str, schema: dict[str, Any]) -> bool:
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            if re.search(pattern, v) is None:
                return False
        except re.error:
            pass
    if schema.get("format") == "email" and "@" not in v:
        return False
    if "minLength" in schema and len(v) < schema["minLength"]:
        return False
    return not ("maxLength" in schema and len(v) > schema["maxLength"])


def _fits(v: Any, schema: dict[str, Any]) -> bool:
    """Whether a value of the schema's type meets its constraints."""
    if "enum" in schema and schema["enum"] and v not in schema["enum"]:
        return False
    if "const" in schema and v != schema["const"]:
        return False
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return _fits_number(v, schema)
    if isinstance(v, str):
        return _fits_string(v, schema)
    return True


def coerce(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` converted to the schema's type and checked against its constraints, or
    ``NO_VALUE``."""
    convert = _CONVERT.get(schema_type(schema))
    v = value if convert is None else convert(value)
    if v is NO_VALUE or not _fits(v, schema):
        return NO_VALUE
    return v


_STRING_DEFAULTS: tuple[tuple[tuple[str, ...], frozenset[str], str], ...] = (
    (("email",), frozenset({"email"}), "alex.rivera@example.com"),
    (("date",), frozenset({"date"}), "2024-01-15"),
    (("date-time",), frozenset({"time", "timestamp", "at"}), "2024-01-15T10:00:00Z"),
    (("uri", "url"), frozenset({"url", "uri", "link"}), "https://example.com"),
    ((), frozenset({"phone"}), "+1-555-0100"),
    ((), frozenset({"name"}), "Alex Rivera"),
)
"""String fallbacks: the formats or the words of a parameter's name that call for a value."""
_OTHER_DEFAULTS: dict[str, Callable[[], list[Any]]] = {
    "boolean": lambda: [True, False],
    "array": lambda: [[]],
    "object": lambda: [{}],
}
"""Fallbacks of the other types (fresh each time: a caller may change them)."""


def _number_defaults(t: str, schema: dict[str, Any]) -> list[Any]:
    """Small numbers within the schema's bounds (floats for ``number``)."""
    lo = schema.get("minimum", schema.get("exclusiveMinimum", 0))
    lo = lo + 1 if "minimum" not in schema and "exclusiveMinimum" in schema else lo
    base = [1, 2, 3, 5, 10]
    vals = [max(b, lo) if isinstance(lo, (int, float)) else b for b in base]
    if "maximum" in schema:
        vals = [min(v, schema["maximum"]) for v in vals]
    vals = [float(v) for v in vals] if t == "number" else [int(v) for v in vals]
    return list(dict.fromkeys(vals))


def _string_defaults(name: str, schema: dict[str, Any], ws: set[str]) -> list[Any]:
    fmt = schema.get("format", "")
    for formats, names, value in _STRING_DEFAULTS:
        if fmt in formats or ws & names:
            return [value]
    return _bounded(name, schema, ws)


def default_values(name: str, schema: dict[str, Any]) -> list[Any]:
    """Type- and format-based fallback values for a parameter (never empty for a typed schema)."""
    t = schema_type(schema)
    if t in ("integer", "number"):
        return _number_defaults(t, schema)
    if t == "string":
        return _string_defaults(name, schema, set(words(name)))
    make = _OTHER_DEFAULTS.get(t)
    return make() if make is not None else ["example"]


_BOUNDS = ("pattern", "format", "minLength", "maxLength", "minimum", "maximum", "enum", "items")


def with_member_bounds(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with the bounds of its first non-null ``oneOf``/``anyOf`` member added where it
    has none of its own (Discord's ``oneOf: [null, {pattern: ...}]`` role ids)."""
    members = schema.get("oneOf") or schema.get("anyOf") if isinstance(schema, dict) else None
    if not isinstance(members, list):
        return schema
    alt = next(
        (m for m in members if isinstance(m, dict) and schema_type(m) not in ("", "null")), None
    )
    if alt is None:
        return schema
    extra = {k: alt[k] for k in _BOUNDS if k in alt and k not in schema}
    return {**schema, **extra} if extra else schema


def _bounded(name: str, schema: dict[str, Any], ws: set[str]) -> list[Any]:
    """Plain strings that keep a schema's ``pattern`` (through rstr's ``xeger``) and length
    bounds: a three-letter currency code, a two-letter country, ``example`` padded or cut."""
    lo, hi = schema.get("minLength"), schema.get("maxLength")
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        import rstr

        gen = rstr.Rstr(random.Random(name))
        out = []
        for _ in range(8):
            try:
                s = gen.xeger(pattern)
            except (re.error, ValueError, TypeError, IndexError, OverflowError):
                break
            if (not isinstance(lo, int) or len(s) >= lo) and (
                not isinstance(hi, int) or len(s) <= hi
            ):
                out.append(s)
                if len(out) == 2:
                    break
        if out:
            return out
    if "currency" in ws and lo in (None, 3) and hi in (None, 3):
        return ["USD", "EUR"]
    if "country" in ws and lo in (None, 2) and hi in (None, 2):
        return ["US", "FR"]
    text = "example"
    if isinstance(lo, int) and len(text) < lo:
        text = (text * (lo // len(text) + 1))[:lo]
    if isinstance(hi, int) and 0 <= hi < len(text):
        text = text[: max(hi, 1)]
    return [text]


def fresh_values(name: str, schema: dict[str, Any], rng: random.Random, n: int = 3) -> list[Any]:
    """New, unlikely-to-clash values for a string parameter of a create-tool."""
    ws = set(words(name))
    out: list[Any] = []
    for _ in range(n):
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        k = rng.randint(10, 999)
        if schema.get("format") == "email" or "email" in ws:
            out.append(f"{first.lower()}.{last.lower()}{k}@example.com")
        elif "phone" in ws:
            out.append(f"+1-555-{k:04d}")
        elif ws & {"name", "username", "login", "handle"}:
            out.append(f"{first} {last}" if "name" in ws else f"{first.lower()}{k}")
        else:
            out.append(f"{'-'.join(words(name)).upper()}-{k}")
    return out


def _object_member(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The first member with properties of a union of objects (``oneOf``/``anyOf``), or None."""
    return next(
        (
            m
            for m in schema.get("oneOf") or schema.get("anyOf") or []
            if isinstance(m, dict) and m.get("properties")
        ),
        None,
    )


def _fitting(raw: list[Any], schema: dict[str, Any]) -> list[Any]:
    """The values of ``raw`` that coerce to the schema, coerced, each once, in order."""
    out: list[Any] = []
    seen: set[str] = set()
    for v in raw:
        c = coerce(v, schema)
        if c is NO_VALUE:
            continue
        key = json.dumps(c, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


DELETE_VERBS = ("delete", "remove", "destroy")
"""Verbs of tools that delete: their ids go newest row first."""


def _key_param(ids: list[str], own: str) -> str | None:
    """Which id parameter is the key of the tool's own table ``own`` (``attendee_id`` of
    ``attendees``, else ``id``), or None."""
    return next(
        (p for p in ids if id_entity(p) and match_table(id_entity(p), [own]) == own), None
    ) or ("id" if "id" in ids else None)


class _Distinct:
    """Argument sets, each once (by their JSON), in the order added."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self._seen: set[str] = set()

    def add(self, args: dict[str, Any]) -> None:
        key = json.dumps(args, sort_keys=True, default=str)
        if key not in self._seen:
            self._seen.add(key)
            self.items.append(args)


class _RowSets:
    """Argument sets of a tool taken from rows of one table: some parameters from the row's
    columns, the other required ones their best value."""

    def __init__(
        self,
        props: dict[str, Any],
        required: list[str],
        fixed: dict[str, Any] | None,
        verb: str,
        srcs: dict[str, list[Any]],
        n: int,
    ) -> None:
        self.props, self.required, self.fixed, self.verb, self.srcs, self.n = (
            props,
            required,
            fixed,
            verb,
            srcs,
            n,
        )

    def take(
        self, rows: list[dict[str, Any]], cols: dict[str, str], *, unique: bool
    ) -> list[dict[str, Any]]:
        """A set from each of the first ``n`` rows (newest first for a delete) whose columns
        ``cols`` (parameter -> column) fit; ``unique``: each set once."""
        order = list(reversed(rows)) if self.verb in DELETE_VERBS else rows
        out: list[dict[str, Any]] = []
        for row in order[: self.n]:
            args: dict[str, Any] = dict(self.fixed or {})
            for p, c in cols.items():
                args[p] = coerce(row[c], self.props.get(p) or {})
            if any(v is NO_VALUE for v in args.values()):
                continue
            for p in self.required:
                if p not in args and self.srcs.get(p):
                    args[p] = self.srcs[p][0]
            if all(p in args for p in self.required) and not (unique and args in out):
                out.append(args)
        return out


class _Draw:
    """The ``k``-th argument set of :meth:`ArgumentBuilder.candidates`: the best values first,
    then ids (and hinted ids, like Stripe's ``{invoice}``) walked in row order and the rest drawn
    at random."""

    def __init__(
        self,
        props: dict[str, Any],
        required: list[str],
        fixed: dict[str, Any] | None,
        srcs: dict[str, list[Any]],
        rng: random.Random,
    ) -> None:
        self.props, self.required, self.fixed, self.srcs, self.rng = (
            props,
            required,
            fixed,
            srcs,
            rng,
        )

    def __call__(self, k: int, add_optional: bool, optional: float) -> dict[str, Any] | None:
        """The set (with some optional parameters when ``add_optional``); None when a required
        parameter has no value."""
        args: dict[str, Any] = dict(self.fixed or {})
        for p, src in self.srcs.items():
            is_req = p in self.required
            if not is_req and not (add_optional and self.rng.random() < optional):
                continue
            if not src:
                if is_req:
                    return None
                continue
            args[p] = self._pick(k, p, src)
        return args

    def _pick(self, k: int, p: str, src: list[Any]) -> Any:
        if k == 0:
            return src[0]
        if is_id_name(p) or ID_HINT in (self.props.get(p) or {}):
            return src[k % len(src)]
        return self.rng.choice(src)


class ArgumentBuilder:
    """Builds argument sets for tools from a state dump (see the module docstring)."""

    def __init__(self, state: State) -> None:
        self.state = state

    # -- value sources -------------------------------------------------------------------

    def ids(self, table: str | None) -> list[Any]:
        """The ids of a table, in row order."""
        if table is None or table not in self.state:
            return []
        rows = self.state[table]
        col = id_column(table, rows)
        return column_values(rows, col) if col else []

    def columns(self, column: str, prefer: str | None = None) -> list[Any]:
        """Values of every column named ``column``; the ``prefer`` table first."""
        out: list[Any] = []
        tables = ([prefer] if prefer in self.state else []) + [t for t in self.state if t != prefer]
        for t in tables:
            rows = self.state[t]
            if rows and column in rows[0]:
                out.extend(column_values(rows, column))
        return out

    def sources(
        self,
        tool: ToolSpec | None,
        name: str,
        schema: dict[str, Any],
        rng: random.Random | None = None,
    ) -> list[Any]:
        """Candidate values for one parameter, best first, coerced to its schema (never empty)."""
        rng = rng or random.Random(0)
        schema = with_member_bounds(schema)
        raw = self._schema_values(tool, name, schema, rng)
        hint = schema.get(ID_HINT)
        hinted = isinstance(hint, dict) and hint.get("table") in self.state
        if isinstance(hint, dict) and hinted:
            raw.extend(column_values(self.state[hint["table"]], str(hint.get("column") or "id")))
        verb, _noun, own = tool_parts(tool.name, list(self.state)) if tool else ("", "", None)
        if is_id_name(name):
            raw.extend(self._id_values(name, own))
        else:
            raw.extend(self._named_values(name, schema, verb, own, rng))
        if not (
            (is_id_name(name) or hinted) and raw
        ):  # an id parameter with known ids needs no made-up ones
            raw.extend(default_values(name, schema))
        return _fitting(raw, schema)

    def _schema_values(
        self, tool: ToolSpec | None, name: str, schema: dict[str, Any], rng: random.Random
    ) -> list[Any]:
        """Values the schema itself gives: its ``const``, its ``enum``, an object or array built
        from its parts."""
        raw: list[Any] = []
        if "const" in schema:
            raw.append(schema["const"])
        if schema.get("enum"):
            raw.extend(schema["enum"])
        t = schema_type(schema)
        if t == "object":
            member = (
                schema if "properties" in schema else _object_member(schema)
            )  # a union of objects (NHS's extension items): the first member with properties
            if member is not None:
                raw.append(self._object(tool, member, rng))
        elif t == "array":
            item = schema.get("items") or {}
            sub = self.sources(tool, singular(name), item, rng) if item else []
            if sub:
                raw.append([sub[0]])
                if len(sub) > 1:
                    raw.append([rng.choice(sub)])
        return raw

    def _id_values(self, name: str, own: str | None) -> list[Any]:
        """Values of an id parameter: the ids of its table (else of the tool's own), then the values
        of columns of its name."""
        ent = id_entity(name)
        table = match_table(ent, list(self.state)) if ent else own
        raw = list(self.ids(table))
        if ent:
            raw.extend(self.columns("_".join(words(name)), prefer=own))
        return raw

    def _named_values(
        self, name: str, schema: dict[str, Any], verb: str, own: str | None, rng: random.Random
    ) -> list[Any]:
        """Values of another parameter: fresh ones a create-tool wants unique, the columns of its
        name (``customer_email`` -> ``customers.email``), names to search by."""
        ws = words(name)
        lname = "_".join(ws)
        raw: list[Any] = []
        if verb in CREATE_VERBS and schema_type(schema) == "string" and set(ws) & FRESH_NAMES:
            raw.extend(fresh_values(name, schema, rng))
        raw.extend(self.columns(lname, prefer=own))
        if len(ws) > 1:  # customer_email -> customers.email
            table = match_table("_".join(ws[:-1]), list(self.state))
            if table is not None:
                raw.extend(self.columns(ws[-1], prefer=table)[: len(self.state[table])])
        if lname in SEARCH_NAMES and own is not None and self.state.get(own):
            for col in NAME_LIKE:
                if col in self.state[own][0]:
                    raw.extend(column_values(self.state[own], col))
        return raw

    def _object(
        self, tool: ToolSpec | None, schema: dict[str, Any], rng: random.Random
    ) -> dict[str, Any]:
        props: dict[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        obj: dict[str, Any] = {}
        for p, ps in props.items():
            if p in required:
                src = self.sources(tool, p, ps or {}, rng)
                if src:
                    obj[p] = src[0]
        return obj

    def _coherent(
        self,
        tool: ToolSpec,
        props: dict[str, Any],
        required: list[str],
        fixed: dict[str, Any] | None,
        verb: str,
        srcs: dict[str, list[Any]],
        n: int,
    ) -> list[dict[str, Any]]:
        """For a nested item tool (``event_id`` + ``attendee_id``): argument sets taken from one row
        of the tool's own table, so the parent and the key belong together."""
        sets = _RowSets(props, required, fixed, verb, srcs, n)
        hinted = self._hinted(sets)
        if hinted:
            return hinted
        ids = [p for p in required if is_id_name(p) and not (fixed and p in fixed)]
        if len(ids) < 2:
            return []
        _verb, _noun, own = tool_parts(tool.name, list(self.state))
        rows = self.state.get(own or "") or []
        if not rows or own is None:
            return []
        col = id_column(own, rows)
        keyp = _key_param(ids, own)
        others = [p for p in ids if p != keyp]
        if col is None or keyp is None or not all(p in rows[0] for p in others):
            return []
        return sets.take(rows, {keyp: col, **{p: p for p in others}}, unique=False)

    def _hinted(self, sets: _RowSets) -> list[dict[str, Any]]:
        """Argument sets of a nested tool whose parents carry :data:`ID_HINT` ``via``s: from one
        row of its own table each (the key from the row's key column, each parent from its
        column)."""
        hints: dict[str, dict[str, Any]] = {}
        for p in sets.required:
            h = (sets.props.get(p) or {}).get(ID_HINT)
            if isinstance(h, dict) and not (sets.fixed and p in sets.fixed):
                hints[p] = h
        vias = {
            p: h["via"]
            for p, h in hints.items()
            if isinstance(h.get("via"), list) and len(h["via"]) == 2
        }
        if not vias:
            return []
        own = next(iter(vias.values()))[0]
        rows = self.state.get(own) or []
        cols: dict[str, str] = {p: str(v[1]) for p, v in vias.items() if v[0] == own}
        cols.update(
            {
                p: str(h.get("column") or "id")
                for p, h in hints.items()
                if p not in vias and h.get("table") == own
            }
        )
        if not rows or not all(c in rows[0] for c in cols.values()):
            return []
        return sets.take(rows, cols, unique=True)

    # -- argument sets --------------------------------------------------------------------

    def candidates(
        self,
        tool: ToolSpec,
        rng: random.Random,
        n: int = 6,
        *,
        fixed: dict[str, Any] | None = None,
        optional: float = 0.5,
    ) -> list[dict[str, Any]]:
        """Up to ``n`` distinct argument sets for ``tool``.

        The first uses every required parameter's best value; later ones walk through the ids
        in row order and draw other values at random, and every other set adds some optional
        parameters (each with probability ``optional``). ``fixed`` arguments are kept as given.
        """
        params = tool.parameters or {}
        props: dict[str, Any] = params.get("properties") or {}
        required = list(params.get("required") or [])
        srcs = self._param_sources(tool, props, required, fixed, rng)
        verb = words(tool.name)[0] if words(tool.name) else ""
        if verb in DELETE_VERBS:  # the newest rows are the likeliest to be deletable
            for p in srcs:
                if is_id_name(p) and p not in required[:-1]:
                    srcs[p] = list(reversed(srcs[p]))
        out = _Distinct()
        for found in self._coherent(tool, props, required, fixed, verb, srcs, n):
            out.add(found)
        draw = _Draw(props, required, fixed, srcs, rng)
        for k in range(max(1, n) * 4):
            if len(out.items) >= n:
                break
            args = draw(k, k % 2 == 1 and optional > 0, optional)
            if args is None:
                break
            out.add(args)
        return out.items

    def _param_sources(
        self,
        tool: ToolSpec,
        props: dict[str, Any],
        required: list[str],
        fixed: dict[str, Any] | None,
        rng: random.Random,
    ) -> dict[str, list[Any]]:
        """Each parameter's candidate values (but the ``fixed`` ones'); an optional one's explicit
        default left out, since it is the same call as none."""
        srcs: dict[str, list[Any]] = {}
        for p in list(props) + [r for r in required if r not in props]:
            if fixed and p in fixed:
                continue
            ps = props.get(p) or {}
            src = self.sources(tool, p, ps, rng)
            if p not in required and "default" in ps:
                src = [v for v in src if v != ps["default"]]
            srcs[p] = src
        return srcs
