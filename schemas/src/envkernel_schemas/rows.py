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

import msgspec


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
    """One value's part of :func:`row_key`: equal for two values exactly when their canonical JSON
    is."""
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
    (``json.dumps(canon(...), sort_keys=True)``) is; a tuple of the values costs a fifth of that
    text."""
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


_ENC = msgspec.json.Encoder(order="sorted")


def _canon_cell(v: Any) -> Any:
    """:func:`canon` of one value, without the call for the values it leaves as they are."""
    t = type(v)
    if t is str or v is None or t is bool or (t is int and -(10**10) < v < 10**10):
        return v
    return canon(v)


def table_digest(rows: list[dict[str, Any]], drop: list[str] | tuple[str, ...] = ()) -> str:
    """A digest of a table's rows as a multiset (row and key order ignored, values in canonical
    form, :func:`canon`), the columns ``drop`` (the server's generated ones) left out: two tables
    have the same digest exactly when their rows are equal so. Its first part is the row count."""
    skip = set(drop)
    lines = sorted(
        _ENC.encode({k: _canon_cell(v) for k, v in r.items() if k not in skip}) for r in rows
    )
    h = hashlib.blake2b(b"\n".join(lines), digest_size=12).hexdigest()
    return f"{len(lines)}:{h}"
