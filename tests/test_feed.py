"""The self-healing feed: a consumer that lost its last messages (or vanished) is re-created from
the next sequence, and nothing is delivered twice."""

from __future__ import annotations

import asyncio

import nats

from envkernel_bus import Feed


async def _until(cond, seconds: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(seconds / 0.05)):
        if cond():
            return
        await asyncio.sleep(0.05)


async def test_a_feed_that_lost_its_consumer_goes_on_from_the_next_message(
    nats_server: str,
) -> None:
    nc = await nats.connect(nats_server)
    js = nc.jetstream()
    await js.add_stream(name="FEEDTEST", subjects=["feedtest.>"])
    got: list[bytes] = []

    async def cb(msg) -> None:  # type: ignore[no-untyped-def]
        got.append(msg.data)

    feed = Feed(js, "feedtest.>", "FEEDTEST", cb)
    await feed.start()
    for i in range(3):
        await js.publish("feedtest.a", f"m{i}".encode())
    await _until(lambda: len(got) == 3)
    assert got == [b"m0", b"m1", b"m2"]
    assert not await feed.heal()  # caught up: nothing to do
    # the server forgets the consumer (as a restart can), and two more messages are published
    await js.delete_consumer("FEEDTEST", (await feed._sub.consumer_info()).name)
    await js.publish("feedtest.a", b"m3")
    await js.publish("feedtest.b", b"m4")
    await asyncio.sleep(0.3)
    assert got == [b"m0", b"m1", b"m2"]  # lost: nobody delivers them
    assert await feed.heal() and feed.heals == 1
    await _until(lambda: len(got) == 5)
    assert got == [b"m0", b"m1", b"m2", b"m3", b"m4"]  # in order, none twice
    await feed.unsubscribe()
    await js.delete_stream("FEEDTEST")
    await nc.close()


async def test_an_object_read_that_stalls_is_asked_again_and_then_fails_clearly(
    nats_server: str,
) -> None:
    """nats-py reads an object's chunks with no timeout: with its chunks gone from the stream (as a
    lost last chunk leaves it) the read waits for ever. ``Bus.get_object`` bounds each try and says
    so."""
    from envkernel_bus import Bus, BusError

    bus = await Bus.connect(nats_server)
    try:
        await bus.objects.put("stall-test", b"x" * 300_000)  # three chunks
        assert await bus.get_object("stall-test") == b"x" * 300_000
        info = await bus.objects.get_info("stall-test")
        stream = f"OBJ_{info.bucket}"
        await bus.js.purge_stream(
            stream, subject=f"$O.{info.bucket}.C.{info.nuid}"
        )  # the chunks vanish, the info stays
        t0 = asyncio.get_running_loop().time()
        try:
            await bus.get_object("stall-test", timeout=0.5, attempts=2)
        except BusError as exc:
            assert "could not be read from the object store in 2 tries" in str(exc)
        else:
            raise AssertionError("a read with no chunks returned")
        assert asyncio.get_running_loop().time() - t0 < 5
    finally:
        await bus.close()
