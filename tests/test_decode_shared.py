"""Each event is decoded once per process however many of its readers live there (envkernel_bus.decode_shared)."""

from __future__ import annotations

import asyncio

from envkernel_bus import Bus, decode_shared
from envkernel_bus.shared import stats
from envkernel_schemas import DecodeError, RunStarted, decode, encode, event_id


async def test_a_second_reader_of_a_message_gets_the_first_readers_event(nats_server: str) -> None:
    """Two subscribers of the same stream message: the first decodes it, the second takes that very
    event (identical to decoding it); a third decodes again; other bytes under the same id are decoded."""
    bus = await Bus.connect(nats_server)
    try:
        got: list[object] = []
        done = asyncio.Event()

        async def on(msg: object) -> None:
            got.append(msg)
            if len(got) == 2:
                done.set()

        for _ in range(2):
            await bus.nc.subscribe("envk.ev.shared-run.run.started", cb=on)
        ev = RunStarted(run="shared-run", id=event_id("shared-run", "kernel", "started"), time=1.0, config={})
        await bus.publish_wait("envk.ev.shared-run.run.started", encode(ev), ev.id)
        await asyncio.wait_for(done.wait(), 10)
        before = dict(stats)
        first, second = (decode_shared(m) for m in got)
        assert first is second and first == decode(got[0].data) == ev  # type: ignore[attr-defined]
        assert stats["shared"] == before["shared"] + 1 and stats["decoded"] == before["decoded"] + 1
        third = decode_shared(got[0])  # taken once: a third reader decodes it itself
        assert third == first and third is not first

        class Forged:  # the same id over other bytes is never taken for the kept event
            headers = got[0].headers  # type: ignore[attr-defined]
            data = encode(RunStarted(run="shared-run", id=ev.id, time=2.0, config={}))

        decode_shared(got[0])
        assert decode_shared(Forged()).time == 2.0

        class Garbage:
            headers = None
            data = b"not an event"

        try:
            decode_shared(Garbage())
        except DecodeError:
            pass
        else:
            raise AssertionError("bytes that are not an event must raise DecodeError")
    finally:
        await bus.close()
