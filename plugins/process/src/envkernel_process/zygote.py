"""The runner's side of the executor's fork server (``executor.py --zygote``).

Starting a sandbox from scratch costs a Python start-up, the imports of the executor and its
engine, and an ``unshare`` exec: about 160 ms. A :class:`Zygote` pays that once per runner. It
keeps one warm, unconfined fork server (it never runs environment code), and each new executor is
a fork of it that confines itself exactly as a fresh executor does (namespaces, cgroups, rlimits,
tmpfs, Landlock, own uid, seccomp) before it reads its first request. The executor's protocol goes
over a socket pair instead of pipes. A :class:`ZygoteChild` stands in for the
``asyncio.subprocess.Process`` the session would otherwise hold: it has a pid, a ``returncode``
(from the zygote, which reaps it) and the two streams.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import socket
import sys
import tempfile
from typing import Any

import structlog

from envkernel_runtime import executor_path
from envkernel_runtime.session import STREAM_LIMIT

from .confine import OWNER_FILE, owner_stamp

log = structlog.get_logger("envkernel.process.zygote")

_KILLED = -9
"""The code of a child whose zygote died: its parent-death signal (SIGKILL) killed it."""


_BATCH = 64
"""Fork requests per packet to the zygote (3 descriptors each; its ``_ZYGOTE_MAX_FDS`` is 3 x
64)."""


class ZygoteChild:
    """An executor forked by the zygote, seen as a process: ``pid``, ``returncode``, ``wait()``,
    and its protocol streams as ``stdout`` (reader) and ``stdin`` (writer)."""

    def __init__(
        self,
        pid: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        sock: socket.socket | None = None,
    ) -> None:
        self.pid = pid
        self.sock = sock
        """The runner's end of its protocol socket (to pass it descriptors: a nest's next lane)."""
        self.returncode: int | None = None
        self.stdout = reader
        self.stdin = writer
        self._done: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def wait(self) -> int:
        """Wait until the zygote reaped it; its exit code (negative: the signal that killed it)."""
        return await asyncio.shield(self._done)

    def exited(self, code: int) -> None:
        """The zygote reaped it with ``code``."""
        if self.returncode is not None:
            return
        self.returncode = code
        if not self._done.done():
            self._done.set_result(code)
        self.stdin.close()


class ZygoteError(OSError):
    """The fork server could not start an executor."""


class Zygote:
    """One warm fork server of executors for a runner; started on first use, restarted if it
    dies."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.folder: str | None = None
        """Holds the fork server's log (``zygote.log``) while it runs."""
        self.spawned = 0
        self.starts = 0
        self.packets = 0
        """Fork requests sent (each carries up to 64 executors)."""
        self._proc: asyncio.subprocess.Process | None = None
        self._sock: socket.socket | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[int]] = {}
        self._children: dict[int, ZygoteChild] = {}
        self._early: dict[int, int] = {}  # exits reported before the child was registered
        self._lock = asyncio.Lock()
        self._queue: list[
            tuple[dict[str, Any], list[int]]
        ] = []  # fork requests not sent yet, with the descriptors they carry
        self._flusher: asyncio.Future[None] | None = None

    @property
    def pid(self) -> int | None:
        """Pid of the fork server (None when it is not running)."""
        p = self._proc
        return p.pid if p is not None and p.returncode is None else None

    async def _ensure(self) -> socket.socket:
        if self._sock is not None and self._proc is not None and self._proc.returncode is None:
            return self._sock
        async with self._lock:
            if self._sock is not None and self._proc is not None and self._proc.returncode is None:
                return self._sock
            self._lost("it was not running")
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            if self.folder is None:
                self.folder = tempfile.mkdtemp(prefix="envk-zygote-")
                with open(
                    os.path.join(self.folder, OWNER_FILE), "w"
                ) as f:  # for the sweep after a crash
                    f.write(owner_stamp())
            fd = os.open(
                os.path.join(self.folder, "zygote.log"),
                os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
                0o600,
            )
            try:
                self._proc = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-S",
                    "-P",
                    executor_path(),
                    "--zygote",
                    self.folder,
                    "--parent-pid",
                    str(os.getpid()),
                    stdin=theirs.fileno(),
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=fd,
                    env=self.env,
                    start_new_session=True,
                )
            except OSError as exc:
                ours.close()
                raise ZygoteError(f"cannot start the executor fork server: {exc}") from None
            finally:
                theirs.close()
                os.close(fd)
            ours.setblocking(False)
            asyncio.get_running_loop().add_reader(ours.fileno(), self._readable)
            self._sock = ours
            self.starts += 1
            log.debug("zygote started", pid=self._proc.pid)
            return ours

    def _readable(self) -> None:
        sock = self._sock
        if sock is None:
            return
        while True:
            try:
                data = sock.recv(1 << 16)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._lost("it exited")
                return
            msg = json.loads(data)
            self._on_exits(msg.get("exits") or ())
            self._on_forked(msg.get("forked") or ())
            self._on_errors(msg.get("errors") or ())

    def _on_exits(self, exits: list[list[int]]) -> None:
        """Children that ended: told now, or kept for a child not registered yet."""
        for pid, code in exits:
            child = self._children.pop(pid, None)
            if child is None:
                self._early[pid] = code
            else:
                child.exited(code)

    def _on_forked(self, forked: list[list[Any]]) -> None:
        """Forks that worked: each request's future gets the child's pid."""
        for rid, pid in forked:
            fut = self._pending.pop(int(rid or 0), None)
            if fut is not None and not fut.done():
                fut.set_result(int(pid))

    def _on_errors(self, errors: list[list[Any]]) -> None:
        """Forks that failed (an id of None: a packet it could not read, all of it failed)."""
        for rid, why in errors:
            failed = (
                [self._pending.pop(int(rid))]
                if rid is not None and int(rid) in self._pending
                else []
            )
            if rid is None:  # a packet it could not read: every request in it fails
                failed, self._pending = list(self._pending.values()), {}
            for fut in failed:
                if not fut.done():
                    fut.set_exception(
                        ZygoteError(f"the executor fork server could not fork: {why}")
                    )

    def _log_tail(self) -> str:
        try:
            with open(os.path.join(self.folder or "", "zygote.log"), "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 600))
                lines = f.read().decode("utf-8", "replace").strip().splitlines()
        except OSError:
            return ""
        return f"; its log ends: {' | '.join(lines[-3:])}" if lines else ""

    def _lost(self, why: str) -> None:
        """The fork server is gone: so are its children (parent-death signal)."""
        if why == "it exited":
            why += self._log_tail()
        if self._sock is not None:
            try:
                asyncio.get_running_loop().remove_reader(self._sock.fileno())
            except (RuntimeError, ValueError):
                pass
            self._sock.close()
            self._sock = None
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(ZygoteError(f"the executor fork server is gone ({why})"))
        self._pending.clear()
        for _item, owned in self._queue:
            for fd in owned:
                os.close(fd)
        self._queue.clear()
        for child in self._children.values():
            child.exited(_KILLED)
        self._children.clear()
        self._early.clear()

    async def spawn(
        self, argv: list[str], env: dict[str, str], log_fd: int, lane_fd: int | None = None
    ) -> ZygoteChild:
        """Fork a confined executor with these executor options and environment; ``log_fd`` becomes
        its stdout and stderr; ``lane_fd``, when given, is its direct lane (a second protocol socket
        that takes tool calls, for a client on this host)."""
        await self._ensure()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        rid = next(self._ids)
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        fds = [theirs.fileno(), log_fd, *([lane_fd] if lane_fd is not None else [])]
        # the caller closes log_fd and lane_fd once this returns, so they go in the queue as copies
        self._queue.append(
            (
                {"id": rid, "argv": argv, "env": env, "nfds": len(fds)},
                [theirs.detach(), *(os.dup(fd) for fd in fds[1:])],
            )
        )
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())
        try:
            pid = await fut
        except BaseException:
            ours.close()
            raise
        reader, writer = await asyncio.open_unix_connection(sock=ours, limit=STREAM_LIMIT)
        child = ZygoteChild(pid, reader, writer, ours)
        self.spawned += 1
        if pid in self._early:
            child.exited(self._early.pop(pid))
        else:
            self._children[pid] = child
        return child

    async def _flush(self) -> None:
        """Send the queued fork requests, up to 64 per packet: a burst of opens (512 at once) is a
        few packets, where one packet each filled the socket's queue (10 packets) and waited on
        it."""
        await asyncio.sleep(0)  # the opens started in this same turn of the loop join the batch
        while self._queue:
            batch, self._queue = self._queue[:_BATCH], self._queue[_BATCH:]
            packet = json.dumps({"batch": [item for item, _ in batch]}).encode()
            fds = [fd for _, owned in batch for fd in owned]
            try:
                while True:
                    sock = self._sock
                    if sock is None:
                        raise OSError("the fork server stopped")
                    try:
                        socket.send_fds(sock, [packet], fds)
                        self.packets += 1
                        break
                    except BlockingIOError:
                        await asyncio.sleep(0.001)
            except OSError as exc:
                for item, _ in batch:
                    fut = self._pending.pop(item["id"], None)
                    if fut is not None and not fut.done():
                        fut.set_exception(ZygoteError(f"the executor fork server is gone: {exc}"))
                self._lost(f"sending failed: {exc}")
            finally:
                for fd in fds:
                    os.close(fd)

    async def aclose(self) -> None:
        """Stop the fork server (its children die with it)."""
        proc = self._proc
        self._lost("closed")
        self._proc = None
        if proc is not None and proc.returncode is None:
            try:
                proc.kill()
            except ProcessLookupError:
                pass
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except TimeoutError:
                pass
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def info(self) -> dict[str, Any]:
        """What the fork server did so far (for the benchmark and the tests)."""
        return {
            "pid": self.pid,
            "starts": self.starts,
            "spawned": self.spawned,
            "packets": self.packets,
            "children": len(self._children),
        }
