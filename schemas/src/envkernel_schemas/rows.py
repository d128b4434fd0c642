"""Comparing table rows (``State`` values) the same way everywhere: reward models, checks, tests.

Pure functions, no I/O: values in canonical form (numbers to 10 significant digits, ``2.0 == 2``),
rows projected on chosen columns and turned into hashable keys, so multisets of rows compare
with ``collections.Counter``.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any


def canon(v: Any) -> Any:
    """Canonical form for comparing values: numbers to 10 significant digits, 2.0 == 2."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        f = float(v)
        if math.isfinite(f):
            r = float(f"{f:.10g}")
            return int(r) if r.is_integer() else r
        return repr(f)
    if isinstance(v, dict):
        return {k: canon(x) for k, x in v.items()}
    if isinstance(v, list):
        return [canon(x) for x in v]
    return str(v)


def _cell(v: Any) -> Any:
    """One value's part of :func:`row_key`: equal for two values exactly when their canonical JSON is."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, bool):
        return (v,)  # True must not equal 1
    if isinstance(v, (int, float)):
        return canon(v)
    if isinstance(v, (dict, list)):
        return ("json", json.dumps(canon(v), sort_keys=True, ensure_ascii=False))
    return str(v)


def row_key(row: dict[str, Any], cols: list[str]) -> tuple[Any, ...]:
    """A hashable key of ``row`` projected on ``cols`` (a missing column counts as ``None``).

    Two rows' keys (on the same ``cols``) are equal exactly when their projections' canonical JSON
    (``json.dumps(canon(...), sort_keys=True)``) is; a tuple of the values costs a fifth of that text."""
    return tuple(_cell(row.get(k)) for k in cols)


def columns(*tables: list[dict[str, Any]]) -> list[str]:
    """Columns of the first non-empty list of rows (in order of appearance)."""
    for rows in tables:
        if rows:
            cols: list[str] = []
            for r in rows:
                for k in r:
                    if k not in cols:
                        cols.append(k)
            return cols
    return []


def table_digest(rows: list[dict[str, Any]], drop: list[str] | tuple[str, ...] = ()) -> str:
    """A digest of a table's rows as a multiset (row and key order ignored, values in canonical
    form), the columns ``drop`` (the server's generated ones) left out: two tables have the same
    digest exactly when their rows are equal so. Its first part is the row count."""
    skip = set(drop)
    lines = sorted(
        json.dumps(
            canon({k: v for k, v in r.items() if k not in skip}),
            sort_keys=True,
            ensure_ascii=False,
            default=str,
        )
        for r in rows
    )
    h = hashlib.blake2b("\n".join(lines).encode(), digest_size=12).hexdigest()
    return f"{len(lines)}:{h}"
