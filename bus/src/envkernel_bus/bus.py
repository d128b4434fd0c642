"""A connection to NATS with the envkernel stream, run-config bucket and object store."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import ssl
import time
from collections.abc import Callable
from typing import Any

import nats
import structlog
from nats.aio.client import Client
from nats.errors import NoRespondersError
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy, RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import NotFoundError
from nats.js.kv import KeyValue
from nats.js.object_store import ObjectStore

from .subjects import EVENTS_PREFIX, OBJECTS_BUCKET, RUNS_BUCKET, STREAM

log = structlog.get_logger("envkernel.bus")

MSG_ID = "Nats-Msg-Id"
"""JetStream de-duplication header."""
MAX_DELIVER = 5
CLAIM_HEADER = "Envk-Claim"
"""Header of a :meth:`Bus.request_claimed` request: the inbox its taker names itself on."""
"""Deliveries JetStream makes of one event to the bus's durable consumers."""


async def _settle(futures: list[asyncio.Future[Any]], timeout: float) -> list[Any]:
    """Each future's result or exception (a ``TimeoutError`` for one not done within
    ``timeout``, which is cancelled), as ``gather(wait_for(f, timeout)...,
    return_exceptions=True)`` gives, without a task per future (that was ~10 % of routing)."""
    if not futures:
        return []
    _done, late = await asyncio.wait(futures, timeout=timeout)
    for f in late:
        f.cancel()
    out: list[Any] = []
    for f in futures:
        if f in late:
            out.append(TimeoutError())
        elif f.cancelled():
            out.append(asyncio.CancelledError())
        else:
            exc = f.exception()
            out.append(exc if exc is not None else f.result())
    return out


class BusError(RuntimeError):
    """The bus could not be reached or set up."""


class ResponderGone(BusError):
    """The process that took a request is gone: nothing answers its liveness subject any more."""


class StoreFullError(BusError):
    """JetStream refused a publish for lack of resources (its store or disk is full): the run cannot
    go on."""


def env_seconds(var: str, default: float) -> float:
    """A number of seconds (at least 1) from the environment variable ``var``; ValueError if it is
    not one."""
    raw = os.environ.get(var, str(default))
    try:
        return max(1.0, float(raw))
    except ValueError:
        raise ValueError(f"{var}={raw!r} is not a number of seconds") from None


def env_file(var: str) -> str:
    """The file that the environment variable ``var`` names ("" when unset); BusError if it is not a
    readable file."""
    path = os.environ.get(var, "")
    if path and not os.access(path, os.R_OK):
        raise BusError(f"{var}={path!r}: no such readable file. Point it at the file, or unset it")
    return path


def nkey_public(var: str = "ENVKERNEL_NATS_NKEY_SEED") -> str:
    """The public key of the nkey seed file ``var`` names ("" when unset); BusError if it is not an
    nkey seed."""
    path = env_file(var)
    if not path:
        return ""
    import nkeys  # type: ignore[import-untyped]  # nkeys ships no type information

    try:
        with open(path, "rb") as f:
            kp = nkeys.from_seed(bytearray(f.read().strip()))
    except Exception as exc:
        raise BusError(
            f"{var}={path!r} is not an nkey seed ({type(exc).__name__}): make one with `nk "
            "-gen user` or nkeys, and keep only the seed (SU...) in the file"
        ) from None
    public: str = kp.public_key.decode()
    kp.wipe()
    return public


def tls_context() -> ssl.SSLContext | None:
    """The client's TLS context when ``ENVKERNEL_NATS_TLS_CA`` names the CA that signed the server's
    certificate (with ``ENVKERNEL_NATS_TLS_CLIENT_CERT`` / ``_KEY``, the client's own certificate
    too); None otherwise."""
    ca, cert, key = (
        env_file(f"ENVKERNEL_NATS_TLS_{k}") for k in ("CA", "CLIENT_CERT", "CLIENT_KEY")
    )
    if not ca:
        return None
    try:
        ctx = ssl.create_default_context(cafile=ca)
        if cert:
            ctx.load_cert_chain(cert, key or None)
    except (ssl.SSLError, ValueError) as exc:
        raise BusError(
            "cannot load the TLS files "
            f"(ENVKERNEL_NATS_TLS_CA={ca!r}{f', CLIENT_CERT={cert!r}' if cert else ''}): "
            f"{exc}"
        ) from None
    return ctx


def credentials() -> dict[str, Any]:
    """NATS credentials and TLS from the environment only, so they are never in a file, an event or
    a log line: ``ENVKERNEL_NATS_NKEY_SEED`` (a file holding an nkey seed), else
    ``ENVKERNEL_NATS_TOKEN``, else ``ENVKERNEL_NATS_USER`` / ``ENVKERNEL_NATS_PASSWORD``; and
    :func:`tls_context`."""
    token, user, password = (
        os.environ.get(f"ENVKERNEL_NATS_{k}", "") for k in ("TOKEN", "USER", "PASSWORD")
    )
    out: dict[str, Any] = {}
    if nkey_public():  # checks the seed file, so a bad one is named here, not deep in the client
        out["nkeys_seed"] = os.environ["ENVKERNEL_NATS_NKEY_SEED"]
    elif token:
        out["token"] = token
    elif user:
        out.update(user=user, password=password)
    tls = tls_context()
    if tls is not None:
        out["tls"] = tls
    return out


def connect_hint(exc: BaseException) -> str:
    """What to do about a failed connect, from its cause (TLS, credentials, or no server)."""
    text = f"{type(exc).__name__}: {exc}".lower()
    if isinstance(exc, ssl.SSLCertVerificationError) or "certificate verify failed" in text:
        return (
            "the server's TLS certificate could not be verified: set ENVKERNEL_NATS_TLS_CA "
            "to the CA file that signed it (and connect by a name or address the certificate lists)"
        )
    if isinstance(exc, ssl.SSLError) or "tls" in text or "ssl" in text:
        return (
            "TLS failed: does the server use TLS (ENVKERNEL_NATS_TLS_CA on the client), and does "
            "it accept this client?"
        )
    if "authorization" in text or "authentication" in text:
        return (
            "the server refused the credentials: set the ones it expects "
            "(ENVKERNEL_NATS_NKEY_SEED, ENVKERNEL_NATS_TOKEN, or ENVKERNEL_NATS_USER and "
            "ENVKERNEL_NATS_PASSWORD)"
        )
    return "Is the server running at that address?"


SECRET = re.compile(r"(^|_)(api_?key|key|secret|token|password|passwd|credentials?)$", re.I)
"""Setting names whose values never leave the process (config.json, KV, events, logs)."""
REDACTED = "<redacted>"
"""What a secret's value becomes in stored configs; a component never receives it."""


def redact(value: Any) -> Any:
    """Copy of a settings tree with secret values removed (names matching :data:`SECRET`)."""
    if isinstance(value, dict):
        return {k: (REDACTED if SECRET.search(k) and v else redact(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def without_secrets(url: str) -> str:
    """``url`` with any ``user:password@`` part removed (for logs and files)."""
    scheme, sep, rest = url.rpartition("://")
    return f"{scheme}{sep}{rest.rpartition('@')[2]}" if "@" in rest else url


def store_full_message(exc: BaseException) -> str:
    """What to tell the user when JetStream's store is full."""
    return (
        f"JetStream refused a publish: its store is full ({type(exc).__name__}: {exc}). Free "
        "disk space where the server keeps its store (the run folder's nats/ for the "
        "embedded server), or raise its limits (max_file_store), then run again"
    )


def store_full(exc: BaseException) -> bool:
    """Whether a publish error is JetStream's ``insufficient resources`` (a full store or disk)."""
    err_code = getattr(exc, "err_code", None)
    return (
        err_code in (10047, 10023)
        or "insufficient resources" in str(exc).lower()
        or "insufficient storage" in str(exc).lower()
    )


class _Callbacks:
    """The NATS client's callbacks of one :class:`Bus`: before it exists they collect the errors of
    the first connect, after they tell it of errors, drops and returns."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.bus: Bus | None = None
        # errors of the first connect (the client reports them here, then says "no servers")
        self.early: list[Exception] = []
        self.tls_failed = asyncio.Event()

    async def error(self, exc: Exception) -> None:
        if self.bus is None:
            self.early.append(exc)
            if isinstance(exc, ssl.SSLError):
                self.tls_failed.set()  # the client would hang after a failed handshake: give up now
            return
        if store_full(exc):  # nats-py raises a PubAck's 503 here instead of failing its future
            self.bus.give_up(store_full_message(exc))
            return
        log.warning("nats error", error=f"{type(exc).__name__}: {exc}")

    async def closed(self) -> None:
        if self.bus is not None and not self.bus._closing:
            self.bus.give_up(f"the connection to NATS at {without_secrets(self.url)} was closed")

    async def disconnected(self) -> None:
        if self.bus is not None:
            self.bus._disconnected()

    async def reconnected(self) -> None:
        if self.bus is not None:
            self.bus._reconnected()

    async def open(self, name: str, timeout: float, creds: dict[str, Any]) -> Client:
        """The first connect: fails fast, naming the cause (a TLS handshake that failed, not the
        client's "no servers")."""
        url = self.url
        ping = env_seconds(
            "ENVKERNEL_NATS_PING_SECONDS", 20
        )  # two pings unanswered: the link is dead (a host cut off), reconnect elsewhere
        try:
            connecting = asyncio.ensure_future(
                nats.connect(
                    url.split(",") if "," in url else url,
                    name=name,
                    connect_timeout=timeout,
                    max_reconnect_attempts=3,
                    reconnect_time_wait=0.5,
                    error_cb=self.error,
                    allow_reconnect=True,
                    pending_size=64 * 1024 * 1024,
                    closed_cb=self.closed,
                    disconnected_cb=self.disconnected,
                    reconnected_cb=self.reconnected,
                    ping_interval=ping,
                    max_outstanding_pings=2,
                    **creds,
                )
            )
            failing = asyncio.ensure_future(self.tls_failed.wait())
            await asyncio.wait({connecting, failing}, return_when=asyncio.FIRST_COMPLETED)
            failing.cancel()
            if not connecting.done():
                connecting.cancel()
                raise self.early[-1]
            return connecting.result()
        except Exception as exc:  # nats raises several unrelated types here
            cause = next(
                (
                    e
                    for e in reversed(self.early)
                    if not isinstance(e, OSError) or isinstance(e, ssl.SSLError)
                ),
                exc,
            )
            raise BusError(
                f"cannot connect to NATS at {without_secrets(url)}: {type(cause).__name__}: "
                f"{cause}. {connect_hint(cause)}"
            ) from None


class Bus:
    """One NATS connection, its JetStream context and envkernel's stream, KV and object store."""

    def __init__(self, nc: Client, js: JetStreamContext, url: str) -> None:
        self.nc = nc
        self.js = js
        self.url = url
        self._kv: KeyValue | None = None
        self._objects: ObjectStore | None = None
        self._closed_callbacks: list[Callable[[], None]] = []
        self.lost = ""
        """Why the bus is gone for good (empty while it is usable)."""
        self.ack_timeout = 10.0
        """How long one PubAck may take before the message is sent again (same ``Nats-Msg-Id``)."""
        self._down_since: float | None = None
        self._lost_after = 60.0
        self._closing = False
        self._watch: asyncio.Task[None] | None = None
        self._closer: asyncio.Task[None] | None = None
        self.reconnects = 0
        """How often the connection came back (a request in flight across one may be lost)."""

    def on_closed(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once when the bus is gone for good: the connection closed, it was down
        past ``ENVKERNEL_BUS_LOST_SECONDS``, or JetStream's store is full. :attr:`lost` says why."""
        self._closed_callbacks.append(callback)

    def hurry(self, seconds: float) -> None:
        """Shutting down (a run stopped by a signal or a fault): from now on wait at most about
        ``seconds`` for the bus (a PubAck, a reconnect) instead of the whole lost-bus limit; a bus
        down longer than that is lost."""
        self.ack_timeout = min(self.ack_timeout, seconds)
        self._lost_after = min(self._lost_after, seconds)

    def give_up(self, reason: str) -> None:
        """Declare the bus lost (once): set :attr:`lost` and call the ``on_closed`` callbacks."""
        if self.lost:
            return
        self.lost = reason
        log.error("the bus is lost", reason=reason, nats=without_secrets(self.url))
        # close the connection: every later request fails at once instead of waiting for a server
        self._closing = True
        if not self.nc.is_closed:
            self._closer = asyncio.get_running_loop().create_task(self.nc.close())
        for cb in self._closed_callbacks:
            cb()

    def _disconnected(self) -> None:
        if self._down_since is None and not self._closing:
            self._down_since = time.monotonic()
            log.warning(
                "lost the connection to NATS; reconnecting",
                nats=without_secrets(self.url),
                gives_up_after=self._lost_after,
            )

    def _reconnected(self) -> None:
        self.reconnects += 1
        if self._down_since is not None:
            log.warning(
                "reconnected to NATS",
                nats=without_secrets(self.url),
                seconds=round(time.monotonic() - self._down_since, 2),
            )
        self._down_since = None

    async def _watch_down(self) -> None:
        while not self.lost:
            await asyncio.sleep(0.25)
            if (
                self._down_since is not None
                and time.monotonic() - self._down_since > self._lost_after
            ):
                self.give_up(
                    f"the NATS server at {without_secrets(self.url)} was unreachable for "
                    f"more than {self._lost_after:g} s "
                    "(ENVKERNEL_BUS_LOST_SECONDS)"
                )

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        name: str = "envkernel",
        setup: bool = True,
        timeout: float = 5.0,
        lost_after: float | None = None,
    ) -> Bus:
        """Connect to ``url``; with ``setup`` create the stream, bucket and store if missing.

        The client reconnects for as long as it takes; past ``ENVKERNEL_BUS_LOST_SECONDS`` of being
        unreachable (or ``lost_after``) the bus counts as lost (see :meth:`on_closed`). Credentials
        come from :func:`credentials` (or the URL). ``url`` may list a cluster's servers,
        comma-separated."""
        callbacks = _Callbacks(url)
        limit = lost_after or env_seconds(
            "ENVKERNEL_BUS_LOST_SECONDS", 60
        )  # how long the bus may be unreachable before it is lost
        creds = credentials()
        nc = await callbacks.open(name, timeout, creds)
        nc.options[
            "max_reconnect_attempts"
        ] = -1  # the first connect fails fast; once connected, reconnect for as long as it takes
        js = nc.jetstream(publish_async_max_pending=4000)
        bus = cls(nc, js, url)
        bus._lost_after = limit
        callbacks.bus = bus
        bus._watch = asyncio.get_running_loop().create_task(bus._watch_down())
        if setup:
            await bus.setup()
        return bus

    async def setup(self) -> None:
        """Create (or reuse) the events stream, the run-config bucket and the object store."""
        replicas = int(
            os.environ.get("ENVKERNEL_STREAM_REPLICAS", "1")
        )  # 3 on a 3-node cluster: the stream outlives a node
        cfg = StreamConfig(
            name=STREAM,
            num_replicas=replicas,
            subjects=[f"{EVENTS_PREFIX}.>"],
            storage=StorageType.FILE,
            retention=RetentionPolicy.LIMITS,
            duplicate_window=120.0,
            max_msg_size=8 * 1024 * 1024,
        )
        try:
            await self.js.stream_info(STREAM)
        except NotFoundError:
            try:
                await self.js.add_stream(cfg)
            except Exception as exc:
                raise BusError(
                    f"cannot create the JetStream stream {STREAM} at {self.url}: {exc}. Is "
                    "JetStream enabled (-js)?"
                ) from None
        self._kv = await self.js.create_key_value(
            bucket=RUNS_BUCKET, history=1, storage=StorageType.FILE, replicas=replicas
        )
        self._objects = await self.js.create_object_store(
            OBJECTS_BUCKET, storage=StorageType.FILE, replicas=replicas
        )

    @property
    def runs(self) -> KeyValue:
        """KV bucket of run configs."""
        assert self._kv is not None, "Bus.setup() not called"
        return self._kv

    @property
    def objects(self) -> ObjectStore:
        """Object store for large artifacts."""
        assert self._objects is not None, "Bus.setup() not called"
        return self._objects

    async def get_object(self, name: str, timeout: float = 20.0, attempts: int = 3) -> bytes:
        """The bytes of object ``name``, asked again when a read stalls: nats-py reads an object's
        chunks through an ordered consumer with no timeout, so a lost last chunk would leave it
        waiting for ever. A missing object raises the store's own ``ObjectNotFoundError``; stalled
        reads, :class:`BusError`."""
        for attempt in range(1, attempts + 1):
            try:
                res = await asyncio.wait_for(self.objects.get(name), timeout)
                return res.data or b""
            except TimeoutError:
                log.warning(
                    "an object-store read stalled; reading it again",
                    object=name,
                    attempt=attempt,
                    seconds=timeout,
                )
        raise BusError(
            f"object {name!r} could not be read from the object store in {attempts} tries of "
            f"{timeout:g} s"
        )

    async def publish(self, subject: str, data: bytes, msg_id: str) -> asyncio.Future[Any]:
        """Publish into the stream without waiting; the future resolves on the PubAck."""
        return await self.js.publish_async(subject, data, headers={MSG_ID: msg_id})

    async def publish_wait(self, subject: str, data: bytes, msg_id: str) -> None:
        """Publish into the stream and wait for the PubAck (see :meth:`confirm`)."""
        await self.confirm([(await self.publish(subject, data, msg_id), subject, data, msg_id)])

    async def confirm(self, pending: list[tuple[asyncio.Future[Any], str, bytes, str]]) -> None:
        """Wait for the PubAcks of ``(future, subject, data, msg_id)`` publishes. One that is not
        acknowledged within :attr:`ack_timeout` is sent again with the same ``Nats-Msg-Id`` (so it
        is in the stream once), while the bus is not lost. A full store raises
        :class:`StoreFullError` (and the bus is given up); a lost bus raises :class:`BusError`."""
        deadline = time.monotonic() + self._lost_after + self.ack_timeout
        while pending:
            if self.lost:
                raise BusError(f"{len(pending)} publishes not acknowledged: {self.lost}")
            results = await _settle([f for f, *_ in pending], self.ack_timeout)
            failed = []
            for (_, subject, data, msg_id), r in zip(pending, results, strict=True):
                if isinstance(r, asyncio.CancelledError):
                    raise r
                if isinstance(r, BaseException):
                    failed.append((subject, data, msg_id, r))
            pending = []
            for subject, data, msg_id, r in failed:
                if store_full(r):
                    self.give_up(store_full_message(r))
                    raise StoreFullError(store_full_message(r))
                if self.lost or time.monotonic() > deadline:
                    raise BusError(
                        f"publish to {subject} not acknowledged ({type(r).__name__}: "
                        f"{r}){': ' + self.lost if self.lost else ''}"
                    )
                log.warning(
                    "a publish was not acknowledged; sending it again",
                    subject=subject,
                    error=f"{type(r).__name__}: {r}",
                )
                await asyncio.sleep(0.2)
                try:
                    pending.append(
                        (await self.publish(subject, data, msg_id), subject, data, msg_id)
                    )
                except Exception as exc:
                    fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
                    fut.set_exception(exc)
                    pending.append((fut, subject, data, msg_id))

    async def serve_alive(self, subject: str) -> Any:
        """Answer pings on ``subject`` for as long as this connection lives (see
        :meth:`request_while_alive`)."""

        async def pong(msg: Any) -> None:
            await msg.respond(b"")

        return await self.nc.subscribe(subject, cb=pong)

    async def request_while_alive(
        self, subject: str, data: bytes, timeout: float, alive: str, every: float = 2.0
    ) -> Any:
        """A core request that waits up to ``timeout`` while its responder lives: every ``every``
        seconds it pings ``alive`` (which the responder's process answers, :meth:`serve_alive`),
        and raises :class:`ResponderGone` at once when nothing answers there (as after a kill -9),
        or when the connection dropped meanwhile (the request or its reply may be lost with the
        server). Without ``alive`` it is a plain request."""
        if not alive:
            return await self.nc.request(subject, data, timeout=timeout)
        # The request is awaited right here (no task of its own: this is every tool step's path);
        # a timer starts a liveness check every `every` seconds and cancels it when the responder is
        # gone.
        loop = asyncio.get_running_loop()
        me = asyncio.current_task()
        reconnects, gone = self.reconnects, [""]
        checks: list[asyncio.Task[None]] = []

        async def check() -> None:
            if self.reconnects != reconnects or self._down_since is not None:
                gone[0] = (
                    f"the connection to NATS dropped while {subject} was pending: the "
                    "request may be lost"
                )
            else:
                try:
                    await self.nc.request(alive, b"", timeout=every)
                except NoRespondersError:
                    gone[0] = f"the process serving {subject} is gone (nothing answers {alive})"
                except Exception:
                    pass
            if timer_done:
                return
            if gone[0] and me is not None:
                me.cancel()
            else:
                handle[0] = loop.call_later(every, start)

        def start() -> None:
            checks.append(asyncio.ensure_future(check()))

        timer_done = False
        handle = [loop.call_later(every, start)]
        try:
            return await self.nc.request(subject, data, timeout=timeout)
        except asyncio.CancelledError:
            if gone[0] and me is not None:
                me.uncancel()  # the cancel was ours
                raise ResponderGone(gone[0]) from None
            raise
        finally:
            timer_done = True
            handle[0].cancel()
            for t in checks:
                t.cancel()

    async def claim(self, msg: Any, alive: str) -> None:
        """Tell the client of a :meth:`request_claimed` request that this process took it (``alive``
        is the subject this process answers while it lives, :meth:`serve_alive`)."""
        to = (msg.headers or {}).get(CLAIM_HEADER)
        if to:
            await self.nc.publish(to, alive.encode())

    async def request_claimed(
        self, subject: str, data: bytes, timeout: float, every: float = 2.0, grace: float = 3.0
    ) -> Any:
        """A core request to a queue group whose taker says who it is (:meth:`claim`), so that it
        fails at once with :class:`ResponderGone` when the taker dies before it answers (a kill -9
        mid-open), instead of waiting out ``timeout``: once claimed, the taker's liveness subject is
        pinged every ``every`` s. "No responders" is asked again for up to ``grace`` s (a service
        starting, or re-subscribing after a reconnect); past that it is raised."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min(grace, timeout)
        while True:
            try:
                return await self._request_claimed(subject, data, timeout, every)
            except NoRespondersError:
                if loop.time() >= deadline:
                    raise
                log.debug("no responders yet; asking again", subject=subject)
                await asyncio.sleep(0.1)

    async def _request_claimed(
        self, subject: str, data: bytes, timeout: float, every: float
    ) -> Any:
        inbox, taker = self.nc.new_inbox(), asyncio.get_running_loop().create_future()

        async def on_claim(m: Any) -> None:
            if not taker.done():
                taker.set_result(m.data.decode())

        reconnects = self.reconnects
        sub = await self.nc.subscribe(inbox, cb=on_claim)
        reply = asyncio.ensure_future(
            self.nc.request(subject, data, timeout=timeout, headers={CLAIM_HEADER: inbox})
        )
        watch = asyncio.ensure_future(self._gone(subject, taker, every, reconnects))
        try:
            await asyncio.wait({reply, watch}, return_when=asyncio.FIRST_COMPLETED)
            if reply.done() or not watch.done():
                return await reply
            raise ResponderGone(watch.result())
        finally:
            for f in (reply, watch, taker):
                f.cancel()
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _gone(
        self, subject: str, taker: asyncio.Future[str], every: float, reconnects: int
    ) -> str:
        """Why the taker of ``subject`` is gone, once it is (it never returns while the taker
        lives), or why the request may be lost: the connection dropped since it was sent
        (``reconnects`` then), claimed or not."""
        dropped = (
            f"the connection to NATS dropped while {subject} was pending: the request may be lost"
        )
        while not taker.done():  # a claim lost in a reconnect would leave this waiting for ever
            await asyncio.wait({taker}, timeout=every)
            if not taker.done() and (self.reconnects != reconnects or self._down_since is not None):
                return dropped
        alive = taker.result()
        while True:
            await asyncio.sleep(every)
            if self.reconnects != reconnects or self._down_since is not None:
                return dropped
            try:
                await self.nc.request(alive, b"", timeout=every)
            except NoRespondersError:
                return f"the process that took {subject} is gone (nothing answers {alive})"
            except Exception:
                pass

    async def pull(
        self,
        durable: str,
        filter_subject: str,
        *,
        ack_wait: float = 600.0,
        max_ack_pending: int = 20000,
    ) -> JetStreamContext.PullSubscription:
        """Bind (creating if needed) a durable pull consumer on the stream."""
        config = ConsumerConfig(
            durable_name=durable,
            filter_subject=filter_subject,
            ack_wait=ack_wait,
            max_ack_pending=max_ack_pending,
            max_deliver=MAX_DELIVER,
            deliver_policy=DeliverPolicy.ALL,
        )
        return await self.js.pull_subscribe(
            filter_subject, durable=durable, stream=STREAM, config=config
        )

    async def close(self) -> None:
        """Flush and close the connection."""
        self._closing = True
        if self._watch is not None:
            self._watch.cancel()
        if self.nc.is_closed:
            return
        if self.lost or not self.nc.is_connected:
            await self.nc.close()
            return
        try:
            await self.nc.drain()
        except Exception:
            await self.nc.close()
