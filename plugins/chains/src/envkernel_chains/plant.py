"""Distractor rows planted in a task's initial state: near-duplicates a careless agent would pick.

When a request names a row by its attributes (``my pending order``, ``the event "Standup" in the
calendar "Work"``, ``my order with the highest total``), :func:`distractors` makes 1 to 3 copies
of that row that differ from it in exactly one thing the words say (another status, another owner,
a similar title, the second-highest total close below it; for a question, the value asked about
differs too; a foreign key the chain follows from the target points elsewhere, and unique columns
get fresh values), so the words still pick only the target, while an agent that ignores one part of
them picks a copy and fails the task's check. Each copy is checked against every description in
the chain (it must not match any of them, or beat a superlative); the sampler then replays the
reference chain on the seed plus the copies (:meth:`envkernel_chains.core.GraphSampler.plant`) and
keeps them only when the reference still works, so the task's outputs and outcome are those of
its own initial state. They travel as ``Task.planted``; every episode of the task starts from
the seed plus these rows (the kernel's rollouts and gate, ``envkernel serve``'s reset).
"""

from __future__ import annotations

import datetime as dt
import random
import re
from dataclasses import dataclass
from typing import Any

from envkernel_kit.tools import Schema
from envkernel_schemas import PlantedRow

from .ground import Step
from .refs import STATUS_FIELDS, Ref, is_person, norm, satisfies

__all__ = ["distractors", "described_refs"]

State = dict[str, list[dict[str, Any]]]

_DIGITS = re.compile(r"^(.*?)(\d+)$")
_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2})")
_TITLES = frozenset({"name", "title", "label", "subject", "filename", "product_name", "nickname"})
"""Title columns a near-duplicate may copy with a small change (``"Q3 report (2).pdf"``); never a
person's name."""


def described_refs(steps: list[Step]) -> list[Ref]:
    """Every ``desc`` reference of the chain (targets, arguments, their owners and bases), the
    latest call's first."""
    out: list[Ref] = []
    seen: set[int] = set()

    def add(r: Ref | None) -> None:
        if r is None or id(r) in seen:
            return
        seen.add(id(r))
        if r.kind == "desc" and r.table and r.where:
            out.append(r)
        for x in [r.owner, r.base, *r.more_owners]:
            add(x)

    for s in reversed(steps):
        add(s.target)
        for r in s.refs.values():
            add(r)
    return out


def _shift_time(v: str, days: int) -> str | None:
    m = _STAMP.match(v)
    if m is None:
        return None
    try:
        d = dt.date.fromisoformat(m.group(1)) + dt.timedelta(days=days)
    except ValueError:
        return None
    return d.isoformat() + v[len(m.group(1)) :]


def _near(v: Any, direction: int) -> Any:
    """A value close to ``v``: just below (``direction`` -1) or above (+1)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        step = max(1, abs(v) // 20)
        nv = v + direction * step
        return nv if nv >= 0 or v < 0 else None
    if isinstance(v, float):
        nv = round(v * (1 + 0.04 * direction), 2)
        if nv == v:
            nv = round(v + 0.01 * direction, 2)
        return nv if nv >= 0 or v < 0 else None
    if isinstance(v, str):
        return _shift_time(v, direction)
    return None


def _other_value(
    table: str, col: str, cur: Any, seed: State, schema: Schema, rng: random.Random, person: bool
) -> Any:
    """Another plausible value of ``col`` (for an ``eq`` constraint): another allowed or seen
    status, a similar title, a number nearby."""
    if isinstance(cur, bool):
        return not cur
    if isinstance(cur, (int, float)):
        return _near(cur, 1 if rng.random() < 0.5 else -1)
    if not isinstance(cur, str):
        return None
    allowed = schema.enums.get(table, {}).get(col)
    if allowed or col in STATUS_FIELDS:
        seen = sorted({r.get(col) for r in seed.get(table, []) if isinstance(r.get(col), str)})
        pool = [v for v in (allowed or seen) if isinstance(v, str) and norm(v) != norm(cur)]
        return rng.choice(pool) if pool else None
    if _STAMP.match(cur):
        return _shift_time(cur, rng.choice((-1, 1)))
    if person or col not in _TITLES:
        return None  # a person's name or a free text: no near-duplicate a reader would believe
    return _second_title(cur)


def _second_title(cur: str) -> str:
    """A similar title: ``report (2).pdf`` for a file name with an extension, else ``cur (2)``."""
    stem, dot, ext = cur.rpartition(".")
    if dot and stem and 1 <= len(ext) <= 4 and ext.isalnum():
        return f"{stem} (2).{ext}"
    return f"{cur} (2)"


def _violate(
    row: dict[str, Any],
    c: tuple[str, str, Any],
    table: str,
    seed: State,
    schema: Schema,
    rng: random.Random,
    person: bool,
) -> tuple[str, Any] | None:
    """(column, value) that breaks constraint ``c`` of the words, or None."""
    col, op, v = c
    if not isinstance(col, str) or col not in row:
        return None
    cur = row[col]
    if op == "eq":
        nv = _other_value(table, col, cur, seed, schema, rng, person)
    elif op == "in_set":  # an owner: another owner's row (the same thing, someone else's)
        pool = sorted(
            {
                r.get(col)
                for r in seed.get(table, [])
                if r.get(col) is not None and norm(r.get(col)) not in v
            },
            key=str,
        )
        nv = rng.choice(pool) if pool else None
    elif op in ("gte", "gt"):
        nv = _near(v, -1) if op == "gte" else v
    elif op in ("lte", "lt"):
        nv = _near(v, 1) if op == "lte" else v
    else:
        return None
    if nv is None or norm(nv) == norm(cur):
        return None
    return col, nv


def _fresh_key(table: str, key: str, seed: State, n: int) -> Any:
    """A key no seed row has, in the table's own format (``ord_9001``; the largest integer key +
    101)."""
    vals = [r.get(key) for r in seed.get(table, [])]
    ints = [v for v in vals if isinstance(v, int) and not isinstance(v, bool)]
    if ints and len(ints) == len(vals):
        return max(ints) + 101 + n
    strs = [v for v in vals if isinstance(v, str)]
    if not strs:
        return None
    m = _DIGITS.match(max(strs, key=lambda s: (len(s), s)))
    taken = {norm(v) for v in vals}
    for i in range(n, n + 50):
        cand = f"{m.group(1)}{9001 + i:0{len(m.group(2))}d}" if m else f"{strs[0]}-{i + 2}"
        if norm(cand) not in taken:
            return cand
    return None


def _unique_value(v: Any, n: int) -> Any:
    """A value of a unique column no seed row has (``ann+2@example.com``, ``SKU-9-2``)."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        return v + 1000 + n
    s = str(v)
    if "@" in s:
        local, _, domain = s.partition("@")
        return f"{local}+{n + 2}@{domain}"
    return f"{s}-{n + 2}"


def _clashes(row: dict[str, Any], table: str, refs: list[Ref], seed: State, schema: Schema) -> bool:
    """True when the words of some reference in the chain would also pick ``row`` (it meets all
    their constraints, and for a superlative it ties or beats the row the words name)."""
    key = schema.key(table)
    for r in refs:
        if r.table != table or not all(satisfies(row, c) for c in r.where):
            continue
        if r.best is None:
            return True
        f, how = r.best
        named = next((x for x in seed.get(table, []) if norm(x.get(key)) == norm(r.value)), {})
        mine, theirs = named.get(f), row.get(f)
        try:
            beaten = theirs > mine if how == "max" else theirs < mine
        except TypeError:
            return True
        if beaten or norm(theirs) == norm(mine):
            return True
    return False


def distractors(
    steps: list[Step],
    schema: Schema,
    seed: State,
    rng: random.Random,
    *,
    answered: list[str] | None = None,
    max_rows: int = 3,
) -> list[PlantedRow]:
    """Up to ``max_rows`` near-duplicates of the row the chain's latest description names (see the
    module docstring); none when no description can have one. ``answered``: for a question, the
    facts its answer states (a copy's own values of those differ, so the careless answer is
    wrong)."""
    refs = described_refs(steps)
    persona_tables = {
        r.table
        for s in steps
        for r in [s.target, *s.refs.values()]
        if r is not None and r.kind in ("persona", "literal")
    }
    for ref in refs:
        table = ref.table or ""
        if table in persona_tables:
            continue
        key = schema.key(table)
        row = next((r for r in seed.get(table, []) if norm(r.get(key)) == norm(ref.value)), None)
        if row is None:
            continue
        planter = _Planter(table, key, row, refs, seed, schema, rng, answered or [])
        changes = planter.changes(ref)
        out = planter.copies(changes, _followed(steps, table, key, ref.value, row), max_rows)
        if out:
            return out
    return []


def _followed(
    steps: list[Step], table: str, key: str, value: Any, row: dict[str, Any]
) -> list[str]:
    """The foreign keys the chain follows from the target (``the patient of that appointment``):
    a copy points elsewhere, so the agent that picks it ends up at another row."""
    return sorted(
        {
            lk.field
            for st in steps
            for lk in st.links.values()
            if lk.kind == "fk"
            and lk.element.table == table
            and norm(lk.element.row.get(key)) == norm(value)
            and lk.field in row
        }
    )


@dataclass
class _Planter:
    """Makes the near-duplicates of one row of ``table``."""

    table: str
    key: str
    row: dict[str, Any]
    refs: list[Ref]
    seed: State
    schema: Schema
    rng: random.Random
    answered: list[str]

    def changes(self, ref: Ref) -> list[tuple[str, Any]]:
        """One change per condition of the description (a value that breaks it), and the
        runner-up's value for a superlative, in random order."""
        person = is_person(ref.noun)
        changes: list[tuple[str, Any]] = []
        for c in ref.where:
            ch = _violate(self.row, c, self.table, self.seed, self.schema, self.rng, person)
            if ch is not None and all(ch[0] != x[0] for x in changes):
                changes.append(ch)
        if ref.best is not None and ref.best[0] in self.row:  # the runner-up, close behind
            nv = _near(self.row[ref.best[0]], -1 if ref.best[1] == "max" else 1)
            if nv is not None:
                changes.append((ref.best[0], nv))
        self.rng.shuffle(changes)
        return changes

    def copies(
        self, changes: list[tuple[str, Any]], follows: list[str], max_rows: int
    ) -> list[PlantedRow]:
        """A copy of the row per change, with fresh unique values and other followed rows, kept
        when it clashes with no description and a careless answer from it would be wrong."""
        row, key = self.row, self.key
        out: list[PlantedRow] = []
        for col, nv in changes:
            k = _fresh_key(self.table, key, self.seed, len(out))
            if k is None:
                break
            new, differs = self._twin(col, nv, k, len(out), follows)
            if _clashes(new, self.table, self.refs, self.seed, self.schema):
                continue
            if self.answered and any(
                str(new.get(fc)) == str(fv)
                for fc, fv in row.items()
                if str(fv) in self.answered and fc != key
            ):
                continue  # a careless answer from this copy would still be right: no use
            out.append(
                PlantedRow(
                    table=self.table, row=new, key=key, twin=str(row.get(key)), differs=differs
                )
            )
            if len(out) >= max_rows:
                break
        return out

    def _twin(
        self, col: str, nv: Any, k: Any, n: int, follows: list[str]
    ) -> tuple[dict[str, Any], list[str]]:
        """The ``n``-th copy with key ``k`` and ``col`` set to ``nv``, and the columns it differs
        in."""
        row, key, table, rng = self.row, self.key, self.table, self.rng
        unique = self.schema.unique.get(table, set()) - {key}
        new = dict(row)
        new[key] = k
        new[col] = nv
        differs = [col]
        for u in sorted(unique - {col}):
            new[u] = _unique_value(new.get(u), n)
            if new[u] != row.get(u):
                differs.append(u)
        for fk in follows:
            pool = sorted(
                {
                    r.get(fk)
                    for r in self.seed.get(table, [])
                    if r.get(fk) is not None and norm(r.get(fk)) != norm(row[fk])
                },
                key=str,
            )
            if fk != col and pool:
                new[fk] = rng.choice(pool)
                differs.append(fk)
        for fact in self.answered:  # the value a question asks for differs too
            for fc, fv in row.items():
                if fc in (key, col) or fc in unique or str(fv) != fact:
                    continue
                alt = (
                    _other_value(table, fc, fv, self.seed, self.schema, rng, True)
                    if not isinstance(fv, (int, float))
                    else _near(fv, 1)
                )
                if alt is not None and str(alt) != fact:
                    new[fc] = alt
                    differs.append(fc)
        return new, differs
