"""What each tool does to the state, read from the environment's resource model or guessed from
names.

:func:`classify_tools` is the one classification the verifier and the samplers share.

A model environment (its typed :class:`~envkernel_runtime.model.ResourceModel`, what the
``openapi`` synthesizer makes) says it
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

import msgspec

from envkernel_runtime.model import Operation, ResourceModel, model_of
from envkernel_schemas import EnvSpec, ToolSpec

from .argsgen import SEARCH_NAMES, schema_type
from .naming import (
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

State = dict[str, list[dict[str, Any]]]

PAGE_NAMES = frozenset(
    {
        "limit",
        "offset",
        "page",
        "page_size",
        "per_page",
        "cursor",
        "page_token",
        "next_cursor",
        "size",
        "max_results",
        "skip",
        "top",
    }
)
"""Paging parameters (a sampler leaves them out)."""
SORT_NAMES = frozenset(
    {"sort", "sort_by", "order", "order_by", "direction", "sort_order", "ordering"}
)
"""Sorting parameters (a sampler leaves them out)."""
LIST_VERBS = frozenset({"list", "search", "query", "browse", "filter"})
"""Read verbs of tools that return lists."""
REMOVE_VERBS = frozenset({"delete", "remove", "destroy", "drop", "purge", "revoke"})
"""Verbs of tools that remove a row (other end-of-life verbs, like ``cancel``, are actions)."""


@dataclass
class ParamInfo:
    """One parameter of a tool and what it stands for."""

    name: str
    """The parameter's name."""
    role: str
    """``key``, ``ref``, ``filter``, ``search``, ``page``, ``sort`` or ``value``."""
    required: bool = False
    """The tool's schema requires it."""
    schema: dict[str, Any] = field(default_factory=dict)
    """Its JSON Schema."""
    resource: str | None = None
    """For ``key``/``ref``: the table whose id it holds. For others: the table of ``field``."""
    field: str | None = None
    """The column it filters on or writes (when known)."""
    op: str = "eq"
    """A filter's comparison: eq, in, contains, gte, lte, gt, lt."""
    search_fields: tuple[str, ...] = ()
    """For ``search``: the columns it searches (empty: unknown)."""
    parent: bool = False
    """For ``ref``: the row the tool acts on lives under it (a path parent:
    ``/events/{id}/attendees``)."""

    @property
    def is_id(self) -> bool:
        """True for a parameter that holds a row's id (a person would not know it)."""
        return self.role in ("key", "ref")


@dataclass
class ToolInfo:
    """One tool: its kind, resource, parameters, and the tables it reads and writes."""

    name: str
    """The tool's name."""
    spec: ToolSpec
    """The tool."""
    kind: str
    """``get``, ``list``, ``create``, ``update``, ``delete``, ``action`` or ``other``."""
    resource: str | None
    """The table it acts on (None when unknown)."""
    noun: str
    """The entity noun (``order``): the resource's nouns in a model, else from the tool name."""
    verb: str
    """The verb phrase a person would use (``cancel``, ``check in``)."""
    params: dict[str, ParamInfo] = field(default_factory=dict)
    """Parameter name -> what it stands for."""
    transition: dict[str, Any] | None = None
    """An action's state change (``field``, ``to``, ``from``, ``stamp``), from the model."""
    reads: set[str] = field(default_factory=set)
    """Tables it reads."""
    writes: set[str] = field(default_factory=set)
    """Tables it may write."""
    from_model: bool = False
    """True when the facts come from the resource model (not guessed from names)."""

    @property
    def key_param(self) -> str | None:
        """The parameter holding the key of the row the tool acts on, or None."""
        return next((p.name for p in self.params.values() if p.role == "key"), None)

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
    """Every table name."""
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
    model: ResourceModel | None = None
    """The environment's typed resource model (None for a code environment)."""

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


def _model_facts(s: Schema, model: ResourceModel) -> None:
    """Fill ``s`` with what the resource model declares of each table: its key, references,
    unique, enum, format, generated and default columns."""
    s.model = model
    for t, res in model.resources.items():
        s.keys[t] = res.key or "id"
        fields = res.fields
        s.refs[t] = {c: f.ref for c, f in fields.items() if f.ref}
        s.unique[t] = set(res.unique)
        s.enums[t] = {c: list(f.enum) for c, f in fields.items() if f.enum}
        s.formats[t] = {c: f.format for c, f in fields.items() if f.format}
        s.generated[t] = {c for c, f in fields.items() if f.generated or f.read_only}
        s.defaults[t] = {c: f.default for c, f in fields.items() if f.default is not None}
        if t not in s.tables:
            s.tables.append(t)


def _seed_facts(s: Schema, t: str, rows: list[dict[str, Any]], generated: list[str]) -> None:
    """Fill in what the model did not declare of table ``t`` from its seed rows and column names:
    the key, references by name, columns unique over the rows, the generated columns."""
    first = rows[0] if rows else {}
    if t not in s.keys:
        s.keys[t] = id_column(t, rows) or "id"
    if t not in s.refs:
        s.refs[t] = {c: ref for c in first if (ref := s.ref(t, c)) is not None}
    if t not in s.unique:
        s.unique[t] = {
            c for c in first if c in KEY_LIKE and len({str(r.get(c)) for r in rows}) == len(rows)
        }
    s.generated.setdefault(t, set(generated))


def schema_of(env: EnvSpec, seed: State) -> Schema:
    """The table facts of ``env``: from its resource model, else from the seed state and names."""
    s = Schema(tables=list(seed))
    model = model_of(env)
    if model is not None:
        _model_facts(s, model)
    for t, rows in seed.items():
        _seed_facts(s, t, rows, env.generated.get(t, []))
    return s


def _verb_phrase(tool_name: str, tables: list[str]) -> str:
    """The verb a person would use: the tool name's first word and the words after it up to the
    first that names a table (``check_in_appointment`` -> ``check in``; ``share_file`` ->
    ``share``)."""
    ws = words(tool_name)
    if not ws:
        return tool_name
    nouns = {singular(w) for t in tables for w in words(t)} | {
        singular("_".join(words(t))) for t in tables
    }
    out = [ws[0]]
    for w in ws[1:]:
        if singular(w) in nouns or w in nouns:
            break
        out.append(w)
    if len(out) > 2:
        out = out[:1]
    return " ".join(out)


class _OpParams:
    """How a model operation's parameters are read: each rule below names one kind of parameter
    (its key, a parent's id, a body field, a filter, the search text, paging, sorting), tried in
    that order; a parameter no rule claims is guessed from its name and schema."""

    def __init__(self, op: Operation, s: Schema) -> None:
        self.op, self.s, self.res = op, s, op.resource
        self.parents = {p.arg: p for p in op.parents}
        page, sort = op.page, op.sort
        self.page_args = (
            {a for a in (page.limit, page.offset, page.page, page.cursor) if a}
            if page is not None
            else set()
        )
        self.sort_args = {sort.arg, sort.order_arg} - {None} if sort is not None else set()

    def _ref_of(self, col: str | None) -> str | None:
        return self.s.refs.get(self.res or "", {}).get(col) if col else None

    def _key(self, name: str, req: bool, schema: dict[str, Any]) -> ParamInfo | None:
        if name != self.op.key:
            return None
        return ParamInfo(name, "key", req, schema, resource=self.res, field=self.s.key(self.res))

    def _parent(self, name: str, req: bool, schema: dict[str, Any]) -> ParamInfo | None:
        par = self.parents.get(name)
        if par is None:
            return None
        return ParamInfo(
            name, "ref", req, schema, resource=par.resource, field=par.field, parent=True
        )

    def _body(self, name: str, req: bool, schema: dict[str, Any]) -> ParamInfo | None:
        if name not in self.op.body:
            return None
        col = self.op.body[name]
        ref = self._ref_of(col)
        kind = "ref" if ref else "value"
        return ParamInfo(name, kind, req, schema, resource=ref or self.res, field=col)

    def _filter(self, name: str, req: bool, schema: dict[str, Any]) -> ParamInfo | None:
        flt = self.op.filters.get(name)
        if flt is None:
            return None
        ref = self._ref_of(flt.field)
        if ref and flt.op == "eq":
            return ParamInfo(name, "ref", req, schema, resource=ref, field=flt.field)
        return ParamInfo(name, "filter", req, schema, resource=self.res, field=flt.field, op=flt.op)

    def _search(self, name: str, req: bool, schema: dict[str, Any]) -> ParamInfo | None:
        search = self.op.search
        if search is None or name != search.arg:
            return None
        fields = tuple(search.fields)
        return ParamInfo(name, "search", req, schema, resource=self.res, search_fields=fields)

    def _listing(self, name: str, req: bool, schema: dict[str, Any]) -> ParamInfo | None:
        if name in self.page_args:
            return ParamInfo(name, "page", req, schema)
        return ParamInfo(name, "sort", req, schema) if name in self.sort_args else None

    def param(self, name: str, req: bool, schema: dict[str, Any], info: ToolInfo) -> ParamInfo:
        """The parameter ``name`` of the operation's tool."""
        for rule in (self._key, self._parent, self._body, self._filter, self._search):
            if (p := rule(name, req, schema)) is not None:
                return p
        listing = self._listing(name, req, schema)
        return listing if listing is not None else _guess_param(name, schema, req, info, self.s)


def _model_info(spec: ToolSpec, op: Operation, model: ResourceModel, s: Schema) -> ToolInfo:
    params = (spec.parameters or {}).get("properties") or {}
    required = set((spec.parameters or {}).get("required") or [])
    info = ToolInfo(
        name=spec.name,
        spec=spec,
        kind={"patch": "update"}.get(op.kind, op.kind or "other"),
        resource=op.resource,
        noun=model.nouns(op.resource).singular,
        verb=_verb_phrase(spec.name, s.tables),
        transition=msgspec.to_builtins(op.transition) if op.transition is not None else None,
        from_model=True,
    )
    reader = _OpParams(op, s)
    for name, schema in params.items():
        info.params[name] = reader.param(
            name, name in required, schema if isinstance(schema, dict) else {}, info
        )
    return _with_access(info)


def _with_access(info: ToolInfo) -> ToolInfo:
    """``info`` with the tables it reads (its own, and those its ``ref`` parameters point to) and
    writes."""
    table = info.resource
    if table:
        info.reads.add(table)
        if info.spec.mutates:
            info.writes.add(table)
    for p in info.params.values():
        if p.role == "ref" and p.resource:
            info.reads.add(p.resource)
    return info


def _guess_param(
    name: str, schema: dict[str, Any], req: bool, info: ToolInfo, s: Schema
) -> ParamInfo:
    own = info.resource
    lname = "_".join(words(name))
    if lname in PAGE_NAMES and schema_type(schema) in ("integer", "string", ""):
        return ParamInfo(name, "page", req, schema)
    if lname in SORT_NAMES:
        return ParamInfo(name, "sort", req, schema)
    if is_id_name(name):
        ent = id_entity(name)
        table = match_table(ent, s.tables) if ent else own
        if (
            table is not None
            and table == own
            and info.kind in ("get", "update", "delete", "action")
        ):
            return ParamInfo(name, "key", req, schema, resource=table, field=s.key(table))
        if table is not None:
            col = name if own and name in s.refs.get(own, {}) else None
            return ParamInfo(
                name, "ref", req, schema, resource=table, field=col or (name if own else None)
            )
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
    info = ToolInfo(
        name=spec.name,
        spec=spec,
        kind=kind,
        resource=table,
        noun=singular(noun) if noun else spec.name,
        verb=_verb_phrase(spec.name, s.tables),
    )
    props = (spec.parameters or {}).get("properties") or {}
    required = set((spec.parameters or {}).get("required") or [])
    for name, schema in props.items():
        info.params[name] = _guess_param(
            name, schema if isinstance(schema, dict) else {}, name in required, info, s
        )
    return _with_access(info)


def tool_infos(env: EnvSpec, schema: Schema) -> dict[str, ToolInfo]:
    """A :class:`ToolInfo` for every tool of ``env`` (from its model when it has one)."""
    model = schema.model if schema.model is not None else model_of(env)
    out: dict[str, ToolInfo] = {}
    for spec in env.tools:
        op = model.operations.get(spec.name) if model is not None else None
        out[spec.name] = (
            _model_info(spec, op, model, schema)
            if op is not None and model is not None
            else _guess_info(spec, schema)
        )
    return out


def classify_tools(env: EnvSpec, seed: State) -> dict[str, ToolInfo]:
    """What every tool of ``env`` does (kind, resource, each parameter's role, tables read and
    written): from its typed resource model when it has one, else from the naming vocabulary and
    the seed state ``seed`` (table -> rows) for a code environment."""
    return tool_infos(env, schema_of(env, seed))


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
            lists = [
                v
                for v in props.values()
                if isinstance(v, dict)
                and schema_type(v) == "array"
                and isinstance(v.get("items"), dict)
                and (v["items"].get("properties"))
            ]
            if lists and not any(is_id_name(k) for k in props):
                sch = lists[0]
                continue
            return {k: v for k, v in props.items() if isinstance(v, dict)}
        break
    return {}
