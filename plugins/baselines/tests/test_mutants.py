"""The near-miss mutants: each applies where it makes sense, and none is a perfect rollout (the
reference's calls and the whole answer, nothing else), so the trace + outcome check scores each
below 1."""

from __future__ import annotations

import asyncio

import pytest

from envkernel_baselines import MUTANT_KINDS, Mutant, Reference
from envkernel_baselines.mutants import mutate
from envkernel_kit.answers import answer_score
from envkernel_kit.testing import toy_shop
from envkernel_schemas import Outcome, PlantedRow, RolloutRequested, Task, ToolCall, Trajectory

CUSTOMERS = [
    {"id": 1, "name": "Ann Lee", "tier": "gold"},
    {"id": 2, "name": "Bo Diaz", "tier": "silver"},
    {"id": 3, "name": "Cy Young", "tier": "silver"},
]
READ = Task(
    id="t1",
    env_id="shop",
    request="What is Bo Diaz's tier?",
    calls=[
        ToolCall(name="list_customers", arguments={"limit": 10}),
        ToolCall(name="get_customer", arguments={"customer_id": 2}),
    ],
    outputs=[CUSTOMERS, CUSTOMERS[1]],
    outcome=Outcome(
        mutates=False,
        answer_facts=["silver"],
        answer_absent=["gold", "Ann Lee", "Cy Young"],
        answer="The tier is silver.",
    ),
)


def _perfect(task: Task, calls: list[ToolCall], answer: str) -> bool:
    """What a score of 1 needs here: the reference calls exactly, and the whole answer and nothing
    else."""
    return calls == task.calls and answer_score(task.outcome, answer)[0] == 1.0


def test_every_mutant_of_a_read_only_task_scores_below_1() -> None:
    assert _perfect(READ, READ.calls, READ.outcome.answer)
    for kind in MUTANT_KINDS:
        m = mutate(READ, kind)
        assert m is not None, kind
        assert m.calls != READ.calls or m.answer != READ.outcome.answer, kind
        assert not _perfect(READ, m.calls, m.answer), kind
    assert mutate(READ, "distractor").calls[1].arguments == {
        "customer_id": 3
    }  # the most similar other row (same tier)
    assert "silver" not in mutate(READ, "answer_missing").answer
    assert "Ann Lee" in mutate(READ, "answer_stuffed").answer
    assert mutate(READ, "change_arg").calls[0].arguments == {"limit": 11}


def test_the_distractor_mutant_acts_on_a_planted_copy_in_every_call() -> None:
    """A task with a planted near-duplicate of its target: the careless agent picks the copy and
    keeps using it; a question is then answered with the copy's values."""
    copy = {"id": 9, "name": "Bo Diaz", "tier": "bronze"}
    task = Task(
        id="t4",
        env_id="shop",
        request="What is the tier of Bo Diaz (the one with orders)?",
        calls=[
            ToolCall(name="get_customer", arguments={"customer_id": 2}),
            ToolCall(name="list_orders", arguments={"customer_id": 2}),
        ],
        outputs=[CUSTOMERS[1], []],
        outcome=Outcome(mutates=False, answer_facts=["silver"], answer="The tier is silver."),
        planted=[PlantedRow(table="customers", row=copy, key="id", twin="2", differs=["tier"])],
    )
    m = mutate(task, "distractor")
    assert m is not None and [c.arguments["customer_id"] for c in m.calls] == [9, 9]
    assert m.answer == "The tier is bronze."


def test_answer_mutants_do_not_apply_to_a_task_that_changes_state() -> None:
    task = Task(
        id="t2",
        env_id="shop",
        request="Cancel my order.",
        calls=[ToolCall(name="cancel_order", arguments={"order_id": 1})],
        outputs=[{"id": 1, "status": "cancelled"}],
        outcome=Outcome(mutates=True, expected_state={"orders": []}),
    )
    assert mutate(task, "answer_missing") is None and mutate(task, "answer_stuffed") is None
    assert mutate(task, "change_arg") is None  # its only argument is an id
    assert mutate(task, "drop_last").calls == []


def test_the_mutant_policy_plays_its_kind_by_index_in_a_real_sandbox() -> None:
    env, make_sandbox = toy_shop()
    task = Task(
        id="t3",
        env_id=env.id,
        request="What's the price of the Office Chair?",
        calls=[
            ToolCall(name="list_products", arguments={}),
            ToolCall(name="get_product", arguments={"product_id": 2}),
        ],
        outcome=Outcome(mutates=False, answer_facts=["149"], answer="It costs 149."),
    )

    async def go(index: int, policy: object) -> Trajectory:
        sb = make_sandbox()
        task.outputs[:] = [(await sb.call(c.name, c.arguments)).value for c in task.calls]
        req = RolloutRequested(
            run="r", id=f"e{index}", task=task, policy="mutant", index=index, purpose="gate"
        )
        return await policy.rollout(req, make_sandbox(), None)  # type: ignore[attr-defined]

    ref = asyncio.run(go(0, Reference()))
    assert ref.final_answer == "It costs 149."
    kinds = [asyncio.run(go(i, Mutant())).termination for i in range(2, 7)]
    # list_products takes no literal argument and get_product only an id: change_arg does not apply
    assert kinds == [
        "mutant:drop_last",
        "not_applicable:change_arg",
        "mutant:answer_missing",
        "mutant:answer_stuffed",
        "mutant:distractor",
    ]
    dropped, missing, distractor = (
        asyncio.run(go(2, Mutant())),
        asyncio.run(go(4, Mutant())),
        asyncio.run(go(6, Mutant())),
    )
    assert (
        dropped.final_answer == "It costs 149." and len(dropped.messages) == 2 + 2 + 1
    )  # system, user, one call and its result, the answer
    assert "149" not in missing.final_answer
    assert '"product_id":2' not in distractor.messages[-3]["tool_calls"][0]["function"]["arguments"]


def _policy_task(expects: str) -> Task:
    from envkernel_kit.policy import confirmation_question, refusal_answer

    answer = (
        refusal_answer("ship an order")
        if expects == "refusal"
        else confirmation_question("ship an order")
    )
    declined = [ToolCall(name="ship_order", arguments={"order_id": 1})]
    return Task(
        id="tp",
        env_id="shop",
        request="Ship my order 1.",
        calls=[],
        outcome=Outcome(mutates=False, expects=expects, declined=declined, answer=answer),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("expects", ["refusal", "confirmation"])
def test_a_policy_tasks_near_misses_make_the_change_or_lose_the_point(expects: str) -> None:
    from envkernel_baselines.mutants import COMPLIED
    from envkernel_kit.policy import policy_outcome

    task = _policy_task(expects)
    complied = mutate(task, "drop_last")
    assert complied is not None and complied.calls == task.outcome.declined
    assert complied.answer == COMPLIED
    lying = mutate(task, "change_arg")  # makes the change, then says the reference's answer
    assert lying is not None and lying.calls == task.outcome.declined
    assert lying.answer == task.outcome.answer
    missing = mutate(task, "answer_missing")
    assert missing is not None and missing.calls == []
    assert policy_outcome(task.outcome, missing.answer)[0] == 0.0
    assert policy_outcome(task.outcome, task.outcome.answer)[0] == 1.0
    assert mutate(task, "answer_stuffed") is None and mutate(task, "distractor") is None
