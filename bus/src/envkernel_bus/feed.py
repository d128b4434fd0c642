"""An ordered feed of a run's events that heals itself after a server restart.

JetStream's ordered push consumers have no acknowledgements: a message in flight when the
connection drops is gone, and an ephemeral consumer can vanish with a restarted server. nats-py
notices a gap only when a later message arrives, so a feed whose *last* messages were lost waits
forever. :class:`Feed` remembers the stream sequence it last delivered and, when :meth:`heal` is
called on a feed that has gone quiet, asks the server whether anything is pending (or the consumer
is gone) and, if so, re-creates the consumer from the next sequence. Deliveries are in order and
never repeated.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy

LIMITS: dict[str, Any] = {
    "pending_msgs_limit": 1_000_000,
    "pending_bytes_limit": 1024 * 1024 * 1024,
}
"""Client-side buffers of a feed: a run's whole stream fits."""


class Feed:
    """An ordered consumer of ``subject`` on ``stream`` that calls ``cb`` once per message, in
    order."""

    def __init__(
        self, js: JetStreamContext, subject: str, stream: str, cb: Callable[[Msg], Awaitable[None]]
    ) -> None:
        self.js, self.subject, self.stream, self.cb = js, subject, stream, cb
        self.last = 0
        """The stream sequence of the last message delivered to ``cb``."""
        self.last_time = time.monotonic()
        """When the last message arrived (monotonic seconds)."""
        self.heals = 0
        """How many times the consumer was re-created."""
        self._sub: Any = None

    async def start(self) -> None:
        """Subscribe from the start of the stream."""
        self._sub = await self.js.subscribe(
            self.subject,
            cb=self._on,
            ordered_consumer=True,
            stream=self.stream,
            deliver_policy=DeliverPolicy.ALL,
            **LIMITS,
        )

    async def _on(self, msg: Msg) -> None:
        seq = msg.metadata.sequence.stream
        if seq <= self.last:
            return  # delivered already (by the consumer this one replaced)
        self.last, self.last_time = seq, time.monotonic()
        await self.cb(msg)

    async def heal(self, timeout: float = 5.0) -> bool:
        """Re-create the consumer from the next sequence if the server holds messages it has not
        delivered here (or the consumer is gone). True when it did."""
        try:
            info = await asyncio.wait_for(self._sub.consumer_info(), timeout)
            behind = info.num_pending > 0 or info.delivered.stream_seq > self.last
        except Exception:
            behind = True
        if not behind:
            return False
        old, self._sub = self._sub, None
        with contextlib.suppress(Exception):
            await old.unsubscribe()
        config = ConsumerConfig(
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=self.last + 1
        )
        self._sub = await self.js.subscribe(
            self.subject,
            cb=self._on,
            ordered_consumer=True,
            stream=self.stream,
            config=config,
            **LIMITS,
        )
        self.heals += 1
        return True

    async def unsubscribe(self) -> None:
        """Stop the feed."""
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
            self._sub = None
