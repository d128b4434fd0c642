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
    last = (
        next((e for e in steps[-1].elements if e.parent is None and e.table), None)
        if steps
        else None
    )
    if last is None or last.table not in seed_state:
        return []
    expected = {x.lower() for x in facts} | {x.lower() for r in rows for x in r}
    returned = [
        e.row for s in steps for e in s.elements if e.parent is None and e.table == last.table
    ]
    columns = _named_columns(returned, expected)
    if not columns:
        return []
    seen = {str(r["id"]) for r in returned if "id" in r}
    out: dict[str, None] = {}
    for row in seed_state[last.table]:
        if "id" not in row or str(row["id"]) in seen:
            continue
        for k in columns:
            t = _value(row.get(k))
            if t and not any(t.lower() in x or x in t.lower() for x in expected):
                out[t] = None
    return list(out)


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
