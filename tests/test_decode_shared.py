"""Each event is decoded once per process however many of its readers live there
(envkernel_bus.decode_shared)."""

from __future__ import annotations

import asyncio

from envkernel_bus import Bus, decode_shared
from envkernel_bus.shared import stats
from envkernel_schemas import DecodeError, RunStarted, decode, encode, event_id


async def test_a_second_reader_of_a_message_gets_the_first_readers_event(nats_server: str) -> None:
    """Two subscribers of the same stream message: the first decodes it, the second takes that very
    event (identical to decoding it); a third decodes again; other bytes under the same id are
    decoded."""
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
        ev = RunStarted(
            run="shared-run", id=event_id("shared-run", "kernel", "started"), time=1.0, config={}
        )
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


def test_an_event_encoded_here_is_taken_by_its_first_reader_here() -> None:
    """``encode_shared`` keeps the producer's event for the first reader of its message in this
    process (the coordinator reading what its workers emitted); that reader keeps it for a second
    one only when asked; with ``keep=False`` nothing is kept and the reader decodes the bytes."""
    from envkernel_bus import encode_shared
    from envkernel_bus.bus import MSG_ID

    ev = RunStarted(
        run="own-run", id=event_id("own-run", "kernel", "started"), time=1.0, config={"a": [1, 2]}
    )

    class Msg:
        def __init__(self, data: bytes, mid: str) -> None:
            self.data, self.headers = data, {MSG_ID: mid}

    before = dict(stats)
    data = encode_shared(ev)
    assert data == encode(ev) and stats["own"] == before["own"] + 1
    first = decode_shared(Msg(data, ev.id))
    assert first is ev and stats["decoded"] == before["decoded"]  # no decode: the producer's object
    second = decode_shared(Msg(data, ev.id))  # the first reader kept it for a second one
    assert second is ev and stats["decoded"] == before["decoded"]
    again = decode_shared(Msg(data, ev.id))  # taken twice: a third reader decodes
    assert again == ev and again is not ev and stats["decoded"] == before["decoded"] + 1
    encode_shared(ev)
    assert (
        decode_shared(Msg(data, ev.id), keep=False) is ev
    )  # a reader that keeps nothing for others
    assert decode_shared(Msg(data, ev.id)) is not ev
    standalone = encode_shared(ev, keep=False)
    assert decode_shared(Msg(standalone, ev.id)) is not ev


def test_a_real_run_emits_only_events_that_decode_to_themselves(envk) -> None:  # type: ignore[no-untyped-def]
    """Every event kept by its producer in a gated run with mutants and user turns is what decoding
    its bytes gives, and none is changed once encoded (``ENVKERNEL_SHARED_CHECK=1`` logs any that is
    not)."""
    from pathlib import Path

    import envkernel_openapi

    spec = Path(envkernel_openapi.__file__).parent / "corpus" / "travel.json"
    run = envk.run(
        "--plugins",
        "+users",
        "--set",
        "chains.tasks_per_env=25",
        run_id="own",
        source=f"openapi:{spec}",
        env={"ENVKERNEL_SHARED_CHECK": "1"},
        timeout=240,
    )
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    s = run.summary
    # the outcome-only gate rejects more of 25 proposed per env than the old reward did
    assert s["tasks"] >= 12 and s["gate_rollouts"] > 5 * s["tasks"] and s["failures"] == 0
    assert (
        "differs from what decoding" not in run.proc.stderr
        and "was changed after" not in run.proc.stderr
    )
