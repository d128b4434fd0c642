"""A connection to NATS with the envkernel stream, run-config bucket and object store."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import nats
import structlog
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy, RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import NotFoundError
from nats.js.kv import KeyValue
from nats.js.object_store import ObjectStore

from .subjects import EVENTS_PREFIX, OBJECTS_BUCKET, RUNS_BUCKET, STREAM

log = structlog.get_logger("envkernel.bus")

MSG_ID = "Nats-Msg-Id"
"""JetStream de-duplication header."""


class BusError(RuntimeError):
    """The bus could not be reached or set up."""


class Bus:
    """One NATS connection, its JetStream context and envkernel's stream, KV and object store."""

    def __init__(self, nc: Client, js: JetStreamContext, url: str) -> None:
        self.nc = nc
        self.js = js
        self.url = url
        self._kv: KeyValue | None = None
        self._objects: ObjectStore | None = None
        self._closed_callbacks: list[Callable[[], None]] = []

    def on_closed(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when the connection is closed for good (server gone, reconnects spent)."""
        self._closed_callbacks.append(callback)

    @classmethod
    async def connect(cls, url: str, *, name: str = "envkernel", setup: bool = True, timeout: float = 5.0) -> Bus:
        """Connect to ``url``; with ``setup`` create the stream, bucket and store if missing."""

        async def _err(exc: Exception) -> None:
            log.warning("nats error", error=f"{type(exc).__name__}: {exc}")

        closed_callbacks: list[Callable[[], None]] = []

        async def _closed() -> None:
            for cb in closed_callbacks:
                cb()

        try:
            nc = await nats.connect(
                url, name=name, connect_timeout=timeout, max_reconnect_attempts=3, reconnect_time_wait=0.5, error_cb=_err,
                allow_reconnect=True, pending_size=64 * 1024 * 1024, closed_cb=_closed,
            )
        except Exception as exc:  # nats raises several unrelated types here
            raise BusError(f"cannot connect to NATS at {url}: {exc}. Is the server running?") from None
        js = nc.jetstream(publish_async_max_pending=4000)
        bus = cls(nc, js, url)
        bus._closed_callbacks = closed_callbacks
        if setup:
            await bus.setup()
        return bus

    async def setup(self) -> None:
        """Create (or reuse) the events stream, the run-config bucket and the object store."""
        cfg = StreamConfig(
            name=STREAM,
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
                raise BusError(f"cannot create the JetStream stream {STREAM} at {self.url}: {exc}. Is JetStream enabled (-js)?") from None
        self._kv = await self.js.create_key_value(bucket=RUNS_BUCKET, history=1, storage=StorageType.FILE)
        self._objects = await self.js.create_object_store(OBJECTS_BUCKET, storage=StorageType.FILE)

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

    async def publish(self, subject: str, data: bytes, msg_id: str) -> asyncio.Future[Any]:
        """Publish into the stream without waiting; the future resolves on the PubAck."""
        return await self.js.publish_async(subject, data, headers={MSG_ID: msg_id})

    async def publish_wait(self, subject: str, data: bytes, msg_id: str) -> None:
        """Publish into the stream and wait for the PubAck."""
        fut = await self.publish(subject, data, msg_id)
        await fut

    async def pull(self, durable: str, filter_subject: str, *, ack_wait: float = 600.0, max_ack_pending: int = 20000) -> JetStreamContext.PullSubscription:
        """Bind (creating if needed) a durable pull consumer on the stream."""
        config = ConsumerConfig(
            durable_name=durable,
            filter_subject=filter_subject,
            ack_wait=ack_wait,
            max_ack_pending=max_ack_pending,
            max_deliver=5,
            deliver_policy=DeliverPolicy.ALL,
        )
        return await self.js.pull_subscribe(filter_subject, durable=durable, stream=STREAM, config=config)

    async def close(self) -> None:
        """Flush and close the connection."""
        if self.nc.is_closed:
            return
        try:
            await self.nc.drain()
        except Exception:  # noqa: BLE001 - closing anyway
            await self.nc.close()
