"""Unit tests of the trace + outcome reward maths."""

from __future__ import annotations

import json

import msgspec
import pytest

from envkernel_schemas import CallRecord, Outcome, Task, ToolCall, ToolError, ToolResult, Trajectory
from envkernel_traceoutcome import Settings, TraceOutcome, register_reward_models
from envkernel_traceoutcome.scoring import (
    changes_done,
    expected_state_match,
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


def test_expected_state_match() -> None:
    assert expected_state_match(EXPECTED, INITIAL, FINAL_OK) == (1.0, [])
    val, why = expected_state_match(EXPECTED, INITIAL, FINAL_UNCHANGED)
    assert val == 0.0 and len(why) == 2
    val, why = expected_state_match(EXPECTED, INITIAL, {"orders": FINAL_OK["orders"]})
    assert val == 0.0 and "missing from the final state" in why[0]
    assert expected_state_match({}, {}, FINAL_OK)[0] == 0.0

    # multiset: a duplicated row is a difference
    ok, why = table_matches([{"a": 1}], [], [{"a": 1}, {"a": 1}])
    assert not ok and "1 unexpected" in why
    # all rows deleted: columns come from the initial rows
    assert table_matches([], [{"a": 1}], [])[0]
    assert not table_matches([], [{"a": 1}], [{"a": 1, "id": 3}])[0]


def test_state_outcome_is_a_deprecated_alias() -> None:
    with pytest.warns(DeprecationWarning, match="expected_state_match"):
        assert state_outcome(EXPECTED, INITIAL, FINAL_OK) == (1.0, [])


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


# -- the whole state, what the rollout saw, τ 0 by default (issue 30) -----------------------------

SEED = {
    "customers": [
        {"id": 1, "name": "Ann Lee", "tier": "gold", "created_at": "t0"},
        {"id": 2, "name": "Bo Chen", "tier": "basic", "created_at": "t0"},
    ],
    "orders": [{"id": 7, "customer_id": 1, "status": "pending"}],
}


def _whole(task: Task, keep: dict[str, list[dict]]) -> Task:
    """``task`` with the digests of the tables it leaves unchanged, as chains makes them."""
    from envkernel_schemas.rows import table_digest

    gen = {"customers": ["id", "created_at"], "orders": ["id"]}
    o = msgspec.structs.replace(
        task.outcome,
        unchanged={t: table_digest(rows, gen.get(t, [])) for t, rows in keep.items()},
        generated={t: gen[t] for t in keep if t in gen},
    )
    return msgspec.structs.replace(task, outcome=o)


def _lookup_task() -> Task:
    out = [{"id": 1, "name": "Ann Lee", "tier": "gold"}]
    return _whole(
        Task(
            id="t2",
            env_id="shop",
            request="What tier is Ann Lee?",
            calls=[ToolCall(name="list_customers", arguments={"q": "Ann"})],
            outputs=[out],
            outcome=Outcome(mutates=False, answer_facts=["gold"], answer="Ann Lee is gold."),
        ),
        SEED,
    )


def _seen(name: str, value: object) -> CallRecord:
    return CallRecord(
        call=ToolCall(name=name, arguments={}), result=ToolResult(ok=True, value=value)
    )


def test_tau_is_zero_by_default_and_the_trace_stays_a_diagnostic() -> None:
    assert Settings().tau == 0.0
    r = score(_task(), _traj([], FINAL_OK, answer="Done."))  # the right end state, no call matched
    assert r.score == 1.0 and r.trace == 0.0 and r.tau == 0.0
    assert score(_task(), _traj([], FINAL_OK), tau=0.5).score == 0.5  # the option still works


def test_a_change_the_request_did_not_ask_for_fails_the_task() -> None:
    task = _lookup_task()
    seen = [_seen("list_customers", [{"id": 1, "name": "Ann Lee", "tier": "gold"}])]
    ok = score(task, _traj(seen, SEED, answer="Ann Lee is gold."))
    assert ok.score == 1.0 and ok.reasons == []
    # the generated columns may differ (a row deleted and made again gets a new id)
    regen = {**SEED, "orders": [{"id": 99, "customer_id": 1, "status": "pending"}]}
    assert score(task, _traj(seen, regen, answer="Ann Lee is gold.")).score == 1.0
    wiped = {**SEED, "orders": []}
    r = score(task, _traj(seen, wiped, answer="Ann Lee is gold."))
    assert r.score == 0.0 and any("'orders' changed" in x for x in r.reasons)
    new_table = {**SEED, "notes": [{"id": 1}]}
    assert score(task, _traj(seen, new_table, answer="Ann Lee is gold.")).score == 0.0
    # a write task: the changed tables as expected, an unrelated one wiped
    write = _whole(_task(), {"customers": SEED["customers"]})
    good = {**FINAL_OK, "customers": SEED["customers"]}
    assert score(write, _traj(_reference_records(), good)).score == 1.0
    bad = {**FINAL_OK, "customers": []}
    assert score(write, _traj(_reference_records(), bad)).score == 0.0


def test_a_read_only_answer_counts_only_about_rows_the_rollout_looked_up() -> None:
    task = _lookup_task()
    guess = score(task, _traj([], SEED, answer="Ann Lee is gold."))
    assert guess.score == 0.0 and any("never looked up" in x for x in guess.reasons)
    # another tool showing the same row (more columns) is another path: it counts
    other = [_seen("get_customer", {"id": 1, "name": "Ann Lee", "tier": "gold", "city": "Oslo"})]
    assert score(task, _traj(other, SEED, answer="Ann Lee is gold.")).score == 1.0
    # a row with another id, or other values, does not
    wrong = [_seen("get_customer", {"id": 2, "name": "Ann Lee", "tier": "gold"})]
    assert score(task, _traj(wrong, SEED, answer="Ann Lee is gold.")).score == 0.0
    done = score(task, _traj(other, SEED, answer="Done."))
    assert done.score == 0.0


def test_changes_done_is_partial_over_the_requests_row_changes() -> None:
    """Partial credit counts the rows the request changes (issue 30, item 4): the order cancelled
    but the stock left is half the request; a wrong value anywhere is 0; nothing done is 0."""
    half = {"orders": FINAL_OK["orders"], "products": [{"id": 1, "stock": 10}]}
    share, why = changes_done(EXPECTED, INITIAL, half)
    assert share == 0.5 and why[-1] == "outcome: 2 of 4 requested row changes made"
    assert changes_done(EXPECTED, INITIAL, FINAL_OK) == (1.0, [])
    assert changes_done(EXPECTED, INITIAL, FINAL_UNCHANGED)[0] == 0.0
    wrong = {"orders": FINAL_OK["orders"], "products": [{"id": 1, "stock": 11}]}
    assert changes_done(EXPECTED, INITIAL, wrong)[0] == 0.0  # a value the request did not ask for
    # a duplicate the request adds: the initial copy alone is not the added one
    dup = {"t": [{"a": 1}, {"a": 1}]}
    assert changes_done(dup, {"t": [{"a": 1}]}, {"t": [{"a": 1}]})[0] == 0.0
    task = Task(
        id="t",
        env_id="e",
        request="r",
        calls=[],
        outcome=Outcome(mutates=True, expected_state=EXPECTED, initial_state=INITIAL),
    )
    traj = Trajectory(task_id="t", policy="p", calls=[], final_state=half)
    assert score(task, traj).score == 0.5
    assert score(task, traj, partial=False).score == 0.0  # all or nothing when asked


def test_needless_questions_cost_and_held_back_ones_do_not() -> None:
    """A question the user answers costs ``question_step`` beyond one per held-back item; a
    question left as the final answer (a confirmation) costs nothing (issue 30, item 7)."""
    chat = [
        {"role": "user", "content": "Cancel my order."},
        {"role": "assistant", "content": "Which order do you mean?"},
        {"role": "user", "content": "The pending one."},
        {"role": "assistant", "content": "Are you sure?"},
        {"role": "user", "content": "That's everything I need; please go ahead."},
        {"role": "assistant", "content": "Shall I also refund it?"},
    ]
    base = Task(
        id="t",
        env_id="e",
        request="r",
        calls=[],
        outcome=Outcome(mutates=True, expected_state=EXPECTED, initial_state=INITIAL),
    )
    traj = Trajectory(task_id="t", policy="p", messages=chat, final_state=FINAL_OK)
    assert score(base, traj).score == 0.9  # two answered questions, nothing held back
    held = msgspec.structs.replace(base, hidden=["Only the pending one."])
    r = score(held, traj)
    assert r.score == 0.95 and "questions: 1 beyond what the user held back" in r.reasons
    assert score(held, traj, question_step=0.0).score == 1.0
