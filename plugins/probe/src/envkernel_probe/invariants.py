"""State invariants: does each resource's CRUD behave like CRUD, judged against the state itself?

The sandbox's state dump is the ground truth (the reward checks final states), so every tool's
answer is compared with it:

- **get** finds existing rows with their stored values, and says not found for a missing key;
- **create** adds exactly one row holding what it was given, which get then returns and list
  includes;
- **list** returns exactly the stored rows in its scope (every page of them, pages that do not
  overlap, a right total), honours its filters and its sort order;
- **update/patch** store the given values on that row only, leave the fields they were not
  given alone, and get reflects them;
- **delete** removes that row only, after which get says not found and list leaves it out;
- **actions** (``cancel_order``...) change the row (to the declared status, for model envs);
- a **failed call** (an unknown key, missing arguments) leaves the state unchanged.

Which tool is create/get/list/... of which table comes from the resource model for model
environments (``model["operations"]``) and from name heuristics for code environments
(``create_*``, ``get_*``, ``list_*``, ``update_*``, ``delete_*``/``cancel_*``). Each failure is
blamed on one tool, with the reason.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

import msgspec

from envkernel_kit.answers import envelope_key
from envkernel_kit.argsgen import (
    FRESH_NAMES,
    NO_VALUE,
    ArgumentBuilder,
    coerce,
    fresh_values,
    schema_type,
)
from envkernel_kit.naming import State, id_column, words
from envkernel_kit.tools import classify_tools
from envkernel_runtime.model import Operation, Output, Page, ResourceModel, Sort, model_of
from envkernel_schemas import EnvSpec, ToolSpec

LIMIT_ARGS = ("limit", "page_size", "per_page", "size", "max_results")
OFFSET_ARGS = ("offset", "skip")
PAGE_ARGS = ("page", "page_number")
CURSOR_ARGS = ("cursor", "page_token", "next_token", "starting_after")
NEXT_KEYS = ("next_cursor", "nextCursor", "next", "next_page_token", "nextPageToken", "cursor")
TOTAL_KEYS = ("total", "total_count", "totalCount", "count", "total_items")
GET_VERBS = frozenset({"get", "fetch", "read", "show"})
"""Verbs of code-environment tools the probe checks as a get (one row by key)."""
DELETE_ONLY = frozenset({"delete", "remove", "destroy"})
ACTION_VERBS = frozenset(
    {
        "cancel",
        "close",
        "archive",
        "void",
        "revoke",
        "deactivate",
        "ship",
        "refund",
        "approve",
        "reject",
        "pay",
        "confirm",
        "complete",
        "reopen",
        "activate",
        "freeze",
        "unfreeze",
        "check",
        "mark",
        "pin",
        "star",
        "publish",
    }
)
MISSING = "zz_missing_0000"


@dataclass
class ListMeta:
    """How to call a list tool."""

    tool: str
    scope: dict[str, str] = field(default_factory=dict)
    """Argument -> column that must be given (path parents, required filters)."""
    filters: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Optional argument -> (column, op)."""
    limit: str | None = None
    offset: str | None = None
    page: str | None = None
    cursor: str | None = None
    first_page: int = 1
    max_limit: int = 100
    items: str | None = None
    total: str | None = None
    next_cursor: str | None = None
    sort: str | None = None
    sort_fields: list[str] = field(default_factory=list)
    order_arg: str | None = None


@dataclass
class Crud:
    """The tools of one table, by role."""

    table: str
    key: str
    create: str | None = None
    get: str | None = None
    lists: list[ListMeta] = field(default_factory=list)
    updates: list[str] = field(default_factory=list)
    delete: str | None = None
    actions: list[str] = field(default_factory=list)
    key_arg: dict[str, str] = field(default_factory=dict)
    parents: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """Tool -> (argument, column) pairs that scope it to a parent row."""
    body: dict[str, dict[str, str]] = field(default_factory=dict)
    """Tool -> argument -> column written."""
    transitions: dict[str, dict[str, Any]] = field(default_factory=dict)
    generated: set[str] = field(default_factory=set)
    model: bool = False


# --------------------------------------------------------------------------- plans


def plan(env: EnvSpec, state: State) -> list[Crud]:
    """The CRUD plan of every table: from the model for model envs, else from names."""
    model = model_of(env)
    if model is not None:
        return _model_plan(env, model)
    return _name_plan(env, state)


def _model_crud(env: EnvSpec, model: ResourceModel, table: str) -> Crud:
    """A model table's empty plan: its key and generated fields."""
    res = model.resources.get(table)
    gen = {col for col, f in (res.fields if res else {}).items() if f.generated}
    gen |= set(env.generated.get(table, []))
    return Crud(table=table, key=res.key if res else "id", generated=gen, model=True)


def _model_list(name: str, op: Operation) -> ListMeta | None:
    """A model list operation's paging, scope, filters and sort; None when it requires an
    argument with no one right value (a search text, a range bound like Adyen's createdSince):
    the probe's own call checks such a list, the list invariants do not."""
    page = op.page or Page()
    out_meta = op.output or Output(shape="list")
    keys = out_meta.keys
    sort = op.sort or Sort()
    params = op.parameters.get("properties") or {}
    lim = params.get(page.limit or "", {})
    lm = ListMeta(
        tool=name,
        scope={p.arg: p.field for p in op.parents},
        filters={a: (f.field, f.op) for a, f in op.filters.items()},
        limit=page.limit,
        offset=page.offset,
        page=page.page,
        cursor=page.cursor,
        first_page=page.first,
        max_limit=int(lim.get("maximum", 100))
        if isinstance(lim.get("maximum"), (int, float))
        else 100,
        items=keys.get("items") if out_meta.shape == "envelope" else None,
        total=keys.get("total"),
        next_cursor=keys.get("next_cursor"),
        sort=sort.arg,
        sort_fields=list(sort.fields),
        order_arg=sort.order_arg,
    )
    required = op.parameters.get("required") or []
    for a in required:
        if a not in lm.scope and a in lm.filters and lm.filters[a][1] == "eq":
            lm.scope[a] = lm.filters.pop(a)[0]
    return lm if all(a in lm.scope for a in required) else None


def _place_model_op(c: Crud, name: str, op: Operation) -> None:
    """Where a model operation goes in its table's plan, by its kind."""
    kind = op.kind
    if kind == "create" and c.create is None:
        c.create = name
    elif kind == "get" and c.get is None:
        c.get = name
    elif kind == "list":
        lm = _model_list(name, op)
        if lm is not None:
            c.lists.append(lm)
    elif kind in ("update", "patch"):
        c.updates.append(name)
    elif kind == "delete" and c.delete is None:
        c.delete = name
    elif kind == "action":
        c.actions.append(name)
        c.transitions[name] = (
            msgspec.to_builtins(op.transition) if op.transition is not None else {}
        )


def _model_plan(env: EnvSpec, model: ResourceModel) -> list[Crud]:
    tools = {t.name for t in env.tools}
    out: dict[str, Crud] = {}
    for name, op in model.operations.items():
        if name not in tools:
            continue
        table = op.resource
        c = out.get(table)
        if c is None:
            c = out[table] = _model_crud(env, model, table)
        if op.key:
            c.key_arg[name] = op.key
        c.parents[name] = [(p.arg, p.field) for p in op.parents]
        c.body[name] = dict(op.body)
        _place_model_op(c, name, op)
    return list(out.values())


@dataclass
class _Tool:
    """One tool of a code environment as the plan sees it: its kind, verb, key argument, and the
    arguments that write its table's columns."""

    name: str
    kind: str
    verb: str
    key_arg: str | None
    props: dict[str, Any]
    required: list[str]
    cols: set[str]
    body: dict[str, str]
    rest: list[str]


def _list_meta(tool: _Tool) -> ListMeta | None:
    """A list tool's paging, scope and filter arguments; None when it requires one the probe
    cannot fill."""
    lm = ListMeta(tool=tool.name)
    for a, s in tool.props.items():
        if a in LIMIT_ARGS:
            lm.limit = a
            if isinstance(s.get("maximum"), (int, float)):
                lm.max_limit = int(s["maximum"])
        elif a in OFFSET_ARGS:
            lm.offset = a
        elif a in PAGE_ARGS:
            lm.page = a
        elif a in CURSOR_ARGS:
            lm.cursor = a
        elif a in tool.cols:
            if a in tool.required:
                lm.scope[a] = a
            else:
                lm.filters[a] = (a, "eq")
        elif a in tool.required:
            return None
    return lm


def _place_create(c: Crud, t: _Tool) -> None:
    if t.key_arg is None:
        c.create = c.create or t.name
        c.body[t.name] = t.body


def _place_get(c: Crud, t: _Tool) -> None:
    if t.verb in GET_VERBS and t.key_arg and not t.rest:
        c.get = c.get or t.name
        c.key_arg[t.name] = t.key_arg


def _place_list(c: Crud, t: _Tool) -> None:
    if t.verb == "list" and t.key_arg is None:
        lm = _list_meta(t)
        if lm is not None:
            c.lists.append(lm)


def _place_update(c: Crud, t: _Tool) -> None:
    if t.key_arg:
        c.updates.append(t.name)
        c.key_arg[t.name] = t.key_arg
        c.body[t.name] = t.body


def _place_delete(c: Crud, t: _Tool) -> None:
    if t.verb in DELETE_ONLY and t.key_arg and not t.body:
        c.delete = c.delete or t.name
        c.key_arg[t.name] = t.key_arg


def _place_action(c: Crud, t: _Tool) -> None:
    if t.verb in ACTION_VERBS and t.key_arg:
        c.actions.append(t.name)
        c.key_arg[t.name] = t.key_arg
        c.body[t.name] = t.body


_PLACE = {
    "create": _place_create,
    "get": _place_get,
    "list": _place_list,
    "update": _place_update,
    "delete": _place_delete,
    "action": _place_action,
}
"""Tool kind -> where a tool of it goes in its table's plan (if the probe can check it
unambiguously)."""


def _name_plan(env: EnvSpec, state: State) -> list[Crud]:
    """The plan of a code environment: tool kinds from the kit's :func:`classify_tools` (the same
    classification the samplers use), kept only where the probe can check them unambiguously."""
    infos = classify_tools(env, state)
    out: dict[str, Crud] = {}
    for tool in env.tools:
        info = infos[tool.name]
        table = info.resource
        if table is None or not state.get(table):
            continue
        key = id_column(table, state[table])
        if key is None:
            continue
        c = out.setdefault(
            table, Crud(table=table, key=key, generated=set(env.generated.get(table, [])))
        )
        props: dict[str, Any] = (tool.parameters or {}).get("properties") or {}
        cols = set(state[table][0])
        key_arg = info.key_param
        view = _Tool(
            name=tool.name,
            kind=info.kind,
            verb=info.verb.split(" ")[0] if info.verb else "",
            key_arg=key_arg,
            props=props,
            required=list((tool.parameters or {}).get("required") or []),
            cols=cols,
            body={a: a for a in props if a in cols and a != key and a != key_arg},
            rest=words(tool.name)[2:],
        )
        place = _PLACE.get(view.kind)
        if place is not None:
            place(c, view)
    return list(out.values())


# --------------------------------------------------------------------------- helpers


def norm(v: Any) -> Any:
    """A value as compared: JSON text decoded, booleans and whole floats as ints."""
    if isinstance(v, str) and v[:1] in ("[", "{"):
        try:
            v = json.loads(v)
        except ValueError:
            return v
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, dict):
        return {k: norm(x) for k, x in sorted(v.items())}
    return v


def same(a: Any, b: Any) -> bool:
    return json.dumps(norm(a), sort_keys=True, default=str) == json.dumps(
        norm(b), sort_keys=True, default=str
    )


def show(v: Any) -> str:
    t = json.dumps(v, default=str, ensure_ascii=False)
    return t if len(t) <= 60 else t[:57] + "..."


def items_of(value: Any, meta: ListMeta | None = None) -> list[Any] | None:
    """The rows a list tool returned (a list, or the array in an envelope: the member the model
    names, else the one ``envkernel_kit.answers.envelope_key`` finds, as the gate's mutants do)."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        if meta is not None and meta.items and isinstance(value.get(meta.items), list):
            return value[meta.items]
        key = envelope_key(value)
        if key is not None:
            return value[key]  # type: ignore[no-any-return]
    return None


class Blame:
    """Failures found, each blamed on a tool."""

    def __init__(self) -> None:
        self.by_tool: dict[str, list[str]] = {}
        self.checks = 0

    def add(self, tool: str, reason: str) -> None:
        self.by_tool.setdefault(tool, [])
        if reason not in self.by_tool[tool]:
            self.by_tool[tool].append(reason)


def _filter_values(rows: list[dict[str, Any]], col: str, schema: dict[str, Any]) -> list[Any]:
    """The plain values a column holds in ``rows`` (as booleans for a boolean filter)."""
    values = [
        r.get(col)
        for r in rows
        if r.get(col) is not None and not isinstance(r.get(col), (list, dict))
    ]
    if schema.get("type") == "boolean":
        values = [bool(v) for v in values]
    return [v for v in values if isinstance(v, (str, int, float, bool))]


class _PageWalk:
    """Where a list's walk over its pages goes next: the cursor its answer gives back, the
    next offset, or the next page number."""

    def __init__(self, lm: ListMeta, size: int) -> None:
        self.lm, self.size = lm, size
        self.offset = 0
        self.page_no = lm.first_page

    def advance(self, args: dict[str, Any], value: Any, items: list[Any]) -> bool:
        """Set ``args`` for the next page; False when this page was the last."""
        lm = self.lm
        if lm.cursor:
            nxt = None
            if isinstance(value, dict):
                nxt = (
                    value.get(lm.next_cursor)
                    if lm.next_cursor
                    else next((value[k] for k in NEXT_KEYS if value.get(k)), None)
                )
            if not nxt:
                return False
            args[lm.cursor] = nxt
        elif lm.offset:
            if lm.limit and len(items) < self.size:
                return False
            self.offset += len(items)
            args[lm.offset] = self.offset
        elif lm.page:
            if len(items) < (self.size if lm.limit else 1):
                return False
            self.page_no += 1
            args[lm.page] = self.page_no
        else:
            return False
        return True


class Checker:
    """Runs the invariants of one environment in one sandbox."""

    def __init__(
        self,
        sb: Any,
        env: EnvSpec,
        seed_handle: str,
        seed_state: State,
        rng: random.Random,
        blame: Blame,
        schemas: Any = None,
    ) -> None:
        self.sb = sb
        self.schemas = schemas
        self.env = env
        self.seed = seed_handle
        self.seed_state = seed_state
        self.rng = rng
        self.blame = blame
        self.tools: dict[str, ToolSpec] = {t.name: t for t in env.tools}
        self.builder = ArgumentBuilder(seed_state)

    async def call(self, tool: str, args: dict[str, Any]) -> Any:
        self.blame.checks += 1
        result = await self.sb.call(tool, args)
        if self.schemas is not None and getattr(result, "ok", False):
            problem = self.schemas.problem(tool, result.value)
            if problem:
                self.blame.add(tool, f"{problem} (arguments {args})")
        return result

    async def reset(self) -> None:
        await self.sb.restore(self.seed)

    # ----------------------------------------------------------------- rows

    def rows(self, state: State, c: Crud) -> dict[str, dict[str, Any]]:
        return {json.dumps(norm(r.get(c.key)), default=str): r for r in state.get(c.table, [])}

    @staticmethod
    def k(v: Any) -> str:
        return json.dumps(norm(v), default=str)

    def scope_args(self, c: Crud, tool: str, row: dict[str, Any]) -> dict[str, Any] | None:
        args = {}
        for arg, col in c.parents.get(tool, []):
            if row.get(col) is None:
                return None
            args[arg] = row[col]
        return args

    def missing_key(self, c: Crud) -> Any:
        rows = self.seed_state.get(c.table) or []
        if rows and isinstance(rows[0].get(c.key), int):
            return 987654
        return MISSING

    def compare(self, tool: str, c: Crud, out: Any, stored: dict[str, Any], what: str) -> bool:
        if not isinstance(out, dict):
            self.blame.add(tool, f"{what}: answered {show(out)}, not an object")
            return False
        for col, v in stored.items():
            if col in out and not same(out[col], v):
                self.blame.add(
                    tool,
                    f"{what}: answered {col}={show(out[col])} but the stored row has {show(v)}",
                )
                return False
        return True

    # ----------------------------------------------------------------- get

    async def check_get(self, c: Crud) -> None:
        if not c.get:
            return
        await self.reset()
        rows = self.seed_state.get(c.table) or []
        for row in rows[:3]:
            args = self.scope_args(c, c.get, row)
            if args is None:
                continue
            args[c.key_arg[c.get]] = row[c.key]
            res = await self.call(c.get, args)
            if not res.ok:
                self.blame.add(
                    c.get,
                    f"says {res.error.code if res.error else 'error'} for {c.key} "
                    f"{show(row[c.key])}, which exists",
                )
                return
            if not self.compare(c.get, c, res.value, row, f"for {c.key} {show(row[c.key])}"):
                return
        args = self.scope_args(c, c.get, rows[0]) if rows else {}
        if args is None:
            return
        args[c.key_arg[c.get]] = self.missing_key(c)
        res = await self.call(c.get, args)
        if res.ok:
            self.blame.add(
                c.get,
                f"returned {show(res.value)} for {c.key} {show(args[c.key_arg[c.get]])}, "
                "which does not exist (expected not found)",
            )

    # ----------------------------------------------------------------- list

    async def list_all(
        self, lm: ListMeta, base: dict[str, Any], page_size: int | None = None
    ) -> tuple[list[Any] | None, str, list[list[Any]], Any]:
        """Every row a list tool returns for ``base`` (walking its pages): (rows, problem, pages,
        first answer)."""
        size = page_size or lm.max_limit
        args = dict(base)
        paged = bool(lm.limit or lm.page or lm.cursor or lm.offset)
        if lm.limit:
            args[lm.limit] = size
        pages: list[list[Any]] = []
        first = None
        walk = _PageWalk(lm, size)
        for _ in range(60):
            res = await self.call(lm.tool, args)
            if not res.ok:
                return (
                    None,
                    f"failed with {res.error.code if res.error else '?'}: "
                    f"{res.error.message if res.error else ''} for {show(args)}",
                    pages,
                    first,
                )
            first = res.value if first is None else first
            items = items_of(res.value, lm)
            if items is None:
                return (
                    None,
                    f"answered {show(res.value)}, which holds no list of rows",
                    pages,
                    first,
                )
            pages.append(items)
            if not paged or not items or not walk.advance(args, res.value, items):
                break
        return [r for p in pages for r in p], "", pages, first

    def scoped(
        self, state: State, c: Crud, lm: ListMeta, base: dict[str, Any]
    ) -> list[dict[str, Any]]:
        out = []
        for r in state.get(c.table, []):
            if all(
                same(r.get(col), base[arg])
                or (
                    isinstance(r.get(col), str)
                    and isinstance(base[arg], str)
                    and r[col].lower() == base[arg].lower()
                )
                for arg, col in lm.scope.items()
                if arg in base
            ):
                out.append(r)
        return out

    def base_for(self, c: Crud, lm: ListMeta, state: State) -> dict[str, Any] | None:
        """Scope arguments (path parents, required filters) of the fullest scope."""
        rows = state.get(c.table) or []
        if not lm.scope:
            return {}
        counts: dict[str, tuple[int, dict[str, Any]]] = {}
        for r in rows:
            if all(r.get(col) is not None for col in lm.scope.values()):
                base = {arg: r[col] for arg, col in lm.scope.items()}
                key = self.k(base)
                counts[key] = (counts.get(key, (0, base))[0] + 1, base)
        if not counts:
            return None
        return max(counts.values(), key=lambda x: x[0])[1]

    async def check_lists(self, c: Crud) -> None:
        for lm in c.lists:
            await self.reset()
            base = self.base_for(c, lm, self.seed_state)
            if base is None:
                continue
            await self.check_list_against(c, lm, self.seed_state, base, "")
            await self.check_pages(c, lm, base)
            await self.check_filters(c, lm, base)
            await self.check_sort(c, lm, base)

    async def check_list_against(
        self, c: Crud, lm: ListMeta, state: State, base: dict[str, Any], when: str
    ) -> None:
        got, problem, _pages, first = await self.list_all(lm, base)
        if got is None:
            self.blame.add(lm.tool, f"{problem}{when}")
            return
        want = [self.k(r.get(c.key)) for r in self.scoped(state, c, lm, base)]
        keys = [self.k(r.get(c.key)) if isinstance(r, dict) else None for r in got]
        missing = [k for k in want if k not in keys]
        extra = [k for k in keys if k not in want]
        if missing:
            self.blame.add(
                lm.tool,
                f"omits stored rows {', '.join(missing[:3])}{when} (listed {len(keys)} of "
                f"{len(want)})",
            )
        elif extra:
            self.blame.add(
                lm.tool,
                "lists rows that are not stored or not in its scope: "
                f"{', '.join(map(str, extra[:3]))}{when}",
            )
        elif len(keys) != len(set(keys)):
            self.blame.add(lm.tool, f"lists a row twice{when}")
        if (
            lm.total
            and isinstance(first, dict)
            and isinstance(first.get(lm.total), int)
            and first[lm.total] != len(want)
        ):
            self.blame.add(
                lm.tool, f"says total {first[lm.total]} but {len(want)} rows match{when}"
            )
        stored = self.rows(state, c)
        for r in got[:5]:
            if isinstance(r, dict) and self.k(r.get(c.key)) in stored:
                if not self.compare(
                    lm.tool, c, r, stored[self.k(r.get(c.key))], f"row {self.k(r.get(c.key))}{when}"
                ):
                    break

    async def check_pages(self, c: Crud, lm: ListMeta, base: dict[str, Any]) -> None:
        if not (lm.limit and (lm.offset or lm.page or lm.cursor)):
            return
        full, problem, _p, _f = await self.list_all(lm, base)
        if full is None or len(full) < 2:
            return
        size = 2 if len(full) >= 3 else 1
        paged, problem, pages, _f = await self.list_all(lm, base, page_size=size)
        if paged is None:
            self.blame.add(lm.tool, f"paging {size} at a time: {problem}")
            return
        if any(len(p) > size for p in pages):
            self.blame.add(
                lm.tool, f"returned {max(len(p) for p in pages)} rows when asked for at most {size}"
            )
            return
        a = [self.k(r.get(c.key)) for r in full if isinstance(r, dict)]
        b = [self.k(r.get(c.key)) for r in paged if isinstance(r, dict)]
        if a != b:
            dup = len(b) != len(set(b))
            self.blame.add(
                lm.tool,
                "pages overlap (a row comes on two pages)"
                if dup
                else f"paging {size} at a time gives {len(b)} rows in another order than one page "
                f"({len(a)})",
            )

    async def check_filters(self, c: Crud, lm: ListMeta, base: dict[str, Any]) -> None:
        """Each equality filter: a value no row in scope has gives nothing; the rarest value
        stored gives exactly the rows that hold it."""
        scope_rows = self.scoped(self.seed_state, c, lm, base)
        for arg, (col, op) in lm.filters.items():
            if op != "eq":
                continue
            schema = ((self.tools[lm.tool].parameters or {}).get("properties") or {}).get(arg) or {}
            if not await self._absent_filter(lm, base, arg, col, schema, scope_rows):
                continue
            values = _filter_values(scope_rows, col, schema)
            if values:
                await self._rarest_filter(c, lm, base, arg, col, values, scope_rows)

    async def _absent_filter(
        self,
        lm: ListMeta,
        base: dict[str, Any],
        arg: str,
        col: str,
        schema: dict[str, Any],
        scope_rows: list[dict[str, Any]],
    ) -> bool:
        """A declared value no row in scope has must give an empty answer; False when it did
        not (blamed)."""
        absent = [
            e
            for e in schema.get("enum") or []
            if e is not None and not any(self._eq(r.get(col), e) for r in scope_rows)
        ]
        if not absent:
            return True
        got, _problem, _p, _f = await self.list_all(lm, {**base, arg: absent[0]})
        if got:
            self.blame.add(
                lm.tool,
                f"filter {arg}={show(absent[0])} returned {len(got)} rows, but no stored row "
                "matches",
            )
            return False
        return True

    async def _rarest_filter(
        self,
        c: Crud,
        lm: ListMeta,
        base: dict[str, Any],
        arg: str,
        col: str,
        values: list[Any],
        scope_rows: list[dict[str, Any]],
    ) -> None:
        """Filtering by the rarest stored value (a filter that is ignored shows) gives exactly
        the rows that hold it."""
        counts: dict[str, int] = {}
        for v in values:
            counts[self.k(v)] = counts.get(self.k(v), 0) + 1
        v = min(values, key=lambda x: counts[self.k(x)])
        got, problem, _p, _f = await self.list_all(lm, {**base, arg: v})
        if got is None:
            self.blame.add(lm.tool, f"filtering by {arg}={show(v)}: {problem}")
            return
        want = {self.k(r.get(c.key)) for r in scope_rows if self._eq(r.get(col), v)}
        keys = {self.k(r.get(c.key)) for r in got if isinstance(r, dict)}
        if keys != want:
            self.blame.add(
                lm.tool,
                f"filter {arg}={show(v)} returned {len(keys)} rows, but {len(want)} "
                "stored rows match",
            )

    @staticmethod
    def _eq(a: Any, b: Any) -> bool:
        if isinstance(a, str) and isinstance(b, str):
            return a.lower() == b.lower()
        return same(a, b)

    async def check_sort(self, c: Crud, lm: ListMeta, base: dict[str, Any]) -> None:
        if not lm.sort:
            return
        schema = ((self.tools[lm.tool].parameters or {}).get("properties") or {}).get(lm.sort) or {}
        options = [str(v) for v in schema.get("enum") or []] or list(lm.sort_fields)
        for opt in options[:3]:
            desc = opt.startswith("-")
            col = opt.lstrip("+-")
            got, problem, _p, _f = await self.list_all(lm, {**base, lm.sort: opt})
            if got is None:
                self.blame.add(lm.tool, f"sorting by {opt}: {problem}")
                return
            vals = [norm(r.get(col)) for r in got if isinstance(r, dict) and r.get(col) is not None]
            try:
                ok = vals == sorted(vals, reverse=desc)
            except TypeError:
                continue
            if not ok:
                self.blame.add(lm.tool, f"sort {opt} does not order the rows by {col}")
                return

    # ----------------------------------------------------------------- create

    async def check_create(self, c: Crud) -> None:
        """A create adds exactly one row, stores what it was given, answers that row, and a get
        and the lists find it."""
        if not c.create:
            return
        await self.reset()
        before = self.seed_state
        tool = self.tools[c.create]
        res = None
        args: dict[str, Any] = {}
        for args in self.builder.candidates(tool, self.rng, 6):
            res = await self.call(c.create, args)
            if res.ok:
                break
        if res is None or not res.ok:
            return  # the smoke test reports it
        after = await self.sb.state()
        old, new = self.rows(before, c), self.rows(after, c)
        added = [k for k in new if k not in old]
        problem = self._create_added(c, res.value, old, new, added) or self._create_stored(
            c, args, new[added[0]]
        )
        if problem:
            self.blame.add(c.create, problem)
            return
        key, row = added[0], new[added[0]]
        self.compare(c.create, c, res.value, row, "the new row")
        g = await self._read_back(c, row)
        if g is not None and not g.ok:
            self.blame.add(
                c.get,
                f"cannot find the row create just stored ({c.key} {key}): "
                f"{g.error.code if g.error else ''}",
            )
        elif g is not None:
            self.compare(c.get, c, g.value, row, "the row create just made")
        for lm in c.lists:
            base = {arg: row.get(col) for arg, col in lm.scope.items()}
            if any(v is None for v in base.values()):
                continue
            await self.check_list_against(c, lm, after, base, " (after a create)")

    def _create_added(
        self,
        c: Crud,
        value: Any,
        old: dict[str, Any],
        new: dict[str, Any],
        added: list[str],
    ) -> str:
        """What is wrong with the rows a create added (none gone, exactly one new, under the key
        it answered), or ``""``."""
        gone = [k for k in old if k not in new]
        if gone:
            return f"replaced or removed existing rows {', '.join(gone[:3])} instead of adding one"
        if not added:
            return (
                f"answered {show(value)} but added 0 rows to {c.table} "
                "(expected 1): the write did not persist"
            )
        if len(added) != 1:
            return f"added {len(added)} rows to {c.table}"
        if isinstance(value, dict) and c.key in value and self.k(value[c.key]) != added[0]:
            return f"answered {c.key} {show(value[c.key])} but stored the row as {added[0]}"
        return ""

    def _create_stored(self, c: Crud, args: dict[str, Any], row: dict[str, Any]) -> str:
        """The first body argument a create stored otherwise than given (spaces aside), or
        ``""``."""
        for arg, col in c.body.get(c.create or "", {}).items():
            if (
                arg in args
                and col in row
                and not same(row[col], args[arg])
                and not (
                    isinstance(args[arg], str)
                    and isinstance(row[col], str)
                    and row[col].strip() == args[arg].strip()
                )
            ):
                return f"was given {arg}={show(args[arg])} but stored {col}={show(row[col])}"
        return ""

    async def _read_back(self, c: Crud, row: dict[str, Any]) -> Any:
        """The get tool's answer for a row (None when there is no get or no scope for it)."""
        if not c.get:
            return None
        gargs = self.scope_args(c, c.get, row)
        if gargs is None:
            return None
        gargs[c.key_arg[c.get]] = row[c.key]
        return await self.call(c.get, gargs)

    def _others_changed(
        self, c: Crud, old: dict[str, Any], new: dict[str, Any], key: str
    ) -> list[str]:
        """Rows other than ``key`` whose stored values changed."""
        return [k for k in old if k != key and k in new and not self._same_row(old[k], new[k], c)]

    # ----------------------------------------------------------------- update

    def _new_value(self, tool: ToolSpec, arg: str, current: Any) -> Any:
        schema = ((tool.parameters or {}).get("properties") or {}).get(arg) or {}
        cands = list(self.builder.sources(tool, arg, schema, self.rng))
        if (
            set(words(arg)) & FRESH_NAMES and schema_type(schema) == "string"
        ):  # unique-looking: a fresh value
            cands = [
                v
                for v in (coerce(x, schema) for x in fresh_values(arg, schema, self.rng))
                if v is not NO_VALUE
            ] + cands
        for v in cands:
            if not same(v, current) and v is not None:
                if isinstance(v, str) and isinstance(current, str) and v.lower() == current.lower():
                    continue
                return v
        return None

    def _target(self, c: Crud, tool: str, i: int) -> dict[str, Any] | None:
        rows = self.seed_state.get(c.table) or []
        return rows[i] if i < len(rows) else None

    async def check_updates(self, c: Crud) -> None:
        for name in c.updates:
            for most in (1, 3):  # one field (the others must stay), then several (all must land)
                await self._update_once(c, name, most)

    async def _update_once(self, c: Crud, name: str, most: int) -> None:
        tool = self.tools[name]
        body = c.body.get(name) or {}
        required = set((tool.parameters or {}).get("required") or [])
        rows = self.seed_state.get(c.table) or []
        order = list(range(len(rows) // 2, len(rows))) + list(
            range(len(rows) // 2)
        )  # not the first row
        for i in order[:4]:
            await self.reset()
            row = rows[i]
            args = self.scope_args(c, name, row)
            if args is None:
                continue
            args[c.key_arg[name]] = row[c.key]
            given: dict[str, Any] = {}
            for arg, col in body.items():
                if arg in required or (len(given) < most and col not in c.generated):
                    v = self._new_value(tool, arg, row.get(col))
                    if v is None:
                        v = row.get(col) if arg in required else None
                    if v is not None:
                        args[arg] = v
                        given[arg] = v
            if not given:
                break
            res = await self.call(name, args)
            if not res.ok:
                continue
            await self._after_write(c, name, row, args, given, res.value)
            return

    async def _after_write(
        self,
        c: Crud,
        name: str,
        row: dict[str, Any],
        args: dict[str, Any],
        given: dict[str, Any],
        value: Any,
    ) -> None:
        """After an update: the row is still there with what it was given, nothing else changed,
        and its answer and the get agree with the stored row."""
        after = await self.sb.state()
        old, new = self.rows(self.seed_state, c), self.rows(after, c)
        key = self.k(row[c.key])
        if key not in new:
            self.blame.add(name, f"removed row {key} instead of updating it")
            return
        stored = new[key]
        problem = (
            self._update_missed(c, name, key, stored, given)
            or self._update_spilled(c, name, key, old, new)
            or self._update_untouched(c, name, key, row, stored, given)
        )
        if problem:
            self.blame.add(name, problem)
            return
        if isinstance(value, dict):
            self.compare(name, c, value, stored, "the updated row")
        g = await self._read_back(c, stored)
        if g is not None and g.ok:
            self.compare(c.get, c, g.value, stored, f"after {name}")
        elif g is not None:
            self.blame.add(c.get, f"cannot find row {key} after {name}")

    def _update_missed(
        self, c: Crud, name: str, key: str, stored: dict[str, Any], given: dict[str, Any]
    ) -> str:
        """The first value an update was given that its row does not hold (case aside for
        words), or ``""``."""
        body = c.body.get(name) or {}
        for arg, v in given.items():
            col = body[arg]
            if not same(stored.get(col), v) and not (
                isinstance(v, str) and str(stored.get(col)).lower() == v.lower()
            ):
                return (
                    f"was given {arg}={show(v)} but row {key} still has "
                    f"{col}={show(stored.get(col))}: the update did not persist"
                )
        return ""

    def _update_spilled(
        self, c: Crud, name: str, key: str, old: dict[str, Any], new: dict[str, Any]
    ) -> str:
        """Other rows an update changed (or a changed row count), or ``""``."""
        others = self._others_changed(c, old, new, key)
        if others or len(new) != len(old):
            return (
                f"changed other rows of {c.table} ({', '.join(others[:3]) or 'row count'}) "
                f"when asked to update {key}"
            )
        return ""

    def _update_untouched(
        self,
        c: Crud,
        name: str,
        key: str,
        row: dict[str, Any],
        stored: dict[str, Any],
        given: dict[str, Any],
    ) -> str:
        """The first column an update changed though not asked to (of its body's columns; of
        all columns in a model environment), or ``""``."""
        body = c.body.get(name) or {}
        if c.model:
            asked = {body[a] for a in given}
            untouched = [col for col in stored if col not in c.generated and col not in asked]
        else:
            untouched = [
                col for a, col in body.items() if a not in given and col not in c.generated
            ]
        for col in untouched:
            if (c.model or col in row) and not same(stored.get(col), row.get(col)):
                return (
                    f"changed {col} of row {key} ({show(row.get(col))} -> "
                    f"{show(stored.get(col))}) though it was not asked to"
                )
        return ""

    def _same_row(self, a: dict[str, Any], b: dict[str, Any], c: Crud) -> bool:
        return all(same(a.get(k), b.get(k)) for k in set(a) | set(b) if k not in c.generated)

    # ----------------------------------------------------------------- delete

    async def check_delete(self, c: Crud) -> None:
        if not c.delete:
            return
        rows = list(self.seed_state.get(c.table) or [])
        for row in reversed(rows[-4:]):
            await self.reset()
            args = self.scope_args(c, c.delete, row)
            if args is None:
                continue
            args[c.key_arg[c.delete]] = row[c.key]
            res = await self.call(c.delete, args)
            if not res.ok:
                continue
            after = await self.sb.state()
            old, new = self.rows(self.seed_state, c), self.rows(after, c)
            key = self.k(row[c.key])
            if key in new:
                self.blame.add(
                    c.delete,
                    f"answered {show(res.value)} but row {key} is still stored: it deleted nothing",
                )
                return
            lost = [k for k in old if k not in new and k != key]
            if lost:
                self.blame.add(
                    c.delete, f"also removed rows {', '.join(lost[:3])} when asked to delete {key}"
                )
                return
            if c.get:
                gargs = self.scope_args(c, c.get, row)
                if gargs is not None:
                    gargs[c.key_arg[c.get]] = row[c.key]
                    g = await self.call(c.get, gargs)
                    if g.ok:
                        self.blame.add(c.get, f"still returns row {key} after it was deleted")
            for lm in c.lists:
                base = {arg: row.get(col) for arg, col in lm.scope.items()}
                if not any(v is None for v in base.values()):
                    await self.check_list_against(c, lm, after, base, " (after a delete)")
            return

    # ----------------------------------------------------------------- actions

    async def check_actions(self, c: Crud) -> None:
        """Each action, on the first seed row it accepts: it sets what its transition says (or
        changes the row at all), changes no other row, and the get agrees."""
        for name in c.actions:
            for row in (self.seed_state.get(c.table) or [])[:8]:
                await self.reset()
                args = self._action_args(c, name, row)
                if args is None:
                    continue
                res = await self.call(name, args)
                if res.ok:
                    await self._after_action(c, name, row, res.value)
                    break

    def _action_args(self, c: Crud, name: str, row: dict[str, Any]) -> dict[str, Any] | None:
        """An action's arguments for a row: its scope, its key, and a value for each other
        required argument that has one."""
        args = self.scope_args(c, name, row)
        if args is None:
            return None
        args[c.key_arg[name]] = row[c.key]
        tool = self.tools[name]
        props = (tool.parameters or {}).get("properties") or {}
        for a in (tool.parameters or {}).get("required") or []:
            if a not in args:
                src = self.builder.sources(tool, a, props.get(a) or {}, self.rng)
                if src:
                    args[a] = src[0]
        return args

    async def _after_action(self, c: Crud, name: str, row: dict[str, Any], value: Any) -> None:
        """The checks of :meth:`check_actions` on the state after one action call."""
        after = await self.sb.state()
        old, new = self.rows(self.seed_state, c), self.rows(after, c)
        key = self.k(row[c.key])
        if key not in new:
            return  # a soft action that removes the row is not judged here
        tr = c.transitions.get(name) or {}
        col = tr.get("field")
        if col is not None and not same(new[key].get(col), tr.get("to")):
            self.blame.add(
                name,
                f"answered {show(value)[:40]} but row {key} has "
                f"{col}={show(new[key].get(col))}, not {show(tr.get('to'))}: the "
                "change did not persist",
            )
        elif (
            col is None
            and self._same_row(old[key], new[key], Crud(table=c.table, key=c.key))
            and not c.model
        ):
            self.blame.add(name, f"answered but changed nothing in row {key}")
        others = self._others_changed(c, old, new, key)
        if others:
            self.blame.add(
                name, f"changed other rows {', '.join(others[:3])} when asked about {key}"
            )
        g = await self._read_back(c, new[key]) if col is not None else None
        if g is not None and g.ok:
            self.compare(c.get, c, g.value, new[key], f"after {name}")

    # ----------------------------------------------------------------- failed calls

    async def check_failures(self, c: Crud) -> None:
        for name in [c.create, *c.updates, c.delete, *c.actions]:
            if not name:
                continue
            await self.reset()
            tool = self.tools[name]
            args: dict[str, Any] = {}
            if name in c.key_arg:
                keyed = self._missing_key_args(c, name, tool)
                if keyed is None:
                    continue
                args = keyed
            elif not (tool.parameters or {}).get("required"):
                continue
            res = await self.call(name, args)
            after = await self.sb.state()
            if res.ok and name in c.key_arg:
                self.blame.add(
                    name,
                    f"succeeded for {c.key} {show(args[c.key_arg[name]])}, which does not "
                    "exist (expected not found)",
                )
            if not res.ok and after != self.seed_state:
                self.blame.add(name, "a failed call changed the state")

    def _missing_key_args(self, c: Crud, name: str, tool: ToolSpec) -> dict[str, Any] | None:
        """Arguments of a keyed tool naming a key that does not exist (the scope of the first
        seed row, the other required arguments their best value); None when out of scope."""
        rows = self.seed_state.get(c.table) or []
        base = self.scope_args(c, name, rows[0]) if rows else {}
        if base is None:
            return None
        args = {**base, c.key_arg[name]: self.missing_key(c)}
        params = tool.parameters or {}
        for a in params.get("required") or []:
            if a not in args:
                schema = (params.get("properties") or {}).get(a) or {}
                src = self.builder.sources(tool, a, schema, self.rng)
                if src:
                    args[a] = src[0]
        return args


async def run_invariants(
    sb: Any,
    env: EnvSpec,
    seed_handle: str,
    seed_state: State,
    rng: random.Random,
    schemas: Any = None,
) -> Blame:
    """Every invariant of every table of ``env``; the sandbox ends at the seed state. With
    ``schemas`` (a :class:`~envkernel_probe.conformance.ResultSchemas`), every successful answer
    is also checked against its tool's declared schema, and a breach is blamed on the tool."""
    blame = Blame()
    checker = Checker(sb, env, seed_handle, seed_state, rng, blame, schemas)
    for c in plan(env, seed_state):
        for step in (
            checker.check_get,
            checker.check_lists,
            checker.check_create,
            checker.check_updates,
            checker.check_delete,
            checker.check_actions,
            checker.check_failures,
        ):
            await step(c)
    await sb.restore(seed_handle)
    return blame
