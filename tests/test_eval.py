"""``envkernel eval`` and ``run --gate-solver`` end to end, on real PinchBench task files
(tests/data/pinchbench), against a scripted OpenAI-compatible model server through the ``openai``
policy (the real client path: SDK, HTTP, the run's embedded NATS server, sandboxes).

The scripted model, by task prompt:

- ``task_00_sanity``: says "Hello, I'm ready!" (the check asks only for an answer): solved always;
- ``task_09_files``: its first conversation writes the whole skeleton (solved), every later one
  forgets ``.gitignore`` (5 of the 7 criteria: 0.714);
- ``task_12_skill_search``: declines, no tool call: every criterion 0.

So with k = 2: per-task means 1, (1 + 5/7) / 2 and 0; pass@1 = (1 + 0.5 + 0) / 3 = 0.5;
pass@2 = (1 + 1 + 0) / 3 = 2/3; mean = (1 + 0.857 + 0) / 3 = 0.619.
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from envkernel.evaluation import figures, pass_at_k
from envkernel_kit.scripted import ScriptedServer, completion, error, tool_call

pytest.importorskip("envkernel_workspace")
pytest.importorskip("envkernel_openai")

PINCH = Path(__file__).parent / "data" / "pinchbench" / "tasks"
FILES = ["task_00_sanity.md", "task_09_files.md", "task_12_skill_search.md"]
SKELETON = {
    "src/main.py": 'def main():\n    print("Hello, world!")\n\n\nmain()\n',
    "README.md": "# Hello Project\n\nA minimal Python project.\n",
    ".gitignore": "__pycache__/\n*.pyc\n",
}


def _tool(request: dict[str, Any], word: str) -> tuple[str, str, str]:
    """The offered tool whose name has ``word`` and its path and content parameters (whatever the
    tools are called: the source may name them as OpenClaw does)."""
    for t in request.get("tools") or []:
        fn = t.get("function") or {}
        if word in fn.get("name", ""):
            props = list((fn.get("parameters") or {}).get("properties") or {})
            path = next(p for p in props if "path" in p)
            content = next((p for p in props if "content" in p), "")
            return fn["name"], path, content
    raise AssertionError(
        f"no {word} tool offered: {[t['function']['name'] for t in request['tools']]}"
    )


class Model:
    """The scripted model of the module docstring (``good=False``: it solves nothing but the sanity
    check)."""

    def __init__(self, good: bool = True) -> None:
        self.good = good
        self.lock = threading.Lock()
        self.skeletons = 0

    def __call__(self, request: dict[str, Any], n: int) -> Any:
        msgs = request["messages"]
        user = next(m["content"] for m in msgs if m["role"] == "user")
        tools_done = [m for m in msgs if m["role"] == "tool"]
        if "Hello, I'm ready" in user:
            return completion("Hello, I'm ready!")
        if "project structure" in user and self.good:
            if (
                not tools_done
            ):  # a new conversation: the first one writes it all, later ones forget one file
                with self.lock:
                    self.skeletons += 1
                    full = self.skeletons == 1
                name, path, content = _tool(request, "write")
                files = (
                    SKELETON if full else {k: v for k, v in SKELETON.items() if k != ".gitignore"}
                )
                return completion(
                    "",
                    [
                        tool_call(name, {path: p, content: c}, id=f"call_{i}")
                        for i, (p, c) in enumerate(files.items())
                    ],
                )
            return completion("I created the project structure.")
        return completion("Sorry, I can't do that.")


def model_env(srv: ScriptedServer) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": srv.base_url,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_MODEL": "scripted",
    }


def sources(root: Path = PINCH) -> list[str]:
    return [a for f in FILES for a in ("--source", f"pinchbench:{root / f}")]


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def evaluate(envk: Any, run_id: str, *args: str, env: dict[str, str], timeout: float = 200) -> Any:
    proc = envk(
        "eval",
        "--out",
        "out",
        "--run-id",
        run_id,
        "--no-progress",
        "--plugins",
        "+openai",
        "--policy",
        "openai",
        "--timeout",
        "180",
        *args,
        env=env,
        timeout=timeout,
    )
    return proc, envk.cwd / "out" / run_id


@pytest.fixture(scope="module")
def evaluated(envk_factory: Any) -> Any:
    envk = envk_factory("eval")
    model = Model()
    with ScriptedServer(model) as srv:
        proc, folder = evaluate(envk, "good", "--k", "2", *sources(), env=model_env(srv))
        requests = len(srv.requests)
    return envk, proc, folder, requests


def test_eval_scores_imported_tasks_with_no_gate_and_no_reference(evaluated: Any) -> None:
    _envk, proc, folder, requests = evaluated
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert requests > 0
    rows = lines(folder / "results.jsonl")
    assert len(rows) == 6  # 3 tasks x k = 2
    by_env: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_env.setdefault(r["env_id"], []).append(r)
    assert sorted(by_env) == ["pb-task-00-sanity", "pb-task-09-files", "pb-task-12-skill-search"]
    for env_id, rs in by_env.items():
        assert sorted(r["attempt"] for r in rs) == [0, 1]
        for r in rs:
            assert r["policy"] == "openai" and r["termination"] == "answer"
            assert r["source_file"].endswith(env_id.removeprefix("pb-").replace("-", "_") + ".md")
            assert r["source"].startswith("pinchbench:") and r["tokens"]["prompt"] > 0
            assert r["turns"] >= 1 and r["seconds"] > 0 and r["split"] in ("train", "heldout")
    assert [r["score"] for r in by_env["pb-task-00-sanity"]] == [1.0, 1.0]
    assert by_env["pb-task-00-sanity"][0]["criteria"] == {"agent_responded": 1.0}
    assert sorted(r["score"] for r in by_env["pb-task-09-files"]) == [round(5 / 7, 6), 1.0]
    partial = min(by_env["pb-task-09-files"], key=lambda r: r["score"])
    assert (
        partial["criteria"]["gitignore_created"] == 0.0
        and partial["criteria"]["src_directory"] == 1.0
    )
    assert not partial["passed"] and len(partial["criteria"]) == 7
    assert [r["score"] for r in by_env["pb-task-12-skill-search"]] == [0.0, 0.0]
    assert set(by_env["pb-task-12-skill-search"][0]["criteria"].values()) == {0.0}
    assert all(r["category"] == "file_ops" for r in by_env["pb-task-12-skill-search"])

    ev = json.loads((folder / "eval.json").read_text())
    o = ev["overall"]
    assert ev["k"] == 2 and ev["tasks"] == 3 and ev["attempts"] == 6 and ev["attempts_failed"] == 0
    assert o["pass@1"] == 0.5 and o["pass@k"] == round(2 / 3, 4)
    assert o["mean"] == round((1 + (1 + 5 / 7) / 2 + 0) / 3, 4)
    assert o["mean_ci"][0] <= o["mean"] <= o["mean_ci"][1] and o["pass@k_ci"][1] <= 1.0
    assert ev["by_category"]["basic"]["pass@1"] == 1.0
    assert ev["by_category"]["file_ops"]["pass@1"] == 0.25
    assert ev["by_category"]["file_ops"]["pass@k"] == 0.5
    assert sum(g["tasks"] for g in ev["by_source"].values()) == 3 and len(ev["by_source"]) == 3
    summary = json.loads((folder / "summary.json").read_text())
    assert (
        summary["tasks"] == 3 and summary["tasks_rejected"] == 0 and summary["gate_rollouts"] == 0
    )
    assert summary["eval"]["overall"]["pass@1"] == 0.5
    # the table on the terminal
    assert "overall" in proc.stdout and "pass@2" in proc.stdout and "0.500" in proc.stdout
    assert "category file_ops" in proc.stdout and "pb-task-09-files" in proc.stdout
    # the evaluated tasks and their environments are in the folder: it is a task source in turn
    assert (
        len(lines(folder / "tasks.jsonl")) == 3 and (folder / "envs" / "pb-task-09-files").is_dir()
    )


def test_eval_a_previous_runs_tasks_heldout_by_default_and_compare(evaluated: Any) -> None:
    envk, _proc, first, _ = evaluated
    tasks = lines(first / "tasks.jsonl")
    heldout = sorted(t["env_id"] for t in tasks if t["split"] == "heldout")
    assert heldout == [
        "pb-task-09-files"
    ]  # the workspace sampler's split, by a hash of the task id
    with ScriptedServer(Model(good=False)) as srv:
        proc, folder = evaluate(
            envk, "bad", "--tasks", str(first), "--split", "all", env=model_env(srv)
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        default, dfolder = evaluate(
            envk, "held", "--tasks", str(first / "tasks.jsonl"), env=model_env(srv)
        )
    rows = lines(folder / "results.jsonl")
    assert sorted(r["env_id"] for r in rows) == sorted(t["env_id"] for t in tasks)
    assert all(r["source"] == str(first / "tasks.jsonl") for r in rows)
    assert {r["env_id"]: r["score"] for r in rows} == {
        "pb-task-00-sanity": 1.0,
        "pb-task-09-files": 0.0,
        "pb-task-12-skill-search": 0.0,
    }
    ev = json.loads((folder / "eval.json").read_text())
    assert ev["k"] == 1 and ev["overall"]["mean"] == round(1 / 3, 4) == ev["overall"]["pass@1"]
    # the default split is the held-out one
    held_rows = lines(dfolder / "results.jsonl") if (dfolder / "results.jsonl").exists() else []
    assert sorted(r["env_id"] for r in held_rows) == heldout
    assert default.returncode == 0, default.stderr[-2000:]

    cmp = envk("eval", "--compare", str(first), str(folder), "--json")
    assert cmp.returncode == 0, cmp.stderr
    c = json.loads(cmp.stdout)
    assert c["common_tasks"] == 3
    delta = {t["env_id"]: t["delta"]["mean"] for t in c["per_task"]}
    assert delta == {
        "pb-task-00-sanity": 0.0,
        "pb-task-09-files": round(-(1 + 5 / 7) / 2, 4),
        "pb-task-12-skill-search": 0.0,
    }
    assert c["overall"]["pass@1"]["delta"] == round(1 / 3 - 0.5, 4)
    text = envk("eval", "--compare", str(first), str(folder))
    assert (
        text.returncode == 0 and "pb-task-09-files" in text.stdout and "overall mean" in text.stdout
    )


def test_gate_solver_makes_references_and_reports_the_unsolved(envk: Any, tmp_path: Path) -> None:
    """The task files copied without their reference sidecars: the solver's solution becomes the
    reference of task_09 (it solves it in 1 of 2 attempts); task_12 is never solved (unsolved);
    task_00 is solved but the gate rejects it (do-nothing also answers, so it scores 1)."""
    root = tmp_path / "pb"
    root.mkdir()
    for f in FILES:
        shutil.copy(PINCH / f, root / f)
    with ScriptedServer(Model()) as srv:
        folder = envk.run(
            "--plugins",
            "+openai",
            "--gate-solver",
            "openai",
            "--k",
            "2",
            *sources(root),
            run_id="solver",
            source=None,
            env=model_env(srv),
            timeout=240,
        )
    assert folder.proc.returncode == 0, folder.proc.stderr[-3000:]
    s = folder.summary
    assert s["tasks"] == 1 and s["tasks_solver_reference"] == 1 and s["tasks_unsolved"] == 1
    assert s["rejected"] == {"task:nothing_above_0": 1, "task:unsolved": 1}
    (task,) = folder.jsonl("tasks.jsonl")
    assert task["env_id"] == "pb-task-09-files" and task["reference_by"] == "openai"
    assert sorted(c["arguments"]["path"] for c in task["calls"]) == sorted(SKELETON)
    assert task["outcome"]["answer"] == "I created the project structure."
    rejected = {r["reason"]: r for r in folder.jsonl("rejected.jsonl")}
    assert "0 of 2 attempts" in rejected["unsolved"]["detail"]
    # the emitted task was rolled out by the reference policy (its new reference) and scored 1
    assert [r["reward"]["score"] for r in folder.jsonl("rollouts.jsonl")] == [1.0]
    assert "1 tasks kept with its solution as reference, 1 unsolved" in folder.proc.stderr


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    assert pass_at_k(4, 2, 1) == 0.5 and pass_at_k(4, 0, 2) == 0.0 and pass_at_k(4, 3, 2) == 1.0
    assert pass_at_k(4, 1, 2) == pytest.approx(1 - 3 / 6)  # 1 - C(3,2)/C(4,2)
    rows = [
        {"task_id": t, "env_id": t, "category": "c", "source": "s", "source_file": "", "score": sc}
        for t, scores in (("a", [1, 1, 0, 0]), ("b", [0, 0, 0, 0]), ("c", [1, None, 1, 0]))
        for sc in scores
    ]
    ev = figures(rows, k=2)
    assert ev["attempts"] == 11 and ev["attempts_failed"] == 1
    # a: 2 of 4, b: 0 of 4, c: 2 of 3
    assert ev["overall"]["pass@1"] == round((0.5 + 0 + 2 / 3) / 3, 4)
    assert ev["overall"]["pass@k"] == round((1 - 1 / 6 + 0 + 1.0) / 3, 4)


SKILL = Path(__file__).parent / "data" / "pinchbench" / "skill" / "tasks"
FACTS = (
    "# Memory\n\n- Favorite language: Rust (started January 15, 2024)\n"
    "- Mentor: Dr. Elena Vasquez, Stanford\n- Project: NeonDB, a distributed key-value store\n"
    '- Secret phrase: "purple elephant sunrise"\n'
)
PROBE = """---
id: task_90_session_probe
name: Session probe
category: memory
grading_type: automated
timeout_seconds: 60
multi_session: true
sessions:
  - id: one
    prompt: Probe one, please write notes.txt.
  - id: two
    prompt: Probe two, still the same session.
  - id: three
    new_session: true
    prompt: Probe three, a new session.
workspace_files: []
---

## Prompt

This is a multi-session task. See the `sessions` field in the frontmatter.

## Expected Behavior

Each session answered.

## Grading Criteria

- [ ] the transcript holds every session

## Automated Checks

```python
def grade(transcript: list, workspace_path: str) -> dict:
    heads = [e.get("id") for e in transcript if e.get("type") == "session"]
    said = [
        e["message"]["content"][0]["text"]
        for e in transcript
        if e.get("type") == "message" and e["message"]["role"] == "user"
    ]
    replies = [
        e for e in transcript if e.get("type") == "message" and e["message"]["role"] == "assistant"
    ]
    asked = [s.split(",")[0] for s in said]
    return {
        "sessions": 1.0 if heads == ["one", "three"] else 0.0,
        "prompts": 1.0 if asked == ["Probe one", "Probe two", "Probe three"] else 0.0,
        "replies": 1.0 if len(replies) >= 4 else 0.0,
    }
```
"""


class SessionModel:
    """A model for multi-session tasks (task_22 and the probe), answering the last user message: it
    stores the facts with ``write_file``, recalls them from the conversation, reads the file back in
    a new session. Thread-safe: it holds no state (the server keeps every request)."""

    def __call__(self, request: dict[str, Any], n: int) -> Any:
        msgs = request["messages"]
        last = max(i for i, m in enumerate(msgs) if m["role"] == "user")
        said, after = msgs[last]["content"], msgs[last + 1 :]
        done = [m for m in after if m["role"] == "tool"]
        if "remember this important information" in said or "Probe one" in said:
            if not done:
                name, path, content = _tool(request, "write")
                where = "memory/MEMORY.md" if "remember" in said else "notes.txt"
                return completion("", [tool_call(name, {path: where, content: FACTS}, id="w")])
            return completion("I have stored it in memory/MEMORY.md.")
        if "What programming language am I learning" in said or "Probe two" in said:
            earlier = " ".join(str(m.get("content") or "") for m in msgs[:last])
            known = "Rust" in earlier and "NeonDB" in earlier
            return completion(
                "You are learning Rust; your project is NeonDB." if known else "I don't know."
            )
        if "I previously saved" in said or "Probe three" in said:
            if not done:
                name, path, _ = _tool(request, "read")
                return completion("", [tool_call(name, {path: "memory/MEMORY.md"}, id="r")])
            return completion(
                "1. Rust 2. January 15, 2024 3. Dr. Elena Vasquez, Stanford 4. NeonDB, a "
                'distributed key-value store 5. "purple elephant sunrise"'
            )
        return completion("Sorry, I can't do that.")


def _opening(request: dict[str, Any]) -> str:
    """The user message a request's conversation ends with (its session's prompt, at its start)."""
    return next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")


def test_multi_session_tasks_run_as_their_sessions(envk: Any, tmp_path: Path) -> None:
    """task_22 (three sessions, the third ``new_session``) and a probe whose grade() checks the
    transcript: the server sees a new conversation (nothing earlier) at the first and at the
    ``new_session`` session, the second session going on with the first's conversation; the grader
    gets every session, each new conversation after an OpenClaw session header."""
    probe = tmp_path / "task_90_session_probe.md"
    probe.write_text(PROBE)
    with ScriptedServer(SessionModel()) as srv:
        proc, folder = evaluate(
            envk,
            "sessions",
            "--source",
            f"pinchbench:{SKILL / 'task_22_second_brain.md'}",
            "--source",
            f"pinchbench:{probe}",
            env=model_env(srv),
        )
        requests = list(srv.requests)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["env_id"]: r for r in lines(folder / "results.jsonl")}
    assert sorted(rows) == ["pb-task-22-second-brain", "pb-task-90-session-probe"]

    def firsts(word: str) -> list[dict[str, Any]]:
        """The requests that open the session whose prompt has ``word`` (no reply after it yet)."""
        return [r for r in requests if word in _opening(r) and r["messages"][-1]["role"] == "user"]

    (one,) = firsts("remember this important information")
    (two,) = firsts("What programming language am I learning")
    (three,) = firsts("I previously saved")
    assert [m["role"] for m in one["messages"]] == ["system", "user"]
    # the second session goes on with the first's conversation (PinchBench: "the same session")
    assert two["messages"][: len(one["messages"])] == one["messages"]
    assert [m["role"] for m in two["messages"]] == [
        "system", "user", "assistant", "tool", "assistant", "user",
    ]  # fmt: skip
    # the third is a new session: a new conversation, nothing of the earlier ones sent
    assert [m["role"] for m in three["messages"]] == ["system", "user"]
    assert "Rust" not in json.dumps(three["messages"])
    r22 = rows["pb-task-22-second-brain"]
    assert r22["termination"] == "answer" and r22["turns"] == 5
    assert r22["criteria"] == {"memory_tool_used": 1.0, "recall_tool_used": 1.0}
    assert r22["score"] == 1.0  # the automated part alone: no judge in this run (said in reasons)
    # the grader's transcript holds all three sessions, the third after its own session header
    rp = rows["pb-task-90-session-probe"]
    assert rp["criteria"] == {"sessions": 1.0, "prompts": 1.0, "replies": 1.0}, rp
    assert rp["score"] == 1.0 and rp["termination"] == "answer"
    (p3,) = firsts("Probe three")
    assert [m["role"] for m in p3["messages"]] == ["system", "user"]


def test_a_model_that_never_answers_gives_no_scores_not_zeros(envk_factory: Any) -> None:
    """A wrong model URL or a server that fails every call (HTTP 404 here) is not a model that
    scores 0: each attempt is listed with its error and out of the figures."""
    envk = envk_factory("eval-down")
    with ScriptedServer(lambda request, n: error(404, "no such model")) as srv:
        proc, folder = evaluate(envk, "down", *sources(), env=model_env(srv))
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = lines(folder / "results.jsonl")
    assert len(rows) == len(FILES)
    assert all(r["score"] is None and r["termination"] == "error" for r in rows), rows
    assert all("404" in r["error"] for r in rows), [r["error"] for r in rows]
    data = json.loads((folder / "eval.json").read_text())
    assert data["attempts_failed"] == len(FILES)
    assert "attempts failed (no score" in proc.stdout
