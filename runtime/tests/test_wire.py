"""The host's typed executor requests encode to exactly the JSON objects the executor reads, and
the real (stdlib-only) executor answers them."""

from __future__ import annotations

import subprocess
import sys

import msgspec

from envkernel_runtime import executor_path
from envkernel_runtime import wire as ew
from envkernel_sample import shop_env


def test_each_request_is_byte_for_byte_the_hand_written_object() -> None:
    env = shop_env()
    rows = [{"table": "orders", "row": {"id": "ord_9999"}}]
    pairs: list[tuple[ew.Request, dict[str, object]]] = [
        (
            ew.Load(env=env, seed=0, timeout=30.0),
            {"op": "load", "env": env, "seed": 0, "timeout": 30.0},
        ),
        (
            ew.Load(env=env, seed=7, timeout=5, clock="2026-01-15T09:00:00Z"),
            {"op": "load", "env": env, "seed": 7, "timeout": 5, "clock": "2026-01-15T09:00:00Z"},
        ),
        (
            ew.Call(tool="get_order", arguments={"order_id": "o"}, timeout=10.0),
            {"op": "call", "tool": "get_order", "arguments": {"order_id": "o"}, "timeout": 10.0},
        ),
        (ew.Snapshot(), {"op": "snapshot"}),
        (ew.Restore(snapshot="s1"), {"op": "restore", "snapshot": "s1"}),
        (ew.Dump(), {"op": "dump"}),
        (ew.Patch(rows=rows), {"op": "patch", "rows": rows}),
        (ew.Ping(), {"op": "ping"}),
        (ew.Close(), {"op": "close"}),
        (ew.Recycle(), {"op": "recycle"}),
    ]
    for typed, by_hand in pairs:
        assert ew.encode(typed) == msgspec.json.encode(by_hand)
    # the serving loop's byte-prefix checks hold: "op" comes first
    assert ew.encode(ew.Recycle()).startswith(b'{"op":"recycle"')


def test_the_real_executor_answers_the_typed_requests() -> None:
    requests = [
        ew.Ping(),
        ew.Load(env=shop_env(), seed=0, timeout=30.0),
        ew.Snapshot(),
        ew.Call(tool="get_order", arguments={"order_id": "ord_0001"}, timeout=10.0),
        ew.Call(tool="no_such_tool", arguments={}, timeout=10.0),
        ew.Restore(snapshot="s1"),
        ew.Dump(),
        ew.Close(),
    ]
    data = b"".join(ew.encode(r) + b"\n" for r in requests)
    out = subprocess.run(
        [sys.executable, executor_path()], input=data, capture_output=True, timeout=60, check=True
    ).stdout
    replies = [ew.reply_dec.decode(line) for line in out.splitlines()]
    assert len(replies) == len(requests)
    ping, load, snap, call, missing, restore, dump, close = replies
    assert ping.ok and ping.value["protocol"] == 2 and ping.value["loaded"] is False
    assert load.ok and snap.ok and snap.value == "s1" and snap.direct == 0
    assert call.ok and call.value["id"] == "ord_0001"
    assert not missing.ok and missing.error is not None and missing.error.code == "unknown_tool"
    assert restore.ok and close.ok
    assert dump.ok and {r["id"] for r in dump.value["orders"]} >= {"ord_0001"}
