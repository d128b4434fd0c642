"""The sample synthesizer's shop environment, run for real in process sandboxes."""

from __future__ import annotations

import sys

import msgspec
import pytest
import pytest_asyncio

from envkernel_process import ProcessRunner, Settings
from envkernel_sample import SampleSynthesizer, register_synthesizers, shop_env
from envkernel_schemas import CodeBehaviour, EnvRequested, EnvSpec, to_json


@pytest_asyncio.fixture
async def runner():
    r = ProcessRunner(Settings(call_timeout=5))
    yield r
    await r.aclose()


def test_synthesize_returns_the_shop():
    env = SampleSynthesizer().synthesize(
        EnvRequested(run="r1", id="e1", source_kind="sample", seed=5), None
    )
    assert env.id == "shop-v1" and env.domain == "e-commerce"
    assert (
        isinstance(env.behaviour, CodeBehaviour) and "def create_order(env" in env.behaviour.source
    )
    assert "envkernel_sample.shop_env" not in sys.modules  # sent as text, never imported
    assert (
        env.provenance.plugin == "sample"
        and env.provenance.seed == 5
        and env.provenance.source_kind == "sample"
    )
    assert env.generated == {"orders": ["id", "created_at"]}
    names = {t.name for t in env.tools}
    assert len(names) >= 7
    assert {t.name for t in env.tools if t.mutates} == {
        "create_order",
        "cancel_order",
        "update_order_quantity",
    }
    for t in env.tools:
        assert t.description and t.parameters["type"] == "object"
        assert set(t.parameters.get("required", [])) <= set(t.parameters["properties"])
    assert msgspec.json.decode(to_json(env), type=EnvSpec) == env
    assert shop_env(seed=5) == env  # deterministic
    registered = []
    register_synthesizers(lambda name, factory: registered.append((name, factory)))
    assert registered == [("sample", SampleSynthesizer)] and SampleSynthesizer.sources == (
        "sample",
    )


async def ok(s, tool, **arguments):
    r = await s.call(tool, arguments)
    assert r.ok, (tool, arguments, r.error)
    return r.value


async def err(s, tool, **arguments):
    r = await s.call(tool, arguments)
    assert not r.ok, (tool, arguments, r.value)
    return r.error.code


@pytest.mark.asyncio
async def test_every_tool(runner):
    s = await runner.open(shop_env(), seed=0)
    seed_state = await s.state()
    assert {k: len(v) for k, v in seed_state.items()} == {
        "customers": 5,
        "products": 8,
        "orders": 8,
    }

    [alice] = await ok(s, "find_customer", email="ALICE.MARTIN@example.com")
    assert alice["id"] == "cus_0001" and await ok(s, "find_customer", name="chen") == [
        await ok(s, "get_customer", customer_id="cus_0003")
    ]
    assert await ok(s, "find_customer", name="nobody") == []
    lamps = await ok(s, "list_products", query="lamp")
    assert [p["name"] for p in lamps] == ["desk lamp"]
    assert len(await ok(s, "list_products", category="home office")) == 3
    assert "prd_0007" not in {p["id"] for p in await ok(s, "list_products", in_stock_only=True)}
    lamp = await ok(s, "get_product", product_id=lamps[0]["id"])
    assert lamp["stock"] == 12 and lamp["price_cents"] == 3499
    orders = await ok(s, "list_orders", customer_id=alice["id"])
    assert [o["id"] for o in orders] == ["ord_0001", "ord_0002"]
    assert [
        o["id"] for o in await ok(s, "list_orders", customer_id=alice["id"], status="pending")
    ] == ["ord_0002"]
    assert (await ok(s, "get_order", order_id="ord_0001"))["total_cents"] == 2 * 3499

    new = await ok(s, "create_order", customer_id=alice["id"], product_id=lamp["id"], quantity=3)
    assert new["status"] == "pending" and new["total_cents"] == 3 * 3499 and new["id"] == "ord_0009"
    assert new["created_at"] == "2026-01-15T09:00:00Z"
    assert (await ok(s, "get_product", product_id=lamp["id"]))["stock"] == 9
    changed = await ok(s, "update_order_quantity", order_id=new["id"], quantity=5)
    assert (
        changed["quantity"] == 5
        and (await ok(s, "get_product", product_id=lamp["id"]))["stock"] == 7
    )
    cancelled = await ok(s, "cancel_order", order_id=new["id"])
    assert (
        cancelled["status"] == "cancelled"
        and (await ok(s, "get_product", product_id=lamp["id"]))["stock"] == 12
    )
    second = await ok(s, "create_order", customer_id="cus_0002", product_id="prd_0003", quantity=1)
    assert second["id"] == "ord_0010" and second["created_at"] == "2026-01-15T09:00:01Z"


@pytest.mark.asyncio
async def test_errors_leave_the_state_unchanged(runner):
    s = await runner.open(shop_env(), seed=0)
    before = await s.state()
    cases = [
        ("not_found", "get_order", {"order_id": "ord_9999"}),
        ("not_found", "list_orders", {"customer_id": "cus_9999"}),
        (
            "not_found",
            "create_order",
            {"customer_id": "cus_0001", "product_id": "prd_9999", "quantity": 1},
        ),
        (
            "conflict",
            "create_order",
            {"customer_id": "cus_0001", "product_id": "prd_0007", "quantity": 1},
        ),
        (
            "conflict",
            "create_order",
            {"customer_id": "cus_0001", "product_id": "prd_0005", "quantity": 4},
        ),
        (
            "invalid",
            "create_order",
            {"customer_id": "cus_0001", "product_id": "prd_0001", "quantity": 0},
        ),
        (
            "invalid",
            "create_order",
            {"customer_id": "cus_0001", "product_id": "prd_0001", "quantity": "2"},
        ),
        ("conflict", "cancel_order", {"order_id": "ord_0001"}),  # shipped
        ("conflict", "cancel_order", {"order_id": "ord_0004"}),  # already cancelled
        (
            "conflict",
            "update_order_quantity",
            {"order_id": "ord_0003", "quantity": 10},
        ),  # 4 chairs in stock
        ("conflict", "update_order_quantity", {"order_id": "ord_0005", "quantity": 1}),  # shipped
        ("invalid", "list_orders", {"customer_id": "cus_0001", "status": "lost"}),
        ("invalid", "find_customer", {}),
        ("invalid_arguments", "get_order", {"id": "ord_0001"}),
        ("unknown_tool", "delete_everything", {}),
    ]
    for code, tool, arguments in cases:
        assert await err(s, tool, **arguments) == code, (tool, arguments)
    assert await s.state() == before
    # nothing was consumed by the failures: the first new order still gets the first free id
    assert (await ok(s, "create_order", customer_id="cus_0001", product_id="prd_0001", quantity=1))[
        "id"
    ] == "ord_0009"


@pytest.mark.asyncio
async def test_snapshot_restore(runner):
    s = await runner.open(shop_env(), seed=0)
    handle = await s.snapshot()
    before = await s.state()
    await ok(s, "create_order", customer_id="cus_0004", product_id="prd_0002", quantity=2)
    await ok(s, "cancel_order", order_id="ord_0007")
    assert await s.state() != before
    await s.restore(handle)
    assert await s.state() == before


CHAIN = [
    ("find_customer", {"name": "bruno"}),
    ("create_order", {"customer_id": "cus_0002", "product_id": "prd_0004", "quantity": 2}),
    ("update_order_quantity", {"order_id": "ord_0009", "quantity": 3}),
    ("cancel_order", {"order_id": "ord_0003"}),
    ("create_order", {"customer_id": "cus_0005", "product_id": "prd_0008", "quantity": 1}),
]


@pytest.mark.asyncio
async def test_replaying_a_chain_is_deterministic(runner):
    dumps, outputs = [], []
    for _ in range(2):
        s = await runner.open(shop_env(), seed=3)
        outputs.append([await ok(s, tool, **arguments) for tool, arguments in CHAIN])
        dumps.append(await s.state())
        await s.close()
    assert outputs[0] == outputs[1] and dumps[0] == dumps[1]
    assert [o["id"] for o in dumps[0]["orders"]][-2:] == ["ord_0009", "ord_0010"]
