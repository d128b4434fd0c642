"""Rollout roles are explicit: the gate asks each rollout for its role and decides by it, and the
recorder counts mutants by the kind named on the scored event (pure kernel stages, no server).

Events from before the fields (``role`` null) are read as the index bands meant then; the
older tests (``test_tasks_gate_mutants.py``, ``test_calibrate.py``) send such events.
"""

from __future__ import annotations

from pathlib import Path

from envkernel.config import RunConfig
from envkernel.recorder import Recorder
from envkernel.stages import Stages
from envkernel_schemas import (
    GroupScored,
    Outcome,
    Reward,
    RolloutRequested,
    RolloutRole,
    RolloutScored,
    Task,
    TaskGated,
    TaskProposed,
    TaskRejected,
    Termination,
    ToolCall,
    Trajectory,
    from_json,
    mutant_kind_of,
    mutant_of,
    rollout_role,
    termination_of,
    to_json,
)

TASK = Task(
    id="t1",
    env_id="shop",
    request="What is my tier?",
    calls=[ToolCall(name="get_customer", arguments={"customer_id": 1})],
    outcome=Outcome(mutates=False, answer_facts=["gold"]),
)


def _scored(
    req: RolloutRequested, score: float, termination: str = "answer", index: int | None = None
) -> RolloutScored:
    """The scored event of ``req``, as the router makes it (role, mutant, mutant_kind carried)."""
    kind, detail = termination_of(termination)
    traj = Trajectory(
        task_id=TASK.id,
        policy=req.policy,
        index=req.index if index is None else index,
        termination=termination,
    )
    return RolloutScored(
        run="r",
        id=f"s-{req.id}",
        task=TASK,
        trajectory=traj,
        reward=Reward(score=score),
        group_size=req.group_size,
        purpose=req.purpose,
        role=req.role,
        mutant=req.mutant,
        mutant_kind=detail if kind is Termination.MUTANT else "",
    )


def test_every_rollout_request_says_its_role() -> None:
    st = Stages(RunConfig(gate_mutants=3, calibrate=2, calibrate_policy="sometimes"))
    reqs = [ev for ev, _ in st.handle(TaskProposed(run="r", id="p", task=TASK))]
    assert [(r.role, r.mutant) for r in reqs] == [
        (RolloutRole.REFERENCE, -1),
        (RolloutRole.NOTHING, -1),
        (RolloutRole.MUTANT, 0),
        (RolloutRole.MUTANT, 1),
        (RolloutRole.MUTANT, 2),
    ]
    out = []
    for r, sc in zip(reqs, (1.0, 0.0, 0.5, 0.5, 0.5), strict=True):
        out += [ev for ev, _ in st.handle(_scored(r, sc, "mutant:drop_last"))]
    assert [r.role for r in out] == [RolloutRole.CALIBRATION] * 2
    gated = []
    for r, sc in zip(out, (1.0, 0.0), strict=True):
        gated += [ev for ev, _ in st.handle(_scored(r, sc))]
    assert len(gated) == 1 and isinstance(gated[0], TaskGated)
    train = [ev for ev, _ in st.handle(gated[0])]
    assert [r.role for r in train] == [RolloutRole.TRAIN]


def test_the_gate_decides_by_role_not_by_index() -> None:
    """Scored events whose indexes say nothing (all 0) are still told apart by their roles; a
    reference and do-nothing of the same policy do not collide."""
    st = Stages(RunConfig(gate_mutants=2, gate_reference="sometimes", gate_nothing="sometimes"))
    reqs = [ev for ev, _ in st.handle(TaskProposed(run="r", id="p", task=TASK))]
    terms = ("answer", "answer", "mutant:answer_stuffed", "not_applicable:drop_last")
    out = []
    for r, sc, term in zip(reqs, (1.0, 0.0, 1.0, 1.0), terms, strict=True):
        out += [ev for ev, _ in st.handle(_scored(r, sc, term, index=0))]
    assert len(out) == 1 and isinstance(out[0], TaskRejected)
    assert (
        out[0].reason == "mutant_survived" and out[0].detail == "mutants scoring 1: answer_stuffed"
    )


def test_a_task_passes_when_its_applicable_mutants_score_below_1() -> None:
    st = Stages(RunConfig(gate_mutants=2))
    reqs = [ev for ev, _ in st.handle(TaskProposed(run="r", id="p", task=TASK))]
    terms = ("answer", "answer", "mutant:drop_last", "not_applicable:change_arg")
    out = []
    for r, sc, term in zip(reqs, (1.0, 0.0, 0.5, 1.0), terms, strict=True):
        out += [ev for ev, _ in st.handle(_scored(r, sc, term))]
    assert len(out) == 1 and isinstance(out[0], TaskGated)


def test_an_event_from_before_the_fields_is_read_by_the_old_bands() -> None:
    """JSON of a v1 event written before ``role`` existed decodes, and reads as it meant then."""
    new = RolloutScored(
        run="r",
        id="x",
        task=TASK,
        trajectory=Trajectory(task_id="t1", policy="mutant", index=4, termination="mutant:x"),
        reward=Reward(score=1.0),
        purpose="gate",
    )
    data = to_json(new).replace(b',"role":null,"mutant":-1,"mutant_kind":""', b"")
    assert b'"role"' not in data
    old = from_json(data)
    assert isinstance(old, RolloutScored) and old.role is None
    assert (rollout_role(old), mutant_of(old), mutant_kind_of(old)) == (
        RolloutRole.MUTANT,
        2,
        "x",
    )
    bands = {0: RolloutRole.REFERENCE, 1: RolloutRole.NOTHING, 1000: RolloutRole.CALIBRATION}
    for index, role in bands.items():
        req = RolloutRequested(run="r", id="q", task=TASK, policy="p", index=index, purpose="gate")
        assert rollout_role(req) is role and mutant_of(req) == -1
    assert rollout_role(RolloutRequested(run="r", id="q", task=TASK, policy="p", index=3)) is (
        RolloutRole.TRAIN
    )


def test_termination_kinds_are_typed() -> None:
    assert Termination.MUTANT.of("drop_last") == "mutant:drop_last"
    assert Termination.ANSWER.of("") == "answer" == Termination.ANSWER
    assert termination_of("not_applicable:change_arg") == (Termination.NOT_APPLICABLE, "change_arg")
    assert termination_of("max_turns") == (Termination.MAX_TURNS, "")
    assert termination_of("something_new:x") == (None, "x")


def test_the_recorder_counts_mutants_by_their_kind_field(tmp_path: Path) -> None:
    rec = Recorder(tmp_path)
    st = Stages(RunConfig(gate_mutants=3))
    reqs = [ev for ev, _ in st.handle(TaskProposed(run="r", id="p", task=TASK))]
    terms = (
        "answer",
        "answer",
        "mutant:drop_last",
        "not_applicable:change_arg",
        "mutant:distractor",
    )
    for r, sc, term in zip(reqs, (1.0, 0.0, 0.5, 0.0, 1.0), terms, strict=True):
        rec.record(_scored(r, sc, term))
    assert {k: dict(v) for k, v in rec.mutants["shop"].items()} == {
        "drop_last": {"applied": 1, "killed": 1, "outcome_killed": 1},
        "distractor": {"applied": 1, "killed": 0, "outcome_killed": 1},
    }
    # a rollout that is not a mutant is never counted, whatever its termination says
    ref = RolloutScored(
        run="r",
        id="y",
        task=TASK,
        trajectory=Trajectory(task_id="t1", policy="reference", termination="mutant:drop_last"),
        reward=Reward(score=1.0),
        purpose="gate",
        role=RolloutRole.REFERENCE,
    )
    rec.record(ref)
    assert rec.mutants["shop"]["drop_last"]["applied"] == 1


def test_a_training_rollout_whose_model_never_answered_reaches_the_trainer_as_failed() -> None:
    """A group's rollout that ended with ``error`` (the model's endpoint failed) is not a sample
    with reward 0: the group goes out with it counted in ``failed``."""
    st = Stages(RunConfig(gate_mutants=0, rollouts_per_task=3))
    gated = TaskGated(run="r", id="g", task=TASK)
    train = [ev for ev, _ in st.handle(gated)]
    assert len(train) == 3 and all(r.role is RolloutRole.TRAIN for r in train)
    out = []
    for r, term in zip(train, ("answer", "error", "answer"), strict=True):
        out += [ev for ev, _ in st.handle(_scored(r, 0.0 if term == "error" else 1.0, term))]
    assert len(out) == 1 and isinstance(out[0], GroupScored)
    assert out[0].failed == 1
    assert [s.trajectory.index for s in out[0].rollouts] == [0, 2]
