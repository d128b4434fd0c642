"""The judge part of PinchBench tasks on the real task set (tests/data/pinchbench/skill, MIT): the
``judge`` reward model, against a scripted OpenAI-compatible server on loopback (the real client
path), grades hybrids and judge-only tasks by the file's ``## LLM Judge Rubric``; a hybrid's
``grade()`` runs in the real process sandbox and the two parts are combined by ``grading_weights``.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from envkernel_judge import Judge, JudgeSettings
from envkernel_kit.scripted import ScriptedServer, completion, error
from envkernel_kit.workspace import TABLE, check_meta, script_reward, strip_meta
from envkernel_process import ProcessRunner
from envkernel_schemas import EnvRequested, EnvSpec, Task, Trajectory
from envkernel_workspace import PinchBenchSettings, PinchBenchSynthesizer, WorkspaceSampler
from envkernel_workspace.pinchbench import parse_task

TASKS = Path(__file__).resolve().parents[3] / "tests" / "data" / "pinchbench" / "skill" / "tasks"
JUDGED = {"judge": "judge"}


class Ctx:
    """A component context over the real process sandbox (as the reward side has it)."""

    def __init__(self, runner: ProcessRunner, out: Path, component: str = "judge") -> None:
        self.runner = runner
        self.envs: dict[str, EnvSpec] = {}
        self.component = component
        self.log = structlog.get_logger("test")
        self.config = type("Config", (), {"out": str(out)})()
        self.out_dir = out

    @contextlib.asynccontextmanager
    async def sandbox(self, env: EnvSpec) -> AsyncIterator[Any]:
        sb = await self.runner.open(env, 0)
        try:
            yield sb
        finally:
            await sb.close()

    async def env(self, env_id: str) -> EnvSpec:
        return self.envs[env_id]


def _request(path: Path) -> EnvRequested:
    return EnvRequested(run="r", id="e", time=0.0, source_kind="pinchbench", source=str(path))


def _verdict(score: float) -> dict[str, Any]:
    return completion(json.dumps({"score": score, "verdict": "incomplete", "reason": "scripted"}))


def _judge(srv: ScriptedServer) -> Judge:
    return Judge(
        JudgeSettings(
            base_url=srv.base_url, api_key="sk-x", model="judge-model", backoff=0.01,
            backoff_max=0.02, request_timeout=5.0, max_retries=0,
        )
    )  # fmt: skip


async def _tasks(ctx: Ctx) -> dict[str, Task]:
    envs = PinchBenchSynthesizer(PinchBenchSettings(**JUDGED)).synthesize(_request(TASKS), ctx)
    ctx.envs = {e.id: e for e in envs}
    out = {}
    for env in envs:
        async for task in WorkspaceSampler().sample(env, ctx):
            out[env.id] = task
    return out


def _answered(task: Task, answer: str) -> Trajectory:
    return Trajectory(
        task_id=task.id,
        policy="openai",
        final_state={TABLE: []},
        final_answer=answer,
        messages=[
            {"role": "system", "content": "sys"},
            {"role": "user", "content": task.request},
            {"role": "assistant", "content": answer},
        ],
    )


def test_with_a_judge_judge_only_tasks_are_imported_and_accounted_for(tmp_path):
    envs = PinchBenchSynthesizer(PinchBenchSettings(**JUDGED)).synthesize(
        _request(TASKS), Ctx(ProcessRunner(), tmp_path)
    )
    sources = json.loads((tmp_path / "sources.json").read_text())[f"pinchbench:{TASKS}"]
    assert sources["counts"] == {"imported": 22, "missing_asset": 1}
    assert len(envs) == 22 and envs[0].skipped == {"missing_asset": 1}
    by = {f["file"]: f for f in sources["files"]}
    assert by["task_03_blog.md"]["grading_type"] == "llm_judge"
    assert "scored by the run's judge (judge)" in by["task_03_blog.md"]["reason"]
    assert "automated x 0.4 + llm_judge x 0.6" in by["task_16_email_triage.md"]["reason"]
    # without a judge: not imported, and the reason says why and what to set
    PinchBenchSynthesizer().synthesize(_request(TASKS), Ctx(ProcessRunner(), tmp_path / "n"))
    none = json.loads((tmp_path / "n" / "sources.json").read_text())[f"pinchbench:{TASKS}"]
    blog = next(f for f in none["files"] if f["file"] == "task_03_blog.md")
    assert blog["status"] == "llm_judge_only" and blog["reason"].startswith("not scored:")
    assert 'pinchbench.judge = "judge"' in blog["reason"]
    # a judge named, but the run's reward model is another: no judge either (never a silent 0)
    other = Ctx(ProcessRunner(), tmp_path / "o")
    other.config.reward = "traceoutcome"  # type: ignore[attr-defined]
    envs = PinchBenchSynthesizer(PinchBenchSettings(**JUDGED)).synthesize(_request(TASKS), other)
    assert len(envs) == 16 and envs[0].skipped == {"llm_judge_only": 6, "missing_asset": 1}
    files = json.loads((tmp_path / "o" / "sources.json").read_text())[f"pinchbench:{TASKS}"]
    blog = next(f for f in files["files"] if f["file"] == "task_03_blog.md")
    assert "the run's reward model is 'traceoutcome'" in blog["reason"]


@pytest.mark.asyncio
async def test_hybrid_scored_by_the_judge_with_its_weights_on_the_file_rubric(tmp_path):
    runner = ProcessRunner()
    try:
        ctx = Ctx(runner, tmp_path)
        tasks = await _tasks(ctx)
        assert len(tasks) == 22
        triage = tasks["pb-task-16-email-triage"]
        file = parse_task(TASKS / "task_16_email_triage.md")
        traj = _answered(triage, "I read the inbox and wrote triage_report.md.")
        # the automated part alone, from the task's grade() in the sandbox
        alone = await script_reward(ctx, triage, traj, model="traceoutcome")
        assert any("llm_judge part (weight 0.6) not scored" in x for x in alone.reasons)
        with ScriptedServer(lambda req, n: _verdict(0.75)) as srv:
            r = await _judge(srv).score(triage, traj, ctx)
            req = srv.requests
        assert len(req) == 1 and r.error == ""
        assert r.score == pytest.approx(0.4 * alone.score + 0.6 * 0.75, abs=1e-6)
        assert r.criteria == alone.criteria and r.outcome == r.score
        assert r.reasons[0].startswith("judge: incomplete (0.75)")
        assert any("x 0.4 + llm_judge 0.750 x 0.6" in x for x in r.reasons)
        # what the judge saw: the file's rubric; the request and the transcript, and nothing of
        # the grader (its grade() code and expected values, the metadata) nor Expected Behavior
        system, user = (m["content"] for m in req[0]["messages"])
        assert file.rubric and file.rubric in system
        assert triage.request in user and "wrote triage_report.md" in user
        grader = strip_meta(triage.outcome.check)
        assert "def grade" not in user + system
        lines = [ln.strip() for ln in grader.splitlines() if len(ln.strip()) > 24]
        assert lines and not [ln for ln in lines if ln in user]
        assert file.expected[:200] not in user
        meta_blob = triage.outcome.check[len(grader) :].strip()
        assert meta_blob and meta_blob not in user
        # the values the grader looks for reach the judge only where the request or the agent
        # says them
        quoted = set(re.findall(r"[\"']([^\"'\n]{8,})[\"']", grader))
        said = triage.request + traj.final_answer
        assert quoted and not [q for q in quoted if q in user and q not in said]
    finally:
        await runner.aclose()


@pytest.mark.asyncio
async def test_judge_only_task_is_the_judge_score_or_not_scored_without_a_judge(tmp_path):
    runner = ProcessRunner()
    try:
        ctx = Ctx(runner, tmp_path)
        tasks = await _tasks(ctx)
        blog = tasks["pb-task-03-blog"]
        meta = check_meta(blog.outcome.check)
        assert meta["grading_type"] == "llm_judge" and strip_meta(blog.outcome.check).strip() == ""
        traj = _answered(blog, "I wrote blog_post.md, 500 words on remote work.")
        with ScriptedServer(lambda req, n: _verdict(0.6)) as srv:
            r = await _judge(srv).score(blog, traj, ctx)
            system = srv.requests[0]["messages"][0]["content"]
        assert r.score == 0.6 and r.outcome == 0.6 and r.error == ""
        assert meta["rubric"] and meta["rubric"] in system
        # the run's reward is not a judge: not scored, and the Reward says why (never a silent 0)
        plain = await script_reward(ctx, blog, traj, model="traceoutcome")
        assert plain.error.startswith("not scored: the task is graded only by an LLM judge")
        # a judge that fails: the failure is the Reward's error, for a hybrid too
        with ScriptedServer(lambda req, n: error(500, "down")) as srv:
            failed = await _judge(srv).score(tasks["pb-task-10-workflow"], traj, ctx)
        assert failed.error.startswith("judge failed") and failed.score == 0.0
    finally:
        await runner.aclose()
