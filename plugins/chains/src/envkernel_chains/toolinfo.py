"""What each tool does to the state, read from the environment's resource model or guessed from names.

A model environment (``env.behaviour.model``, what the ``openapi`` synthesizer makes) says it
outright: an operation's kind (create/get/list/update/patch/delete/action), its resource, which
argument is the key, which are parents, filters, search, paging and sorting, which body column
each argument writes (and whether that column refers to another resource), and an action's
status transition. A code environment (``env.py``) has none of that, so the same facts are
guessed from names (:mod:`envkernel_kit.naming`): ``cancel_order(order_id)`` acts on
``orders`` keyed by ``order_id``; ``list_orders(customer_id, status)`` lists orders under a
customer, filtered by status.

Every parameter gets a **role**:

- ``key``: the id of the row the tool acts on (its own resource);
- ``ref``: the id of a row of another resource (a parent, a foreign key to write, an id filter);
- ``filter`` / ``search``: narrows a list (``status``, ``q``);
- ``page`` / ``sort``: paging and ordering (never used by samplers);
- ``value``: a value to write (create, update) or any other literal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from envkernel_kit.argsgen import SEARCH_NAMES, schema_type
from envkernel_kit.naming import (
    CREATE_VERBS,
    KEY_LIKE,
    READ_VERBS,
    UPDATE_VERBS,
    id_column,
    id_entity,
    is_id_name,
    match_table,
    singular,
    tool_parts,
    words,
)
from envkernel_schemas import EnvSpec, ModelBehaviour, ToolSpec

State = dict[str, list[dict[str, Any]]]

PAGE_NAMES = frozenset({"limit", "offset", "page", "page_size", "per_page", "cursor", "page_token", "next_cursor", "size", "max_results", "skip", "top"})
"""Paging parameters (a sampler leaves them out)."""
SORT_NAMES = frozenset({"sort", "sort_by", "order", "order_by", "direction", "sort_order", "ordering"})
"""Sorting parameters (a sampler leaves them out)."""
LIST_VERBS = frozenset({"list", "search", "query", "browse", "filter"})
"""Read verbs of tools that return lists."""
REMOVE_VERBS = frozenset({"delete", "remove", "destroy", "drop", "purge", "revoke"})
"""Verbs of tools that remove a row (other end-of-life verbs, like ``cancel``, are actions)."""


@dataclass
class ParamInfo:
    """One parameter of a tool and what it stands for."""

    name: str
    role: str
    """``key``, ``ref``, ``filter``, ``search``, ``page``, ``sort`` or ``value``."""
    required: bool = False
    schema: dict[str, Any] = field(default_factory=dict)
    resource: str | None = None
    """For ``key``/``ref``: the table whose id it holds. For others: the table of ``field``."""
    field: str | None = None
    """The column it filters on or writes (when known)."""
    op: str = "eq"
    """A filter's comparison: eq, in, contains, gte, lte, gt, lt."""
    search_fields: tuple[str, ...] = ()
    """For ``search``: the columns it searches (empty: unknown)."""
    parent: bool = False
    """For ``ref``: the row the tool acts on lives under it (a path parent: ``/events/{id}/attendees``)."""

    @property
    def is_id(self) -> bool:
        """True for a parameter that holds a row's id (a person would not know it)."""
        return self.role in ("key", "ref")


@dataclass
class ToolInfo:
    """One tool: its kind, resource, parameters, and the tables it reads and writes."""

    name: str
    spec: ToolSpec
    kind: str
    """``get``, ``list``, ``create``, ``update``, ``delete``, ``action`` or ``other``."""
    resource: str | None
    noun: str
    """The entity noun (``order``), from the resource or the tool name."""
    verb: str
    """The verb phrase a person would use (``cancel``, ``check in``)."""
    params: dict[str, ParamInfo] = field(default_factory=dict)
    transition: dict[str, Any] | None = None
    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    from_model: bool = False

    @property
    def mutates(self) -> bool:
        """True when the tool may change the state."""
        return self.spec.mutates

    def needs(self, required_only: bool = True) -> list[ParamInfo]:
        """The id parameters (key/ref) of the tool, the required ones by default."""
        return [p for p in self.params.values() if p.is_id and (p.required or not required_only)]

    def param_for_field(self, column: str) -> ParamInfo | None:
        """The parameter that writes or filters on ``column``."""
        for p in self.params.values():
            if p.field == column:
                return p
        return None


@dataclass
class Schema:
    """What is known about the tables: key columns, references, unique and searchable columns."""

    tables: list[str]
    keys: dict[str, str] = field(default_factory=dict)
    """Table -> its key column."""
    refs: dict[str, dict[str, str]] = field(default_factory=dict)
    """Table -> column -> referenced table."""
    unique: dict[str, set[str]] = field(default_factory=dict)
    """Table -> columns whose values are unique (a person can name a row by them)."""
    enums: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    """Table -> column -> allowed values."""
    formats: dict[str, dict[str, str]] = field(default_factory=dict)
    """Table -> column -> JSON Schema format."""
    generated: dict[str, set[str]] = field(default_factory=dict)
    """Table -> columns the server fills in (never written by a call)."""
    defaults: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Table -> column -> value a new row gets when none is given."""

    def key(self, table: str | None) -> str:
        """A table's key column (``id`` when unknown)."""
        return self.keys.get(table or "", "id")

    def ref(self, table: str | None, column: str) -> str | None:
        """The table ``column`` of ``table`` refers to, or None."""
        if table is None:
            return None
        got = self.refs.get(table, {}).get(column)
        if got is not None:
            return got
        if is_id_name(column) and words(column) != ["id"]:
            t = match_table(id_entity(column), self.tables)
            if t is not None and t != table:
                return t
        return None


def schema_of(env: EnvSpec, seed: State) -> Schema:
    """The table facts of ``env``: from its resource model, else from the seed state and names."""
    tables = list(seed)
    s = Schema(tables=tables)
    model = env.behaviour.model if isinstance(env.behaviour, ModelBehaviour) else None
    if model and isinstance(model.get("resources"), dict):
        for t, res in model["resources"].items():
            s.keys[t] = str(res.get("key") or "id")
            fields = res.get("fields") or {}
            s.refs[t] = {c: f["ref"] for c, f in fields.items() if isinstance(f, dict) and f.get("ref")}
            s.unique[t] = set(res.get("unique") or [])
            s.enums[t] = {c: list(f["enum"]) for c, f in fields.items() if isinstance(f, dict) and f.get("enum")}
            s.formats[t] = {c: f["format"] for c, f in fields.items() if isinstance(f, dict) and f.get("format")}
            s.generated[t] = {c for c, f in fields.items() if isinstance(f, dict) and (f.get("generated") or f.get("read_only"))}
            s.defaults[t] = {c: f["default"] for c, f in fields.items() if isinstance(f, dict) and "default" in f}
            if t not in s.tables:
                s.tables.append(t)
    for t, rows in seed.items():
        if t not in s.keys:
            s.keys[t] = id_column(t, rows) or "id"
        if t not in s.refs:
            s.refs[t] = {}
            for c in rows[0] if rows else {}:
                ref = s.ref(t, c)
                if ref is not None:
                    s.refs[t][c] = ref
        if t not in s.unique:
            s.unique[t] = {c for c in (rows[0] if rows else {}) if c in KEY_LIKE and len({str(r.get(c)) for r in rows}) == len(rows)}
        s.generated.setdefault(t, set(env.generated.get(t, [])))
    return s


def _verb_phrase(tool_name: str, tables: list[str]) -> str:
    """The verb a person would use: the tool name's first word and the words after it up to the
    first that names a table (``check_in_appointment`` -> ``check in``; ``share_file`` -> ``share``)."""
    ws = words(tool_name)
    if not ws:
        return tool_name
    nouns = {singular(w) for t in tables for w in words(t)} | {singular("_".join(words(t))) for t in tables}
    out = [ws[0]]
    for w in ws[1:]:
        if singular(w) in nouns or w in nouns:
            break
        out.append(w)
    if len(out) > 2:
        out = out[:1]
    return " ".join(out)


def _model_info(spec: ToolSpec, op: dict[str, Any], s: Schema) -> ToolInfo:
    kind = {"patch": "update"}.get(op.get("kind", ""), op.get("kind", "other"))
    res = op.get("resource")
    params = (spec.parameters or {}).get("properties") or {}
    required = set((spec.parameters or {}).get("required") or [])
    info = ToolInfo(name=spec.name, spec=spec, kind=kind, resource=res, noun=singular("_".join(words(res or spec.name))),
                    verb=_verb_phrase(spec.name, s.tables), transition=op.get("transition"), from_model=True)
    body = op.get("body") or {}
    filters = op.get("filters") or {}
    search = op.get("search") or {}
    page = op.get("page") or {}
    sort = op.get("sort") or {}
    parents = {p["arg"]: p for p in op.get("parents") or [] if isinstance(p, dict) and "arg" in p}
    page_args = {v for k, v in page.items() if k != "default_limit" and isinstance(v, str)}
    sort_args = {sort.get("arg"), sort.get("order_arg")} - {None}
    for name, schema in params.items():
        req = name in required
        schema = schema if isinstance(schema, dict) else {}
        if name == op.get("key"):
            p = ParamInfo(name, "key", req, schema, resource=res, field=s.key(res))
        elif name in parents:
            par = parents[name]
            p = ParamInfo(name, "ref", req, schema, resource=par.get("resource"), field=par.get("field"), parent=True)
        elif name in body:
            col = body[name]
            ref = s.refs.get(res or "", {}).get(col)
            p = ParamInfo(name, "ref" if ref else "value", req, schema, resource=ref or res, field=col)
        elif name in filters:
            flt = filters[name]
            col = flt.get("field")
            ref = s.refs.get(res or "", {}).get(col) if col else None
            if ref and flt.get("op", "eq") == "eq":
                p = ParamInfo(name, "ref", req, schema, resource=ref, field=col)
            else:
                p = ParamInfo(name, "filter", req, schema, resource=res, field=col, op=flt.get("op", "eq"))
        elif name == search.get("arg"):
            p = ParamInfo(name, "search", req, schema, resource=res, search_fields=tuple(search.get("fields") or ()))
        elif name in page_args:
            p = ParamInfo(name, "page", req, schema)
        elif name in sort_args:
            p = ParamInfo(name, "sort", req, schema)
        else:
            p = _guess_param(name, schema, req, info, s)
        info.params[name] = p
    return _with_access(info)


def _with_access(info: ToolInfo) -> ToolInfo:
    """``info`` with the tables it reads (its own, and those its ``ref`` parameters point to) and writes."""
    table = info.resource
    if table:
        info.reads.add(table)
        if info.spec.mutates:
            info.writes.add(table)
    for p in info.params.values():
        if p.role == "ref" and p.resource:
            info.reads.add(p.resource)
    return info


def _guess_param(name: str, schema: dict[str, Any], req: bool, info: ToolInfo, s: Schema) -> ParamInfo:
    own = info.resource
    lname = "_".join(words(name))
    if lname in PAGE_NAMES and schema_type(schema) in ("integer", "string", ""):
        return ParamInfo(name, "page", req, schema)
    if lname in SORT_NAMES:
        return ParamInfo(name, "sort", req, schema)
    if is_id_name(name):
        ent = id_entity(name)
        table = match_table(ent, s.tables) if ent else own
        if table is not None and table == own and info.kind in ("get", "update", "delete", "action"):
            return ParamInfo(name, "key", req, schema, resource=table, field=s.key(table))
        if table is not None:
            col = name if own and name in s.refs.get(own, {}) else None
            return ParamInfo(name, "ref", req, schema, resource=table, field=col or (name if own else None))
        return ParamInfo(name, "value", req, schema, resource=own, field=None)
    if lname in SEARCH_NAMES:
        return ParamInfo(name, "search", req, schema, resource=own)
    role = "filter" if info.kind in ("get", "list") else "value"
    return ParamInfo(name, role, req, schema, resource=own, field=name)


def _guess_info(spec: ToolSpec, s: Schema) -> ToolInfo:
    verb, noun, table = tool_parts(spec.name, s.tables)
    if spec.mutates:
        if verb in CREATE_VERBS:
            kind = "create"
        elif verb in UPDATE_VERBS:
            kind = "update"
        elif verb in REMOVE_VERBS:
            kind = "delete"
        else:
            kind = "action"
    elif verb in LIST_VERBS or (spec.returns or {}).get("type") == "array":
        kind = "list"
    elif verb in READ_VERBS or not verb:
        kind = "get"
    else:
        kind = "other"
    info = ToolInfo(name=spec.name, spec=spec, kind=kind, resource=table, noun=singular(noun) if noun else spec.name,
                    verb=_verb_phrase(spec.name, s.tables))
    props = (spec.parameters or {}).get("properties") or {}
    required = set((spec.parameters or {}).get("required") or [])
    for name, schema in props.items():
        info.params[name] = _guess_param(name, schema if isinstance(schema, dict) else {}, name in required, info, s)
    return _with_access(info)


def tool_infos(env: EnvSpec, schema: Schema) -> dict[str, ToolInfo]:
    """A :class:`ToolInfo` for every tool of ``env`` (from its model when it has one)."""
    model = env.behaviour.model if isinstance(env.behaviour, ModelBehaviour) else None
    ops = (model or {}).get("operations") or {}
    out: dict[str, ToolInfo] = {}
    for spec in env.tools:
        op = ops.get(spec.name)
        out[spec.name] = _model_info(spec, op, schema) if isinstance(op, dict) and op.get("resource") else _guess_info(spec, schema)
    return out


def output_fields(spec: ToolSpec) -> dict[str, dict[str, Any]]:
    """Field name -> JSON Schema of the rows a tool returns (from its ``returns`` schema)."""
    sch = spec.returns or {}
    seen = 0
    while isinstance(sch, dict) and seen < 4:
        seen += 1
        t = schema_type(sch)
        if t == "array":
            sch = sch.get("items") or {}
            continue
        props = sch.get("properties") or {}
        if t == "object" and props:
            lists = [v for v in props.values() if isinstance(v, dict) and schema_type(v) == "array" and isinstance(v.get("items"), dict)
                     and (v["items"].get("properties"))]
            if lists and not any(is_id_name(k) for k in props):
                sch = lists[0]
                continue
            return {k: v for k, v in props.items() if isinstance(v, dict)}
        break
    return {}
