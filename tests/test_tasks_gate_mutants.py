"""The gate's near-miss mutants (kernel stage): a task passes only when every applicable mutant
scores below 1."""

from __future__ import annotations

from envkernel.config import RunConfig
from envkernel.stages import Stages
from envkernel_schemas import (
    Outcome,
    Reward,
    RolloutRequested,
    RolloutScored,
    Task,
    TaskGated,
    TaskProposed,
    TaskRejected,
    ToolCall,
    Trajectory,
)

TASK = Task(
    id="t1",
    env_id="shop",
    request="What is my tier?",
    calls=[ToolCall(name="get_customer", arguments={"customer_id": 1})],
    outcome=Outcome(mutates=False, answer_facts=["gold"]),
)


def _gate(mutant_scores: dict[int, tuple[float, str]], mutants: int = 3) -> list[object]:
    st = Stages(RunConfig(gate_mutants=mutants))
    out = st.handle(TaskProposed(run="r", id="p", task=TASK))
    reqs = [ev for ev, _ in out]
    assert all(
        isinstance(r, RolloutRequested) and r.purpose == "gate" and r.group_size == 2 + mutants
        for r in reqs
    )
    assert [r.policy for r in reqs] == ["reference", "nothing"] + ["mutant"] * mutants  # type: ignore[attr-defined]
    assert [r.index for r in reqs] == list(range(2 + mutants))  # type: ignore[attr-defined]
    results: list[object] = []
    scores = {0: (1.0, "answer"), 1: (0.0, "answer"), **mutant_scores}
    for r in reqs:
        sc, term = scores[r.index]  # type: ignore[attr-defined]
        traj = Trajectory(task_id=TASK.id, policy=r.policy, index=r.index, termination=term)  # type: ignore[attr-defined]
        ev = RolloutScored(
            run="r",
            id=f"s{r.index}",
            task=TASK,
            trajectory=traj,
            reward=Reward(score=sc),
            group_size=2 + mutants,
            purpose="gate",
        )  # type: ignore[attr-defined]
        results.extend(e for e, _ in st.handle(ev))
    return results


def test_a_task_whose_mutants_all_score_below_1_passes() -> None:
    out = _gate(
        {
            2: (0.5, "mutant:drop_last"),
            3: (0.0, "not_applicable:change_arg"),
            4: (0.75, "mutant:answer_missing"),
        }
    )
    assert len(out) == 1 and isinstance(out[0], TaskGated)


def test_a_mutant_scoring_1_rejects_the_task() -> None:
    out = _gate(
        {
            2: (0.5, "mutant:drop_last"),
            3: (1.0, "mutant:answer_stuffed"),
            4: (0.0, "mutant:distractor"),
        }
    )
    assert len(out) == 1 and isinstance(out[0], TaskRejected)
    assert out[0].reason == "mutant_survived" and "answer_stuffed" in out[0].detail


def test_an_inapplicable_mutant_says_nothing_and_the_gate_waits_for_every_mutant() -> None:
    out = _gate(
        {
            2: (1.0, "not_applicable:answer_missing"),
            3: (0.0, "mutant:drop_last"),
            4: (0.2, "mutant:change_arg"),
        }
    )
    assert len(out) == 1 and isinstance(out[0], TaskGated)
    st = Stages(RunConfig(gate_mutants=2))
    st.handle(TaskProposed(run="r", id="p", task=TASK))
    for i, sc in ((0, 1.0), (1, 0.0)):
        traj = Trajectory(task_id=TASK.id, policy=["reference", "nothing"][i], index=i)
        assert (
            st.handle(
                RolloutScored(
                    run="r",
                    id=f"s{i}",
                    task=TASK,
                    trajectory=traj,
                    reward=Reward(score=sc),
                    purpose="gate",
                )
            )
            == []
        )


def test_without_a_mutant_policy_the_gate_is_reference_and_nothing() -> None:
    st = Stages(RunConfig(gate_mutant=""))
    assert len(st.handle(TaskProposed(run="r", id="p", task=TASK))) == 2
