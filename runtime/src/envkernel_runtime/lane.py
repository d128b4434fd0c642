"""Direct lanes: a client on the runner's host calls a sandbox's executor with nothing in between.

Over the bus, a tool call crosses three processes: the client, nats-server, the sandbox service
(the runner's process) and then the executor, and back. A *direct lane* is a second protocol
socket of the executor (a socket pair made by the runner when it forks the executor; the executor
serves it beside the runner's own socket, see ``executor._serve_lanes``). When the sandbox service
opens a sandbox, it puts the lane in a :class:`LaneServer` under a one-time token and sends the
offer (host, socket path, token, call timeout) in its open reply. A client on the same host
(:func:`connect_lane`) connects to that unix socket, which sits in a folder only the runner's user
can enter, shows the token and receives the lane's descriptor (``SCM_RIGHTS``); its tool calls and
restores, and its state reads (``dump``, read-only), then go straight to the executor
(:class:`DirectLane`; a snapshot's reply names the executor's own handle of it while a lane is out).
A client on another host, or one whose offer has expired, keeps using the bus; the other operations
(patch, snapshot, close) always do.

What stays the same: the executor is the same confined process (its own uid, namespaces, cgroup,
rlimits, Landlock, seccomp), it answers one request at a time from either socket, the lane takes
``call``, ``restore``, ``dump`` and ``ping`` only, the runner still enforces the sandbox's hard
lifetime (killing the executor ends the lane), and the executor still stops a call at its timeout.
What changes: calls (and restores) over a lane are not in the runner's call log, so when an executor
dies after its lane was handed out its state is *lost* instead of rebuilt from the log (the next
call answers ``crashed`` and says so; a restore of a snapshot taken before any direct call, such as
the one taken at open, brings the sandbox back). ``ENVKERNEL_SANDBOX_LANES=0`` turns lanes off (in a
service: none offered; in a client: none taken).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import socket
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import structlog

from envkernel_runtime import wire as ew
from envkernel_runtime.session import Capability, capabilities_of
from envkernel_schemas import ToolError, ToolResult

from .session import HOST_GRACE, STREAM_LIMIT

__all__ = ["DirectLane", "LaneServer", "connect_lane", "host_id", "lanes_enabled"]

log = structlog.get_logger("envkernel.lane")

OFFER_SECONDS = 60.0
"""How long an offered lane waits for its client before it is closed."""

_enc = msgspec.json.Encoder()
_result_dec = msgspec.json.Decoder(ToolResult)
_DUMP = ew.encode(ew.Dump()) + b"\n"


class _Dump(msgspec.Struct):
    """The executor's answer to ``dump``: every table's rows, or an error (then ``ok`` is false)."""

    ok: bool = False
    value: dict[str, list[dict[str, Any]]] = msgspec.field(default_factory=dict)


_dump_dec = msgspec.json.Decoder(_Dump)


def lanes_enabled() -> bool:
    """False when ``ENVKERNEL_SANDBOX_LANES=0``."""
    return os.environ.get("ENVKERNEL_SANDBOX_LANES", "1") != "0"


def host_id() -> str:
    """This host (its name and this boot of its kernel): a lane is taken only where it was
    offered."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = ""
    return f"{socket.gethostname()}/{boot}"


def _resolve(fut: asyncio.Future[None]) -> None:
    """A reader's or writer's callback: wake the one waiting on ``fut`` (once)."""
    if not fut.done():
        fut.set_result(None)


async def _readable(sock: socket.socket) -> None:
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[None] = loop.create_future()
    loop.add_reader(sock.fileno(), _resolve, fut)
    try:
        await fut
    finally:
        loop.remove_reader(sock.fileno())


class LaneServer:
    """Hands the direct lanes of a service's sandboxes to clients on this host (see the module
    docstring)."""

    def __init__(self) -> None:
        self.folder = ""
        self.path = ""
        self.host = host_id()
        self._offers: dict[str, tuple[socket.socket, Any, float]] = {}
        self._sock: socket.socket | None = None
        self._task: asyncio.Task[None] | None = None
        self._handing: set[asyncio.Task[None]] = (
            set()
        )  # referenced until done (the loop keeps tasks weakly)
        self.handed = 0
        """Lanes handed to clients so far."""

    async def start(self) -> None:
        """Listen on ``<tmp>/envk-lanes-*/lanes.sock`` (the folder is mode 0700: only this user gets
        in)."""
        self.folder = tempfile.mkdtemp(prefix="envk-lanes-")
        self.path = os.path.join(self.folder, "lanes.sock")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.path)
        self._sock.listen(512)
        self._sock.setblocking(False)
        self._task = asyncio.create_task(self._accept())

    def offer(self, session: Any, call_timeout: float) -> list[Any]:
        """The offer of ``session``'s lane for an open reply (``[]`` when it has none): host, path,
        token, call timeout."""
        has_lane = Capability.LANE in capabilities_of(session)
        lane = session.take_lane() if has_lane and self._sock is not None else None
        if lane is None:
            return []
        now = time.monotonic()
        for token in [t for t, (_, _, deadline) in self._offers.items() if deadline < now]:
            self._offers.pop(token)[0].close()  # never taken: the executor drops it
        token = secrets.token_hex(16)
        self._offers[token] = (lane, session, now + OFFER_SECONDS)
        return [self.host, self.path, token, call_timeout]

    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._sock is not None
        while True:
            conn, _ = await loop.sock_accept(self._sock)
            task = asyncio.ensure_future(self._hand(conn))
            self._handing.add(task)
            task.add_done_callback(self._handing.discard)

    async def _hand(self, conn: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        with conn:
            try:
                async with asyncio.timeout(10):
                    data = b""
                    while not data.endswith(b"\n") and len(data) < 128:
                        chunk = await loop.sock_recv(conn, 128)
                        if not chunk:
                            return
                        data += chunk
                item = self._offers.pop(data.strip().decode("ascii", "replace"), None)
                if item is None or item[1].closed:
                    await loop.sock_sendall(conn, b"no")
                    return
                lane, session, _ = item
                session.lane_taken()  # from now on the session's call log is not the whole story
                conn.setblocking(
                    True
                )  # a two-byte message with one descriptor on a fresh socket: never blocks
                socket.send_fds(conn, [b"ok"], [lane.fileno()])
                lane.close()
                self.handed += 1
            except (OSError, TimeoutError) as exc:
                log.debug("lane not handed", error=str(exc))

    def close(self) -> None:
        """Stop listening and close every lane not taken."""
        if self._task is not None:
            self._task.cancel()
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        for lane, _, _ in self._offers.values():
            lane.close()
        self._offers.clear()
        if self.folder:
            shutil.rmtree(self.folder, ignore_errors=True)


class DirectLane:
    """A client's direct lane to one executor: :meth:`call` writes the executor's request and reads
    its answer.

    It speaks over the lane's socket itself, with no stream objects in between: one ``send`` of the
    request line, and ``recv`` when the event loop says the socket is readable (the descriptor stays
    registered with the loop while a call waits for its answer, and is dropped when it is readable
    with no call waiting, such as an executor that died)."""

    def __init__(
        self,
        sock: socket.socket,
        call_timeout: float,
        on_hang: Callable[[], Awaitable[Any]] | None = None,
    ) -> None:
        self.on_hang = on_hang
        """Awaited when a call hangs past its timeout: asks the runner to kill the executor (over
        the bus)."""
        sock.setblocking(False)
        self.sock = sock
        self.call_timeout = call_timeout
        self.closed = False
        self._lock = asyncio.Lock()
        self._buf = bytearray()
        self._waiter: asyncio.Future[None] | None = None
        self._watched = False

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolResult | None:
        """The tool's result, or None when the lane cannot take the call (closed, or the executor is
        gone: then it is closed and the caller goes over the bus, where the runner explains the
        death)."""
        line = await self.call_raw(tool, arguments)
        if line is None:
            return None
        try:
            return _result_dec.decode(line)
        except msgspec.DecodeError as exc:
            self.close()
            return ToolResult(
                ok=False,
                error=ToolError(
                    code="crashed",
                    message=f"the executor answered with something that is not a result: {exc}",
                ),
            )

    async def call_raw(self, tool: str, arguments: dict[str, Any]) -> bytes | None:
        """:meth:`call`, answered with the executor's JSON line as it wrote it (a result; on a
        timeout or arguments that are not JSON, a result line saying so), or None when the lane
        cannot take the call."""
        if self.closed:
            return None
        try:
            request = (
                ew.encode(ew.Call(tool=tool, arguments=arguments, timeout=self.call_timeout))
                + b"\n"
            )
        except (TypeError, msgspec.EncodeError) as exc:
            return _enc.encode(
                ToolResult(
                    ok=False,
                    error=ToolError(
                        code="invalid_arguments",
                        message=f"arguments of {tool!r} are not JSON: {exc}",
                    ),
                )
            )
        hung: list[bool] = []
        line = await self._exchange(request, hung)
        if (
            line is None and hung
        ):  # this call hung (not one before it, which closed the lane while this one waited)
            return _enc.encode(
                ToolResult(
                    ok=False,
                    error=ToolError(
                        code="timeout",
                        message=(
                            f"tool {tool!r} did not finish within {self.call_timeout:g} s "
                            "and the sandbox did not stop it; the sandbox was killed, and "
                            "its state is lost (it took calls over its direct lane, which "
                            "cannot be replayed): restore a snapshot taken before them, or "
                            "open a new sandbox"
                        ),
                    ),
                )
            )
        return line

    async def restore(self, handle: str) -> bool:
        """Restore the executor's snapshot ``handle``; False when it could not be done here (then
        the caller restores over the bus, where a snapshot of a replaced executor is rebuilt)."""
        line = await self._exchange(ew.encode(ew.Restore(snapshot=handle)) + b"\n")
        return line is not None and line.startswith(b'{"ok":true')

    async def state(self) -> dict[str, list[dict[str, Any]]] | None:
        """The executor's whole state (table -> rows, as its ``dump`` answers over the bus); None
        when it could not be read here (then the caller reads it over the bus, where the runner says
        what went wrong)."""
        line = await self._exchange(_DUMP)
        if line is None:
            return None
        try:
            dump = _dump_dec.decode(line)
        except msgspec.DecodeError:
            return None
        return dump.value if dump.ok else None

    _hung = False

    async def _exchange(self, request: bytes, hung: list[bool] | None = None) -> bytes | None:
        """Send one request line and read its answer; None (and the lane closed) when the executor
        is gone or hangs (then ``True`` is appended to ``hung``)."""
        if self.closed:
            return None
        async with self._lock:
            # closed while this call waited for the lock (an earlier call hung): never sent, so no
            # timeout of its own
            if self.closed:
                return None
            try:
                line = await self._roundtrip(request)
            except TimeoutError:
                self._hung = True
                if hung is not None:
                    hung.append(True)
                self.close()  # the call is still running there: not sent again over the bus
                if self.on_hang is not None:
                    with contextlib.suppress(Exception):
                        await self.on_hang()
                return None
            except (OSError, ValueError):
                line = b""
        if not line.endswith(
            b"\n"
        ):  # the executor died (it never drops a lane itself while it lives)
            self.close()
            return None
        return line

    async def _roundtrip(self, request: bytes) -> bytes:
        sock, buf = self.sock, self._buf
        deadline = asyncio.get_running_loop().time() + self.call_timeout + HOST_GRACE
        view = memoryview(request)
        while view:
            try:
                view = view[sock.send(view) :]
            except BlockingIOError:  # a large request: wait until the executor has read some
                await self._wait(deadline, write=True)
        while True:
            i = buf.find(b"\n")
            if i >= 0:
                line = bytes(buf[: i + 1])
                del buf[: i + 1]
                return line
            try:
                chunk = sock.recv(1 << 20)
            except BlockingIOError:
                await self._wait(deadline)
                continue
            if not chunk:
                return bytes(buf)
            buf += chunk
            if len(buf) > STREAM_LIMIT:
                raise ValueError("answer too long")

    def _readable(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            if not waiter.done():
                waiter.set_result(None)
            return
        # no call waiting: the answer just read (the loop polled once more before its reader ran),
        # or an
        # executor that died (end of file): then stop watching, or the loop would be woken forever
        try:
            chunk = self.sock.recv(1 << 20)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            self._buf += chunk
            return
        asyncio.get_running_loop().remove_reader(self.sock.fileno())
        self._watched = False

    @staticmethod
    def _expire(waiter: asyncio.Future[None]) -> None:
        if not waiter.done():
            waiter.set_exception(TimeoutError())

    async def _wait(self, deadline: float, write: bool = False) -> None:
        loop = asyncio.get_running_loop()
        fd = self.sock.fileno()
        self._waiter = waiter = loop.create_future()
        if write:
            loop.add_writer(fd, _resolve, waiter)
        elif not self._watched:
            loop.add_reader(fd, self._readable)
            self._watched = True
        timer = loop.call_at(
            deadline, self._expire, waiter
        )  # (lighter than asyncio.timeout_at, once per call)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None
            if write:
                loop.remove_writer(fd)

    def close(self) -> None:
        """Close the lane (idempotent); the executor goes on serving its runner."""
        if not self.closed:
            self.closed = True
            if self._watched:
                with contextlib.suppress(Exception):
                    asyncio.get_running_loop().remove_reader(self.sock.fileno())
                self._watched = False
            with contextlib.suppress(Exception):
                self.sock.close()


async def connect_lane(
    offer: list[Any], timeout: float = 5.0, on_hang: Callable[[], Awaitable[Any]] | None = None
) -> DirectLane | None:
    """Take the lane an open reply offers, when it was offered on this host; None otherwise (then
    use the bus)."""
    if len(offer) != 4 or offer[0] != host_id() or not lanes_enabled():
        return None
    _, path, token, call_timeout = offer
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        async with asyncio.timeout(timeout):
            await loop.sock_connect(sock, path)
            await loop.sock_sendall(sock, f"{token}\n".encode())
            await _readable(sock)
            msg, fds, _flags, _addr = socket.recv_fds(sock, 16, 1)
    except (OSError, TimeoutError) as exc:
        log.debug("no direct lane", path=path, error=str(exc))
        return None
    finally:
        sock.close()
    if msg != b"ok" or len(fds) != 1:
        for fd in fds:
            os.close(fd)
        return None
    return DirectLane(socket.socket(fileno=fds[0]), float(call_timeout), on_hang)
