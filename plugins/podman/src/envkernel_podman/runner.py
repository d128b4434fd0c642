"""The ``podman`` sandbox runner: one rootful Podman container per sandbox.

Each container runs a small supervisor (``assets/supervisor.py``) under coreutils' ``timeout``, so
that it dies after its hard lifetime whatever happens to its owner. The supervisor listens on a
unix socket and, for each connection from the host, starts envkernel's stdlib-only executor
(bind-mounted read-only from the host) with the connection as its stdin and stdout.

A container has no network (``--network=none``), a read-only root with tmpfs at
/work and /tmp, a non-root user, no capabilities, ``no-new-privileges``, and memory, pids and CPU
limits. The host talks to the executor over a unix socket in a per-container folder that is
bind-mounted at /envk and locked (owned by root, read-only to the sandbox) as soon as the
executor listens, before any environment code runs.

A warm pool keeps ``pool_size`` started containers whose executor runs but has loaded nothing;
``open`` takes one and sends ``load``. Closing a sandbox returns its container clean, or destroys
it: with ``recycle`` on (the default) the executor is told to exit, the supervisor kills every
process left in the container, empties every writable place (/work, /tmp, /dev/shm, /dev/mqueue)
and System V IPC, verifies it, and starts a fresh executor; the container goes back to the pool
(up to ``pool_max``). Anything that fails on that path destroys the container instead, and so do
a crash, a hang, and ``recycle = false``.

A sandbox that dies or hangs is replaced transparently, as in the process runner: the next
request takes a fresh container, loads the environment and seed again and replays the calls that
succeeded since the last load or restore.

No orphans: containers carry labels naming their owner (host, boot id, pid and its start time),
their runner and their expiry. A runner reaps, when it starts, every container whose owner is
dead or whose expiry passed, and the service a dead runner started.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import os
import secrets
import shutil
import subprocess
import time
import weakref
from collections import deque
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import msgspec
import structlog

from envkernel_runtime import executor_files
from envkernel_runtime.session import STREAM_LIMIT, ExecutorSession
from envkernel_schemas import EnvSpec

from . import reaper
from .errors import SandboxError
from .image import DEFAULT_IMAGE, missing_image_error
from .service import (
    Owner,
    Service,
    asset_path,
    containers_conf,
    default_run_dir,
    stop_orphan_service,
)

_logger = structlog.get_logger("envkernel.podman")


def _log(level: str, event: str, **fields: Any) -> None:
    """Log, never raise (a broken log stream must not break a sandbox or skip a cleanup)."""
    with contextlib.suppress(Exception):
        getattr(_logger, level)(event, **fields)


_MAX_RESPONSE = STREAM_LIMIT // 2
_LOG_MAX = 1024 * 1024
_HARD_MARGIN = 60.0
EXIT_NOTE_WAIT = 2.0
"""Seconds a death note waits for the supervisor's line on how the executor ended, while the
container runs."""

LABEL = "envkernel.sandbox"
"""Every container this plugin makes has this label (value ``podman``)."""
LABEL_RUNNER = "envkernel.runner"
LABEL_EXPIRES = "envkernel.expires"
EXECUTOR_IN = "/opt/envk/executor.py"
SUPERVISOR_IN = "/opt/envk/supervisor.py"
SOCKET_IN = "/envk/s.sock"


class Settings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``podman`` sandbox runner (section ``[podman]`` of the run config)."""

    image: str = DEFAULT_IMAGE
    """The sandbox image (build it with ``envkernel sandbox build-image``)."""
    url: str = ""
    """A running podman API service (``unix:///run/podman/podman.sock``). Empty: the runner starts
    its own ``podman system service`` and stops it when it closes."""
    containers_conf: str = ""
    """containers.conf for the service the runner starts. Empty: ``$CONTAINERS_CONF``, else the
    one shipped with this plugin (runtime runc, ulimits under the hard limits, cgroupfs)."""
    pool_size: int = 2
    """Started containers kept ready to take (0: every open is a cold start)."""
    max_starting: int = 4
    """Containers started at the same time (a burst of opens waits for these, or for a closed
    sandbox's recycled container, whichever is ready first)."""
    pool_max: int = 16
    """Most idle containers kept: closed sandboxes beyond it are destroyed instead of recycled."""
    pool_idle: float = 600.0
    """A warm container not taken within this many seconds is destroyed (the pool starts a fresh
    one)."""
    recycle: bool = True
    """Return a closed sandbox's container to the pool, verified clean, with a fresh executor
    (about 30 ms instead of a 0.25 s destroy and create). False: destroy every closed container."""
    recycle_max: int = 200
    """A container serves at most this many sandboxes, then it is destroyed."""
    call_timeout: float = 10.0
    """Seconds a tool call may run (enforced in the executor; the host kills the container 2 s
    later)."""
    startup_timeout: float = 30.0
    """Seconds to start a container and load the environment; also bounds snapshot/restore/state."""
    lifetime: float = 3600.0
    """Hard lifetime of a sandbox in seconds from open. The container's own ``timeout`` kills it
    ``2 * lifetime + pool_idle`` plus a margin (5 %, 2 to 60 s) after it started, whatever
    happens to the runner; a container is only handed out while ``lifetime`` of that remains."""
    memory_mb: int = 512
    """Memory limit of the container (cgroup, no swap) and address-space limit of the executor,
    MiB."""
    pids_limit: int = 64
    """Most processes and threads in the container."""
    cpus: float = 1.0
    """CPU share of the container (CFS quota), in cores."""
    cpu_seconds: int = 600
    """CPU-time limit of the executor process (RLIMIT_CPU)."""
    file_size_mb: int = 64
    """Largest file the executor may write, in MiB (RLIMIT_FSIZE)."""
    tmpfs_mb: int = 64
    """Size of the writable tmpfs at /work (and a quarter of it at /tmp), MiB; counts against
    memory."""
    user: str = "1000:1000"
    """The non-root uid:gid inside the container."""
    reap: bool = True
    """On start, remove containers (and services) whose owner process is gone or whose lifetime
    passed."""
    reap_at_exit: bool = True
    """Start a reaper process that removes this runner's containers, service and folder the moment
    the runner's process dies (``kill -9`` too), instead of leaving them for the next runner's
    start."""
    service_idle: int = 300
    """The service the runner starts exits after this many idle seconds (restarted when needed)."""
    run_dir: str = ""
    """Host folder for sockets. Empty: /run/envkernel/podman as root."""


@dataclass(eq=False)
class _Box:
    """One started container and the host's connection to its executor."""

    name: str
    folder: str
    created: float
    expires: float
    idle_since: float = 0.0
    uses: int = 0
    locked: bool = False
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None

    def usable(self, need: float = 0.0) -> bool:
        return (
            self.writer is not None
            and self.reader is not None
            and not self.writer.is_closing()
            and not self.reader.at_eof()
            and self.expires - time.time() > need
        )

    def usable_after_reconnect(self, need: float) -> bool:
        return self.expires - time.time() > need

    def disconnect(self) -> None:
        w, self.writer, self.reader = self.writer, None, None
        if w is not None:
            with contextlib.suppress(Exception):
                w.close()


class _Discard(Exception):
    pass


def _connection_error(exc: BaseException) -> bool:
    """Did a podman API call fail because the service is not there (vs an API answer)?"""
    seen = 0
    e: BaseException | None = exc
    while e is not None and seen < 8:
        if isinstance(e, (ConnectionError, FileNotFoundError)):
            return True
        name = type(e).__name__
        if name in (
            "ConnectionError",
            "NewConnectionError",
            "MaxRetryError",
            "ProtocolError",
            "RemoteDisconnected",
        ):
            return True
        e = e.__cause__ or e.__context__
        seen += 1
    return type(exc).__name__ == "APIError" and getattr(exc, "response", None) is None


class PodmanSession(ExecutorSession):
    """One live sandbox: a container whose executor holds one loaded environment.

    The protocol, the call log and replacement after a crash or a hang (``replacements`` counts
    replaced containers, ``events``, ``diverged``) come from
    :class:`~envkernel_runtime.session.ExecutorSession`; this class takes containers from the
    runner's pool, returns or destroys them, and explains their death."""

    error_type = SandboxError
    retry_crashed = True
    hang_note = "the container was destroyed"
    op_hang_note = "the container was destroyed"
    stream_errors = (BrokenPipeError, ConnectionResetError, OSError)
    settings: Settings

    def __init__(self, runner: PodmanRunner, env: EnvSpec, seed: int) -> None:
        super().__init__("c" + secrets.token_hex(8), env, seed, runner.settings)
        self.from_pool = False
        self._runner = runner
        self._box: _Box | None = None

    @property
    def container(self) -> str | None:
        """Name of the current container (None before start or after it died)."""
        box = self._box
        return box.name if box is not None else None

    async def close(self) -> None:
        """Close the sandbox: recycle its container if it is known clean, else destroy it.
        Idempotent."""
        t0 = time.perf_counter()
        await super().close()
        _log(
            "debug",
            "sandbox closed",
            session=self.id,
            ms=round((time.perf_counter() - t0) * 1000, 2),
        )

    # ------------------------------------------------------------------ hooks

    def _running(self) -> bool:
        box = self._box
        return box is not None and box.usable()

    async def _discard_dead(self) -> None:
        if self._box is not None:  # its connection is gone: the container died
            await self._kill("died")

    def _background(self, coro: Coroutine[Any, Any, None]) -> None:
        self._runner._spawn(coro)

    async def _shutdown(self) -> None:
        box, self._box = self._box, None
        if box is not None:
            # a request in flight (or a dead connection) means the container is not known clean
            await self._runner._release(box, reusable=box.usable() and not self._lock.locked())
        self._runner._sessions.discard(self)

    async def _start(self) -> None:
        box, warm = await self._runner._take()
        self.from_pool = warm if self._generation == 0 else self.from_pool
        self._box = box
        self._generation += 1
        try:
            await self._reload_and_rerun_log()
        except BaseException as exc:
            # an environment that fails to load leaves a healthy container: recycle it
            failed_load = isinstance(exc, SandboxError) and exc.code == "load_failed"
            box, self._box = self._box, None
            if box is not None:
                await self._runner._release(box, reusable=failed_load and box.usable())
            raise
        finally:
            self._runner._kick()

    def _streams(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        box = self._box
        if box is None or box.writer is None or box.reader is None:
            return None
        return box.reader, box.writer

    async def _death_note(self) -> str:
        box = self._box
        if box is None:
            return "the sandbox container is gone; it will be replaced"
        note = await self._runner._exit_note(box)
        self.events.append(f"died ({note})")
        await self._kill(None)
        return f"the sandbox died ({note}); it will be replaced"

    async def _stop(self) -> bool:
        box, self._box = self._box, None
        if box is None:
            return False
        await self._runner._destroy(box)
        return True


_CONTAINER_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/work",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUTF8": "1",
}
"""The environment variables of a sandbox's container (nothing of the host's)."""


class PodmanRunner:
    """Sandbox runner ``podman``: opens :class:`PodmanSession` sandboxes from a warm pool."""

    Settings = Settings

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings if settings is not None else Settings()
        self.owner = Owner.me()
        self.token = secrets.token_hex(4)
        self.stats = {
            "warm": 0,
            "cold": 0,
            "recycled": 0,
            "destroyed": 0,
            "reaped": 0,
            "pool_errors": 0,
        }
        self._sessions: set[PodmanSession] = set()
        self._pool: deque[_Box] = deque()
        self._waiters: deque[asyncio.Future[_Box]] = deque()
        self._backoff = 0.0
        self._boxes: dict[str, _Box] = {}
        self._starting = 0
        self._names = itertools.count(1)
        self._started = False
        self._closed = False
        self._start_lock: asyncio.Lock | None = None
        self._wake: asyncio.Event | None = None
        self._pool_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._uid, self._gid = _ids(self.settings.user)
        self._base = self.settings.run_dir or default_run_dir()
        self._folder = os.path.join(self._base, f"{self.owner.key}-{self.token}")
        self._conf = ""
        self._service: Service | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._reaper: subprocess.Popen[bytes] | None = None
        self._threads: ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------ public

    @property
    def sessions(self) -> list[PodmanSession]:
        """The live sandboxes."""
        return list(self._sessions)

    @property
    def pool_ready(self) -> int:
        """Warm containers ready to take now."""
        return sum(1 for b in self._pool if b.usable())

    async def start(self) -> None:
        """Connect to (or start) the podman service, check the image, reap orphans, fill the pool.
        Called by the first :meth:`open`; call it earlier to warm the pool before the first open."""
        if self._started:
            return
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._started:
                return
            if self._closed:
                raise SandboxError("the podman runner is closed", code="closed")
            self._conf = containers_conf(self.settings.containers_conf)
            os.makedirs(self._folder, mode=0o755, exist_ok=True)
            self._service = Service(
                self.settings.url, self._folder, self._conf, self.settings.service_idle
            )
            self._finalizer = weakref.finalize(
                self, _cleanup_at_exit, self._service, self.token, self._folder
            )
            if self.settings.reap_at_exit and self._reaper is None:
                self._reaper = reaper.start(
                    self._folder, f"{LABEL_RUNNER}={self.token}", self._conf
                )
            try:
                await self._in_thread(self._service.client)
                if not await self._api(lambda c: c.images.exists(self.settings.image)):
                    raise missing_image_error(self.settings.image)
                if self.settings.reap:
                    await self.reap()
            except BaseException:
                await self._in_thread(self._service.stop)
                shutil.rmtree(self._folder, ignore_errors=True)
                raise
            self._wake = asyncio.Event()
            self._started = True
            self._pool_task = asyncio.create_task(self._pool_loop())

    async def wait_pool(self, timeout: float = 30.0) -> int:
        """Wait until the pool holds ``pool_size`` ready containers (or the timeout); return how
        many."""
        await self.start()
        deadline = time.monotonic() + timeout
        while self.pool_ready < self.settings.pool_size and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return self.pool_ready

    async def open(self, env: EnvSpec, seed: int) -> PodmanSession:
        """Take a container (warm if one is ready), load ``env`` with ``seed``, return it ready to
        call."""
        await self.start()
        t0 = time.perf_counter()
        session = PodmanSession(self, env, seed)
        self._sessions.add(session)
        await session.start()
        _log(
            "debug",
            "sandbox opened",
            container=session.container,
            env=env.id,
            warm=session.from_pool,
            ms=round((time.perf_counter() - t0) * 1000, 2),
            open=len(self._sessions),
            pool=len(self._pool),
        )
        return session

    async def aclose(self) -> None:
        """Close every sandbox, destroy the pool, stop the service this runner started."""
        self._closed = True
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(SandboxError("the podman runner is closing", code="closed"))
        if self._pool_task is not None:
            self._pool_task.cancel()
            with contextlib.suppress(BaseException):
                await self._pool_task
            self._pool_task = None
        await asyncio.gather(*(s.close() for s in list(self._sessions)), return_exceptions=True)
        pool = list(self._pool)
        self._pool.clear()
        await asyncio.gather(*(self._destroy(b) for b in pool), return_exceptions=True)
        while self._tasks:  # starts and recycles in flight (what they finish is destroyed: closed)
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self._boxes:  # anything still starting or left over
            await asyncio.gather(
                *(self._destroy(b) for b in list(self._boxes.values())), return_exceptions=True
            )
        if self._service is not None and self._started:
            with contextlib.suppress(Exception):
                mine = {"label": f"{LABEL_RUNNER}={self.token}"}
                names = await self._api(
                    lambda c: [x.name for x in c.containers.list(all=True, filters=mine)]
                )
                for n in names:
                    await self._api(_remove, n)
        if self._service is not None:
            await self._in_thread(self._service.stop)
        if self._finalizer is not None:
            self._finalizer.detach()
        shutil.rmtree(self._folder, ignore_errors=True)
        if self._reaper is not None:  # everything is gone: tell the reaper so it leaves at once
            await asyncio.to_thread(reaper.release, self._reaper)
            self._reaper = None
        self._started = False
        if self._threads is not None:
            self._threads.shutdown(wait=False)
            self._threads = None

    async def reap(self) -> list[str]:
        """Remove containers whose owner is dead or whose lifetime passed, and dead runners' folders
        and services. Returns the names of the containers removed."""
        removed = await self._api(reap_containers)
        self.stats["reaped"] += len(removed)
        await self._in_thread(reap_folders, self._base)
        if removed:
            _log("info", "reaped orphan sandbox containers", count=len(removed), names=removed[:10])
        return removed

    async def containers(self) -> list[dict[str, Any]]:
        """This runner's containers (name, status, labels) as podman lists them."""
        await self.start()
        return await self._api(
            lambda c: [
                {"name": x.name, "status": list_status(x), "labels": x.labels}
                for x in c.containers.list(
                    all=True, filters={"label": f"{LABEL_RUNNER}={self.token}"}
                )
            ]
        )

    # ------------------------------------------------------------------ the pool

    async def _take(self) -> tuple[_Box, bool]:
        """A started container: from the pool when one is ready (True), else the first one that
        becomes ready, a fresh one or one a closed sandbox returned (False)."""
        need = self.settings.lifetime
        while self._pool:
            box = self._pool.popleft()
            if box.usable(need):
                self.stats["warm"] += 1
                return (
                    box,
                    True,
                )  # the session kicks the pool once it has loaded (no CPU contention)
            self._spawn(self._destroy(box))
        if self._closed:
            raise SandboxError("the podman runner is closed", code="closed")
        waiter: asyncio.Future[_Box] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._kick()
        try:
            box = await asyncio.wait_for(asyncio.shield(waiter), self.settings.startup_timeout)
        except TimeoutError:
            raise SandboxError(
                f"no sandbox container was ready within {self.settings.startup_timeout:g} s",
                code="timeout",
            ) from None
        except BaseException:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self._offer(waiter.result())  # it came just as we gave up: someone else takes it
            else:
                waiter.cancel()
            raise
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
        self.stats["cold"] += 1
        return box, False

    def _offer(self, box: _Box) -> None:
        """A ready container: to the oldest open that waits for one, else to the pool."""
        if self._closed:
            self._spawn(self._destroy(box))
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(box)
                return
        box.idle_since = time.time()
        self._pool.append(box)

    def _kick(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _pool_loop(self) -> None:
        """Keeps ``pool_size`` containers ready plus one for each waiting open, starting at most
        ``max_starting`` at a time; drops containers idle longer than ``pool_idle``."""
        s = self.settings
        while not self._closed:
            now = time.time()
            for box in list(self._pool):
                if not box.usable(s.lifetime) or now - box.idle_since > s.pool_idle:
                    self._pool.remove(box)
                    self._spawn(self._destroy(box))
            waiting = sum(1 for w in self._waiters if not w.done())
            want = waiting + max(0, s.pool_size - len(self._pool)) - self._starting
            while want > 0 and self._starting < max(1, s.max_starting):
                self._starting += 1
                want -= 1
                self._spawn(self._start_one())
            assert self._wake is not None
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._wake.wait(), timeout=max(1.0, min(30.0, s.pool_idle / 4))
                )

    async def _start_one(self) -> None:
        box = None
        try:
            box = await self._start_box()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.stats["pool_errors"] += 1
            self._backoff = min(max(self._backoff * 2, 0.5), 30.0)
            for waiter in list(self._waiters):
                if not waiter.done():
                    waiter.set_exception(
                        exc if isinstance(exc, SandboxError) else SandboxError(str(exc))
                    )
                    break
            _log(
                "warning",
                "starting a sandbox container failed",
                error=str(exc),
                retry_in=self._backoff,
            )
            await asyncio.sleep(self._backoff)
        finally:
            self._starting -= 1
            self._kick()
        if box is not None:
            self._backoff = 0.0
            self._offer(box)

    # ------------------------------------------------------------------ containers

    async def _start_box(self) -> _Box:
        s = self.settings
        short = f"{next(self._names)}-{secrets.token_hex(3)}"
        name = f"envk-{self.token}-{short}"
        folder = os.path.join(self._folder, short)
        os.mkdir(folder, 0o700)
        if os.geteuid() == 0:
            os.chown(folder, self._uid, self._gid)
        else:
            os.chmod(folder, 0o777)
        now = time.time()
        hard = 2 * s.lifetime + s.pool_idle
        hard += min(_HARD_MARGIN, max(2.0, 0.05 * hard))
        box = _Box(name, folder, now, now + hard, idle_since=now)
        self._boxes[name] = box
        try:
            await self._api(self._create, box, hard)
            await self._connect(box)
        except BaseException:
            await self._destroy(box)
            raise
        return box

    def _create(self, client: Any, box: _Box, hard: float) -> None:
        import podman.errors

        s = self.settings
        mem = s.memory_mb * 1024 * 1024
        labels = {
            LABEL: "podman",
            LABEL_RUNNER: self.token,
            LABEL_EXPIRES: str(int(box.expires)),
            **self.owner.labels(),
        }
        try:
            ctr = client.containers.create(
                s.image,
                command=self._command(hard),
                name=box.name,
                hostname="sandbox",
                labels=labels,
                network_mode="none",
                read_only=True,
                user=s.user,
                mem_limit=mem,
                memswap_limit=mem,
                pids_limit=s.pids_limit,
                cpu_period=100_000,
                cpu_quota=max(1000, int(s.cpus * 100_000)),
                cap_drop=["ALL"],
                no_new_privileges=True,
                stop_timeout=1,
                shm_size=f"{max(1, s.tmpfs_mb // 4)}m",
                environment=dict(_CONTAINER_ENV),
                mounts=self._mounts(box),
                log_config={"Type": "k8s-file", "Config": {"size": _LOG_MAX}},
            )
        except podman.errors.ImageNotFound:
            raise missing_image_error(s.image) from None
        ctr.start()

    def _command(self, hard: float) -> list[str]:
        """The container's command: the supervisor under ``timeout`` (its hard lifetime), and the
        executor it starts per connection, with its limits."""
        s = self.settings
        return [
            "timeout", "-s", "KILL", str(max(1, round(hard))),
            "python3", "-S", "-P", SUPERVISOR_IN, SOCKET_IN, "--",
            "python3", "-S", "-P", EXECUTOR_IN,
            "--rlimit-as", str(s.memory_mb * 1024 * 1024),
            "--rlimit-cpu", str(s.cpu_seconds),
            "--rlimit-fsize", str(s.file_size_mb * 1024 * 1024),
            "--max-response", str(_MAX_RESPONSE),
            # the working folder is part of snapshots and failed-call rollback
            "--workdir", "/work",
        ]  # fmt: skip

    def _mounts(self, box: _Box) -> list[dict[str, Any]]:
        """The container's mounts: tmpfs ``/work`` and ``/tmp``, the box's folder, and read-only
        the executor's files and the supervisor."""
        s = self.settings
        return [
            {
                "type": "tmpfs",
                "source": "tmpfs",
                "target": "/work",
                "size": f"{s.tmpfs_mb}m",
                "chown": True,
            },
            {
                "type": "tmpfs",
                "source": "tmpfs",
                "target": "/tmp",
                "size": f"{max(1, s.tmpfs_mb // 4)}m",
                "mode": "1777",
            },
            {"type": "bind", "source": box.folder, "target": "/envk"},
            # the executor and the files it loads from beside it (its protocol, its
            # confinement, its serving loops, the engines of model and workspace
            # environments); not the zygote's or the nests' (this runner starts neither)
            *(
                {
                    "type": "bind",
                    "source": path,
                    "target": os.path.join(os.path.dirname(EXECUTOR_IN), os.path.basename(path)),
                    "read_only": True,
                }
                for path in executor_files(fork_server=False)
            ),
            {
                "type": "bind",
                "source": asset_path("supervisor.py"),
                "target": SUPERVISOR_IN,
                "read_only": True,
            },
        ]

    async def _connect(self, box: _Box, timeout: float | None = None) -> None:
        """Connect to the container's supervisor (which starts a fresh executor) and wait until
        that executor answers."""
        path = os.path.join(box.folder, "s.sock")
        deadline = time.monotonic() + (timeout or self.settings.startup_timeout)
        tries = 0
        while True:
            try:
                box.reader, box.writer = await asyncio.open_unix_connection(
                    path, limit=STREAM_LIMIT
                )
                break
            except (FileNotFoundError, ConnectionRefusedError):
                tries += 1
                if tries % 50 == 0:
                    state = await self._api(_state, box.name)
                    if state.get("Status") not in (
                        "running",
                        "created",
                        "configured",
                        "initialized",
                    ):
                        raise SandboxError(
                            f"container {box.name} stopped before its executor listened "
                            f"({_describe_state(state)})" + await self._logs_tail(box),
                            code="crashed",
                        ) from None
                if time.monotonic() > deadline:
                    raise SandboxError(
                        f"container {box.name}: the executor did not listen within "
                        f"{self.settings.startup_timeout:g} s",
                        code="timeout",
                    ) from None
                await asyncio.sleep(0.002)
        # Lock the folder: from now on the sandbox cannot create files on the host (only the
        # socket).
        if not box.locked and os.geteuid() == 0:
            os.chown(box.folder, 0, 0)
            os.chmod(box.folder, 0o755)
        box.locked = True
        assert box.reader is not None and box.writer is not None
        box.writer.write(b'{"op":"ping"}\n')
        try:
            line = await asyncio.wait_for(
                box.reader.readline(), max(0.1, deadline - time.monotonic())
            )
        except (TimeoutError, ValueError, OSError):
            line = b""
        if not line.endswith(b"\n"):
            raise SandboxError(
                f"container {box.name}: the executor did not answer" + await self._logs_tail(box),
                code="crashed",
            )

    async def _release(self, box: _Box, reusable: bool) -> None:
        """A session is done with ``box``: recycle it in the background, or destroy it now."""
        s = self.settings
        if reusable and s.recycle and not self._closed and box.uses + 1 < s.recycle_max:
            box.uses += 1
            self._spawn(self._recycle(box))
        else:
            await self._destroy(box)

    async def _recycle(self, box: _Box) -> None:
        s = self.settings
        try:
            assert box.reader is not None and box.writer is not None
            box.writer.write(b'{"op":"close"}\n')
            await box.writer.drain()
            await asyncio.wait_for(
                box.reader.read(), 5.0
            )  # its answer, then EOF: the executor exited
            box.disconnect()
            if (
                len(self._pool) >= s.pool_max and not self._waiters
            ) or not box.usable_after_reconnect(s.lifetime):
                raise _Discard()
            await self._connect(
                box, timeout=10.0
            )  # the supervisor cleans up, then a fresh executor
        except Exception as exc:
            if not isinstance(exc, _Discard):
                _log(
                    "warning",
                    "recycling a sandbox container failed; destroying it",
                    container=box.name,
                    error=repr(exc),
                )
            await self._destroy(box)
            return
        if self._closed or (len(self._pool) >= s.pool_max and not self._waiters):
            await self._destroy(box)
            return
        self.stats["recycled"] += 1
        self._offer(box)

    async def _destroy(self, box: _Box) -> None:
        box.disconnect()
        if self._boxes.pop(box.name, None) is None:
            return
        try:
            await self._api(_remove, box.name)
            self.stats["destroyed"] += 1
        except Exception as exc:
            _log(
                "warning",
                "could not remove a sandbox container",
                container=box.name,
                error=str(exc),
            )
        shutil.rmtree(box.folder, ignore_errors=True)

    async def _exit_note(self, box: _Box) -> str:
        try:
            state = await self._api(_state, box.name)
        except Exception as exc:
            return f"state unknown: {exc}"
        tail = await self._logs_tail(box)
        if (
            state.get("Status") == "running"
        ):  # the executor died, the supervisor lives: its log says how,
            # once it has reaped the executor and conmon has written the line, which can come after
            # the
            # connection's end reached us (20 ms was not always enough on a loaded host). An
            # executor
            # that exited with code 0 leaves no line: then it waits EXIT_NOTE_WAIT out, backing off.
            deadline, pause = time.monotonic() + EXIT_NOTE_WAIT, 0.02
            while "envkernel supervisor: executor" not in tail and time.monotonic() < deadline:
                await asyncio.sleep(pause)
                pause = min(pause * 2, 0.25)
                tail = await self._logs_tail(box)
        return _describe_state(state) + tail

    async def _logs_tail(self, box: _Box) -> str:
        try:
            text = await self._api(_logs, box.name)
        except Exception:
            return ""
        lines = [line for line in text.splitlines() if line.strip()]
        return (": " + " | ".join(lines[-5:]))[:1500] if lines else ""

    # ------------------------------------------------------------------ plumbing

    def _spawn(self, coro: Any) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    async def _api(self, fn: Any, *args: Any) -> Any:
        return await self._in_thread(self._call_api, fn, *args)

    async def _in_thread(self, fn: Any, *args: Any) -> Any:
        """Run blocking podman work on the runner's own threads (never the loop's default pool,
        which the kernel's sync stages use)."""
        if self._threads is None:
            self._threads = ThreadPoolExecutor(max_workers=4, thread_name_prefix="envk-podman")
        return await asyncio.get_running_loop().run_in_executor(
            self._threads, functools.partial(fn, *args)
        )

    def _call_api(self, fn: Any, *args: Any) -> Any:
        assert self._service is not None
        try:
            return fn(self._service.client(), *args)
        except SandboxError:
            raise
        except Exception as exc:
            if not (_connection_error(exc) and self._service.owned):
                raise
        # our service went away (idle timeout, killed): start it again and retry once
        return fn(self._service.restart(), *args)


# --------------------------------------------------------------------------- helpers


def _ids(user: str) -> tuple[int, int]:
    try:
        uid, _, gid = user.partition(":")
        return int(uid), int(gid or uid)
    except ValueError:
        raise SandboxError(
            f"podman.user must be numeric uid:gid like 1000:1000, got {user!r}"
        ) from None


def _remove(client: Any, name: str) -> None:
    import podman.errors

    with contextlib.suppress(podman.errors.NotFound):
        client.containers.remove(name, force=True)


def _state(client: Any, name: str) -> dict[str, Any]:
    import podman.errors

    try:
        return dict(client.containers.get(name).attrs.get("State") or {})
    except podman.errors.NotFound:
        return {"Status": "removed"}


def _logs(client: Any, name: str) -> str:
    import podman.errors

    try:
        chunks = client.containers.get(name).logs(stdout=True, stderr=True, tail=20)
    except podman.errors.NotFound:
        return ""
    if isinstance(chunks, bytes):
        return chunks.decode("utf-8", "replace")
    return b"".join(c if isinstance(c, bytes) else str(c).encode() for c in chunks).decode(
        "utf-8", "replace"
    )


def list_status(ctr: Any) -> str:
    """A listed container's status ("running", "exited", ...): listings carry it as a string."""
    state = ctr.attrs.get("State")
    return str(state.get("Status", "")) if isinstance(state, dict) else str(state or "")


def _describe_state(state: dict[str, Any]) -> str:
    status = state.get("Status", "unknown")
    parts = [f"status {status}"]
    if "ExitCode" in state and status not in ("running", "removed"):
        code = state.get("ExitCode")
        parts.append(f"exit code {code}")
        if code == 137:
            parts.append("killed")
    if state.get("OOMKilled"):
        parts.append("out of memory")
    if state.get("Error"):
        parts.append(str(state["Error"]))
    return ", ".join(parts)


def reap_containers(client: Any) -> list[str]:
    """Remove every envkernel sandbox container whose owner is dead (on this host) or whose expiry
    passed (anywhere). Returns their names."""
    now = time.time()
    removed = []
    for ctr in client.containers.list(all=True, filters={"label": LABEL}):
        labels = ctr.labels or {}
        owner = Owner.from_labels(labels)
        try:
            expired = float(labels.get(LABEL_EXPIRES, "inf")) < now
        except ValueError:
            expired = False
        dead = owner is None or owner.alive() is False
        if expired or dead:
            _remove(client, ctr.name)
            removed.append(ctr.name)
    return removed


def reap_folders(base: str) -> int:
    """Remove dead runners' folders under ``base``, stopping any podman service they started."""
    n = 0
    try:
        entries = os.listdir(base)
    except OSError:
        return 0
    me = Owner.me()
    for entry in entries:
        pid, _, rest = entry.partition("-")
        start = rest.partition("-")[0]
        if not pid.isdigit():
            continue
        if Owner(me.host, me.boot, int(pid), start).alive():
            continue
        folder = os.path.join(base, entry)
        stop_orphan_service(folder)
        shutil.rmtree(folder, ignore_errors=True)
        n += 1
    return n


def _cleanup_at_exit(service: Service, token: str, folder: str) -> None:
    """Last resort when a runner is dropped or the interpreter exits without ``aclose``."""
    with contextlib.suppress(Exception):
        client = service.client()
        for ctr in client.containers.list(all=True, filters={"label": f"{LABEL_RUNNER}={token}"}):
            _remove(client, ctr.name)
    with contextlib.suppress(Exception):
        service.stop()
    shutil.rmtree(folder, ignore_errors=True)
