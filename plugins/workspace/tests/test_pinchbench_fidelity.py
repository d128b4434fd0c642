"""PinchBench fidelity on the real task set (tests/data/pinchbench/skill, MIT): per-file
accounting, duplicate ids, tool names, one clock for grader and shell, sessions, hybrids, the
reference's answer, and the export round trip through PinchBench's own loader (``lib_tasks.py``).

Every task's ``grade()`` runs in the real process sandbox (``envkernel_process``), never here."""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
import json
import re
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import structlog

from envkernel_kit.workspace import (
    TABLE,
    check_meta,
    embed_meta,
    run_grader_script,
    script_reward,
    strip_meta,
    task_sessions,
    transcript,
)
from envkernel_process import ProcessRunner
from envkernel_schemas import (
    CallRecord,
    EnvRequested,
    EnvSpec,
    Outcome,
    Task,
    ToolCall,
    ToolResult,
    Trajectory,
)
from envkernel_workspace import PinchBenchSettings, PinchBenchSynthesizer, WorkspaceSampler
from envkernel_workspace.pinchbench import export_name, export_task, parse_task

SKILL = Path(__file__).resolve().parents[3] / "tests" / "data" / "pinchbench" / "skill"
TASKS = SKILL / "tasks"
OURS = SKILL.parent / "tasks"  # the four-file set with our reference chains beside them


def _loader() -> Any:
    """PinchBench's own task loader (skill/scripts/lib_tasks.py, unchanged, MIT)."""
    spec = importlib.util.spec_from_file_location(
        "pinchbench_lib_tasks", SKILL / "scripts" / "lib_tasks.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _pinch_grading_code(automated_checks: str) -> str:
    """PinchBench's ``_extract_grading_code`` (scripts/lib_grading.py, same regex)."""
    m = re.search(r"```python\s*(.*?)\s*```", automated_checks, re.DOTALL)
    return m.group(1) if m else ""


class Ctx:
    """A component context over the real process sandbox: what the sampler and reward side use."""

    def __init__(self, runner: ProcessRunner, out: Path | None = None) -> None:
        self.runner = runner
        self.envs: dict[str, EnvSpec] = {}
        self.component = "workspace-tasks"
        self.log = structlog.get_logger("test")
        self.config = type("Config", (), {"out": str(out) if out else ""})()
        self.out_dir = out or Path(".")

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


def test_every_file_is_accounted_for_by_name_and_reason(tmp_path):
    ctx = Ctx(ProcessRunner(), tmp_path)
    envs = PinchBenchSynthesizer().synthesize(_request(TASKS), ctx)
    sources = json.loads((tmp_path / "sources.json").read_text())
    files = sources[f"pinchbench:{TASKS}"]["files"]
    assert sorted(f["file"] for f in files) == sorted(p.name for p in TASKS.glob("task_*.md"))
    assert sources[f"pinchbench:{TASKS}"]["counts"] == {
        "imported": 16,
        "llm_judge_only": 6,
        "missing_asset": 1,
    }
    by = {f["file"]: f for f in files}
    assert by["task_20_eli5_pdf_summary.md"]["status"] == "missing_asset"
    assert "GPT4.pdf" in by["task_20_eli5_pdf_summary.md"]["reason"]
    assert by["task_03_blog.md"]["status"] == "llm_judge_only" and by["task_03_blog.md"]["id"]
    assert by["task_16_email_triage.md"]["env"] == "pb-task-16-email-triage"
    assert "not scored" in by["task_16_email_triage.md"]["reason"]
    assert len(envs) == 16 and envs[0].skipped == {"llm_judge_only": 6, "missing_asset": 1}


def test_duplicate_ids_are_refused_naming_both_files(tmp_path):
    (tmp_path / "tasks").mkdir()
    shutil.copy(TASKS / "task_09_files.md", tmp_path / "tasks" / "task_09_files.md")
    text = (
        (TASKS / "task_00_sanity.md").read_text().replace("id: task_00_sanity", "id: task_09_files")
    )
    (tmp_path / "tasks" / "task_99_copy.md").write_text(text)
    ctx = Ctx(ProcessRunner(), tmp_path / "out")
    envs = PinchBenchSynthesizer().synthesize(_request(tmp_path / "tasks"), ctx)
    assert [e.id for e in envs] == ["pb-task-09-files"]
    files = json.loads((tmp_path / "out" / "sources.json").read_text())[
        f"pinchbench:{tmp_path / 'tasks'}"
    ]["files"]
    dup = next(f for f in files if f["status"] == "duplicate_id")
    assert dup["file"] == "task_99_copy.md"
    assert "task_99_copy.md" in dup["reason"] and "task_09_files.md" in dup["reason"]


def test_tool_names_follow_the_source_pinchbench_by_default():
    env = PinchBenchSynthesizer().synthesize(_request(TASKS / "task_08_memory.md"))[0]
    names = [t.name for t in env.tools]
    assert names[:8] == [
        "read_file", "write_file", "edit_file", "apply_patch", "list_files", "glob", "grep",
        "execute_command",
    ]  # fmt: skip
    read_file = env.tools[0]
    assert "files" in read_file.parameters["properties"]
    claw = PinchBenchSynthesizer(PinchBenchSettings(tools="claw")).synthesize(
        _request(TASKS / "task_08_memory.md")
    )[0]
    assert [t.name for t in claw.tools][:2] == ["read", "write"]
    custom = PinchBenchSynthesizer(PinchBenchSettings(tools="claw", tool_names={"exec": "bash"}))
    assert "bash" in {
        t.name for t in custom.synthesize(_request(TASKS / "task_08_memory.md"))[0].tools
    }
    with pytest.raises(ValueError, match="profiles"):
        PinchBenchSettings(tools="nope")


def _record(name: str, args: dict[str, Any], value: Any, cid: str) -> CallRecord:
    return CallRecord(
        call=ToolCall(name=name, arguments=args, id=cid), result=ToolResult(ok=True, value=value)
    )


@pytest.mark.asyncio
async def test_a_grader_looking_for_read_file_is_satisfied_by_the_renamed_tool():
    runner = ProcessRunner()
    try:
        ctx = Ctx(runner)
        env = PinchBenchSynthesizer().synthesize(_request(TASKS / "task_08_memory.md"), ctx)[0]
        ctx.envs[env.id] = env
        t = parse_task(TASKS / "task_08_memory.md")
        async with ctx.sandbox(env) as sb:
            got = await sb.call("read_file", {"files": ["notes.md"]})
            assert got.ok and "Project Phoenix" in got.value["files"][0]["content"]
            answer = "The beta release deadline is June 1, 2024.\n"
            assert (await sb.call("write_file", {"path": "answer.txt", "content": answer})).ok
            state = await sb.state()
        task = Task(id="t8", env_id=env.id, request=t.prompt, calls=[], outcome=_outcome(t.check))
        traj = Trajectory(task_id="t8", policy="p", final_state=state,
                          calls=[_record("read_file", {"files": ["notes.md"]}, got.value, "c1")],
                          final_answer="The beta release is on June 1, 2024.")  # fmt: skip
        result = await run_grader_script(ctx, env, t.check, state, transcript(task, traj))
        assert set(result["scores"].values()) == {1.0}, result
        as_read = Trajectory(
            task_id="t8",
            policy="p",
            final_state=state,
            calls=[_record("read", {"path": "notes.md"}, got.value, "c1")],
        )
        old = await run_grader_script(ctx, env, t.check, state, transcript(task, as_read))
        assert old["scores"]["read_notes"] == 0.0  # the old claw name never met the criterion
    finally:
        await runner.aclose()


def _outcome(check: str) -> Any:
    from envkernel_schemas import Outcome

    return Outcome(mutates=True, check=check)


ICS = (
    "printf 'BEGIN:VCALENDAR\\nBEGIN:VEVENT\\nSUMMARY:Project Sync\\nDTSTART:%sT150000\\n"
    "ATTENDEE:mailto:john@example.com\\nDESCRIPTION:Discuss the Q1 roadmap\\nEND:VEVENT\\n"
    "END:VCALENDAR\\n' {day} > meeting.ics"
)


@pytest.mark.asyncio
async def test_one_clock_for_the_shell_and_the_grader_on_the_calendar_task():
    """task_01_calendar grades "next Tuesday" with ``datetime.now()``: a solution dated by
    ``exec``'s ``date`` scores 1; one dated by the executor's frozen clock (2026-01-15) misses the
    date."""
    runner = ProcessRunner()
    try:
        ctx = Ctx(runner)
        env = PinchBenchSynthesizer().synthesize(_request(TASKS / "task_01_calendar.md"), ctx)[0]
        ctx.envs[env.id] = env
        t = parse_task(TASKS / "task_01_calendar.md")
        task = Task(id="t1", env_id=env.id, request=t.prompt, calls=[], outcome=_outcome(t.check))
        scores = {}
        for label, day in (
            ("shell", '"$(date -d "next tuesday" +%Y%m%d)"'),
            ("frozen", "20260120"),
        ):
            async with ctx.sandbox(env) as sb:
                res = await sb.call("execute_command", {"command": ICS.format(day=day)})
                assert res.ok and res.value["exit_code"] == 0, res
                probe = await sb.call(
                    "execute_command",
                    {"command": "echo $ENVKERNEL_CLOCK $TZ; date +%s; stat -c %Y meeting.ics"},
                )
                state = await sb.state()
            clock, tz, now, mtime = probe.value["stdout"].split()
            real = dt.datetime.now(dt.UTC).timestamp()
            assert (clock, tz) == ("real", "UTC") and abs(int(now) - real) < 120
            assert abs(int(mtime) - real) < 120  # the file's mtime is on the same clock
            traj = Trajectory(task_id="t1", policy="p", final_state=state)
            reward = await script_reward(ctx, task, traj)
            scores[label] = reward.score
        assert scores["shell"] == 1.0
        assert scores["frozen"] == pytest.approx(5 / 6)
    finally:
        await runner.aclose()


def test_multi_session_tasks_keep_each_session_prompt_in_order():
    t = parse_task(TASKS / "task_22_second_brain.md")
    assert [s["id"] for s in t.sessions] == [
        "store_knowledge",
        "conversation",
        "new_session_recall",
    ]
    request = t.request()
    assert "See the `sessions` field" not in request
    at = [request.index(s["prompt"].strip()) for s in t.sessions]
    assert at == sorted(at) and "a new session" in request.split("Session 3")[1].splitlines()[0]
    assert t.weights == {} and t.grading_type == "hybrid"
    triage = parse_task(TASKS / "task_16_email_triage.md")
    assert triage.weights == {"automated": 0.4, "llm_judge": 0.6}


def test_sessions_of_a_task_and_the_transcript_of_all_of_them():
    t = parse_task(TASKS / "task_22_second_brain.md")
    task = Task(
        id="t22",
        env_id="pb-task-22-second-brain",
        request=t.request(),
        calls=[],
        outcome=Outcome(mutates=True, check=embed_meta(t.check, t.meta())),
    )
    sessions = task_sessions(task)
    assert [(s.id, s.new_conversation) for s in sessions] == [
        ("store_knowledge", True),
        ("conversation", False),  # the same session goes on (no new_session)
        ("new_session_recall", True),
    ]
    assert sessions[1].prompt == t.sessions[1]["prompt"].strip()
    plain = msgspec.structs.replace(task, outcome=Outcome(mutates=True, check=t.check))
    assert task_sessions(plain) == []
    # a rollout of the three sessions: two conversations, each from its system message
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": sessions[0].prompt},
        {"role": "assistant", "content": "Stored."},
        {"role": "user", "content": sessions[1].prompt},
        {"role": "assistant", "content": "Rust, NeonDB."},
        {"role": "system", "content": "sys"},
        {"role": "user", "content": sessions[2].prompt},
        {"role": "assistant", "content": "Rust ..."},
    ]
    traj = Trajectory(task_id="t22", policy="openai", messages=messages)
    events = transcript(task, traj)
    assert [e["type"] if e["type"] == "session" else e["message"]["role"] for e in events] == [
        "session", "user", "assistant", "user", "assistant", "session", "user", "assistant",
    ]  # fmt: skip
    assert [e["id"] for e in events if e["type"] == "session"] == [
        "store_knowledge",
        "new_session_recall",
    ]
    # a task of one conversation gets no header (its transcript is as before)
    assert all(e["type"] == "message" for e in transcript(plain, traj))


@pytest.mark.asyncio
async def test_sampled_tasks_carry_metadata_answers_are_never_the_rubric_and_hybrids_are_weighted(
    tmp_path,
):
    runner = ProcessRunner()
    try:
        ctx = Ctx(runner, tmp_path)
        envs = PinchBenchSynthesizer().synthesize(_request(TASKS), ctx)
        ctx.envs = {e.id: e for e in envs}
        tasks = {}
        for env in envs:
            async for task in WorkspaceSampler().sample(env, ctx):
                tasks[env.id] = task
        assert len(tasks) == 16
        for env_id, task in tasks.items():
            t = parse_task(Path(ctx.envs[env_id].provenance.source))
            assert task.outcome.answer == "" and (
                not t.rubric or t.rubric not in task.outcome.answer
            )
            assert check_meta(task.outcome.check)["id"] == t.id
            assert strip_meta(task.outcome.check).strip() == t.check.strip()
        # hybrid: automated part scored, the judge part reported as not scored (no judge)
        triage = tasks["pb-task-16-email-triage"]
        nothing = Trajectory(task_id=triage.id, policy="nothing", final_state={TABLE: []})
        r = await script_reward(ctx, triage, nothing)
        assert any("llm_judge part (weight 0.6) not scored" in x for x in r.reasons)
        # the reference chain of task_12 (ours, written with claw names) runs under the renamed
        # tools
        small = PinchBenchSynthesizer().synthesize(_request(OURS / "task_12_skill_search.md"))[0]
        ctx.envs[small.id] = small
        ref = [t async for t in WorkspaceSampler().sample(small, ctx)][0]
        assert [c.name for c in ref.calls] == [
            "execute_command", "read_file", "write_file",
        ]  # fmt: skip
    finally:
        await runner.aclose()


def test_hybrid_weights_combine_like_pinchbench():
    from envkernel_kit.workspace import _hybrid

    meta = {"grading_type": "hybrid", "grading_weights": {"automated": 0.4, "llm_judge": 0.6}}
    score, reasons = _hybrid(0.5, [], {**meta, "judge_score": 1.0})
    # PinchBench's _combine_grades: (auto * wa + judge * wj) / (wa + wj)
    assert score == pytest.approx((0.5 * 0.4 + 1.0 * 0.6) / 1.0) and "llm_judge 1.000" in reasons[0]
    alone, why = _hybrid(0.5, [], meta)
    assert alone == 0.5 and "not scored" in why[0]


@pytest.mark.asyncio
async def test_export_round_trips_through_pinchbench_own_loader_and_grades_the_same(tmp_path):
    lib = _loader()
    runner = ProcessRunner()
    try:
        ctx = Ctx(runner, tmp_path / "run")
        envs = PinchBenchSynthesizer().synthesize(_request(TASKS), ctx)
        ctx.envs = {e.id: e for e in envs}
        out = tmp_path / "export" / "tasks"
        out.mkdir(parents=True)
        tasks = []
        for env in envs:
            async for task in WorkspaceSampler().sample(env, ctx):
                assets: dict[str, bytes] = {}
                (out / export_name(task)).write_text(export_task(task, env, assets=assets))
                for name, data in assets.items():
                    (out.parent / "assets").mkdir(exist_ok=True)
                    (out.parent / "assets" / name).write_bytes(data)
                tasks.append((env, task))
        original = {t.task_id: t for t in lib.TaskLoader(TASKS).load_all_tasks()}
        exported = {t.task_id: t for t in lib.TaskLoader(out).load_all_tasks()}
        assert len(exported) == len(tasks) == 16
        for tid, back in exported.items():
            src = original[tid]
            assert back.file_path.name == src.file_path.name
            for field in ("name", "category", "grading_type", "timeout_seconds", "workspace_files",
                          "prompt", "expected_behavior", "grading_criteria", "llm_judge_rubric",
                          "grading_weights"):  # fmt: skip
                assert getattr(back, field) == getattr(src, field), (tid, field)
            assert back.frontmatter.get("sessions") == src.frontmatter.get("sessions")
            assert _pinch_grading_code(back.automated_checks) == _pinch_grading_code(
                src.automated_checks
            )
            assert parse_task(back.file_path).notes == parse_task(src.file_path).notes
        # and it imports into envkernel again with the same workspace (assets included)
        again = {e.id: e for e in PinchBenchSynthesizer().synthesize(_request(out))}
        for env, _task in tasks:
            assert again[env.id].behaviour == env.behaviour
        # grading: PinchBench's extracted code and envkernel's check give the same scores on the
        # same final workspaces (a reference's, where there is one, and the untouched one)
        for env, task in tasks:
            code = _pinch_grading_code(
                exported[check_meta(task.outcome.check)["id"]].automated_checks
            )
            async with ctx.sandbox(env) as sb:
                for call in task.calls:
                    assert (await sb.call(call.name, dict(call.arguments))).ok
                state = await sb.state()
            traj = Trajectory(task_id=task.id, policy="reference", final_state=state)
            events = transcript(task, traj)
            ours = await run_grader_script(ctx, env, task.outcome.check, state, events)
            theirs = await run_grader_script(ctx, env, code, state, events)
            assert ours == theirs, env.id
    finally:
        await runner.aclose()


@pytest.mark.asyncio
async def test_the_verifier_probes_every_renamed_tool():
    from envkernel_kit.workspace import verify_workspace

    runner = ProcessRunner()
    try:
        env = PinchBenchSynthesizer().synthesize(_request(TASKS / "task_08_memory.md"))[0]
        report = await verify_workspace(Ctx(runner), env)
        assert report.kept and not report.tools_dropped
        assert sorted(report.tools_kept) == sorted(t.name for t in env.tools)
    finally:
        await runner.aclose()
