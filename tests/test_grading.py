"""The one grading entry point (``envkernel_kit.grading``) on real tasks, with every reward model.

One real run (``envkernel run --source sample --source workspace:ledger``): the ``shop-v1`` tasks
(state and answer tasks) and one workspace task (graded by its check script), with the reference
rollouts the run scored. A workspace task's script really runs in a ``process`` sandbox whichever
reward model grades it, the ``judge`` included (its model server is unreachable here, so a score
of 1 can only come from the script); ``envkernel serve`` grades with the run's reward model, or
the one ``--reward`` names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from envkernel.errors import UsageError
from envkernel.worker import call_role
from envkernel_kit import answers, scoring, workspace
from envkernel_kit.checks import process_runner
from envkernel_kit.grading import (
    GradeKind,
    grade,
    grade_blocking,
    grade_in_process,
    needs_sandbox,
    task_kind,
)
from envkernel_kit.testing import RunnerContext
from envkernel_runtime.envdir import load_env_dir
from envkernel_schemas import EnvSpec, Reward, Task, Trajectory

UNREACHABLE = "http://127.0.0.1:9/v1"
"""A judge model server that is not there: asking it fails (a Reward with ``error``)."""


@pytest.fixture(scope="module")
def run_dir(envk_factory: Any) -> Path:
    """A real run of the sample environment and of one workspace variant."""
    envk = envk_factory("grading")
    run = envk.run(
        "--source",
        "sample",
        "--source",
        "workspace:ledger",
        "--set",
        "workspace.variants=1",
        "--set",
        "chains.tasks_per_env=6",
        run_id="grading",
        source=None,
    )
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    return run.dir


@pytest.fixture(scope="module")
def tasks(run_dir: Path) -> dict[str, Task]:
    """Every emitted task of the run, by id."""
    lines = (run_dir / "tasks.jsonl").read_text().splitlines()
    return {t.id: t for t in (msgspec.json.decode(x, type=Task) for x in lines if x)}


@pytest.fixture(scope="module")
def rollouts(run_dir: Path) -> list[tuple[Trajectory, Reward]]:
    """The run's scored training rollouts (the reference policy's), with the reward it gave each."""
    out = []
    for line in (run_dir / "rollouts.jsonl").read_text().splitlines():
        row = json.loads(line)
        out.append(
            (
                msgspec.convert(row["trajectory"], Trajectory),
                msgspec.convert(row["reward"], Reward),
            )
        )
    return out


@pytest.fixture(scope="module")
def ws(tasks: dict[str, Task], rollouts: list[tuple[Trajectory, Reward]], run_dir: Path) -> Any:
    """The workspace task, its environment and its reference rollout."""
    task = next(t for t in tasks.values() if t.outcome.check)
    env = load_env_dir(run_dir / "envs" / task.env_id)
    ref = next(tr for tr, _ in rollouts if tr.task_id == task.id)
    return task, env, ref


def _ctx(env: EnvSpec, component: str) -> RunnerContext:
    return RunnerContext(process_runner(), component=component, envs={env.id: env})


def test_task_kinds_of_the_sample_and_workspace_tasks(tasks: dict[str, Task]) -> None:
    kinds = {t.id: task_kind(t) for t in tasks.values()}
    assert set(kinds.values()) == {GradeKind.SCRIPT, GradeKind.STATE, GradeKind.ANSWER}
    for t in tasks.values():
        assert needs_sandbox(t) == bool(t.outcome.check)
        if t.outcome.check:
            assert kinds[t.id] is GradeKind.SCRIPT and t.env_id.startswith("ws-ledger-")
        else:
            assert kinds[t.id] is (GradeKind.STATE if t.outcome.mutates else GradeKind.ANSWER)


def test_grade_in_process_gives_the_runs_rewards(
    tasks: dict[str, Task], rollouts: list[tuple[Trajectory, Reward]]
) -> None:
    """The pure grading of every state and answer task is the reward the run gave (traceoutcome)."""
    graded = 0
    for traj, reward in rollouts:
        task = tasks[traj.task_id]
        if needs_sandbox(task):
            with pytest.raises(ValueError, match="only in a sandbox"):
                grade_in_process(task, traj)
            continue
        got = grade_in_process(task, traj, model="traceoutcome")
        assert (got.score, got.trace, got.outcome) == (reward.score, reward.trace, reward.outcome)
        graded += 1
    assert graded >= 4


async def test_the_judge_runs_a_workspace_tasks_script(ws: Any) -> None:
    """With the judge reward, a workspace task is graded by its script in a sandbox: 1 for the
    reference's workspace, 0 for the untouched one; the (unreachable) judge is never asked."""
    from envkernel_judge import Judge, JudgeSettings

    task, env, ref = ws
    judge = Judge(JudgeSettings(base_url=UNREACHABLE, model="m", api_key="k", timeout=5))
    ctx = _ctx(env, "judge")
    try:
        good = await judge.score(task, ref, ctx)
        nothing = await judge.score(task, Trajectory(task_id=task.id, policy="nothing"), ctx)
    finally:
        await ctx.runner.aclose()
    assert not good.error and good.score == 1.0, good.reasons
    assert good.model == "judge" and "check script" in good.reasons[0]
    assert not nothing.error and nothing.score == 0.0, nothing.reasons
    assert len(ctx.opened) == 2  # one sandbox per grading, for the script


async def test_every_reward_model_grades_a_workspace_task_by_its_script(ws: Any) -> None:
    """traceoutcome and checklist (sync, through ``grade_blocking`` in a worker thread) and
    :func:`grade` itself give the script's score on the reference's workspace."""
    from envkernel_checklist import Checklist
    from envkernel_traceoutcome import TraceOutcome

    task, env, ref = ws
    ctx = _ctx(env, "reward")
    try:
        direct = await grade(ctx, task, ref, model="direct")
        trace = await call_role(TraceOutcome().score, task, ref, ctx)
        check = await call_role(Checklist().score, task, ref, ctx)
    finally:
        await ctx.runner.aclose()
    assert direct.score == trace.score == check.score == 1.0
    assert direct.outcome == 1.0 and direct.tau == 0.0
    assert check.reasons[0].startswith("checklist: graded by the task's check script")


async def test_grade_with_an_in_process_scorer(tasks: dict[str, Task], rollouts: Any) -> None:
    """A state or answer task goes to the given scorer (sync or async), never to a sandbox."""
    traj, _ = next((tr, r) for tr, r in rollouts if not needs_sandbox(tasks[tr.task_id]))
    task = tasks[traj.task_id]
    seen: list[str] = []

    async def judged(t: Task, tr: Trajectory) -> Reward:
        seen.append(t.id)
        return Reward(score=0.25, model="mine")

    class NoSandbox:
        def sandbox(self, env: Any) -> Any:
            raise AssertionError("a state or answer task opened a sandbox")

    got = await grade(NoSandbox(), task, traj, in_process=judged)
    assert got.score == 0.25 and seen == [task.id]
    sync = grade_blocking(NoSandbox(), task, traj, in_process=lambda t, tr: Reward(score=0.5))
    assert sync.score == 0.5
    assert grade_blocking(NoSandbox(), task, traj, tau=0.5).score == 1.0


def test_old_names_are_deprecated_aliases(tasks: dict[str, Task]) -> None:
    answer = next(t for t in tasks.values() if task_kind(t) is GradeKind.ANSWER)
    with pytest.warns(DeprecationWarning, match="answer_score"):
        old = answers.answer_check(answer.outcome, answer.outcome.answer)
    assert old == answers.answer_score(answer.outcome, answer.outcome.answer)
    with pytest.warns(DeprecationWarning, match="expected_state_match"):
        assert scoring.state_outcome({}, {}, {}) == scoring.expected_state_match({}, {}, {})
    for old_name, new_name in (
        ("run_check", "run_grader_script"),
        ("check_reward", "script_reward"),
    ):
        alias = getattr(workspace, old_name)
        assert alias.__name__ == old_name and new_name in (alias.__doc__ or "")


async def test_the_old_check_reward_still_grades(ws: Any) -> None:
    task, env, ref = ws
    ctx = _ctx(env, "old")
    try:
        with pytest.warns(DeprecationWarning, match="script_reward"):
            old = await workspace.check_reward(ctx, task, ref)
    finally:
        await ctx.runner.aclose()
    assert old.score == 1.0


# -- envkernel serve ------------------------------------------------------------------------------


def test_serve_reads_the_runs_reward(run_dir: Path) -> None:
    from envkernel_serve.catalog import load_catalog

    cat = load_catalog(run_dir)
    cfg = json.loads((run_dir / "config.json").read_text())
    assert cat.reward == "traceoutcome" == cfg["components"]["reward_model"][0]
    assert cat.reward_settings == cfg["resolved"]["traceoutcome"]
    env_dir = next(p for p in (run_dir / "envs").iterdir() if (p / "env.json").is_file())
    assert load_catalog(env_dir).reward == "traceoutcome"  # an ENV_DIR of a run: the run's


async def _serve_grade(run_dir: Path, task: Task, traj: Trajectory, **settings: Any) -> Reward:
    from envkernel_serve.catalog import load_catalog
    from envkernel_serve.server import RunnerSandboxes, ServeSettings, make_server

    _server, core = make_server(
        load_catalog(run_dir), RunnerSandboxes(process_runner()), ServeSettings(**settings)
    )
    try:
        return await core.grade(task, traj)
    finally:
        await core.close()
        await core.pool.source.aclose()


async def test_serve_grades_with_the_configured_reward(
    run_dir: Path, tasks: dict[str, Task], rollouts: Any, ws: Any
) -> None:
    """By default the run's ``traceoutcome``; ``--reward checklist`` its checklist; a workspace task
    by its script with either, and with the judge too."""
    traj, reward = next((tr, r) for tr, r in rollouts if not needs_sandbox(tasks[tr.task_id]))
    task = tasks[traj.task_id]
    default = await _serve_grade(run_dir, task, traj)
    assert default.model == "traceoutcome" and default.score == reward.score
    checked = await _serve_grade(run_dir, task, traj, reward="checklist")
    assert checked.model == "checklist" and checked.reasons[0].startswith("checklist: ")
    ws_task, _env, ref = ws
    for name in ("traceoutcome", "checklist", "judge"):
        got = await _serve_grade(run_dir, ws_task, ref, reward=name)
        assert got.score == 1.0 and not got.error, (name, got.reasons)
    nothing = Trajectory(task_id=ws_task.id, policy="serve", final_state={})
    assert (await _serve_grade(run_dir, ws_task, nothing, reward="judge")).score == 0.0


def test_serve_without_the_runs_reward_installed_falls_back(run_dir: Path) -> None:
    """A run whose reward model is not installed where it is served is graded as serve did before
    it read the run's reward (trace + outcome); an unknown ``--reward`` is a usage error."""
    import dataclasses

    from envkernel_serve.catalog import load_catalog
    from envkernel_serve.server import RunnerSandboxes, ServeSettings, make_server

    cat = dataclasses.replace(load_catalog(run_dir), reward="not-installed")
    _server, core = make_server(cat, RunnerSandboxes(None), ServeSettings())
    assert core.reward_model is None and core.reward_name == "serve"
    with pytest.raises(UsageError, match="no reward model named 'not-installed'"):
        make_server(cat, RunnerSandboxes(None), ServeSettings(reward="not-installed"))


def test_serve_rejects_an_unknown_reward_and_a_tau_it_cannot_take(run_dir: Path) -> None:
    from envkernel_serve.server import reward_model

    with pytest.raises(UsageError, match="no reward model named 'nope'; installed reward models"):
        reward_model("nope")
    with pytest.raises(UsageError, match="--tau"):
        reward_model("checklist", None, 0.3)
    model, settings = reward_model("traceoutcome", {"tau": 0.7}, 0.2)
    assert settings.tau == 0.2 and model.settings.tau == 0.2
