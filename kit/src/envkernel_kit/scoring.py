"""The outcome reward (with an optional trace term), as pure functions (no kernel, no I/O): the
``traceoutcome`` reward model and ``envkernel serve`` (a session's reward) both score with it.

``score = max(0, τ·trace + (1−τ)·outcome − length_penalty − format_penalty)``, clamped to [0, 1];
τ is 0 by default, so the score is the outcome: any path to the right end state and answer scores 1.

- **outcome** is checked over the whole state. Every table the reference changed
  (``expected_state``) must equal its expected rows as a multiset, projected on their columns (the
  columns the server generates are already left out of the expectation); every other table
  (``Outcome.unchanged``, all of them for a read-only task) must be as it was, by its digest
  (generated columns left out). Any change the request did not ask for makes the outcome 0. A
  task that changes state then scores 1 exactly when the state is right; short of it, its outcome
  is the share of the request's row changes made (:func:`changes_done`; each row added or removed
  one part, a changed row its old version gone and its new one there), 0 when a row is wrong or
  not asked for (``partial=False``: all or nothing). Partial credit is only ever over what the
  request asked for, never for the calls made. A read-only task's
  outcome is the share of the expected answer its final answer states (facts, a count or total as
  the number the answer states, every row with its values, the order when asked for;
  :mod:`envkernel_kit.answers`), 0 when it also says rows not asked for or is a raw dump of the
  tools' JSON, and 0 when the rollout never saw what the answer is about: the rows (or value) of
  the reference's last lookup must be among the results of the rollout's successful calls (any
  tool, any order, so another path to the same data counts; a guess without a lookup does not).
- **trace** (a diagnostic, in the score only with τ > 0, for warm-up curricula): the *fraction*
  of reference calls matched by successful trajectory calls with the same name and equal
  arguments after normalisation (key order ignored, ``null`` arguments treated as absent, numbers
  equal within a relative tolerance, strings stripped and case-sensitive). Each trajectory call
  matches at most one reference call, in any order (a maximum bipartite matching).
- **length penalty**: ``length_step`` per call beyond the reference's length, capped at ``cap``.
- **format penalty**: ``format_step`` per format error, capped at ``cap``.
- **question cost**: ``question_step`` per question the user answered beyond what the task holds
  back (``Task.hidden``), capped at ``cap`` (:func:`needless_questions`; in ``reasons``, and in
  the score, not a field of its own).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

from envkernel_kit.answers import answer_score, envelope_key, result_rows
from envkernel_kit.deprecation import deprecated_alias
from envkernel_kit.policy import policy_outcome
from envkernel_schemas import CallRecord, Outcome, Reward, State, Task, ToolCall, Trajectory
from envkernel_schemas.rows import columns, row_key, table_digest

REL_TOL = 1e-6
"""Default relative tolerance for numbers in arguments."""


def _numbers_equal(a: float, b: float, rel_tol: float) -> bool:
    return not (math.isnan(a) or math.isnan(b)) and math.isclose(
        a, b, rel_tol=rel_tol, abs_tol=1e-12
    )


def _dicts_equal(a: dict[str, Any], b: dict[str, Any], rel_tol: float) -> bool:
    da = {k: v for k, v in a.items() if v is not None}
    db = {k: v for k, v in b.items() if v is not None}
    return da.keys() == db.keys() and all(values_equal(da[k], db[k], rel_tol) for k in da)


def _lists_equal(a: list[Any], b: list[Any], rel_tol: float) -> bool:
    return len(a) == len(b) and all(values_equal(x, y, rel_tol) for x, y in zip(a, b, strict=True))


_EQUAL_BY_TYPE: tuple[tuple[type | tuple[type, ...], Any], ...] = (
    ((int, float), _numbers_equal),
    (str, lambda a, b, rel_tol: a.strip() == b.strip()),
    (dict, _dicts_equal),
    (list, _lists_equal),
)
"""How two values of one kind are compared (booleans apart: they are never numbers)."""


def values_equal(a: Any, b: Any, rel_tol: float = REL_TOL) -> bool:
    """Equality after normalisation: dict key order and ``null`` members ignored, numbers within
    ``rel_tol``, strings stripped (case-sensitive), booleans distinct from numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    for kind, equal in _EQUAL_BY_TYPE:
        if isinstance(a, kind) and isinstance(b, kind):
            return bool(equal(a, b, rel_tol))
    return bool(a == b)


def call_matches(ref: ToolCall, rec: CallRecord, rel_tol: float = REL_TOL) -> bool:
    """True when a successful recorded call has the reference's name and arguments."""
    return (
        rec.result.ok
        and rec.call.name == ref.name
        and values_equal(ref.arguments, rec.call.arguments, rel_tol)
    )


def match_calls(
    reference: list[ToolCall], calls: list[CallRecord], rel_tol: float = REL_TOL
) -> list[int | None]:
    """For each reference call, the index of the trajectory call matched to it (or None).

    A maximum one-to-one matching (augmenting paths), so the order of calls does not matter.
    """
    edges = [
        [j for j, rec in enumerate(calls) if call_matches(ref, rec, rel_tol)] for ref in reference
    ]
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(reference)):
        augment(i, set())
    out: list[int | None] = [None] * len(reference)
    for j, i in owner.items():
        out[i] = j
    return out


def table_matches(
    expected: list[dict[str, Any]], initial: list[dict[str, Any]], final: list[dict[str, Any]]
) -> tuple[bool, str]:
    """Compare one table's final rows with the expected ones (multisets, projected on the expected
    columns)."""
    cols = columns(expected, initial)
    got = Counter(row_key(r, cols) for r in final)
    want = Counter(row_key(r, cols) for r in expected)
    if got == want:
        return True, ""
    missing = sum((want - got).values())
    extra = sum((got - want).values())
    return (
        False,
        f"expected {len(expected)} rows, got {len(final)} ({missing} expected rows missing, "
        f"{extra} unexpected)",
    )


def expected_state_match(expected: State, initial: State, final: State) -> tuple[float, list[str]]:
    """1.0 when every expected table matches the final state, else 0.0; with reasons."""
    if not expected:
        return 0.0, ["outcome: the task expects a state change but lists no expected tables"]
    reasons = []
    for table, rows in expected.items():
        if table not in final:
            reasons.append(f"outcome: table {table!r} is missing from the final state")
            continue
        ok, why = table_matches(rows, initial.get(table, []), final[table])
        if not ok:
            reasons.append(f"outcome: table {table!r} differs: {why}")
    return (0.0 if reasons else 1.0), reasons


def changes_done(expected: State, initial: State, final: State) -> tuple[float, list[str]]:
    """The share of the request's changes the final state shows (partial credit over what the user
    asked for, never for calls): each row the request adds to a table, and each row it removes
    (a changed row is its old version gone and its new one there), is one part. 0.0 when the final
    state holds a row that is neither expected nor a part still undone, or lacks a row the request
    left alone (a change not asked for: a wrong value, an extra row, another row changed in the
    expected one's place); 1.0 exactly when every expected table matches."""
    exact, reasons = expected_state_match(expected, initial, final)
    if exact == 1.0 or not expected:
        return exact, reasons
    parts = done = 0
    for table, rows in expected.items():
        cols = columns(rows, initial.get(table, []))
        want = Counter(row_key(r, cols) for r in rows)
        init = Counter(row_key(r, cols) for r in initial.get(table, []))
        got = Counter(row_key(r, cols) for r in final.get(table, []))
        add, remove = want - init, init - want
        if got - want - remove:
            return 0.0, [*reasons, f"outcome: table {table!r} has rows the request did not ask for"]
        if (init - got) - remove:  # a row changed or removed that the request left alone
            return 0.0, [*reasons, f"outcome: table {table!r} lost rows the request did not touch"]
        parts += sum(add.values()) + sum(remove.values())
        done += sum((add & (got - init)).values()) + sum((remove & (init - got)).values())
    share = done / parts if parts else 0.0
    return share, [*reasons, f"outcome: {done} of {parts} requested row changes made"]


def unasked_changes(outcome: Outcome, final: State) -> list[str]:
    """Reasons, one per table that changed though the request did not ask for it: a table of
    ``outcome.unchanged`` whose rows (generated columns left out) differ from the initial ones, or
    a table that was not there at all and now has rows. None when ``unchanged`` is empty (not
    recorded)."""
    if not outcome.unchanged:
        return []
    reasons = []
    for table, want in outcome.unchanged.items():
        got = table_digest(final.get(table, []), outcome.generated.get(table, []))
        if got != want:
            n_want, n_got = want.partition(":")[0], got.partition(":")[0]
            reasons.append(
                f"outcome: table {table!r} changed though the request did not ask for it"
                f" ({n_got} rows, {n_want} before)"
            )
    for table, rows in final.items():
        if rows and table not in outcome.unchanged and table not in outcome.expected_state:
            reasons.append(
                f"outcome: table {table!r} appeared though the request did not ask for it"
            )
    return reasons


def _row_covers(seen: dict[str, Any], want: dict[str, Any], rel_tol: float) -> bool:
    common = [k for k in want if k in seen]
    if "id" in want:
        if "id" not in seen:
            return False
    elif len(common) * 2 < len(want) or not common:
        return False
    return all(values_equal(seen[k], want[k], rel_tol) for k in common)


def _seen_rows(value: Any) -> list[dict[str, Any]]:
    rows = result_rows(value)
    if isinstance(value, dict) and envelope_key(value) is None:
        rows = [*rows, value, *(v for v in value.values() if isinstance(v, dict))]
    return rows


_BLIND = "outcome: the rollout never looked up what the answer is about"


def _value_seen(want: Any, seen: list[dict[str, Any]], rel_tol: float) -> tuple[bool, str]:
    """Whether a value (not rows) the answer is about is a member of a row the rollout saw."""
    if isinstance(want, (list, dict)):
        return False, _BLIND
    if any(values_equal(want, x, rel_tol) for r in seen for x in r.values()):
        return True, ""
    return False, _BLIND


def _rows_seen(
    rows: list[dict[str, Any]], seen: list[dict[str, Any]], rel_tol: float
) -> tuple[bool, str]:
    """Whether every row the answer is about is covered by a row the rollout saw (by its id when
    it has one, else by any)."""
    by_id: dict[str, list[dict[str, Any]]] = {}
    for r in seen:
        by_id.setdefault(str(r.get("id")), []).append(r)
    missing = sum(
        not any(
            _row_covers(r, w, rel_tol) for r in (by_id.get(str(w["id"]), []) if "id" in w else seen)
        )
        for w in rows
    )
    if missing:
        return False, (
            f"outcome: the rollout never looked up {missing} of the {len(rows)} rows"
            " the answer is about"
        )
    return True, ""


def observed(task: Task, trajectory: Trajectory, rel_tol: float = REL_TOL) -> tuple[bool, str]:
    """Whether a read-only rollout saw what its answer is about: every row of the reference's last
    result (or that value) is among the results of the rollout's successful calls, by any tool (a
    row is seen when a result has a row with its id and the same values in the columns both
    have). True, with no reason, for a task that changes state; for a task with no recorded
    outputs, true when the rollout made a successful call at all (a guess with none is not a
    lookup)."""
    if task.outcome.mutates:
        return True, ""
    if not task.outputs:
        if not task.calls or any(rec.result.ok for rec in trajectory.calls):
            return True, ""
        return False, "outcome: the rollout looked nothing up (no successful call)"
    want = task.outputs[-1]
    results = [rec.result.value for rec in trajectory.calls if rec.result.ok]
    if any(values_equal(want, v, rel_tol) for v in results):
        return True, ""
    rows = result_rows(want) or ([want] if isinstance(want, dict) else [])
    seen = [r for v in results for r in _seen_rows(v)]
    return _rows_seen(rows, seen, rel_tol) if rows else _value_seen(want, seen, rel_tol)


def facts_outcome(facts: list[str], answer: str) -> tuple[float, list[str]]:
    """The share of answer facts contained in the answer (see :mod:`envkernel_kit.answers`); with
    reasons."""
    return answer_score(Outcome(mutates=False, answer_facts=facts), answer)


def tau_at(tau: float, tau_final: float | None, tau_iterations: int, iteration: int) -> float:
    """τ at ``iteration``: constant ``tau``, or linear from ``tau`` (iteration 0) to ``tau_final``
    (iteration ``tau_iterations − 1`` and after). With ``tau_iterations`` ≤ 1, ``tau_final``
    applies from iteration 1."""
    if tau_final is None:
        return tau
    if tau_iterations <= 1:
        progress = 1.0 if iteration >= 1 else 0.0
    else:
        progress = min(1.0, max(0.0, iteration / (tau_iterations - 1)))
    return tau + (tau_final - tau) * progress


def questions_asked(messages: list[dict[str, Any]]) -> int:
    """The agent's questions the user answered: assistant turns that ask (a ``?``, no tool call)
    and are followed by a user turn. A question left as the final answer (a confirmation asked
    for) is not one of them."""
    n = 0
    for m, nxt in zip(messages, messages[1:], strict=False):
        content = m.get("content")
        if (
            m.get("role") == "assistant"
            and not m.get("tool_calls")
            and isinstance(content, str)
            and "?" in content
            and nxt.get("role") == "user"
        ):
            n += 1
    return n


def needless_questions(task: Task, trajectory: Trajectory) -> int:
    """Questions beyond what the task's user holds back (one per ``Task.hidden`` item)."""
    return max(0, questions_asked(trajectory.messages) - len(task.hidden))


def _fmt_call(c: ToolCall) -> str:
    return f"{c.name}({json.dumps(c.arguments, sort_keys=True, ensure_ascii=False, default=str)})"


def score(
    task: Task,
    trajectory: Trajectory,
    *,
    tau: float = 0.0,
    length_step: float = 0.05,
    format_step: float = 0.05,
    cap: float = 0.5,
    rel_tol: float = REL_TOL,
    model: str = "",
    partial: bool = True,
    question_step: float = 0.05,
) -> Reward:
    """Score one trajectory on one task (see the module docstring); ``partial`` False makes a
    write task's outcome all or nothing."""
    reasons: list[str] = []
    ref = task.calls
    matched = match_calls(ref, trajectory.calls, rel_tol)
    n_matched = sum(m is not None for m in matched)
    trace = n_matched / len(ref) if ref else 1.0
    if n_matched < len(ref) and tau > 0:  # with τ 0 the trace costs nothing: Reward.trace says it
        unmatched = [_fmt_call(c) for c, m in zip(ref, matched, strict=True) if m is None]
        reasons.append(
            f"trace: {n_matched}/{len(ref)} reference calls matched; unmatched: "
            f"{', '.join(unmatched)}"
        )
    if task.outcome.mutates:
        outcome, why = (changes_done if partial else expected_state_match)(
            task.outcome.expected_state, task.outcome.initial_state, trajectory.final_state
        )
    elif task.outcome.expects:  # a refusal or a confirmation: the answer, and no change
        outcome, why = policy_outcome(task.outcome, trajectory.final_answer)
    else:
        outcome, why = answer_score(task.outcome, trajectory.final_answer)
        seen, blind = observed(task, trajectory, rel_tol)
        if not seen:
            outcome, why = 0.0, [*why, blind]
    unasked = unasked_changes(task.outcome, trajectory.final_state)
    if unasked:
        outcome = 0.0
    reasons.extend(why + unasked)
    extra = max(0, len(trajectory.calls) - len(ref))
    length_penalty = min(cap, length_step * extra)
    if extra:
        reasons.append(f"length: {extra} calls beyond the reference's {len(ref)}")
    format_penalty = min(cap, format_step * max(0, trajectory.format_errors))
    if trajectory.format_errors:
        reasons.append(f"format: {trajectory.format_errors} format errors")
    needless = needless_questions(task, trajectory)
    question_penalty = min(cap, question_step * needless)
    if needless:
        reasons.append(f"questions: {needless} beyond what the user held back")
    raw = tau * trace + (1.0 - tau) * outcome - length_penalty - format_penalty - question_penalty
    value = round(min(1.0, max(0.0, raw)), 12)
    return Reward(
        score=value,
        model=model,
        trace=trace,
        outcome=outcome,
        length_penalty=length_penalty,
        format_penalty=format_penalty,
        tau=tau,
        reasons=reasons,
    )


state_outcome = deprecated_alias(expected_state_match, "state_outcome")
