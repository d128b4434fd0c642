"""The optional LLM refiner (``chains.refine_*``, :mod:`envkernel_kit.refine`): a scripted
OpenAI-compatible server returns good, leaky and wrong rewrites; only the good ones are kept, the
others keep the original request, every task is still gated, and the counts say which is which."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import msgspec
import pytest

from envkernel_kit.policy import CONFIRMED
from envkernel_kit.refine import check_rewrite, must_keep, must_not_show
from envkernel_kit.scripted import ScriptedServer, completion

TOOLS = re.compile(r"\b(cancel_order|get_customer)\b")


def test_check_rewrite_keeps_facts_and_refuses_leaks() -> None:
    req = 'I\'m Ann Lee. Cancel my pending order of the "Desk Lamp" with quantity 2.'
    keep = must_keep(req, ["Desk Lamp", 2, "pending"], ["Ann Lee"])
    assert keep == ["Desk Lamp", "2", "pending", "Ann Lee"]
    forbid = must_not_show(["gold"], ["Only the ones over 100."], ["ord_0001"], req)
    good = check_rewrite(
        req,
        'Ann Lee here: that pending "Desk Lamp" order with quantity 2, please cancel it, '
        "plans changed.",
        keep=keep,
        forbid=forbid,
        tool_pattern=TOOLS,
    )
    assert good.ok and good.verdict == "refined"
    cases = {
        "names_tool": f"{req} Use cancel_order.",
        # the quoted product and the quantity are gone
        "lost_fact": "Ann Lee here, please cancel my pending lamp order.",
        "added_fact": 'Ann Lee here: cancel my pending "Desk Lamp" order with quantity 2 or 3.',
        "leaks": f"{req} It is order ord_0001.",
        "unchanged": req,
        "empty": "",
    }
    for verdict, text in cases.items():
        r = check_rewrite(req, text, keep=keep, forbid=forbid, tool_pattern=TOOLS)
        assert not r.ok and r.verdict == verdict and r.text == req, (verdict, r)


def _rewrites(request: dict[str, Any], n: int) -> Any:
    """Good, leaky (names a tool) and wrong (drops every fact) rewrites, in turn."""
    original = request["messages"][-1]["content"]
    return completion(
        [
            f"Hi there! {original} Thanks so much.",
            f"{original} (use the list_orders tool)",
            "Please sort out my account.",
        ][n % 3]
    )


def test_a_run_keeps_good_rewrites_and_regates_them(envk) -> None:  # type: ignore[no-untyped-def]
    with ScriptedServer(_rewrites) as server:
        run = envk.run(
            "--set",
            f"chains.refine_base_url={server.base_url}",
            "--set",
            "chains.refine_model=refiner",
            "--set",
            "chains.tasks_per_env=12",
            run_id="refine",
            source="sample",
        )
        asked = len(server.requests)
        prompt = server.requests[0]["messages"][0]["content"]
    s = run.summary
    assert s["exit_code"] == 0 and s["failures"] == 0, run.proc.stderr[-3000:]
    assert "Keep every name, every quoted" in prompt and asked == s["tasks_proposed"] == 12
    stats = json.loads((run.dir / "envs" / "shop-v1" / "sampling.json").read_text())["chains"][
        "refiner"
    ]
    assert stats["refined"] == 4 and stats["names_tool"] == 4 and stats["lost_fact"] == 4
    tasks = run.jsonl("tasks.jsonl")
    refined = [t for t in tasks if t["original_request"]]
    assert s["tasks_refined"] == len(refined) and 4 - s["tasks_rejected"] <= len(refined) <= 4
    for t in refined:  # a kept rewrite went through the gate like any task
        assert t["request"] == f"Hi there! {t['original_request']} Thanks so much."
    for t in tasks:
        assert "list_orders" not in t["request"] and t["request"] != "Please sort out my account."


# -- entity phrases re-resolved (``ambiguous_entity``)
# ------------------------------------------------

SEED = {
    "customers": [{"id": "cus_1", "name": "Julia Verschuere"}, {"id": "cus_2", "name": "Ann Lee"}],
    "bookings": [
        {"id": "bk_1", "customer_id": "cus_1", "status": "confirmed", "nights": 2},
        {"id": "bk_2", "customer_id": "cus_1", "status": "held", "nights": 2},
        {"id": "bk_3", "customer_id": "cus_2", "status": "confirmed", "nights": 5},
    ],
}


def _held_booking() -> tuple[list[Any], Any]:
    """The reference the sampler builds for "Julia Verschuere's held booking" (the row a cancel acts
    on), and the schema."""
    from envkernel_chains.refs import Resolver
    from envkernel_kit.tools import Schema

    schema = Schema(
        tables=["customers", "bookings"],
        keys={"customers": "id", "bookings": "id"},
        refs={"bookings": {"customer_id": "customers"}},
    )
    res = Resolver(SEED, schema)
    julia = res.describe(
        "customers",
        "customer",
        "cus_1",
        [],
        [],
        SEED["customers"],
        SEED["customers"][0],
        [],
        [],
        [],
    )
    assert julia is not None and julia.title == "Julia Verschuere"
    mine = [b for b in SEED["bookings"] if b["customer_id"] == "cus_1"]
    booking = res.describe(
        "bookings", "booking", "bk_2", [], [("customer_id", julia)], mine, mine[1], [], [], []
    )
    assert booking is not None and booking.adjectives == [
        "held"
    ]  # the status is what tells it from bk_1
    return [booking], schema


def test_a_rewrite_that_drops_the_disambiguating_attribute_is_rejected() -> None:
    from envkernel_chains.recheck import entities
    from envkernel_kit.refine import Refiner
    from envkernel_schemas import Outcome, PlantedRow, Task

    refs, schema = _held_booking()
    req = "Please cancel Julia Verschuere's held booking."
    replies = [
        "Could you cancel Julia Verschuere's booking? Plans changed.",  # two of her bookings fit
        "Julia Verschuere here's held booking needs cancelling, plans changed.",  # still only bk_2
        # the owner dropped: only bk_2 is held in the seed
        "Plans changed: please cancel the held booking.",
        "Plans changed: please cancel the held booking.",
    ]  # ... but a planted held booking fits too
    task = Task(id="t", env_id="e", request=req, calls=[], outcome=Outcome(mutates=True))
    planted = msgspec.structs.replace(
        task,
        planted=[
            PlantedRow(
                table="bookings",
                key="id",
                twin="bk_2",
                differs=["customer_id"],
                row={"id": "bk_9", "customer_id": "cus_2", "status": "held", "nights": 2},
            )
        ],
    )

    async def go() -> list[Any]:
        with ScriptedServer(lambda body, n: completion(replies[n])) as server:
            ref = Refiner(base_url=server.base_url, model="refiner", max_retries=0)
            try:
                return [
                    await ref.refine(
                        req,
                        keep=["Julia Verschuere"] if i < 2 else [],
                        forbid=[],
                        entities=entities(refs, SEED, t, schema),
                    )
                    for i, t in enumerate([task, task, task, planted])
                ]
            finally:
                await ref.aclose()

    dropped, kept, seed_only, with_planted = asyncio.run(go())
    assert (dropped.ok, dropped.verdict, dropped.text) == (False, "ambiguous_entity", req), dropped
    assert "without held matches 2 rows" in dropped.detail
    assert kept.ok and kept.verdict == "refined" and kept.text == replies[1]
    assert seed_only.ok, seed_only  # "the held booking" still picks bk_2 alone in the seed
    assert (with_planted.ok, with_planted.verdict) == (False, "ambiguous_entity"), with_planted
    assert "matches 2 rows" in with_planted.detail


STATUSES = re.compile(r"\b(pending|confirmed|shipped|delivered|cancelled) ")


def test_the_sampler_rejects_rewrites_whose_entity_no_longer_resolves(tmp_path: Any) -> None:
    """In-process sampling of the shipped shop (with planted near-duplicates): every other rewrite
    drops each order status word; those whose order needed it are refused (``ambiguous_entity`` or
    ``lost_fact``) and keep the original, the others (and every faithful rewrite) are kept and
    counted."""
    from envkernel_chains import Chains, ChainsSettings
    from envkernel_kit.testing import RunnerContext
    from envkernel_openapi import corpus_files, synthesize_file

    process = pytest.importorskip("envkernel_process")
    env = next(synthesize_file(f)[0] for f in corpus_files() if f.stem == "shop")

    def reply(body: dict[str, Any], n: int) -> Any:
        original = body["messages"][-1]["content"]
        return completion(
            f"Hi there! {original} Thanks." if n % 2 == 0 else "Hey! " + STATUSES.sub("", original)
        )

    async def sample(base_url: str) -> list[Any]:
        runner = process.ProcessRunner()
        try:
            ctx = RunnerContext(runner, component="chains", out_dir=tmp_path)
            # the question shapes over a list's rows of before the aggregates (counts over a
            # threshold, averages...) were
            # added: this test is about changes naming a row by its status, and a list question
            # names none
            settings = ChainsSettings(
                tasks_per_env=40,
                distractor_share=1.0,
                refine_base_url=base_url,
                refine_model="refiner",
                question_shapes=[
                    "count",
                    "total",
                    "each",
                    "sorted",
                    "superlative",
                    "condition",
                    "which",
                ],
            )
            return [t async for t in Chains(settings).sample(env, ctx)]
        finally:
            await runner.aclose()

    with ScriptedServer(reply) as server:
        tasks = asyncio.run(sample(server.base_url))
        asked = [r["messages"][-1]["content"] for r in server.requests]
    stats = json.loads((tmp_path / "envs" / "shop" / "sampling.json").read_text())["chains"][
        "refiner"
    ]
    assert len(asked) == len(tasks) == 40 and sum(stats.values()) == 40, stats
    # every rewrite that dropped a status word the request needed keeps the original. Since the
    # sampler's round-5
    # changes (tasks5), the status words this sample drops are also kept facts, so the fact check
    # refuses them before
    # the entity check does (``lost_fact``); the entity re-resolution itself is tested above, on the
    # same shop.
    assert (
        stats.get("ambiguous_entity", 0) + stats.get("lost_fact", 0) >= 1 and stats["refined"] >= 20
    ), stats
    dropping = [i for i, t in enumerate(tasks) if i % 2 and STATUSES.search(asked[i])]
    kept_back = [i for i in dropping if not tasks[i].original_request]
    assert len(kept_back) == stats.get("ambiguous_entity", 0) + stats.get("lost_fact", 0), (
        stats,
        kept_back,
    )
    for i, t in enumerate(tasks):
        # a confirmation the domain policy adds ("Yes, I'm sure: ...") comes after the rewrite
        assert (t.original_request or t.request).removesuffix(" " + CONFIRMED) == asked[i]
        if i not in kept_back:  # a faithful rewrite, or a dropped status nothing needed
            assert t.original_request == asked[i] and t.request != asked[i]
        else:
            assert t.request.removesuffix(" " + CONFIRMED) == asked[i]


def test_what_the_entity_check_cannot_read_is_taken_leniently() -> None:
    from envkernel_kit.refine import Clue, Entity, ambiguous, says

    assert (
        says("with quantity 2.0 please", ["2"])
        and not says("with quantity 12", ["2"])
        and not says("unheld", ["held"])
    )
    rows = frozenset({"o1", "o2", "o3"})
    order = Entity(
        "order",
        "o1",
        rows,
        [Clue(["pending"], frozenset({"o1", "o2"})), Clue(["Desk Lamp"], frozenset({"o1", "o3"}))],
    )
    req = 'Cancel my pending "Desk Lamp" order.'
    assert ambiguous(req, 'Please cancel my pending "Desk Lamp" order, thanks.', [order]) is None
    assert (
        ambiguous(req, 'Please cancel my "Desk Lamp" order.', [order])
        == "the order without pending matches 2 rows"
    )
    # a clue the original says some other way ("waiting") is taken as still said
    assert (
        ambiguous('Cancel my waiting "Desk Lamp" order.', 'Cancel my "Desk Lamp" order.', [order])
        is None
    )
    # an entity the original does not pick alone by its clues is not judged
    loose = Entity("order", "o1", rows, [Clue(["pending"], frozenset({"o1", "o2"}))])
    assert ambiguous("Cancel my pending order.", "Cancel my order.", [loose]) is None


def test_a_superlative_wins_among_the_rows_the_other_clues_still_leave() -> None:
    """``Shaun Brown's confirmed order with the lowest quantity``: dropping ``confirmed`` names his
    order with the lowest quantity of all (another row when a pending one has less), so the rewrite
    is rejected; when the target is also the lowest of all his orders, it still picks it."""
    from envkernel_kit.refine import Clue, Entity, ambiguous

    rows = frozenset({"o1", "o2", "o3", "o4"})
    mine = Clue(["Shaun Brown"], frozenset({"o1", "o2", "o3"}))
    confirmed = Clue(["confirmed"], frozenset({"o1", "o2", "o4"}))
    qty = {"o1": 2.0, "o2": 5.0, "o3": 1.0, "o4": 1.0}
    order = Entity(
        "order",
        "o1",
        rows,
        [mine, confirmed, Clue(["lowest"], frozenset({"o1"}), best=qty, high=False)],
    )
    req = "Ship Shaun Brown's confirmed order with the lowest quantity."
    assert (
        ambiguous(
            req, "Please ship Shaun Brown's confirmed order with the lowest quantity.", [order]
        )
        is None
    )
    assert (
        ambiguous(req, "Please ship Shaun Brown's order with the lowest quantity.", [order])
        == "the order without confirmed picks another row"
    )  # o3 wins among his orders
    assert (
        ambiguous(req, "Ship the confirmed order with the lowest quantity.", [order])
        == "the order without Shaun Brown picks another row"
    )  # o4, another customer's, wins among the confirmed ones
    qty_alone = {
        "o1": 0.5,
        "o2": 5.0,
        "o3": 1.0,
        "o4": 3.0,
    }  # o1 is his lowest of all: dropping "confirmed" still picks it
    order2 = Entity(
        "order",
        "o1",
        rows,
        [mine, confirmed, Clue(["lowest"], frozenset({"o1"}), best=qty_alone, high=False)],
    )
    assert (
        ambiguous(req, "Please ship Shaun Brown's order with the lowest quantity.", [order2])
        is None
    )
