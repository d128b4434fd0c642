"""The checklist reward model: checks derived from the Outcome, partial credit, guards."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from envkernel_checklist import (
    Checklist,
    Settings,
    checklist,
    fraction,
    pair_changes,
    register_reward_models,
    score,
)
from envkernel_kit.testing import FakeContext
from envkernel_schemas import CallRecord, Outcome, Task, ToolCall, ToolError, ToolResult, Trajectory

ORDERS = [
    {"customer_id": 1, "product_id": 1, "quantity": 2, "status": "pending"},
    {"customer_id": 1, "product_id": 2, "quantity": 1, "status": "shipped"},
    {"customer_id": 2, "product_id": 2, "quantity": 1, "status": "pending"},
]


def with_ids(rows: list[dict]) -> list[dict]:
    """What the environment dumps: generated columns present, rows in another order."""
    return [{"id": 100 + i, **r, "created_at": f"t{i}"} for i, r in reversed(list(enumerate(rows)))]


def task(expected: list[dict], initial: list[dict] = ORDERS, **kw) -> Task:  # type: ignore[no-untyped-def]
    return Task(
        id="t",
        env_id="e",
        request="r",
        calls=[ToolCall(name="x")],
        outcome=Outcome(
            mutates=True, initial_state={"orders": initial}, expected_state={"orders": expected}
        ),
        **kw,
    )


def traj(final_orders: list[dict] | None, **kw) -> Trajectory:  # type: ignore[no-untyped-def]
    state = (
        {} if final_orders is None else {"orders": with_ids(final_orders), "customers": [{"id": 1}]}
    )
    return Trajectory(task_id="t", policy="p", final_state=state, **kw)


CANCEL_3 = [ORDERS[0], ORDERS[1], {**ORDERS[2], "status": "cancelled"}]
TWO_CHANGES = [{**ORDERS[0], "quantity": 5}, ORDERS[1], {**ORDERS[2], "status": "cancelled"}]


def test_reference_scores_one_and_nothing_scores_zero() -> None:
    t = task(CANCEL_3)
    assert score(t, traj(CANCEL_3)).score == 1.0
    r = score(t, traj(ORDERS))
    assert r.score == 0.0 and r.error == ""
    assert any("changes to" in x for x in r.reasons)


def test_partial_credit_per_row_change() -> None:
    t = task(TWO_CHANGES)
    half = [TWO_CHANGES[0], ORDERS[1], ORDERS[2]]
    r = score(t, traj(half))
    assert r.score == pytest.approx(0.5) and r.outcome == pytest.approx(0.5) and r.tau == 0.0
    assert r.reasons[0] == "checklist: 1/2 checks passed"


def test_collateral_damage_costs_credit_but_never_earns_it() -> None:
    t = task(CANCEL_3)
    # right change, but also cancelled an order nobody asked about
    collateral = [
        {**ORDERS[0], "status": "cancelled"},
        ORDERS[1],
        {**ORDERS[2], "status": "cancelled"},
    ]
    r = score(t, traj(collateral))
    assert r.score == pytest.approx(0.5)  # 1 passed / (1 credit + 1 failed guard)
    assert any("no other row changed" in x for x in r.reasons)
    # wrong row changed: nothing earned
    wrong = [{**ORDERS[0], "status": "cancelled"}, ORDERS[1], ORDERS[2]]
    assert score(t, traj(wrong)).score == 0.0
    # an extra row appeared
    extra = [*CANCEL_3, {"customer_id": 9, "product_id": 9, "quantity": 9, "status": "pending"}]
    assert score(t, traj(extra)).score == pytest.approx(0.5)


def test_inserted_rows_ignore_generated_columns() -> None:
    new = {"customer_id": 2, "product_id": 1, "quantity": 3, "status": "pending"}
    t = task([*ORDERS, new])
    checks = checklist(t, traj([*ORDERS, new]))
    assert [c.kind for c in checks] == ["inserted", "unchanged"]
    assert (
        score(t, traj([*ORDERS, new])).score == 1.0
    )  # ids and created_at differ and do not matter
    assert (
        score(t, traj([*ORDERS, new, new])).score == 0.0
    )  # inserted twice: the row check wants it once
    assert score(t, traj(ORDERS)).score == 0.0


def test_deleted_rows() -> None:
    t = task([ORDERS[0], ORDERS[1]])
    assert [c.kind for c in checklist(t, traj([ORDERS[0], ORDERS[1]]))] == ["deleted", "unchanged"]
    assert score(t, traj([ORDERS[0], ORDERS[1]])).score == 1.0
    assert score(t, traj(ORDERS)).score == 0.0
    assert score(t, traj([ORDERS[0]])).score == pytest.approx(0.5)  # deleted it, and another one


def test_missing_table_fails_every_check() -> None:
    r = score(task(CANCEL_3), traj(None))
    assert r.score == 0.0 and any("missing from the final state" in x for x in r.reasons)


def test_read_only_tasks_check_answer_facts() -> None:
    t = Task(
        id="t",
        env_id="e",
        request="r",
        calls=[ToolCall(name="x")],
        outcome=Outcome(mutates=False, answer_facts=["Desk Lamp", "29.5"]),
    )
    looked = [CallRecord(call=ToolCall(name="x"), result=ToolResult(ok=True, value={}))]

    def answered(text: str, calls: list[CallRecord] = looked) -> float:
        return score(t, Trajectory(task_id="t", policy="p", calls=calls, final_answer=text)).score

    assert answered("The desk lamp costs 29.5") == 1.0
    assert answered("A DESK LAMP") == 0.5
    assert answered("I can't help with that.") == 0.0
    assert answered("The desk lamp costs 29.5", calls=[]) == 0.0  # a guess: nothing looked up


def test_a_task_without_checks_is_an_error_not_a_silent_zero() -> None:
    t = task(ORDERS)  # expected == initial: no change to check
    r = score(t, traj(ORDERS))
    assert r.score == 0.0 and "no checks" in r.error and r.reasons


def test_strict_calls_guard() -> None:
    t = task(CANCEL_3)
    failed = CallRecord(
        call=ToolCall(name="get_order", arguments={"order_id": 99}),
        result=ToolResult(ok=False, error=ToolError(code="not_found", message="no")),
    )
    explorer = msgspec.structs.replace(traj(CANCEL_3), calls=[failed])
    assert Checklist().score(t, explorer, FakeContext(component="checklist")).score == 1.0
    assert Checklist(Settings(strict_calls=True)).score(
        t, explorer, FakeContext(component="checklist")
    ).score == pytest.approx(0.5)
    sloppy = msgspec.structs.replace(traj(CANCEL_3), format_errors=1)
    assert Checklist(Settings(strict_calls=True)).score(
        t, sloppy, FakeContext(component="checklist")
    ).score == pytest.approx(0.5)


def test_pairing_by_key_column_and_by_similarity() -> None:
    cols = ["id", "name", "stock"]
    removed = [{"id": "p1", "name": "lamp", "stock": 3}, {"id": "p2", "name": "desk", "stock": 1}]
    added = [{"id": "p2", "name": "desk", "stock": 0}, {"id": "p3", "name": "mat", "stock": 4}]
    changes, deleted, inserted = pair_changes(cols, removed, added)
    assert (
        changes == [(removed[1], added[0])] and deleted == [removed[0]] and inserted == [added[1]]
    )
    cols = ["customer_id", "status", "quantity"]
    changes, deleted, inserted = pair_changes(
        cols,
        [{"customer_id": 1, "status": "pending", "quantity": 2}],
        [{"customer_id": 1, "status": "cancelled", "quantity": 2}],
    )
    assert len(changes) == 1 and not deleted and not inserted


def test_fraction_and_registration() -> None:
    checks = checklist(task(TWO_CHANGES), traj(ORDERS))
    assert fraction(checks) == (0.0, 0, 2)
    got = {}
    register_reward_models(lambda name, factory: got.setdefault(name, factory))
    assert got == {"checklist": Checklist}


def test_gate_invariant_on_sampled_tasks() -> None:
    """Reference = 1 and do-nothing = 0 on chains-sampled tasks, so the checklist can drive the
    gate."""
    testing = pytest.importorskip("envkernel_kit.testing")
    chains = pytest.importorskip("envkernel_chains")
    baselines = pytest.importorskip("envkernel_baselines")
    run_policy = pytest.importorskip("envkernel_kit.scripted").run_policy
    env, factory = testing.toy_shop()
    ctx = testing.FakeContext(component="chains", sandboxes={env.id: factory})

    async def go() -> list[tuple[float, float]]:
        tasks = [
            t
            async for t in chains.Chains(chains.Settings(tasks_per_env=30, attempts=400)).sample(
                env, ctx
            )
        ]
        assert len(tasks) == 30
        out = []
        for t in tasks:
            ref = await run_policy(
                baselines.Reference(), t, factory(), env.tools, policy_name="reference"
            )
            nothing = await run_policy(
                baselines.Nothing(), t, factory(), env.tools, policy_name="nothing"
            )
            out.append((score(t, ref).score, score(t, nothing).score))
        return out

    for ref, nothing in asyncio.run(go()):
        assert (ref, nothing) == (1.0, 0.0)


CHECK = (
    "import os\n"
    "def grade(transcript, workspace_path):\n"
    "    path = os.path.join(workspace_path, 'out/total.txt')\n"
    "    text = open(path).read() if os.path.exists(path) else ''\n"
    "    return {'written': float(bool(text)), 'total': float(text.strip() == '30.00')}\n"
)


async def test_a_task_with_a_check_script_is_graded_by_it_in_a_sandbox() -> None:
    """A workspace task (Outcome.check set): the checklist runs its grade() in a real sandbox over
    the rebuilt final workspace: the reference scores 1, doing nothing 0, half the criteria 0.5."""
    from envkernel_kit.checks import process_runner
    from envkernel_kit.testing import RunnerContext
    from envkernel_kit.workspace import ground_task, workspace_env

    env = workspace_env(
        "ck-ledger", "ledger", files={"ledger.csv": "id,amount\n1,10.00\n2,20.00\n"}
    )
    runner = process_runner()
    try:
        ctx = RunnerContext(runner, component="checklist", envs={env.id: env})
        ref = [ToolCall(name="write", arguments={"path": "out/total.txt", "content": "30.00\n"})]
        t = await ground_task(
            ctx,
            env,
            task_id="ck-1",
            request="Write the ledger's total to out/total.txt.",
            calls=ref,
            check=CHECK,
        )
        assert t.outcome.check == CHECK

        async def final_state(calls: list[ToolCall]) -> dict:
            async with ctx.sandbox(env) as sb:
                for c in calls:
                    assert (await sb.call(c.name, dict(c.arguments))).ok
                return await sb.state()

        def rollout(calls: list[ToolCall], state: dict) -> Trajectory:
            return Trajectory(
                task_id=t.id,
                policy="p",
                final_state=state,
                calls=[CallRecord(call=c, result=ToolResult(ok=True, value={})) for c in calls],
            )

        wrong = [ToolCall(name="write", arguments={"path": "out/total.txt", "content": "31.00\n"})]
        cases = [
            (ref, await final_state(ref)),
            ([], await final_state([])),
            (wrong, await final_state(wrong)),
        ]
        model = Checklist()
        got = [
            await asyncio.to_thread(model.score, t, rollout(calls, state), ctx)
            for calls, state in cases
        ]
        assert [r.score for r in got] == [1.0, 0.0, 0.5]
        assert all(r.model == "checklist" and r.tau == 0.0 for r in got)
        assert got[0].reasons == [
            "checklist: graded by the task's check script (every criterion met)"
        ]
        assert "total: 0" in got[2].reasons
    finally:
        await runner.aclose()


def test_an_unasked_change_a_blind_answer_and_a_raw_dump_score_zero() -> None:
    """The fatal guards: a table outside the expected ones changed, a read-only answer about rows
    the rollout never looked up, an answer that is the tools' raw JSON."""
    from envkernel_schemas.rows import table_digest

    customers = [{"id": 1}]  # as traj() dumps them
    t = task(CANCEL_3)
    t = msgspec.structs.replace(
        t,
        outcome=msgspec.structs.replace(
            t.outcome,
            unchanged={"customers": table_digest(customers, ["id"])},
            generated={"customers": ["id"]},
        ),
    )
    good = traj(CANCEL_3)
    assert score(t, good).score == 1.0
    wiped = msgspec.structs.replace(good, final_state={**good.final_state, "customers": []})
    r = score(t, wiped)
    assert r.score == 0.0 and any("unasked" in x for x in r.reasons)
    row = {"id": 1, "name": "Ann", "tier": "gold"}
    ro = Task(
        id="t",
        env_id="e",
        request="What tier is Ann?",
        calls=[ToolCall(name="get_customer", arguments={"id": 1})],
        outputs=[row],
        outcome=Outcome(mutates=False, answer_facts=["gold"]),
    )
    seen = [CallRecord(call=ToolCall(name="get_customer"), result=ToolResult(ok=True, value=row))]
    assert (
        score(ro, Trajectory(task_id="t", policy="p", calls=seen, final_answer="Gold.")).score
        == 1.0
    )
    blind = score(ro, Trajectory(task_id="t", policy="p", final_answer="Gold."))
    assert blind.score == 0.0 and any("observed" in x for x in blind.reasons)
    dump = Trajectory(task_id="t", policy="p", calls=seen, final_answer='{"id": 1, "tier": "gold"}')
    assert score(ro, dump).score == 0.0


def test_a_refusal_has_one_check_and_a_change_fails_it() -> None:
    from envkernel_kit.policy import refusal_answer
    from envkernel_schemas.rows import table_digest

    rows = [{"id": 1, "status": "pending"}]
    task = Task(
        id="tr",
        env_id="shop",
        request="Ship my order 1.",
        calls=[],
        outcome=Outcome(
            mutates=False,
            expects="refusal",
            declined=[ToolCall(name="ship_order", arguments={"order_id": 1})],
            answer=refusal_answer("ship an order"),
            unchanged={"orders": table_digest(rows, [])},
        ),
    )

    def rollout(answer: str, state: list[dict[str, object]]) -> Trajectory:
        return Trajectory(
            task_id="tr", policy="p", final_answer=answer, final_state={"orders": state}
        )

    assert score(task, rollout(task.outcome.answer, rows)).score == 1.0
    assert score(task, rollout("I can't help with that.", rows)).score == 0.0
    shipped = [{"id": 1, "status": "shipped"}]
    assert score(task, rollout(task.outcome.answer, shipped)).score == 0.0
