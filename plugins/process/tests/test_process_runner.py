"""The process sandbox runner and the executor, with real subprocesses (no mocks)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import msgspec
import pytest
import pytest_asyncio

from envkernel_process import (
    ProcessRunner,
    SandboxError,
    Settings,
    _network_cut,
    executor_path,
    register_sandbox_runners,
)
from envkernel_schemas import CodeBehaviour, EnvSpec, ModelBehaviour, ToolSpec

SOURCE = """
import os, time, uuid, random, datetime

def put(env, key, value):
    env.db.execute("INSERT INTO kv (key, value) VALUES (?, ?)", (key, value))
    return {"key": key, "id": env.new_id("kv"), "at": env.now()}

def get(env, key):
    row = env.db.execute("SELECT key, value FROM kv WHERE key = ?", (key,)).fetchone()
    if row is None:
        raise ToolError("not_found", f"no key {key!r}")
    return row

def put_then_fail(env, key, how):
    env.db.execute("INSERT INTO kv (key, value) VALUES (?, 'x')", (key,))
    env.new_id("kv")
    env.now()
    if how == "tool_error":
        raise env.error("conflict", "refused after writing")
    if how == "crash":
        return {}["missing"]
    if how == "bad_return":
        return object()
    return "unreachable"

def noisy(env):
    print("this goes to stderr, not to the protocol")
    os.write(1, b"raw write to fd 1\\n")
    return "quiet"

def clocks(env):
    return [time.time(), str(datetime.datetime.now()), str(uuid.uuid4()), random.random(), \
env.rng.random()]

def spin(env):
    while True:
        pass

def stubborn(env):
    while True:
        try:
            while True:
                pass
        except BaseException:
            pass

def die(env):
    os._exit(3)

def hog(env):
    return len(bytearray(2 * 1024 * 1024 * 1024))

def connect(env):
    s = __import__("socket").create_connection(("1.1.1.1", 53), timeout=2)
    s.close()
    return "connected"
"""

TOOLS = [
    "put",
    "get",
    "put_then_fail",
    "noisy",
    "clocks",
    "spin",
    "stubborn",
    "die",
    "hog",
    "connect",
]
SEED_SQL = "CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT); INSERT INTO kv VALUES ('a', '1');"


def make_env(source: str = SOURCE) -> EnvSpec:
    return EnvSpec(
        id="kv-v1",
        name="kv",
        tools=[ToolSpec(name=n, mutates=n.startswith("put")) for n in TOOLS],
        behaviour=CodeBehaviour(source=source),
        seed_sql=SEED_SQL,
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return True


# ---------------------------------------------------------------- the executor on its own


def run_executor(lines: list[str], *args: str) -> tuple[list[dict], subprocess.CompletedProcess]:
    proc = subprocess.run(
        [sys.executable, "-S", "-P", executor_path(), *args],
        input=("\n".join(lines) + "\n").encode(),
        capture_output=True,
        timeout=20,
        check=False,
    )
    return [json.loads(line) for line in proc.stdout.decode().splitlines()], proc


def load_line(env: EnvSpec, seed: int = 0) -> str:
    return msgspec.json.encode({"op": "load", "env": env, "seed": seed}).decode()


def test_executor_protocol_errors_never_crash():
    out, proc = run_executor(
        [
            json.dumps({"op": "call", "tool": "get", "arguments": {"key": "a"}}),
            "this is not json",
            json.dumps([1, 2]),
            json.dumps({"op": "frobnicate"}),
            msgspec.json.encode(
                {
                    "op": "load",
                    "env": EnvSpec(id="m", name="m", tools=[], behaviour=ModelBehaviour(model={})),
                }
            ).decode(),
            load_line(make_env()),
            json.dumps({"op": "call", "tool": "nope", "arguments": {}}),
            json.dumps({"op": "call", "tool": "get", "arguments": {"key": "a", "extra": 1}}),
            json.dumps({"op": "call", "tool": "get", "arguments": {}}),
            json.dumps({"op": "call", "tool": "get", "arguments": [1]}),
            json.dumps({"op": "call", "tool": "noisy", "arguments": {}}),
            json.dumps({"op": "restore", "snapshot": "s42"}),
            json.dumps({"op": "close"}),
            json.dumps({"op": "dump"}),  # never read: the executor exited
        ]
    )
    codes = [r["error"]["code"] if not r["ok"] else "ok" for r in out]
    assert codes == [
        "not_loaded",
        "bad_request",
        "bad_request",
        "bad_request",
        "load_failed",
        "ok",
        "unknown_tool",
        "invalid_arguments",
        "invalid_arguments",
        "invalid_arguments",
        "ok",
        "unknown_snapshot",
        "ok",
    ]
    assert "extra" in out[7]["error"]["message"] and "key" in out[8]["error"]["message"]
    assert out[10]["value"] == "quiet"
    assert b"raw write to fd 1" in proc.stderr and b"goes to stderr" in proc.stderr
    assert proc.returncode == 0


def test_executor_load_failures_are_reported():
    bad_sql = msgspec.structs.replace(make_env(), seed_sql="CREATE TABLE broken (")
    bad_py = make_env("def broken(env:\n    pass\n")
    raises = make_env("raise RuntimeError('at import')\n")
    out, _ = run_executor([load_line(bad_sql), load_line(bad_py), load_line(raises)])
    assert [r["error"]["code"] for r in out] == ["load_failed"] * 3
    assert "seed_sql" in out[0]["error"]["message"]
    assert "SyntaxError" in out[1]["error"]["message"]
    assert (
        "at import" in out[2]["error"]["message"] and "env.py line 1" in out[2]["error"]["message"]
    )


def test_executor_socket_mode_and_sigterm():
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "s.sock")
    proc = subprocess.Popen(
        [sys.executable, "-S", "-P", executor_path(), "--socket", path], stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(path):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.01)

        def session(lines: list[str]) -> list[dict]:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(path)
                f = s.makefile("rwb")
                out = []
                for line in lines:
                    f.write(line.encode() + b"\n")
                    f.flush()
                    out.append(json.loads(f.readline()))
                return out

        first = session(
            [
                load_line(make_env()),
                json.dumps({"op": "call", "tool": "put", "arguments": {"key": "b", "value": "2"}}),
            ]
        )
        assert [r["ok"] for r in first] == [True, True]
        second = session([json.dumps({"op": "dump"})])  # state outlives a connection
        assert [r["key"] for r in second[0]["value"]["kv"]] == ["a", "b"]
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(5) == 0
        assert time.monotonic() - start < 2
        assert not os.path.exists(path)
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------- the runner


@pytest_asyncio.fixture
async def runner():
    r = ProcessRunner(Settings(call_timeout=0.5))
    yield r
    await r.aclose()


@pytest.mark.asyncio
async def test_calls_errors_and_stdout_noise(runner):
    s = await runner.open(make_env(), seed=1)
    r = await s.call("put", {"key": "b", "value": "2"})
    assert r.ok and r.value == {"key": "b", "id": "kv_0001", "at": "2026-01-15T09:00:00Z"}
    assert (await s.call("get", {"key": "b"})).value == {"key": "b", "value": "2"}
    r = await s.call("get", {"key": "zz"})
    assert not r.ok and r.error.code == "not_found"
    assert (await s.call("nope", {})).error.code == "unknown_tool"
    r = await s.call("get", {"wrong": 1})
    assert r.error.code == "invalid_arguments" and "wrong" in r.error.message
    assert (await s.call("noisy", {})).value == "quiet"
    assert (await s.call("get", {"key": "a"})).ok


@pytest.mark.asyncio
async def test_failed_call_leaves_state_and_counters_unchanged(runner):
    s = await runner.open(make_env(), seed=1)
    before = await s.state()
    for how, code in (
        ("tool_error", "conflict"),
        ("crash", "tool_crashed"),
        ("bad_return", "bad_return"),
    ):
        r = await s.call("put_then_fail", {"key": "new", "how": how})
        assert not r.ok and r.error.code == code, r
        assert await s.state() == before
    assert "KeyError" in (await s.call("put_then_fail", {"key": "n", "how": "crash"})).error.message
    # ids and the clock did not move either
    assert (await s.call("put", {"key": "b", "value": "2"})).value == {
        "key": "b",
        "id": "kv_0001",
        "at": "2026-01-15T09:00:00Z",
    }


@pytest.mark.asyncio
async def test_snapshot_restore_round_trip(runner):
    s = await runner.open(make_env(), seed=1)
    await s.call("put", {"key": "b", "value": "2"})
    handle = await s.snapshot()
    at_snapshot = await s.state()
    await s.call("put", {"key": "c", "value": "3"})
    assert await s.state() != at_snapshot
    await s.restore(handle)
    assert await s.state() == at_snapshot
    # counters were restored too: the same call gives the same id again
    assert (await s.call("put", {"key": "c", "value": "3"})).value["id"] == "kv_0002"
    with pytest.raises(SandboxError) as e:
        await s.restore("s99")
    assert e.value.code == "unknown_snapshot"


@pytest.mark.asyncio
async def test_deterministic_replay(runner):
    chain = [
        ("put", {"key": "b", "value": "2"}),
        ("clocks", {}),
        ("put", {"key": "c", "value": "3"}),
        ("clocks", {}),
    ]
    results, states = [], []
    for _ in range(2):
        s = await runner.open(make_env(), seed=7)
        results.append([(await s.call(t, a)).value for t, a in chain])
        states.append(await s.state())
        await s.close()
    assert results[0] == results[1]
    assert states[0] == states[1]
    assert results[0][1][0] == 1768467601.000001  # frozen clock: base + 1 s (one now()) + 1 µs


@pytest.mark.asyncio
async def test_timeout_inside_executor_keeps_the_sandbox(runner):
    s = await runner.open(make_env(), seed=0)
    await s.call("put", {"key": "b", "value": "2"})
    pid = s.pid
    start = time.monotonic()
    r = await s.call("spin", {})
    assert r.error.code == "timeout" and time.monotonic() - start < 2
    assert s.pid == pid and s.replacements == 0
    assert (await s.call("get", {"key": "b"})).ok


@pytest.mark.asyncio
async def test_hung_executor_is_killed_and_replaced_with_its_state(runner):
    s = await runner.open(make_env(), seed=0)
    await s.call("put", {"key": "b", "value": "2"})
    handle = await s.snapshot()
    await s.call("put", {"key": "c", "value": "3"})
    expected = await s.state()
    pid = s.pid
    r = await s.call("stubborn", {})
    assert r.error.code == "timeout" and "killed" in r.error.message
    assert not alive(pid)
    assert (await s.call("get", {"key": "c"})).ok  # replaced, and the earlier calls were replayed
    assert s.pid != pid and s.replacements == 1 and not s.diverged
    assert await s.state() == expected
    await s.restore(handle)  # a snapshot of the old executor still works
    assert [row["key"] for row in (await s.state())["kv"]] == ["a", "b"]


@pytest.mark.asyncio
async def test_executor_death_is_a_crashed_result_then_recovers(runner):
    s = await runner.open(make_env(), seed=0)
    await s.call("put", {"key": "b", "value": "2"})
    r = await s.call("die", {})
    assert not r.ok and r.error.code == "crashed"
    assert "exit code 3" in r.error.message
    r = await s.call("get", {"key": "b"})
    assert r.ok and s.replacements == 1
    assert (await s.call("put", {"key": "c", "value": "3"})).value["id"] == "kv_0002"


@pytest.mark.asyncio
async def test_memory_limit():
    r = ProcessRunner(Settings(memory_mb=256))
    try:
        s = await r.open(make_env(), seed=0)
        res = await s.call("hog", {})
        assert not res.ok and "MemoryError" in res.error.message
        assert (await s.call("get", {"key": "a"})).ok
    finally:
        await r.aclose()


@pytest.mark.asyncio
@pytest.mark.skipif(not _network_cut(), reason="needs root and a working `unshare -n`")
async def test_network_is_cut(runner):
    s = await runner.open(make_env(), seed=0)
    r = await s.call("connect", {})
    # Landlock denies TCP first (EACCES); without it, the empty namespace has no route
    assert not r.ok and (
        "unreachable" in r.error.message.lower() or "permission denied" in r.error.message.lower()
    )


@pytest.mark.asyncio
async def test_close_leaves_nothing_behind():
    r = ProcessRunner()
    a = await r.open(make_env(), seed=0)
    b = await r.open(make_env(), seed=0)
    pids, folders = [a.pid, b.pid], [a._folder, b._folder]
    assert all(alive(p) for p in pids) and len(r.sessions) == 2
    await a.close()
    assert not alive(pids[0]) and not os.path.exists(folders[0]) and alive(pids[1])
    with pytest.raises(SandboxError):
        await a.call("get", {"key": "a"})
    await r.aclose()
    assert not alive(pids[1]) and not os.path.exists(folders[1]) and r.sessions == []


@pytest.mark.asyncio
async def test_lifetime_stops_the_sandbox():
    r = ProcessRunner(Settings(lifetime=2.0))
    s = await r.open(make_env(), seed=0)
    pid = s.pid
    await asyncio.sleep(2.5)
    assert not alive(pid) and s.closed and r.sessions == []
    with pytest.raises(SandboxError, match="lifetime"):
        await s.state()


@pytest.mark.asyncio
async def test_open_fails_clearly_on_a_broken_env():
    r = ProcessRunner()
    with pytest.raises(SandboxError, match="load_failed"):
        await r.open(make_env("this is not python"), seed=0)
    assert r.sessions == []


def test_settings_and_registration():
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"call_timout": 1}, Settings)
    assert msgspec.convert({"call_timeout": 2}, Settings).call_timeout == 2
    registered = []
    register_sandbox_runners(lambda name, factory: registered.append((name, factory)))
    assert registered == [("process", ProcessRunner)]
    assert ProcessRunner.Settings is Settings
