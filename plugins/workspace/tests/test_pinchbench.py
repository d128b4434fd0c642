"""The PinchBench importer on the real task files kept in tests/data, the judge switch, and the
transcript shape ``grade()`` receives (no sandbox needed: nothing here runs a task's code)."""

from __future__ import annotations

import json
from pathlib import Path

from envkernel_kit.workspace import transcript
from envkernel_schemas import (
    CallRecord,
    EnvRequested,
    Outcome,
    Task,
    ToolCall,
    ToolResult,
    Trajectory,
)
from envkernel_workspace import PinchBenchSettings, PinchBenchSynthesizer
from envkernel_workspace.pinchbench import parse_task

TASKS = Path(__file__).resolve().parents[3] / "tests" / "data" / "pinchbench" / "tasks"


def _request(path: Path) -> EnvRequested:
    return EnvRequested(run="r", id="e", time=0.0, source_kind="pinchbench", source=str(path))


def test_real_tasks_parse_with_their_workspace_and_grade_source():
    t = parse_task(TASKS / "task_12_skill_search.md")
    assert t.grading_type == "automated" and sorted(t.files) == [
        "config/database.yml",
        "config/settings.json",
    ]
    assert (
        "def grade(transcript: list, workspace_path: str) -> dict:" in t.check
        and t.prompt.startswith("I need to update")
    )
    assert [c.name for c in t.reference] == [
        "exec",
        "read",
        "write",
    ]  # ours, from the .reference.json beside it
    blog = parse_task(TASKS / "task_03_blog.md")
    assert blog.grading_type == "llm_judge" and blog.rubric and not blog.check


def test_judge_only_tasks_need_a_judge_and_are_counted_apart():
    without = PinchBenchSynthesizer().synthesize(_request(TASKS))
    assert sorted(e.id for e in without) == [
        "pb-task-00-sanity",
        "pb-task-09-files",
        "pb-task-12-skill-search",
    ]
    assert without[0].skipped == {"llm_judge_only": 1} and without[0].operations == 4
    with_judge = PinchBenchSynthesizer(PinchBenchSettings(judge="judge")).synthesize(
        _request(TASKS)
    )
    assert "pb-task-03-blog" in {e.id for e in with_judge} and with_judge[0].skipped == {}


def test_the_transcript_has_the_openclaw_event_shape():
    task = Task(id="t", env_id="e", request="Tidy up", calls=[], outcome=Outcome(mutates=True))
    rec = CallRecord(
        call=ToolCall(name="write", arguments={"path": "a.txt", "content": "x"}, id="c1"),
        result=ToolResult(ok=True, value={"path": "a.txt", "bytes": 1}),
    )
    events = transcript(
        task, Trajectory(task_id="t", policy="p", calls=[rec], final_answer="Done.")
    )
    assert [e["message"]["role"] for e in events] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]
    call = events[1]["message"]["content"][0]
    assert call == {
        "type": "toolCall",
        "id": "c1",
        "name": "write",
        "arguments": {"path": "a.txt", "content": "x"},
        "params": {"path": "a.txt", "content": "x"},
    }
    assert (
        events[2]["message"]["toolCallId"] == "c1"
        and json.loads(events[2]["message"]["content"][0]["text"])["bytes"] == 1
    )
    chat = Trajectory(
        task_id="t",
        policy="p",
        final_answer="ok",
        messages=[
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "Tidy up"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path": "b"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c2", "content": '{"content": "hi"}'},
            {"role": "assistant", "content": "ok"},
        ],
    )
    ev = transcript(task, chat)
    assert [e["message"]["role"] for e in ev] == ["user", "assistant", "toolResult", "assistant"]
    assert ev[1]["message"]["content"] == [
        {
            "type": "toolCall",
            "id": "c2",
            "name": "read",
            "arguments": {"path": "b"},
            "params": {"path": "b"},
        }
    ]
    assert ev[3]["message"]["content"] == [{"type": "text", "text": "ok"}]
