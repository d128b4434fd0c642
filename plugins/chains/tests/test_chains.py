"""Unit tests of the chains sampler: elements and links, tool info, the tool graph, references,
state diffs, phrasing, and sampling over the toy shop (an in-memory code environment)."""

from __future__ import annotations

import asyncio
import json
import random
import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import msgspec
import networkx as nx
import pytest

from envkernel_chains import (
    Chains,
    ChainSampler,
    Settings,
    difficulty_of,
    register_samplers,
    split_of,
    task_id,
)
from envkernel_chains.graph import graph_json, graph_svg
from envkernel_chains.links import distinguishing, extract_elements, link_param
from envkernel_chains.outcome import changed_tables, same_rows, state_outcome, strip
from envkernel_chains.phrasing import (
    NOTHING_ANSWER,
    check_request,
    fact_ok,
    fact_text,
    field_words,
    render,
    skeleton,
)
from envkernel_chains.refs import Resolver, satisfies
from envkernel_kit.answers import answer_score, is_number
from envkernel_kit.testing import SHOP_STATE, SHOP_TOOLS, FakeContext, toy_shop
from envkernel_kit.tools import schema_of, tool_infos
from envkernel_schemas import Task, ToolCall

TABLES = list(SHOP_STATE)


# -- links ------------------------------------------------------------------------------------


def test_extract_elements_from_list_dict_and_wrappers() -> None:
    els = extract_elements(SHOP_STATE["orders"][:2], "list_orders", TABLES, 1)
    assert [e.noun for e in els] == ["order", "order"]
    assert els[0].group is not None and els[1].position == 1 and els[0].call == 1
    els = extract_elements(SHOP_STATE["customers"][0], "find_customer", TABLES, 0)
    assert (
        len(els) == 1
        and els[0].noun == "customer"
        and els[0].group is None
        and els[0].table == "customers"
    )
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
    cust = extract_elements(SHOP_STATE["customers"][0], "find_customer", TABLES, 0)[0]
    assert link_param("email", "find_customer", cust, TABLES) is None


def test_distinguishing_attributes() -> None:
    els = extract_elements(SHOP_STATE["orders"][:2], "list_orders", TABLES, 0)
    assert distinguishing(els[0]) == [("status", "pending")]
    one = extract_elements(SHOP_STATE["orders"][:1], "list_orders", TABLES, 0)[0]
    assert distinguishing(one) == []


# -- tool info and the graph --------------------------------------------------------------------


def _toy_infos():  # type: ignore[no-untyped-def]
    env, _ = toy_shop()
    schema = schema_of(env, SHOP_STATE)
    return env, schema, tool_infos(env, schema)


def test_tool_info_from_names() -> None:
    _env, schema, infos = _toy_infos()
    assert schema.key("orders") == "id" and schema.ref("orders", "customer_id") == "customers"
    cancel = infos["cancel_order"]
    assert cancel.kind == "action" and cancel.resource == "orders" and cancel.verb == "cancel"
    assert cancel.params["order_id"].role == "key"
    lo = infos["list_orders"]
    assert (
        lo.kind == "list"
        and lo.params["customer_id"].role == "ref"
        and lo.params["customer_id"].resource == "customers"
    )
    assert lo.params["status"].role == "filter"
    co = infos["create_order"]
    assert (
        co.kind == "create"
        and co.params["product_id"].role == "ref"
        and co.params["quantity"].role == "value"
    )
    assert infos["update_order_quantity"].kind == "update"
    assert infos["find_customer"].params["email"].role == "filter"


def test_tool_info_from_a_resource_model() -> None:
    from envkernel_openapi import corpus_files, synthesize_file

    env, _ = synthesize_file(next(f for f in corpus_files() if f.stem == "calendar"))
    seed = {t: rows for t, rows in env.behaviour.model["seed"].items()}  # type: ignore[union-attr]
    infos = tool_infos(env, schema_of(env, seed))
    ra = infos["remove_attendee"]
    assert ra.kind == "delete" and ra.resource == "attendees"
    assert (
        ra.params["attendee_id"].role == "key"
        and ra.params["event_id"].role == "ref"
        and ra.params["event_id"].parent
    )
    le = infos["list_events"]
    assert (
        le.params["time_min"].role == "filter"
        and le.params["time_min"].op == "gte"
        and le.params["order_by"].role == "sort"
    )
    assert infos["cancel_event"].transition == {
        "field": "status",
        "to": "cancelled",
        "from": ["confirmed", "tentative"],
    }


async def _explored(seed: int = 0) -> ChainSampler:
    env, factory = toy_shop()
    sb = factory()
    snap = await sb.snapshot()
    cs = ChainSampler(env, Settings(), random.Random(seed), await sb.state())
    await cs.explore(sb, snap)
    return cs


def test_graph_edges_and_depths() -> None:
    cs = asyncio.run(_explored())
    g = cs.graph
    assert (
        g.has_edge("find_customer", "list_orders")
        and "customer_id" in g.edges["find_customer", "list_orders"]["feeds"]
    )
    assert g.edges["list_orders", "cancel_order"]["feeds"]["order_id"][0]["link"] == "self"
    assert any(
        w["link"] == "fk" for w in g.edges["list_orders", "get_product"]["feeds"]["product_id"]
    )
    assert g.has_edge("create_order", "update_order_quantity")
    assert (
        "orders" in g.edges["create_order", "list_orders"]["state"]
    )  # writes state the other reads
    assert not g.has_edge("list_products", "find_customer")
    depth = nx.get_node_attributes(g, "depth")
    assert depth["find_customer"] == 0 and depth["list_products"] == 0
    assert depth["list_orders"] == 1 and depth["cancel_order"] == 2
    assert set(g.graph["lookupable"]) == {"customers", "orders", "products"}


def test_graph_files() -> None:
    cs = asyncio.run(_explored())
    data = graph_json(cs.graph)
    again = nx.node_link_graph(json.loads(json.dumps(data)), edges="links")
    assert (
        set(again.nodes) == set(cs.graph.nodes)
        and again.number_of_edges() == cs.graph.number_of_edges()
    )
    svg = graph_svg(cs.graph, "toy <shop>")
    root = ET.fromstring(svg)  # well-formed
    assert root.tag.endswith("svg") and "cancel_order" in svg and "toy &lt;shop&gt;" in svg


# -- references ---------------------------------------------------------------------------------


def test_references_resolve_to_exactly_one_seed_row() -> None:
    env, schema, _infos = _toy_infos()
    r = Resolver(SHOP_STATE, schema)
    orders = SHOP_STATE["orders"]
    ann = r.describe(
        "customers",
        "customer",
        1,
        [("email", "eq", "ann@example.com")],
        [],
        [SHOP_STATE["customers"][0]],
        SHOP_STATE["customers"][0],
        ["with email ann@example.com"],
        [],
        ["ann@example.com"],
    )
    assert ann is not None and ann.ok and ann.ids == frozenset({1})
    anns = [o for o in orders if o["customer_id"] == 1]
    # Ann has a pending and a shipped order: "Ann's pending order" is one row
    ref = r.describe("orders", "order", 1, [], [("customer_id", ann)], anns, anns[0], [], [], [])
    assert ref is not None and ref.ok and ref.adjectives == ["pending"] and ref.owner is ann
    # two orders that no attribute tells apart cannot be named
    twins = [dict(orders[0], id=8, total=1.0), dict(orders[0], id=9, total=1.0)]
    r2 = Resolver({**SHOP_STATE, "orders": twins}, schema)
    assert (
        r2.describe("orders", "order", 8, [], [], twins, twins[0], [], [], [], max_attrs=1) is None
    )
    # the product of Ann's pending order
    of = r.of(ref, "product_id", "products", 1)
    assert of.ok and of.ids == frozenset({1})
    assert not r.of(ref, "product_id", "products", 2).ok
    assert satisfies({"name": "Desk Lamp"}, (("name",), "search", "lamp"))
    assert satisfies({"price": 10}, ("price", "lte", 12)) and not satisfies(
        {"price": 10}, ("price", "gt", 12)
    )


# -- outcome ----------------------------------------------------------------------------------


def test_state_diff_ignores_generated_and_order() -> None:
    before = {
        "orders": [{"id": 1, "status": "pending", "created_at": "x"}],
        "products": [{"id": 1, "stock": 2}],
    }
    after = {
        "orders": [{"id": 2, "status": "pending", "created_at": "y"}],
        "products": [{"id": 1, "stock": 2.0}],
    }
    gen = {"orders": ["id", "created_at"]}
    assert changed_tables(before, after, gen) == []
    assert state_outcome(before, after, gen) is None
    after2 = {
        "orders": [{"id": 1, "status": "cancelled", "created_at": "x"}],
        "products": before["products"],
    }
    out = state_outcome(before, after2, gen)
    assert out is not None and out.mutates
    assert out.expected_state == {"orders": [{"status": "cancelled"}]}
    assert same_rows([{"a": 1, "b": 2}, {"a": 3}], [{"a": 3}, {"b": 2, "a": 1}])
    assert strip([{"id": 1, "x": 2}], ["id"]) == [{"x": 2}]


# -- phrasing helpers -----------------------------------------------------------------------------


def test_small_helpers() -> None:
    assert (
        render("Desk Lamp") == '"Desk Lamp"' and render(2.5) == "2.5" and render("a@b.c") == "a@b.c"
    )
    assert fact_text(149.0) == "149" and fact_text(29.5) == "29.5" and fact_text("x y") == "x y"
    assert (
        fact_ok("gold")
        and not fact_ok("ab")
        and not fact_ok(True)
        and not fact_ok(7)
        and fact_ok(59.0)
    )
    assert not fact_ok("2024-05-01T09:00:00Z") and not fact_ok('say "hi"')
    assert (
        field_words("starts_at") == "start time" and field_words("total_cents") == "total in cents"
    )
    assert (
        skeleton('Cancel the order "Desk Lamp" with quantity 2.', ["Desk Lamp"])
        == 'Cancel the order "\u2026" with quantity #.'
    )


def test_ids_and_splits() -> None:
    calls = [ToolCall(name="get_order", arguments={"order_id": 1})]
    assert task_id("e", "get_order", calls) == task_id(
        "e", "get_order", [ToolCall(name="get_order", arguments={"order_id": 1})]
    )
    assert task_id("e", "get_order", calls) != task_id("e2", "get_order", calls)
    sigs = [f"a{i}>b{i}" for i in range(2000)]
    share = sum(split_of(s, 0.2) == "heldout" for s in sigs) / len(sigs)
    assert 0.15 < share < 0.25
    assert split_of("x", 0.0) == "train" and split_of("x", 1.0) == "heldout"


# -- sampling over the toy shop ----------------------------------------------------------------


def _sample(
    settings: Settings, seed: int = 0, out_dir: Path | None = None
) -> tuple[list[Task], FakeContext]:
    env, factory = toy_shop()
    ctx = FakeContext(component="chains", seed=seed, sandboxes={env.id: factory}, out_dir=out_dir)

    async def go() -> list[Task]:
        return [t async for t in Chains(settings).sample(env, ctx)]

    return asyncio.run(go()), ctx


def _replay(task: Task) -> tuple[list[object], dict]:
    _env, factory = toy_shop()
    sb = factory()

    async def go() -> tuple[list[object], dict]:
        outs = []
        await sb.patch(
            task.seed_patch()
        )  # the task's initial state: the seed plus its planted rows
        for c in task.calls:
            r = await sb.call(c.name, c.arguments)
            assert r.ok, (task.signature, c, r)
            outs.append(r.value)
        return outs, await sb.state()

    return asyncio.run(go())


def test_sample_toy_shop(tmp_path: Path) -> None:
    # 50: without create-then-cancel chains the toy shop's one pending order takes longer to cover,
    # a list at the end has more questions to ask (counts, averages, differences...), and a final
    # read of a row a change or a list already returned is no task (``rereads_change``,
    # ``rereads_row``): the toy shop has about 51 tasks left in its 1,600 attempts
    tasks, ctx = _sample(Settings(tasks_per_env=50), out_dir=tmp_path)
    assert len(tasks) == 50
    assert len(ctx.opened) == 1 and ctx.opened[0].closed  # one sandbox for the whole environment
    assert len({t.id for t in tasks}) == 50

    def calls(t: Task) -> str:
        return t.signature + json.dumps([c.arguments for c in t.calls], sort_keys=True)

    changes = [calls(t) for t in tasks if t.outcome.mutates]
    assert len(set(changes)) == len(changes)  # a change is never emitted twice
    asked = Counter(
        calls(t) for t in tasks if not t.outcome.mutates
    )  # the same reads ask up to questions_per_chain questions
    assert max(asked.values()) <= Settings().questions_per_chain
    assert len({(calls(t), t.request) for t in tasks if not t.outcome.mutates}) == sum(
        asked.values()
    )
    lengths = {len(t.calls) for t in tasks}
    assert len(lengths) >= 4 and max(lengths) <= 6
    # 9 shapes: the chains that ended by re-reading a row already returned are no tasks now
    assert len({t.signature for t in tasks}) >= 8
    assert any(t.outcome.mutates for t in tasks) and any(not t.outcome.mutates for t in tasks)
    assert {c.name for t in tasks for c in t.calls} == {
        t.name for t in SHOP_TOOLS
    }  # every tool covered
    tool_names = [t.name for t in SHOP_TOOLS]
    for (
        t
    ) in tasks:  # one goal: never create an order and then cancel or edit it in the same request
        made = {
            out["id"] for c, out in zip(t.calls, t.outputs, strict=True) if c.name == "create_order"
        }
        assert not any(
            c.name in ("cancel_order", "update_order_quantity")
            and c.arguments.get("order_id") in made
            for c in t.calls
        )
        assert not re.search(r"\b(then|after that|finally)\b", t.request), t.request
    gen = {"orders": ["id", "created_at"]}
    for t in tasks:
        assert (
            t.env_id == "toyshop"
            and t.sampler == "chains"
            and t.signature == ">".join(c.name for c in t.calls)
        )
        assert 0.0 <= t.difficulty <= 1.0 and t.split in ("train", "heldout")
        assert not any(re.search(rf"\b{n}\b", t.request) for n in tool_names)
        assert "#" not in t.request  # no literal ids: every entity here can be looked up
        outs, final = _replay(t)
        assert outs == t.outputs  # grounded: the same calls give the same outputs
        if t.outcome.mutates:
            for table, rows in t.outcome.expected_state.items():
                assert same_rows(strip(final[table], gen.get(table, [])), rows)
                assert not same_rows(t.outcome.initial_state[table], rows)
        else:
            assert t.outcome.answer_facts
            last = json.dumps(t.outputs[-1], ensure_ascii=False, separators=(",", ":"))
            for f in (
                t.outcome.answer_facts
            ):  # a fact is in the result, or a number derived from it (a count, a total)
                assert (
                    f.lower() not in t.request.lower()
                    and (f in last or is_number(f))
                    and f.lower() not in NOTHING_ANSWER.lower()
                )
            if (
                t.outcome.answer_rows and len(t.outcome.answer_rows[0]) > 1
            ):  # "each X": every row, not the first three
                assert len(t.outcome.answer_rows) == len(t.outputs[-1])
            # the reference answer (in words) scores 1; without its last row, or stuffed with absent
            # values, it does not
            assert answer_score(t.outcome, t.outcome.answer)[0] == 1.0
            for v in t.outcome.answer_absent:
                assert answer_score(t.outcome, t.outcome.answer + " " + v)[0] == 0.0
    # difficulty grows with the chain
    by_len: dict[int, list[float]] = {}
    for t in tasks:
        by_len.setdefault(len(t.calls), []).append(t.difficulty)
    means = [sum(v) / len(v) for _k, v in sorted(by_len.items())]
    assert means == sorted(means)
    # the graph and the stats are in the run folder
    folder = tmp_path / "envs" / "toyshop"
    assert json.loads((folder / "graph.json").read_text())["nodes"]
    ET.fromstring((folder / "graph.svg").read_text())
    stats = json.loads((folder / "sampling.json").read_text())["chains"]
    assert (
        stats["tasks"] == 50
        and stats["tool_coverage"] == 1.0
        and sum(stats["chain_lengths"].values()) == 50
    )
    assert sum(stats["requests"].values()) == 50 and all(
        v >= 1 for v in stats["phrasings"].values()
    )


def test_requests_use_people_and_names_not_ids() -> None:
    tasks, _ = _sample(Settings(tasks_per_env=40, persona_share=1.0), seed=3)
    texts = [t.request for t in tasks]
    assert any("my email is" in x.lower() for x in texts)  # the person speaking
    assert any(
        re.search(r'the (\w+ )?product "[^"]+"', x) for x in texts
    )  # a row named by its name
    # a row the chain creates is "the new order" only in a later call, and a read of it right
    # after its create would show what the create returned (``rereads_change``): none here
    assert not any(
        t.calls[-1].name == "get_order" and t.calls[-2].name == "create_order"
        for t in tasks
        if len(t.calls) > 1
    )


def test_sample_is_deterministic_and_seed_dependent() -> None:
    a, _ = _sample(Settings(tasks_per_env=12), seed=3)
    b, _ = _sample(Settings(tasks_per_env=12), seed=3)
    c, _ = _sample(Settings(tasks_per_env=12), seed=4)
    assert [t.id for t in a] == [t.id for t in b]
    assert [t.request for t in a] == [t.request for t in b]
    assert [t.id for t in a] != [t.id for t in c]


def test_max_len_one() -> None:
    tasks, _ = _sample(Settings(tasks_per_env=8, max_len=1))
    assert tasks and all(len(t.calls) == 1 for t in tasks)


def test_redundant_lookups_are_dropped() -> None:
    tasks, _ = _sample(Settings(tasks_per_env=30))
    for t in tasks:
        for a, b in zip(t.calls, t.calls[1:], strict=False):
            # get_x(x_id=N) then something(x_id=N): the lookup only echoed its own argument
            if (
                a.name.startswith("get_")
                and b.name != a.name
                and not b.name.startswith(("cancel", "update"))
            ):
                for p, v in a.arguments.items():
                    assert b.arguments.get(p) != v, t.signature


def test_check_request_catches_ids_tool_names_and_missing_literals() -> None:
    from envkernel_chains.ground import Step

    _env, _schema, infos = _toy_infos()
    cancel = Step(index=0, info=infos["cancel_order"], args={"order_id": "ord_0003"})
    assert check_request("Please run cancel_order now", [cancel], ["cancel_order"]) == "names_tool"
    assert check_request("Cancel order ord_0003.", [cancel], ["cancel_order"]) == "raw_id"
    assert check_request("Cancel my order.", [cancel], ["cancel_order"]) is None
    lst = Step(index=0, info=infos["list_orders"], args={"customer_id": 1, "status": "pending"})
    assert check_request("Show my orders.", [lst], []) == "unphrased_argument"
    assert check_request("Show my pending orders.", [lst], []) is None


def test_difficulty_from_length_branching_and_writes() -> None:
    from envkernel_chains.ground import Link, Step

    _env, _schema, infos = _toy_infos()
    read = Step(index=0, info=infos["list_orders"], args={})
    assert difficulty_of([read]) == 0.0
    el = extract_elements(SHOP_STATE["orders"][0], "get_order", TABLES, 0)[0]
    two = Step(
        index=2,
        info=infos["create_order"],
        args={},
        links={
            "customer_id": Link(0, el, "fk", "customer_id", 1),
            "product_id": Link(1, el, "fk", "product_id", 1),
        },
    )
    three = [read, Step(index=1, info=infos["list_products"], args={}), two]
    assert difficulty_of(three) > difficulty_of(three[:2]) > 0


def test_settings_and_registration() -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"task_per_env": 3}, Settings)
    assert msgspec.convert({"tasks_per_env": 3, "max_len": 4}, Settings).max_len == 4
    got: dict[str, object] = {}
    register_samplers(lambda n, f: got.__setitem__(n, f))
    assert got == {"chains": Chains}


def test_a_phrase_never_names_a_row_that_another_row_holds_in_another_field() -> None:
    """The "Business Account" case: one account's holder name is another account's nickname, so
    "the account "Business Account"" could be read as either; the reference must use another
    attribute."""
    env, _ = toy_shop()
    customers = [
        {"id": 1, "name": "Business Account", "email": "a@example.com", "tier": "gold"},
        {
            "id": 2,
            "name": "Travel Fund",
            "email": "b@example.com",
            "tier": "silver",
            "nickname": "Business Account",
        },
    ]
    state = {**SHOP_STATE, "customers": customers}
    r = Resolver(state, schema_of(env, state))
    ref = r.describe("customers", "customer", 1, [], [], customers, customers[0], [], [], [])
    assert ref is not None and ref.ok
    assert ref.title != "Business Account" and "Business Account" not in ref.values
    # the other row's own name is read only as a name: it stays usable
    other = r.describe("customers", "customer", 2, [], [], customers, customers[1], [], [], [])
    assert other is not None and other.title == "Travel Fund"


def test_a_chain_the_sampler_would_drop_is_found_before_its_last_call() -> None:
    """The grounder asks ``GraphSampler.dropped`` before a chain's last call (and tries another row
    or value): no last call is made for a chain then dropped as a duplicate, a useless or repeated
    call, an undo or a plain create past the quota, and the tasks are the good ones still."""
    early: list[str] = []
    late: list[str] = []

    class Watched(ChainSampler):
        def dropped(self, steps):  # type: ignore[no-untyped-def]
            why = super().dropped(steps)
            if why:  # a step not yet called has neither output nor elements
                (late if steps[-1].output is not None or steps[-1].elements else early).append(why)
            return why

    class WatchedChains(Chains):
        sampler_class = Watched

    env, factory = toy_shop()
    ctx = FakeContext(component="chains", seed=1, sandboxes={env.id: factory})

    async def go() -> list[Task]:
        return [
            t
            async for t in WatchedChains(Settings(tasks_per_env=50, plain_create_share=0.2)).sample(
                env, ctx
            )
        ]

    tasks = asyncio.run(go())
    assert len(tasks) == 50 and len({t.id for t in tasks}) == 50
    assert early and not late, (Counter(early), Counter(late))
    assert {"duplicate", "redundant_step", "repeated_call", "undoes_change"} <= set(early)
