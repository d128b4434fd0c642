"""The sandbox service's wire (protocol 2): one tagged union, one decoder, versioned opens."""

from __future__ import annotations

import msgspec
import pytest

from envkernel_bus import Bus, sandboxwire
from envkernel_bus.subjects import sandbox_open_subject
from envkernel_sample import shop_env
from envkernel_schemas import ToolResult


def _every_message() -> list[sandboxwire.Message]:
    env = shop_env()
    return [
        sandboxwire.Open(env=env, seed=3, run="r", lifetime=9.0),
        sandboxwire.Call(tool="get_order", arguments={"order_id": "ord_0001"}),
        sandboxwire.Patch(rows=[{"table": "orders", "row": {"id": "x"}}]),
        sandboxwire.Snapshot(),
        sandboxwire.Restore(snapshot="s1"),
        sandboxwire.State(),
        sandboxwire.Close(),
        sandboxwire.Kill(),
        sandboxwire.Opened(sandbox="process-ab~cd", lane=["host", "/p", "t", 10.0]),
        sandboxwire.Snapshotted(snapshot="s1", lane=["h1"]),
        sandboxwire.Result(json=b'{"ok":true,"value":{"id":"ord_0001"}}\n'),
        sandboxwire.Value(value={"orders": [{"id": "x"}]}),
        sandboxwire.Failed(error="no sandbox x (closed or expired)"),
    ]


def test_every_message_round_trips_through_the_one_decoder_with_its_own_tag() -> None:
    msgs = _every_message()
    for msg in msgs:
        assert sandboxwire.dec.decode(sandboxwire.enc.encode(msg)) == msg
    tags = [msgspec.msgpack.decode(sandboxwire.enc.encode(m))["t"] for m in msgs]
    assert len(set(tags)) == len(tags) == 13
    # a result's JSON line travels byte for byte
    line = b'{"ok":false,"error":{"code":"unknown_tool","message":"no"}}\n'
    got = sandboxwire.dec.decode(sandboxwire.enc.encode(sandboxwire.Result(json=line)))
    assert isinstance(got, sandboxwire.Result) and got.json == line
    assert sandboxwire.result_dec.decode(got.json).error.code == "unknown_tool"  # type: ignore[union-attr]


def test_a_message_without_a_known_tag_does_not_decode() -> None:
    old_reply = msgspec.msgpack.encode({"ok": True, "value": "s1"})  # protocol 1's Reply
    with pytest.raises(msgspec.ValidationError):
        sandboxwire.dec.decode(old_reply)


async def test_the_service_answers_in_the_union_and_refuses_another_protocol(
    envkernel_nats: str,
) -> None:
    from envkernel.errors import SandboxError
    from envkernel.sandbox import SandboxService, open_sandbox
    from envkernel_kit.checks import process_runner

    service_bus, client = await Bus.connect(envkernel_nats), await Bus.connect(envkernel_nats)
    runner = process_runner()
    service = SandboxService(service_bus, "process", runner)
    await service.start()
    try:
        old = sandboxwire.Open(env=shop_env(), protocol=1)
        msg = await client.request_claimed(
            sandbox_open_subject("process"), sandboxwire.enc.encode(old), 15.0
        )
        refused = sandboxwire.dec.decode(msg.data)
        assert isinstance(refused, sandboxwire.Failed)
        assert "speaks sandbox wire 1 and this service 2" in refused.error

        sb = await open_sandbox(client, "process", shop_env())
        try:
            sb.lane = None  # over the bus, not the direct lane
            got = await sb.call("get_order", {"order_id": "ord_0001"})
            assert isinstance(got, ToolResult) and got.ok and got.value["id"] == "ord_0001"
            missing = await sb.call("no_such_tool", {})
            assert not missing.ok and missing.error is not None
            assert missing.error.code == "unknown_tool"
            snap = await sb.snapshot()
            before = await sb.state()
            await sb.call("cancel_order", {"order_id": "ord_0002"})
            assert await sb.state() != before
            await sb.restore(snap)
            assert await sb.state() == before
            with pytest.raises(SandboxError, match="restore failed") as err:
                await sb.restore("no-such-snapshot")
            assert err.value.code == "unknown_snapshot"  # the runner's code crosses the bus
        finally:
            await sb.close()
    finally:
        await service.stop()
        await runner.aclose()
        await client.close()
        await service_bus.close()
