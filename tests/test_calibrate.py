"""``--calibrate K``: K attempts of a chosen policy per gated task; tasks solved in all or none of
them are dropped, and the solve rate becomes the task's difficulty (kernel stage, then a real run
with the ``sometimes`` policy, whose attempts succeed on a known share)."""

from __future__ import annotations

import pytest

from envkernel.config import RunConfig
from envkernel.stages import CALIBRATION, Stages
from envkernel_schemas import (
    Outcome,
    PluginFailed,
    Reward,
    RolloutRequested,
    RolloutScored,
    Task,
    TaskGated,
    TaskProposed,
    TaskRejected,
    ToolCall,
    Trajectory,
    encode,
)

TASK = Task(
    id="t1",
    env_id="shop",
    request="What is my tier?",
    calls=[ToolCall(name="get_customer", arguments={"customer_id": 1})],
    outcome=Outcome(mutates=False, answer_facts=["gold"]),
)


def _scored(req: RolloutRequested, score: float) -> RolloutScored:
    traj = Trajectory(task_id=TASK.id, policy=req.policy, index=req.index)
    return RolloutScored(
        run="r",
        id=f"s{req.index}",
        task=TASK,
        trajectory=traj,
        reward=Reward(score=score),
        group_size=req.group_size,
        purpose="gate",
    )


def _calibrated(solved: list[bool | None], keep: bool = False) -> list[object]:
    """The gate passes (reference 1, nothing 0, no mutants), then K calibration attempts score as
    given (None: the attempt failed); ``keep``: the run's ``calibrate_keep``."""
    config = RunConfig(
        gate_mutant="", calibrate=len(solved), calibrate_policy="sometimes", calibrate_keep=keep
    )
    st = Stages(config)
    gate = [ev for ev, _ in st.handle(TaskProposed(run="r", id="p", task=TASK))]
    out: list[object] = []
    for req, score in zip(gate, (1.0, 0.0), strict=True):
        out.extend(ev for ev, _ in st.handle(_scored(req, score)))  # type: ignore[arg-type]
    cal = [ev for ev in out if isinstance(ev, RolloutRequested)]
    assert [(r.policy, r.index, r.purpose, r.group_size) for r in cal] == [
        ("sometimes", CALIBRATION + i, "gate", len(solved)) for i in range(len(solved))
    ]
    results: list[object] = []
    for req, ok in zip(cal, solved, strict=True):
        if ok is None:
            failed = PluginFailed(
                run="r",
                id=f"f{req.index}",
                plugin="sometimes",
                role="policy",
                event_kind="rollout.requested",
                event_id=req.id,
                event=encode(req),
                error_type="RuntimeError",
                message="boom",
            )
            results.extend(ev for ev, _ in st.handle(failed))
        else:
            results.extend(ev for ev, _ in st.handle(_scored(req, 1.0 if ok else 0.2)))
    return results


def test_a_task_solved_sometimes_is_emitted_with_its_solve_rate_as_difficulty() -> None:
    out = _calibrated([True, False, None, True])
    assert len(out) == 1 and isinstance(out[0], TaskGated)
    assert (
        out[0].task.solve_rate == 0.5 and out[0].task.difficulty == 0.5
    )  # the failed attempt counts as not solved


@pytest.mark.parametrize(
    ("solved", "reason"), [([True] * 3, "always_solved"), ([False, None, False], "never_solved")]
)
def test_a_task_solved_always_or_never_is_dropped(solved: list[bool | None], reason: str) -> None:
    out = _calibrated(solved)
    assert (
        len(out) == 1
        and isinstance(out[0], TaskRejected)
        and out[0].reason == reason
        and "of 3 attempts" in out[0].detail
    )
    rate = 1.0 if reason == "always_solved" else 0.0  # the dropped task carries its rate
    assert out[0].task.solve_rate == rate and out[0].task.difficulty == 1.0 - rate


@pytest.mark.parametrize("solved", [[True] * 3, [False, None, False]])
def test_with_calibrate_keep_a_task_is_kept_whatever_its_rate(solved: list[bool | None]) -> None:
    out = _calibrated(solved, keep=True)
    assert len(out) == 1 and isinstance(out[0], TaskGated)
    rate = 1.0 if solved[0] else 0.0
    assert out[0].task.solve_rate == rate and out[0].task.difficulty == 1.0 - rate


def test_calibrate_in_a_run_matches_the_policys_known_share(envk) -> None:  # type: ignore[no-untyped-def]
    from envkernel_baselines import solves

    k = 4
    run = envk.run(
        "--calibrate",
        str(k),
        "--calibrate-policy",
        "sometimes",
        "--set",
        "sometimes.share=0.5",
        run_id="calibrate",
        source="sample",
    )
    s = run.summary
    assert s["exit_code"] == 0 and s["failures"] == 0, run.proc.stderr[-3000:]
    emitted = run.jsonl("tasks.jsonl")
    rejected = run.jsonl("rejected.jsonl") if (run.dir / "rejected.jsonl").exists() else []
    expect = {}
    for t in emitted + [
        {"id": r["task_id"]} for r in rejected if r["reason"] in ("always_solved", "never_solved")
    ]:
        expect[t["id"]] = sum(solves(t["id"], CALIBRATION + i, 0.5) for i in range(k)) / k
    for t in (
        emitted
    ):  # every emitted task was solved sometimes, at exactly the rate the policy's share decides
        assert (
            0 < t["solve_rate"] < 1
            and t["solve_rate"] == expect[t["id"]]
            and t["difficulty"] == round(1 - t["solve_rate"], 4)
        )
    for r in rejected:
        if r["reason"] in ("always_solved", "never_solved"):
            assert expect[r["task_id"]] == (1.0 if r["reason"] == "always_solved" else 0.0)
    assert s["tasks"] == len(emitted) >= 10
    hist: dict[str, int] = {}
    for t in emitted:
        hist[f"{t['solve_rate']:.2f}"] = hist.get(f"{t['solve_rate']:.2f}", 0) + 1
    assert s["solve_rates"] == dict(sorted(hist.items())) and len(hist) >= 2
    assert (
        s["gate_rollouts"] >= s["tasks_proposed"] * 2 + s["tasks"] * k
    )  # the attempts are gate rollouts


def test_calibrating_with_the_reference_warns_that_it_drops_every_task(envk) -> None:  # type: ignore[no-untyped-def]
    run = envk.run("--calibrate", "2", run_id="calibrate-ref", source="sample")
    assert (
        "--calibrate with policy 'reference'" in run.proc.stderr
        and "--calibrate-policy" in run.proc.stderr
    )
    assert (
        run.proc.returncode == 4 and run.summary["tasks"] == 0
    )  # every task always solved: dropped, as the warning said
