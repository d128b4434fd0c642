"""Sandboxes as a service on the bus.

A process serving a sandbox-runner component answers ``envk.svc.sandbox.<runner>.open`` in a queue
group, then ``envk.svc.sandbox.<id>.<op>`` (call, patch, snapshot, restore, state, close) for each
sandbox it opened. Any stage on any host gets a :class:`Sandbox` client from its context. Every
sandbox has a hard lifetime, so a client that dies cannot leave one behind.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import structlog
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from envkernel_bus import Bus, ResponderGone
from envkernel_bus import sandboxwire as wire
from envkernel_bus.sandboxwire import dec as _dec
from envkernel_bus.sandboxwire import enc as _enc
from envkernel_bus.sandboxwire import result_dec as _result_dec
from envkernel_bus.subjects import sandbox_op_subject, sandbox_open_subject
from envkernel_runtime.lane import LaneServer, connect_lane, lanes_enabled
from envkernel_runtime.session import Capability, capabilities_of
from envkernel_schemas import EnvSpec, State, ToolResult

from .errors import SandboxError, SandboxErrorCode
from .pool import Pool, PoolPolicy
from .roles import Closes

log = structlog.get_logger("envkernel.sandbox")


class Sandbox:
    """Client of one open sandbox, usable from any host."""

    def __init__(self, bus: Bus, sandbox_id: str, runner: str, timeout: float) -> None:
        self.bus = bus
        self.id = sandbox_id
        self.runner = runner
        self.timeout = timeout
        self.closed = False
        self.run = ""
        """The run it was opened for (a worker's pool releases it when that run finishes)."""
        self.last_path = ""
        """How the last call was answered: ``lane`` or ``bus`` (``CallRecord.path``)."""
        self.lane: Any = None
        """The executor's direct lane when the sandbox runs on this host
        (:mod:`envkernel_runtime.lane`): calls, restores and state reads skip the bus."""
        self._handles: dict[
            str, str
        ] = {}  # snapshot -> the executor's own handle of it, for a restore over the lane
        self._subjects = {
            op: sandbox_op_subject(sandbox_id, op)
            for op in ("call", "patch", "snapshot", "restore", "state", "close", "kill")
        }
        self._alive = (
            sandbox_op_subject(sandbox_id.rpartition("~")[0], "alive") if "~" in sandbox_id else ""
        )  # ids: <runner>-<process>~<n>

    async def _request(
        self, op: str, req: wire.Request, timeout: float | None = None
    ) -> wire.Reply:
        if self.closed:
            raise SandboxError(f"sandbox {self.id} is closed")
        try:
            msg = await self.bus.request_while_alive(
                self._subjects[op], _enc.encode(req), timeout or self.timeout, self._alive
            )
        except ResponderGone as exc:
            raise SandboxError(
                f"sandbox {self.id} ({self.runner}) cannot answer {op!r}: {exc}"
            ) from None
        except Exception as exc:  # timeout or no responders
            raise SandboxError(
                f"sandbox {self.id} ({self.runner}) did not answer {op!r} within "
                f"{timeout or self.timeout:g} s: {type(exc).__name__}. Its runner may have "
                "stopped or the sandbox outlived its lifetime."
            ) from None
        reply = _dec.decode(msg.data)
        if type(reply) is wire.Failed:
            raise SandboxError(
                f"sandbox {self.id} ({self.runner}) {op} failed: {reply.error}", code=reply.code
            )
        return reply  # type: ignore[return-value]  # a Request here would fail as a reply below

    async def _value(self, op: str, req: wire.Request) -> Any:
        reply = await self._request(op, req)
        if type(reply) is not wire.Value:
            raise SandboxError(
                f"sandbox {self.id} ({self.runner}) answered {op!r} with a "
                f"{type(reply).__name__}, not a value"
            )
        return reply.value

    async def call(self, tool: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Call a tool. A tool's own error is a result with ``ok=False``, not an exception."""
        if (
            self.lane is not None
            and not self.closed
            and (result := await self.lane.call(tool, arguments or {})) is not None
        ):
            self.last_path = "lane"
            return result  # type: ignore[no-any-return]
        self.last_path = "bus"
        reply = await self._request("call", wire.Call(tool=tool, arguments=arguments or {}))
        if type(reply) is not wire.Result:
            raise SandboxError(
                f"sandbox {self.id} ({self.runner}) answered a call with a "
                f"{type(reply).__name__}, not a result"
            )
        return _result_dec.decode(reply.json)

    async def patch(self, rows: list[dict[str, Any]]) -> None:
        """Insert rows before an episode (``Task.seed_patch()``: a task's planted rows); all or
        none."""
        await self._value("patch", wire.Patch(rows=rows))

    async def snapshot(self) -> str:
        """Save the state; return a handle for :meth:`restore`."""
        reply = await self._request("snapshot", wire.Snapshot())
        if type(reply) is not wire.Snapshotted:
            raise SandboxError(
                f"sandbox {self.id} ({self.runner}) answered a snapshot with a "
                f"{type(reply).__name__}"
            )
        if reply.lane:
            self._handles[reply.snapshot] = reply.lane[0]
        return reply.snapshot

    async def restore(self, snapshot: str) -> None:
        """Return to a saved state."""
        if (
            self.lane is not None
            and not self.closed
            and snapshot in self._handles
            and await self.lane.restore(self._handles[snapshot])
        ):
            return
        await self._value("restore", wire.Restore(snapshot=snapshot))

    async def state(self) -> State:
        """Dump the state (table -> rows), over the direct lane when there is one."""
        if self.lane is not None and not self.closed:
            state: State | None = await self.lane.state()
            if state is not None:
                return state
        return await self._value("state", wire.State())  # type: ignore[no-any-return]

    async def close(self) -> None:
        """Close the sandbox (idempotent)."""
        if self.closed:
            return
        if self.lane is not None:
            self.lane.close()
        try:
            await self._request("close", wire.Close(), timeout=10.0)
        except SandboxError as exc:
            log.debug("sandbox close failed", sandbox=self.id, error=str(exc))
        self.closed = True


async def open_sandbox(
    bus: Bus,
    runner: str,
    env: EnvSpec,
    *,
    seed: int = 0,
    run: str = "",
    timeout: float = 15.0,
    call_timeout: float = 60.0,
    lifetime: float = 3600.0,
) -> Sandbox:
    """Open a sandbox holding ``env`` on whichever process serves ``runner``."""
    req = wire.Open(env=env, seed=seed, run=run, lifetime=lifetime)
    try:  # the process that takes the open names itself, so its death fails the open at once
        msg = await bus.request_claimed(sandbox_open_subject(runner), _enc.encode(req), timeout)
    except ResponderGone as exc:
        raise SandboxError(f"no sandbox from runner {runner!r}: {exc}") from None
    except Exception as exc:
        raise SandboxError(
            f"no sandbox from runner {runner!r} within {timeout:g} s ({type(exc).__name__}): "
            "is a process serving it? (`envkernel run` serves its runner itself; a worker "
            "needs --plugins including it)"
        ) from None
    reply = _dec.decode(msg.data)
    if type(reply) is not wire.Opened:
        why = reply.error if type(reply) is wire.Failed else f"a {type(reply).__name__}"
        raise SandboxError(f"runner {runner!r} could not open a sandbox for env {env.id!r}: {why}")
    sb = Sandbox(bus, reply.sandbox, runner, call_timeout)
    sb.run, sb.lane = (
        run,
        await connect_lane(reply.lane, on_hang=lambda: sb._request("kill", wire.Kill()))
        if reply.lane
        else None,
    )
    return sb


class SandboxPool:
    """The run's sandboxes, kept per (runner, environment, seed) in the one :class:`~.pool.Pool`
    and reset between uses.

    A sandbox handed back after a clean use is restored to the snapshot taken right after it
    was opened (the seed state, ids and clock included) and lent again, so a rollout costs a
    restore (well under a millisecond) instead of a new sandbox. At most ``per_env`` sandboxes
    of one environment are out at once; further leases wait for one to come back.
    """

    def __init__(self, bus: Bus, per_env: int = 8) -> None:
        self.bus = bus
        self.per_env = per_env
        self.pool = Pool(PoolPolicy(reuse="restore", per_env=per_env, keep_idle=1 << 30))
        self._seed_states: dict[tuple[str, int, str], State] = {}
        self._digests: dict[
            int, tuple[EnvSpec, str]
        ] = {}  # id(env) -> (env, digest): contexts keep one object per env

    @property
    def opened(self) -> int:
        """Sandboxes opened."""
        return self.pool.opened

    @property
    def reused(self) -> int:
        """Leases served by a restored sandbox."""
        return self.pool.reused

    def _key(self, runner: str, env: EnvSpec, seed: int) -> tuple[str, int, str]:
        hit = self._digests.get(id(env))
        if (
            hit is None or hit[0] is not env
        ):  # encoding a whole environment per lease was ~2 % of a gate run
            hit = self._digests[id(env)] = (
                env,
                hashlib.blake2b(_enc.encode(env), digest_size=16).hexdigest(),
            )
        return (runner, seed, hit[1])

    @asynccontextmanager
    async def lease(
        self, runner: str, env: EnvSpec, *, seed: int = 0, run: str = "", call_timeout: float = 60.0
    ) -> AsyncIterator[Sandbox]:
        """Lend a sandbox holding ``env`` in its seed state; it goes back to the pool after a clean
        use."""

        def opener() -> Awaitable[Sandbox]:
            return open_sandbox(
                self.bus, runner, env, seed=seed, run=run, call_timeout=call_timeout
            )

        item = await self.pool.acquire(self._key(runner, env, seed), opener)
        try:
            yield item.sandbox
        except BaseException:
            item.broken = True
            raise
        finally:
            await self.pool.release(item)

    async def seed_state(self, runner: str, env: EnvSpec, *, seed: int = 0, run: str = "") -> State:
        """The state a lent sandbox of ``env`` starts in (read from one the first time, then
        kept)."""
        key = self._key(runner, env, seed)
        if key not in self._seed_states:
            async with self.lease(runner, env, seed=seed, run=run) as sb:
                self._seed_states[key] = await sb.state()
        return self._seed_states[key]

    async def release(self, run: str) -> None:
        """Close the idle sandboxes opened for ``run`` (it finished: nothing of it will lease them
        again)."""
        await self.pool.close_where(lambda item: item.sandbox.run != run)

    async def close(self) -> None:
        """Close every idle sandbox."""
        await self.pool.close()


async def _do_call(s: Any, req: wire.Call) -> wire.Reply:
    if Capability.RAW_CALL in capabilities_of(s):  # the executor's JSON line, relayed as it is
        return wire.Result(json=await s.call_raw(req.tool, req.arguments))
    return wire.Result(json=msgspec.json.encode(await s.call(req.tool, req.arguments)))


async def _do_snapshot(s: Any, req: wire.Snapshot) -> wire.Reply:
    name = await s.snapshot()
    lane = s.lane_handle(name) if Capability.LANE in capabilities_of(s) else []
    return wire.Snapshotted(snapshot=name, lane=lane)


async def _do_patch(s: Any, req: wire.Patch) -> wire.Reply:
    return wire.Value(value=await s.patch(req.rows))


async def _do_restore(s: Any, req: wire.Restore) -> wire.Reply:
    await s.restore(req.snapshot)
    return wire.Value()


async def _do_state(s: Any, req: wire.State) -> wire.Reply:
    return wire.Value(value=await s.state())


async def _do_kill(s: Any, req: wire.Kill) -> wire.Reply:
    await s.interrupt()  # a call over the direct lane hung past its timeout
    return wire.Value()


_HANDLERS: dict[type, Callable[[Any, Any], Awaitable[wire.Reply]]] = {
    wire.Call: _do_call,
    wire.Snapshot: _do_snapshot,
    wire.Patch: _do_patch,
    wire.Restore: _do_restore,
    wire.State: _do_state,
    wire.Kill: _do_kill,
}
"""The service's answer to each operation a session takes."""


def _refused_open(req: wire.Message) -> str:
    """Why an open request is refused ("" when it is not)."""
    if not isinstance(req, wire.Open):
        return f"bad open request: a {type(req).__name__}, not an open"
    if req.protocol != wire.PROTOCOL:
        return (
            f"the client speaks sandbox wire {req.protocol} and this service "
            f"{wire.PROTOCOL}: run the same envkernel on both"
        )
    return ""


_STACK_SETTINGS = (
    "zygote",
    "spares",
    "cells",
    "recycle",
    "pool_size",
    "pool_max",
    "recycle_max",
    "call_timeout",
    "lifetime",
)
"""The runner settings that choose how an open is served (see ``docs/sandbox-stack.md``)."""


def describe_stack(runners: dict[str, Any], pool: SandboxPool) -> dict[str, Any]:
    """The sandbox stack a process serves and uses, as data and one readable line: the runners
    and the settings that shape their opens, the transport (bus wire and direct lanes), the
    pool, and the known-trace cache. Logged when a run starts and written to ``summary.json``
    (``sandbox_stack``)."""
    from envkernel_runtime.executor_protocol import PROTOCOL as EXECUTOR_PROTOCOL
    from envkernel_runtime.replay import replay_enabled

    served = {}
    for name, runner in runners.items():
        settings = msgspec.to_builtins(getattr(runner, "settings", None) or {})
        picked = {k: settings[k] for k in _STACK_SETTINGS if k in settings}
        served[name] = {"class": type(runner).__name__, **picked}
    lanes, traces = lanes_enabled(), replay_enabled()
    pieces = [
        ", ".join(
            f"{n} runner ({' '.join(f'{k}={v}' for k, v in r.items() if k != 'class')})"
            for n, r in served.items()
        )
        or "no runner served here",
        f"sandbox service on the bus (wire {wire.PROTOCOL}, executor protocol {EXECUTOR_PROTOCOL})",
        "direct lanes on the same host" if lanes else "no direct lanes",
        f"SandboxPool ({pool.pool.policy.describe()})",
        "known traces on" if traces else "known traces off (ENVKERNEL_REPLAY=0)",
    ]
    return {
        "runners": served,
        "wire_protocol": wire.PROTOCOL,
        "executor_protocol": EXECUTOR_PROTOCOL,
        "direct_lanes": lanes,
        "pool": {"per_env": pool.per_env, "reuse": pool.pool.policy.reuse},
        "known_traces": traces,
        "description": " -> ".join(pieces),
    }


class _Live:
    __slots__ = ("session", "sub", "deadline", "lock")

    def __init__(self, session: Any, sub: Subscription, deadline: float) -> None:
        self.session = session
        self.sub = sub
        self.deadline = deadline
        self.lock = asyncio.Lock()


class SandboxService:
    """Serves one sandbox-runner component on the bus."""

    def __init__(self, bus: Bus, name: str, runner: Any) -> None:
        self.bus = bus
        self.name = name
        self.runner = runner
        self._live: dict[str, _Live] = {}
        self.uid = uuid.uuid4().hex[:8]
        """This process's part of its sandbox ids; it answers
        ``envk.svc.sandbox.<runner>-<uid>.alive`` while it lives."""
        self._sub: Subscription | None = None
        self._alive: Subscription | None = None
        self._reaper: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.lanes = LaneServer() if lanes_enabled() else None

    async def start(self) -> None:
        """Start answering open requests."""
        if self.lanes is not None:
            await self.lanes.start()
        self._alive = await self.bus.serve_alive(
            sandbox_op_subject(f"{self.name}-{self.uid}", "alive")
        )
        self._sub = await self.bus.nc.subscribe(
            sandbox_open_subject(self.name), queue=f"sandbox-{self.name}", cb=self._on_open
        )
        await self.bus.nc.flush()  # the server knows the subscription before anyone asks
        self._reaper = asyncio.create_task(self._reap())

    def _spawn(self, coro: Any) -> None:
        t = asyncio.create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    async def _on_open(self, msg: Msg) -> None:
        self._spawn(self._open(msg))

    async def _open(self, msg: Msg) -> None:
        await self.bus.claim(msg, sandbox_op_subject(f"{self.name}-{self.uid}", "alive"))
        try:
            req = _dec.decode(msg.data)
        except msgspec.DecodeError as exc:
            why = f"bad open request: {exc} (this service speaks sandbox wire {wire.PROTOCOL})"
            await msg.respond(_enc.encode(wire.Failed(error=why)))
            return
        why = _refused_open(req)
        if why or not isinstance(req, wire.Open):
            await msg.respond(_enc.encode(wire.Failed(error=why)))
            return
        try:
            session = await self.runner.open(req.env, req.seed)
        except Exception as exc:
            log.warning("sandbox open failed", runner=self.name, env=req.env.id, error=str(exc))
            await msg.respond(_enc.encode(wire.Failed(error=f"{type(exc).__name__}: {exc}")))
            return
        sid = f"{self.name}-{self.uid}~{uuid.uuid4().hex[:12]}"
        sub = await self.bus.nc.subscribe(sandbox_op_subject(sid, "*"), cb=self._on_op)
        await self.bus.nc.flush()
        self._live[sid] = _Live(session, sub, time.monotonic() + req.lifetime)
        lane = (
            self.lanes.offer(session, session.settings.call_timeout)
            if self.lanes is not None and Capability.LANE in capabilities_of(session)
            else []
        )
        await msg.respond(_enc.encode(wire.Opened(sandbox=sid, lane=lane)))

    async def _on_op(self, msg: Msg) -> None:
        # sandbox ops are handled in order per sandbox (one subscription each)
        parts = msg.subject.rsplit(".", 2)
        sid, op = parts[-2], parts[-1]
        live = self._live.get(sid)
        if live is None:
            await msg.respond(
                _enc.encode(wire.Failed(error=f"no sandbox {sid} (closed or expired)"))
            )
            return
        if op == "close":
            # reply first: closing unsubscribes, which would cancel this very callback
            await msg.respond(_enc.encode(wire.Value()))
            self._spawn(self._close(sid))
            return
        try:
            req = _dec.decode(msg.data)
            async with live.lock:
                reply = await self._do(live, op, req)
            data = _enc.encode(reply)
        except Exception as exc:
            code = exc.code if isinstance(exc, SandboxError) else SandboxErrorCode.SANDBOX
            data = _enc.encode(wire.Failed(error=f"{type(exc).__name__}: {exc}", code=code))
        await msg.respond(data)

    async def _do(self, live: _Live, op: str, req: wire.Message) -> wire.Reply:
        """Answer one operation (a runner that raises answers with :class:`wire.Failed`: the
        client's ``SandboxError``, infra). Dispatch is on the request's type; ``op`` (from the
        subject) only names it in errors."""
        handler = _HANDLERS.get(type(req))
        if handler is None:
            raise SandboxError(f"unknown sandbox operation {op!r} ({type(req).__name__})")
        return await handler(live.session, req)

    async def _close(self, sid: str) -> None:
        live = self._live.pop(sid, None)
        if live is None:
            return
        try:
            await live.sub.unsubscribe()
        except Exception:
            pass
        try:
            await live.session.close()
        except Exception as exc:
            log.warning("sandbox close failed", sandbox=sid, error=str(exc))

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            now = time.monotonic()
            for sid in [s for s, live in self._live.items() if live.deadline < now]:
                log.warning("sandbox reached its hard lifetime; closing it", sandbox=sid)
                await self._close(sid)

    async def stop(self) -> None:
        """Stop serving and close every sandbox."""
        for sub in (self._sub, self._alive):
            try:
                await sub.unsubscribe()  # type: ignore[union-attr]
            except Exception:
                pass
        if self._reaper:
            self._reaper.cancel()
        await asyncio.gather(*(self._close(sid) for sid in list(self._live)))
        if self.lanes is not None:
            self.lanes.close()
        if isinstance(self.runner, Closes):
            await self.runner.aclose()
