"""The gate's duplicate key (``envkernel.stages.task_key``) is order-insensitive exactly where the
answer check is."""

from __future__ import annotations

from envkernel.config import RunConfig
from envkernel.stages import Stages, task_key
from envkernel_kit.answers import answer_score
from envkernel_schemas import Outcome, Task, TaskProposed, TaskRejected, ToolCall

ROWS = [["general", "active"], ["random", "archived", "2"], ["ops", "active"]]
ANSWER = "3 channels: general is active; random is archived with 2 members; ops is active."


def _task(
    tid: str,
    rows: list[list[str]],
    *,
    ordered: bool = False,
    facts: tuple[str, ...] = ("3",),
    absent: tuple[str, ...] = ("sales", "hr"),
) -> Task:
    return Task(
        id=tid,
        env_id="chat",
        request="What is the status of each channel?",
        signature="list_channels",
        calls=[ToolCall(name="list_channels", arguments={"limit": 50})],
        outcome=Outcome(
            mutates=False,
            answer_facts=list(facts),
            answer_rows=rows,
            answer_absent=list(absent),
            answer_ordered=ordered,
        ),
    )


def _rejected_as_duplicate(first: Task, second: Task) -> bool:
    st = Stages(RunConfig(gate_mutant=""))
    st.handle(TaskProposed(run="r", id="p1", task=first))
    out = [ev for ev, _ in st.handle(TaskProposed(run="r", id="p2", task=second))]
    return len(out) == 1 and isinstance(out[0], TaskRejected) and out[0].reason == "duplicate"


def test_an_unordered_answer_listed_in_another_order_is_a_duplicate() -> None:
    shuffled = [
        ROWS[2],
        [ROWS[1][0], ROWS[1][2], ROWS[1][1]],
        ROWS[0],
    ]  # rows and a row's values in another order
    a, b = _task("a", ROWS), _task("b", shuffled, facts=("3",), absent=("hr", "sales"))
    assert (
        answer_score(a.outcome, ANSWER) == answer_score(b.outcome, ANSWER) == (1.0, [])
    )  # the check cannot tell them apart
    assert task_key(a) == task_key(b)
    assert _rejected_as_duplicate(a, b)


def test_facts_and_absent_values_in_another_order_are_a_duplicate() -> None:
    a, b = (
        _task("a", [], facts=("3", "general")),
        _task("b", [], facts=("general", "3"), absent=("hr", "sales")),
    )
    assert task_key(a) == task_key(b) and _rejected_as_duplicate(a, b)


def test_an_ordered_answer_in_another_order_is_another_task() -> None:
    a, b = _task("a", ROWS, ordered=True), _task("b", ROWS[::-1], ordered=True)
    assert (
        answer_score(a.outcome, ANSWER)[0] == 1.0 and answer_score(b.outcome, ANSWER)[0] < 1.0
    )  # the check tells them apart
    assert task_key(a) != task_key(b)
    assert not _rejected_as_duplicate(a, b)
    assert task_key(a) != task_key(_task("c", ROWS))  # ordered or not is part of what is asked


def test_what_the_check_tells_apart_stays_apart() -> None:
    base = _task("a", ROWS)
    other_value = _task(
        "b", [["general", "archived"], ROWS[1], ROWS[2]]
    )  # a label paired with another value
    swapped_label = _task(
        "c", [["active", "general"], ROWS[1], ROWS[2]]
    )  # the label is not one of the values
    other_call = Task(
        id="d",
        env_id="chat",
        request=base.request,
        signature=base.signature,
        calls=[ToolCall(name="list_channels", arguments={"limit": 10})],
        outcome=base.outcome,
    )
    keys = {task_key(t) for t in (base, other_value, swapped_label, other_call)}
    assert len(keys) == 4
