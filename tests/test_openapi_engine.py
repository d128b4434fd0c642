"""The resource-model engine, inside the real executor (in-process, then in a confined sandbox)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from envkernel_openapi import corpus_files, synthesize_file
from envkernel_runtime import executor
from envkernel_schemas import to_builtins


def shop() -> dict[str, Any]:
    env, _ = synthesize_file(next(f for f in corpus_files() if f.stem == "shop"))
    return to_builtins(env)


class Box:
    def __init__(self, env: dict[str, Any]) -> None:
        self.ex = executor.Executor()
        loaded = self.req({"op": "load", "env": env, "seed": 0})
        assert loaded["ok"], loaded
        self.loaded = loaded["value"]

    def req(self, r: dict[str, Any]) -> dict[str, Any]:
        return json.loads(self.ex.handle_line(json.dumps(r)))

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        return self.req({"op": "call", "tool": tool, "arguments": args})

    def state(self) -> dict[str, Any]:
        return self.req({"op": "dump"})["value"]


def test_loads_every_corpus_env() -> None:
    for f in corpus_files():
        env, _ = synthesize_file(f)
        box = Box(to_builtins(env))
        assert box.loaded["missing"] == [] and sorted(box.loaded["tools"]) == sorted(
            t.name for t in env.tools
        )
        state = box.state()
        assert all(len(state[t]) == len(rows) for t, rows in env.behaviour.model["seed"].items())


def test_crud_semantics_and_errors() -> None:
    box = Box(shop())
    seed = box.state()
    cus = seed["customers"][0]["id"]
    prd = seed["products"][0]["id"]
    made = box.call("create_order", customer_id=cus, product_id=prd, quantity=2)
    assert made["ok"] and made["value"]["status"] == "pending" and made["value"]["quantity"] == 2
    oid = made["value"]["id"]
    assert box.call("get_order", order_id=oid)["value"] == made["value"]
    assert box.call("update_order", order_id=oid, quantity=3)["value"]["quantity"] == 3
    page = box.call("list_orders", customer_id=cus, limit=100)["value"]
    assert oid in [o["id"] for o in page["data"]] and page["total"] == len(page["data"])
    cancelled = box.call("cancel_order", order_id=oid)["value"]
    assert cancelled["status"] == "cancelled" and cancelled["cancelled_at"]
    again = box.call("cancel_order", order_id=oid)
    assert again["error"]["code"] == "conflict" and "already cancelled" in again["error"]["message"]
    shipped = next(o["id"] for o in seed["orders"] if o["status"] == "shipped")
    refused = box.call("cancel_order", order_id=shipped)
    assert refused["error"]["code"] == "conflict" and "shipped" in refused["error"]["message"]
    assert box.call("get_order", order_id="ord_9999")["error"]["code"] == "not_found"
    assert (
        box.call("create_order", customer_id="nobody", product_id=prd, quantity=1)["error"]["code"]
        == "not_found"
    )
    bad = box.call("create_order", customer_id=cus, product_id=prd, quantity=0)
    assert (
        bad["error"]["code"] == "invalid"
        and "quantity must be at least 1" in bad["error"]["message"]
    )
    bad = box.call("create_order", customer_id=cus, product_id=prd, quantity=1, discount=5)
    assert (
        bad["error"]["code"] == "invalid"
        and "unexpected argument(s) 'discount'" in bad["error"]["message"]
    )
    dup = box.call("create_customer", name="Ann", email=seed["customers"][1]["email"])
    assert dup["error"]["code"] == "conflict"


def test_list_pagination_filters_sort_and_nested() -> None:
    box = Box(shop())
    seed = box.state()
    everything = box.call("list_orders", limit=100)["value"]["data"]
    pages, cursor = [], None
    while True:
        args = {"limit": 5} | ({"cursor": cursor} if cursor else {})
        v = box.call("list_orders", **args)["value"]
        pages += v["data"]
        cursor = v.get("next_cursor")
        if not cursor:
            break
    assert (
        [o["id"] for o in pages]
        == [o["id"] for o in everything]
        == [o["id"] for o in seed["orders"]]
    )
    pending = box.call("list_orders", status="pending", limit=100)["value"]["data"]
    assert pending and all(o["status"] == "pending" for o in pending)
    prices = [p["price"] for p in box.call("list_products", sort="-price", limit=100)["value"]]
    assert prices == sorted(prices, reverse=True)
    off = box.call("list_products", limit=3, offset=3)["value"]
    assert [p["id"] for p in off] == [p["id"] for p in seed["products"][3:6]]
    cus = seed["orders"][0]["customer_id"]
    mine = box.call("list_customer_orders", customer_id=cus)["value"]
    assert {o["id"] for o in mine} == {o["id"] for o in seed["orders"] if o["customer_id"] == cus}
    assert box.call("list_customer_orders", customer_id="cus_9999")["error"]["code"] == "not_found"


def test_failed_calls_change_nothing_and_replays_are_identical() -> None:
    a, b = Box(shop()), Box(shop())
    before = a.state()
    a.call("cancel_order", order_id="ord_9999")
    assert a.state() == before
    seed = before
    calls = [
        (
            "create_order",
            {
                "customer_id": seed["customers"][0]["id"],
                "product_id": seed["products"][1]["id"],
                "quantity": 1,
            },
        ),
        ("create_customer", {"name": "Zed Quinn", "email": "zed.quinn@example.com"}),
    ]
    for box in (a, b):
        for tool, args in calls:
            assert box.call(tool, **args)["ok"]
    assert a.state() == b.state()


def test_bad_models_fail_to_load_cleanly() -> None:
    env = shop()
    env["behaviour"]["model"]["resources"]["orders"]["fields"]['x"; DROP TABLE orders; --'] = {
        "type": "string"
    }
    ex = executor.Executor()
    res = json.loads(ex.handle_line(json.dumps({"op": "load", "env": env})))
    assert (
        res["error"]["code"] == "load_failed"
        and "not a valid identifier" in res["error"]["message"]
    )


def test_values_are_data_not_sql() -> None:
    box = Box(shop())
    evil = "Robert'); DROP TABLE customers; --"
    made = box.call("create_customer", name=evil, email="bobby@example.com")
    assert made["ok"] and made["value"]["name"] == evil
    assert any(c["name"] == evil for c in box.state()["customers"])
    found = box.call("list_customers", q="DROP TABLE", limit=100)["value"]
    assert [c["name"] for c in found] == [evil]


def test_model_env_in_a_confined_sandbox() -> None:
    """The engine loads beside the executor before confinement (Landlock, own uid when root)."""
    process = pytest.importorskip("envkernel_process")
    env, _ = synthesize_file(next(f for f in corpus_files() if f.stem == "clinic"))

    async def go() -> Any:
        runner = process.ProcessRunner()
        try:
            sb = await runner.open(env, 0)
            try:
                doctors = await sb.call("list_doctors", {})
                appt = (await sb.state())["appointments"][0]
                got = await sb.call("get_appointment", {"appointment_id": appt["id"]})
                return doctors, got, sb.confinement
            finally:
                await sb.close()
        finally:
            await runner.aclose()

    doctors, got, confinement = asyncio.run(go())
    assert doctors.ok and len(doctors.value) == 8
    assert got.ok and got.value["status"] in (
        "scheduled",
        "checked_in",
        "completed",
        "cancelled",
        "no_show",
    )
    assert isinstance(confinement, dict)
