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


def _type_and_null(schema: Any) -> tuple[str, bool]:
    if not isinstance(schema, dict):
        return "", False
    nullable = bool(schema.get("nullable"))
    t = schema.get("type")
    if isinstance(t, list):
        nullable = nullable or "null" in t
        t = next((x for x in t if x != "null"), "")
    if not t:
        for key in ("oneOf", "anyOf"):
            subs = schema.get(key) or []
            types = [_type_and_null(s) for s in subs if isinstance(s, dict)]
            real = [x for x, _ in types if x and x != "null"]
            if real:
                return real[0], nullable or any(x == "null" or n for x, n in types)
        if "allOf" in schema or "properties" in schema:
            return "object", nullable
        if "items" in schema:
            return "array", nullable
        if schema.get("enum"):
            e = schema["enum"][0]
            return {bool: "boolean", int: "integer", float: "number", str: "string"}.get(
                type(e), ""
            ), nullable
    return (t if isinstance(t, str) else ""), nullable


def coerce(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` converted to the schema's type and checked against its constraints, or
    ``NO_VALUE``."""
    t = schema_type(schema)
    v: Any = value
    if t == "integer":
        if isinstance(v, bool):
            return NO_VALUE
        if isinstance(v, float):
            if not v.is_integer():
                return NO_VALUE
            v = int(v)
        elif isinstance(v, str):
            try:
                v = int(v.strip())
            except ValueError:
                return NO_VALUE
        elif not isinstance(v, int):
            return NO_VALUE
    elif t == "number":
        if isinstance(v, bool):
            return NO_VALUE
        if isinstance(v, str):
            try:
                v = float(v.strip())
            except ValueError:
                return NO_VALUE
        elif not isinstance(v, (int, float)):
            return NO_VALUE
    elif t == "string":
        if isinstance(v, bool) or isinstance(v, (dict, list)) or v is None:
            return NO_VALUE
        v = v if isinstance(v, str) else str(v)
    elif t == "boolean":
        if not isinstance(v, bool):
            return NO_VALUE
    elif t == "array":
        if not isinstance(v, list):
            return NO_VALUE
    elif t == "object":
        if not isinstance(v, dict):
            return NO_VALUE
    if "enum" in schema and schema["enum"] and v not in schema["enum"]:
        return NO_VALUE
    if "const" in schema and v != schema["const"]:
        return NO_VALUE
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if "minimum" in schema and v < schema["minimum"]:
            return NO_VALUE
        if "maximum" in schema and v > schema["maximum"]:
            return NO_VALUE
        if (
            "exclusiveMinimum" in schema
            and isinstance(schema["exclusiveMinimum"], (int, float))
            and v <= schema["exclusiveMinimum"]
        ):
            return NO_VALUE
        if (
            "exclusiveMaximum" in schema
            and isinstance(schema["exclusiveMaximum"], (int, float))
            and v >= schema["exclusiveMaximum"]
        ):
            return NO_VALUE
    if isinstance(v, str):
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                if re.search(pattern, v) is None:
                    return NO_VALUE
            except re.error:
                pass
        if schema.get("format") == "email" and "@" not in v:
            return NO_VALUE
        if "minLength" in schema and len(v) < schema["minLength"]:
            return NO_VALUE
        if "maxLength" in schema and len(v) > schema["maxLength"]:
            return NO_VALUE
    return v


def default_values(name: str, schema: dict[str, Any]) -> list[Any]:
    """Type- and format-based fallback values for a parameter (never empty for a typed schema)."""
    t = schema_type(schema)
    ws = set(words(name))
    if t in ("integer", "number"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        lo = lo + 1 if "minimum" not in schema and "exclusiveMinimum" in schema else lo
        base = [1, 2, 3, 5, 10]
        vals = [max(b, lo) if isinstance(lo, (int, float)) else b for b in base]
        if "maximum" in schema:
            vals = [min(v, schema["maximum"]) for v in vals]
        if t == "number":
            vals = [float(v) for v in vals]
        else:
            vals = [int(v) for v in vals]
        return list(dict.fromkeys(vals))
    if t == "boolean":
        return [True, False]
    if t == "string":
        fmt = schema.get("format", "")
        if fmt == "email" or "email" in ws:
            return ["alex.rivera@example.com"]
        if fmt == "date" or "date" in ws:
            return ["2024-01-15"]
        if fmt == "date-time" or ws & {"time", "timestamp", "at"}:
            return ["2024-01-15T10:00:00Z"]
        if fmt in ("uri", "url") or ws & {"url", "uri", "link"}:
            return ["https://example.com"]
        if "phone" in ws:
            return ["+1-555-0100"]
        if "name" in ws:
            return ["Alex Rivera"]
        return _bounded(name, schema, ws)
    if t == "array":
        return [[]]
    if t == "object":
        return [{}]
    return ["example"]


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
        tables = list(self.state)
        verb, _noun, own = tool_parts(tool.name, tables) if tool else ("", "", None)
        raw: list[Any] = []
        if "const" in schema:
            raw.append(schema["const"])
        if schema.get("enum"):
            raw.extend(schema["enum"])
        t = schema_type(schema)
        if t == "object" and "properties" in schema:
            raw.append(self._object(tool, schema, rng))
        elif (
            t == "object"
        ):  # a union of objects (NHS's extension items): the first member with properties
            member = next(
                (
                    m
                    for m in schema.get("oneOf") or schema.get("anyOf") or []
                    if isinstance(m, dict) and m.get("properties")
                ),
                None,
            )
            if member is not None:
                raw.append(self._object(tool, member, rng))
        elif t == "array":
            item = schema.get("items") or {}
            sub = self.sources(tool, singular(name), item, rng) if item else []
            if sub:
                raw.append([sub[0]])
                if len(sub) > 1:
                    raw.append([rng.choice(sub)])
        ws = words(name)
        lname = "_".join(ws)
        hint = schema.get(ID_HINT)
        hinted = isinstance(hint, dict) and hint.get("table") in self.state
        if isinstance(hint, dict) and hinted:
            raw.extend(column_values(self.state[hint["table"]], str(hint.get("column") or "id")))
        if is_id_name(name):
            ent = id_entity(name)
            table = match_table(ent, tables) if ent else own
            raw.extend(self.ids(table))
            if ent:
                raw.extend(self.columns(lname, prefer=own))
        else:
            if verb in CREATE_VERBS and t == "string" and set(ws) & FRESH_NAMES:
                raw.extend(fresh_values(name, schema, rng))
            raw.extend(self.columns(lname, prefer=own))
            if len(ws) > 1:  # customer_email -> customers.email
                table = match_table("_".join(ws[:-1]), tables)
                if table is not None:
                    raw.extend(self.columns(ws[-1], prefer=table)[: len(self.state[table])])
            if lname in SEARCH_NAMES and own is not None and self.state.get(own):
                for col in NAME_LIKE:
                    if col in self.state[own][0]:
                        raw.extend(column_values(self.state[own], col))
        if not (
            (is_id_name(name) or hinted) and raw
        ):  # an id parameter with known ids needs no made-up ones
            raw.extend(default_values(name, schema))
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
        hinted = self._hinted(props, required, fixed, verb, srcs, n)
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
        keyp = next(
            (p for p in ids if id_entity(p) and match_table(id_entity(p), [own]) == own), None
        ) or ("id" if "id" in ids else None)
        others = [p for p in ids if p != keyp]
        if col is None or keyp is None or not all(p in rows[0] for p in others):
            return []
        order = list(reversed(rows)) if verb in ("delete", "remove", "destroy") else rows
        out = []
        for row in order[:n]:
            args: dict[str, Any] = dict(fixed or {})
            args[keyp] = coerce(row[col], props.get(keyp) or {})
            for p in others:
                args[p] = coerce(row[p], props.get(p) or {})
            if any(v is NO_VALUE for v in args.values()):
                continue
            for p in required:
                if p not in args and srcs.get(p):
                    args[p] = srcs[p][0]
            if all(p in args for p in required):
                out.append(args)
        return out

    def _hinted(
        self,
        props: dict[str, Any],
        required: list[str],
        fixed: dict[str, Any] | None,
        verb: str,
        srcs: dict[str, list[Any]],
        n: int,
    ) -> list[dict[str, Any]]:
        """Argument sets of a nested tool whose parents carry :data:`ID_HINT` ``via``s: from one
        row of its own table each (the key from the row's key column, each parent from its
        column)."""
        hints: dict[str, dict[str, Any]] = {}
        for p in required:
            h = (props.get(p) or {}).get(ID_HINT)
            if isinstance(h, dict) and not (fixed and p in fixed):
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
        out: list[dict[str, Any]] = []
        for row in (list(reversed(rows)) if verb in ("delete", "remove", "destroy") else rows)[:n]:
            args: dict[str, Any] = dict(fixed or {})
            for p, c in cols.items():
                args[p] = coerce(row[c], props.get(p) or {})
            if any(v is NO_VALUE for v in args.values()):
                continue
            for p in required:
                if p not in args and srcs.get(p):
                    args[p] = srcs[p][0]
            if all(p in args for p in required) and args not in out:
                out.append(args)
        return out

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
        srcs: dict[str, list[Any]] = {}
        for p in list(props) + [r for r in required if r not in props]:
            if fixed and p in fixed:
                continue
            ps = props.get(p) or {}
            src = self.sources(tool, p, ps, rng)
            if (
                p not in required and "default" in ps
            ):  # an explicit default is the same call as none
                src = [v for v in src if v != ps["default"]]
            srcs[p] = src
        verb = words(tool.name)[0] if words(tool.name) else ""
        if verb in (
            "delete",
            "remove",
            "destroy",
        ):  # the newest rows are the likeliest to be deletable
            for p in srcs:
                if is_id_name(p) and p not in required[:-1]:
                    srcs[p] = list(reversed(srcs[p]))
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        for found in self._coherent(tool, props, required, fixed, verb, srcs, n):
            key = json.dumps(found, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                out.append(found)
        for k in range(max(1, n) * 4):
            if len(out) >= n:
                break
            args: dict[str, Any] = dict(fixed or {})
            add_optional = k % 2 == 1 and optional > 0
            ok = True
            for p, src in srcs.items():
                is_req = p in required
                if not is_req and not (add_optional and rng.random() < optional):
                    continue
                if not src:
                    if is_req:
                        ok = False
                        break
                    continue
                if k == 0:
                    v = src[0]
                elif is_id_name(p) or ID_HINT in (
                    props.get(p) or {}
                ):  # Stripe's {invoice}: walk its rows too
                    v = src[k % len(src)]
                else:
                    v = rng.choice(src)
                args[p] = v
            if not ok:
                break
            key = json.dumps(args, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                out.append(args)
        return out
