"""envkernel-process: the sandbox runner ``process`` — one local subprocess per sandbox.

Each sandbox is ``python -S -P executor.py`` (envkernel's stdlib-only executor) in its own
session and process group, with its own working folder, a minimal environment and resource limits
(address space, CPU time, file size, open files). When the runner is root (as on CI) each sandbox
also gets a uid of its own (RLIMIT_NPROC then binds), an empty network namespace and a private
mount namespace whose working folder is a size-capped tmpfs, and, where the host lets us, a cgroup
with memory, pids and cpu limits. Where the kernel offers Landlock, the sandbox can open only its
working folder and the read-only Python runtime, cannot use TCP and cannot signal anything outside
itself. :func:`protections` is the resulting table of what is blocked and what is only detected.

Requests and responses are JSON lines over the executor's stdin/stdout. A sandbox whose executor
dies or hangs is replaced transparently: the next request starts a fresh executor, loads the
environment and seed again and replays the calls that succeeded since the last load or restore,
so the state is the one the caller expects (the executor is deterministic); the failed call itself
gets an error naming the cause.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import weakref
from dataclasses import dataclass, field
from typing import Any, ClassVar

import msgspec
import structlog

from envkernel.hookspecs import hookimpl
from envkernel_runtime import executor_path
from envkernel_runtime import wire as ew
from envkernel_runtime.errors import SandboxError
from envkernel_runtime.session import STREAM_LIMIT, Capability, ExecutorSession
from envkernel_schemas import CodeBehaviour, EnvSpec

from .confine import (
    OWNER_FILE,
    THREATS,
    Cgroup,
    HostSupport,
    Protection,
    host_support,
    join_keeper,
    kill_uids,
    owner_stamp,
    protections,
    start_reaper,
    sweep_folders,
    uid_pool,
)
from .zygote import Zygote, ZygoteChild

__all__ = [
    "THREATS",
    "HostSupport",
    "ProcessRunner",
    "ProcessSession",
    "Protection",
    "SandboxError",
    "Settings",
    "executor_path",
    "host_support",
    "protections",
]

_MAX_RESPONSE = STREAM_LIMIT // 2
log = structlog.get_logger("envkernel.process")
WORKSPACE_TOOL_PATHS = (
    "/usr/bin",
    "/bin",
    "/usr/lib",
    "/lib",
    "/lib64",
    "/usr/libexec",
    "/usr/share",
    "/etc/alternatives",
)
"""What a workspace's shell may read and execute under Landlock (never write): the system's
programs and libraries (bash, coreutils, git, sqlite3, python3)."""
_STDERR_TAIL = 2048


class Settings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``process`` sandbox runner (section ``[process]`` of the run config; each
    can also come from an ``ENVKERNEL_PROCESS_<NAME>`` environment variable)."""

    call_timeout: float = 10.0
    """Seconds a tool call may run (enforced in the executor; the host kills it 2 s later)."""
    memory_mb: int = 512
    """Memory limit in MiB: address space of each process (RLIMIT_AS) and, with a memory cgroup,
    of all the sandbox's processes together."""
    cpu_seconds: int = 60
    """CPU-time limit of one executor process, in seconds (RLIMIT_CPU)."""
    cpus: float = 1.0
    """CPU share of a sandbox with a cpu cgroup (1.0 = one core); 0 for no cpu limit."""
    file_size_mb: int = 64
    """Largest file the executor may write, in MiB (RLIMIT_FSIZE); also caps its log."""
    workspace_mb: int = 256
    """Size of the working folder when it is a private tmpfs (root), in MiB."""
    max_processes: int = 32
    """Processes a sandbox may have (RLIMIT_NPROC of its own uid, and the pids cgroup)."""
    open_files: int = 256
    """Open-file limit of each process (RLIMIT_NOFILE)."""
    lifetime: float = 3600.0
    """Hard lifetime of a sandbox in seconds; it is stopped after it."""
    isolate: bool = True
    """Use what the host offers beyond rlimits: own uid, namespaces, cgroups, Landlock."""
    uid_base: int = 200_000
    """First uid handed to sandboxes when the runner is root (64,000 uids from here are used)."""
    startup_timeout: float = 30.0
    """Seconds to start an executor and load the environment; also bounds snapshot/restore/state."""
    zygote: bool = True
    """Fork each executor from a warm fork server (the same confinement, applied by the child
    itself, in a few milliseconds) instead of starting ``python executor.py`` afresh (~160 ms)."""
    spares: int = 0
    """Sandboxes kept open ahead for each environment (and seed) opened before: the next open of
    it takes one (a new sandbox, never used, fully confined) and another is opened in the
    background. 0: none (every open starts its executor then)."""
    cells: int = 0
    """Blank sandboxes kept ready for any environment but a workspace's: forked from the zygote and
    fully confined (own uid, namespaces, tmpfs, cgroups joined, rlimits, Landlock, seccomp), with no
    environment loaded. An open takes one and loads its environment into it (a millisecond or two:
    the cgroup join, tens of milliseconds on a loaded host, was done ahead), and the runner makes
    the missing ones in the background, all at once (their cgroup joins then share one RCU grace
    period). 0: none."""
    recycle: int = 0
    """Closed sandboxes kept for reuse (up to this many, for any environment but a workspace's; root
    hosts with namespaces only). Each sandbox is then a *nest*: a confined parent that never runs
    environment code and forks one session after another, each dropping to the sandbox's uid. A
    close ends the session's process; the nest kills every process left with the uid, empties the
    working tmpfs and forks a fresh session from its own clean memory, which the next open loads its
    environment into: no fork from the zygote, no confinement, no cgroup join or removal, no new
    folder. Nothing of one session reaches the next (see ``docs/sessions.md``). 0: every close ends
    its sandbox."""
    cgroup_keepalive: float = 30.0
    """Seconds after an executor joined its cgroups (cgroup v1) during which the runner keeps the
    kernel's cgroup-migration lock in its writer mode, so the next join costs half a millisecond
    instead of an RCU grace period (1-30 ms): a no-op write to the runner's own ``cgroup.procs``
    every 5 ms (``confine.JoinKeeper``). The joins and limits are the same. 0: off."""

    __env__: ClassVar[dict[str, str]] = {
        "call_timeout": "ENVKERNEL_PROCESS_CALL_TIMEOUT",
        "memory_mb": "ENVKERNEL_PROCESS_MEMORY_MB",
        "cpu_seconds": "ENVKERNEL_PROCESS_CPU_SECONDS",
        "file_size_mb": "ENVKERNEL_PROCESS_FILE_SIZE_MB",
        "workspace_mb": "ENVKERNEL_PROCESS_WORKSPACE_MB",
        "max_processes": "ENVKERNEL_PROCESS_MAX_PROCESSES",
        "lifetime": "ENVKERNEL_PROCESS_LIFETIME",
        "zygote": "ENVKERNEL_PROCESS_ZYGOTE",
        "spares": "ENVKERNEL_PROCESS_SPARES",
        "cells": "ENVKERNEL_PROCESS_CELLS",
        "recycle": "ENVKERNEL_PROCESS_RECYCLE",
        "cgroup_keepalive": "ENVKERNEL_PROCESS_CGROUP_KEEPALIVE",
    }


def _network_cut() -> list[str]:
    """The ``unshare`` prefix sandboxes run under here ([] when not root or unavailable)."""
    return list(host_support().unshare)


@dataclass
class _Resources:
    """What must not outlive a session: its processes, cgroup, uid and folder. Holds no reference
    to the session, so a ``weakref.finalize`` (which also runs at exit) can clean up."""

    folder: str
    uid: int | None = None
    uid_base: int = 0
    cgroup: Cgroup | None = None
    pids: set[int] = field(default_factory=set)

    def kill(self, pid: int) -> None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def kill_strays(self) -> bool:
        """Kill every process of the sandbox (its cgroup, else its uid); True when none is left."""
        if self.cgroup is not None and "pids" in self.cgroup.dirs:
            return self.cgroup.kill_all()
        if self.uid is not None:
            kill_uids(range(self.uid, self.uid + 1))
        return True

    def new_uid(self, work: str) -> None:
        """Move the sandbox to a fresh uid (after its executor died: zombies may hold the old
        one)."""
        if self.uid is None:
            return
        pool = uid_pool(self.uid_base)
        pool.release(self.uid)
        self.uid = pool.acquire()
        os.chown(work, self.uid, self.uid)

    def cleanup(self) -> None:
        for pid in list(self.pids):
            self.kill(pid)
        self.pids.clear()
        gone = self.kill_strays()
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
        shutil.rmtree(self.folder, ignore_errors=True)
        if self.uid is not None and gone:
            uid_pool(self.uid_base).release(self.uid)
        self.uid = None


class ProcessSession(ExecutorSession):
    """One live sandbox: an executor subprocess holding one loaded environment.

    The protocol, the call log and replacement after a crash or a hang (``replacements``,
    ``events``, ``diverged``) come from :class:`~envkernel_runtime.session.ExecutorSession`; this
    class starts, confines and kills the subprocess and explains its death."""

    error_type = SandboxError
    capabilities = frozenset({Capability.RAW_CALL, Capability.LANE})
    hang_note = "the sandbox was killed"
    op_hang_note = "the executor was killed"
    settings: Settings

    def __init__(
        self,
        runner: ProcessRunner,
        env: EnvSpec,
        seed: int,
        adopt: ProcessSession | None = None,
        lane: socket.socket | None = None,
    ) -> None:
        session_id = "p" + secrets.token_hex(8)
        self._runner = runner
        self.confinement: dict[str, Any] = {}
        """What the executor reported it applied (uid, cgroups, rlimits, landlock, tmpfs)."""
        self._nest = runner.nests and env.behaviour.__class__.__name__ != "WorkspaceBehaviour"
        self._given = False  # its sandbox went to another session (see _recycle)
        # OOM kills its cgroup counted before this session (a recycled sandbox's earlier ones)
        self._oom_base = 0
        if (
            adopt is not None
        ):  # a recycled sandbox: the nest and all it holds, with a fresh session in it
            super().__init__(session_id, env, seed, runner.settings)
            self._folder, self._work, self._res, self._tmpfs = (
                adopt._folder,
                adopt._work,
                adopt._res,
                adopt._tmpfs,
            )
            adopt._finalizer.detach()
            self._finalizer = weakref.finalize(self, self._res.cleanup)
            self._proc, adopt._proc = adopt._proc, None
            self._lane, self._cleanup, self._generation = lane, None, 1
            self.confinement = adopt.confinement
            self._oom_base = self._res.cgroup.oom_kills() if self._res.cgroup is not None else 0
            return
        s = runner.settings
        support = runner.support
        # named now, made by the first start in a thread with the cgroups (see _prepare): 512 opens
        # at
        # once spent 15 % of the event loop in mkdtemp, the owner file, mkdir and chown
        self._folder = os.path.join(
            tempfile.gettempdir(), f"envk-{session_id}-{secrets.token_hex(4)}"
        )
        self._work = os.path.join(self._folder, "work")
        self._res = _Resources(self._folder)
        self._finalizer = weakref.finalize(self, self._res.cleanup)
        self._tmpfs = bool(s.isolate and support.unshare)
        if s.isolate and support.root:
            self._res.uid_base = s.uid_base
            self._res.uid = uid_pool(s.uid_base).acquire()
        if s.isolate and support.cgroups:
            self._res.cgroup = Cgroup(
                f"envk-{session_id}", support, s.memory_mb * 1024 * 1024, s.max_processes, s.cpus
            )
        self._proc: asyncio.subprocess.Process | ZygoteChild | None = None
        self._lane: socket.socket | None = None
        self._cleanup: asyncio.Future[None] | None = None
        super().__init__(session_id, env, seed, s)

    def take_lane(self) -> socket.socket | None:
        """The current executor's direct lane, once (then it is the caller's; None without the
        zygote, or when it was taken): a socket that takes the executor's ``call`` requests
        straight, for a client on this host (see :mod:`envkernel_runtime.lane`). Calls over it
        bypass this session's call log: whoever hands it to a client calls :meth:`lane_taken` (then,
        after a crash, the session's state is lost rather than replayed)."""
        lane, self._lane = self._lane, None
        return lane

    @property
    def pid(self) -> int | None:
        """Pid of the current executor (None before start or after it died)."""
        p = self._proc
        return p.pid if p is not None and p.returncode is None else None

    # ------------------------------------------------------------------ hooks

    def _running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def close(self) -> None:
        """Close the session; with ``recycle``, its sandbox goes back to the runner for the next
        open (see :meth:`_recycle`) when there is room, else it is ended as without."""
        runner = self._runner
        if self._closed is None and self._nest and runner.wants_recycled():
            async with self._lock:
                if self._closed is not None:
                    return await super().close()
                self._closed = "closed"
                self._expiry.cancel()
                fresh = await self._recycle()
            if fresh is not None:
                runner.take_back(self, fresh)
                return None
        elif self in runner._recycled:  # an idle recycled sandbox that reached its lifetime
            runner._recycled.remove(self)
        return await super().close()

    async def _recycle(self) -> ProcessSession | None:
        """End this session's process and have its nest fork a fresh one (a new lane with it): a new
        session of the same sandbox, with nothing of this one; None when that failed (then close
        it)."""
        proc = self._proc
        if not isinstance(proc, ZygoteChild) or proc.returncode is not None or proc.sock is None:
            return None
        lane: socket.socket | None = None
        try:
            await self._op(ew.Recycle())
            lane, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                socket.send_fds(proc.sock, [b'{"op":"session"}\n'], [theirs.fileno()])
            finally:
                theirs.close()
            async with asyncio.timeout(self.settings.startup_timeout):
                line = await proc.stdout.readline()
            if not line.startswith(b'{"ok":true'):
                raise SandboxError(f"the nest answered {line[:200]!r}", code="crashed")
        except (OSError, TimeoutError, SandboxError) as exc:
            log.debug(
                "could not recycle a sandbox",
                sandbox=self.id,
                error=str(exc),
                log=self._stderr_tail(),
            )
            if lane is not None:
                lane.close()
            return None
        if self._lane is not None:
            self._lane.close()
            self._lane = None
        fresh = ProcessSession(self._runner, _CELL_ENV, 0, adopt=self, lane=lane)
        self._given = True
        self._finalizer.detach()
        return fresh

    async def _shutdown(self) -> None:
        """Kill the sandbox's process group and remove its folder, cgroup and uid."""
        if self._given:  # all of it went to another session
            self._runner._sessions.discard(self)
            return
        await self._kill(None)
        if self._lane is not None:
            self._lane.close()
            self._lane = None
        # in a thread, once: removing a cgroup waits for its processes to go (it would hold every
        # other
        # sandbox's calls up; closing 512 at once blocked the event loop for seconds)
        if self._cleanup is None:
            self._cleanup = asyncio.ensure_future(asyncio.to_thread(self._res.cleanup))
        await asyncio.shield(self._cleanup)
        self._finalizer.detach()
        self._runner._sessions.discard(self)

    def _prepare(self) -> None:
        """Make the sandbox's folder (first start) and its cgroups (blocking: run in a thread)."""
        if not os.path.isdir(self._work):
            try:
                os.mkdir(self._folder, 0o700)
                with open(
                    os.path.join(self._folder, OWNER_FILE), "w"
                ) as f:  # for the sweep after a crash
                    f.write(owner_stamp())
                os.mkdir(self._work, 0o700)
                if self._res.uid is not None:
                    # The executor drops to this uid; the folder above `work` stays the runner's
                    # (the
                    # executor log lives there, out of the sandbox's reach) but can be passed
                    # through.
                    os.chown(self._work, self._res.uid, self._res.uid)
                    os.chmod(self._folder, 0o711)
            except OSError as exc:
                raise SandboxError(
                    f"cannot make the sandbox's folder {self._folder}: {exc}; check that the "
                    "temp folder is writable"
                ) from None
        if self._res.cgroup is not None:
            try:
                self._res.cgroup.ensure()
            except OSError as exc:
                raise SandboxError(
                    f"cannot set up the sandbox's cgroup {self._res.cgroup.name}: {exc}"
                ) from None

    def _options(self) -> list[str]:
        """The executor's command-line options (limits and confinement) for this sandbox."""
        s = self.settings
        support = self._runner.support
        argv = [
            "--rlimit-as", str(s.memory_mb * 1024 * 1024),
            "--rlimit-cpu", str(s.cpu_seconds),
            "--rlimit-fsize", str(s.file_size_mb * 1024 * 1024),
            "--rlimit-nofile", str(s.open_files),
            "--max-response", str(_MAX_RESPONSE),
            "--workdir", self._work,
            "--parent-pid", str(os.getpid()),
        ]  # fmt: skip
        if not s.isolate:
            return argv
        if self._res.uid is not None:
            argv += [
                "--uid",
                str(self._res.uid),
                "--gid",
                str(self._res.uid),
                "--rlimit-nproc",
                str(s.max_processes),
            ]
        if self._res.cgroup is not None:
            for f in self._res.cgroup.procs_files:
                argv += ["--cgroup", f]
        if support.landlock:
            argv.append("--landlock")
            if (
                self.env.behaviour.__class__.__name__ == "WorkspaceBehaviour"
            ):  # its shell: bash, coreutils, git, ...
                for path in WORKSPACE_TOOL_PATHS:
                    argv += ["--tool-path", path]
        if support.seccomp:
            argv.append("--deny-unix-sockets")
        if support.unshare:
            argv += ["--tmpfs-size", str(s.workspace_mb * 1024 * 1024)]
        if self._nest:
            argv.append("--nest")
        return argv

    def _argv(self) -> list[str]:
        """The command line of an executor started afresh (without the zygote)."""
        argv = [sys.executable, "-S", "-P", executor_path(), *self._options()]
        support = self._runner.support
        if self.settings.isolate and support.unshare:
            argv = [*support.unshare, *argv]
        return argv

    def _environment(self) -> dict[str, str]:
        return {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": self._work,
            "TMPDIR": self._work,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TZ": "UTC",
            "PYTHONHASHSEED": "0",  # same set/dict-of-str order in every sandbox
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUTF8": "1",
        }

    async def _start(self) -> None:
        if self._generation > 0:
            self._res.kill_strays()  # what the dead executor forked
            if not self._tmpfs:  # a private tmpfs died with the old executor; this folder did not
                _empty_folder(self._work)
            self._res.new_uid(self._work)
        if self._res.cgroup is not None and self._runner.keeper is not None:
            # the executor joins its cgroups in a moment: no grace period to wait for
            self._runner.keeper.touch()
        if self._res.cgroup is not None or not os.path.isdir(self._work):
            # in a thread: a memory cgroup's mkdir takes the kernel half a millisecond, which would
            # hold every other open up (512 at once spent 1.3 s of the event loop in mkdir)
            await asyncio.to_thread(self._prepare)
        env = self._environment()
        self._generation += 1
        fd = os.open(
            os.path.join(self._folder, "executor.log"),
            os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC,
            0o600,
        )
        if self._lane is not None:
            self._lane.close()
            self._lane = None
        try:
            zygote = self._runner.zygote
            if zygote is not None:
                # A fork of the warm zygote, which confines itself as below before it reads a
                # request
                # (the namespaces with --unshare instead of the unshare binary).
                options = self._options()
                if self.settings.isolate and self._runner.support.unshare:
                    options.append("--unshare")
                lane, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    self._proc = await zygote.spawn(options, env, fd, theirs.fileno())
                except BaseException:
                    lane.close()
                    raise
                finally:
                    theirs.close()
                self._lane = lane
            else:
                # Limits and confinement are applied by the executor itself (first thing it does)
                # and
                # the new session comes from start_new_session: no preexec_fn, which is unsafe in a
                # threaded host.
                self._proc = await asyncio.create_subprocess_exec(
                    *self._argv(),
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=fd,
                    cwd=self._work,
                    env=env,
                    start_new_session=True,
                    limit=STREAM_LIMIT,
                )
        except OSError as exc:
            raise SandboxError(f"cannot start the sandbox executor: {exc}") from None
        finally:
            os.close(fd)
        self._res.pids.add(self._proc.pid)
        try:
            loaded = await self._reload_and_rerun_log()
            if isinstance(loaded, dict):
                self.confinement = loaded.get("confinement") or {}
        except BaseException:
            await self._kill(None)
            raise

    def _streams(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        proc = self._proc
        if proc is None or proc.returncode is not None or proc.stdin is None or proc.stdout is None:
            return None
        return proc.stdout, proc.stdin

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
        cause = self._cause(code)
        self.events.append(f"died (exit code {code}{': ' + cause if cause else ''})")
        tail = self._stderr_tail()
        return (
            f"sandbox executor died (exit code {code}{': ' + cause if cause else ''})"
            + (f": {tail}" if tail else "")
            + "; it will be replaced"
        )

    def _cause(self, code: int | None) -> str:
        """What an exit code means here: the signal, and which limit was probably hit."""
        s = self.settings
        parts = []
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            parts.append(f"killed by {name}")
            if name == "SIGXCPU":
                parts.append(f"it used up its CPU time limit of {s.cpu_seconds} s")
        elif code == 78:
            parts.append("the sandbox could not be confined")
        cg = self._res.cgroup
        if cg is not None and cg.oom_kills() > self._oom_base:
            parts.append(f"the sandbox ran out of memory (limit {s.memory_mb} MiB)")
        return "; ".join(parts)

    def _stderr_tail(self) -> str:
        try:
            with open(os.path.join(self._folder, "executor.log"), "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - _STDERR_TAIL))
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [
            line if len(line) <= 300 else line[:300] + "..."
            for line in text.splitlines()
            if line.strip()
        ]
        return " | ".join(lines[-5:])

    async def _stop(self) -> bool:
        proc = self._proc
        if proc is None:
            return False
        self._res.kill(proc.pid)
        self._res.kill_strays()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            pass
        self._res.pids.discard(proc.pid)
        return True


def _empty_folder(folder: str) -> None:
    """Remove everything inside ``folder`` (symlinks are removed, never followed)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for e in entries:
        try:
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path, ignore_errors=True)
            else:
                os.unlink(e.path)
        except OSError:
            pass


_swept: set[str] = set()
_SPARE_ENVS = 16
_CELL_ENV = EnvSpec(
    id="cell", name="cell (no environment loaded yet)", tools=[], behaviour=CodeBehaviour(source="")
)
"""Environments a runner keeps spares for at most."""
_reapers: dict[str, Any] = {}
"""Temp folder -> the reaper of this process's sandboxes there (one per process and folder, while a
runner of this process uses that folder)."""
_reaper_users: dict[str, weakref.WeakSet[ProcessRunner]] = {}
"""Temp folder -> the runners whose sandboxes its reaper watches (the last to close lets it go)."""


class ProcessRunner:
    """Sandbox runner ``process``: opens :class:`ProcessSession` sandboxes."""

    Settings = Settings

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings if settings is not None else Settings()
        self.support: HostSupport = (
            host_support() if self.settings.isolate else HostSupport(root=False)
        )
        self._sessions: set[ProcessSession] = set()
        self._spares: dict[bytes, list[ProcessSession]] = {}
        self._filling: dict[bytes, asyncio.Future[None]] = {}
        self._background: set[asyncio.Future[None]] = set()
        self.spares_used = 0
        """Opens answered with a spare."""
        self._cells: list[ProcessSession] = []
        self._cell_fill: asyncio.Future[None] | None = None
        self.cells_used = 0
        """Opens answered with a cell (see ``Settings.cells``)."""
        self._recycled: list[ProcessSession] = []
        self._closing = False
        self.recycled = 0
        """Closes whose sandbox was kept for reuse (see ``Settings.recycle``)."""
        self.recycled_used = 0
        """Opens answered with a recycled sandbox."""
        self._folders: set[str] = set()
        self.keeper = (
            join_keeper(self.support, self.settings.cgroup_keepalive)
            if self.settings.isolate
            else None
        )
        """Keeps cgroup joins fast while sandboxes are being opened (see
        ``Settings.cgroup_keepalive``)."""
        self.zygote: Zygote | None = None
        """The warm fork server of this runner's executors (None with ``zygote = false``)."""
        if self.settings.zygote:
            env = {
                "PATH": "/usr/local/bin:/usr/bin:/bin",
                "LANG": "C.UTF-8",
                "LC_ALL": "C.UTF-8",
                "TZ": "UTC",
                "PYTHONHASHSEED": "0",
                "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONUTF8": "1",
            }
            self.zygote = Zygote(env)
        s, support = self.settings, self.support
        self.nests = bool(
            s.recycle > 0 and s.zygote and s.isolate and support.root and support.unshare
        )
        """Sandboxes are nests (see ``Settings.recycle``): recycling is asked for and this host
        can."""
        folder = tempfile.gettempdir()
        if folder not in _swept:  # once per process and temp folder: what crashed runners left
            _swept.add(folder)
            sweep_folders(folder, host_support())

    def protections(self) -> dict[str, Protection]:
        """What this runner blocks and what it only detects, on this host (see
        ``docs/sandboxes.md``)."""
        return protections(host_support(), isolate=self.settings.isolate)

    @property
    def sessions(self) -> list[ProcessSession]:
        """The live sandboxes."""
        return list(self._sessions)

    async def open(self, env: EnvSpec, seed: int) -> ProcessSession:
        """Start a sandbox, load ``env`` with ``seed`` and return it ready to call (with ``spares``,
        one opened ahead for the same environment and seed, if there is one)."""
        if self.settings.spares > 0:
            key = hashlib.blake2b(
                msgspec.json.encode(env), digest_size=16, key=str(seed).encode()
            ).digest()
            spares = self._spares.setdefault(key, [])
            self._refill(key, env, seed)
            while spares:
                spare = spares.pop()
                if not spare.closed:
                    spare.restart_lifetime()
                    self.spares_used += 1
                    return spare
        if self._recycled and env.behaviour.__class__.__name__ != "WorkspaceBehaviour":
            reused = await self._from_cell(env, seed, self._recycled)
            if reused is not None:
                return reused
        if self.settings.cells > 0 and env.behaviour.__class__.__name__ != "WorkspaceBehaviour":
            cell = await self._from_cell(env, seed)
            if cell is not None:
                return cell
        return await self._open(env, seed)

    def _register_folder(self) -> None:
        folder = tempfile.gettempdir()
        if (
            folder not in _reapers
        ):  # a kill -9 of this process leaves no sandbox folder or cgroup behind
            _reapers[folder] = start_reaper(folder, host_support())
        _reaper_users.setdefault(folder, weakref.WeakSet()).add(self)
        self._folders.add(folder)

    def wants_recycled(self) -> bool:
        """Is there room for one more recycled sandbox (see ``Settings.recycle``)?"""
        return not self._closing and len(self._recycled) < self.settings.recycle

    def take_back(self, old: ProcessSession, fresh: ProcessSession) -> None:
        """``old`` was closed and its sandbox is now ``fresh``'s, ready for the next open."""
        self._sessions.discard(old)
        self._recycled.append(fresh)
        self.recycled += 1

    async def _from_cell(
        self, env: EnvSpec, seed: int, pool: list[ProcessSession] | None = None
    ) -> ProcessSession | None:
        """A ready cell (or, from ``pool``, a recycled sandbox) with ``env`` loaded into it (None
        when none is ready: then a new executor is forked)."""
        cells = self._cells if pool is None else pool
        try:
            while cells:
                cell = cells.pop()
                if cell.closed:
                    continue
                try:
                    loaded = await cell.load(env, seed)
                except SandboxError as exc:
                    await cell.close()
                    if exc.code in ("crashed", "timeout"):
                        continue  # the cell died: try another
                    raise  # the environment's own fault (its code or seed)
                if isinstance(loaded, dict):
                    cell.confinement = loaded.get("confinement") or cell.confinement
                self._sessions.add(cell)
                if pool is None:
                    self.cells_used += 1
                else:
                    self.recycled_used += 1
                return cell
            return None
        finally:
            if pool is None:
                self._fill_cells()

    def _fill_cells(self) -> None:
        """Make the missing cells in the background, together."""
        if self._cell_fill is not None and not self._cell_fill.done():
            return

        async def one() -> ProcessSession:
            self._register_folder()
            cell = ProcessSession(self, _CELL_ENV, 0)
            report = await cell.start_blank()
            cell.confinement = (report or {}).get("confinement") or {}
            return cell

        async def fill() -> None:
            while (missing := self.settings.cells - len(self._cells)) > 0:
                made = await asyncio.gather(
                    *(one() for _ in range(missing)), return_exceptions=True
                )
                self._cells.extend(m for m in made if isinstance(m, ProcessSession))
                failed = [m for m in made if not isinstance(m, ProcessSession)]
                if failed:  # the next opens fork their own executors and say why
                    log.warning("could not make a cell", error=str(failed[0]))
                    return

        self._cell_fill = asyncio.ensure_future(fill())

    async def _open(self, env: EnvSpec, seed: int) -> ProcessSession:
        self._register_folder()
        session = ProcessSession(self, env, seed)
        self._sessions.add(session)
        await session.start()
        return session

    def _refill(self, key: bytes, env: EnvSpec, seed: int) -> None:
        """Open spares of ``env`` in the background until there are ``spares`` of them."""
        if key in self._filling:
            return
        while (
            len(self._spares) > _SPARE_ENVS
        ):  # the environment opened longest ago gives its spares up
            old = next(iter(self._spares))
            for s in self._spares.pop(old):
                self._background.add(asyncio.ensure_future(s.close()))
        self._spares[key] = self._spares.pop(key)  # most recent last

        async def fill() -> None:
            try:
                while len(self._spares.get(key, ())) < self.settings.spares:
                    s = await self._open(env, seed)
                    if key in self._spares:
                        self._spares[key].append(s)
                    else:
                        await s.close()
                        return
            except Exception as exc:
                log.warning("could not open a spare sandbox", env=env.id, error=str(exc))
            finally:
                self._filling.pop(key, None)

        self._filling[key] = asyncio.ensure_future(fill())

    async def aclose(self) -> None:
        """Close every sandbox this runner opened (spares too) and stop its fork server."""
        for t in [
            *self._filling.values(),
            *self._background,
            *([self._cell_fill] if self._cell_fill else []),
        ]:
            t.cancel()
        self._filling.clear()
        self._spares.clear()
        self._closing = True
        sessions = [*self._sessions, *self._cells, *self._recycled]
        self._cells.clear()
        self._recycled.clear()
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)
        if self.zygote is not None:
            await self.zygote.aclose()
        if self.keeper is not None:
            await asyncio.to_thread(self.keeper.close)
        for folder in (
            self._folders
        ):  # the last runner of a folder lets its reaper go (it sweeps, finds nothing, exits)
            users = _reaper_users.get(folder)
            if users is not None:
                users.discard(self)
            if not users and (proc := _reapers.pop(folder, None)) is not None:
                with contextlib.suppress(OSError, ValueError):
                    proc.stdin.close()
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(proc.wait, 10)
        self._folders.clear()


@hookimpl
def register_sandbox_runners(register) -> None:
    """Register the ``process`` sandbox runner."""
    register("process", ProcessRunner)
