"""A sampled task under its environment's domain policy (:mod:`envkernel_chains.policy`)."""

from __future__ import annotations

import msgspec

from envkernel_chains.policy import CONFIRM_SHARE, REFUSE_SHARE, under_policy
from envkernel_kit.policy import CONFIRMED
from envkernel_schemas import (
    CodeBehaviour,
    DomainPolicy,
    EnvSpec,
    Outcome,
    Task,
    ToolCall,
)

POLICY = DomainPolicy(
    text="Shipping needs an administrator. Cancelling cannot be undone.",
    administrator={"ship_order": "ship an order"},
    confirm={"cancel_order": "cancel an order"},
)
ENV = EnvSpec(id="shop", name="Shop", tools=[], behaviour=CodeBehaviour(source=""), policy=POLICY)


def _task(i: int, tool: str, request: str = "Please do it.") -> Task:
    calls = [
        ToolCall(name="get_order", arguments={"order_id": i}),
        ToolCall(name=tool, arguments={"order_id": i}),
    ]
    return Task(
        id=f"t{i:04d}",
        env_id="shop",
        request=request,
        calls=calls,
        outputs=[{"id": i}, {"id": i}],
        hidden=["Only the pending ones."],
        outcome=Outcome(mutates=True, expected_state={"orders": [{"id": i}]}),
    )


def test_without_a_policy_a_task_is_as_it_was() -> None:
    task = _task(1, "ship_order")
    assert under_policy(msgspec.structs.replace(ENV, policy=None), task) == task


def test_an_administrators_tool_is_refused_to_a_customer_on_a_share_of_tasks() -> None:
    got = [under_policy(ENV, _task(i, "ship_order")) for i in range(400)]
    refused = [t for t in got if t.outcome.expects == "refusal"]
    assert abs(len(refused) / len(got) - REFUSE_SHARE) < 0.1
    for t in refused:
        assert t.user == "customer" and t.calls == [] and t.outputs == [] and t.hidden
        assert t.outcome.declined and t.outcome.declined[-1].name == "ship_order"
        assert not t.outcome.mutates and "administrator" in t.outcome.answer
        assert t.policy == POLICY.text
    assert all(t.user == "administrator" and t.calls for t in got if t not in refused)


def test_a_change_that_cannot_be_undone_is_confirmed_first_or_already_confirmed() -> None:
    got = [under_policy(ENV, _task(i, "cancel_order")) for i in range(400)]
    asked = [t for t in got if t.outcome.expects == "confirmation"]
    assert abs(len(asked) / len(got) - CONFIRM_SHARE) < 0.1
    assert all("?" in t.outcome.answer and t.outcome.declined for t in asked)
    rest = [t for t in got if t not in asked]
    assert rest and all(t.request.endswith(CONFIRMED) and t.calls for t in rest)
    sure = under_policy(ENV, _task(1, "cancel_order", "Go ahead and cancel it."))
    assert sure.request == "Go ahead and cancel it." and not sure.outcome.expects


def test_a_task_that_needs_neither_states_its_user() -> None:
    t = under_policy(ENV, _task(1, "update_order"))
    assert t.user == "customer" and t.policy == POLICY.text and len(t.calls) == 2
