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
from dataclasses import dataclass
from typing import Any

from envkernel_kit.answers import NUMBER, facts_in_words, is_number, result_rows, stuffed_answer
from envkernel_kit.messages import compact
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


def reference_answer(task: Task) -> str:
    """What the reference says at the end: the task's answer in words, else (a read-only task)
    its expected facts said plainly, else the last output."""
    if task.outcome.answer:
        return task.outcome.answer
    if not task.outcome.mutates and (said := facts_in_words(task.outcome)):
        return said
    return (
        f"Done. Here is the result: {compact(task.outputs[-1])}"
        if task.outputs
        else "There was nothing to do."
    )


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


def _planted(task: Task) -> Mutated | None:
    """Every call on the row a planted distractor copies acts on the distractor instead, and on the
    rows the copy points to instead of the row's (the agent picked the wrong row and kept using
    it); a read-only answer states the copy's values."""
    calls = task.calls
    for p in task.planted:
        twin_key = p.row.get(p.key)
        twin = next(
            (r for out in task.outputs if (r := _find_row(out, p.key, p.twin)) is not None), {}
        )
        swap = {
            p.twin: twin_key
        }  # the copy instead of the row, and the ids it points to instead of the row's
        swap.update(
            {
                str(twin[c]): p.row[c]
                for c in p.differs
                if is_id_name(c) and twin.get(c) is not None and c in p.row
            }
        )
        new = [
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
        if twin_key is None or all(
            a.arguments == c.arguments for a, c in zip(new, calls, strict=True)
        ):
            continue
        answer = reference_answer(task)
        if not task.outcome.mutates:
            for f in task.outcome.answer_facts:
                k = next((k for k, x in twin.items() if str(x) == f), None)
                if k is not None and k in p.row and str(p.row[k]) != f:
                    answer = answer.replace(f, str(p.row[k]))
        return Mutated(new, answer)
    return None


def _distractor(task: Task) -> Mutated | None:
    if task.planted:
        got = _planted(task)
        if got is not None:
            return got
    calls, outputs = task.calls, task.outputs
    for i in range(len(calls) - 1, -1, -1):
        for name, v in calls[i].arguments.items():
            if not is_id_name(name) or isinstance(v, bool) or not isinstance(v, (str, int)):
                continue
            for out in outputs[:i]:
                rows = result_rows(out)
                target = next((r for r in rows if r.get("id") == v), None)
                others = [r for r in rows if r.get("id") not in (None, v)]
                if target is None or not others:
                    continue
                pick = max(others, key=lambda r: _similarity(target, r))
                new = [ToolCall(name=c.name, arguments=dict(c.arguments)) for c in calls]
                new[i].arguments[name] = pick["id"]
                answer = reference_answer(task)
                if not task.outcome.mutates:
                    last = outputs[-1] if isinstance(outputs[-1], dict) else {}
                    twin = (
                        next((r for r in result_rows(out) if r.get("id") == pick["id"]), {})
                        if i == len(calls) - 1
                        else {}
                    )
                    for f in task.outcome.answer_facts:
                        k = next(
                            (
                                k
                                for k, x in last.items()
                                if str(x) == f or (is_number(f) and _num_eq(str(x), float(f)))
                            ),
                            None,
                        )
                        if k is not None and k in twin and str(twin[k]) != f:
                            answer = answer.replace(f, str(twin[k]))
                return Mutated(new, answer)
    return None


def mutate(task: Task, kind: str, writes: set[str] | None = None) -> Mutated | None:
    """The mutant ``kind`` of ``task``'s reference rollout, or None when it does not apply.
    ``writes``: the names of the environment's tools that change state, when known; a task that
    changes state then has ``change_arg`` change an argument of a call that changes state (a
    lookup's argument changes nothing: the later calls' arguments are copied as they were, so the
    end state is the reference's and no check could tell it apart)."""
    calls, outputs, o = task.calls, task.outputs, task.outcome
    answer = reference_answer(task)
    if kind == "drop_last":
        return Mutated(list(calls[:-1]), answer) if calls else None
    if kind == "change_arg":
        for i in range(len(calls) - 1, -1, -1):
            if o.mutates and writes is not None and calls[i].name not in writes:
                continue
            for name, v in calls[i].arguments.items():
                if is_id_name(name) or v is None:
                    continue
                nv = _other_value(name, v, outputs)
                if nv is None or nv == v:
                    continue
                new = [ToolCall(name=c.name, arguments=dict(c.arguments)) for c in calls]
                new[i].arguments[name] = nv
                return Mutated(new, answer)
        return None
    if kind == "answer_missing":
        if o.mutates:
            return None
        item = (
            o.answer_rows[-1][0]
            if o.answer_rows
            else (o.answer_facts[-1] if o.answer_facts else None)
        )
        if item is None:
            return None
        cut = _remove(answer, item)
        return Mutated(list(calls), cut) if cut != answer else None
    if kind == "answer_stuffed":
        if o.mutates:
            return None
        stuffed = stuffed_answer(answer, outputs, list(o.answer_absent))
        return Mutated(list(calls), stuffed) if stuffed is not None else None
    if kind == "distractor":
        return _distractor(task)
    raise ValueError(f"unknown mutant kind {kind!r}; kinds: {', '.join(MUTANT_KINDS)}")
