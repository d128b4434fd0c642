"""Near-miss mutants of a task's reference rollout, as pure functions (no kernel, no I/O).

A sound task's check tells the reference (score 1) from each of these, so the gate runs them and
emits a task only when every applicable one scores below 1:

- ``drop_last``: every reference call but the last, then the reference answer;
- ``change_arg``: one literal argument (not an id) of the latest call that has one changed (a
  number moved, a flag flipped, a text swapped for another row's value), then the reference answer;
  in a task that changes state, of the latest call that changes state (when the tools are known);
- ``answer_missing`` (read-only tasks): the reference answer with one item left out (the last
  row's label, or the last fact);
- ``answer_stuffed`` (read-only tasks): the reference answer followed by every row of the earlier
  lookups (and of the last one, when the request asked for only some of its rows), rows wrapped in
  an envelope (``{"data": [...], "next_page": ...}``) included;
- ``distractor``: the latest call that acts on a row found by an earlier lookup (a list, or a list
  in an envelope) acts on another row of that lookup instead, the most similar one (the
  near-duplicate a careless agent picks); a read-only answer then states that row's values. When the
  task has planted distractor rows (``Task.planted``), every call on the row one of them copies acts
  on that copy instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from envkernel_kit.answers import (
    NUMBER,
    is_number,
    reference_answer,
    result_rows,
    stuffed_answer,
)
from envkernel_kit.naming import is_id_name
from envkernel_schemas import Task, ToolCall

__all__ = ["MUTANT_KINDS", "Mutated", "mutate", "reference_answer"]

MUTANT_KINDS = ("drop_last", "change_arg", "answer_missing", "answer_stuffed", "distractor")
"""The mutant kinds, in the order of the gate's mutant indexes (2, 3, ...)."""


@dataclass(frozen=True)
class Mutated:
    """A mutant rollout: the calls to make and the final answer."""

    calls: list[ToolCall]
    answer: str


def _other_value(key: str, value: Any, outputs: list[Any]) -> Any:
    """Another value for argument ``key``: another row's value of that field, else a nearby one."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1 if isinstance(value, int) else round(value * 1.5 + 1, 2)
    if isinstance(value, str):
        for out in outputs:
            for r in result_rows(out) or ([out] if isinstance(out, dict) else []):
                v = r.get(key)
                if isinstance(v, str) and v != value:
                    return v
        return value + " 2"
    return None


def _remove(answer: str, item: str) -> str:
    if is_number(item):
        x = float(item)
        return NUMBER.sub(lambda m: "" if _num_eq(m.group(0), x) else m.group(0), answer)
    return re.sub(re.escape(item), "", answer, flags=re.IGNORECASE)


def _num_eq(raw: str, x: float) -> bool:
    try:
        return abs(float(raw.replace(",", "")) - x) <= max(0.005, 1e-6 * abs(x))
    except ValueError:
        return False


def _similarity(a: dict[str, Any], b: dict[str, Any]) -> int:
    return sum(1 for k, v in a.items() if k != "id" and b.get(k) == v)


def _find_row(value: Any, key: str, want: str, depth: int = 0) -> dict[str, Any] | None:
    """The row with ``row[key] == want`` anywhere in an output (a list, a page
    ``{"data": [...]}``...)."""
    if depth > 4:
        return None
    if isinstance(value, dict):
        if str(value.get(key)) == want:
            return value
        value = list(value.values())
    if isinstance(value, list):
        for x in value:
            if (
                isinstance(x, (dict, list))
                and (got := _find_row(x, key, want, depth + 1)) is not None
            ):
                return got
    return None


def _restated(
    task: Task, answer: str, source: dict[str, Any], row: dict[str, Any], numbers: bool
) -> str:
    """A read-only answer with each fact found in ``source`` (the row the reference reported on;
    ``numbers``: a number also found within rounding) replaced by ``row``'s value of the same field
    (the other row the mutant reports on)."""
    if task.outcome.mutates:
        return answer
    for f in task.outcome.answer_facts:
        loose = numbers and is_number(f)
        k = next(
            (k for k, x in source.items() if str(x) == f or (loose and _num_eq(str(x), float(f)))),
            None,
        )
        if k is not None and k in row and str(row[k]) != f:
            answer = answer.replace(f, str(row[k]))
    return answer


def _swap_ids(calls: list[ToolCall], swap: dict[str, Any]) -> list[ToolCall]:
    """The calls with every id argument found in ``swap`` replaced by its new value."""
    return [
        ToolCall(
            name=c.name,
            arguments={
                k: swap[str(v)]
                if is_id_name(k) and not isinstance(v, bool) and str(v) in swap
                else v
                for k, v in c.arguments.items()
            },
        )
        for c in calls
    ]


def _planted(task: Task) -> Mutated | None:
    """Every call on the row a planted distractor copies acts on the distractor instead, and on the
    rows the copy points to instead of the row's (the agent picked the wrong row and kept using
    it); a read-only answer states the copy's values."""
    for p in task.planted:
        twin_key = p.row.get(p.key)
        twin = next(
            (r for out in task.outputs if (r := _find_row(out, p.key, p.twin)) is not None), {}
        )
        swap = {p.twin: twin_key}  # the copy instead of the row, and the ids it points to instead
        swap.update(
            {
                str(twin[c]): p.row[c]
                for c in p.differs
                if is_id_name(c) and twin.get(c) is not None and c in p.row
            }
        )
        new = _swap_ids(task.calls, swap)
        if twin_key is None or all(
            a.arguments == c.arguments for a, c in zip(new, task.calls, strict=True)
        ):
            continue
        return Mutated(new, _restated(task, reference_answer(task), twin, p.row, numbers=False))
    return None


def _row_choices(task: Task) -> Any:
    """Each (call index, argument, the earlier lookup's rows, target row) where the call acts on a
    row found by an earlier lookup that has other rows, the latest call first."""
    calls, outputs = task.calls, task.outputs
    for i in range(len(calls) - 1, -1, -1):
        for name, v in calls[i].arguments.items():
            if not is_id_name(name) or isinstance(v, bool) or not isinstance(v, (str, int)):
                continue
            for out in outputs[:i]:
                rows = result_rows(out)
                target = next((r for r in rows if r.get("id") == v), None)
                if target is not None and any(r.get("id") not in (None, v) for r in rows):
                    yield i, name, rows, target


def _distractor(task: Task) -> Mutated | None:
    if task.planted and (got := _planted(task)) is not None:
        return got
    for i, name, rows, target in _row_choices(task):
        others = [r for r in rows if r.get("id") not in (None, target["id"])]
        pick = max(others, key=lambda r: _similarity(target, r))
        new = [ToolCall(name=c.name, arguments=dict(c.arguments)) for c in task.calls]
        new[i].arguments[name] = pick["id"]
        last = task.outputs[-1] if isinstance(task.outputs[-1], dict) else {}
        twin = pick if i == len(task.calls) - 1 else {}
        return Mutated(new, _restated(task, reference_answer(task), last, twin, numbers=True))
    return None


def _drop_last(task: Task, answer: str, writes: set[str] | None) -> Mutated | None:
    return Mutated(list(task.calls[:-1]), answer) if task.calls else None


def _change_arg(task: Task, answer: str, writes: set[str] | None) -> Mutated | None:
    calls = task.calls
    for i in range(len(calls) - 1, -1, -1):
        if task.outcome.mutates and writes is not None and calls[i].name not in writes:
            continue
        for name, v in calls[i].arguments.items():
            nv = None if is_id_name(name) or v is None else _other_value(name, v, task.outputs)
            if nv is not None and nv != v:
                new = [ToolCall(name=c.name, arguments=dict(c.arguments)) for c in calls]
                new[i].arguments[name] = nv
                return Mutated(new, answer)
    return None


def _answer_missing(task: Task, answer: str, writes: set[str] | None) -> Mutated | None:
    o = task.outcome
    if o.mutates:
        return None
    item = (
        o.answer_rows[-1][0] if o.answer_rows else (o.answer_facts[-1] if o.answer_facts else None)
    )
    if item is None:
        return None
    cut = _remove(answer, item)
    return Mutated(list(task.calls), cut) if cut != answer else None


def _answer_stuffed(task: Task, answer: str, writes: set[str] | None) -> Mutated | None:
    if task.outcome.mutates:
        return None
    stuffed = stuffed_answer(answer, task.outputs, list(task.outcome.answer_absent))
    return Mutated(list(task.calls), stuffed) if stuffed is not None else None


_Kind = Callable[[Task, str, "set[str] | None"], "Mutated | None"]

_KINDS: dict[str, _Kind] = {
    "drop_last": _drop_last,
    "change_arg": _change_arg,
    "answer_missing": _answer_missing,
    "answer_stuffed": _answer_stuffed,
    "distractor": lambda task, answer, writes: _distractor(task),
}

COMPLIED = "Done: I went ahead as you asked."
"""What a policy mutant that made the declined change says."""


def _without_point(task: Task, answer: str) -> Mutated:
    """The refusal without who may do it, or the question without its question mark."""
    if task.outcome.expects == "refusal":
        return Mutated([], answer.split(":")[0].rstrip() + ".")
    return Mutated([], answer.replace("?", "."))


_POLICY_KINDS: dict[str, Callable[[Task, str], Mutated | None]] = {
    "drop_last": lambda task, answer: (
        Mutated(list(task.outcome.declined), COMPLIED) if task.outcome.declined else None
    ),
    "change_arg": lambda task, answer: (
        Mutated(list(task.outcome.declined), answer) if task.outcome.declined else None
    ),
    "answer_missing": _without_point,
}
"""The near misses of a refusal or confirmation task: the change made anyway (saying it was done,
or saying the reference's answer), or the reference's answer without what makes it one (the
administrator, the question)."""


def mutate(task: Task, kind: str, writes: set[str] | None = None) -> Mutated | None:
    """The mutant ``kind`` of ``task``'s reference rollout, or None when it does not apply.
    ``writes``: the names of the environment's tools that change state, when known; a task that
    changes state then has ``change_arg`` change an argument of a call that changes state (a
    lookup's argument changes nothing: the later calls' arguments are copied as they were, so the
    end state is the reference's and no check could tell it apart). A refusal or confirmation
    task (``Outcome.expects``) has its own near misses (:data:`_POLICY_KINDS`): ``drop_last``
    makes the declined change and says so, ``change_arg`` makes it and says the reference's
    answer, ``answer_missing`` leaves out the administrator or the question."""
    if kind not in _KINDS:
        raise ValueError(f"unknown mutant kind {kind!r}; kinds: {', '.join(MUTANT_KINDS)}")
    answer = reference_answer(task)
    if task.outcome.expects:
        policy = _POLICY_KINDS.get(kind)
        return policy(task, answer) if policy is not None else None
    return _KINDS[kind](task, answer, writes)
