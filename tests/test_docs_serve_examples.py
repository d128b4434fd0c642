"""docs/serve.md's client blocks run as written against a real ``envkernel serve`` (issue 32 item
2): the page's run (``envkernel run --source sample --out out --run-id demo``, in a temporary
folder), served in this process with process sandboxes; the plain-HTTP, ``envkernel.make`` and
openenv-core blocks are executed with the server's real port in place of the page's 8000 and, for
the HTTP block, one of the run's task ids as ``task_id``. pytest-examples finds the blocks;
``async with`` / ``await`` at the top level runs as the page shows it (an asyncio REPL would).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from pytest_examples import find_examples

from envkernel_kit.checks import process_runner
from envkernel_serve.catalog import load_catalog
from envkernel_serve.server import RunnerSandboxes, ServeSettings, start

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "serve.md"


def block(first_line: str) -> str:
    """The page's Python block that starts with ``first_line``."""
    for ex in find_examples(PAGE):
        if ex.source.lstrip().startswith(first_line):
            return ex.source
    raise AssertionError(f"serve.md has no Python block starting {first_line!r}")


@pytest.fixture(scope="module")
def demo(envk_factory: Any) -> Path:
    """The page's run: ``envkernel run --source sample --out out --run-id demo``."""
    envk = envk_factory("servedocs")
    run = envk.run(run_id="demo", timeout=300)
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    return run.dir


@pytest.fixture(scope="module")
def url(demo: Path) -> Any:
    running = start(
        load_catalog(demo), RunnerSandboxes(process_runner()), ServeSettings(port=0, warm=0)
    )
    yield running.url.rstrip("/")
    running.stop()


def run_block(source: str, names: dict[str, Any]) -> dict[str, Any]:
    """Execute a block as a module of its own (msgspec and typing resolve its annotations through
    ``sys.modules``), top-level ``await`` allowed; return its globals."""
    code = compile(source, str(PAGE), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    module = types.ModuleType(f"docs_block_{len(sys.modules)}")
    sys.modules[module.__name__] = module
    scope = module.__dict__
    scope.update({k: v for k, v in names.items() if not k.startswith("__")})
    done = eval(code, scope)
    if asyncio.iscoroutine(done):
        asyncio.run(done)
    return scope


def printed(capsys: pytest.CaptureFixture[str]) -> str:
    """The block's last printed line (the server in this process logs to stdout too)."""
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln and not LOG_LINE.match(ln)]
    return lines[-1] if lines else ""


LOG_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[")
"""A structlog console line (the server's, the sandboxes')."""


def test_the_http_block(url: str, demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task_id = json.loads((demo / "tasks.jsonl").read_text().splitlines()[0])["id"]
    src = block("import httpx").replace("http://127.0.0.1:8000", url)
    scope = run_block(src, {"task_id": task_id})
    assert scope["end"]["done"] is True
    reward, steps = printed(capsys).split()
    assert 0.0 <= float(reward) <= 1.0 and int(steps) == 1  # the tool call (the submit ends it)


def test_the_gymnasium_make_block(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with contextlib.chdir(demo.parent.parent):  # the page's `out/demo`
        scope = run_block(block("import envkernel"), {})
    assert scope["terminated"] is True
    assert printed(capsys).split()[0] == "True"


def test_the_openenv_block(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("openenv")
    src = block("from openenv.core.generic_client").replace("http://127.0.0.1:8000", url)
    scope = run_block(src, {})
    assert scope["tools"] and "product" in scope
    assert printed(capsys)


VENV = Path(os.environ.get("ENVKERNEL_TRAINERS_VENV", ROOT / ".venv-trainers"))


def trainers_python() -> Path:
    """The trainers venv's python (scripts/install-trainers.sh), or a skip saying why not."""
    skip = VENV.with_name(VENV.name + ".skip")
    if skip.exists():
        pytest.skip(skip.read_text().strip())
    if not (VENV / ".ready").exists():
        pytest.skip(f"the trainers venv {VENV} is not installed: bash scripts/install-trainers.sh")
    return VENV / "bin" / "python"


# One GRPO step of a 135M model on a shared 2-core CPU: about a minute, more under load (and the
# model folder's one-time de-quantization, about 45 s, on a fresh trainers venv).
@pytest.mark.timeout(900)
def test_the_trl_block_trains_one_grpo_step(url: str, demo: Path, tmp_path: Path) -> None:
    python = trainers_python()
    out = tmp_path / "trl.json"
    proc = subprocess.Popen(
        [str(python), str(ROOT / "tests" / "trainers" / "trl_docs.py")],
        cwd=demo.parent.parent,  # the page's `out/demo`
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        log, _ = proc.communicate(
            json.dumps([block("from datasets import Dataset"), url, str(out)]) + "\n", timeout=840
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, log[-4000:]
    got = json.loads(out.read_text())
    assert got["global_step"] == 1 and got["template_renders_tools"]
    (step,) = got["logs"]
    # one reward column per environment class (the page's `{env_id: class}`), each the server's
    # check of the rollouts that class played
    (name,) = {f"rewards/{c}/mean" for c in got["env_classes"]}  # the one prompt's environment
    rewards = got["env_rewards"]
    assert len(rewards) >= 2 and all(0.0 <= r <= 1.0 for r in rewards)
    assert step[name] == pytest.approx(sum(rewards[:2]) / 2)
    assert step["completions/max_length"] <= got["max_completion_length"]
    print(
        f"TRL step: {got['seconds']:.1f} s wall, {got['cpu_seconds']:.1f} s CPU, "
        f"reward {step[name]}"
    )


def page_block(page: str, first_line: str) -> str:
    """The Python block of ``docs/PAGE`` that starts with ``first_line``."""
    for ex in find_examples(ROOT / "docs" / page):
        if ex.source.lstrip().startswith(first_line):
            return ex.source
    raise AssertionError(f"{page} has no Python block starting {first_line!r}")


def test_the_mcp_blocks(url: str, demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """serve.md's MCP blocks: a free session's tool call, then a task's session ended by
    ``submit_answer`` (the task: the run's first, a shop task)."""
    src = block("from mcp.client.session import ClientSession").replace(
        "http://127.0.0.1:8000", url
    )
    scope = run_block(src, {})
    assert {t.name for t in scope["tools"]} >= {"create_order", "get_product"}
    is_error, text = printed(capsys).split(" ", 1)
    assert is_error == "False" and json.loads(text)["customer_id"] == "cus_0001"
    task_id = json.loads((demo / "tasks.jsonl").read_text().splitlines()[0])["id"]
    ends = [
        ex.source
        for ex in find_examples(PAGE)
        if ex.source.startswith("async with (")
        and 'end = await s.call_tool("submit_answer"' in ex.source
    ]
    assert len(ends) == 1
    # the page's later blocks use the first one's imports
    src = ends[0].replace("http://127.0.0.1:8000", url)
    scope = run_block(src, {**scope, "task_id": task_id})
    assert scope["end"].structured_content["done"] is True
    assert 0.0 <= float(printed(capsys)) <= 1.0


def test_the_events_blocks(
    envk_factory: Any, envkernel_nats: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """events.md's blocks: the stream of a run (made on this test's nats-server) read by the
    first, the run's files by the second (``envkernel-out/RUN``: that run's folder), and an event
    made and decoded by the third."""
    envk = envk_factory("eventsdocs")
    run = envk.run("--nats-url", envkernel_nats, run_id="RUN", out="envkernel-out")
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    argv = sys.argv
    sys.argv = ["events.py", envkernel_nats]
    try:
        run_block(page_block("events.md", "import asyncio"), {})
    finally:
        sys.argv = argv
    scored = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("RUN ")]
    assert len(scored) == 3, scored  # run, task id, policy, reward of three scored rollouts
    with contextlib.chdir(envk.cwd):
        scope = run_block(page_block("events.md", "import msgspec"), {})
        scope = run_block(page_block("events.md", "from envkernel_schemas import TaskGated"), scope)
    assert len(scope["tasks"]) == len(run.jsonl("tasks.jsonl"))
    assert len(scope["rows"]) == len(run.jsonl("rollouts.jsonl")) > 0
    assert scope["ev"].task == scope["tasks"][0]


def test_the_hooks_users_block(demo: Path) -> None:
    """hooks.md's user: the block's hook registers ``terse``, which says what the task holds back
    and then nothing."""
    import msgspec

    from envkernel_schemas import Task

    scope = run_block(page_block("hooks.md", "from envkernel.hookspecs import hookimpl"), {})
    registered: dict[str, Any] = {}
    scope["register_users"](lambda name, factory: registered.setdefault(name, factory))
    user = registered["terse"]()
    line = (demo / "tasks.jsonl").read_text().splitlines()[0]
    task = msgspec.structs.replace(
        msgspec.json.decode(line, type=Task), hidden=["the order is for Ann Lee"]
    )
    said = [{"role": "user", "content": task.request}]
    assert user.reply(task, said, None) == "the order is for Ann Lee"
    said.append({"role": "user", "content": "the order is for Ann Lee"})
    assert user.reply(task, said, None) is None


@pytest.fixture(scope="module")
def bare_url(envk_factory: Any) -> Any:
    """A bare run's server (``envkernel run``: the shipped corpus's 7 environments, 2 tasks each),
    the run the page's Gymnasium-registry block names."""
    envk = envk_factory("servedocsbare")
    run = envk.run("--set", "chains.tasks_per_env=2", run_id="bare", source=None, timeout=300)
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    running = start(
        load_catalog(run.dir), RunnerSandboxes(process_runner()), ServeSettings(port=0, warm=0)
    )
    yield running.url.rstrip("/")
    running.stop()


def test_the_gymnasium_registry_block(bare_url: str) -> None:
    """``register_envs`` registers each served environment; ``gym.make`` plays travel alone and
    ``gym.make_vec`` opens 4 bank sessions."""
    import gymnasium as gym

    src = block("import gymnasium as gym").replace("http://127.0.0.1:8000", bare_url)
    scope = run_block(src, {})
    try:
        ids = {k for k in gym.registry if k.startswith("envkernel/")}
        assert {"envkernel/bank", "envkernel/travel"} <= ids and len(ids) >= 7
        obs = scope["obs"]
        assert len(obs) == 4 and scope["vec"].num_envs == 4
        assert scope["env"].unwrapped.action_space.tools  # travel's tools
    finally:
        scope["vec"].close()
        scope["env"].close()


def test_the_verl_block_writes_a_tool_config_and_rows(url: str, demo: Path) -> None:
    """serve.md's verl block, in the page's folder: the tool config lists the served tools, and
    every row (one per task) selects tools of that config and runs ``tool_agent``."""
    import pandas as pd
    import yaml

    with contextlib.chdir(demo.parent.parent):  # the page's `out/demo`
        run_block(block("import pandas as pd, yaml").replace("http://127.0.0.1:8000", url), {})
        config = yaml.safe_load(Path("envkernel_tools.yaml").read_text())
        rows = pd.read_parquet("envkernel_train.parquet")
    names = {t["tool_schema"]["function"]["name"] for t in config["tools"]}
    assert {"create_order", "get_product"} <= names
    assert len(rows) == len((demo / "tasks.jsonl").read_text().splitlines())
    for _, row in rows.iterrows():
        assert row["agent_name"] == "tool_agent"
        assert set(row["extra_info"]["tool_selection"]) <= names
