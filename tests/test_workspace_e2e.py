"""Workspace tasks end to end: ``envkernel run --source workspace`` (one variant of each of the 7
archetypes) and ``--source pinchbench:PATH`` (real PinchBench tasks, kept in tests/data) in one
run, through the gate (reference = 1, do-nothing = 0, near-miss mutants < 1), with the PinchBench
exporter; the exported files read back as the same tasks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest
import yaml

from envkernel_kit.workspace import strip_meta
from envkernel_schemas import Task
from envkernel_workspace.archetypes import ARCHETYPES, make_variant
from envkernel_workspace.pinchbench import PinchBenchError, export_name, parse_task

PINCH = Path(__file__).parent / "data" / "pinchbench" / "tasks"


@pytest.fixture(scope="module")
def run(envk_factory):
    envk = envk_factory("workspace")
    folder = envk.run(
        "--source",
        "workspace",
        "--source",
        f"pinchbench:{PINCH}",
        "--set",
        "workspace.variants=1",
        "--plugins",
        "+workspace-export",
        run_id="ws",
        source=None,
        timeout=240,
    )
    return envk, folder


def test_every_archetype_gives_a_gated_task_and_mutants_are_killed(run):
    _envk, folder = run
    assert folder.proc.returncode == 0, folder.proc.stderr[-3000:]
    s = folder.summary
    tasks = folder.jsonl("tasks.jsonl")
    ws = [t for t in tasks if t["env_id"].startswith("ws-")]
    assert sorted(t["env_id"] for t in ws) == sorted(f"ws-{a}-1" for a in ARCHETYPES)
    for t in ws:
        assert (
            t["outcome"]["check"].count("def grade(") == 1
            and t["calls"]
            and "workspace" in t["outcome"]["expected_state"]
        )
    for env_id, kinds in s["mutants"].items():
        if env_id.startswith("ws-"):
            assert kinds["drop_last"]["killed"] == kinds["drop_last"]["applied"] == 1
            assert kinds["change_arg"]["killed"] == kinds["change_arg"]["applied"] == 1
    rollouts = folder.jsonl("rollouts.jsonl")
    assert rollouts and all(r["reward"]["score"] == 1.0 for r in rollouts)
    assert all(r["trajectory"]["final_state"]["workspace"] for r in rollouts)


def test_pinchbench_tasks_are_imported_graded_in_the_sandbox_and_judge_tasks_counted_apart(run):
    _envk, folder = run
    v = folder.summary["verification"]
    pb = {k: x for k, x in v.items() if k.startswith("pb-")}
    assert sorted(pb) == [
        "pb-task-00-sanity",
        "pb-task-09-files",
        "pb-task-12-skill-search",
    ]  # task_03_blog: llm_judge only
    assert pb["pb-task-00-sanity"]["skipped"] == {"llm_judge_only": 1}
    # the per-env line: a workspace's tools are not its source's operations, which are task files
    first = pb["pb-task-00-sanity"]
    assert first["kind"] == "workspace" and first["operations"] == 4
    assert (
        f"env pb-task-00-sanity: kept, {first['tools_kept']} tools kept (its source: 4 task "
        "files; skipped 1 llm_judge_only), " in folder.proc.stderr
    )
    assert (
        f"env pb-task-09-files: kept, {pb['pb-task-09-files']['tools_kept']} tools kept, 1 tasks"
        in folder.proc.stderr
    )
    assert "operations" not in "".join(
        line for line in folder.proc.stderr.splitlines() if line.startswith("env pb-")
    )
    assert pb["pb-task-09-files"]["tasks"] == pb["pb-task-12-skill-search"]["tasks"] == 1
    rejected = {r["task_id"]: r for r in folder.jsonl("rejected.jsonl")}
    # the sanity check only asks for an assistant message, which the do-nothing policy also writes
    assert [r["reason"] for r in rejected.values()] == ["nothing_above_0"]


def test_exported_tasks_are_pinchbench_files_that_import_again(run):
    _envk, folder = run
    out = folder.dir / "pinchbench"
    files = sorted(out.glob("task_*.md"))
    assert len(files) == len(
        [t for t in folder.jsonl("tasks.jsonl") if t["env_id"] != "ws-crm-1"]
    )  # an app has no place in the format
    text = files[0].read_text()
    meta = yaml.safe_load(re.match(r"^---\n(.*?)\n---\n", text, re.DOTALL).group(1))
    assert set(meta) == {
        "id",
        "name",
        "category",
        "grading_type",
        "timeout_seconds",
        "workspace_files",
    }
    assert meta["grading_type"] == "automated" and all(
        set(f) == {"path", "content"} for f in meta["workspace_files"]
    )
    for section in (
        "## Prompt",
        "## Expected Behavior",
        "## Grading Criteria",
        "## Automated Checks",
        "## Reference Solution",
    ):
        assert section in text
    # an imported PinchBench task keeps its file name and id; the others are task_<task id>.md
    by_name = {export_name(msgspec.convert(t, Task)): t for t in folder.jsonl("tasks.jsonl")}
    assert {"task_09_files.md", "task_12_skill_search.md"} <= {f.name for f in files}
    # read back: the same prompt, workspace, check and reference chain (so the gate passes it again)
    for f in files:
        back = parse_task(f)
        task = by_name[f.name]
        env = json.loads((folder.dir / "envs" / task["env_id"] / "workspace.json").read_text())
        assert (
            back.prompt == task["request"]
            and back.check.strip() == strip_meta(task["outcome"]["check"]).strip()
        )
        assert [(c.name, c.arguments) for c in back.reference] == [
            (c["name"], c["arguments"]) for c in task["calls"]
        ]
        assert back.files == env["files"]


def test_variants_are_deterministic_distinct_and_bad_files_are_explained(tmp_path):
    for a in ARCHETYPES:
        one, same, other = make_variant(a, 1), make_variant(a, 1), make_variant(a, 2)
        assert one.files == same.files and one.check == same.check
        assert one.files != other.files
        assert len(one.files) >= 4  # the files the task needs plus distractors
    bad = tmp_path / "task_x.md"
    bad.write_text("no front matter\n")
    with pytest.raises(PinchBenchError, match="front matter"):
        parse_task(bad)
    bad.write_text("---\nid: t\ngrading_type: automated\n---\n\n## Prompt\n\nDo it.\n")
    with pytest.raises(PinchBenchError, match="grade()"):
        parse_task(bad)
    bad.write_text(
        "---\nid: t\nworkspace_files:\n  - path: ../escape\n    content: x\n---\n\n## "
        "Prompt\n\nDo it.\n\n## Automated Checks\n\n```python\ndef grade(t, w):\n    return "
        "{}\n```\n"
    )
    with pytest.raises(PinchBenchError, match="relative path"):
        parse_task(bad)


def test_the_export_command_writes_the_same_files_from_a_finished_run(run, tmp_path):
    envk, folder = run
    proc = envk("workspace", "export", str(folder.dir), "--out", str(tmp_path / "pb"))
    assert proc.returncode == 0, proc.stderr
    exported = sorted(p.name for p in (folder.dir / "pinchbench").glob("task_*.md"))
    assert sorted(p.name for p in (tmp_path / "pb").glob("task_*.md")) == exported
    assert all(
        (tmp_path / "pb" / n).read_text() == (folder.dir / "pinchbench" / n).read_text()
        for n in exported
    )
    assert "uses an app" in proc.stderr  # the crm task: the format has no place for its app
    bad = envk("workspace", "export", str(tmp_path))
    assert bad.returncode == 2 and "tasks.jsonl" in bad.stderr
