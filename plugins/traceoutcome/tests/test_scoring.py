"""Unit tests of the trace + outcome reward maths."""

from __future__ import annotations

import json

import msgspec
import pytest

from envkernel_schemas import CallRecord, Outcome, Task, ToolCall, ToolError, ToolResult, Trajectory
from envkernel_traceoutcome import Settings, TraceOutcome, register_reward_models
from envkernel_traceoutcome.scoring import (
    facts_outcome,
    match_calls,
    score,
    state_outcome,
    table_matches,
    tau_at,
    values_equal,
)

INITIAL = {
    "orders": [
        {"customer_id": 1, "status": "pending", "quantity": 2},
        {"customer_id": 2, "status": "shipped", "quantity": 1},
    ],
    "products": [{"id": 1, "stock": 10}],
}
EXPECTED = {
    "orders": [
        {"customer_id": 1, "status": "cancelled", "quantity": 2},
        {"customer_id": 2, "status": "shipped", "quantity": 1},
    ],
    "products": [{"id": 1, "stock": 12}],
}
# the environment's dump: generated columns (id, created_at) present, rows in another order
FINAL_OK = {
    "orders": [
        {"id": 2, "customer_id": 2, "status": "shipped", "quantity": 1, "created_at": "t2"},
        {"id": 1, "customer_id": 1, "status": "cancelled", "quantity": 2, "created_at": "t1"},
    ],
    "products": [{"id": 1, "stock": 12.0}],
    "customers": [{"id": 1}],
}
FINAL_UNCHANGED = {
    "orders": [
        {"id": 1, "customer_id": 1, "status": "pending", "quantity": 2, "created_at": "t1"},
        {"id": 2, "customer_id": 2, "status": "shipped", "quantity": 1, "created_at": "t2"},
    ],
    "products": [{"id": 1, "stock": 10}],
}

CALLS = [
    ToolCall(name="find_customer", arguments={"email": "ann@example.com"}),
    ToolCall(name="list_orders", arguments={"customer_id": 1, "status": "pending"}),
    ToolCall(name="cancel_order", arguments={"order_id": 1}),
]


def _task(mutates: bool = True, facts: list[str] | None = None) -> Task:
    if mutates:
        outcome = Outcome(mutates=True, expected_state=EXPECTED, initial_state=INITIAL)
    else:
        outcome = Outcome(
            mutates=False, answer_facts=facts if facts is not None else ["Ann Lee", "gold"]
        )
    return Task(
        id="t1",
        env_id="shop",
        request="...",
        calls=CALLS,
        outcome=outcome,
        signature=">".join(c.name for c in CALLS),
    )


def _rec(name: str, args: dict, ok: bool = True) -> CallRecord:
    res = (
        ToolResult(ok=True, value={})
        if ok
        else ToolResult(ok=False, error=ToolError(code="not_found", message="x"))
    )
    return CallRecord(call=ToolCall(name=name, arguments=args), result=res)


def _reference_records() -> list[CallRecord]:
    return [_rec(c.name, dict(c.arguments)) for c in CALLS]


def _traj(
    calls: list[CallRecord],
    final_state: dict | None = None,
    answer: str = "",
    format_errors: int = 0,
) -> Trajectory:
    return Trajectory(
        task_id="t1",
        policy="p",
        calls=calls,
        final_state=final_state if final_state is not None else FINAL_UNCHANGED,
        final_answer=answer,
        format_errors=format_errors,
    )


# -- normalisation ----------------------------------------------------------------------------


def test_values_equal_normalisation() -> None:
    assert values_equal({"a": 1, "b": "x"}, {"b": "x", "a": 1})
    assert values_equal({"a": 1, "b": None}, {"a": 1})
    assert values_equal(100.0, 100.00005)  # within 1e-6 relative
    assert not values_equal(100.0, 100.001)
    assert values_equal(3, 3.0)
    assert values_equal("  ann@example.com ", "ann@example.com")
    assert not values_equal("Ann", "ann")  # case-sensitive
    assert not values_equal(True, 1) and not values_equal(0, False)
    assert not values_equal("3", 3)
    assert values_equal([1, {"x": 2.0}], [1, {"x": 2}])
    assert not values_equal([1, 2], [2, 1])
    assert values_equal(0, 0.0) and not values_equal(0, 1e-9)


def test_matching_is_one_to_one_and_order_free() -> None:
    ref = [
        ToolCall(name="a", arguments={"x": 1}),
        ToolCall(name="a", arguments={"x": 1}),
        ToolCall(name="b"),
    ]
    recs = [_rec("b", {}), _rec("a", {"x": 1})]
    m = match_calls(ref, recs)
    assert sum(x is not None for x in m) == 2 and m[2] == 0
    recs.append(_rec("a", {"x": 1.0000001}))
    assert all(x is not None for x in match_calls(ref, recs))
    # failed calls never match
    assert match_calls(
        [ToolCall(name="a", arguments={"x": 1})], [_rec("a", {"x": 1}, ok=False)]
    ) == [None]


def test_matching_finds_maximum() -> None:
    # greedy would pair ref0 with rec0 and leave ref1 unmatched; the matching must not
    ref = [ToolCall(name="a", arguments={"v": 1.0}), ToolCall(name="a", arguments={"v": 1.0000015})]
    recs = [_rec("a", {"v": 1.0000008}), _rec("a", {"v": 1.0})]
    assert sorted(match_calls(ref, recs, rel_tol=1e-6)) == [0, 1]


# -- outcome ----------------------------------------------------------------------------------


def test_state_outcome() -> None:
    assert state_outcome(EXPECTED, INITIAL, FINAL_OK) == (1.0, [])
    val, why = state_outcome(EXPECTED, INITIAL, FINAL_UNCHANGED)
    assert val == 0.0 and len(why) == 2
    val, why = state_outcome(EXPECTED, INITIAL, {"orders": FINAL_OK["orders"]})
    assert val == 0.0 and "missing from the final state" in why[0]
    assert state_outcome({}, {}, FINAL_OK)[0] == 0.0
    # multiset: a duplicated row is a difference
    ok, why = table_matches([{"a": 1}], [], [{"a": 1}, {"a": 1}])
    assert not ok and "1 unexpected" in why
    # all rows deleted: columns come from the initial rows
    assert table_matches([], [{"a": 1}], [])[0]
    assert not table_matches([], [{"a": 1}], [{"a": 1, "id": 3}])[0]


def test_facts_outcome() -> None:
    assert facts_outcome(["Ann Lee", "gold"], "She is ANN LEE, a Gold member.") == (1.0, [])
    val, why = facts_outcome(["Ann Lee", "gold"], "Ann Lee")
    assert val == 0.5 and "gold" in why[0]
    assert facts_outcome([], "anything")[0] == 0.0


# -- the score ------------------------------------------------------------------------------


def test_reference_scores_one() -> None:
    r = score(_task(), _traj(_reference_records(), FINAL_OK, answer="Done."))
    assert r.score == 1.0 and r.trace == 1.0 and r.outcome == 1.0 and r.reasons == []
    for tau in (0.0, 0.1, 0.3, 0.7, 0.9, 1.0, 1 / 3):
        assert score(_task(), _traj(_reference_records(), FINAL_OK), tau=tau).score == 1.0
    r = score(
        _task(False),
        _traj(
            _reference_records(),
            FINAL_UNCHANGED,
            answer="Ann Lee is a gold customer.",
        ),
    )
    assert r.score == 1.0
    dump = score(
        _task(False),
        _traj(
            _reference_records(),
            FINAL_UNCHANGED,
            answer=json.dumps({"name": "Ann Lee", "tier": "gold"}),
        ),
    )
    assert dump.score == 0.0 and any("raw JSON" in x for x in dump.reasons)


def test_nothing_scores_zero() -> None:
    for tau in (0.0, 0.5, 0.9, 1.0):
        r = score(_task(), _traj([], FINAL_UNCHANGED, answer="I can't help with that."), tau=tau)
        assert r.score == 0.0 and r.trace == 0.0 and r.outcome == 0.0
        r = score(
            _task(False), _traj([], FINAL_UNCHANGED, answer="I can't help with that."), tau=tau
        )
        assert r.score == 0.0


def test_partial_trace() -> None:
    recs = _reference_records()[:2] + [_rec("cancel_order", {"order_id": 2})]
    r = score(_task(), _traj(recs, FINAL_UNCHANGED), tau=0.5)
    assert r.trace == pytest.approx(2 / 3) and r.outcome == 0.0
    assert r.score == pytest.approx(0.5 * 2 / 3)
    assert "2/3 reference calls matched" in r.reasons[0] and "cancel_order" in r.reasons[0]
    # right outcome by another path: outcome full, trace partial
    recs = [_rec("cancel_order", {"order_id": 1})]
    r = score(_task(), _traj(recs, FINAL_OK), tau=0.5)
    assert r.score == pytest.approx(0.5 + 0.5 / 3)


def test_numeric_tolerance_in_arguments() -> None:
    task = Task(
        id="t",
        env_id="e",
        request="",
        calls=[ToolCall(name="pay", arguments={"amount": 59.99})],
        outcome=Outcome(mutates=False, answer_facts=["ok123"]),
    )
    close = _traj([_rec("pay", {"amount": 59.99000001})], answer="ok123")
    far = _traj([_rec("pay", {"amount": 59.98})], answer="ok123")
    assert score(task, close).score == 1.0
    assert score(task, far).trace == 0.0


def test_extra_calls_penalised_and_capped() -> None:
    recs = _reference_records() + [
        _rec("get_order", {"order_id": 1}),
        _rec("get_order", {"order_id": 2}, ok=False),
    ]
    r = score(_task(), _traj(recs, FINAL_OK))
    assert r.length_penalty == pytest.approx(0.1) and r.score == pytest.approx(0.9)
    recs = _reference_records() + [_rec("get_order", {"order_id": 1})] * 30
    r = score(_task(), _traj(recs, FINAL_OK))
    assert r.length_penalty == 0.5 and r.score == pytest.approx(0.5)
    # up to the reference length, no penalty, even with failed calls
    r = score(_task(), _traj(_reference_records()[:2] + [_rec("x", {}, ok=False)], FINAL_UNCHANGED))
    assert r.length_penalty == 0.0


def test_format_errors_penalised_and_floor_at_zero() -> None:
    r = score(_task(), _traj(_reference_records(), FINAL_OK, format_errors=3))
    assert r.format_penalty == pytest.approx(0.15) and r.score == pytest.approx(0.85)
    r = score(_task(), _traj(_reference_records(), FINAL_OK, format_errors=100))
    assert r.format_penalty == 0.5
    r = score(_task(), _traj([_rec("x", {})] * 20, FINAL_UNCHANGED, format_errors=100))
    assert r.score == 0.0  # never negative
    r = score(_task(), _traj(_reference_records(), FINAL_OK, format_errors=2), format_step=0.1)
    assert r.score == pytest.approx(0.8)


def test_tau_schedule() -> None:
    assert tau_at(0.5, None, 10, 7) == 0.5
    assert tau_at(0.9, 0.1, 5, 0) == pytest.approx(0.9)
    assert tau_at(0.9, 0.1, 5, 2) == pytest.approx(0.5)
    assert tau_at(0.9, 0.1, 5, 4) == pytest.approx(0.1)
    assert tau_at(0.9, 0.1, 5, 40) == pytest.approx(0.1)
    assert tau_at(0.9, 0.1, 1, 0) == 0.9 and tau_at(0.9, 0.1, 1, 1) == pytest.approx(0.1)


class _Ctx:
    component = "traceoutcome"

    def __init__(self, iteration: int) -> None:
        self.iteration = iteration


def test_component_uses_schedule() -> None:
    rm = TraceOutcome(Settings(tau=0.9, tau_final=0.1, tau_iterations=3))
    half = _traj([_rec("cancel_order", {"order_id": 1})], FINAL_OK)  # trace 1/3, outcome 1
    r0 = rm.score(_task(), half, _Ctx(0))
    r2 = rm.score(_task(), half, _Ctx(2))
    assert r0.tau == pytest.approx(0.9) and r2.tau == pytest.approx(0.1)
    assert r0.score == pytest.approx(0.9 / 3 + 0.1)
    assert r2.score == pytest.approx(0.1 / 3 + 0.9)
    assert r0.model == "traceoutcome"


def test_settings_validation_and_registration() -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"tau": 1.5}, Settings)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"tua": 0.5}, Settings)
    assert msgspec.convert({"tau_final": 0.1, "tau_iterations": 4}, Settings).tau_final == 0.1
    got: dict[str, object] = {}
    register_reward_models(lambda n, f: got.__setitem__(n, f))
    assert got == {"traceoutcome": TraceOutcome}
