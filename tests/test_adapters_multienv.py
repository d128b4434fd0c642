"""The trainer adapters on a run of several environments (docs/serve.md, "TRL", "verl",
"Gymnasium").

A real default run (the shipped OpenAPI corpus: 7 environments, 2 tasks each) served by a real
``envkernel serve`` with process sandboxes. TRL and verl are not installed here (they pull torch;
tests/test_trainers.py runs them for real): their adapters are driven the way TRL's
``GRPOTrainer`` (a dict ``environment_factory``, each row's ``environment`` column) and verl's
``ToolAgentLoop`` (``extra_info.tool_selection``) use them. Gymnasium is the real package.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from envkernel_kit.checks import process_runner
from envkernel_schemas import Task
from envkernel_serve.catalog import load_catalog
from envkernel_serve.client import server_metadata
from envkernel_serve.server import RunnerSandboxes, ServeSettings, start


@pytest.fixture(scope="module")
def run_dir(envk_factory: Any) -> Path:
    """A default run (7 environments), 2 tasks per environment."""
    envk = envk_factory("multienv")
    run = envk.run("--set", "chains.tasks_per_env=2", run_id="multi", source=None, timeout=300)
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    return run.dir


@pytest.fixture(scope="module")
def tasks(run_dir: Path) -> list[Task]:
    """Every task of the run."""
    return [
        msgspec.json.decode(line, type=Task)
        for line in (run_dir / "tasks.jsonl").read_text().splitlines()
        if line
    ]


@pytest.fixture(scope="module")
def server(run_dir: Path) -> Any:
    """``envkernel serve RUN_DIR`` in a background thread, with process sandboxes."""
    running = start(
        load_catalog(run_dir), RunnerSandboxes(process_runner()), ServeSettings(port=0, warm=0)
    )
    yield running
    running.stop()


def _tools_of(cls: type) -> set[str]:
    """The tools GRPOTrainer offers for an instance of ``cls``: its public functions but reset and
    get_reward."""
    return {
        n
        for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if n not in ("reset", "get_reward") and not n.startswith("_")
    }


def _play(instance: Any, task: Task) -> float:
    for call in task.calls:
        json.loads(getattr(instance, call.name)(**call.arguments))
    if not task.outcome.mutates:
        instance.submit_answer(answer=task.outcome.answer)
    reward: float = instance.get_reward()
    return reward


def test_metadata_lists_each_environments_tools_and_tasks(server: Any, tasks: list[Task]) -> None:
    """/metadata: every environment with its tool specs and its task ids."""
    meta = server_metadata(server.url)
    envs = {e["id"]: e for e in meta["envs"]}
    assert len(envs) == 7 and {t.env_id for t in tasks} == set(envs)
    for env_id, e in envs.items():
        assert [s["name"] for s in e["tool_specs"]] == e["tools"]
        assert all("input_schema" in s for s in e["tool_specs"])
        assert e["task_ids"] == [t.id for t in tasks if t.env_id == env_id]


def test_trl_dict_factory_one_class_per_environment(server: Any, run_dir: Path) -> None:
    """environment_factories: one class per environment, as TRL's dict environment_factory routes
    rows (the `environment` column picks the class, which offers that environment's tools only)."""
    from envkernel_serve.trl import dataset_rows, environment_factories

    factories = environment_factories(server.url)
    meta = {e["id"]: e for e in server_metadata(server.url)["envs"]}
    assert set(factories) == set(meta)
    rows = dataset_rows(run_dir)
    assert {r["environment"] for r in rows} == set(meta)
    assert all(r["environment"] == r["env_id"] for r in rows)
    by_id = {t.id: t for t in load_catalog(run_dir).tasks}
    instances = {}
    try:
        for env_id, cls in factories.items():
            assert _tools_of(cls) == set(meta[env_id]["tools"]) | {"submit_answer"}
            instances[env_id] = cls()
        for row in (
            rows
        ):  # what GRPOTrainer does per example: the row's class, reset(**row) minus `environment`
            instance = instances[row["environment"]]
            assert instance.reset(**{k: v for k, v in row.items() if k != "environment"}) is None
            assert _play(instance, by_id[row["task_id"]]) == 1.0
        travel = next(r for r in rows if r["env_id"] == "travel")
        with pytest.raises(ValueError, match="plays the environment\\(s\\) bank.*'travel'"):
            instances["bank"].reset(**travel)  # a row of another environment: said so
        with pytest.raises(ValueError, match="is in environment 'travel', not 'bank'"):
            instances["bank"].reset(task_id=travel["task_id"])  # a task of another one, too
    finally:
        for instance in instances.values():
            instance.close()


def test_trl_single_factory_routes_each_row(server: Any, run_dir: Path) -> None:
    """environment_factory on a run: one class with every environment's tools; each row is reset
    into its own environment (a travel row calls travel's tools), and an unknown environment is a
    ValueError."""
    from envkernel_serve.trl import dataset_rows, environment_factory

    Env = environment_factory(server.url)
    meta = server_metadata(server.url)["envs"]
    assert _tools_of(Env) == {n for e in meta for n in e["tools"]} | {"submit_answer"}
    by_id = {t.id: t for t in load_catalog(run_dir).tasks}
    instance = Env()
    try:
        seen = set()
        for row in dataset_rows(
            run_dir
        ):  # a single callable: TRL passes every column, `environment` too
            assert instance.reset(**row) is None
            assert _play(instance, by_id[row["task_id"]]) == 1.0
            seen.add(row["env_id"])
        assert len(seen) == 7
        with pytest.raises(ValueError, match="'nowhere'"):
            instance.reset(environment="nowhere")
        # a row naming only its environment: the environment's first task
        first_travel = next(t for t in by_id.values() if t.env_id == "travel")
        assert Env().reset(environment="travel", task_index=0) == first_travel.request
        only_bank = environment_factory(server.url, env="bank")
        assert _tools_of(only_bank) == {
            n for e in meta if e["id"] == "bank" for n in e["tools"]
        } | {"submit_answer"}
    finally:
        instance.close()


def test_unclosed_trl_instances_do_not_hang_the_interpreter(server: Any, run_dir: Path) -> None:
    """An instance never closed (a TRL script's usual end) lets the interpreter exit at once, and
    its session is closed on the server."""
    task_id = load_catalog(run_dir).tasks[0].id
    script = textwrap.dedent(f"""
        from envkernel_serve.trl import environment_factories, environment_factory
        url = {server.url!r}
        keep = [environment_factory(url)(), *(c() for c in environment_factories(url).values())]
        keep[0].reset(task_id={task_id!r})
        keep[1].reset(task_index=0)
        print("ok", flush=True)
    """)
    before = len(server.core.live)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
    assert "TypeError" not in proc.stderr and "Exception ignored" not in proc.stderr
    for _ in range(100):
        if len(server.core.live) <= before:
            break
        time.sleep(0.05)
    assert len(server.core.live) <= before  # every session the script opened was closed at its exit


async def test_verl_tool_config_every_environment_with_tool_selection(
    server: Any, run_dir: Path, tasks: list[Task]
) -> None:
    """verl: the tool config lists every environment's tools; each row's extra_info.tool_selection
    is its environment's, which verl's ToolAgentLoop filters the tools by; a travel trajectory plays
    to 1.0."""
    from envkernel_serve.verl import EnvkernelTool, dataset_rows, tool_config

    config = await asyncio.to_thread(tool_config, server.url)
    tools = {
        e["tool_schema"]["function"]["name"]: EnvkernelTool(e["config"], e["tool_schema"])
        for e in config["tools"]
    }
    meta = {e["id"]: e for e in server_metadata(server.url)["envs"]}
    assert set(tools) == {n for e in meta.values() for n in e["tools"]}
    rows = dataset_rows(str(run_dir))
    for row in rows:
        env_id = row["extra_info"]["env_id"]
        assert set(row["extra_info"]["tool_selection"]) <= set(meta[env_id]["tools"])
        assert set(row["extra_info"]["tools_kwargs"]) == set(meta[env_id]["tools"])
    only_travel = await asyncio.to_thread(tool_config, server.url, "travel")
    assert {e["tool_schema"]["function"]["name"] for e in only_travel["tools"]} == set(
        meta["travel"]["tools"]
    )
    task = next(t for t in tasks if t.env_id == "travel")
    row = next(r for r in rows if r["extra_info"]["task_id"] == task.id)
    # as ToolAgentLoop.run does with extra_info.tool_selection
    active = {n: tools[n] for n in row["extra_info"]["tool_selection"] if n in tools}
    agent = SimpleNamespace(request_id="traj-travel")
    for call in task.calls:
        tool = active[call.name]
        iid, _ = await tool.create(**row["extra_info"]["tools_kwargs"][call.name])
        resp, _, metrics = await tool.execute(iid, call.arguments, agent_data=agent)
        await tool.release(iid)
        assert metrics["ok"], resp.text
    if task.outcome.mutates:
        assert await active[task.calls[0].name].end("traj-travel") == 1.0
    else:
        from envkernel_serve.verl import finish_trajectory

        state = await finish_trajectory(server.url, "traj-travel", answer=task.outcome.answer)
        assert state["reward"] == 1.0


def test_gymnasium_register_make_and_make_vec(server: Any, tasks: list[Task]) -> None:
    """register_envs: gymnasium.make("envkernel/<env>") plays that environment's tasks with its
    tools; make_vec(..., vectorization_mode="sync") gives one session per sub-env."""
    import gymnasium as gym

    from envkernel_serve.gym import register_envs

    ids = register_envs(server.url)
    assert sorted(ids) == sorted(f"envkernel/{e}" for e in {t.env_id for t in tasks})
    travel = [t for t in tasks if t.env_id == "travel"]
    env = gym.make("envkernel/travel")
    try:
        for seed in range(3):
            _, info = env.reset(seed=seed)
            assert info["env_id"] == "travel" and info["task_id"] == travel[seed % len(travel)].id
        task = travel[0]
        env.reset(options={"task_id": task.id})
        for call in task.calls:
            _, reward, terminated, _, step_info = env.step(
                {"tool": call.name, "arguments": call.arguments}
            )
            assert step_info["ok"]
        _, reward, terminated, _, _ = env.step({"answer": task.outcome.answer or ""})
        assert terminated and reward == 1.0
        assert set(env.action_space.tools) == {
            t.name for t in load_catalog(server.core.catalog.source).envs["travel"].tools
        }
    finally:
        env.close()
    vec = gym.make_vec("envkernel/bank", num_envs=2, vectorization_mode="sync")
    try:
        _, infos = vec.reset(seed=0)
        assert list(infos["env_id"]) == ["bank", "bank"]
        actions = tuple(vec.single_action_space.sample() for _ in range(2))
        _, rewards, terminated, truncated, _ = vec.step(actions)
        assert list(rewards) == [0.0, 0.0] and not any(terminated) and not any(truncated)
    finally:
        vec.close()


def test_make_is_quiet_by_default(run_dir: Path) -> None:
    """envkernel.make(RUN_DIR) in a fresh interpreter writes no debug or info log lines."""
    script = textwrap.dedent(f"""
        import envkernel
        env = envkernel.make({str(run_dir)!r}, env="shop")
        _, info = env.reset(seed=0)
        env.close()
        print(info["env_id"])
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "shop"
    assert proc.stderr.strip() == "", proc.stderr[-2000:]
