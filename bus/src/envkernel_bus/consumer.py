"""The consume loop: batch pull -> handle concurrently -> async publish -> ack on PubAck.

Knows nothing of envkernel's events: a handler turns one message into outputs, and an optional
``finalize`` turns a batch of finished messages into bookkeeping outputs (published before the
acks). Many messages stay in flight at once, which is what throughput depends on. Every held message
gets an in-progress ack every third of ``ack_wait``, so ``ack_wait`` can be short: a dead
process's messages come back within it, while a long handler keeps its own.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import structlog
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError

from .bus import MAX_DELIVER, Bus, env_seconds

log = structlog.get_logger("envkernel.bus")


@dataclass(slots=True)
class Output:
    """One message to publish into the stream."""

    subject: str
    data: bytes
    msg_id: str


@dataclass(slots=True)
class Done:
    """A message whose outputs are published, waiting for its ack."""

    msg: Msg
    outputs: list[Output] = field(default_factory=list)
    token: Any = None


class Redeliver(Exception):
    """Raised by a handler to give a message back (nak) for redelivery, to this or another
    process."""

    def __init__(self, reason: str, delay: float = 1.0) -> None:
        super().__init__(reason)
        self.delay = delay


def last_delivery(msg: Msg) -> bool:
    """Whether this is JetStream's last delivery of ``msg`` (given back, it would never come
    again)."""
    try:
        return int(msg.metadata.num_delivered or 1) >= MAX_DELIVER
    except Exception:
        return True


Handler = Callable[[Msg], Awaitable[tuple[list[Output], Any]]]
"""Turn a message into (outputs, token); the token reaches ``finalize``."""
Finalize = Callable[[list[Done]], list[Output]]
"""Turn a batch of finished messages into bookkeeping outputs."""


class Consumer:
    """Serve one durable pull consumer until :meth:`stop`."""

    def __init__(
        self,
        bus: Bus,
        durable: str,
        filter_subject: str,
        handler: Handler,
        finalize: Finalize | None = None,
        *,
        batch: int = 256,
        max_inflight: int = 1024,
        fetch_timeout: float = 0.5,
        linger: float = 0.002,
        ack_wait: float | None = None,
    ) -> None:
        self.bus = bus
        self.durable = durable
        self.filter_subject = filter_subject
        self.handler = handler
        self.finalize = finalize
        self.batch = batch
        self.max_inflight = max_inflight
        self.fetch_timeout = fetch_timeout
        self.linger = linger
        self.ack_wait = ack_wait or env_seconds("ENVKERNEL_ACK_WAIT", 30)
        """Seconds before JetStream redelivers an unacked event (held ones get in-progress acks)."""
        self._held: dict[int, Msg] = {}
        self._inflight = 0
        self._room = asyncio.Event()
        self._done: list[Done] = []
        self._done_ready = asyncio.Event()
        self._stopping = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._psub: Any = None

    async def bind(self) -> None:
        """Create or bind the durable consumer (before :meth:`run`, so events are not missed)."""
        self._psub = await self.bus.pull(self.durable, self.filter_subject, ack_wait=self.ack_wait)

    async def run(self) -> None:
        """Pull and handle until stopped."""
        if self._psub is None:
            await self.bind()
        psub = self._psub
        assert psub is not None
        flusher = asyncio.create_task(self._flush_loop())
        beat = asyncio.create_task(self._heartbeat())
        try:
            while not self._stopping:
                room = self.max_inflight - self._inflight
                if room <= 0:
                    self._room.clear()
                    await self._room.wait()
                    continue
                try:
                    msgs = await psub.fetch(min(self.batch, room), timeout=self.fetch_timeout)
                except (TimeoutError, NatsTimeoutError):
                    continue
                except Exception as exc:  # connection trouble: say so, retry
                    if self._stopping or self.bus.nc.is_closed:
                        break
                    log.warning("fetch failed; retrying", consumer=self.durable, error=str(exc))
                    await asyncio.sleep(0.2)
                    continue
                for m in msgs:
                    self._inflight += 1
                    self._held[id(m)] = m
                    t = asyncio.create_task(self._handle(m))
                    self._tasks.add(t)
                    t.add_done_callback(self._tasks.discard)
        finally:
            flusher.cancel()
            beat.cancel()
            try:
                await psub.unsubscribe()
            except Exception:
                pass

    async def _heartbeat(self) -> None:
        """Tell JetStream that every held message is still being worked on (``+WPI``)."""
        while True:
            await asyncio.sleep(max(0.5, self.ack_wait / 3))
            for m in list(self._held.values()):
                try:
                    await m.in_progress()
                except Exception:
                    break

    async def _nak(self, m: Msg, delay: float) -> None:
        self._held.pop(id(m), None)
        try:
            await m.nak(delay=delay)
        except Exception:
            pass

    async def _handle(self, m: Msg) -> None:
        try:
            outputs, token = await self.handler(m)
            await self._publish(outputs)
        except Redeliver as exc:
            log.warning(
                "giving an event back for redelivery", consumer=self.durable, reason=str(exc)
            )
            self._inflight -= 1
            self._room.set()
            await self._nak(m, exc.delay)
            return
        except Exception as exc:
            # The handler owns failure boundaries; reaching here means the bus failed.
            log.error(
                "publishing outputs failed; the event will be redelivered",
                consumer=self.durable,
                error=str(exc),
            )
            self._inflight -= 1
            self._room.set()
            await self._nak(m, 1.0)
            return
        self._done.append(Done(m, outputs, token))
        self._done_ready.set()

    async def _publish(self, outputs: list[Output]) -> None:
        """Publish ``outputs`` and wait until every one is in the stream (its PubAck)."""
        if outputs:
            await self.bus.confirm(
                [
                    (
                        await self.bus.publish(o.subject, o.data, o.msg_id),
                        o.subject,
                        o.data,
                        o.msg_id,
                    )
                    for o in outputs
                ]
            )

    async def _flush_loop(self) -> None:
        while True:
            await self._done_ready.wait()
            if len(self._done) < self._inflight:
                await asyncio.sleep(
                    self.linger
                )  # let more finish: one report and one flush for many
            self._done_ready.clear()
            done, self._done = self._done, []
            if not done:
                continue
            try:
                await self._publish(self.finalize(done) if self.finalize else [])
                for d in done:
                    await d.msg.ack()
                    self._held.pop(id(d.msg), None)
            except Exception as exc:
                log.error(
                    "acking failed; events will be redelivered",
                    consumer=self.durable,
                    error=str(exc),
                )
                for d in done:
                    await self._nak(d.msg, 1.0)
            self._inflight -= len(done)
            self._room.set()

    async def stop(self, cancel: bool = False) -> None:
        """Stop pulling, and let in-flight messages finish (``cancel``: abandon them to
        redelivery)."""
        self._stopping = True
        self._room.set()
        if cancel:
            for t in self._tasks:
                t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if cancel:  # give abandoned messages back now, not after ack_wait
            for m in [m for m in self._held.values() if all(d.msg is not m for d in self._done)]:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._nak(m, 0.0), 2.0)
        # give the flusher a moment to ack what finished
        for _ in range(100):
            if not self._done:
                break
            await asyncio.sleep(0.01)
