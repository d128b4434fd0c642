"""Domain policies: parsing one, what the agent is told, and how a refusal or a confirmation
task's rollout is scored (by the default reward, in process)."""

from __future__ import annotations

import pytest

from envkernel_kit.policy import (
    confirmation_question,
    domain_policy,
    policy_note,
    policy_outcome,
    refusal_answer,
)
from envkernel_kit.scoring import score
from envkernel_schemas import (
    CallRecord,
    Outcome,
    Task,
    ToolCall,
    ToolResult,
    Trajectory,
)
from envkernel_schemas.rows import table_digest

ORDERS = [{"id": 1, "status": "pending"}, {"id": 2, "status": "shipped"}]
SHIP = ToolCall(name="ship_order", arguments={"order_id": 1})


def _task(expects: str, answer: str) -> Task:
    return Task(
        id="t1",
        env_id="shop",
        request="Ship my order 1, please.",
        calls=[],
        user="customer",
        policy="Shipping an order needs an administrator.",
        outcome=Outcome(
            mutates=False,
            expects=expects,  # type: ignore[arg-type]
            declined=[SHIP],
            answer=answer,
            unchanged={"orders": table_digest(ORDERS, [])},
        ),
    )


def _rollout(answer: str, state: list[dict[str, object]], calls: int = 0) -> Trajectory:
    recs = [CallRecord(call=SHIP, result=ToolResult(ok=True, value={"id": 1}))] * calls
    return Trajectory(
        task_id="t1", policy="p", calls=recs, final_answer=answer, final_state={"orders": state}
    )


def test_a_policy_is_read_from_its_raw_mapping() -> None:
    raw = {"text": " Only  staff ship. ", "administrator": {"ship_order": "ship an order"}}
    got = domain_policy(raw)
    assert got is not None and got.text == "Only staff ship."
    assert got.administrator == {"ship_order": "ship an order"} and got.confirm == {}
    assert domain_policy({"administrator": {}}) is None and domain_policy("text") is None


def test_the_agent_is_told_the_policy_and_its_user() -> None:
    note = policy_note(_task("refusal", ""))
    assert "Shipping an order needs an administrator." in note and "a customer" in note
    assert (
        policy_note(Task(id="t", env_id="e", request="r", calls=[], outcome=Outcome(mutates=False)))
        == ""
    )


@pytest.mark.parametrize(
    ("expects", "answer", "want"),
    [
        ("refusal", refusal_answer("ship an order"), 1.0),
        ("refusal", "I can't help with that.", 0.0),  # the do-nothing policy: no reason given
        ("refusal", "Only an administrator can do that, so please ask one.", 1.0),
        ("refusal", "Done.", 0.0),
        ("confirmation", confirmation_question("cancel an order"), 1.0),
        ("confirmation", "Are you sure you want me to cancel it?", 1.0),
        ("confirmation", "I can't help with that.", 0.0),
        ("confirmation", "I will cancel it once you confirm.", 0.0),  # not a question
    ],
)
def test_a_refusal_declines_and_names_who_may_and_a_confirmation_asks(
    expects: str, answer: str, want: float
) -> None:
    got, why = policy_outcome(_task(expects, "").outcome, answer)
    assert got == want and bool(why) == (want == 0.0)


def test_the_reward_wants_the_answer_and_no_change() -> None:
    ref = refusal_answer("ship an order")
    task = _task("refusal", ref)
    assert score(task, _rollout(ref, ORDERS)).score == 1.0
    assert score(task, _rollout("I can't help with that.", ORDERS)).score == 0.0
    shipped = [{"id": 1, "status": "shipped"}, ORDERS[1]]
    complied = score(task, _rollout(ref, shipped, calls=1))  # did it anyway, then refused
    assert complied.score == 0.0 and any("did not ask" in r for r in complied.reasons)
    ask = confirmation_question("ship an order")
    confirm = _task("confirmation", ask)
    assert score(confirm, _rollout(ask, ORDERS)).score == 1.0
    assert score(confirm, _rollout(ask, shipped, calls=1)).score == 0.0
