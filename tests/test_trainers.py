"""TRL and verl, the real packages, against a real ``envkernel serve`` (docs/serve.md, "TRL" and
"verl").

TRL and verl need torch, so they live in their own venv, ``.venv-trainers`` (made by
``scripts/install-trainers.sh`` from the CPU torch wheel on disk; scripts/test.sh runs it). The
server runs here, in the test process, with process sandboxes; the trainers run in that venv as
two subprocesses started together (tests/trainers/*.py), and write what they saw as JSON:

* trl_grpo.py: one real ``GRPOTrainer`` step on the CPU, ``environment_factory=`` our class, a
  tiny Llama made from a config and a tokenizer made here (no hub download);
* verl_agent.py: verl's own tool loader, ``BaseTool`` and schema classes, and our
  ``EnvkernelAgentLoop`` from verl's registry, with generation standing in for vLLM through the
  scripted OpenAI server (the one part that cannot run here).
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from envkernel_kit.checks import process_runner
from envkernel_schemas import Task
from envkernel_serve.catalog import load_catalog
from envkernel_serve.server import RunnerSandboxes, ServeSettings, start

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "trainers-test-token"
VENV = Path(os.environ.get("ENVKERNEL_TRAINERS_VENV", ROOT / ".venv-trainers"))
SCRIPTS = Path(__file__).parent / "trainers"


def _trainers_python() -> Path:
    skip = VENV.with_name(VENV.name + ".skip")
    if skip.exists():
        pytest.skip(skip.read_text().strip())
    python = VENV / "bin" / "python"
    if not (VENV / ".ready").exists() or not python.exists():
        pytest.skip(
            f"the trainers venv {VENV} is not installed: run `bash "
            "scripts/install-trainers.sh` (scripts/test.sh does)"
        )
    return python


@pytest.fixture(scope="module")
def played(envk_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A sample run, its server, and both trainer scripts run against it at once (their JSON
    results)."""
    python = _trainers_python()
    # The trainer processes start first: their imports (torch, transformers, TRL, verl, Ray) overlap
    # making the run and starting the server; each then reads its arguments from stdin.
    # the trainer's token (verl's finish_trajectory reads the reasons with it), as a user exports
    # what `envkernel serve` printed
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
        "ENVKERNEL_SERVE_TOKEN": TOKEN,
    }
    procs = {
        k: subprocess.Popen(
            [str(python), str(SCRIPTS / script)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for k, script in (("trl", "trl_grpo.py"), ("verl", "verl_agent.py"))
    }
    running = None
    try:
        envk = envk_factory("trainers")
        travel = ROOT / "plugins/openapi/src/envkernel_openapi/corpus/travel.json"
        run = envk.run(
            "--source",
            "sample",
            "--source",
            f"openapi:{travel}",
            "--set",
            "chains.tasks_per_env=8",  # the shop's first tasks are reads; a change comes later
            run_id="trainers",
            source=None,
        )
        assert run.proc.returncode == 0, run.proc.stderr[-2000:]
        tasks = [
            msgspec.json.decode(line, type=Task)
            for line in (run.dir / "tasks.jsonl").read_text().splitlines()
            if line
        ]
        travel_id = next(t.env_id for t in tasks if t.env_id != "shop-v1")
        assert travel_id.startswith("travel")  # two environments
        tasks = [t for t in tasks if t.env_id == "shop-v1"]
        mutating = next(t for t in tasks if t.outcome.mutates)
        read_only = next(t for t in tasks if not t.outcome.mutates and not t.outcome.expects)
        out = tmp_path_factory.mktemp("trainers-out")
        # verl's scripted model knows only the mutating task; the read-only one gets its refusal.
        scripted = out / "scripted.jsonl"
        scripted.write_text(msgspec.json.encode(mutating).decode() + "\n")
        running = start(
            load_catalog(run.dir),
            RunnerSandboxes(process_runner()),
            ServeSettings(port=0, warm=2, trainer_token=TOKEN),
        )
        args = {
            "trl": [running.url, str(run.dir), mutating.id, str(out / "trl.json")],
            "verl": [running.url, str(run.dir), str(scripted), str(out / "verl.json")],
        }
        for k, p in procs.items():
            p.stdin.write(json.dumps(args[k]) + "\n")  # type: ignore[union-attr]
            p.stdin.flush()  # type: ignore[union-attr]
        logs = {k: p.communicate(timeout=540)[0] for k, p in procs.items()}
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        if running is not None:
            running.stop()
    results = {}
    for k, p in procs.items():
        assert p.returncode == 0, f"{k} failed:\n{logs[k][-4000:]}"
        results[k] = json.loads((out / f"{k}.json").read_text())
    return SimpleNamespace(
        mutating=mutating, read_only=read_only, url=running.url, travel_id=travel_id, **results
    )


# The module fixture (two trainer processes) takes 40 to 120 s on a loaded 2-core machine; the
# test that sets it up gets the time, not the default 300 s.
@pytest.mark.timeout(600)
def test_trl_grpo_trainer_step_takes_the_environments_reward(played: Any) -> None:
    """A real GRPOTrainer step: its tools are our methods, its rollouts call them on the server, its
    reward is get_reward()."""
    trl = played.trl
    assert trl["probe_reward"] == 1.0  # the reference play through the class scores 1 on the server
    # TRL's dict environment_factory, one class per environment: each owns its reward (one reward
    # column per class, named after it), and no other reward function is needed
    assert trl["reward_funcs"] == ["get_reward", "get_reward"]
    assert sorted(trl["reward_func_names"]) == [
        "EnvkernelEnvironment_shop_v1",
        "EnvkernelEnvironment_" + played.travel_id.replace("-", "_"),
    ]
    # each environment's rows are offered that environment's tools only
    assert {"create_order", "list_products"} <= set(trl["env_tools"]["shop-v1"])
    assert "list_hotels" in trl["env_tools"][played.travel_id]
    assert not set(trl["env_tools"]["shop-v1"]) & set(trl["env_tools"][played.travel_id]) - {
        "submit_answer"
    }
    # a travel row: played by its own class and by the single class (which resets it into travel),
    # refused by shop's class with the way to fix it
    routing = trl["routing"]
    assert routing["own_class_call"] and routing["single_class_call"]
    assert routing["single_class_env_after"] == "shop-v1"
    assert "environment_factories(url)" in routing["wrong_class_error"]
    assert "close" not in trl["tool_names"] and "submit_answer" in trl["tool_names"]
    assert {"create_order", "find_customer", "list_products"} <= set(trl["tool_names"])
    (log,) = trl["logs"]
    # the trainer parsed the model's tool calls and ran every one (3 per rollout) without a failure
    assert (
        log["tools/call_frequency"] == len(played.mutating.calls)
        and log["tools/failure_frequency"] == 0
    )
    # what the trainer logged as the environment's reward is what the server scored for its rollouts
    assert log["rewards/EnvkernelEnvironment_shop_v1/mean"] == pytest.approx(
        sum(trl["env_rewards"]) / len(trl["env_rewards"])
    )
    assert trl["env_rewards"] == [1.0, 1.0] and log["reward"] == 1.0
    for state in trl[
        "env_states"
    ]:  # each rollout was its own session, at the row's task, with the model's 3 calls
        assert state["task_id"] == played.mutating.id and state["step_count"] == len(
            played.mutating.calls
        )


@pytest.mark.timeout(600)
def test_verl_tools_and_agent_loop(played: Any) -> None:
    """verl's loader builds EnvkernelTools (real BaseTools); EnvkernelAgentLoop, from verl's
    registry, plays and scores episodes."""
    verl = played.verl
    assert verl["tools"] and all(
        t["is_base_tool"] and t["is_envkernel"] and t["schema_is_verls"] for t in verl["tools"]
    )
    assert verl["registry"]["envkernel_agent"] == {
        "_target_": "envkernel_serve.verl_agent.EnvkernelAgentLoop"
    }
    by_task = {r["task_id"]: r for r in verl["results"]}
    full = by_task[played.mutating.id]
    assert (
        full["loop_class"] == "EnvkernelAgentLoop" and full["loop_url"] == played.url
    )  # `url:` of the agent-loop config
    assert full["loop_tools"] == sorted(
        t["name"] for t in verl["tools"]
    )  # read from the server: no tool config given
    # the scripted model replays the 3 reference calls, one per turn, in one trajectory's sandbox:
    # the task's check is 1
    assert full["reward_score"] == 1.0 and full["envkernel"]["step_count"] == len(
        played.mutating.calls
    )
    assert (
        full["num_turns"] == 2 * len(played.mutating.calls) + 2
    )  # user, (assistant, tool) x 3, final assistant
    assert (
        full["masked_tokens"] > 0 and "<tool_response>" in full["response_text"]
    )  # tool results are masked out of the loss
    refused = by_task[
        played.read_only.id
    ]  # the model did nothing: the server's check says so, with its reasons
    assert refused["reward_score"] == 0.0 and refused["envkernel"]["step_count"] == 0
    reasons = refused["envkernel"]["reasons"]
    assert any(r.startswith("outcome: ") for r in reasons), reasons  # the outcome alone (τ 0)


def test_trl_class_offers_only_tools() -> None:
    """What GRPOTrainer reads off the class (its public functions) holds no ``close``; the answer
    tool is named ``submit_answer``."""
    from envkernel_serve.trl import EnvkernelTRLEnv, _submit_answer

    offered = {
        n
        for n, _ in inspect.getmembers(EnvkernelTRLEnv, predicate=inspect.isfunction)
        if not n.startswith("_")
    }
    assert offered == {
        "reset",
        "get_reward",
    }  # the two TRL does not offer as tools; close is not a function here
    assert _submit_answer.__name__ == "submit_answer"  # TRL names a tool by its function's __name__
    env = EnvkernelTRLEnv()
    env.close()  # still a method of an instance (no session opened: nothing to do)
    assert env._session is None
