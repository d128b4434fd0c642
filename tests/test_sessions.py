"""Cheap isolated sessions: executors forked from the process runner's zygote, spares opened
ahead, and tool results relayed undecoded by the sandbox service (docs/sessions.md).

Everything is real: the executor file, the zygote, the confinement this host offers (as root on
CI: own uid, network and mount namespaces, cgroups, Landlock, seccomp), and a real nats-server.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from envkernel.sandbox import SandboxService, open_sandbox
from envkernel_bus import Bus
from envkernel_process import ProcessRunner, Settings, host_support
from envkernel_schemas import CodeBehaviour, EnvSpec, ToolSpec

SUPPORT = host_support()

SOURCE = textwrap.dedent("""
    import os, signal, socket

    def step(env, delta=1):
        env.db.execute("UPDATE counter SET n = n + ?", (delta,))
        return {"count": env.db.execute("SELECT n FROM counter").fetchone()["n"]}

    def who(env):
        return {"uid": os.getuid(), "pid": os.getpid(), "ppid": os.getppid(), "cwd": os.getcwd()}

    def runtime(env):
        import sys
        import statistics  # not loaded before: imported through the runtime's folders now
        fds = [int(p.rsplit("/", 1)[1]) for p in sys.path if p.startswith("/proc/self/fd/")]
        return {"mean": statistics.mean([1, 2, 3]), "fds": fds}

    def signal_parent(env):
        try:
            os.kill(os.getppid(), 0)
        except PermissionError:
            return "denied"
        return "allowed"

    def connect(env, port):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        except OSError as exc:
            return type(exc).__name__
        return "connected"

    def fail(env):
        raise ToolError("nope", "this tool always fails")

    def die(env):
        os.kill(os.getpid(), signal.SIGKILL)

    def sockets(env):
        import stat
        found = []
        for fd in range(1024):
            try:
                if stat.S_ISSOCK(os.fstat(fd).st_mode):
                    found.append(fd)
            except OSError:
                pass
        return found

    def hang(env):
        import time
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # past the \
executor's own timeout
        time.sleep(600)
""")

COUNTER = EnvSpec(
    id="counter-test",
    name="counter",
    tools=[
        ToolSpec(name=n)
        for n in (
            "step",
            "who",
            "runtime",
            "signal_parent",
            "connect",
            "fail",
            "die",
            "hang",
            "sockets",
        )
    ],
    behaviour=CodeBehaviour(source=SOURCE),
    seed_sql="CREATE TABLE counter (n INTEGER NOT NULL); INSERT INTO counter VALUES (0);",
)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return not any(
                line.startswith("State:") and line.split()[1] in ("Z", "X") for line in f
            )
    except OSError:
        return False


async def test_a_forked_executor_is_confined_like_a_fresh_one() -> None:
    """Same confinement report, tools, state and snapshots with and without the zygote."""
    reports = {}
    for zygote in (True, False):
        runner = ProcessRunner(Settings(zygote=zygote))
        try:
            s = await runner.open(COUNTER, 0)
            assert (await s.call("step", {"delta": 2})).value == {"count": 2}
            snap = await s.snapshot()
            assert (await s.call("step", {"delta": 3})).value == {"count": 5}
            await s.restore(snap)
            assert (await s.state())["counter"] == [{"n": 2}]
            failed = await s.call("fail", {})
            assert not failed.ok and failed.error is not None and failed.error.code == "nope"
            reports[zygote] = s.confinement
            res = await s.call("runtime", {})
            assert res.ok, res.error
            rt = res.value
            assert rt["mean"] == 2 and len(rt["fds"]) == len(
                s.confinement.get("runtime_via_fd") or []
            ), (rt, s.confinement)
            # the runtime's folders it reaches through descriptors are mounts of its own mount
            # namespace,
            # not the host's (a zygote opens them before the child unshares: the child opens them
            # again)
            own = {line.split()[0] for line in open(f"/proc/{s.pid}/mountinfo")}
            for fd in rt["fds"]:
                with open(f"/proc/{s.pid}/fdinfo/{fd}") as f:
                    mnt = next(line.split()[1] for line in f if line.startswith("mnt_id:"))
                assert mnt in own, (zygote, fd, mnt)
            if zygote:
                assert runner.zygote is not None and runner.zygote.spawned == 1
                assert (await s.call("who", {})).value["ppid"] == runner.zygote.pid
        finally:
            await runner.aclose()
    forked, fresh = reports[True], reports[False]
    assert set(fresh) | ({"namespaces"} if SUPPORT.unshare else set()) == set(forked), (
        forked,
        fresh,
    )
    for key in ("rlimits", "landlock", "seccomp", "workspace_tmpfs", "subreaper", "runtime_via_fd"):
        assert forked.get(key) == fresh.get(key), key


@pytest.mark.skipif(
    not SUPPORT.root, reason="own uids and namespaces need a root runner (CI runs as root)"
)
async def test_forked_sandboxes_are_isolated_from_each_other_and_the_host() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    runner = ProcessRunner()
    try:
        a, b = await asyncio.gather(runner.open(COUNTER, 0), runner.open(COUNTER, 0))
        wa, wb = (await a.call("who", {})).value, (await b.call("who", {})).value
        assert wa["uid"] != wb["uid"] and 0 not in (wa["uid"], wb["uid"])
        assert wa["cwd"] != wb["cwd"]
        assert (
            await a.call("signal_parent", {})
        ).value == "denied"  # the zygote is not its to signal
        assert (await a.call("connect", {"port": port})).value in (
            "OSError",
            "PermissionError",
        )  # own empty netns
        await a.call("step", {"delta": 7})
        assert (await b.state())["counter"] == [{"n": 0}]
    finally:
        await runner.aclose()
        listener.close()


async def test_a_burst_of_opens_is_forked_in_batches_and_no_executor_holds_another_ones_sockets() -> (  # noqa: E501 (docs cite the name)
    None
):
    """40 opens at once go to the zygote as a few packets (one fork request carries many
    executors' descriptors), and each executor keeps only its own protocol socket and lane."""
    runner = ProcessRunner()
    try:
        alone = await runner.open(COUNTER, 0)
        own = (await alone.call("sockets", {})).value
        zygote = runner.zygote
        assert zygote is not None and len(own) == 2, own  # its protocol socket and its direct lane
        sent = zygote.packets
        burst = await asyncio.gather(*(runner.open(COUNTER, 0) for _ in range(40)))
        assert zygote.packets - sent < 40, "every open was a packet of its own"
        held = [(await s.call("sockets", {})).value for s in burst]
        assert all(len(h) == len(own) for h in held), held  # (the numbers differ: not the count)
        whos = [(await s.call("who", {})).value for s in burst]
        assert len({w["uid"] for w in whos}) == 40 and len({w["cwd"] for w in whos}) == 40
    finally:
        await runner.aclose()


async def test_forked_executors_are_replaced_reaped_and_cleaned_up() -> None:
    runner = ProcessRunner()
    s = await runner.open(COUNTER, 0)
    await s.call("step", {"delta": 4})
    first = s.pid
    died = await s.call("die", {})
    assert not died.ok and died.error is not None and died.error.code == "crashed"
    assert "SIGKILL" in died.error.message, died.error.message
    assert (await s.call("step", {"delta": 1})).value == {
        "count": 5
    }  # replaced, earlier calls replayed
    assert s.replacements == 1 and s.pid not in (None, first)
    second, folder = s.pid, s._folder
    await s.close()
    assert second is not None and not _alive(second) and not Path(folder).exists()
    zygote = runner.zygote
    assert zygote is not None
    others = [await runner.open(COUNTER, 0) for _ in range(3)]
    zpid, pids = zygote.pid, [o.pid for o in others]
    assert zpid is not None and all(p is not None and _alive(p) for p in pids)
    await runner.aclose()
    assert not _alive(zpid), "the zygote outlived its runner"
    assert not [p for p in pids if p is not None and _alive(p)], (
        "forked executors outlived their runner"
    )
    assert zygote.folder is None


async def test_a_dead_zygote_is_restarted_and_its_sandboxes_replaced() -> None:
    runner = ProcessRunner()
    try:
        s = await runner.open(COUNTER, 0)
        await s.call("step", {"delta": 2})
        assert runner.zygote is not None and runner.zygote.pid is not None
        zpid, child = runner.zygote.pid, s.pid
        os.kill(zpid, signal.SIGKILL)  # its children die with it (parent-death signal)
        for _ in range(200):
            if not _alive(zpid) and child is not None and not _alive(child):
                break
            await asyncio.sleep(0.02)
        assert child is not None and not _alive(child), "a forked executor outlived its zygote"
        r = await s.call("step", {"delta": 1})
        if (
            not r.ok
        ):  # the call that met the dead executor says so; the next one runs in a replacement
            assert r.error is not None and r.error.code == "crashed"
            r = await s.call("step", {"delta": 1})
        assert r.ok and r.value == {"count": 3}
        assert runner.zygote.starts == 2
    finally:
        await runner.aclose()


async def test_spares_are_new_sandboxes_in_the_seed_state() -> None:
    runner = ProcessRunner(Settings(spares=1))
    try:
        a = await runner.open(COUNTER, 0)
        await a.call("step", {"delta": 9})
        for _ in range(200):  # the spare opens in the background
            if runner._spares and any(runner._spares.values()):
                break
            await asyncio.sleep(0.05)
        b = await runner.open(COUNTER, 0)
        assert runner.spares_used == 1
        assert b is not a and (await b.call("step", {"delta": 1})).value == {"count": 1}
        if SUPPORT.root:
            assert (await a.call("who", {})).value["uid"] != (await b.call("who", {})).value["uid"]
    finally:
        await runner.aclose()
    assert not runner.sessions


async def test_64_concurrent_sessions_over_the_bus(nats_server: str) -> None:
    """64 sandboxes opened at once through the sandbox service, each stepping; results relayed
    raw."""
    service_bus, client = await Bus.connect(nats_server), await Bus.connect(nats_server)
    runner = ProcessRunner()
    service = SandboxService(service_bus, "process", runner)
    await service.start()
    try:
        sandboxes = await asyncio.gather(
            *(
                open_sandbox(client, "process", COUNTER, timeout=120, call_timeout=60)
                for _ in range(64)
            )
        )

        async def work(sb: Any) -> list[Any]:
            return [(await sb.call("step", {"delta": 1})).value["count"] for _ in range(5)]

        counts = await asyncio.gather(*(work(sb) for sb in sandboxes))
        assert counts == [[1, 2, 3, 4, 5]] * 64
        failed = await sandboxes[0].call("fail", {})
        assert not failed.ok and failed.error is not None and failed.error.code == "nope"
        unknown = await sandboxes[0].call("no_such_tool", {})
        assert not unknown.ok and unknown.error is not None and unknown.error.code == "unknown_tool"
        pids = {s.pid for s in runner.sessions}
        assert len(pids) == 64
        await asyncio.gather(*(sb.close() for sb in sandboxes))
        for _ in range(100):
            if not runner.sessions:
                break
            await asyncio.sleep(0.05)
        assert not runner.sessions
        assert not [p for p in pids if p is not None and _alive(p)]
    finally:
        await service.stop()
        await client.close()
        await service_bus.close()


async def test_a_request_to_a_vanished_responder_fails_fast(nats_server: str) -> None:
    """The bus's request_while_alive (every tool step's path) notices a responder that is gone."""
    from envkernel_bus import ResponderGone

    bus = await Bus.connect(nats_server)
    try:

        async def ignore(msg: Any) -> None:  # takes the request, never answers
            return None

        silent = await bus.nc.subscribe("test.silent", cb=ignore)
        await bus.nc.flush()
        loop = asyncio.get_running_loop()
        t = loop.time()
        with pytest.raises(ResponderGone, match="is gone"):
            await bus.request_while_alive(
                "test.silent", b"x", timeout=30, alive="test.nobody.alive", every=0.2
            )
        assert loop.time() - t < 5
        answered = await bus.serve_alive("test.here.alive")
        await bus.nc.flush()
        with pytest.raises(
            Exception
        ) as info:  # alive but silent: the plain timeout, not ResponderGone
            await bus.request_while_alive(
                "test.silent", b"x", timeout=0.7, alive="test.here.alive", every=0.2
            )
        assert not isinstance(info.value, ResponderGone)
        await silent.unsubscribe()
        await answered.unsubscribe()
    finally:
        await bus.close()


async def test_a_direct_lane_skips_the_service_and_keeps_the_confinement(nats_server: str) -> None:
    """On the runner's host, a client's tool calls go straight to the executor over its direct lane
    (not through the service, whose call log stays empty), with the same confinement, and so do
    restores and state reads; snapshots still go over the bus. When the executor dies after direct
    calls its state is lost (said so, not silently rebuilt wrong) until a restore of a snapshot from
    before them."""
    from envkernel.errors import SandboxError
    from envkernel_runtime.lane import connect_lane

    service_bus, client = await Bus.connect(nats_server), await Bus.connect(nats_server)
    runner = ProcessRunner()
    service = SandboxService(service_bus, "process", runner)
    await service.start()
    try:
        sb = await open_sandbox(client, "process", COUNTER, timeout=120, call_timeout=60)
        assert sb.lane is not None and service.lanes is not None and service.lanes.handed == 1
        base = await sb.snapshot()
        session = runner.sessions[0]
        who = (await sb.call("who", {})).value
        assert who["pid"] == session.pid and who["uid"] == session.confinement.get(
            "uid", os.getuid()
        )
        if SUPPORT.unshare:
            with socket.socket() as listener:
                listener.bind(("127.0.0.1", 0))
                listener.listen(1)
                assert (
                    await sb.call("connect", {"port": listener.getsockname()[1]})
                ).value != "connected"
        assert [(await sb.call("step", {"delta": 1})).value["count"] for _ in range(3)] == [1, 2, 3]
        assert session._log == []  # none of them went through the service
        read_by_service: list[int] = []
        service_state = session.state
        session.state = lambda: read_by_service.append(1) or service_state()  # type: ignore[method-assign]
        assert (await sb.state())["counter"] == [
            {"n": 3}
        ] and read_by_service == []  # the state too, over the lane
        events = list(session.events)
        await sb.restore(base)  # over the lane too
        assert (await sb.state())["counter"] == [{"n": 0}] and session.events == events
        assert [(await sb.call("step", {"delta": 1})).value["count"] for _ in range(3)] == [1, 2, 3]
        after = await sb.snapshot()
        died = await sb.call("die", {})
        assert (
            not died.ok
            and died.error is not None
            and died.error.code == "crashed"
            and "direct lane" in died.error.message
        )
        assert sb.lane.closed and not (await sb.call("step", {})).ok  # lost, over the bus too
        with pytest.raises(SandboxError, match="cannot be rebuilt"):
            await sb.restore(after)
        await sb.restore(base)  # taken before any direct call: rebuilt
        assert (await sb.call("step", {"delta": 1})).value["count"] == 1
        await sb.close()

        s = await runner.open(
            COUNTER, 0
        )  # the lane itself takes calls, restores and dumps only, and is handed out once
        lane = s.take_lane()
        assert lane is not None and s.take_lane() is None
        reader, writer = await asyncio.open_unix_connection(sock=lane)
        writer.write(
            b'{"op":"patch","rows":[]}\n{"op":"call","tool":"step","arguments":{"delta":5}}\n{"op":"dump"}\n'
        )
        assert (
            b'"bad_request"' in await reader.readline() and b'"count":5' in await reader.readline()
        )
        assert b'"counter":[{"n":5}]' in await reader.readline()
        writer.close()
        assert (await s.call("step", {"delta": 1})).value[
            "count"
        ] == 6  # the runner's socket serves on
        await s.close()
        offer = service.lanes.offer(await runner.open(COUNTER, 0), 30)
        assert await connect_lane(["elsewhere/x", *offer[1:]]) is None  # another host: over the bus
        assert await connect_lane([*offer[:2], "not-the-token", 30]) is None
    finally:
        await service.stop()
        await client.close()
        await service_bus.close()


async def test_a_call_hanging_on_the_direct_lane_gets_its_sandbox_killed(nats_server: str) -> None:
    """A call that hangs past its timeout over the direct lane (the executor's alarm blocked) makes
    the client ask the runner to kill the executor, as the runner does for a call it relays."""
    service_bus, client = await Bus.connect(nats_server), await Bus.connect(nats_server)
    runner = ProcessRunner(Settings(call_timeout=0.5))
    service = SandboxService(service_bus, "process", runner)
    await service.start()
    try:
        sb = await open_sandbox(client, "process", COUNTER, timeout=120, call_timeout=60)
        base = await sb.snapshot()
        pid = runner.sessions[0].pid
        assert sb.lane is not None and pid is not None
        loop = asyncio.get_running_loop()
        t = loop.time()
        hung = await sb.call("hang", {})
        assert (
            loop.time() - t < 10
            and not hung.ok
            and hung.error is not None
            and hung.error.code == "timeout"
        )
        assert (
            "killed" in hung.error.message
            and "killed (timeout over the direct lane)" in runner.sessions[0].events
        )
        for _ in range(100):
            if not _alive(pid):
                break
            await asyncio.sleep(0.05)
        assert not _alive(pid)
        await sb.restore(base)
        assert (await sb.call("step", {"delta": 2})).value["count"] == 2
        await sb.close()
    finally:
        await service.stop()
        await client.close()
        await service_bus.close()


async def test_cells_are_confined_ahead_and_take_any_environment() -> None:
    """With ``cells``, an open loads its environment into a blank executor forked and confined
    ahead: the same confinement as a fresh fork, its own uid and state, any environment (not a
    workspace's), and the missing cells are made again in the background."""
    other = EnvSpec(
        id="other-test",
        name="other",
        tools=[ToolSpec(name="step"), ToolSpec(name="who")],
        behaviour=CodeBehaviour(source=SOURCE),
        seed_sql="CREATE TABLE counter (n INTEGER NOT NULL); INSERT INTO counter VALUES (40);",
    )
    plain, runner = ProcessRunner(), ProcessRunner(Settings(cells=2))
    try:
        fresh = await plain.open(COUNTER, 0)
        first = await runner.open(
            COUNTER, 0
        )  # no cell yet: a fork, and the cells are made meanwhile
        for _ in range(200):
            if len(runner._cells) == 2:
                break
            await asyncio.sleep(0.05)
        a, b = await runner.open(COUNTER, 0), await runner.open(other, 0)
        assert runner.cells_used == 2 and first not in (a, b)
        assert (await a.call("step", {"delta": 2})).value == {"count": 2}
        assert (await b.call("step", {"delta": 2})).value == {
            "count": 42
        }  # its own environment and seed
        snap = await a.snapshot()
        await a.call("step", {"delta": 5})
        await a.restore(snap)
        assert (await a.state())["counter"] == [{"n": 2}] and (await first.state())["counter"] == [
            {"n": 0}
        ]
        assert set(a.confinement) == set(fresh.confinement), (a.confinement, fresh.confinement)
        for key in ("rlimits", "landlock", "seccomp", "workspace_tmpfs", "subreaper", "namespaces"):
            assert a.confinement.get(key) == fresh.confinement.get(key), key
        if SUPPORT.root:
            uids = {(await s.call("who", {})).value["uid"] for s in (first, a, b)}
            assert len(uids) == 3 and 0 not in uids
        assert not (await a.call("die", {})).ok  # a cell's executor is replaced like any other
        assert (await a.call("step", {"delta": 1})).value == {"count": 3}
        pids = {s.pid for s in runner.sessions} | {c.pid for c in runner._cells}
    finally:
        await runner.aclose()
        await plain.aclose()
    assert not runner.sessions and not runner._cells
    for _ in range(100):
        if not [p for p in pids if p is not None and _alive(p)]:
            break
        await asyncio.sleep(0.05)
    assert not [p for p in pids if p is not None and _alive(p)]


async def test_a_lane_not_taken_leaves_replay_as_it_was(nats_server: str) -> None:
    """A client that takes no lane (another host, or lanes off) keeps the old behaviour: a dead
    executor is replaced and its calls replayed."""
    service_bus, client = await Bus.connect(nats_server), await Bus.connect(nats_server)
    service = SandboxService(service_bus, "process", ProcessRunner())
    await service.start()
    os.environ["ENVKERNEL_SANDBOX_LANES"] = "0"  # in this client only: the service made its offer
    try:
        sb = await open_sandbox(client, "process", COUNTER, timeout=120, call_timeout=60)
    finally:
        del os.environ["ENVKERNEL_SANDBOX_LANES"]
    try:
        assert sb.lane is None
        assert [(await sb.call("step", {"delta": 1})).value["count"] for _ in range(2)] == [1, 2]
        assert not (await sb.call("die", {})).ok
        assert (await sb.call("step", {"delta": 1})).value["count"] == 3  # replayed, not lost
        await sb.close()
    finally:
        await service.stop()
        await client.close()
        await service_bus.close()


@pytest.mark.skipif(
    not any(v == 1 for v, _ in SUPPORT.cgroups.values()),
    reason="the keeper is for cgroup v1 hierarchies",
)
async def test_cgroup_joins_are_kept_fast_while_sandboxes_open_and_the_confinement_is_unchanged() -> (  # noqa: E501 (docs cite the name)
    None
):
    """The join keeper (``cgroup_keepalive``) runs while sandboxes are being opened and stops when
    idle; each executor still joins its own cgroups, and the runner stays in the cgroups it was
    in."""
    before = Path("/proc/self/cgroup").read_text()
    assert ProcessRunner(Settings(cgroup_keepalive=0)).keeper is None
    runner = ProcessRunner(Settings(cgroup_keepalive=3.0))
    keeper = runner.keeper
    assert keeper is not None

    async def until(
        cond: Any, timeout: float = 60.0
    ) -> bool:  # a condition, not a time: the machine may be loaded
        deadline = time.monotonic() + timeout
        while not cond() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return bool(cond())

    try:
        s = await runner.open(COUNTER, 0)
        assert (keeper.running or keeper.writes > 0) and not keeper.error
        assert (
            s._res.cgroup is not None and s.pid in s._res.cgroup.pids_inside()
        )  # joined its own cgroups
        assert sorted(os.path.join(d, "cgroup.procs") for d in s.confinement["cgroups"]) == sorted(
            s._res.cgroup.procs_files
        )
        assert (await s.call("step", {"delta": 1})).value == {"count": 1}
        assert await until(lambda: not keeper.running)  # idle once no open was recent
        assert keeper.writes > 10  # every 5 ms while opens were recent
        writes = keeper.writes
        t = await runner.open(COUNTER, 0)  # the next open wakes it again
        assert t.pid in t._res.cgroup.pids_inside()
        assert await until(lambda: keeper.writes > writes)
    finally:
        await runner.aclose()
    assert not keeper.running
    assert Path("/proc/self/cgroup").read_text() == before
