"""The host's side of the executor protocol, shared by the sandbox runners.

A sandbox runner (a plugin such as ``process`` or ``podman``) starts envkernel's executor
(:mod:`envkernel_runtime.executor`) somewhere and talks to it in JSON lines over a stream. What a
runner does differently is how it starts, replaces and stops that executor and how it explains its
death; the protocol client is the same for all of them and lives here, in :class:`ExecutorSession`:

- tool calls, patches (rows inserted before an episode), snapshots, restores and state dumps, one
  at a time (a lock);
- every failure of a tool call is a :class:`~envkernel_schemas.ToolResult` (``crashed``,
  ``timeout``, ``too_large``, ``invalid_arguments``), except a call on a closed or expired
  session, which raises (``code="closed"``); every failure of another operation is a
  :class:`~envkernel_runtime.errors.SandboxError` with a ``code``;
- the call log: the calls that succeeded since the last ``load`` or ``restore``, with their exact
  answers. After the executor died or hung, the next request starts a replacement, loads the
  environment and seed again and replays that log, so the state is the one the caller expects
  (the executor is deterministic). A replay that answers differently marks the session
  ``diverged``;
- snapshots that survive a replacement (restoring one rebuilds it from its own call log);
- a hard lifetime, after which the session closes itself.

The kernel never imports a runner: runners subclass :class:`ExecutorSession` and fill in its hooks
(see "hooks" below).
"""

from __future__ import annotations

import asyncio
import warnings
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Protocol, TypeVar

import msgspec

from envkernel_runtime import wire as ew
from envkernel_runtime.errors import SandboxError
from envkernel_schemas import EnvSpec, State, ToolError, ToolResult

__all__ = [
    "Capability",
    "capabilities_of",
    "HOST_GRACE",
    "STREAM_LIMIT",
    "ExecutorSession",
    "SandboxError",
    "SessionSettings",
]

STREAM_LIMIT = 64 * 1024 * 1024
"""Longest response line the host reads (the executor itself refuses responses over half that)."""
HOST_GRACE = 2.0
"""Seconds the host waits past a timeout the executor enforces itself before it kills the
executor."""

_T = TypeVar("_T")
_enc = msgspec.json.Encoder()
_result_dec = msgspec.json.Decoder(ToolResult)
_OK = b'{"ok":true'
_FAILED = b'{"ok":false'


class Capability(StrEnum):
    """What a sandbox session can do beyond the required methods, declared in its
    ``capabilities`` (a frozenset) instead of probed with ``hasattr``."""

    RAW_CALL = "raw_call"
    """``call_raw(tool, arguments) -> bytes``: a call's result as the executor's JSON line (the
    sandbox service relays it without decoding it)."""
    LANE = "lane"
    """A direct lane (:mod:`envkernel_runtime.lane`): ``take_lane()`` (the executor's lane
    socket, once, or None), ``settings.call_timeout``, ``lane_taken()`` and
    ``lane_handle(name)``."""


def capabilities_of(session: object) -> frozenset[Capability]:
    """The capabilities ``session`` declares (none when it declares no ``capabilities``, as a
    runner written before they existed)."""
    declared: frozenset[str] = getattr(session, "capabilities", frozenset())
    return frozenset(c for c in Capability if c in declared)


def __getattr__(name: str) -> Any:
    """``SessionError``: the deprecated old name of
    :class:`~envkernel_runtime.errors.SandboxError` (the same class; using it warns)."""
    if name == "SessionError":
        warnings.warn(
            "envkernel_runtime.session.SessionError is deprecated: use "
            "envkernel_runtime.errors.SandboxError (the same class)",
            DeprecationWarning,
            stacklevel=2,
        )
        return SandboxError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class SessionSettings(Protocol):
    """The settings a session reads: every runner's ``Settings`` has these fields."""

    call_timeout: float
    """Seconds a tool call may run (the executor enforces it; the host kills it ``HOST_GRACE``
    later)."""
    startup_timeout: float
    """Seconds to start and load; also bounds snapshot, restore and state."""
    lifetime: float
    """Hard lifetime of a sandbox in seconds."""


class _HostTimeout(Exception):
    pass


class _Died(Exception):
    pass


class _TooLong(Exception):
    pass


@dataclass(frozen=True)
class _Snapshot:
    generation: int
    handle: str
    log: tuple[tuple[bytes, bytes], ...]
    complete: bool = True
    """``log`` rebuilds it: no call over a direct lane led to it (see
    :meth:`ExecutorSession.lane_taken`)."""


def _error(code: str, message: str) -> ToolResult:
    return ToolResult(ok=False, error=ToolError(code=code, message=message))


class ExecutorSession(ABC):
    """One live sandbox: an executor, reached over a stream, holding one loaded environment.

    ``replacements`` counts executors replaced after a crash or a hang; ``events`` says why, in
    order; ``diverged`` is True if a replay after a replacement did not reproduce the same results.

    Hooks a runner fills in: :meth:`_running`, :meth:`_start` (which calls
    :meth:`_reload_and_rerun_log`), :meth:`_streams`, :meth:`_stop`, :meth:`_death_note` and
    :meth:`_shutdown`; optionally :meth:`_discard_dead` and :meth:`_background`, and the class
    attributes below.
    """

    error_type: ClassVar[type[SandboxError]] = SandboxError
    """The error this runner raises: :class:`~envkernel_runtime.errors.SandboxError` (a runner
    may name a subclass of it)."""
    retry_crashed: ClassVar[bool] = False
    """Do snapshot, restore and state once more in a replacement when the executor turns out to be
    dead (``crashed``) during them."""
    hang_note: ClassVar[str] = "the sandbox was killed"
    """What the host did to a sandbox whose tool call hung past its timeout (in the error)."""
    op_hang_note: ClassVar[str] = "the executor was killed"
    """What the host did to a sandbox whose other operation hung past its timeout (in the error)."""
    stream_errors: ClassVar[tuple[type[BaseException], ...]] = (
        BrokenPipeError,
        ConnectionResetError,
    )
    """Errors of the stream that mean the executor is gone (then its death is explained)."""

    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.RAW_CALL})
    """Every executor session relays raw results; a runner whose executors have a direct lane
    adds :attr:`Capability.LANE` (and ``take_lane``)."""

    settings: SessionSettings

    def __init__(self, session_id: str, env: EnvSpec, seed: int, settings: SessionSettings) -> None:
        self.id = session_id
        self.env = env
        self.seed = seed
        self.settings = settings
        self.replacements = 0
        self.events: list[str] = []
        self.diverged = False
        self._lock = asyncio.Lock()
        self._generation = 0
        self._log: list[
            tuple[bytes, bytes]
        ] = []  # (request, response) of calls that succeeded since load/restore
        self._snapshots: dict[str, _Snapshot] = {}
        self._snapshot_count = 0
        self._closed: str | None = None
        self._lane_out = False  # a direct lane of the current executor was handed out
        # the log since the last load or restore describes the state (no direct calls before it)
        self._base_complete = True
        self._blank = False  # starting a cell: no environment to load yet
        self._death = ""  # why the executor that held the lane died
        # why the state cannot be rebuilt (an executor with a lane died); a restore clears it
        self._lost = ""
        self._load = ew.encode(ew.Load(env=env, seed=seed, timeout=settings.startup_timeout))
        self._expiry = asyncio.get_running_loop().call_later(settings.lifetime, self._expire)

    @property
    def closed(self) -> bool:
        """True once the session is closed (or expired)."""
        return self._closed is not None

    # ------------------------------------------------------------------ role methods

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Call a tool. Every failure, including a crash or a hang of the executor, is a result."""
        line = await self.call_raw(tool, arguments)
        try:
            return _result_dec.decode(line)
        except msgspec.DecodeError as exc:  # the executor answered, but not with a result
            await self._kill("bad response")
            return _error(
                "crashed", f"the executor answered with something that is not a result: {exc}"
            )

    def lane_taken(self) -> None:
        """The current executor's direct lane was handed to a client: calls over it bypass the call
        log, so if this executor dies its state is lost (calls and snapshots then fail until a
        restore of a snapshot taken before any direct call), instead of being rebuilt from the
        log."""
        self._lane_out = True

    async def interrupt(self) -> None:
        """Kill the current executor (a call over its direct lane hung past its timeout); the next
        operation starts a replacement."""
        async with self._lock:
            await self._kill("timeout over the direct lane")

    def lane_handle(self, name: str) -> list[str]:
        """``[the executor's handle of snapshot name]`` when a client holds this executor's direct
        lane (it may restore it over the lane), else ``[]``."""
        snap = self._snapshots.get(name)
        return (
            [snap.handle]
            if self._lane_out and snap is not None and snap.generation == self._generation
            else []
        )

    def _check_state(self) -> None:
        if self._lost:
            raise self.error_type(f"sandbox {self.id}: {self._lost}", code="crashed")

    async def call_raw(self, tool: str, arguments: dict[str, Any]) -> bytes:
        """:meth:`call`, answered with the result as one JSON line, exactly as the executor wrote it
        (the sandbox service passes it on without decoding it). Every failure is a result too."""
        try:
            request = ew.encode(
                ew.Call(tool=tool, arguments=arguments, timeout=self.settings.call_timeout)
            )
        except (TypeError, msgspec.EncodeError) as exc:
            return _enc.encode(
                _error("invalid_arguments", f"arguments of {tool!r} are not JSON: {exc}")
            )
        async with self._lock:
            self._check_open()
            if not self._running():
                try:
                    await self._ensure_running()
                except self.error_type as exc:
                    return _enc.encode(
                        _error("crashed", f"the sandbox could not be restarted: {exc}")
                    )
            if self._lost:
                return _enc.encode(_error("crashed", self._lost))
            try:
                line = await self._roundtrip(request, self.settings.call_timeout + HOST_GRACE)
            except _HostTimeout:
                await self._kill("timeout")
                return _enc.encode(
                    _error(
                        "timeout",
                        f"tool {tool!r} did not finish within {self.settings.call_timeout:g} "
                        f"s and the sandbox did not stop it; {self.hang_note} and will be "
                        "replaced (the state is rebuilt from the earlier calls)",
                    )
                )
            except _Died as exc:
                if self._closed:
                    return _enc.encode(
                        _error(
                            "crashed", f"the sandbox was closed during the call ({self._closed})"
                        )
                    )
                if self._lane_out:
                    return _enc.encode(
                        _error(
                            "crashed",
                            f"{exc}; it took calls over its direct lane, which cannot be replayed, "
                            "so its state is lost: restore a snapshot taken before them, or "
                            "open a new sandbox",
                        )
                    )
                return _enc.encode(_error("crashed", str(exc)))
            except _TooLong:
                await self._kill("response too long")
                return _enc.encode(
                    _error(
                        "too_large",
                        f"tool {tool!r} answered with more than {STREAM_LIMIT} bytes; the "
                        "sandbox will be replaced",
                    )
                )
            if line.startswith(_OK):  # the executor writes {"ok":true,... for a call that succeeded
                self._log.append((request, line))
            elif not line.startswith(_FAILED):
                await self._kill("bad response")
                return _enc.encode(
                    _error(
                        "crashed",
                        "the executor answered with something that is not a result: "
                        f"{line[:200]!r}",
                    )
                )
            return line

    async def snapshot(self) -> str:
        """Save the state; return a handle for :meth:`restore`."""
        async with self._lock:
            self._check_open()
            resp = await self._with_executor(lambda: self._op(ew.Snapshot(), full=True))
            self._check_state()
            self._snapshot_count += 1
            name = f"s{self._snapshot_count}"
            complete = self._base_complete and not resp.direct
            self._snapshots[name] = _Snapshot(
                self._generation, resp.value, tuple(self._log), complete
            )
            return name

    async def restore(self, snapshot: str) -> None:
        """Return to a saved state (also after the executor was replaced)."""
        async with self._lock:
            self._check_open()
            if self._snapshots.get(snapshot) is None:
                raise self.error_type(
                    f"sandbox {self.id} has no snapshot {snapshot!r}", code="unknown_snapshot"
                )
            await self._with_executor(lambda: self._restore(snapshot))

    async def patch(self, rows: list[dict[str, Any]]) -> int:
        """Insert rows (``{"table": ..., "row": {...}}`` each) into the state: a task's planted
        rows, before its episode. All or none; kept in the call log, so a replacement executor gets
        them too, and restoring a snapshot taken before takes them out again."""
        request = ew.encode(ew.Patch(rows=rows))
        async with self._lock:
            self._check_open()
            n = await self._with_executor(lambda: self._op_raw(request, "patch"))
            self._check_state()
            self._log.append((request, _enc.encode({"ok": True, "value": n}) + b"\n"))
            return int(n)

    async def state(self) -> State:
        """Dump every table of the state."""
        async with self._lock:
            self._check_open()
            state: State = await self._with_executor(lambda: self._op(ew.Dump()))
            self._check_state()
            return state

    async def start(self) -> None:
        """Start the first executor and load the environment; close the session if that fails."""
        try:
            async with self._lock:
                await self._ensure_running()
        except BaseException:
            await self.close()
            raise

    async def start_blank(self) -> Any:
        """Start the first executor without loading an environment (a *cell*: confined, waiting for
        :meth:`load`); return what its ``ping`` answered (its confinement). Close the session if
        that fails."""
        try:
            async with self._lock:
                self._blank = True
                try:
                    await self._ensure_running()
                finally:
                    self._blank = False
                return await self._op(ew.Ping())
        except BaseException:
            await self.close()
            raise

    async def load(self, env: EnvSpec, seed: int) -> Any:
        """Load ``env`` with ``seed`` into a cell started by :meth:`start_blank`; return what
        ``load`` answered. Its hard lifetime counts from now."""
        self.env, self.seed = env, seed
        self._load = ew.encode(ew.Load(env=env, seed=seed, timeout=self.settings.startup_timeout))
        self.restart_lifetime()
        async with self._lock:
            self._check_open()
            if not self._running():
                raise self.error_type(
                    f"sandbox {self.id}: its executor died before it was given an environment",
                    code="crashed",
                )
            return await self._op_raw(self._load, "load")

    def restart_lifetime(self) -> None:
        """Count the hard lifetime from now (for a session opened ahead and handed out later)."""
        self._expiry.cancel()
        self._expiry = asyncio.get_running_loop().call_later(self.settings.lifetime, self._expire)

    async def close(self) -> None:
        """Close the sandbox and release all it holds (see :meth:`_shutdown`). Idempotent."""
        if self._closed is None:
            self._closed = "closed"
        self._expiry.cancel()
        await self._shutdown()

    # ------------------------------------------------------------------ hooks

    @abstractmethod
    def _running(self) -> bool:
        """Is there a live executor to talk to?"""

    @abstractmethod
    async def _start(self) -> None:
        """Start an executor (a replacement when ``self._generation > 0``), add one to
        ``self._generation``, and call :meth:`_reload_and_rerun_log`; on failure, leave nothing
        running."""

    @abstractmethod
    def _streams(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """The live executor's response reader and request writer (None when there is none)."""

    @abstractmethod
    async def _stop(self) -> bool:
        """Stop the current executor for good; False when there was none."""

    @abstractmethod
    async def _death_note(self) -> str:
        """The executor is gone: record a ``died (...)`` event and return an error message that
        says why, as far as the host can tell."""

    @abstractmethod
    async def _shutdown(self) -> None:
        """Release everything the sandbox holds; called by :meth:`close` (maybe more than once)."""

    async def _discard_dead(self) -> None:  # noqa: B027  # an optional hook: most runners keep nothing
        """Drop what is left of a dead executor before a replacement starts (default: nothing)."""

    def _background(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` (the close at expiry) in the background."""
        asyncio.ensure_future(coro)

    # ------------------------------------------------------------------ internals

    def _check_open(self) -> None:
        if self._closed is not None:
            raise self.error_type(f"sandbox {self.id} is {self._closed}", code="closed")

    def _expire(self) -> None:
        if self._closed is None:
            self._closed = f"stopped: it reached its lifetime of {self.settings.lifetime:g} s"
            self.events.append("expired")
            self._background(self.close())

    async def _ensure_running(self) -> None:
        if self._running():
            return
        await self._discard_dead()
        if self._generation > 0:
            self.replacements += 1
            if (
                self._lane_out
            ):  # its calls went over the lane, so maybe nothing here saw it die: say why
                seen = (
                    self.events[-1]
                    if self.events and self.events[-1].startswith(("died", "killed"))
                    else ""
                )
                self._death = (
                    f"its executor {seen}"
                    if seen
                    else (await self._death_note()).removesuffix("; it will be replaced")
                )
        await self._start()

    async def _reload_and_rerun_log(self) -> Any:
        """Load the environment and seed into a fresh executor, replay the call log; return what
        ``load`` answered (nothing for a cell: see :meth:`start_blank`)."""
        if self._blank:
            return None
        loaded = await self._op_raw(self._load, "load")
        if self._lane_out:  # the dead executor took calls over its lane that the log lacks
            self._lane_out, self._log = False, []
            self._lost = (
                f"{self._death or 'its executor died'}, after it took calls over its direct "
                "lane, which cannot be replayed, so its state is lost: restore a snapshot "
                "taken before them (e.g. the one at open) or open a new sandbox"
            )
            self.events.append("state lost")
            return loaded
        await self._replay(tuple(self._log))
        return loaded

    async def _with_executor(self, op: Callable[[], Awaitable[_T]]) -> _T:
        """Run ``op`` on a running executor; with :attr:`retry_crashed`, once more in a replacement
        if the executor turns out to be dead."""
        attempts = 2 if self.retry_crashed else 1
        for attempt in range(1, attempts + 1):
            await self._ensure_running()
            try:
                return await op()
            except self.error_type as exc:
                if exc.code != "crashed" or attempt == attempts:
                    raise
        raise AssertionError("unreachable")

    async def _restore(self, name: str) -> None:
        snap = self._snapshots[name]
        if snap.generation == self._generation:
            await self._op(ew.Restore(snapshot=snap.handle))
            self._log, self._base_complete, self._lost = list(snap.log), snap.complete, ""
            return
        if not snap.complete:
            raise self.error_type(
                f"sandbox {self.id}: snapshot {name!r} followed calls over a direct lane and "
                "its executor died, so it cannot be rebuilt; restore an earlier one or open "
                "a new sandbox",
                code="crashed",
            )
        # The executor that held it was replaced: rebuild the state, then re-take the snapshot.
        await self._op_raw(self._load, "load")
        self._log = []
        await self._replay(snap.log)
        handle = await self._op(ew.Snapshot())
        self._snapshots[name] = _Snapshot(self._generation, handle, snap.log)
        self._base_complete, self._lost = True, ""

    async def _replay(self, log: tuple[tuple[bytes, bytes], ...]) -> None:
        replayed: list[tuple[bytes, bytes]] = []
        for request, expected in log:
            try:
                line = await self._roundtrip(request, self.settings.call_timeout + HOST_GRACE)
            except (_HostTimeout, _Died, _TooLong) as exc:
                raise self.error_type(
                    f"replaying earlier calls failed: {type(exc).__name__} {exc}"
                ) from None
            if line != expected:
                self.diverged = True
                self.events.append("diverged")
            if line.startswith(_OK):
                replayed.append((request, line))
        self._log = replayed

    async def _op(self, request: ew.Request, full: bool = False) -> Any:
        op = type(request).__struct_config__.tag
        return await self._op_raw(ew.encode(request), str(op), full)

    async def _op_raw(self, request: bytes, op: str, full: bool = False) -> Any:
        try:
            line = await self._roundtrip(request, self.settings.startup_timeout + HOST_GRACE)
        except _HostTimeout:
            await self._kill(f"{op} timeout")
            raise self.error_type(
                f"sandbox {self.id}: {op} did not answer within "
                f"{self.settings.startup_timeout:g} s; {self.op_hang_note}",
                code="timeout",
            ) from None
        except _Died as exc:
            raise self.error_type(
                f"sandbox {self.id}: {op} failed: {exc}", code="crashed"
            ) from None
        except _TooLong:
            await self._kill(f"{op} response too long")
            raise self.error_type(
                f"sandbox {self.id}: {op} answered with more than {STREAM_LIMIT} bytes",
                code="too_large",
            ) from None
        try:
            resp = ew.reply_dec.decode(line)
        except msgspec.DecodeError as exc:
            await self._kill("bad response")
            raise self.error_type(
                f"sandbox {self.id}: {op} got a response that is not a reply: {exc}"
            ) from None
        if not resp.ok:
            err = resp.error or ew.ReplyError()
            raise self.error_type(
                f"sandbox {self.id}: {op} failed: {err.code}: {err.message}", code=err.code
            )
        return resp if full else resp.value

    async def _roundtrip(self, request: bytes, timeout: float) -> bytes:
        streams = self._streams()
        if streams is None:
            raise _Died(await self._death_note())
        reader, writer = streams
        try:
            writer.write(request + b"\n")
            async with asyncio.timeout(timeout):  # no task per request, unlike wait_for
                await writer.drain()
                line = await reader.readline()
        except TimeoutError:
            raise _HostTimeout() from None
        except (ValueError, asyncio.LimitOverrunError):
            raise _TooLong() from None
        except self.stream_errors:
            line = b""
        if not line.endswith(b"\n"):
            raise _Died(await self._death_note())
        return line

    async def _kill(self, reason: str | None) -> None:
        """Stop the current executor (it will be replaced); record ``killed (reason)`` if given."""
        if await self._stop() and reason is not None:
            self.events.append(f"killed ({reason})")
