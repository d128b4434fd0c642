"""End to end: a bare ``envkernel run`` (no config, default plugins, embedded NATS, process
sandboxes).

Every run here is the real CLI in a subprocess; the assertions read the run folder it leaves.
"""

from __future__ import annotations

import json
import subprocess
import sys

import msgspec
import pytest

from envkernel.plugins import default_preset
from envkernel_schemas import Task

pytestmark = pytest.mark.timeout(300)

SUMMARY_KEYS = {
    "run_id",
    "plugins",
    "envs_synthesized",
    "envs_verified",
    "tasks",
    "rollouts",
    "mean_reward",
    "rejected",
    "failures",
    "seconds",
}
OUTPUTS = ["tasks.jsonl", "rollouts.jsonl", "sft.jsonl", "rl.jsonl", "config.json", "summary.json"]


def _by_id(tasks: list[dict]) -> dict[str, dict]:
    return {t["id"]: t for t in tasks}


@pytest.fixture(scope="module")
def bare(envk_factory):  # type: ignore[no-untyped-def]
    """A bare ``envkernel run``: no config, default plugins and sources (only --out and a run
    id)."""
    envk = envk_factory("bare")
    return envk.run("--seed", "3", run_id="bare", source=None, timeout=280)


def test_bare_run_exits_0_with_a_summary(bare) -> None:  # type: ignore[no-untyped-def]
    run = bare
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    for name in OUTPUTS:
        assert (run.dir / name).is_file(), f"{name} missing from the run folder"
    s = run.summary
    assert SUMMARY_KEYS <= set(s), f"summary lacks {SUMMARY_KEYS - set(s)}"
    assert s["run_id"] == "bare" and s["exit_code"] == 0
    assert s["failures"] == 0 and s["envs_synthesized"] >= 1 and s["envs_verified"] >= 1
    assert s["tasks"] > 0
    assert (
        s["mean_reward"] == 1.0
    )  # the default policy is the reference: it solves every emitted task
    assert isinstance(s["seconds"], (int, float)) and s["seconds"] > 0
    assert isinstance(s["rejected"], dict)
    # plugins: role -> component names of the default preset
    assert set(s["plugins"]) >= {
        "synthesizer",
        "sandbox_runner",
        "verifier",
        "sampler",
        "policy",
        "reward_model",
        "trainer",
    }
    assert "chains" in s["plugins"]["sampler"] and {"reference", "nothing"} <= set(
        s["plugins"]["policy"]
    )
    assert {"sft", "rl"} <= set(s["plugins"]["trainer"])
    cfg = run.config
    assert cfg["run_id"] == "bare" and cfg["seed"] == 3 and cfg["policy"] == "reference"
    assert cfg["selected"] == default_preset()
    assert cfg["out"] == str(run.dir.resolve())


def test_bare_run_files_agree_with_the_summary(bare) -> None:  # type: ignore[no-untyped-def]
    run = bare
    s = run.summary
    envs = {p.parent.name: json.loads(p.read_text()) for p in run.dir.glob("envs/*/env.json")}
    assert len(envs) == s["envs_verified"]
    for env_id, env in envs.items():
        assert env["id"] == env_id and env["tools"] and env["report"]["kept"] is True
    tasks = run.jsonl("tasks.jsonl")
    rollouts = run.jsonl("rollouts.jsonl")
    assert len(tasks) == s["tasks"] == len(_by_id(tasks))
    assert len(rollouts) == s["rollouts"] == s["tasks"]  # G = 1
    assert all(
        r["reward"]["score"] == 1.0 and r["trajectory"]["policy"] == "reference" for r in rollouts
    )
    assert {r["task_id"] for r in rollouts} == {t["id"] for t in tasks}

    # every task is a Task record, grounded over a verified environment, with implicit intent
    for t in tasks:
        msgspec.convert(t, Task)
        tool_names = {tool["name"] for tool in envs[t["env_id"]]["tools"]}
        if t["outcome"]["expects"]:  # a refusal or confirmation under the domain policy: no call
            assert not t["calls"] and t["outcome"]["declined"] and t["outcome"]["answer"], t
            assert t["user"] and t["policy"] and not t["outcome"]["mutates"]
            continue
        assert t["calls"] and all(c["name"] in tool_names for c in t["calls"])
        assert len(t["outputs"]) == len(t["calls"])
        assert not any(n in t["request"] for n in tool_names if "_" in n), (
            f"request names a tool: {t['request']!r}"
        )
        if t["outcome"]["mutates"]:
            assert t["outcome"]["expected_state"], t
        else:
            assert t["outcome"]["answer_facts"], t

    # sft.jsonl: OpenAI chat format with tool calls and the tool list
    sft = run.jsonl("sft.jsonl")
    assert sft, "sft.jsonl is empty"
    for row in sft:
        roles = [m["role"] for m in row["messages"]]
        assert roles[0] == "system" and roles[1] == "user" and roles[-1] == "assistant"
        calls = [
            c
            for m in row["messages"]
            if m["role"] == "assistant"
            for c in m.get("tool_calls") or []
        ]
        policy_answer = row["messages"][-1]["content"] in {
            t["outcome"]["answer"] for t in tasks if t["outcome"]["expects"]
        }  # a refusal or a confirmation asked: no call
        assert calls or policy_answer, "an SFT conversation without tool calls"
        offered = {t["function"]["name"] for t in row["tools"]}
        for c in calls:
            assert c["type"] == "function" and c["function"]["name"] in offered
            assert isinstance(
                json.loads(c["function"]["arguments"]), dict
            )  # a JSON string, as in the OpenAI API
        tool_msgs = [m for m in row["messages"] if m["role"] == "tool"]
        assert {m["tool_call_id"] for m in tool_msgs} == {c["id"] for c in calls}
        assert all(t["type"] == "function" and "parameters" in t["function"] for t in row["tools"])

    # rl.jsonl: one verl-style row per task with ground truth and states
    rl = run.jsonl("rl.jsonl")
    assert len(rl) == s["tasks"]
    declined = {t["id"] for t in tasks if t["outcome"]["expects"]}
    for row in rl:
        assert row["prompt"][-1]["role"] == "user"
        assert (
            row["reward_model"]["ground_truth"]["calls"] or row["extra_info"]["task_id"] in declined
        )
        assert {"task_id", "initial_state", "expected_state"} <= set(row["extra_info"])
    assert {r["extra_info"]["task_id"] for r in rl} == {t["id"] for t in tasks}


def test_sample_source_gives_the_shop_environment(envk) -> None:
    run = envk.run("--set", "chains.tasks_per_env=4", run_id="shop")
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    env = json.loads((run.dir / "envs" / "shop-v1" / "env.json").read_text())
    assert env["id"] == "shop-v1" and env["report"]["kept"] is True
    assert {"get_product", "create_order"} <= {t["name"] for t in env["tools"]}
    assert (run.dir / "envs" / "shop-v1" / "env.py").is_file() and (
        run.dir / "envs" / "shop-v1" / "seed.sql"
    ).is_file()
    assert run.summary["envs_verified"] == 1 and 0 < run.summary["tasks"] <= 4
    assert {t["env_id"] for t in run.jsonl("tasks.jsonl")} == {"shop-v1"}


def test_do_nothing_policy_scores_zero_and_still_exits_0(envk) -> None:
    run = envk.run("--policy", "nothing", "--set", "chains.tasks_per_env=4", run_id="nothing")
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    s = run.summary
    assert s["tasks"] > 0 and s["rollouts"] == s["tasks"]
    assert s["mean_reward"] == 0.0 and s["failures"] == 0
    rollouts = run.jsonl("rollouts.jsonl")
    assert rollouts and all(
        r["trajectory"]["policy"] == "nothing" and r["reward"]["score"] == 0.0 for r in rollouts
    )
    assert all(not r["trajectory"]["calls"] for r in rollouts)
    assert run.jsonl("sft.jsonl") == []  # sft keeps only rollouts scoring 1 by default
    assert run.config["policy"] == "nothing"


def test_same_seed_gives_the_same_tasks_and_group_size_multiplies_rollouts(envk) -> None:
    a = envk.run("--seed", "11", run_id="seed-a")
    b = envk.run("--seed", "11", "--rollouts-per-task", "2", run_id="seed-b")
    assert a.proc.returncode == 0, a.proc.stderr[-3000:]
    assert b.proc.returncode == 0, b.proc.stderr[-3000:]
    ta, tb = _by_id(a.jsonl("tasks.jsonl")), _by_id(b.jsonl("tasks.jsonl"))
    assert ta, "no tasks"
    assert {i: t["request"] for i, t in ta.items()} == {i: t["request"] for i, t in tb.items()}
    assert ta == tb  # whole records, calls, outputs and outcomes included
    assert b.summary["rollouts"] == 2 * b.summary["tasks"] == 2 * len(tb)
    assert b.summary["groups"] == b.summary["tasks"]
    per_task = {}
    for r in b.jsonl("rollouts.jsonl"):
        per_task.setdefault(r["task_id"], set()).add(r["trajectory"]["index"])
    assert per_task == {i: {0, 1} for i in tb}


def test_version_and_help(envk) -> None:
    v = envk("--version")
    assert v.returncode == 0 and "version" in v.stdout
    h = envk("run", "--help")
    assert h.returncode == 0 and "Exit codes" in h.stdout and "--plugins" in h.stdout


def test_python_dash_m_runs_the_cli() -> None:
    for module in ("envkernel.cli", "envkernel"):
        proc = subprocess.run(
            [sys.executable, "-m", module, "--version"], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0 and "version" in proc.stdout, (module, proc.stderr[-2000:])


def test_duplicate_tasks_are_rejected_and_counted_apart(envk) -> None:
    # two requests of the same source give the same environment twice: the sampler proposes the
    # same tasks twice, and the gate rejects the second copies as duplicates
    run = envk.run("--envs", "2", "--set", "chains.tasks_per_env=3", run_id="dups")
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    s = run.summary
    assert s["envs_synthesized"] == 2 and s["tasks_proposed"] == 6
    # a first copy may be rejected as mutant_survived (a near miss the outcome alone cannot tell)
    survived = s["rejected"].get("task:mutant_survived", 0)
    assert s["tasks"] + survived == 3 and s["failures"] == 0
    assert s["rejected"] == {
        "task:duplicate": 3,
        **({"task:mutant_survived": survived} if survived else {}),
    }
    assert len(run.jsonl("tasks.jsonl")) == s["tasks"]
    rows = run.jsonl("rejected.jsonl")
    reasons = [r["reason"] for r in rows]
    assert reasons.count("duplicate") == 3 and len(reasons) == 3 + survived
    # each row says which environment the task was of and what source that came from
    envs = {p.parent.name for p in run.dir.glob("envs/*/env.json")}
    assert all(r["env_id"] in envs and r["source"] == "sample" for r in rows), rows


def test_invalid_run_id_is_a_usage_error(envk) -> None:
    proc = envk("run", "--run-id", "a.b", "--no-progress")
    assert proc.returncode == 2 and "'a.b'" in proc.stderr


def test_reusing_a_run_id_does_not_corrupt_the_run_folder(envk) -> None:
    first = envk.run("--set", "chains.tasks_per_env=3", run_id="again")
    assert first.proc.returncode == 0, first.proc.stderr[-3000:]
    second = envk.run("--set", "chains.tasks_per_env=3", run_id="again")
    if second.proc.returncode == 2:  # refusing is fine, if the first run's folder is left as it was
        assert "again" in second.proc.stderr
        assert len(first.jsonl("tasks.jsonl")) == first.summary["tasks"]
        return
    assert second.proc.returncode == 0, second.proc.stderr[-3000:]
    tasks = second.jsonl("tasks.jsonl")
    assert len(tasks) == len({t["id"] for t in tasks}) == second.summary["tasks"]
    assert len(second.jsonl("rollouts.jsonl")) == second.summary["rollouts"]
