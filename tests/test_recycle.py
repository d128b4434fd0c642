"""Recycled sandboxes (``recycle = N`` of the process runner, docs/sessions.md): a closed session's
sandbox is a *nest* that forks the next session from its own clean memory, after killing every
process of the sandbox's uid and emptying its working tmpfs. A second session must see nothing of
the first: no file, no process, no Python state, no SysV IPC, and it cannot reach its nest.

Everything is real: the executor, the zygote, the confinement of this host (root: own uid, network
and mount namespaces, tmpfs, cgroups, Landlock, seccomp), and a real nats-server for the lane."""

from __future__ import annotations

import asyncio
import os
import textwrap

import pytest

from envkernel.sandbox import SandboxService, open_sandbox
from envkernel_bus import Bus
from envkernel_process import ProcessRunner, Settings, host_support
from envkernel_schemas import CodeBehaviour, EnvSpec, ToolSpec

SUPPORT = host_support()
pytestmark = pytest.mark.skipif(
    not (SUPPORT.root and SUPPORT.unshare),
    reason="recycling needs root and namespaces (CI runs as root)",
)

SOURCE = textwrap.dedent("""
    import ctypes, os, signal, sys, time
    MEMORY = []

    def step(env, delta=1):
        env.db.execute("UPDATE counter SET n = n + ?", (delta,))
        return {"count": env.db.execute("SELECT n FROM counter").fetchone()["n"]}

    def who(env):
        return {"uid": os.getuid(), "pid": os.getpid(), "ppid": os.getppid(), "files": \
sorted(os.listdir(".")),
                "memory": list(MEMORY), "patched": getattr(os, "left_by_an_earlier_session", None),
                "modules": sorted(m for m in sys.modules if m.startswith("left_"))}

    def leave_traces(env):
        with open("secret.txt", "w") as f:
            f.write("the first session's secret")
        os.makedirs("locked/inner")
        with open("locked/inner/deep.txt", "w") as f:
            f.write("x")
        os.chmod("locked", 0)
        os.symlink("/etc/passwd", "link")
        MEMORY.append("first")
        os.left_by_an_earlier_session = "first"
        sys.modules["left_module"] = type(sys)("left_module")
        libc = ctypes.CDLL(None, use_errno=True)
        shm = libc.shmget(0, 4096, 0o1666)
        msg = libc.msgget(0, 0o1666)
        return {"shm": [shm, ctypes.get_errno()], "msg": msg}

    def alive(env, pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return "gone"
        except PermissionError:
            return "denied"
        return "alive"

    def signal_nest(env):
        try:
            os.kill(os.getppid(), signal.SIGKILL)
        except PermissionError:
            return "denied"
        return "sent"

    def die(env):
        os.kill(os.getpid(), signal.SIGKILL)
""")
TOOLS = [ToolSpec(name=n) for n in ("step", "who", "leave_traces", "alive", "signal_nest", "die")]
FIRST = EnvSpec(
    id="recycle-a",
    name="a",
    tools=TOOLS,
    behaviour=CodeBehaviour(source=SOURCE),
    seed_sql="CREATE TABLE counter (n INTEGER NOT NULL); INSERT INTO counter VALUES (0);",
)
SECOND = EnvSpec(
    id="recycle-b",
    name="b",
    tools=TOOLS,
    behaviour=CodeBehaviour(source=SOURCE),
    seed_sql="CREATE TABLE counter (n INTEGER NOT NULL); INSERT INTO counter VALUES (40);",
)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return not any(
                line.startswith("State:") and line.split()[1] in ("Z", "X") for line in f
            )
    except OSError:
        return False


async def test_a_recycled_sandbox_keeps_nothing_of_the_session_before() -> None:
    """Same sandbox (uid, nest), fresh session: nothing of the first one reaches the second, which
    is confined as the first was; a crash in a recycled sandbox is replaced as usual; a full pool
    ends the sandbox; aclose ends the nests."""
    runner = ProcessRunner(Settings(recycle=1))
    try:
        a = await runner.open(FIRST, 0)
        assert (await a.call("step", {"delta": 2})).value == {"count": 2}
        before = (await a.call("who", {})).value
        traces = (await a.call("leave_traces", {})).value
        assert (
            traces["shm"] == [-1, 1] and traces["msg"] == -1
        )  # SysV IPC outlives processes: denied (EPERM)
        assert (
            await a.call("signal_nest", {})
        ).value == "denied"  # the nest is root: no session can touch it
        first_confinement = a.confinement
        assert (
            first_confinement["nest"]["session"] == 1
            and first_confinement["uid"] == before["uid"] != 0
        )
        await a.close()
        assert runner.recycled == 1 and len(runner._recycled) == 1 and not runner.sessions

        b = await runner.open(SECOND, 0)  # another environment, into the same sandbox
        assert runner.recycled_used == 1
        after = (await b.call("who", {})).value
        assert (
            after["uid"] == before["uid"] and after["ppid"] == before["ppid"]
        )  # the same sandbox...
        assert (
            after["pid"] != before["pid"]
        )  # ...a new process, forked from the nest's clean memory
        assert (
            after["files"] == []
            and after["memory"] == []
            and after["patched"] is None
            and after["modules"] == []
        )
        assert (await b.call("alive", {"pid": before["pid"]})).value == "gone"
        assert (await b.call("step", {"delta": 2})).value == {"count": 42}  # its own seed
        assert b.confinement["nest"]["session"] == 2
        for key in (
            "uid",
            "rlimits",
            "landlock",
            "seccomp",
            "workspace_tmpfs",
            "namespaces",
            "cgroups",
            "subreaper",
        ):
            assert b.confinement.get(key) == first_confinement.get(key), key
        with open(os.path.join(b._folder, "executor.log"), "rb") as f:
            assert b"secret" not in f.read()

        died = await b.call(
            "die", {}
        )  # the nest ends as its session did: the runner sees the same death
        assert not died.ok and died.error is not None and "SIGKILL" in died.error.message, died
        # replaced like any other sandbox, state replayed
        assert (await b.call("step", {"delta": 1})).value == {"count": 43}
        c = await runner.open(FIRST, 0)  # the pool is empty: a new sandbox
        assert (await c.call("who", {})).value["uid"] != before["uid"]
        await b.close()  # recycled (room for one)
        nest_c = c.pid
        await c.close()  # no room: ended
        assert runner.recycled == 2 and len(runner._recycled) == 1
        for _ in range(100):
            if nest_c is None or not _alive(nest_c):
                break
            await asyncio.sleep(0.05)
        assert nest_c is not None and not _alive(nest_c)
        nests = [s.pid for s in runner._recycled]
    finally:
        await runner.aclose()
    assert not runner._recycled and not runner.sessions
    for _ in range(100):
        if not [p for p in nests if p is not None and _alive(p)]:
            break
        await asyncio.sleep(0.05)
    assert not [p for p in nests if p is not None and _alive(p)]


async def test_a_recycled_sandbox_gets_a_new_lane_and_the_old_one_is_dead(nats_server: str) -> None:
    """Over the sandbox service: the next session of a recycled sandbox comes with its own direct
    lane; the lane the first client held answers nothing any more."""
    service_bus, client = await Bus.connect(nats_server), await Bus.connect(nats_server)
    runner = ProcessRunner(Settings(recycle=2))
    service = SandboxService(service_bus, "process", runner)
    await service.start()
    try:
        first = await open_sandbox(client, "process", FIRST, timeout=120, call_timeout=60)
        assert first.lane is not None
        old_lane, first.lane = (
            first.lane,
            None,
        )  # keep it past the close, as a client that misbehaves would
        who = (await old_lane.call("who", {})).value
        await first.close()
        for _ in range(100):
            if runner.recycled:
                break
            await asyncio.sleep(0.02)
        assert runner.recycled == 1
        second = await open_sandbox(client, "process", SECOND, timeout=120, call_timeout=60)
        assert second.lane is not None and runner.recycled_used == 1
        again = (await second.call("who", {})).value
        assert again["uid"] == who["uid"] and again["pid"] != who["pid"] and again["files"] == []
        assert (await second.call("step", {"delta": 1})).value == {"count": 41}
        stale = await old_lane.call("step", {"delta": 1})
        assert stale is None or not stale.ok  # the old lane reaches nothing
        assert (await second.call("step", {"delta": 1})).value == {"count": 42}
        old_lane.close()
        await second.close()
    finally:
        await service.stop()
        await runner.aclose()
        await service_bus.close()
        await client.close()


LEAKY = EnvSpec(
    id="recycle-leaky",
    name="leaky",
    tools=[ToolSpec(name="remember"), ToolSpec(name="recall")],
    behaviour=CodeBehaviour(
        source=textwrap.dedent("""
                    SEEN = []
                    def remember(env, text):
                        SEEN.append(text)
                        return len(SEEN)
                    def recall(env):
                        return list(SEEN)
                """)
    ),
    seed_sql="CREATE TABLE t (x INTEGER);",
)


async def test_serve_gives_each_session_a_sandbox_no_session_used() -> None:
    """``envkernel serve``'s warm pool: by default the next session's sandbox is one no session used
    (here a recycled one, forked fresh by its nest), so what a client's session left in the
    environment's module is gone; restoring a used sandbox (``fresh=False``) now clears it too (the
    restore runs env.py again), but a fresh sandbox also drops what no restore covers (a thread
    the environment's code started, say)."""
    from envkernel_serve.server import RunnerSandboxes
    from envkernel_serve.sessions import WarmPool

    for fresh in (True, False):
        runner = ProcessRunner(Settings(recycle=4))
        pool = WarmPool(RunnerSandboxes(runner), fresh=fresh)
        try:
            await pool.warm(LEAKY, 1)
            first = await pool.acquire(LEAKY)
            assert (await first.sandbox.call("remember", {"text": "client A's secret"})).value == 1
            await pool.release(first)
            second = await pool.acquire(LEAKY)
            seen = (await second.sandbox.call("recall", {})).value
            await pool.release(second)
            if fresh:
                assert seen == [] and pool.reused == 0
                assert runner.recycled >= 1  # the closes went back to the runner as fresh sandboxes
            else:
                # a restore runs env.py again, so the module's globals are as loaded as well (the
                # warm one was never used: lent without a restore)
                assert seen == [] and pool.reused == 1
        finally:
            await pool.close()
            await runner.aclose()
