"""The run coordinator: reads a run's events in order, runs the kernel stages, records the run,
and knows, causally, when it is finished.

Every event is expected to get a known number of handled reports (1 for a work or kernel event,
one per trainer for a broadcast). A handler publishes its children before its report, so in the
stream every child precedes its parent's report. The run is finished when every event seen has
all its reports: nothing sleeps, and nothing polls for quiet.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import structlog
from nats.aio.msg import Msg
from nats.js.api import DeliverPolicy

from envkernel_bus import Bus
from envkernel_bus.subjects import EVENTS_PREFIX
from envkernel_schemas import (
    DecodeError,
    EnvRequested,
    Event,
    Handled,
    RunEnding,
    RunStarted,
    decode,
    encode,
    event_id,
)

from .config import RunConfig, public
from .recorder import Recorder
from .routing import KERNEL_INPUTS, expected_handlers, subject_of
from .stages import KERNEL, Stages

log = structlog.get_logger("envkernel.run")


class Coordinator:
    """Coordinates one run on the bus."""

    def __init__(self, bus: Bus, config: RunConfig, recorder: Recorder, synthesizer_for: Callable[[str], str], on_event: Callable[[Event], None] | None = None) -> None:
        self.bus = bus
        self.config = config
        self.recorder = recorder
        self.synthesizer_for = synthesizer_for
        self.stages = Stages(config)
        self.on_event = on_event
        self.outstanding = 0
        self.seen: set[str] = set()
        self.handled: set[tuple[str, str]] = set()
        self._initial: set[str] = set()
        self._ending_id = ""
        self._ending_seen = False
        self.done = asyncio.Event()
        self._pubacks: list[asyncio.Future[Any]] = []
        self._sub: Any = None
        self.undecodable = 0
        self.fatal = ""

    async def start(self) -> None:
        """Subscribe to the run's events (from the start), then publish its first events."""
        self._sub = await self.bus.js.subscribe(
            f"{EVENTS_PREFIX}.{self.config.run_id}.>", cb=self._on_msg, ordered_consumer=True,
            deliver_policy=DeliverPolicy.ALL, pending_msgs_limit=1_000_000, pending_bytes_limit=1024 * 1024 * 1024,
        )
        run = self.config.run_id
        started = RunStarted(run=run, id=event_id(run, KERNEL, "started"), time=time.time(), config=public(self.config))
        first: list[tuple[Event, str | None]] = [(started, None)]
        index = 0
        for source in self.config.sources:
            kind, _, value = source.partition(":")
            synth = self.synthesizer_for(kind)
            for _ in range(max(1, self.config.envs)):
                ev = EnvRequested(run=run, id=event_id(run, KERNEL, f"env/{index}"), time=time.time(), source_kind=kind, source=value,
                                  index=index, seed=self.config.seed + index)
                first.append((ev, synth))
                index += 1
        self._initial = {e.id for e, _ in first}
        for ev, target in first:
            await self._publish(ev, target)

    async def _publish(self, ev: Event, target: str | None) -> None:
        self._pubacks.append(await self.bus.publish(subject_of(self.config, ev, target), encode(ev), ev.id))
        if len(self._pubacks) > 2000:
            await self._drain_pubacks()

    async def _drain_pubacks(self) -> None:
        acks, self._pubacks = self._pubacks, []
        for r in await asyncio.gather(*acks, return_exceptions=True):
            if isinstance(r, Exception):
                log.error("a kernel publish was not acknowledged", error=str(r))

    async def _on_msg(self, msg: Msg) -> None:
        try:
            ev = decode(msg.data)
        except DecodeError as exc:
            self.undecodable += 1
            log.error("dropping bytes that are not an envkernel event", subject=msg.subject, error=str(exc))
            return
        try:
            await self.handle(ev)
        except Exception as exc:  # a kernel bug: stop the run loudly, keep what was produced
            log.exception("the coordinator failed; stopping the run", kind=ev.kind, event=ev.id)
            self.fatal = f"coordinator failed on {ev.kind} {ev.id}: {type(exc).__name__}: {exc}"
            self.done.set()

    async def handle(self, ev: Event) -> None:
        """Account for one event of the run, in stream order."""
        if isinstance(ev, Handled):
            for eid in ev.events:
                key = (eid, ev.handler)
                if key not in self.handled:
                    self.handled.add(key)
                    self.outstanding -= 1
            self._check_done()
            return
        if ev.id in self.seen:
            return  # a duplicate publish: each output exactly once
        self.seen.add(ev.id)
        self.outstanding += expected_handlers(self.config, ev.kind)
        self.recorder.record(ev)
        if self.on_event:
            self.on_event(ev)
        if isinstance(ev, RunEnding):
            self._ending_seen = True
        if ev.kind in KERNEL_INPUTS:
            children = self.stages.handle(ev)
            for child, target in children:
                await self._publish(child, target)
            report = Handled(run=ev.run, id=event_id(ev.id, KERNEL, "handled"), parent=ev.id, time=time.time(), handler=KERNEL,
                             events=[ev.id], children=[len(children)])
            await self._publish(report, None)
        self._check_done()

    def _check_done(self) -> None:
        if self.outstanding > 0 or not self._initial <= self.seen:
            return
        if not self._ending_id:
            run = self.config.run_id
            ending = RunEnding(run=run, id=event_id(run, KERNEL, "ending"), time=time.time())
            self._ending_id = ending.id
            asyncio.get_running_loop().create_task(self._publish(ending, None))
        elif self._ending_seen:
            self.done.set()

    async def stop(self) -> None:
        """Unsubscribe and wait for the kernel's own publishes."""
        await self._drain_pubacks()
        if self._sub is not None:
            try:
                await self._sub.unsubscribe()
            except Exception:  # noqa: BLE001
                pass
