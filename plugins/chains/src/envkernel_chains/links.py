"""Entities in tool outputs, and how they fill the parameters of the next tool.

A tool's output is read as *elements*: the objects it returns (one object, or the objects of a
list), each with the entity noun it stands for (``get_order`` returns an ``order``; a list under
an ``items`` key holds ``item`` objects). An element fills a parameter of another tool when
names line up: its ``id`` fills ``<noun>_id`` (or ``id`` of a tool about that noun), its
``customer_id`` fills ``customer_id`` (a foreign key), its ``email`` fills ``email``.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Literal

from envkernel_kit.naming import (
    KEY_LIKE,
    NAME_LIKE,
    id_entity,
    is_id_name,
    match_table,
    singular,
    tool_parts,
    words,
)

GENERIC_KEYS = frozenset(
    {
        "items",
        "results",
        "data",
        "records",
        "rows",
        "entries",
        "list",
        "matches",
        "hits",
        "objects",
        "values",
    }
)
"""Keys of wrapper objects whose list holds the tool's own entities."""
STATUS_LIKE = (
    "status",
    "state",
    "tier",
    "category",
    "type",
    "kind",
    "level",
    "priority",
    "role",
    "plan",
    "stage",
    "genre",
    "department",
    "color",
    "colour",
    "size",
)
"""Columns whose value reads as an adjective (``the pending order``)."""
NUMBER_LIKE = (
    "total",
    "price",
    "amount",
    "quantity",
    "balance",
    "cost",
    "stock",
    "rating",
    "score",
    "count",
    "seats",
    "duration",
)
"""Numeric columns a person would mention."""
TITLE_LIKE = ("name", "full_name", "display_name", "title", "label", "product_name")
"""Columns that read as a proper name (``the product "Desk Lamp"``)."""

_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
_BAD_CHARS = re.compile(r'["\\\x00-\x1f]')


@dataclass(eq=False)
class Element:
    """One object found in a tool's output."""

    call: int
    """Index of the call (in the chain) that returned it."""
    noun: str
    """The entity it stands for, e.g. ``order``."""
    table: str | None
    """The table of that entity, when known."""
    row: dict[str, Any]
    """The object."""
    group: list[dict[str, Any]] | None = None
    """Its siblings (itself included) when it came in a list; None for a single object."""
    position: int = 0
    """Its index in ``group``."""
    parent: Element | None = None
    """The element it is nested in, if any."""


LinkKind = Literal["self", "fk", "key"]


@dataclass(eq=False)
class Link:
    """A parameter filled from an element."""

    element: Element
    """Where the value came from."""
    kind: LinkKind
    """``self``: the element's own id; ``fk``: a foreign key it holds; ``key``: an identifying
    field."""
    entity: str
    """The entity the value identifies (the element's noun, or the foreign key's)."""
    value: Any
    """The value."""


def is_entity(obj: dict[str, Any], keys: Collection[str] = ()) -> bool:
    """True for an object that looks like a row (it has an id, a foreign key, a key-like field or
    one of ``keys``, the tables' own key columns such as Twilio's ``sid``)."""
    return any(is_id_name(k) or k in KEY_LIKE or k in keys for k in obj)


def extract_elements(
    value: Any, tool_name: str, tables: list[str], call: int, keys: Collection[str] = ()
) -> list[Element]:
    """Every element in a tool's output, outermost first (``keys``: the tables' key columns)."""
    _verb, noun, table = tool_parts(tool_name, tables)
    out: list[Element] = []

    def key_noun(
        key: str, cur_noun: str, cur_table: str | None, wrapper: bool
    ) -> tuple[str, str | None]:
        if wrapper and key in GENERIC_KEYS:
            return cur_noun, cur_table
        t = match_table(key, tables)
        return singular("_".join(words(key))), t

    def visit(v: Any, n: str, t: str | None, parent: Element | None, depth: int) -> None:
        if depth > 3:
            return
        if isinstance(v, list):
            rows = [x for x in v if isinstance(x, dict)]
            for i, x in enumerate(rows):
                if is_entity(x, keys):
                    e = Element(
                        call=call, noun=n, table=t, row=x, group=rows, position=i, parent=parent
                    )
                    out.append(e)
                    children(x, e, depth)
        elif isinstance(v, dict):
            if is_entity(v, keys):
                e = Element(call=call, noun=n, table=t, row=v, parent=parent)
                out.append(e)
                children(v, e, depth)
            else:
                for k, sub in v.items():
                    if isinstance(sub, (dict, list)):
                        n2, t2 = key_noun(k, n, t, wrapper=True)
                        visit(sub, n2, t2, parent, depth + 1)

    def children(d: dict[str, Any], e: Element, depth: int) -> None:
        for k, sub in d.items():
            if isinstance(sub, (dict, list)):
                n2, t2 = key_noun(k, e.noun, e.table, wrapper=False)
                visit(sub, n2, t2, e, depth + 1)

    visit(value, noun, table, None, 0)
    return out


def _same_noun(a: str, b: str) -> bool:
    return bool(a) and singular(a) == singular(b)


def link_param(param: str, tool_name: str, e: Element, tables: list[str]) -> Link | None:
    """How element ``e`` fills ``param`` of ``tool_name``, or None."""
    row = e.row
    if param == "id" or words(param) == ["id"]:
        _v, noun, _t = tool_parts(tool_name, tables)
        if _same_noun(noun, e.noun) and row.get("id") is not None:
            return Link(element=e, kind="self", entity=e.noun, value=row["id"])
        return None
    if is_id_name(param):
        ent = id_entity(param)
        if (
            _same_noun(ent, e.noun) or (e.table is not None and match_table(ent, tables) == e.table)
        ) and row.get("id") is not None:
            return Link(element=e, kind="self", entity=e.noun, value=row["id"])
        if row.get(param) is not None and not isinstance(row[param], (dict, list)):
            return Link(element=e, kind="fk", entity=singular(ent), value=row[param])
        return None
    if (
        param in KEY_LIKE
        and row.get(param) is not None
        and not isinstance(row[param], (dict, list))
    ):
        _v, noun, _t = tool_parts(tool_name, tables)
        if _same_noun(noun, e.noun):
            return None  # looking a row up again by its own key is a circle, not a step
        return Link(element=e, kind="key", entity=e.noun, value=row[param])
    return None


def describable(key: str, value: Any) -> bool:
    """True when ``key: value`` can describe a row to a person (short scalar, not an id or a
    timestamp)."""
    if is_id_name(key) or isinstance(value, bool) or value is None:
        return False
    if isinstance(value, str):
        return 0 < len(value) <= 60 and not _BAD_CHARS.search(value) and not _TIMESTAMP.match(value)
    return isinstance(value, (int, float))


def ranked_keys(row: dict[str, Any]) -> list[str]:
    """The row's describable keys, the ones a person would use first."""

    def rank(k: str) -> tuple[int, int]:
        for group, names in enumerate((NAME_LIKE, STATUS_LIKE, NUMBER_LIKE)):
            if k in names:
                return group, names.index(k)
        return 3, 0

    return sorted((k for k, v in row.items() if describable(k, v)), key=rank)


def distinguishing(e: Element) -> list[tuple[str, Any]] | None:
    """At most two ``(key, value)`` pairs that single ``e`` out among its siblings.

    ``[]`` when it needs none (a single object, or a list of one); None when no pair does.
    """
    if e.group is None or len(e.group) <= 1:
        return []
    others = [r for i, r in enumerate(e.group) if i != e.position]
    keys = ranked_keys(e.row)
    for k in keys:
        if all(o.get(k) != e.row[k] for o in others):
            return [(k, e.row[k])]
    for a, b in combinations(keys[:6], 2):
        if all((o.get(a), o.get(b)) != (e.row[a], e.row[b]) for o in others):
            return [(a, e.row[a]), (b, e.row[b])]
    return None
