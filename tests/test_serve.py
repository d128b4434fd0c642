"""``envkernel serve``: an OpenEnv-compatible server with MCP, and its clients and adapters.

Everything real: one run folder made by ``envkernel run --source sample --source workspace:ledger``
(the shop-v1 env and its tasks, and one workspace environment whose task is graded by its check
script), one server with process sandboxes (one per session), openenv-core's own clients, the
official ``mcp`` client, Gymnasium's ``check_env``, transformers' ``get_json_schema`` (how TRL
reads a tool method), a real nats-server for the sandbox-service path, and the ``envkernel serve``
command. TRL and verl are not installed (they pull torch): their adapters are driven the way
TRL's ``grpo_trainer.py`` and verl's ``tool_agent_loop.py`` call them.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from envkernel_kit.checks import process_runner

# openenv-core's package imports its Gradio web UI (over half of its import time) although
# its clients never use it; it is optional there (``except ModuleNotFoundError``), so keep it out
# while the clients are imported, once, here.
_blocked = "gradio" not in sys.modules
if _blocked:
    sys.modules["gradio"] = None  # type: ignore[assignment]
try:
    from openenv.core.generic_client import GenericEnvClient
    from openenv.core.mcp_client import MCPToolClient
finally:
    if _blocked:
        del sys.modules["gradio"]

# after openenv is imported with gradio kept out (above)
from envkernel_schemas import Task  # noqa: E402
from envkernel_serve.catalog import CatalogError, load_catalog  # noqa: E402
from envkernel_serve.client import ServeError, Session  # noqa: E402
from envkernel_serve.server import NatsSandboxes, RunnerSandboxes, ServeSettings, start  # noqa: E402

BLOB_TOOL = '''

def blob(env, size):
    """A text of `size` characters (a large observation)."""
    return "x" * size
'''


@pytest.fixture(scope="module")
def run_dir(envk_factory: Any) -> Path:
    """A real run of the sample environment with its tasks (one of them changes state) and of one
    workspace variant (a task graded by its check script)."""
    envk = envk_factory("serve")
    run = envk.run(
        "--source",
        "sample",
        "--source",
        "workspace:ledger",
        "--set",
        "workspace.variants=1",
        "--set",
        "chains.tasks_per_env=8",  # the shop's first tasks are reads; a change comes later
        run_id="serve",
        source=None,
    )
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    return run.dir


@pytest.fixture(scope="module", autouse=True)
def serve_cli(envk_factory: Any, run_dir: Path) -> Any:
    """``envkernel serve RUN_DIR --port 0`` as a subprocess for :func:`test_serve_command`, started
    as soon as the run exists so that its start-up (a fresh interpreter loading the CLI and its
    plugins) overlaps the other tests instead of adding to them."""
    envk = envk_factory("serve-cli")
    log = envk.cwd / "serve.stderr"
    with log.open("w") as err:
        proc = envk.popen(
            "serve",
            str(run_dir),
            "--port",
            "0",
            "--warm",
            "0",
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    yield SimpleNamespace(proc=proc, log=log)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


@pytest.fixture(scope="module")
def all_tasks(run_dir: Path) -> list[Task]:
    """Every task of the run."""
    return [
        msgspec.json.decode(line, type=Task)
        for line in (run_dir / "tasks.jsonl").read_text().splitlines()
        if line
    ]


@pytest.fixture(scope="module")
def tasks(all_tasks: list[Task]) -> list[Task]:
    """The tasks of the sample environment (shop-v1)."""
    return [t for t in all_tasks if t.env_id == "shop-v1"]


@pytest.fixture(scope="module")
def ws_task(all_tasks: list[Task]) -> Task:
    """The workspace task (its ``outcome.check`` is a grade() script)."""
    task = next(t for t in all_tasks if t.outcome.check)
    assert task.env_id.startswith("ws-ledger-") and "def grade(" in task.outcome.check
    return task


@pytest.fixture(scope="module")
def server(run_dir: Path) -> Any:
    """``envkernel serve RUN_DIR`` in a background thread, with process sandboxes."""
    running = start(
        load_catalog(run_dir), RunnerSandboxes(process_runner()), ServeSettings(port=0, warm=2)
    )
    yield running
    running.stop()
    assert not running.thread.is_alive()


def server_run_dir(server: Any) -> Path:
    """The run folder a server serves."""
    return Path(server.core.catalog.source)


def _mutating(tasks: list[Task]) -> Task:
    return next(t for t in tasks if t.outcome.mutates)


def _read_only(tasks: list[Task]) -> Task:
    """A read-only task that looks something up (not a refusal or confirmation: those call
    nothing)."""
    return next(t for t in tasks if not t.outcome.mutates and t.calls)


async def test_openenv_client_reset_step_state_reward(server: Any, tasks: list[Task]) -> None:
    """openenv-core's GenericEnvClient: reset loads the task, steps run its reference chain, the
    reward is its check."""
    task = _mutating(tasks)
    async with GenericEnvClient(base_url=server.url) as env:
        first = await env.reset(task_id=task.id)
        assert (
            first.observation["request"] == task.request
            and first.done is False
            and first.reward is None
        )
        assert {t["name"] for t in first.observation["tools"]} >= {c.name for c in task.calls}
        for call, expected in zip(task.calls, task.outputs, strict=True):
            r = await env.step(
                {"type": "call_tool", "tool_name": call.name, "arguments": call.arguments}
            )
            assert (
                r.observation["ok"] is True
                and r.observation["result"] == expected
                and r.done is False
            )
        state = await env.state()
        assert (
            state["step_count"] == len(task.calls)
            and state["task_id"] == task.id
            and state["reward"] == 1.0
        )
        end = await env.step({"type": "submit", "answer": task.outcome.answer})
        assert end.done is True and end.reward == 1.0
        # the same session, reset: the seed state again (the change is gone), and doing nothing
        # scores 0
        again = await env.reset(task_id=task.id)
        assert again.observation["task_id"] == task.id
        nothing = await env.step({"type": "submit", "answer": ""})
        assert nothing.reward == 0.0
        with pytest.raises(RuntimeError, match="unknown action type"):
            await env.step({"type": "dance"})


async def test_workspace_task_is_graded_by_its_check_over_openenv(
    server: Any, ws_task: Task
) -> None:
    """A workspace task through openenv-core's client: the reward is its grade() script, run in a
    sandbox over the session's final workspace; the reference calls score 1, doing nothing 0, a near
    miss below 1."""
    async with GenericEnvClient(base_url=server.url) as env:
        first = await env.reset(task_id=ws_task.id)
        assert first.observation["request"] == ws_task.request
        for call in ws_task.calls:
            r = await env.step(
                {"type": "call_tool", "tool_name": call.name, "arguments": call.arguments}
            )
            assert r.observation["ok"] is True, r.observation
        state = await env.state()
        assert state["reward"] == 1.0 and "reasons" not in state  # reasons are the trainer's
        assert (await env.step({"type": "submit", "answer": ws_task.outcome.answer})).reward == 1.0
        await env.reset(task_id=ws_task.id)  # the seed workspace again
        assert (await env.step({"type": "submit", "answer": ""})).reward == 0.0
        await env.reset(task_id=ws_task.id)
        for call in ws_task.calls[:-1]:
            await env.step(
                {"type": "call_tool", "tool_name": call.name, "arguments": call.arguments}
            )
        assert (await env.step({"type": "submit", "answer": ws_task.outcome.answer})).reward < 1.0
        assert "reasons" not in await env.state()  # a plain state request: no reasons
    with Session(server.url) as agent:  # asked for without the trainer's token: withheld
        agent.reset(task_id=ws_task.id)
        asked = agent.state(reasons=True)
        assert "reasons" not in asked and "token" in asked["reasons_withheld"]
    with Session(server.url, token=server.core.trainer_token) as trainer:  # the criteria missed
        trainer.reset(task_id=ws_task.id)
        for call in ws_task.calls[:-1]:
            trainer.call(call.name, **call.arguments)
        assert trainer.submit(ws_task.outcome.answer)["reward"] < 1.0
        assert trainer.state(reasons=True)["reasons"]
    # the check ran in a sandbox of the environment with its reward-side tools, never in this
    # process
    assert f"{ws_task.env_id}--check" in server.core.pool.idle_envs()


async def test_workspace_task_is_graded_by_its_check_over_mcp(server: Any, ws_task: Task) -> None:
    """The official mcp client: a session naming the task (``?task=``) calls the tools, and its
    state resource holds the check's reward (1 for the reference calls, 0 for nothing); a wrong task
    is an error."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def session_reward(calls: list[Any]) -> float:
        async with (
            streamable_http_client(f"{server.mcp_url}?task={ws_task.id}") as streams,
            ClientSession(*streams[:2]) as s,
        ):
            await s.initialize()
            assert {t.name for t in (await s.list_tools()).tools} >= {c.name for c in ws_task.calls}
            assert [str(r.uri) for r in (await s.list_resources()).resources] == [
                "envkernel://session/state"
            ]
            for call in calls:
                done = await s.call_tool(call.name, dict(call.arguments))
                assert not done.is_error, done.content
            state = json.loads(
                (await s.read_resource("envkernel://session/state")).contents[0].text
            )
            assert state["task_id"] == ws_task.id and state["step_count"] == len(calls)
            # no reward before the episode ends (else an agent could search by trial and undo)
            assert state["reward"] is None and state["done"] is False
            await s.call_tool("submit_answer", {"answer": ""})
            state = json.loads(
                (await s.read_resource("envkernel://session/state")).contents[0].text
            )
            return state["reward"]

    assert await asyncio.gather(session_reward(ws_task.calls), session_reward([])) == [1.0, 0.0]
    async with (
        streamable_http_client(f"{server.mcp_url}?task=nope") as streams,
        ClientSession(*streams[:2]) as s,
    ):
        await s.initialize()
        wrong = await s.call_tool("read", {"path": "x"})
        assert wrong.is_error and "no task 'nope'" in wrong.content[0].text


async def test_mcp_submit_answer_ends_the_episode_with_its_reward(
    server: Any, tasks: list[Task]
) -> None:
    """The official mcp client ends a task's episode with ``submit_answer``: its result is the
    reward (1 for the reference calls and answer, 0 for a wrong answer); a second submit, and any
    call after it, is an error."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    task = _read_only(tasks)

    async def episode(answer: str) -> tuple[dict[str, Any], Any, Any]:
        async with (
            streamable_http_client(f"{server.mcp_url}?task={task.id}") as streams,
            ClientSession(*streams[:2]) as s,
        ):
            await s.initialize()
            listed = {t.name: t for t in (await s.list_tools()).tools}
            assert listed["submit_answer"].input_schema["required"] == ["answer"]
            for call in task.calls:
                assert not (await s.call_tool(call.name, dict(call.arguments))).is_error
            end = await s.call_tool("submit_answer", {"answer": answer})
            assert not end.is_error, end.content
            again = await s.call_tool("submit_answer", {"answer": answer})
            after = await s.call_tool(task.calls[0].name, dict(task.calls[0].arguments))
            state = json.loads(
                (await s.read_resource("envkernel://session/state")).contents[0].text
            )
            assert state["done"] is True and state["reward"] == end.structured_content["reward"]
            return end.structured_content, again, after

    (right, again, after), (wrong, _, _) = await asyncio.gather(
        episode(task.outcome.answer), episode("I do not know.")
    )
    assert (
        right["reward"] == 1.0 and right["done"] is True and right["step_count"] == len(task.calls)
    )
    assert right["submitted"] == task.outcome.answer and json.loads(json.dumps(right)) == right
    assert wrong["reward"] < 1.0 and "reasons" not in wrong  # they quote the expected values
    assert again.is_error and "episode is done" in again.content[0].text
    assert after.is_error and "episode is done" in after.content[0].text
    async with streamable_http_client(server.mcp_url) as streams, ClientSession(*streams[:2]) as s:
        await s.initialize()  # a session without a task has nothing to submit
        assert "submit_answer" not in {t.name for t in (await s.list_tools()).tools}


async def test_openenv_mcp_tool_client_and_tool_errors(server: Any, tasks: list[Task]) -> None:
    """openenv-core's MCPToolClient lists and calls tools over /ws; a tool's own error is in its
    result."""
    task = _read_only(tasks)
    async with MCPToolClient(base_url=server.url) as env:
        await env.reset(task_id=task.id)
        names = [t.name for t in await env.list_tools()]
        assert task.calls[0].name in names
        assert (
            await env.call_tool(task.calls[-1].name, **task.calls[-1].arguments) == task.outputs[-1]
        )
        missing = await env.call_tool("get_product", product_id="prd_nope")
        assert missing["error"]["code"] == "not_found"
        with pytest.raises(RuntimeError, match="no tool 'launch_rocket'"):
            await env.call_tool("launch_rocket")


async def test_sessions_are_isolated_and_not_capped(server: Any, tasks: list[Task]) -> None:
    """Twelve concurrent sessions (more than any default cap), each its own sandbox: one's change is
    not seen by another."""

    async def one(i: int) -> tuple[int, int]:
        async with GenericEnvClient(base_url=server.url) as env:
            await env.reset(task_id=tasks[i % len(tasks)].id)
            made = 0
            for _ in range(i % 3):
                r = await env.step(
                    {
                        "type": "call_tool",
                        "tool_name": "create_order",
                        "arguments": {
                            "customer_id": "cus_0001",
                            "product_id": "prd_0003",
                            "quantity": 1,
                        },
                    }
                )
                made += bool(r.observation["ok"])
            seen = await env.step(
                {
                    "type": "call_tool",
                    "tool_name": "list_orders",
                    "arguments": {"customer_id": "cus_0001"},
                }
            )
            return made, len(seen.observation["result"])

    results = await asyncio.gather(*(one(i) for i in range(12)))
    base = results[0][1]  # session 0 made no order
    assert all(seen == base + made for made, seen in results), results
    assert server.core.pool.opened + server.core.pool.reused >= 12


class _Records(logging.Handler):
    """Keeps the records of a logger (uvicorn's loggers do not propagate to pytest's capture)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _frame(payload: bytes, opcode: int = 1) -> bytes:
    """A client's WebSocket frame (masked with a zero key, so the payload stays as it is)."""
    n = len(payload)
    size = bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big")
    return bytes([0x80 | opcode]) + size + b"\0\0\0\0" + payload


async def _step_then_protocol_error(server: Any, step: str) -> None:
    """On a raw connection: the handshake, a reset, steps and then a frame of a reserved opcode (a
    protocol error); then wait, without closing, until the server closes the connection."""
    reader, writer = await asyncio.open_connection(server.host, server.port)
    writer.write(
        f"GET /ws HTTP/1.1\r\nHost: {server.host}:{server.port}\r\nUpgrade: "
        "websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: "
        "dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    assert b" 101 " in await reader.readuntil(b"\r\n\r\n")
    writer.write(_frame(json.dumps({"type": "reset", "data": {}}).encode()))
    head = await reader.readexactly(2)
    n = head[1] & 0x7F
    n = int.from_bytes(await reader.readexactly(2 if n == 126 else 8), "big") if n >= 126 else n
    await reader.readexactly(n)  # the reset's observation
    # 30 steps in one write: uvicorn reads them at once and reads again only when its queue is
    # empty, that is
    # while the last step runs; the bad frame, sent a little later, is read then and answered with
    # uvicorn's
    # close, before the last step's answer is sent
    writer.write(b"".join(_frame(step.encode()) for _ in range(30)))
    await writer.drain()
    await asyncio.sleep(0.002)
    writer.write(_frame(b"", opcode=0xF))
    with contextlib.suppress(Exception):
        while await reader.read(
            65536
        ):  # the server's close frame; then it closes the connection itself
            pass
    writer.close()


async def test_ws_route_takes_a_trailing_slash_and_a_client_closing_mid_step_is_a_quiet_end(
    server: Any, tasks: list[Task]
) -> None:
    """``/ws/`` is the session route as ``/ws`` is; a client that closes while its step still runs
    (its answer then cannot be sent) ends its session quietly: no application error, the sandbox
    closed."""
    from websockets.asyncio.client import connect

    live = len(server.core.live)
    records = _Records()
    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addHandler(records)
    try:
        step = json.dumps(
            {
                "type": "step",
                "data": {
                    "type": "call_tool",
                    "tool_name": "list_orders",
                    "arguments": {"customer_id": "cus_0001"},
                },
            }
        )
        async with connect(server.ws_url + "/") as ws:  # /ws/
            await ws.send(json.dumps({"type": "reset", "data": {"task_id": tasks[0].id}}))
            first = json.loads(await ws.recv())
            assert (
                first["type"] == "observation"
                and first["data"]["observation"]["task_id"] == tasks[0].id
            )
            await ws.send(step)
            assert json.loads(await ws.recv())["data"]["observation"]["ok"] is True
        for _ in range(
            3
        ):  # a raw client: steps sent, then the close frame at once, no answer awaited
            async with connect(server.ws_url) as ws:
                await ws.send(json.dumps({"type": "reset", "data": {}}))
                await ws.recv()
                for _ in range(4):
                    await ws.send(step)
        for _ in range(
            3
            # a client that breaks the protocol while steps are queued, and keeps the connection
            # open
        ):
            await _step_then_protocol_error(server, step)
        async with GenericEnvClient(
            base_url=server.url
        ) as env:  # openenv-core's client, disconnecting mid-step
            await env.reset(task_id=tasks[0].id)
            pending = asyncio.ensure_future(
                env.step(
                    {
                        "type": "call_tool",
                        "tool_name": "list_orders",
                        "arguments": {"customer_id": "cus_0001"},
                    }
                )
            )
            await asyncio.sleep(0)
            await env.disconnect()
            with contextlib.suppress(Exception):
                await pending
        deadline = time.monotonic() + 60
        while (
            len(server.core.live) > live and time.monotonic() < deadline
        ):  # each closed session's sandbox is closed
            await asyncio.sleep(0.05)
        assert len(server.core.live) <= live
        async with GenericEnvClient(base_url=server.url) as env:  # and the server goes on serving
            assert (await env.reset(task_id=tasks[0].id)).observation["task_id"] == tasks[0].id
    finally:
        uvicorn_log.removeHandler(records)
    errors = [
        r.getMessage() + (r.exc_text or "") for r in records.records if r.levelno >= logging.ERROR
    ]
    assert errors == [], errors


async def test_mcp_streamable_http_sessions(server: Any) -> None:
    """The official mcp client over streamable HTTP: tools/list, tools/call, errors, and one sandbox
    per MCP session."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def session_orders(create: bool) -> int:
        async with (
            streamable_http_client(server.mcp_url) as streams,
            ClientSession(streams[0], streams[1]) as s,
        ):
            await s.initialize()
            tools = await s.list_tools()
            by_name = {t.name: t for t in tools.tools}
            assert (
                "create_order" in by_name
                and by_name["create_order"].input_schema["type"] == "object"
            )
            if create:
                made = await s.call_tool(
                    "create_order",
                    {"customer_id": "cus_0002", "product_id": "prd_0001", "quantity": 2},
                )
                assert not made.is_error and json.loads(made.content[0].text)["quantity"] == 2
            bad = await s.call_tool("get_order", {"order_id": "ord_none"})
            assert bad.is_error and "not_found" in bad.content[0].text
            listed = await s.call_tool("list_orders", {"customer_id": "cus_0002"})
            assert not listed.is_error
            return len(json.loads(listed.content[0].text))

    with_order, without = await asyncio.gather(session_orders(True), session_orders(False))
    assert with_order == without + 1
    async with (
        streamable_http_client(server.mcp_url + "?env=nope") as streams,
        ClientSession(streams[0], streams[1]) as s,
    ):
        await s.initialize()
        wrong = await s.call_tool("list_orders", {"customer_id": "cus_0002"})
        assert wrong.is_error and "no environment 'nope'" in wrong.content[0].text


def test_gymnasium_check_env_and_make(server: Any, run_dir: Path, tasks: list[Task]) -> None:
    """``envkernel.make`` (through the entry point) passes check_env; the reference chain scores 1
    when the episode ends."""
    from gymnasium.utils.env_checker import check_env

    import envkernel

    env = envkernel.make(url=server.url)
    try:
        check_env(env, skip_render_check=True)
        task = _read_only(tasks)
        obs, info = env.reset(options={"task_id": task.id})
        assert json.loads(obs)["request"] == task.request and info["task_id"] == task.id
        for call in task.calls:
            obs, reward, terminated, truncated, info = env.step(
                {"tool": call.name, "arguments": call.arguments}
            )
            assert info["ok"] and reward == 0.0 and not terminated and not truncated
        obs, reward, terminated, truncated, _ = env.step({"answer": task.outcome.answer})
        assert reward == 1.0 and terminated and not truncated
    finally:
        env.close()
    own = envkernel.make(
        str(run_dir / "envs" / task.env_id), tasks=str(run_dir / "tasks.jsonl")
    )  # serves the folder itself
    try:
        obs, info = own.reset(seed=1)
        assert info["task_id"] == tasks[1 % len(tasks)].id
    finally:
        own.close()
    with pytest.raises(ValueError, match="not both"):
        envkernel.make()


def test_large_observation_is_not_cut_off(run_dir: Path, tmp_path: Path) -> None:
    """A 6 MB observation arrives whole through the openenv client, the Gymnasium env and the sync
    client."""
    env_dir = tmp_path / "shop-big"
    shutil.copytree(run_dir / "envs" / "shop-v1", env_dir)
    (env_dir / "env.py").write_text((env_dir / "env.py").read_text() + BLOB_TOOL)
    meta = json.loads((env_dir / "env.json").read_text())
    meta["tools"].append(
        {
            "name": "blob",
            "description": "A large text.",
            "mutates": False,
            "parameters": {
                "type": "object",
                "properties": {"size": {"type": "integer"}},
                "required": ["size"],
            },
        }
    )
    (env_dir / "env.json").write_text(json.dumps(meta))
    size = 6 * 1024 * 1024
    with start(
        load_catalog(env_dir), RunnerSandboxes(process_runner()), ServeSettings(port=0, warm=0)
    ) as big:
        with GenericEnvClient(base_url=big.url).sync() as client:
            client.reset()
            r = client.step({"type": "call_tool", "tool_name": "blob", "arguments": {"size": size}})
            assert r.observation["ok"] and len(r.observation["result"]) == size
        with Session(big.url) as s:
            s.reset()
            assert len(s.call("blob", size=size)["observation"]["result"]) == size


def test_trl_environment_factory(server: Any, run_dir: Path, tasks: list[Task]) -> None:
    """The TRL class: tools found and read the way GRPOTrainer does, reset with dataset columns, the
    reward from the env."""
    from transformers.utils import get_json_schema

    from envkernel_serve.trl import dataset_rows, environment_factory

    Env = environment_factory(server.url)
    rows = {r["task_id"]: r for r in dataset_rows(run_dir)}
    instance = Env()
    try:
        # what GRPOTrainer.__init__ does with the probe instance
        members = dict(inspect.getmembers(instance, predicate=inspect.ismethod))
        assert "reset" in members and "get_reward" in members
        tools = {
            n: m
            for n, m in members.items()
            if n not in ("reset", "get_reward") and not n.startswith("_")
        }
        schemas = {n: get_json_schema(m) for n, m in tools.items() if n != "close"}
        assert schemas["get_product"]["function"]["parameters"]["required"] == ["product_id"]
        assert (
            schemas["submit_answer"]["function"]["parameters"]["properties"]["answer"]["type"]
            == "string"
        )
        for task in (_read_only(tasks), _mutating(tasks)):
            assert (
                instance.reset(**rows[task.id]) is None
            )  # the row has a prompt: nothing is appended
            for call, expected in zip(task.calls, task.outputs, strict=True):
                assert json.loads(tools[call.name](**call.arguments)) == expected
            if not task.outcome.mutates:
                tools["submit_answer"](answer=task.outcome.answer)
            assert instance.get_reward() == 1.0
        with pytest.raises(ValueError, match="not_found"):
            tools["get_order"](order_id="ord_none")
        assert (
            Env().reset(task_id=tasks[0].id) == tasks[0].request
        )  # no prompt column: the request is returned
    finally:
        instance.close()


async def test_verl_tool_keyed_by_trajectory(server: Any, tasks: list[Task]) -> None:
    """The verl BaseTool, driven as verl's ToolAgentLoop does (create, execute, release per call):
    state follows the trajectory."""
    from envkernel_serve.verl import EnvkernelTool, dataset_rows, tool_config

    config = await asyncio.to_thread(tool_config, server.url)
    tools = {
        e["tool_schema"]["function"]["name"]: EnvkernelTool(e["config"], e["tool_schema"])
        for e in config["tools"]
    }
    assert tools["create_order"].get_openai_tool_schema().function.name == "create_order"
    task = _mutating(tasks)
    row = next(
        r
        for r in dataset_rows(str(server_run_dir(server)))
        if r["extra_info"]["task_id"] == task.id
    )
    # the tool config has every served environment's tools (shop-v1's and the workspace's); the row
    # names its own environment's, in tools_kwargs and in tool_selection (what ToolAgentLoop offers)
    assert row["agent_name"] == "tool_agent"
    assert set(row["extra_info"]["tools_kwargs"]) == set(row["extra_info"]["tool_selection"])
    assert set(row["extra_info"]["tool_selection"]) < set(tools)

    async def trajectory(request_id: str, calls: list[Any]) -> float | None:
        for call in calls:
            tool = tools[call.name]
            iid, _ = await tool.create(
                **row["extra_info"]["tools_kwargs"][call.name]
            )  # as ToolAgentLoop passes them
            resp, step_reward, metrics = await tool.execute(
                iid, call.arguments, agent_data=SimpleNamespace(request_id=request_id)
            )
            await tool.release(iid)
            assert metrics["ok"], resp.text
            assert step_reward == 0.0 and json.loads(resp.text) is not None
        return await tools[calls[0].name].end(request_id)

    full, half = await asyncio.gather(
        trajectory("traj-full", task.calls), trajectory("traj-half", task.calls[:-1])
    )
    assert full == 1.0 and half is not None and half < 1.0


async def test_sandboxes_from_the_nats_sandbox_service(
    run_dir: Path, nats_server: str, tasks: list[Task]
) -> None:
    """With --nats-url, sessions get sandboxes through the kernel's sandbox service on a real
    nats-server."""
    source = NatsSandboxes(nats_server, "process", local_runner=process_runner())
    running = await asyncio.to_thread(
        start, load_catalog(run_dir), source, ServeSettings(port=0, warm=1)
    )
    try:
        task = _read_only(tasks)

        def play() -> float | None:
            with Session(running.url) as s:
                s.reset(task_id=task.id)
                for call in task.calls:
                    assert s.call(call.name, **call.arguments)["observation"]["ok"]
                return s.submit(task.outcome.answer)["reward"]

        assert await asyncio.to_thread(play) == 1.0
        assert source.service is not None and running.core.pool.opened >= 1
    finally:
        await asyncio.to_thread(running.stop)


def test_bad_input_is_a_clear_error(run_dir: Path, tmp_path: Path, server: Any) -> None:
    """A folder that is not a run, a tasks file with a broken line, an unknown task: each says what
    is wrong."""
    with pytest.raises(CatalogError, match="neither an environment folder"):
        load_catalog(tmp_path)
    lines = (run_dir / "tasks.jsonl").read_text().splitlines()
    broken = tmp_path / "tasks.jsonl"
    broken.write_text("\n".join([lines[0], "{not json", lines[1]]) + "\n")
    cat = load_catalog(run_dir, broken)
    assert len(cat.tasks) == 2 and "tasks.jsonl:2: not a task" in cat.skipped[0]
    with Session(server.url) as s:
        with pytest.raises(ServeError, match="no task 'nope'"):
            s.reset(task_id="nope")
        assert s.reset()["observation"]["task_id"]  # the session goes on


def test_serve_command(serve_cli: SimpleNamespace, run_dir: Path, tasks: list[Task]) -> None:
    """``envkernel serve RUN_DIR --port 0`` serves until SIGTERM; a bad folder is a usage error
    (exit 2)."""
    from click.testing import CliRunner

    from envkernel.cli import cli

    bad = CliRunner().invoke(cli, ["serve", str(run_dir / "nope")])
    assert bad.exit_code == 2 and "is not a folder" in bad.output
    proc = serve_cli.proc
    deadline = time.monotonic() + 90
    while not (
        lines := [
            ln
            for ln in serve_cli.log.read_text().splitlines()
            if "serving " in ln and " at http" in ln
        ]
    ):
        assert proc.poll() is None and time.monotonic() < deadline, serve_cli.log.read_text()[
            -3000:
        ]
        time.sleep(0.1)
    url = lines[0].split(" at ", 1)[1].split(" ", 1)[0]
    for _ in range(200):
        try:
            s = Session(url, timeout=30)
            break
        except ServeError:
            time.sleep(0.1)
    with s:
        assert s.reset(task_id=tasks[0].id)["observation"]["request"] == tasks[0].request
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0


def test_openenv_http_routes_keep_episodes(server: Any, tasks: list[Task]) -> None:
    """OpenEnv's HTTP routes with a real HTTP client: /reset opens an episode kept under its
    episode_id, /step and /state continue it (isolated from another), no id is OpenEnv's stateless
    call, and openenv-core's runtime validator sees the simulation-mode routes."""
    import httpx
    from openenv.cli._validation import validate_running_environment

    task = _read_only(tasks)
    order = {
        "type": "call_tool",
        "tool_name": "create_order",
        "arguments": {"customer_id": "cus_0001", "product_id": "prd_0003", "quantity": 1},
    }
    listing = {
        "type": "call_tool",
        "tool_name": "list_orders",
        "arguments": {"customer_id": "cus_0001"},
    }
    with httpx.Client(base_url=server.url, timeout=60) as http:
        first = http.post("/reset", json={"task_id": task.id}).json()
        eid = first["observation"]["episode_id"]
        assert (
            first["observation"]["request"] == task.request
            and first["done"] is False
            and first["reward"] is None
        )
        for call, expected in zip(task.calls, task.outputs, strict=True):
            r = http.post(
                "/step",
                json={
                    "action": {
                        "type": "call_tool",
                        "tool_name": call.name,
                        "arguments": call.arguments,
                    },
                    "episode_id": eid,
                },
            ).json()
            assert r["observation"]["result"] == expected and r["done"] is False
        state = http.get("/state", params={"episode_id": eid}).json()
        assert (
            state["episode_id"] == eid
            and state["step_count"] == len(task.calls)
            and state["task_id"] == task.id
        )
        end = http.post(
            "/step",
            json={"action": {"type": "submit", "answer": task.outcome.answer}, "episode_id": eid},
        ).json()
        assert end["done"] is True and end["reward"] == 1.0
        # two episodes named by the client (body and header): one's change is not seen by the other
        a = http.post("/reset", json={"episode_id": "ep-a", "task_id": task.id}).json()[
            "observation"
        ]["episode_id"]
        b = http.post(
            "/reset", json={"task_id": task.id}, headers={"X-Envkernel-Session": "ep-b"}
        ).json()["observation"]["episode_id"]
        assert (a, b) == ("ep-a", "ep-b")
        assert http.post("/step", json={"action": order, "episode_id": a}).json()["observation"][
            "ok"
        ]
        seen_a = http.post(
            "/step", json={"action": listing}, headers={"X-Envkernel-Session": a}
        ).json()
        seen_b = http.post("/step", json={"action": listing, "episode_id": b}).json()
        assert len(seen_a["observation"]["result"]) == len(seen_b["observation"]["result"]) + 1
        # stateless (no episode named): a fresh episode per request, as openenv-core's HTTP server
        # does
        fresh = http.post("/step", json={"action": listing}).json()
        assert len(fresh["observation"]["result"]) == len(seen_b["observation"]["result"])
        assert http.get("/state").json()["step_count"] == 0
        # bad input: a clear 422 that says what to send
        gone = http.post("/step", json={"action": listing, "episode_id": "never"})
        assert gone.status_code == 422 and "POST /reset first" in gone.json()["detail"]
        no_action = http.post("/step", json={"episode_id": a})
        assert no_action.status_code == 422 and 'needs an "action"' in no_action.json()["detail"]
        assert http.post("/reset", content=b"{oops").status_code == 422
        assert "no task 'nope'" in http.post("/reset", json={"task_id": "nope"}).json()["detail"]
        assert (
            http.get("/state", params={"episode_id": a}).json()["step_count"] == 2
        )  # the episode went on
    report = validate_running_environment(server.url)
    passed = {c["id"]: c["passed"] for c in report["criteria"]}
    assert report["passed"] and report["mode"] == "simulation" and all(passed.values()), report


async def test_mcp_task_session_lists_only_its_tools(
    run_dir: Path, tmp_path: Path, tasks: list[Task]
) -> None:
    """Over MCP, a session naming a task (``?task=`` or ``X-Envkernel-Task``) is offered only that
    task's tools, as on /ws."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    task = _read_only(tasks)
    every = {t.name for t in load_catalog(run_dir).envs[task.env_id].tools}
    narrow = msgspec.structs.replace(task, id="narrow", tools=sorted({c.name for c in task.calls}))
    assert set(narrow.tools) < every
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_bytes(msgspec.json.encode(narrow) + b"\n" + msgspec.json.encode(task) + b"\n")

    async def mcp_tools(url: str, headers: dict[str, str] | None = None) -> tuple[set[str], Any]:
        import httpx2  # the HTTP client the mcp package's transport takes

        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            streamable_http_client(url, http_client=http) as streams,
            ClientSession(*streams[:2]) as s,
        ):
            await s.initialize()
            listed = {t.name for t in (await s.list_tools()).tools}
            return listed, await s.call_tool(
                sorted(every - listed or {"-"})[0], {}
            ) if listed != every else None

    running = await asyncio.to_thread(
        start,
        load_catalog(run_dir / "envs" / task.env_id, tasks_file),
        RunnerSandboxes(process_runner()),
        ServeSettings(port=0, warm=0),
    )
    try:
        async with GenericEnvClient(base_url=running.url) as env:
            on_ws = {t["name"] for t in (await env.reset(task_id="narrow")).observation["tools"]}
        (by_query, refused), (by_header, _), (free, _) = await asyncio.gather(
            mcp_tools(f"{running.mcp_url}?task=narrow"),
            mcp_tools(running.mcp_url, {"X-Envkernel-Task": "narrow"}),
            mcp_tools(running.mcp_url),
        )
    finally:
        await asyncio.to_thread(running.stop)
    assert by_query == by_header == on_ws | {"submit_answer"} == {*narrow.tools, "submit_answer"}
    assert refused.is_error and "no tool" in refused.content[0].text
    assert free == every  # no task named: every tool of the environment


async def test_a_session_whose_executor_dies_starts_again_from_its_task(
    server: Any, tasks: list[Task]
) -> None:
    """Steps go over the sandbox's direct lane (not its call log); if its executor dies, the step
    says so (a transport error) and the next one runs in a new sandbox in the task's initial
    state."""
    task = _mutating(tasks)
    order = {
        "type": "call_tool",
        "tool_name": "create_order",
        "arguments": {"customer_id": "cus_0001", "product_id": "prd_0003", "quantity": 1},
    }
    listing = {
        "type": "call_tool",
        "tool_name": "list_orders",
        "arguments": {"customer_id": "cus_0001"},
    }
    async with GenericEnvClient(base_url=server.url) as env:
        await env.reset(task_id=task.id)
        base = len((await env.step(listing)).observation["result"])
        assert (await env.step(order)).observation["ok"]
        [ep] = [
            e
            for e in server.core.live.values()
            if e.task is not None
            and e.task.id == task.id
            and e.lease is not None
            and e.lease.lane is not None
        ]
        sandbox = ep.lease.sandbox
        assert sandbox._log == [] or all(
            b"create_order" not in req for req, _ in sandbox._log
        )  # the lane's calls skip the log
        os.kill(sandbox.pid, signal.SIGKILL)
        dead = await env.step(listing)
        assert dead.observation["error"]["error_type"] == "transport_error", dead.observation
        again = await env.step(listing)
        assert (
            again.observation["ok"] and len(again.observation["result"]) == base
        )  # the task's initial state, in a new sandbox
        assert ep.lease is not None and ep.lease.sandbox is not sandbox


def _quoted(reasons: list[str]) -> set[str]:
    """The values a grading's reasons quote (``'27-inch monitor' with ['22900'] ...``)."""
    import re

    return {m for r in reasons for m in re.findall(r"'([^']{3,})'", r)}


async def test_nothing_an_agent_reads_gives_the_answer_away(server: Any, tasks: list[Task]) -> None:
    """An agent reading everything it can (MCP's tool list, instructions and state resource before
    any step, the submit result and the state after it; /ws observations and state; the HTTP
    routes) finds no reason, no value the reasons quote and no reference call; the trainer asks for
    the reasons and gets them."""
    import httpx
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    task = _read_only(tasks)
    with Session(server.url, token=server.core.trainer_token) as trainer:  # what it missed
        trainer.reset(task_id=task.id)
        assert trainer.submit("I do not know.")["reward"] == 0.0
        reasons = trainer.state(reasons=True)["reasons"]
    public = task.request + json.dumps(
        msgspec.to_builtins(server.core.catalog.envs[task.env_id].tools)
    )
    # what the task expects and the agent could only know by looking it up
    secrets = {v for v in _quoted(reasons) if v.lower() not in public.lower()}
    secrets |= {task.outcome.answer}
    assert reasons and secrets, (reasons, task.outcome.answer)
    seen: list[str] = []
    async with (
        streamable_http_client(f"{server.mcp_url}?task={task.id}") as streams,
        ClientSession(*streams[:2]) as s,
    ):
        init = await s.initialize()
        seen.append(json.dumps(init.model_dump(mode="json")))
        seen.append(json.dumps((await s.list_tools()).model_dump(mode="json")))
        seen.append(json.dumps((await s.list_resources()).model_dump(mode="json")))
        before = (await s.read_resource("envkernel://session/state")).contents[0].text
        end = await s.call_tool("submit_answer", {"answer": "I do not know."})
        after = (await s.read_resource("envkernel://session/state")).contents[0].text
        seen += [before, json.dumps(end.model_dump(mode="json")), after]
        assert json.loads(after)["reward"] == 0.0 and "reasons" not in json.loads(before)
    with Session(server.url) as agent:
        seen.append(json.dumps(agent.reset(task_id=task.id)))
        seen.append(json.dumps(agent.tools()))
        seen.append(json.dumps(agent.state()))
        seen.append(json.dumps(agent.submit("I do not know.")))
        seen.append(json.dumps(agent.state()))
    with httpx.Client(base_url=server.url, timeout=60) as http:
        eid = http.post("/reset", json={"task_id": task.id}).json()["observation"]["episode_id"]
        seen.append(http.get("/state", params={"episode_id": eid}).text)
        seen.append(http.get("/state", params={"episode_id": eid, "reasons": "1"}).text)
        end_http = http.post(
            "/step", json={"action": {"type": "submit", "answer": "no"}, "episode_id": eid}
        )
        seen.append(end_http.text)
        seen.append(http.get("/state", params={"episode_id": eid}).text)
        for route in ("/metadata", "/schema", "/openapi.json", "/health"):
            seen.append(http.get(route).text)
        asked = http.get("/state", params={"episode_id": eid, "reasons": "1"}).json()
        assert "reasons" not in asked and asked["reasons_withheld"]  # no token: withheld
        trainer_view = http.get(
            "/state",
            params={"episode_id": eid, "reasons": "1"},
            headers={"Authorization": f"Bearer {server.core.trainer_token}"},
        ).json()
        assert trainer_view["reasons"]
    text = "\n".join(seen).lower()
    calls = [json.dumps(c.arguments) for c in task.calls if c.arguments]
    # as a whole token: a short number like 8900 may sit inside a random id or a timestamp
    leaked = [
        v
        for v in [*reasons, *secrets, *calls]
        if re.search(rf"(?<![0-9a-z.]){re.escape(v.lower())}(?![0-9a-z])", text)
    ]
    assert not leaked, leaked


def test_show_reasons_puts_them_in_every_state(run_dir: Path, tasks: list[Task]) -> None:
    """``show_reasons`` (``--show-reasons``): a plain state request (an agent's) has the reasons."""
    running = start(
        load_catalog(run_dir),
        RunnerSandboxes(process_runner()),
        ServeSettings(port=0, warm=0, show_reasons=True),
    )
    try:
        with Session(running.url) as s:
            s.reset(task_id=_read_only(tasks).id)
            s.submit("I do not know.")
            assert s.state()["reasons"]
    finally:
        running.stop()


def test_a_task_under_a_domain_policy_is_served_with_it(server: Any, tasks: list[Task]) -> None:
    """The domain policy and who is asking reach an agent through serve as a run's policies get
    them: in the reset observation, and as the system message of the TRL dataset's prompt."""
    from envkernel_kit.policy import policy_note
    from envkernel_serve.trl import dataset_rows

    ruled = [t for t in tasks if t.policy]
    assert ruled, "the corpus environments carry domain policies"
    with Session(server.url) as s:
        obs = s.reset(task_id=ruled[0].id)["observation"]
    assert obs["policy"] == policy_note(ruled[0]) and ruled[0].policy in obs["policy"]
    rows = {r["task_id"]: r for r in dataset_rows(server.core.catalog.source)}
    first = rows[ruled[0].id]["prompt"]
    assert first[0] == {"role": "system", "content": policy_note(ruled[0])}
    assert first[-1] == {"role": "user", "content": ruled[0].request}
