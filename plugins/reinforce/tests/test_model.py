"""The learner's maths and pieces, without the kernel (the loop itself:
tests/test_iterations.py)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import msgspec
import pytest

from envkernel_kit.testing import FakeContext
from envkernel_reinforce import (
    FORMAT,
    ReinforcePolicy,
    ReinforceSettings,
    chosen_actions,
    model,
    oracle_arguments,
)
from envkernel_reinforce.model import STOP, State
from envkernel_reinforce.plot import plot_curve
from envkernel_schemas import (
    CallRecord,
    Outcome,
    PolicyUpdate,
    Task,
    ToolCall,
    ToolResult,
    Trajectory,
)

TOOLS = ["list_customers", "get_customer", "list_orders", "cancel_order", "create_order"]
REQUEST = "Please cancel the open order of the customer named Ada Lovelace."


def _logp(weights: model.Weights, chosen: list[str]) -> float:
    total = 0.0
    state = State(REQUEST, TOOLS)
    for a in chosen:
        probs = state.probabilities(weights)
        total += math.log(probs[state.actions.index(a)])
        if a == STOP:
            break
        state.take(a)
    return total


def test_zero_weights_are_the_uniform_random_policy() -> None:
    state = State(REQUEST, TOOLS)
    probs = state.probabilities({})
    assert probs == pytest.approx([1 / 6] * 6)


def test_the_gradient_is_the_gradient_of_log_pi() -> None:
    rng = random.Random(0)
    chosen = ["list_customers", "list_orders", "cancel_order", STOP]
    # random weights on every feature the rollout touches
    weights: model.Weights = {}
    for feats, pairs, actions, _ in model.steps(REQUEST, TOOLS, chosen):
        for f, _x in feats:
            weights[f] = {a: rng.uniform(-1, 1) for a in actions}
        for pf in pairs:
            for g, _x in pf:
                weights.setdefault(model.SHARED, {})[g] = rng.uniform(-1, 1)
    grad: model.Weights = {}
    steps = model.accumulate(grad, weights, REQUEST, TOOLS, chosen, advantage=1.0)
    assert steps == 4
    eps = 1e-6
    checked = 0
    for f, row in list(grad.items())[:12]:
        for a, g in list(row.items())[:3]:
            plus = {k: dict(v) for k, v in weights.items()}
            plus[f][a] = plus[f].get(a, 0.0) + eps
            minus = {k: dict(v) for k, v in weights.items()}
            minus[f][a] = minus[f].get(a, 0.0) - eps
            numeric = (_logp(plus, chosen) - _logp(minus, chosen)) / (2 * eps)
            assert g == pytest.approx(numeric, abs=1e-5), (f, a)
            checked += 1
    assert checked > 10


def test_adagrad_moves_each_weight_at_most_lr() -> None:
    weights: model.Weights = {}
    accum: model.Weights = {}
    grad = {"f": {"a": 100.0, "b": -0.001}}
    norm = model.apply(weights, grad, 0.2, accum)
    assert norm == pytest.approx(math.hypot(100.0, 0.001))
    assert weights["f"]["a"] == pytest.approx(0.2, rel=1e-4) and weights["f"]["b"] == pytest.approx(
        -0.2, rel=1e-4
    )
    model.apply(weights, grad, 0.2, accum)  # the second step is smaller (history)
    assert weights["f"]["a"] == pytest.approx(0.2 + 0.2 / math.sqrt(2))


def test_reinforce_raises_the_probability_of_a_rewarded_chain() -> None:
    good, bad = ["list_customers", "list_orders", "cancel_order", STOP], ["create_order", STOP]
    weights: model.Weights = {}
    accum: model.Weights = {}
    before = _logp(weights, good)
    for _ in range(5):
        grad: model.Weights = {}
        model.accumulate(grad, weights, REQUEST, TOOLS, good, advantage=1.0)
        model.accumulate(grad, weights, REQUEST, TOOLS, bad, advantage=-1.0)
        model.apply(weights, grad, 0.2, accum)
    assert _logp(weights, good) > before + 1.0
    assert _logp(weights, bad) < _logp({}, bad)


def _task() -> Task:
    calls = [
        ToolCall(name="list_orders", arguments={"status": "open"}),
        ToolCall(name="cancel_order", arguments={"id": 3}),
        ToolCall(name="cancel_order", arguments={"id": 4}),
    ]
    return Task(id="t", env_id="e", request=REQUEST, calls=calls, outcome=Outcome(mutates=True))


def test_the_argument_oracle_follows_the_reference_calls_of_that_tool() -> None:
    task = _task()
    assert oracle_arguments(task, "cancel_order", 0) == {"id": 3}
    assert oracle_arguments(task, "cancel_order", 1) == {"id": 4}
    assert oracle_arguments(task, "cancel_order", 5) == {"id": 4}
    assert oracle_arguments(task, "create_order", 0) == {}


def test_chosen_actions_end_with_stop_only_when_the_policy_stopped() -> None:
    rec = CallRecord(
        call=ToolCall(name="list_orders", arguments={}), result=ToolResult(ok=True, value=[])
    )
    assert chosen_actions(
        Trajectory(task_id="t", policy="reinforce", calls=[rec], termination="answer")
    ) == ["list_orders", STOP]
    assert chosen_actions(
        Trajectory(task_id="t", policy="reinforce", calls=[rec], termination="max_turns")
    ) == ["list_orders"]


def test_the_policy_refuses_an_update_it_cannot_read() -> None:
    policy = ReinforcePolicy(ReinforceSettings())
    with pytest.raises(ValueError, match="reinforce-weights/1"):
        policy.apply_update(
            PolicyUpdate(data=b"{}", format="lora-path/1"),
            FakeContext(component="reinforce", role="policy"),
        )
    with pytest.raises(msgspec.DecodeError):
        policy.apply_update(
            PolicyUpdate(data=b"not json", format=FORMAT),
            FakeContext(component="reinforce", role="policy"),
        )
    policy.apply_update(
        PolicyUpdate(data=b'{"bias": {"<stop>": -1.5}}', format=FORMAT),
        FakeContext(component="reinforce", role="policy"),
    )
    assert policy.weights == {"bias": {"<stop>": -1.5}}


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="max_calls"):
        ReinforceSettings(max_calls=0)
    with pytest.raises(ValueError, match="lr"):
        ReinforceSettings(lr=0)


def test_the_curve_plot_is_a_png(tmp_path: Path) -> None:
    curve = [
        {"iteration": k, "train_reward": 0.1 * k, "heldout_reward": 0.05 * k if k else 0.1}
        for k in range(4)
    ]
    path = plot_curve(curve, tmp_path / "curve.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert not list(tmp_path.glob("*.tmp"))
