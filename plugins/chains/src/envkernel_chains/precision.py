"""What a precise answer to a read-only question leaves out, taken from the environment's start.

A filtered lookup (``list_travelers(loyalty_tier=silver)``) returns only the rows the user asked
about, so the rows a lazy agent could dump instead (every traveler, from an unfiltered list) are
not in any output of the chain. They are in the seed state: the other rows of the table the
question is about. Their values in the columns the expected answer names (a traveler's name and
email) are what an answer must not say (``Outcome.answer_absent``); the gate's stuffed mutant
says them, so the guard is tested on every task.
"""

from __future__ import annotations

from typing import Any

from envkernel_kit.answers import is_number

from .ground import Step
from .phrasing import fact_ok, fact_text

State = dict[str, list[dict[str, Any]]]


def unasked_values(
    steps: list[Step], seed_state: State, facts: list[str], rows: list[list[str]]
) -> list[str]:
    """Values of the seed rows the chain's last lookup did not return, in the columns its expected
    answer names, that no expected value contains (numbers left out: said by chance too easily)."""
    table = _asked_table(steps)
    if table is None or table not in seed_state:
        return []
    expected = {x.lower() for x in facts} | {x.lower() for r in rows for x in r}
    returned = [e.row for s in steps for e in s.elements if e.parent is None and e.table == table]
    columns = _named_columns(returned, expected)
    out: dict[str, None] = {}
    for t in (_value(row.get(k)) for row in _others(seed_state[table], returned) for k in columns):
        if t and not _covered(t, expected):
            out[t] = None
    return list(out)


def _others(rows: list[dict[str, Any]], returned: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows (with an id) that are not among the ``returned`` ones."""
    seen = {str(r["id"]) for r in returned if "id" in r}
    return [r for r in rows if "id" in r and str(r["id"]) not in seen]


def _covered(value: str, expected: set[str]) -> bool:
    """True when ``value`` is in an expected value or holds one (saying it may be saying that)."""
    low = value.lower()
    return any(low in x or x in low for x in expected)


def _asked_table(steps: list[Step]) -> str | None:
    """The table of the rows the chain's last call returned (None: no rows of a known table)."""
    if not steps:
        return None
    return next((e.table for e in steps[-1].elements if e.parent is None and e.table), None)


def _named_columns(returned: list[dict[str, Any]], expected: set[str]) -> list[str]:
    """The columns whose value in some returned row is an expected value of the answer."""
    names: dict[str, None] = {}
    for row in returned:
        for k, v in row.items():
            t = _value(v)
            if t and t.lower() in expected:
                names[k] = None
    return list(names)


def _value(v: Any) -> str:
    """``v`` as a checkable non-numeric fact, or empty."""
    if not fact_ok(v):
        return ""
    t = fact_text(v)
    return "" if is_number(t) else t
