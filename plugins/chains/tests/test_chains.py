"""Unit tests of the chains sampler: output elements, links, state diffs, phrasing, sampling."""

from __future__ import annotations

import asyncio
import json
import random
import re

import msgspec
import pytest
from envkernel_chains import Chains, ChainSampler, Settings, register_samplers, split_of, task_id
from envkernel_chains.links import distinguishing, extract_elements, link_param
from envkernel_chains.outcome import changed_tables, same_rows, state_outcome, strip
from envkernel_chains.phrasing import NOTHING_ANSWER, Phraser, Step, fact_ok, fact_text, head_phrase, render
from envkernel_probe.testing import SHOP_STATE, SHOP_TOOLS, FakeContext, toy_shop
from envkernel_schemas import Task, ToolCall

TABLES = list(SHOP_STATE)


def _tool(name: str):
    return next(t for t in SHOP_TOOLS if t.name == name)


# -- links ------------------------------------------------------------------------------------


def test_extract_elements_from_list_dict_and_wrappers() -> None:
    els = extract_elements(SHOP_STATE["orders"][:2], "list_orders", TABLES, 1)
    assert [e.noun for e in els] == ["order", "order"]
    assert els[0].group is not None and els[1].position == 1 and els[0].call == 1
    els = extract_elements(SHOP_STATE["customers"][0], "find_customer", TABLES, 0)
    assert len(els) == 1 and els[0].noun == "customer" and els[0].group is None and els[0].table == "customers"
    wrapped = {"count": 2, "results": SHOP_STATE["products"][:2]}
    els = extract_elements(wrapped, "list_products", TABLES, 0)
    assert [e.noun for e in els] == ["product", "product"]
    nested = {"id": 9, "status": "pending", "items": [{"product_id": 1, "quantity": 2}]}
    els = extract_elements(nested, "get_order", TABLES, 0)
    assert [e.noun for e in els] == ["order", "item"]
    assert els[1].parent is els[0]
    assert extract_elements(42, "count_orders", TABLES, 0) == []


def test_link_param_kinds() -> None:
    order = extract_elements(SHOP_STATE["orders"][0], "get_order", TABLES, 0)[0]
    link = link_param("order_id", "cancel_order", order, TABLES)
    assert link is not None and link.kind == "self" and link.value == 1 and link.entity == "order"
    link = link_param("product_id", "get_product", order, TABLES)
    assert link is not None and link.kind == "fk" and link.value == 1 and link.entity == "product"
    assert link_param("quantity", "update_order_quantity", order, TABLES) is None
    assert link_param("id", "get_order", order, TABLES).kind == "self"  # type: ignore[union-attr]
    assert link_param("id", "get_product", order, TABLES) is None
    cust = extract_elements(SHOP_STATE["customers"][0], "find_customer", TABLES, 0)[0]
    # a key links to another entity's tool, never back to a lookup of the same entity (a circle)
    assert link_param("email", "find_customer", cust, TABLES) is None
    link = link_param("email", "list_invoices", cust, TABLES)
    assert link is not None and link.kind == "key" and link.value == "ann@example.com" and link.entity == "customer"
    assert link_param("customer_id", "list_orders", cust, TABLES).value == 1  # type: ignore[union-attr]


def test_distinguishing_attributes() -> None:
    els = extract_elements(SHOP_STATE["orders"][:2], "list_orders", TABLES, 0)
    assert distinguishing(els[0]) == [("status", "pending")]
    prods = extract_elements(SHOP_STATE["products"], "list_products", TABLES, 0)
    assert distinguishing(prods[1]) == [("name", "Office Chair")]
    same = [{"id": 1, "status": "a"}, {"id": 2, "status": "a"}]
    assert distinguishing(extract_elements(same, "list_orders", TABLES, 0)[0]) is None
    one = extract_elements(SHOP_STATE["orders"][:1], "list_orders", TABLES, 0)[0]
    assert distinguishing(one) == []


# -- outcome ----------------------------------------------------------------------------------


def test_state_diff_ignores_generated_and_order() -> None:
    before = {"orders": [{"id": 1, "status": "pending", "created_at": "x"}], "products": [{"id": 1, "stock": 2}]}
    after = {"orders": [{"id": 2, "status": "pending", "created_at": "y"}], "products": [{"id": 1, "stock": 2.0}]}
    gen = {"orders": ["id", "created_at"]}
    assert changed_tables(before, after, gen) == []
    assert state_outcome(before, after, gen) is None
    after2 = {"orders": [{"id": 1, "status": "cancelled", "created_at": "x"}], "products": before["products"]}
    out = state_outcome(before, after2, gen)
    assert out is not None and out.mutates
    assert out.expected_state == {"orders": [{"status": "cancelled"}]}
    assert out.initial_state == {"orders": [{"status": "pending"}]}
    assert same_rows([{"a": 1, "b": 2}, {"a": 3}], [{"a": 3}, {"b": 2, "a": 1}])
    assert not same_rows([{"a": 1}], [{"a": 1}, {"a": 1}])
    assert strip([{"id": 1, "x": 2}], ["id"]) == [{"x": 2}]


# -- phrasing ---------------------------------------------------------------------------------


def _steps_find_list_cancel() -> list[Step]:
    cust = SHOP_STATE["customers"][0]
    orders = [o for o in SHOP_STATE["orders"] if o["customer_id"] == 1]
    s0 = Step(
        tool=_tool("find_customer"),
        verb="find",
        noun="customer",
        args={"email": "ann@example.com"},
        output=cust,
        elements=extract_elements(cust, "find_customer", TABLES, 0),
    )
    l1 = link_param("customer_id", "list_orders", s0.elements[0], TABLES)
    s1 = Step(
        tool=_tool("list_orders"),
        verb="list",
        noun="order",
        args={"customer_id": 1},
        links={"customer_id": l1},
        output=orders,
        elements=extract_elements(orders, "list_orders", TABLES, 1),
    )  # type: ignore[dict-item]
    l2 = link_param("order_id", "cancel_order", s1.elements[0], TABLES)
    cancelled = dict(orders[0], status="cancelled")
    s2 = Step(
        tool=_tool("cancel_order"),
        verb="cancel",
        noun="order",
        args={"order_id": 1},
        links={"order_id": l2},
        output=cancelled,
        elements=extract_elements(cancelled, "cancel_order", TABLES, 2),
    )  # type: ignore[dict-item]
    return [s0, s1, s2]


def test_phrasing_third_person_mentions_literals_but_no_intermediate_ids() -> None:
    steps = _steps_find_list_cancel()
    text, facts = Phraser(steps, random.Random(0), persona=False).request()  # type: ignore[misc]
    assert "ann@example.com" in text
    assert "pending order" in text and "cancel" in text
    assert "#1" not in text and "order_id" not in text and "cancel_order" not in text
    assert facts == []


def test_phrasing_persona() -> None:
    steps = _steps_find_list_cancel()
    assert Phraser.persona_possible(steps)
    text, _ = Phraser(steps, random.Random(1), persona=True).request()  # type: ignore[misc]
    assert "my email is ann@example.com" in text or "As a customer" in text
    assert "my pending order" in text


def test_phrasing_read_only_question_and_facts() -> None:
    prods = SHOP_STATE["products"]
    s0 = Step(
        tool=_tool("list_products"),
        verb="list",
        noun="product",
        args={},
        output=prods,
        elements=extract_elements(prods, "list_products", TABLES, 0),
    )
    link = link_param("product_id", "get_product", s0.elements[1], TABLES)
    s1 = Step(
        tool=_tool("get_product"),
        verb="get",
        noun="product",
        args={"product_id": 2},
        links={"product_id": link},
        output=prods[1],
        elements=extract_elements(prods[1], "get_product", TABLES, 1),
    )  # type: ignore[dict-item]
    for seed in range(10):
        text, facts = Phraser([s0, s1], random.Random(seed)).request()  # type: ignore[misc]
        assert 'the product "Office Chair"' in text
        assert facts and all(f.lower() not in text.lower() for f in facts)
        assert all(f in json.dumps(prods[1]) for f in facts)
        assert "#2" not in text


def test_phrasing_update_goal() -> None:
    order = SHOP_STATE["orders"][0]
    s = Step(
        tool=_tool("update_order_quantity"),
        verb="update",
        noun="order",
        args={"order_id": 1, "quantity": 3},
        output=order,
        elements=extract_elements(order, "update_order_quantity", TABLES, 0),
    )
    assert Phraser([s], random.Random(0)).goal(s) == "change the quantity of order #1 to 3"


def test_small_helpers() -> None:
    assert render("Desk Lamp") == '"Desk Lamp"' and render(2.5) == "2.5" and render("a@b.c") == "a@b.c"
    assert fact_text(149.0) == "149" and fact_text(29.5) == "29.5" and fact_text("x y") == "x y"
    assert fact_ok("gold") and not fact_ok("ab") and not fact_ok(True) and not fact_ok(7) and fact_ok(59.0)
    assert not fact_ok("2024-05-01T09:00:00Z") and not fact_ok('say "hi"')
    assert head_phrase("order", [("status", "pending"), ("total", 59.0)]) == "pending order with total 59.0"
    assert head_phrase("product", [("name", "Desk Lamp")]) == 'product "Desk Lamp"'


def test_ids_and_splits() -> None:
    calls = [ToolCall(name="get_order", arguments={"order_id": 1})]
    assert task_id("e", "get_order", calls) == task_id("e", "get_order", [ToolCall(name="get_order", arguments={"order_id": 1})])
    assert task_id("e", "get_order", calls) != task_id("e2", "get_order", calls)
    sigs = [f"a{i}>b{i}" for i in range(2000)]
    share = sum(split_of(s, 0.2) == "heldout" for s in sigs) / len(sigs)
    assert 0.15 < share < 0.25
    assert split_of("x", 0.0) == "train" and split_of("x", 1.0) == "heldout"


# -- sampling over the toy shop ----------------------------------------------------------------


def _sample(settings: Settings, seed: int = 0) -> tuple[list[Task], FakeContext]:
    env, factory = toy_shop()
    ctx = FakeContext(component="chains", seed=seed, sandboxes={env.id: factory})

    async def go() -> list[Task]:
        return [t async for t in Chains(settings).sample(env, ctx)]

    return asyncio.run(go()), ctx


def _replay(task: Task) -> tuple[list[object], dict]:
    _env, factory = toy_shop()
    sb = factory()

    async def go() -> tuple[list[object], dict]:
        outs = []
        for c in task.calls:
            r = await sb.call(c.name, c.arguments)
            assert r.ok, (task.signature, c, r)
            outs.append(r.value)
        return outs, await sb.state()

    return asyncio.run(go())


def test_sample_toy_shop() -> None:
    tasks, ctx = _sample(Settings(tasks_per_env=30, attempts=300))
    assert len(tasks) == 30
    assert ctx.opened and ctx.opened[0].closed
    assert len({t.id for t in tasks}) == 30
    assert len({(t.signature, json.dumps([c.arguments for c in t.calls], sort_keys=True)) for t in tasks}) == 30
    lengths = {len(t.calls) for t in tasks}
    assert lengths == {1, 2, 3}
    assert len({t.signature for t in tasks}) >= 15
    assert any(t.outcome.mutates for t in tasks) and any(not t.outcome.mutates for t in tasks)
    tool_names = [t.name for t in SHOP_TOOLS]
    gen = {"orders": ["id", "created_at"]}
    for t in tasks:
        assert t.env_id == "toyshop" and t.sampler == "chains" and t.signature == ">".join(c.name for c in t.calls)
        assert t.difficulty == pytest.approx(min(1.0, len(t.calls) / 6), abs=1e-4)
        assert t.split in ("train", "heldout")
        assert not any(re.search(rf"\b{n}\b", t.request) for n in tool_names)
        outs, final = _replay(t)
        assert outs == t.outputs  # deterministic replay
        if t.outcome.mutates:
            assert t.outcome.expected_state
            for table, rows in t.outcome.expected_state.items():
                assert same_rows(strip(final[table], gen.get(table, [])), rows)
                assert not same_rows(t.outcome.initial_state[table], rows)
                assert same_rows(strip(SHOP_STATE[table], gen.get(table, [])), t.outcome.initial_state[table])
        else:
            assert 1 <= len(t.outcome.answer_facts) <= 3
            last = json.dumps(t.outputs[-1], ensure_ascii=False, separators=(",", ":"))
            for f in t.outcome.answer_facts:
                assert f.lower() not in t.request.lower()
                assert f in last
                assert f.lower() not in NOTHING_ANSWER.lower()


def test_sample_is_deterministic_and_seed_dependent() -> None:
    a, _ = _sample(Settings(tasks_per_env=12, attempts=100), seed=3)
    b, _ = _sample(Settings(tasks_per_env=12, attempts=100), seed=3)
    c, _ = _sample(Settings(tasks_per_env=12, attempts=100), seed=4)
    assert [t.id for t in a] == [t.id for t in b]
    assert [t.request for t in a] == [t.request for t in b]
    assert [t.id for t in a] != [t.id for t in c]


def test_max_len_one() -> None:
    tasks, _ = _sample(Settings(tasks_per_env=8, max_len=1, attempts=80))
    assert tasks and all(len(t.calls) == 1 for t in tasks)


def test_graph_edges() -> None:
    env, factory = toy_shop()
    sb = factory()

    async def go() -> ChainSampler:
        seed = await sb.snapshot()
        cs = ChainSampler(env, Settings(), random.Random(0), await sb.state())
        await cs.explore(sb, seed)
        return cs

    cs = asyncio.run(go())
    g = cs.graph
    assert g.has_edge("find_customer", "list_orders") and g.has_edge("find_customer", "create_order")
    assert g.has_edge("list_orders", "cancel_order") and g.has_edge("list_orders", "get_product")
    assert g.has_edge("create_order", "update_order_quantity")
    assert not g.has_edge("list_products", "find_customer")
    assert all(len(w) == 2 for w in cs.walks(2)) and cs.walks(2)


def test_redundant_lookups_are_dropped() -> None:
    tasks, _ = _sample(Settings(tasks_per_env=30, attempts=300))
    for t in tasks:
        for a, b in zip(t.calls, t.calls[1:], strict=False):
            # get_x(x_id=N) then something(x_id=N): the lookup only echoed its own argument
            if a.name.startswith("get_"):
                for p, v in a.arguments.items():
                    assert b.arguments.get(p) != v, t.signature


def test_settings_and_registration() -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"task_per_env": 3}, Settings)
    got: dict[str, object] = {}
    register_samplers(lambda n, f: got.__setitem__(n, f))
    assert got == {"chains": Chains}
