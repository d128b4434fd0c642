"""envkernel-process: the sandbox runner ``process`` — one local subprocess per sandbox.

Each sandbox is ``python -S -P executor.py`` (envkernel's stdlib-only executor) in its own
session and process group, in its own temporary folder, with a minimal environment, resource
limits (address space, CPU time, file size) and, when running as root, an empty network
namespace (``unshare -n``). Requests and responses are JSON lines over its stdin/stdout.

A sandbox that dies or hangs is replaced transparently: the next request starts a fresh executor,
loads the environment and seed again and replays the calls that succeeded since the last load or
restore, so the state is the one the caller expects (the executor is deterministic).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import weakref
from dataclasses import dataclass, field
from typing import Any

import msgspec
from envkernel.errors import SandboxError as _KernelSandboxError
from envkernel.hookspecs import hookimpl
from envkernel_schemas import EnvSpec, State, ToolError, ToolResult

__all__ = ["ProcessRunner", "ProcessSession", "SandboxError", "Settings", "executor_path"]

STREAM_LIMIT = 64 * 1024 * 1024
"""Longest response line the host reads (the executor itself refuses responses over half that)."""
_MAX_RESPONSE = STREAM_LIMIT // 2
_HOST_GRACE = 2.0
_STDERR_TAIL = 2048


class Settings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``process`` sandbox runner (section ``[process]`` of the run config)."""

    call_timeout: float = 10.0
    """Seconds a tool call may run (enforced in the executor; the host kills it 2 s later)."""
    memory_mb: int = 512
    """Address-space limit of the executor, in MiB (RLIMIT_AS)."""
    cpu_seconds: int = 60
    """CPU-time limit of one executor process, in seconds (RLIMIT_CPU)."""
    file_size_mb: int = 64
    """Largest file the executor may write, in MiB (RLIMIT_FSIZE)."""
    lifetime: float = 3600.0
    """Hard lifetime of a sandbox in seconds; it is stopped after it."""
    isolate: bool = True
    """When running as root, cut the network with ``unshare -n`` (if that works here)."""
    startup_timeout: float = 30.0
    """Seconds to start an executor and load the environment; also bounds snapshot/restore/state."""


class SandboxError(_KernelSandboxError, RuntimeError):
    """A sandbox operation other than a tool call failed (start, load, snapshot, restore, state).

    ``code`` is the executor's error code when it gave one (``load_failed``, ``unknown_snapshot``,
    ``timeout``, ``crashed``, ``closed``...)."""

    def __init__(self, message: str, code: str = "sandbox") -> None:
        super().__init__(message)
        self.code = code


def executor_path() -> str:
    """Path of envkernel's executor script (found, never imported)."""
    spec = importlib.util.find_spec("envkernel.executor")
    if spec is None or not spec.origin:
        raise SandboxError("cannot find envkernel.executor; is the envkernel distribution installed?")
    return spec.origin


_UNSET: Any = object()
_unshare: list[str] | None = _UNSET


def _network_cut() -> list[str]:
    """The ``unshare -n --`` prefix when it works here (root, binary present), else []; checked once."""
    global _unshare
    if _unshare is _UNSET:
        _unshare = []
        path = shutil.which("unshare")
        if path and hasattr(os, "geteuid") and os.geteuid() == 0:
            try:
                ok = subprocess.run([path, "-n", "--", "true"], check=False, capture_output=True, timeout=10).returncode == 0
            except (OSError, subprocess.SubprocessError):
                ok = False
            if ok:
                _unshare = [path, "-n", "--"]
    return list(_unshare)


class _HostTimeout(Exception):
    pass


class _Died(Exception):
    pass


class _TooLong(Exception):
    pass


@dataclass
class _Resources:
    """What must not outlive a session: process groups and the folder. Holds no reference to the
    session, so a ``weakref.finalize`` (which also runs at exit) can clean up."""

    folder: str
    pids: set[int] = field(default_factory=set)

    def kill(self, pid: int) -> None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def cleanup(self) -> None:
        for pid in list(self.pids):
            self.kill(pid)
        self.pids.clear()
        shutil.rmtree(self.folder, ignore_errors=True)


@dataclass(frozen=True)
class _Snapshot:
    generation: int
    handle: str
    log: tuple[tuple[bytes, bytes], ...]


class ProcessSession:
    """One live sandbox: an executor subprocess holding one loaded environment.

    ``replacements`` counts executors replaced after a crash or a hang; ``events`` says why, in
    order; ``diverged`` is True if a replay after a replacement did not reproduce the same results.
    """

    def __init__(self, runner: ProcessRunner, env: EnvSpec, seed: int) -> None:
        self.id = "p" + secrets.token_hex(8)
        self.env = env
        self.seed = seed
        self.settings = runner.settings
        self.replacements = 0
        self.events: list[str] = []
        self.diverged = False
        self._runner = runner
        self._folder = tempfile.mkdtemp(prefix=f"envk-{self.id}-")
        self._res = _Resources(self._folder)
        self._finalizer = weakref.finalize(self, self._res.cleanup)
        self._lock = asyncio.Lock()
        self._proc: asyncio.subprocess.Process | None = None
        self._generation = 0
        self._log: list[tuple[bytes, bytes]] = []  # (request, response) of calls that succeeded since load/restore
        self._snapshots: dict[str, _Snapshot] = {}
        self._snapshot_count = 0
        self._closed: str | None = None
        self._load = msgspec.json.encode({"op": "load", "env": env, "seed": seed, "timeout": self.settings.startup_timeout})
        self._expiry = asyncio.get_running_loop().call_later(self.settings.lifetime, self._expire)

    @property
    def pid(self) -> int | None:
        """Pid of the current executor (None before start or after it died)."""
        p = self._proc
        return p.pid if p is not None and p.returncode is None else None

    @property
    def closed(self) -> bool:
        return self._closed is not None

    # ------------------------------------------------------------------ role methods

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Call a tool. Every failure, including a crash or a hang of the executor, is a result."""
        try:
            request = msgspec.json.encode(
                {"op": "call", "tool": tool, "arguments": arguments, "timeout": self.settings.call_timeout}
            )
        except (TypeError, msgspec.EncodeError) as exc:
            return _error("invalid_arguments", f"arguments of {tool!r} are not JSON: {exc}")
        async with self._lock:
            self._check_open()
            try:
                await self._ensure_running()
            except SandboxError as exc:
                return _error("crashed", f"the sandbox could not be restarted: {exc}")
            timeout = self.settings.call_timeout + _HOST_GRACE
            try:
                line = await self._roundtrip(request, timeout)
            except _HostTimeout:
                await self._kill("timeout")
                return _error(
                    "timeout",
                    f"tool {tool!r} did not finish within {self.settings.call_timeout:g} s and the sandbox did not "
                    f"stop it; the sandbox was killed and will be replaced (the state is rebuilt from the earlier calls)",
                )
            except _Died as exc:
                if self._closed:
                    return _error("crashed", f"the sandbox was closed during the call ({self._closed})")
                return _error("crashed", str(exc))
            except _TooLong:
                await self._kill("response too long")
                return _error(
                    "too_large", f"tool {tool!r} answered with more than {STREAM_LIMIT} bytes; the sandbox will be replaced"
                )
            try:
                result = msgspec.json.decode(line, type=ToolResult)
            except msgspec.DecodeError as exc:
                await self._kill("bad response")
                return _error("crashed", f"the executor answered with something that is not a result: {exc}")
            if result.ok:
                self._log.append((request, line))
            return result

    async def snapshot(self) -> str:
        """Save the state; return a handle for :meth:`restore`."""
        async with self._lock:
            self._check_open()
            await self._ensure_running()
            handle = await self._op({"op": "snapshot"})
            self._snapshot_count += 1
            name = f"s{self._snapshot_count}"
            self._snapshots[name] = _Snapshot(self._generation, handle, tuple(self._log))
            return name

    async def restore(self, snapshot: str) -> None:
        """Return to a saved state (also after the executor was replaced)."""
        async with self._lock:
            self._check_open()
            snap = self._snapshots.get(snapshot)
            if snap is None:
                raise SandboxError(f"sandbox {self.id} has no snapshot {snapshot!r}", code="unknown_snapshot")
            await self._ensure_running()
            if snap.generation == self._generation:
                await self._op({"op": "restore", "snapshot": snap.handle})
                self._log = list(snap.log)
                return
            # The executor that held it was replaced: rebuild the state, then re-take the snapshot.
            await self._op_raw(self._load, "load")
            self._log = []
            await self._replay(snap.log)
            handle = await self._op({"op": "snapshot"})
            self._snapshots[snapshot] = _Snapshot(self._generation, handle, snap.log)

    async def state(self) -> State:
        """Dump every table of the state."""
        async with self._lock:
            self._check_open()
            await self._ensure_running()
            return await self._op({"op": "dump"})

    async def close(self) -> None:
        """Stop the sandbox: kill its process group and remove its folder. Idempotent."""
        if self._closed is None:
            self._closed = "closed"
        self._expiry.cancel()
        await self._kill(None)
        self._res.cleanup()
        self._finalizer.detach()
        self._runner._sessions.discard(self)

    # ------------------------------------------------------------------ internals

    def _check_open(self) -> None:
        if self._closed is not None:
            raise SandboxError(f"sandbox {self.id} is {self._closed}", code="closed")

    def _expire(self) -> None:
        if self._closed is None:
            self._closed = f"stopped: it reached its lifetime of {self.settings.lifetime:g} s"
            self.events.append("expired")
            asyncio.ensure_future(self.close())

    async def _ensure_running(self) -> None:
        if self._proc is not None and self._proc.returncode is None:
            return
        if self._generation > 0:
            self.replacements += 1
        await self._spawn()

    async def _spawn(self) -> None:
        s = self.settings
        argv = [
            sys.executable, "-S", "-P", executor_path(),
            "--rlimit-as", str(s.memory_mb * 1024 * 1024),
            "--rlimit-cpu", str(s.cpu_seconds),
            "--rlimit-fsize", str(s.file_size_mb * 1024 * 1024),
            "--max-response", str(_MAX_RESPONSE),
        ]  # fmt: skip
        if s.isolate:
            argv = _network_cut() + argv
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": self._folder,
            "TMPDIR": self._folder,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TZ": "UTC",
            "PYTHONHASHSEED": "0",  # same set/dict-of-str order in every sandbox
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUTF8": "1",
        }
        self._generation += 1
        log = open(os.path.join(self._folder, "executor.log"), "ab")  # noqa: ASYNC230, SIM115 - closed below
        try:
            # Limits are applied by the executor itself (first thing it does) and the new session
            # comes from start_new_session: no preexec_fn, which is unsafe in a threaded host.
            self._proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                cwd=self._folder,
                env=env,
                start_new_session=True,
                limit=STREAM_LIMIT,
            )
        except OSError as exc:
            raise SandboxError(f"cannot start the sandbox executor: {exc}") from None
        finally:
            log.close()
        self._res.pids.add(self._proc.pid)
        try:
            await self._op_raw(self._load, "load")
            await self._replay(tuple(self._log))
        except BaseException:
            await self._kill(None)
            raise

    async def _replay(self, log: tuple[tuple[bytes, bytes], ...]) -> None:
        replayed: list[tuple[bytes, bytes]] = []
        for request, expected in log:
            try:
                line = await self._roundtrip(request, self.settings.call_timeout + _HOST_GRACE)
            except (_HostTimeout, _Died, _TooLong) as exc:
                raise SandboxError(f"replaying earlier calls failed: {type(exc).__name__} {exc}") from None
            if line != expected:
                self.diverged = True
                self.events.append("diverged")
            if msgspec.json.decode(line, type=ToolResult).ok:
                replayed.append((request, line))
        self._log = replayed

    async def _op(self, request: dict[str, Any]) -> Any:
        return await self._op_raw(msgspec.json.encode(request), request["op"])

    async def _op_raw(self, request: bytes, op: str) -> Any:
        try:
            line = await self._roundtrip(request, self.settings.startup_timeout + _HOST_GRACE)
        except _HostTimeout:
            await self._kill(f"{op} timeout")
            raise SandboxError(
                f"sandbox {self.id}: {op} did not answer within {self.settings.startup_timeout:g} s; the executor was killed",
                code="timeout",
            ) from None
        except _Died as exc:
            raise SandboxError(f"sandbox {self.id}: {op} failed: {exc}", code="crashed") from None
        except _TooLong:
            await self._kill(f"{op} response too long")
            raise SandboxError(
                f"sandbox {self.id}: {op} answered with more than {STREAM_LIMIT} bytes", code="too_large"
            ) from None
        try:
            resp = msgspec.json.decode(line)
        except msgspec.DecodeError as exc:
            await self._kill("bad response")
            raise SandboxError(f"sandbox {self.id}: {op} got a response that is not JSON: {exc}") from None
        if not resp.get("ok"):
            err = resp.get("error") or {}
            code = err.get("code", "error")
            raise SandboxError(f"sandbox {self.id}: {op} failed: {code}: {err.get('message', '')}", code=code)
        return resp.get("value")

    async def _roundtrip(self, request: bytes, timeout: float) -> bytes:
        proc = self._proc
        if proc is None or proc.returncode is not None or proc.stdin is None or proc.stdout is None:
            raise _Died(await self._death_note())
        try:
            proc.stdin.write(request + b"\n")
            await proc.stdin.drain()
            line = await asyncio.wait_for(proc.stdout.readline(), timeout)
        except TimeoutError:
            raise _HostTimeout() from None
        except (ValueError, asyncio.LimitOverrunError):
            raise _TooLong() from None
        except (BrokenPipeError, ConnectionResetError):
            line = b""
        if not line.endswith(b"\n"):
            raise _Died(await self._death_note())
        return line

    async def _death_note(self) -> str:
        proc = self._proc
        code: int | None = None
        if proc is not None:
            try:
                code = await asyncio.wait_for(proc.wait(), 5)
            except TimeoutError:
                await self._kill(None)
                code = proc.returncode
            self._res.pids.discard(proc.pid)
        self.events.append(f"died (exit code {code})")
        tail = self._stderr_tail()
        return f"sandbox executor died (exit code {code})" + (f": {tail}" if tail else "") + "; it will be replaced"

    def _stderr_tail(self) -> str:
        try:
            with open(os.path.join(self._folder, "executor.log"), "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - _STDERR_TAIL))
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [line for line in text.splitlines() if line.strip()]
        return " | ".join(lines[-5:])

    async def _kill(self, reason: str | None) -> None:
        proc = self._proc
        if proc is None:
            return
        self._res.kill(proc.pid)
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            pass
        self._res.pids.discard(proc.pid)
        if reason is not None:
            self.events.append(f"killed ({reason})")


def _error(code: str, message: str) -> ToolResult:
    return ToolResult(ok=False, error=ToolError(code=code, message=message))


class ProcessRunner:
    """Sandbox runner ``process``: opens :class:`ProcessSession` sandboxes."""

    Settings = Settings

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings if settings is not None else Settings()
        self._sessions: set[ProcessSession] = set()

    @property
    def sessions(self) -> list[ProcessSession]:
        """The live sandboxes."""
        return list(self._sessions)

    async def open(self, env: EnvSpec, seed: int) -> ProcessSession:
        """Start a sandbox, load ``env`` with ``seed`` and return it ready to call."""
        session = ProcessSession(self, env, seed)
        self._sessions.add(session)
        try:
            async with session._lock:
                await session._ensure_running()
        except BaseException:
            await session.close()
            raise
        return session

    async def aclose(self) -> None:
        """Close every sandbox this runner opened."""
        sessions = list(self._sessions)
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)


@hookimpl
def register_sandbox_runners(register) -> None:
    """Register the ``process`` sandbox runner."""
    register("process", ProcessRunner)
