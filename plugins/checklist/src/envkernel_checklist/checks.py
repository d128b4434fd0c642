"""Checks derived from a task's Outcome, as pure functions (no kernel, no I/O).

A task's checklist has two kinds of checks:

- **credit checks** — what the task asks for. Each one that passes earns credit:

  - a task that changes state: one check per expected *row change*, per table. The expected
    change of a table is the multiset difference between ``initial_state`` and
    ``expected_state`` (generated columns are already absent from both, and the final rows are
    projected on the expected columns, so ids and timestamps the server makes never count).
    Rows that disappear are paired with rows that appear into *changed* rows (same key column,
    else the most equal columns); what is left is *inserted* or *deleted* rows:

    - ``changed``: the new version is there and the old one is gone (each exactly as many
      times as expected);
    - ``inserted``: the new row is there exactly as many times as expected;
    - ``deleted``: the old row is there only as many times as expected (usually none);

  - a read-only task: one check per answer fact (numbers within a tolerance), one per expected
    row (its values said with its label), one for the order when the request asks for one
    (:mod:`envkernel_kit.answers`);

- **guard checks** — that nothing else happened: per changed table, every row the task does not
  touch is unchanged and no unexpected row appeared; every other table is as it was
  (``Outcome.unchanged``, by digest); a read-only rollout looked up the rows its answer is about
  (:func:`envkernel_kit.scoring.observed`); the answer is not the tools' raw JSON; a read-only
  answer says no value of the rows it was not asked for (precision). The last four are *fatal*:
  one failing makes the score 0 (a change nobody asked for, or an answer that lists every row
  where some were asked for, fails the task). Guards
  never earn credit; another failing guard only adds to the denominator. Without this, an agent
  that did nothing would earn the guards' share (τ²-bench's "do-nothing scores above 0"); with
  it, doing nothing scores exactly 0 and the reference scores exactly 1, so the checklist can
  drive the kernel's task gate.

``score = passed credit checks / (credit checks + failed guard checks)``: partial credit, as in
EnvScaler, in [0, 1].

Optional (``strict_calls``): one more guard, "every tool call succeeded and no call was
malformed". It is off by default because looking something up that turns out not to exist, then
recovering, is legitimate exploration; process quality is what the trace part and the format
penalty of ``traceoutcome`` measure.

Tables the reference chain does not change are checked by their digests in
``Outcome.unchanged`` (a task without them, made by hand or before they existed, leaves them
unchecked; the same holds for ``traceoutcome``).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from envkernel_kit.answers import answer_units
from envkernel_kit.policy import policy_outcome
from envkernel_kit.scoring import observed, unasked_changes
from envkernel_schemas import Outcome, State, Task, Trajectory
from envkernel_schemas.rows import canon, columns, row_key

FATAL = ("unasked", "observed", "dump", "precision")
"""Guards whose failure makes the score 0: a change the request did not ask for (a table outside
the expected ones that changed), a read-only answer about rows the rollout never looked up, and an
answer that is the tools' raw JSON."""


@dataclass(frozen=True)
class Check:
    """One check and its result."""

    kind: str
    """``changed``, ``inserted``, ``deleted``, ``fact``, ``row``, ``order``, ``unchanged`` (guard),
    ``precision`` (guard), ``calls`` (guard), or the fatal guards ``unasked``, ``observed`` and
    ``dump``."""
    table: str
    """The table (empty for facts and calls)."""
    description: str
    """What is checked, for reasons."""
    passed: bool
    """Whether it passed."""
    detail: str = ""
    """What was found when it failed."""

    @property
    def guard(self) -> bool:
        """Guards only ever cost credit."""
        return self.kind in ("unchanged", "calls", "precision", *FATAL)

    @property
    def fatal(self) -> bool:
        """A failed fatal guard makes the score 0 (see :data:`FATAL`)."""
        return self.kind in FATAL


def _show(row: dict[str, Any], limit: int = 160) -> str:
    s = json.dumps(row, ensure_ascii=False, sort_keys=True, default=str)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _key_column(cols: list[str], old: list[dict[str, Any]], new: list[dict[str, Any]]) -> str:
    """A column that identifies rows in both lists (``id`` first), or ""."""
    for c in sorted(cols, key=lambda c: (c != "id", not c.endswith("id"), cols.index(c))):
        for rows in (old, new):
            vals = [json.dumps(canon(r.get(c)), sort_keys=True) for r in rows]
            if any(r.get(c) is None for r in rows) or len(set(vals)) != len(vals):
                break
        else:
            return c
    return ""


def pair_changes(
    cols: list[str], removed: list[dict[str, Any]], added: list[dict[str, Any]]
) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Pair removed with added rows into changes; return (changes, deleted, inserted).

    By a key column when one identifies rows on both sides, else greedily by the number of equal
    columns (at least half of them), ties broken by order, so the result is deterministic.
    """
    key = _key_column(cols, removed, added)
    changes: list[tuple[dict[str, Any], dict[str, Any]]] = []
    left = list(range(len(added)))
    deleted: list[dict[str, Any]] = []
    if key:
        by_key = {json.dumps(canon(a.get(key)), sort_keys=True): j for j, a in enumerate(added)}
        for r in removed:
            j = by_key.pop(json.dumps(canon(r.get(key)), sort_keys=True), None)
            if j is None:
                deleted.append(r)
            else:
                changes.append((r, added[j]))
                left.remove(j)
        return changes, deleted, [added[j] for j in left]
    for r in removed:
        best, best_eq = None, 0
        for j in left:
            eq = sum(canon(r.get(c)) == canon(added[j].get(c)) for c in cols)
            if eq > best_eq:
                best, best_eq = j, eq
        if best is not None and best_eq * 2 >= len(cols) and best_eq < len(cols):
            changes.append((r, added[best]))
            left.remove(best)
        else:
            deleted.append(r)
    return changes, deleted, [added[j] for j in left]


class _TableDiff:
    """One changed table's rows counted at the start, as expected and at the end (projected on the
    expected columns), and the check of each part of its change."""

    def __init__(
        self,
        table: str,
        initial: list[dict[str, Any]],
        expected: list[dict[str, Any]],
        final: list[dict[str, Any]] | None,
    ) -> None:
        self.table, self.cols = table, columns(expected, initial)
        self.present = final is not None
        self.missing = "" if self.present else f"table {table!r} is missing from the final state"
        self.init_c = Counter(row_key(r, self.cols) for r in initial)
        self.exp_c = Counter(row_key(r, self.cols) for r in expected)
        self.fin_c = Counter(row_key(r, self.cols) for r in final or [])
        rows = {
            row_key(r, self.cols): {k: r.get(k) for k in self.cols} for r in [*initial, *expected]
        }
        self.removed = [rows[k] for k, n in (self.init_c - self.exp_c).items() for _ in range(n)]
        self.added = [rows[k] for k, n in (self.exp_c - self.init_c).items() for _ in range(n)]

    def count(self, row: dict[str, Any]) -> int:
        """How often ``row`` is in the final state."""
        return self.fin_c[row_key(row, self.cols)]

    def want(self, row: dict[str, Any]) -> int:
        """How often ``row`` is in the expected state."""
        return self.exp_c[row_key(row, self.cols)]

    def _found(self, row: dict[str, Any]) -> tuple[bool, str]:
        ok = self.present and self.count(row) == self.want(row)
        return ok, "" if ok else self.missing or f"found {self.count(row)}x, want {self.want(row)}"

    def changed(self, old: dict[str, Any], new: dict[str, Any]) -> Check:
        """A row changed: its new version there as often as expected, its old one as well."""
        diff = {c: new.get(c) for c in self.cols if canon(old.get(c)) != canon(new.get(c))}
        ok = (
            self.present and self.count(new) == self.want(new) and self.count(old) == self.want(old)
        )
        why = (
            self.missing
            or f"new version found {self.count(new)}x (want {self.want(new)}), old version found "
            f"{self.count(old)}x (want {self.want(old)})"
        )
        what = f"{self.table}: row {_show(old)} changes to {_show(diff)}"
        return Check("changed", self.table, what, ok, "" if ok else why)

    def inserted(self, new: dict[str, Any]) -> Check:
        """A row added: it exists."""
        ok, why = self._found(new)
        return Check("inserted", self.table, f"{self.table}: row {_show(new)} exists", ok, why)

    def deleted(self, old: dict[str, Any]) -> Check:
        """A row removed: it is gone."""
        ok, why = self._found(old)
        return Check("deleted", self.table, f"{self.table}: row {_show(old)} is gone", ok, why)

    def guard(self) -> Check:
        """The guard: no row the request left alone changed, none appeared."""
        touched = {row_key(r, self.cols) for r in self.removed + self.added}
        keep_exp = Counter({k: n for k, n in self.exp_c.items() if k not in touched})
        keep_fin = Counter({k: n for k, n in self.fin_c.items() if k not in touched})
        ok = self.present and keep_exp == keep_fin
        if ok or not self.present:
            detail = self.missing
        else:
            lost, extra = sum((keep_exp - keep_fin).values()), sum((keep_fin - keep_exp).values())
            detail = f"{lost} untouched row(s) changed or gone, {extra} unexpected row(s)"
        return Check("unchanged", self.table, f"{self.table}: no other row changed", ok, detail)


def table_checks(
    table: str,
    initial: list[dict[str, Any]],
    expected: list[dict[str, Any]],
    final: list[dict[str, Any]] | None,
) -> list[Check]:
    """The credit checks and the guard of one changed table."""
    d = _TableDiff(table, initial, expected, final)
    changes, deleted, inserted = pair_changes(d.cols, d.removed, d.added)
    checks = [d.changed(old, new) for old, new in changes]
    checks += [d.inserted(new) for new in inserted]
    checks += [d.deleted(old) for old in deleted]
    return [*checks, d.guard()]


def state_checks(initial: State, expected: State, final: State) -> list[Check]:
    """Checks of a state-changing task: row changes per table, then one guard per table."""
    out: list[Check] = []
    for table, rows in expected.items():
        out.extend(table_checks(table, initial.get(table, []), rows, final.get(table)))
    return out


def fact_checks(facts: list[str], answer: str) -> list[Check]:
    """Checks of a read-only task's answer facts (see :func:`answer_checks`)."""
    return answer_checks(Outcome(mutates=False, answer_facts=facts), answer)


def answer_checks(outcome: Outcome, answer: str) -> list[Check]:
    """Checks of a read-only task: one per fact, per expected row and for the order asked for, and
    the precision guard (the answer says nothing of rows not asked for), from
    :mod:`envkernel_kit.answers`."""
    return [
        Check(u.kind, "", u.description, u.passed, u.detail)
        for u in answer_units(outcome, answer or "")
    ]


def call_check(trajectory: Trajectory) -> Check:
    """Guard: every tool call succeeded and no call was malformed."""
    failed = [c.call.name for c in trajectory.calls if not c.result.ok]
    ok = not failed and trajectory.format_errors == 0
    detail = (
        ""
        if ok
        else f"{len(failed)} failed call(s) {failed[:5]}, {trajectory.format_errors} malformed "
        "call(s)"
    )
    return Check("calls", "", "every tool call succeeded and none was malformed", ok, detail)


def checklist(task: Task, trajectory: Trajectory, *, strict_calls: bool = False) -> list[Check]:
    """Every check of ``task`` evaluated on ``trajectory``."""
    o = task.outcome
    if o.mutates:
        checks = state_checks(o.initial_state, o.expected_state, trajectory.final_state)
    elif o.expects:  # a refusal or confirmation under the domain policy: one credit check
        ok, why = policy_outcome(o, trajectory.final_answer)
        what = (
            "declines and says an administrator can"
            if o.expects == "refusal"
            else "asks to confirm"
        )
        checks = [Check("fact", "", f"the answer {what}", ok == 1.0, "; ".join(why))]
    else:
        checks = answer_checks(o, trajectory.final_answer)
    for why in unasked_changes(o, trajectory.final_state):
        checks.append(
            Check("unasked", "", "nothing changed that the request did not ask for", False, why)
        )
    seen, blind = observed(task, trajectory)
    if not seen:
        checks.append(
            Check("observed", "", "the rollout looked up what the answer is about", False, blind)
        )
    if strict_calls:
        checks.append(call_check(trajectory))
    return checks


def fraction(checks: list[Check]) -> tuple[float, int, int]:
    """(score, passed credit checks, denominator) — see the module docstring."""
    credit = [c for c in checks if not c.guard]
    passed = sum(c.passed for c in credit)
    denom = len(credit) + sum(1 for c in checks if c.guard and not c.passed)
    if any(c.fatal and not c.passed for c in checks):
        return 0.0, passed, denom
    return (passed / denom if denom else 0.0), passed, denom
