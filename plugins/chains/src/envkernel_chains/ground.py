"""Grounding: executing a planned chain for real, from the seed state, in one sandbox.

A plan is a list of :class:`PlanNode` in execution order; each node names a tool and, for each id
parameter it needs, the earlier nodes whose output may fill it. The :class:`Grounder` runs the
nodes one by one:

- an **id argument** is taken from an element (a row) of a real earlier output: the row's own
  key (``self``), one of its foreign keys (``fk``), or an identifying field such as an email
  (``key``). Rows the request could not single out (their reference does not resolve to exactly
  one seed row) are skipped; for an action, rows whose status the transition does not accept
  are skipped; failed calls leave the state unchanged, so the next candidate row is simply tried;
- **other arguments** come from the seed data: values of the column the parameter writes or
  filters (a whole seed row is used as a template for a create/update, so that ``starts_at`` and
  ``ends_at`` belong together), enum values, and, for columns that must be unique (an email of a
  new customer), fresh values that the request then states;
- nothing is invented for an id: an id parameter with no producer is given literally only when
  no tool can look that entity up (the graph's ``lookupable`` tables).

The result is a list of :class:`Step` (calls, outputs, links and references) and the final state.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from envkernel_kit.argsgen import (
    FIRST_NAMES,
    LAST_NAMES,
    NO_VALUE,
    coerce,
    default_values,
    fresh_values,
    schema_type,
)
from envkernel_kit.naming import singular, words
from envkernel_kit.tools import ParamInfo, Schema, ToolInfo
from envkernel_schemas import EnvSpec

from .links import Element, extract_elements
from .outcome import changed_tables
from .refs import STATUS_FIELDS, TITLE_FIELDS, Ref, Resolver, adjective, norm
from .refs import is_person as _person

State = dict[str, list[dict[str, Any]]]


@dataclass
class PlanNode:
    """One call of a planned chain."""

    tool: str
    needs: dict[str, list[int]] = field(default_factory=dict)
    """Id parameter -> indices of earlier nodes that may fill it (tried in order)."""
    filters: bool = False
    """True to narrow a read with a literal filter (drawn from the seed rows it can reach)."""
    ways: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Need -> how its (single) producer feeds it (graph edge ``feeds``), for goal-directed
    hints."""


@dataclass(eq=False)
class Link:
    """An argument filled from a row an earlier call returned."""

    source: int
    element: Element
    kind: str
    """``self`` (the row's key), ``fk`` (a foreign key it holds) or ``key`` (an identifying
    field)."""
    field: str
    value: Any


@dataclass(eq=False)
class Step:
    """One executed call, with how its arguments were obtained."""

    index: int
    info: ToolInfo
    args: dict[str, Any]
    links: dict[str, Link] = field(default_factory=dict)
    refs: dict[str, Ref] = field(default_factory=dict)
    """References for the entity arguments (linked or literal ids, key-linked values)."""
    output: Any = None
    elements: list[Element] = field(default_factory=list)
    target: Ref | None = None
    """The entity the call acts on or returns (its key argument, or the row it created)."""
    scope: dict[str, Any] = field(default_factory=dict)
    """For a read: the literal constraints and their words (see :meth:`Grounder.scope_of`)."""

    @property
    def mutating(self) -> bool:
        return self.info.mutates

    @property
    def literal(self) -> dict[str, Any]:
        """Arguments not taken from an earlier output."""
        return {k: v for k, v in self.args.items() if k not in self.links}


class Rejected(Exception):
    """A chain that cannot be grounded; ``reason`` is counted."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _fact_key(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


_ROW_KINDS = frozenset({"get", "update", "delete", "action", "list"})
"""Kinds of tools that act on or return seed rows (so a hint can pick one)."""


@dataclass
class _Scope:
    """The literal constraints of a read and their words, gathered argument by argument (see
    :meth:`Grounder.scope_of`)."""

    cols: set[str]
    constraints: list[tuple[Any, str, Any]] = field(default_factory=list)
    owners: list[tuple[str, Ref]] = field(default_factory=list)
    quals: list[str] = field(default_factory=list)
    adjectives: list[str] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    idents: list[tuple[str, Any]] = field(default_factory=list)
    search: str | None = None

    def add_filter(self, col: str, op: str, v: Any) -> None:
        """A filter or value on ``col``: a status as an adjective (``open``), a bool as one
        (``non-archived``), anything else as a qualifier (``with priority high``); an equality on
        a known column also identifies the row."""
        self.constraints.append((col, op if col in self.cols else "unknown", v))
        self.values.append(str(v))
        if op == "eq" and col in STATUS_FIELDS and adjective(v):
            self.adjectives.append(v)
        elif isinstance(v, bool):
            said = " ".join(w for w in words(col) if w not in ("is", "has"))
            self.adjectives.append(("" if v else "non-") + said)
        else:
            self.quals.append(_qual(col, op, v))
            if op == "eq" and col in self.cols:
                self.idents.append((col, v))

    def as_dict(self) -> dict[str, Any]:
        """The scope as :attr:`Step.scope` holds it."""
        return {
            "constraints": self.constraints,
            "owners": self.owners,
            "quals": self.quals,
            "adjectives": self.adjectives,
            "values": self.values,
            "search": self.search,
            "idents": self.idents,
        }


def _scalar(v: Any) -> bool:
    return v is not None and not isinstance(v, (dict, list))


def _row_values(p: ParamInfo, rows: list[dict[str, Any]], col: str) -> list[Any]:
    """The values the rows have for a read's parameter ``p``: their title-like strings for a
    search, their ``col`` for an equality or a value, that value in a list for ``in`` (Amadeus's
    ``chainCodes=[...]``); none for a range."""
    if p.role == "search":
        cols = [
            c for c in (p.search_fields or TITLE_FIELDS) if c in TITLE_FIELDS or c.endswith("_name")
        ]
        return [r.get(c) for r in rows for c in cols if isinstance(r.get(c), str) and r.get(c)]
    if p.op == "eq" or p.role == "value":
        return [r.get(col) for r in rows if _scalar(r.get(col))]
    if p.op == "in":
        return [[r.get(col)] for r in rows if _scalar(r.get(col))]
    return []


def _drop_chosen(options: dict[str, list[Link]], chosen: dict[str, Link]) -> None:
    """Do not pick these links again (where a parameter has another candidate)."""
    for name, link in chosen.items():
        if len(options[name]) > 1 and link in options[name]:
            options[name].remove(link)


class Grounder:
    """Executes plans over one environment in one sandbox (reset to the seed before each chain)."""

    def __init__(
        self,
        env: EnvSpec,
        infos: dict[str, ToolInfo],
        schema: Schema,
        seed: State,
        lookupable: set[str],
        rng: random.Random,
        *,
        tries: int = 4,
        optional_share: float = 0.35,
    ) -> None:
        self.env = env
        self.infos = infos
        self.schema = schema
        self.seed = seed
        self.lookupable = lookupable
        self.rng = rng
        self.tries = tries
        self.optional_share = optional_share
        self.resolver = Resolver(seed, schema)
        self.rejected: Counter[str] = Counter()
        self._pools: dict[tuple[str, str], list[Any]] = {}
        self.calls = 0
        """Calls sent to the sandbox."""
        self.cached = 0
        """Read calls answered from the seed-state memo."""
        self.restores = 0
        self.dirty = True
        """True when the sandbox may differ from the seed state (a write succeeded since the last
        restore)."""
        self.memo: dict[str, Any] = {}
        """(tool, arguments) -> result of a read-only call made from the seed state (reads are
        deterministic)."""
        self.memo_cap = 20_000
        self.seed_rows: dict[str, Counter[Any]] = {}
        """The seed state's tables as multisets of rows (``outcome.changed_tables``'s ``known``);
        the sampler shares its own."""
        self._duplicate: Any = None
        """The sampler's duplicate test of a chain (see :meth:`run`), asked before the last call
        too."""

    # -- values from the seed -----------------------------------------------------------------

    def column_values(self, table: str | None, column: str | None) -> list[Any]:
        """Distinct non-null values of a seed column, in row order."""
        if not table or not column:
            return []
        out, seen = [], set()
        for r in self.seed.get(table, []):
            v = r.get(column)
            if v is None or isinstance(v, (dict, list)):
                continue
            k = _fact_key(v)
            if k not in seen:
                seen.add(k)
                out.append(v)
        return out

    def pool(self, info: ToolInfo, p: ParamInfo) -> list[Any]:
        """Seed-derived candidate values for a literal parameter (coerced to its schema)."""
        key = (info.name, p.name)
        if key in self._pools:
            return self._pools[key]
        sch = p.schema or {}
        out, seen = [], set()
        for v in self._raw_pool(info, p):
            c = coerce(v, sch)
            if c is NO_VALUE:
                continue
            k = _fact_key(c)
            if k not in seen:
                seen.add(k)
                out.append(c)
        if not out:
            out = [c for c in (coerce(v, sch) for v in default_values(p.name, sch))]
            out = [c for c in out if c is not NO_VALUE]
        self._pools[key] = out
        return out

    def _raw_pool(self, info: ToolInfo, p: ParamInfo) -> list[Any]:
        """The uncoerced candidates of :meth:`pool`: the schema's enum, then the seed's values of
        the column (title-like columns for a search) and the table's enum; for an array with
        none, one-item lists of the singular column's values."""
        sch = p.schema or {}
        raw: list[Any] = list(sch.get("enum") or [])
        table = p.resource or info.resource
        col = p.field or p.name
        if p.role == "search":
            for f in p.search_fields or TITLE_FIELDS:
                if f in TITLE_FIELDS or f.endswith("_name"):
                    raw.extend(self.column_values(table, f))
        else:
            raw.extend(self.column_values(table, col))
            raw.extend(self.schema.enums.get(table or "", {}).get(col) or [])
        if not raw and schema_type(sch) == "array" and isinstance(sch.get("items"), dict):
            raw.extend([[v] for v in self.column_values(table, singular(col))[:4]])
        return raw

    def unique_field(self, info: ToolInfo, p: ParamInfo) -> bool:
        """True when the column must be unique (a create needs a fresh value)."""
        table = p.resource or info.resource or ""
        return (p.field or p.name) in self.schema.unique.get(table, set())

    def fresh(self, info: ToolInfo, p: ParamInfo, ident: tuple[str, str, int] | None = None) -> Any:
        """A fresh value for a unique column, not in the seed: an email or handle of the new
        person ``ident``, else a seed value with new digits (so it keeps the column's pattern)."""
        col = p.field or p.name
        seeded = self.column_values(p.resource or info.resource, col)
        taken = {norm(v) for v in seeded}
        sch = p.schema or {}
        cands = self._person_values(info, col, sch, ident or self.identity())
        for v in seeded[:4]:
            if isinstance(v, str):
                cands.append(self._renumbered(v))
        cands += fresh_values(p.name, sch, self.rng, 3)
        for v in cands:
            c = coerce(v, sch)
            if c is not NO_VALUE and norm(c) not in taken:
                return c
        return NO_VALUE

    @staticmethod
    def _person_values(
        info: ToolInfo, col: str, sch: dict[str, Any], ident: tuple[str, str, int]
    ) -> list[Any]:
        """The new person's value for ``col``: emails, a handle, or a full name (of a person)."""
        first, last, k = ident
        ws = set(words(col))
        if sch.get("format") == "email" or "email" in ws:
            return [
                f"{first.lower()}.{last.lower()}{k}@example.com",
                f"{first.lower()}{k}@example.org",
            ]
        if ws & {"username", "login", "handle"}:
            return [f"{first.lower()}{last.lower()[:1]}{k}"]
        if ws & {"name", "full_name", "display_name"} and info.noun and _person(info.noun):
            return [f"{first} {last}"]
        return []

    def _renumbered(self, v: str) -> str:
        """A seed value with new digits (two or more), else with a digit appended."""
        digits = [c for c in v if c.isdigit()]
        if len(digits) < 2:
            return f"{v} {self.rng.randint(2, 9)}"
        it = iter(str(self.rng.randrange(10 ** len(digits))).zfill(len(digits)))
        return "".join(next(it) if c.isdigit() else c for c in v)

    def identity(self) -> tuple[str, str, int]:
        """A new person: first name, last name and a number (for a coherent name and email)."""
        return self.rng.choice(FIRST_NAMES), self.rng.choice(LAST_NAMES), self.rng.randint(10, 99)

    # -- literal arguments -----------------------------------------------------------------------

    def template_row(
        self, table: str | None, avoid: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """A random seed row of ``table`` (not ``avoid``) to take coherent values from."""
        rows = self.seed.get(table or "", [])
        if not rows:
            return {}
        key = self.schema.key(table)
        cands = [
            r for r in rows if avoid is None or norm(r.get(key)) != norm(avoid.get(key))
        ] or rows
        return self.rng.choice(cands)

    def literal_args(
        self,
        info: ToolInfo,
        node: PlanNode,
        linked: dict[str, Any],
        current: dict[str, Any] | None,
        reach: list[dict[str, Any]] | None,
        final: bool,
    ) -> dict[str, Any] | None:
        """Literal arguments of a call (``linked`` ones already fixed); None when impossible."""
        params = [
            p
            for p in info.params.values()
            if p.name not in linked and p.role not in ("page", "sort")
        ]
        if info.kind == "create":
            return self._create_literals(info, params)
        if info.kind == "update":
            return self._update_literals(info, params, bool(linked), current)
        if info.kind in ("action", "delete"):
            return self._action_literals(info, params)
        return self._read_literals(info, params, node, reach, final)

    def _create_literals(self, info: ToolInfo, params: list[ParamInfo]) -> dict[str, Any] | None:
        """A new row's values: its required fields and some optional ones (a person's name from
        one made-up identity, unique fields fresh)."""
        args: dict[str, Any] = {}
        tpl = self.template_row(info.resource)
        ident = self.identity()
        person = _person(info.noun)
        for p in params:
            if p.is_id or (not p.required and self.rng.random() >= self.optional_share):
                continue
            col = p.field or p.name
            if (
                person
                and col in ("name", "full_name", "display_name", "holder_name")
                and schema_type(p.schema or {}) == "string"
            ):
                v = coerce(f"{ident[0]} {ident[1]}", p.schema or {})
            elif self.unique_field(info, p):
                v = self.fresh(info, p, ident)
            else:
                v = self._value(info, p, tpl, None)
            if v is NO_VALUE:
                if p.required:
                    return None
                continue
            args[p.name] = v
        return args

    def _update_literals(
        self,
        info: ToolInfo,
        params: list[ParamInfo],
        linked: bool,
        current: dict[str, Any] | None,
    ) -> dict[str, Any] | None:
        """An update's new values: the required ones and one or two optional ones, at least one
        different from the row's current value."""
        rng = self.rng
        writable = [p for p in params if p.role == "value" or (p.role == "filter" and info.mutates)]
        req = [p for p in writable if p.required]
        opt = [p for p in writable if not p.required]
        rng.shuffle(opt)
        chosen = req + opt[: (1 if req else rng.choice((1, 1, 2)))]
        if not chosen:
            return {} if linked else None
        tpl = self.template_row(info.resource, avoid=current)
        args: dict[str, Any] = {}
        changed = False
        for p in chosen:
            v = self._value(info, p, tpl, current)
            if v is NO_VALUE:
                if p.required:
                    return None
                continue
            args[p.name] = v
            col = p.field or p.name
            if current is None or norm(current.get(col)) != norm(v):
                changed = True
        return args if changed else None

    def _action_literals(self, info: ToolInfo, params: list[ParamInfo]) -> dict[str, Any] | None:
        """An action's or a delete's other values: the required ones and some optional ones."""
        args: dict[str, Any] = {}
        for p in params:
            if p.is_id or not (p.required or self.rng.random() < self.optional_share):
                continue
            v = self._value(info, p, self.template_row(info.resource), None)
            if v is NO_VALUE:
                if p.required:
                    return None
                continue
            args[p.name] = v
        return args

    def _read_literals(
        self,
        info: ToolInfo,
        params: list[ParamInfo],
        node: PlanNode,
        reach: list[dict[str, Any]] | None,
        final: bool,
    ) -> dict[str, Any] | None:
        """A read's values: its required ones, and a filter or search when the plan asks for one
        (or, for a chain's last read, sometimes)."""
        args: dict[str, Any] = {}
        for p in params:
            if p.is_id or not p.required:
                continue
            v = self._read_value(info, p, reach)
            if v is NO_VALUE:
                return None
            args[p.name] = v
        optional = [
            p
            for p in params
            if not p.is_id and not p.required and p.role in ("filter", "search", "value")
        ]
        if optional and (node.filters or (final and self.rng.random() < self.optional_share)):
            p = self.rng.choice(optional)
            v = self._read_value(info, p, reach)
            if v is not NO_VALUE:
                args[p.name] = v
        return args

    def _value(
        self, info: ToolInfo, p: ParamInfo, tpl: dict[str, Any], current: dict[str, Any] | None
    ) -> Any:
        col = p.field or p.name
        if self.unique_field(info, p) and info.kind in ("create", "update"):
            return self.fresh(info, p)
        if (
            col in tpl
            and tpl[col] is not None
            and (current is None or norm(current.get(col)) != norm(tpl[col]))
        ):
            c = coerce(tpl[col], p.schema or {})
            if c is not NO_VALUE:
                return c
        pool = [
            v for v in self.pool(info, p) if current is None or norm(current.get(col)) != norm(v)
        ]
        if not pool:
            return NO_VALUE
        return self.rng.choice(pool)

    def _read_value(self, info: ToolInfo, p: ParamInfo, reach: list[dict[str, Any]] | None) -> Any:
        """A filter/search value that some reachable seed row has (so the read finds something)."""
        rows = reach if reach is not None else self.seed.get(info.resource or "", [])
        col = p.field or p.name
        vals = [c for c in (coerce(v, p.schema or {}) for v in _row_values(p, rows, col))]
        vals = [c for c in vals if c is not NO_VALUE]
        if vals:
            return self.rng.choice(vals)
        if p.op != "eq" and p.role == "filter" and rows:
            v = rows[self.rng.randrange(len(rows))].get(col)
            return coerce(v, p.schema or {}) if v is not None else NO_VALUE
        return NO_VALUE

    # -- references --------------------------------------------------------------------------------

    def scope_of(
        self, info: ToolInfo, args: dict[str, Any], refs: dict[str, Ref]
    ) -> dict[str, Any]:
        """The literal constraints of a read, and the words a request uses for them."""
        table = info.resource
        cols = set(self.seed[table][0]) if table and self.seed.get(table) else set()
        scope = _Scope(cols)
        for name, v in args.items():
            p = info.params.get(name)
            if p is None:
                continue
            if name in refs and p.is_id:
                col = p.field if p.field in cols else (name if name in cols else None)
                if col is None:
                    return {}
                scope.owners.append((col, refs[name]))
            elif p.role == "search":
                scope.search = str(v)
                scope.constraints.append((tuple(p.search_fields), "search", v))
                scope.values.append(str(v))
            elif p.role in ("filter", "value"):
                scope.add_filter(p.field or name, p.op, v)
        return scope.as_dict()

    def element_ref(self, steps: list[Step], e: Element) -> Ref | None:
        """How a request refers to the row ``e`` of an earlier output (None: it cannot)."""
        step = steps[e.call]
        info = step.info
        if e.parent is not None or e.table is None:
            return None
        key = self.schema.key(e.table)
        value = e.row.get(key)
        if value is None:
            return None
        created = self._created.get((e.table, repr(norm(value))))
        if created is not None:
            return self.resolver.new(e.table, singular(e.noun), value)
        if (
            info.kind in ("get", "update", "action", "delete")
            and step.target is not None
            and norm(step.target.value) == norm(value)
        ):
            return step.target
        if info.mutates:
            return None
        sc = step.scope
        if not sc:
            return None
        siblings = [x.row for x in step.elements if x.parent is None]
        ref = self.resolver.describe(
            e.table,
            singular(e.noun),
            value,
            sc["constraints"],
            sc["owners"],
            siblings,
            e.row,
            sc["quals"],
            sc["adjectives"],
            sc["values"],
            idents=sc.get("idents", []),
        )
        if ref is not None and sc.get("search") and ref.title is None:
            self._title_from_search(ref, e.table, value, sc["search"])
        return ref

    def _title_from_search(self, ref: Ref, table: str, value: Any, search: str) -> None:
        """A row found by searching its exact title is named by that title (not ``matching``)."""
        row = self.resolver.row(table, value) or {}
        for f in TITLE_FIELDS:
            if isinstance(row.get(f), str) and row[f].strip().lower() == search.strip().lower():
                ref.title = row[f]
                ref.quals = [q for q in ref.quals if not q.startswith("matching ")]
                return

    def link_ref(self, steps: list[Step], link: Link, p: ParamInfo) -> Ref | None:
        """The reference for a linked argument (an entity the chain already named keeps its
        name)."""
        target = p.resource or self.schema.ref(link.element.table, link.field)
        if link.kind == "fk":
            known = self._registry.get((target or "", repr(norm(link.value))))
            if known is not None:
                return known
        base = self.element_ref(steps, link.element)
        if base is None:
            return None
        if link.kind in ("self", "key"):
            return base
        ref = self.resolver.of(base, link.field, target, link.value)
        return ref if ref.ok else None

    def remember(self, ref: Ref) -> None:
        """Note the name of an entity, for later foreign keys that point at it."""
        if ref.table and ref.ok:
            self._registry.setdefault((ref.table, repr(norm(ref.value))), ref)

    # -- links
    # ---------------------------------------------------------------------------------------

    def candidates(
        self, steps: list[Step], info: ToolInfo, p: ParamInfo, sources: list[int]
    ) -> list[Link]:
        """Every way an earlier output can fill ``p`` (rows the request can name come later)."""
        out: list[Link] = []
        for j in sources:
            if j >= len(steps):
                continue
            src = steps[j]
            for e in src.elements:
                if e.parent is not None or e.table is None:
                    continue
                for kind, f in self._element_ways(src, e, p):
                    link = self._link(j, src, e, p, kind, f)
                    if link is not None:
                        out.append(link)
        return out

    def _element_ways(self, src: Step, e: Element, p: ParamInfo) -> list[tuple[str, str]]:
        """How the row ``e`` of ``src``'s output can fill ``p``, as (link kind, field): an id by
        the row's own key (not from a lookup by key that was only given it), by a foreign key to
        ``p``'s table, else by a field named like ``p``; a value, filter or search by a string
        field of ``p``'s name or format."""
        assert e.table is not None
        if p.is_id and p.resource:
            return self._id_ways(src, e, p.resource, p.name)
        if p.role not in ("value", "filter", "search"):
            return []
        fmt = (p.schema or {}).get("format")
        formats = self.schema.formats.get(e.table, {})
        return [
            ("key", f)
            for f, v in e.row.items()
            if isinstance(v, str) and (f == p.name or (fmt and formats.get(f) == fmt))
        ]

    def _id_ways(self, src: Step, e: Element, resource: str, name: str) -> list[tuple[str, str]]:
        """How the row ``e`` fills an id of ``resource`` named ``name`` (see
        :meth:`_element_ways`)."""
        assert e.table is not None
        ways: list[tuple[str, str]] = []
        if e.table == resource:
            by_key = src.info.kind == "get" and any(
                q.role == "key" for q in src.info.params.values()
            )
            if not (by_key and not src.mutating):
                ways.append(("self", self.schema.key(e.table)))
        for f, ref in self.schema.refs.get(e.table, {}).items():
            if ref == resource and f in e.row:
                ways.append(("fk", f))
        if not ways and name in e.row and e.table != resource:
            ways.append(("fk", name))
        return ways

    @staticmethod
    def _link(j: int, src: Step, e: Element, p: ParamInfo, kind: str, f: str) -> Link | None:
        """The link filling ``p`` with field ``f`` of ``e`` (coerced to ``p``'s schema); None when
        the field holds no usable value, or a read would only hand back what it was given."""
        v = e.row.get(f)
        if v is None or isinstance(v, (dict, list)):
            return None
        c = coerce(v, p.schema or {})
        if c is NO_VALUE:
            return None
        if (
            not src.mutating
            and kind == "self"
            and any(norm(c) == norm(a) for a in src.args.values())
        ):
            return None  # it only hands back what that call was given
        return Link(source=j, element=e, kind=kind, field=f, value=c)

    def acceptable(self, info: ToolInfo, p: ParamInfo, link: Link) -> bool:
        """False when an action's transition would refuse the row (it is already there, or not
        allowed)."""
        if p.role != "key" or link.kind != "self":
            return True
        tr = info.transition or {}
        col = tr.get("field")
        if not col or col not in link.element.row:
            return True
        cur = link.element.row.get(col)
        if "to" in tr and norm(cur) == norm(tr["to"]):
            return False
        allowed = tr.get("from")
        return not allowed or norm(cur) in {norm(a) for a in allowed}

    # -- goal-directed hints
    # ------------------------------------------------------------------------

    def row_ok(self, info: ToolInfo, row: dict[str, Any]) -> bool:
        """True when an action's transition accepts ``row`` (its status is an allowed source)."""
        tr = info.transition or {}
        col = tr.get("field")
        if info.kind != "action" or not col or col not in row:
            return True
        cur = row.get(col)
        if "to" in tr and norm(cur) == norm(tr["to"]):
            return False
        allowed = tr.get("from")
        return not allowed or norm(cur) in {norm(a) for a in allowed}

    def _pick_row(
        self, table: str | None, info: ToolInfo | None = None, where: tuple[str, Any] | None = None
    ) -> dict[str, Any] | None:
        rows = self.seed.get(table or "", [])
        if where is not None:
            rows = [r for r in rows if norm(r.get(where[0])) == norm(where[1])]
        if info is not None:
            good = [r for r in rows if self.row_ok(info, r)]
            rows = good or rows
        return self.rng.choice(rows) if rows else None

    def _first_action(self, plan: list[PlanNode], i: int) -> ToolInfo:
        """The earliest call acting on the same row as node ``i`` (following its key back through
        earlier writes to it): its precondition is the one the seed row must meet."""
        info = self.infos[plan[i].tool]
        first = info
        seen = 0
        while seen < len(plan):
            seen += 1
            key = next((p.name for p in info.params.values() if p.role == "key"), None)
            srcs = plan[i].needs.get(key or "", [])
            if len(srcs) != 1:
                break
            j = srcs[0]
            src = self.infos[plan[j].tool]
            if not src.mutates or src.kind == "create" or src.resource != info.resource:
                break
            if src.kind == "action":
                first = src
            i, info = j, src
        return first

    def hints(
        self, plan: list[PlanNode]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any] | None]]:
        """For each node, the id values and the seed row it should preferably use, chosen from the
        target backward: the target's row first (one its transition accepts), then for each
        producer a row that yields the value its consumer wants. Only a preference: every call
        is still made for real, and a hint that does not fit is ignored."""
        n = len(plan)
        want: list[dict[str, Any] | None] = [None] * n
        hints: list[dict[str, Any]] = [{} for _ in range(n)]
        for i in reversed(range(n)):
            node = plan[i]
            info = self.infos[node.tool]
            if want[i] is None and info.resource and info.kind in _ROW_KINDS:
                if info.kind != "list" or i == n - 1:
                    want[i] = self._pick_row(info.resource, self._first_action(plan, i))
            hints[i] = vals = self._id_hints(info, node, want[i])
            for pname, srcs in node.needs.items():
                v = vals.get(pname)
                if v is not None and len(srcs) == 1 and want[srcs[0]] is None:
                    want[srcs[0]] = self._producer_row(plan, node, info, pname, srcs[0], v)
        return hints, want

    def _id_hints(
        self, info: ToolInfo, node: PlanNode, row: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The id values node ``node`` should use: those of the row it wants, and for each other
        linked id a random seed row's key."""
        vals: dict[str, Any] = {}
        for q in info.params.values():
            if not q.is_id or row is None:
                continue
            col = self.schema.key(info.resource) if q.role == "key" else q.field
            if col and col in row and row[col] is not None:
                vals[q.name] = row[col]
        for pname in node.needs:
            q = info.params.get(pname)
            if pname in vals or q is None or not q.resource:
                continue
            r = self._pick_row(q.resource)
            if r is not None:
                vals[pname] = r.get(self.schema.key(q.resource))
        return vals

    def _producer_row(
        self, plan: list[PlanNode], node: PlanNode, info: ToolInfo, pname: str, j: int, v: Any
    ) -> dict[str, Any] | None:
        """The seed row producer ``j`` should return so that ``node`` gets ``v`` for ``pname``:
        the row itself (``self``), or a row whose foreign key holds it (``fk``)."""
        src = self.infos[plan[j].tool]
        if src.kind == "create" or not src.resource:
            return None
        q = info.params[pname]
        for way in node.ways.get(pname, []):
            row = None
            if way["link"] == "self" and src.resource == q.resource:
                row = self.resolver.row(src.resource, v)
            elif way["link"] == "fk":
                row = self._pick_row(src.resource, src, (way["field"], v))
            if row is not None:
                return row
        return None

    # -- running a chain --------------------------------------------------------------------------

    async def run(
        self, sb: Any, seed_handle: str, plan: list[PlanNode], duplicate: Any = None
    ) -> tuple[list[Step], State | None]:
        """Execute ``plan`` from the seed state; raises :class:`Rejected` when it cannot be
        grounded.

        ``duplicate(steps)``: why the chain ``steps`` would be dropped (``duplicate``,
        ``redundant_step``...), or None; asked before the last call (another row or value is tried
        instead) and once more at the end."""
        if self.dirty:
            await sb.restore(seed_handle)
            self.restores += 1
            self.dirty = False
        self._pristine = True
        self._created: dict[tuple[str, str], int] = {}
        self._registry: dict[tuple[str, str], Ref] = {}
        steps: list[Step] = []
        current_state: State | None = None
        created_tables: Counter[str] = Counter()
        self._hints, self._want = (
            self.hints(plan)
            if any(node.ways for node in plan)
            else ([{} for _ in plan], [None] * len(plan))
        )
        self._duplicate = duplicate
        for i, node in enumerate(plan):
            info = self.infos[node.tool]
            step = await self._run_node(sb, steps, i, node, info, i == len(plan) - 1)
            steps.append(step)
            if step.target is None and info.kind == "get" and not info.mutates:
                self._name_read(steps, step)
            if info.kind == "create" and info.resource:
                self._name_created(step, info, created_tables)
            if info.mutates and not info.from_model:
                current_state = await self._changed_state(sb, current_state)
        why = duplicate(steps) if duplicate is not None else None
        if why:
            raise Rejected(why)
        final_state = None
        if any(s.mutating for s in steps):
            final_state = current_state if current_state is not None else await sb.state()
        return steps, final_state

    def _name_read(self, steps: list[Step], step: Step) -> None:
        """A lookup that returned one row acts on it: name it (for later mentions)."""
        tops = [e for e in step.elements if e.parent is None]
        if len(tops) == 1:
            step.target = self.element_ref(steps, tops[0])
            if step.target is not None:
                self.remember(step.target)

    def _name_created(self, step: Step, info: ToolInfo, created_tables: Counter[str]) -> None:
        """Note the row a create returned as new (its target); :class:`Rejected` when the chain
        creates a second row of the same table."""
        for e in step.elements:
            if e.parent is None and e.table == info.resource:
                k = e.row.get(self.schema.key(e.table))
                if k is not None:
                    self._created[(e.table, repr(norm(k)))] = step.index
                    created_tables[e.table] += 1
                    step.target = self.resolver.new(e.table, info.noun, k)
                    self.remember(step.target)
                break
        if created_tables[info.resource or ""] > 1:
            raise Rejected("two_new_rows")

    async def _changed_state(self, sb: Any, current: State | None) -> State:
        """The state after a write; :class:`Rejected` (``no_op``) when it changed nothing."""
        after: State = await sb.state()
        if not changed_tables(
            current or self.seed,
            after,
            self.env.generated,
            None if current else self.seed_rows,
        ):
            raise Rejected("no_op")
        return after

    async def _run_node(
        self, sb: Any, steps: list[Step], i: int, node: PlanNode, info: ToolInfo, final: bool
    ) -> Step:
        """Ground and call one planned node: its links to earlier steps and its literal values,
        tried up to ``self.tries`` times; :class:`Rejected` with the commonest reason if none
        works."""
        options = self._link_options(steps, i, node, info)
        literal_ids = self._literal_ids(node, info)
        key_param = next((p.name for p in info.params.values() if p.role == "key"), None)
        errors: Counter[str] = Counter()
        for attempt in range(self.tries):
            chosen = self._choose_links(options, attempt)
            refs = self._link_refs(steps, chosen, info)
            if len(refs) < len(chosen):
                errors["unnameable"] += 1
                if not self._drop_unnamed(options, chosen, refs):
                    break
                continue
            refs.update(literal_ids)
            linked = {n: link.value for n, link in chosen.items()}
            linked.update({n: r.value for n, r in literal_ids.items()})
            current = chosen[key_param].element.row if key_param in chosen else None
            lit = self.literal_args(
                info, node, linked, current, self._wanted_reach(i, info, refs), final
            )
            if lit is None:
                errors["no_arguments"] += 1
                continue
            args = {**linked, **lit}
            args = {k: args[k] for k in info.params if k in args}
            target = refs.get(key_param) if key_param else None
            step = Step(index=i, info=info, args=args, links=chosen, refs=refs, target=target)
            # an emitted task already ends so, or the chain would be dropped: try another row or
            # value before any call
            why = self._duplicate([*steps, step]) if final and self._duplicate else None
            if why:
                errors[why] += 1
                _drop_chosen(options, chosen)
                continue
            res = await self.call(sb, info, args)
            if not res.ok:
                errors[f"call_failed:{res.error.code if res.error else '?'}"] += 1
                _drop_chosen(options, chosen)
                continue
            done = self._called(step, res.value, key_param)
            if done is None:
                errors["empty"] += 1
                continue
            return done
        raise Rejected(errors.most_common(1)[0][0] if errors else "no_link")

    def _link_refs(
        self, steps: list[Step], chosen: dict[str, Link], info: ToolInfo
    ) -> dict[str, Ref]:
        """The references of the chosen links, up to the first that cannot be named."""
        refs: dict[str, Ref] = {}
        for name, link in chosen.items():
            ref = self.link_ref(steps, link, info.params[name])
            if ref is None:
                break
            refs[name] = ref
        return refs

    def _link_options(
        self, steps: list[Step], i: int, node: PlanNode, info: ToolInfo
    ) -> dict[str, list[Link]]:
        """Each linked parameter's candidate links, shuffled (the hinted value first, mostly)."""
        rng = self.rng
        options: dict[str, list[Link]] = {}
        for p in [info.params[p] for p in node.needs if p in info.params]:
            cands = self.candidates(steps, info, p, node.needs[p.name])
            cands = [c for c in cands if self.acceptable(info, p, c)]
            if not cands:
                raise Rejected("no_link")
            rng.shuffle(cands)
            hint = self._hints[i].get(p.name) if i < len(self._hints) else None
            if hint is not None and rng.random() < 0.9:
                cands.sort(key=lambda c: 0 if norm(c.value) == norm(hint) else 1)
            options[p.name] = cands
        return options

    def _literal_ids(self, node: PlanNode, info: ToolInfo) -> dict[str, Ref]:
        """The ids the plan does not link, as literals of rows of the seed."""
        literal_ids: dict[str, Ref] = {}
        for p in info.needs():
            if p.name in node.needs:
                continue
            if p.resource in self.lookupable:
                raise Rejected("unplanned_id")
            ids = self.column_values(p.resource, self.schema.key(p.resource))
            if not ids:
                raise Rejected("no_arguments")
            literal_ids[p.name] = self.resolver.literal(
                p.resource, singular(p.resource or p.name), self.rng.choice(ids)
            )
        return literal_ids

    def _choose_links(self, options: dict[str, list[Link]], attempt: int) -> dict[str, Link]:
        """One link per parameter, preferring one row for several parameters (an attendee and
        its event); the first candidates on the first attempt, then sometimes others."""
        rng = self.rng
        chosen: dict[str, Link] = {}
        for name in options:
            same = [
                c for c in options[name] if any(c.element is o.element for o in chosen.values())
            ]
            if same and rng.random() < 0.9:
                pick = same[0]
            elif attempt == 0 or rng.random() < 0.5:
                pick = options[name][0]
            else:
                pick = options[name][rng.randrange(len(options[name]))]
            chosen[name] = pick
        return chosen

    @staticmethod
    def _drop_unnamed(
        options: dict[str, list[Link]], chosen: dict[str, Link], refs: dict[str, Ref]
    ) -> bool:
        """Do not pick the first link that could not be named again; False when no parameter has
        another candidate left (nothing more to try)."""
        for name, link in chosen.items():
            if name not in refs and link in options[name] and len(options[name]) > 1:
                options[name].remove(link)
                return True
        return not all(len(v) <= 1 for v in options.values())

    def _wanted_reach(self, i: int, info: ToolInfo, refs: dict[str, Ref]) -> Any:
        """The rows the call can reach, narrowed (mostly) to the row the plan wants there."""
        reach = self._reach(info, refs)
        want = self._want[i] if i < len(self._want) else None
        if want is not None and reach is not None and self.rng.random() < 0.8:
            key = self.schema.key(info.resource)
            near = [r for r in reach if norm(r.get(key)) == norm(want.get(key))]
            reach = near or reach
        return reach

    def _called(self, step: Step, value: Any, key_param: str | None) -> Step | None:
        """The step with the call's output and its elements; None for a read that found nothing."""
        info, refs = step.info, step.refs
        done = Step(
            index=step.index,
            info=info,
            args=step.args,
            links=step.links,
            refs=refs,
            output=value,
            elements=self._elements(info, value, step.index),
        )
        for r in refs.values():
            self.remember(r)
        if key_param is not None and key_param in refs:
            done.target = refs[key_param]
        if not info.mutates:
            done.scope = self.scope_of(info, step.args, refs)
            if not [e for e in done.elements if e.parent is None] and (
                value in (None, [], {}, "") or _empty_page(value)
            ):
                return None
        return done

    async def call(self, sb: Any, info: ToolInfo, args: dict[str, Any]) -> Any:
        """Call a tool; a read from the seed state is answered from the memo when it was made
        before."""
        key = None
        if not info.mutates and self._pristine:
            key = json.dumps([info.name, args], sort_keys=True, default=str)
            got = self.memo.get(key)
            if got is not None:
                self.cached += 1
                return got
        res = await sb.call(info.name, args)
        self.calls += 1
        if info.mutates:
            self._pristine = False
            if res.ok:
                self.dirty = True
        elif key is not None and len(self.memo) < self.memo_cap:
            self.memo[key] = res
        return res

    def _reach(self, info: ToolInfo, refs: dict[str, Ref]) -> list[dict[str, Any]] | None:
        """Seed rows of the tool's table that its linked owners allow (for choosing filter
        values)."""
        if not info.resource or info.resource not in self.seed:
            return None
        rows = self.seed[info.resource]
        cols = set(rows[0]) if rows else set()
        for name, ref in refs.items():
            p = info.params[name]
            col = p.field if p.field in cols else (name if name in cols else None)
            if col is None or ref.ids is None:
                continue
            rows = [r for r in rows if norm(r.get(col)) in ref.ids]
        return rows

    def _elements(self, info: ToolInfo, value: Any, call: int) -> list[Element]:
        els = extract_elements(
            value, info.name, self.schema.tables, call, set(self.schema.keys.values())
        )
        if info.resource:
            for e in els:
                if e.parent is None:
                    e.table = info.resource
                    e.noun = info.noun
        return els


def _empty_page(value: Any) -> bool:
    """True for an envelope whose lists are all empty (``{"messages": [], "has_more": false}``)."""
    return (
        isinstance(value, dict)
        and any(isinstance(v, list) for v in value.values())
        and not any(isinstance(v, list) and v for v in value.values())
    )


def _qual(col: str, op: str, v: Any) -> str:
    from .phrasing import attr, counted, field_words, render  # local: phrasing imports this module
    from .refs import COUNTED_FIELDS

    name = field_words(col)
    ws = words(col)
    date_like = bool(ws) and ws[-1] in ("at", "on", "date", "time", "after", "before")
    if (
        col in COUNTED_FIELDS and isinstance(v, int) and op in ("gte", "lte", "gt", "lt")
    ):  # "with at least 2 nights"
        return (
            "with "
            + {"gte": "at least", "lte": "at most", "gt": "more than", "lt": "fewer than"}[op]
            + " "
            + counted(col, v)
        )
    if op == "gte":
        return (
            f"with {name} on or after {render(v)}"
            if date_like
            else f"with {name} of at least {render(v)}"
        )
    if op == "lte":
        return (
            f"with {name} on or before {render(v)}"
            if date_like
            else f"with {name} of at most {render(v)}"
        )
    if op == "gt":
        return f"with {name} after {render(v)}" if date_like else f"with {name} above {render(v)}"
    if op == "lt":
        return f"with {name} before {render(v)}" if date_like else f"with {name} below {render(v)}"
    if op == "contains":
        return f"whose {name} contains {render(v)}"
    return f"with {attr(col, v)}"
