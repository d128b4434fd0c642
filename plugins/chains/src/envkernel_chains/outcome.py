"""State diffs: which tables a chain changed, with the columns the server generates removed."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from envkernel_schemas import Outcome

State = dict[str, list[dict[str, Any]]]


def strip(
    rows: list[dict[str, Any]], generated: list[str] | tuple[str, ...]
) -> list[dict[str, Any]]:
    """Rows without the generated columns."""
    drop = set(generated)
    return [{k: v for k, v in r.items() if k not in drop} for r in rows]


def _canon(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, dict):
        return {k: _canon(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_canon(x) for x in v]
    return v


def row_key(row: dict[str, Any]) -> Any:
    """A canonical, hashable form of a row (key order and ``2`` vs ``2.0`` do not matter)."""
    try:
        return tuple(
            sorted((k, v) for k, v in row.items() if not isinstance(v, (dict, list)))
        ) + tuple(
            (k, json.dumps(_canon(v), sort_keys=True, default=str))
            for k, v in sorted(row.items())
            if isinstance(v, (dict, list))
        )
    except TypeError:
        return json.dumps(_canon(row), sort_keys=True, ensure_ascii=False, default=str)


def same_rows(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    """True when two row lists are equal as multisets."""
    return Counter(map(row_key, a)) == Counter(map(row_key, b))


def changed_tables(
    before: State,
    after: State,
    generated: dict[str, list[str]],
    known: dict[str, Counter[Any]] | None = None,
) -> list[str]:
    """Tables whose rows differ once generated columns are removed, in ``after``'s order.
    ``known``: the multisets of ``before``'s tables, filled as they are counted (pass the same dict
    for the same ``before``, e.g. the seed state, and each of its tables is counted once)."""
    names = list(after) + [t for t in before if t not in after]
    out = []
    for t in names:
        g = generated.get(t, [])
        was = known.get(t) if known is not None else None
        if was is None:
            was = Counter(map(row_key, strip(before.get(t, []), g)))
            if known is not None:
                known[t] = was
        if was != Counter(map(row_key, strip(after.get(t, []), g))):
            out.append(t)
    return out


def state_outcome(
    before: State,
    after: State,
    generated: dict[str, list[str]],
    known: dict[str, Counter[Any]] | None = None,
) -> Outcome | None:
    """The Outcome of a chain that changed state, or None when nothing (observable) changed
    (``known``: see :func:`changed_tables`)."""
    tables = changed_tables(before, after, generated, known)
    if not tables:
        return None
    return Outcome(
        mutates=True,
        expected_state={t: strip(after.get(t, []), generated.get(t, [])) for t in tables},
        initial_state={t: strip(before.get(t, []), generated.get(t, [])) for t in tables},
    )
