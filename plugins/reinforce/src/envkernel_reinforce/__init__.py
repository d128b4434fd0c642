"""envkernel-reinforce: a small, real learner that closes envkernel's training loop.

Two components (not in the default preset; add them with ``--plugins +reinforce``):

- ``reinforce`` (policy): at each step it picks the next action, one of the offered tools or
  *stop*, from a linear softmax over the task's features (see :mod:`envkernel_reinforce.model`).
  It learns **which tool to call next**, not what to pass: a tool's arguments come from the
  task's grounded reference calls (the k-th call of a tool gets the arguments of the k-th
  reference call of that tool; a tool the reference never calls gets ``{}``). That argument
  oracle is the same for every weight setting, so the comparison with the random policy isolates
  what is learned. With every weight 0 (iteration 0) it is the uniform random policy.
- ``reinforce-learner`` (trainer): REINFORCE with a group baseline. For each scored group of the
  ``reinforce`` policy on a ``train`` task it takes the group-normalised advantages
  (:func:`envkernel_kit.groups.advantages`; zero-variance groups carry no signal and are skipped)
  and accumulates ``A · ∇ log π / G``. At ``iteration.ended`` it takes one AdaGrad step and returns
  the weights as a :class:`~envkernel_schemas.PolicyUpdate`; the kernel carries it to the policy
  for the next iteration. Held-out tasks are never learned from: their rewards make the curve.
  When the run ends it writes ``reinforce_curve.json`` (per iteration: train and held-out mean
  reward, groups used and skipped, gradient norm), ``reward_curve.png`` and the final weights
  ``reinforce_weights.json``.

Run it: ``envkernel run --plugins +reinforce --policy reinforce --iterations 8 -G 4``.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import msgspec

from envkernel.hookspecs import hookimpl
from envkernel_kit.groups import advantages
from envkernel_kit.messages import answer_from, call_and_record
from envkernel_schemas import (
    GroupScored,
    IterationEnded,
    PolicyUpdate,
    RolloutRequested,
    Task,
    ToolResult,
    ToolSpec,
    Trajectory,
)

from . import model
from .model import STOP, Weights
from .plot import plot_curve

__all__ = [
    "FORMAT",
    "ReinforcePolicy",
    "ReinforceLearner",
    "ReinforceSettings",
    "Settings",
    "chosen_actions",
    "oracle_arguments",
    "register_policies",
    "register_trainers",
]

FORMAT = "reinforce-weights/1"
"""``PolicyUpdate.format`` of this learner's updates: ``data`` is JSON
``{feature: {action: weight}}``."""

SYSTEM_PROMPT = (
    "You are a helpful assistant with access to tools. Use them to fulfil the user's request."
)
"""System message of the conversations this policy writes."""


class ReinforceSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``reinforce`` policy and the ``reinforce-learner`` trainer."""

    max_calls: int = 8
    """Tool calls per rollout at most (then the rollout ends with ``max_turns``)."""
    lr: float = 0.2
    """Learning rate: with AdaGrad, the most any weight moves in one update (word features are
    scaled to weigh as one, so an update moves a logit by about ``lr`` × 12 at most)."""
    adagrad: bool = True
    """Scale each weight's step by its gradient history (AdaGrad); off: plain SGD on the summed
    gradient."""
    policy: str = "reinforce"
    """The policy whose rollouts the learner learns from (and whose update it returns)."""
    splits: list[str] = msgspec.field(default_factory=lambda: ["train"])
    """Learn only from tasks of these splits (the others are evaluated, not learned from)."""
    curve_png: str = "reward_curve.png"
    """The reward-curve plot, in the run folder ("" = none)."""
    curve_json: str = "reinforce_curve.json"
    """The reward curve as JSON, in the run folder."""
    weights_json: str = "reinforce_weights.json"
    """The final weights, in the run folder ("" = none)."""

    def __post_init__(self) -> None:
        if self.max_calls < 1:
            raise ValueError(f"max_calls must be at least 1, got {self.max_calls}")
        if self.lr <= 0:
            raise ValueError(f"lr must be positive, got {self.lr}")


Settings = ReinforceSettings
"""Alias: the settings of this plugin's components."""


def oracle_arguments(task: Task, tool: str, occurrence: int) -> dict[str, Any]:
    """The arguments of the ``occurrence``-th reference call of ``tool`` (the last one past the
    end; ``{}`` when the reference never calls it)."""
    refs = [c.arguments for c in task.calls if c.name == tool]
    return dict(refs[min(occurrence, len(refs) - 1)]) if refs else {}


def chosen_actions(trajectory: Trajectory) -> list[str]:
    """The actions a rollout of this policy took: its calls, then :data:`STOP` if it stopped
    itself."""
    acts = [rec.call.name for rec in trajectory.calls]
    return [*acts, STOP] if trajectory.termination == "answer" else acts


def offered_tools(env_tools: list[ToolSpec], task: Task) -> list[ToolSpec]:
    """The tools a rollout of ``task`` is offered, in the environment's order (as the kernel
    does)."""
    offered = set(task.tools)
    return [t for t in env_tools if not offered or t.name in offered]


class ReinforcePolicy:
    """The ``reinforce`` policy: a linear softmax over the next tool (or stop)."""

    Settings = ReinforceSettings

    def __init__(self, settings: ReinforceSettings | None = None) -> None:
        self.settings = settings or ReinforceSettings()
        self.weights: Weights = {}
        self.version = ""

    def apply_update(self, update: PolicyUpdate, ctx: Any) -> None:
        """Take the learner's weights."""
        if update.format != FORMAT:
            raise ValueError(
                f"the reinforce policy takes updates of format {FORMAT!r}, got {update.format!r}: "
                "pair it with the reinforce-learner trainer"
            )
        weights = msgspec.json.decode(update.data, type=dict[str, dict[str, float]])
        self.weights = weights
        self.version = f"iteration {ctx.iteration}"

    async def rollout(self, request: RolloutRequested, env: Any, ctx: Any) -> Trajectory:
        """Pick tools one at a time until stop (or ``max_calls``); answer with the last output."""
        task = request.task
        weights = self.weights
        state = model.State(task.request, list(env.tools))
        rng = random.Random(f"{ctx.seed}/{request.iteration}/{task.id}/{request.index}")
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": task.request},
        ]
        used = Counter[str]()
        last: ToolResult | None = None
        stopped = False
        for step in range(self.settings.max_calls):
            action = state.actions[model.choose(state.probabilities(weights), rng)]
            if action == STOP:
                stopped = True
                break
            args = oracle_arguments(task, action, used[action])
            used[action] += 1
            last = await call_and_record(env, messages, f"call_{step}", action, args)
            state.take(action)
        answer = answer_from(last)
        messages.append({"role": "assistant", "content": answer})
        return Trajectory(
            task_id=task.id,
            policy=request.policy,
            index=request.index,
            messages=messages,
            final_answer=answer,
            termination="answer" if stopped else "max_turns",
        )


class _Iteration:
    """What the learner saw in one iteration."""

    def __init__(self) -> None:
        self.rewards: dict[str, list[float]] = defaultdict(list)
        self.grad: Weights = {}
        self.groups_used = 0
        self.groups_skipped: Counter[str] = Counter()
        self.steps = 0


class ReinforceLearner:
    """The ``reinforce-learner`` trainer: REINFORCE with a group baseline."""

    Settings = ReinforceSettings
    concurrency = 1
    """Groups are taken one at a time (the gradient is accumulated in place)."""

    def __init__(self, settings: ReinforceSettings | None = None) -> None:
        self.settings = settings or ReinforceSettings()
        self.weights: Weights = {}
        self.accum: Weights = {}
        self.curve: list[dict[str, Any]] = []
        self._now: dict[int, _Iteration] = defaultdict(_Iteration)
        self._lock = threading.Lock()
        self._warned: set[str] = set()

    def _tools(self, task: Task, ctx: Any) -> list[ToolSpec]:
        env = ctx.wait(ctx.env(task.env_id))
        return offered_tools(list(env.tools), task)

    def consume(self, group: GroupScored, ctx: Any) -> None:
        """Record the group's rewards; on a train task, accumulate its policy gradient."""
        s = self.settings
        mine = [r for r in group.rollouts if r.trajectory.policy == s.policy and not r.reward.error]
        if not mine:
            other = {r.trajectory.policy for r in group.rollouts} - {s.policy}
            for name in other - self._warned:
                self._warned.add(name)
                ctx.log.warning(
                    "the learner learns only from its own policy's rollouts; skipping "
                    "another policy's",
                    policy=name,
                    learns_from=s.policy,
                )
            return
        with self._lock:
            it = self._now[group.iteration]
            it.rewards[group.task.split].extend(r.reward.score for r in mine)
            if group.task.split not in s.splits:
                return
            rewards = [r.reward.score for r in mine]
            if len(rewards) < 2:
                it.groups_skipped["too_small"] += 1
                return
            if max(rewards) - min(rewards) <= 1e-12:
                it.groups_skipped["zero_variance"] += 1
                return
        tools = self._tools(group.task, ctx)
        with self._lock:
            it.groups_used += 1
            for r, adv in zip(mine, advantages(rewards), strict=True):
                it.steps += model.accumulate(
                    it.grad,
                    self.weights,
                    group.task.request,
                    tools,
                    chosen_actions(r.trajectory),
                    adv / len(mine),
                )

    def update(self, ended: IterationEnded, ctx: Any) -> PolicyUpdate:
        """Apply the iteration's gradient and hand the policy its new weights."""
        with self._lock:
            it = self._now.pop(ended.iteration, _Iteration())
            norm = model.apply(
                self.weights,
                it.grad,
                self.settings.lr,
                self.accum if self.settings.adagrad else None,
            )
            data = msgspec.json.encode(self.weights)
        point: dict[str, Any] = {"iteration": ended.iteration}
        for split in ("train", "heldout"):
            vals = it.rewards.get(split, [])
            point[f"{split}_reward"] = round(sum(vals) / len(vals), 6) if vals else None
            point[f"{split}_rollouts"] = len(vals)
        point.update(
            groups_used=it.groups_used,
            groups_skipped=dict(it.groups_skipped),
            steps=it.steps,
            grad_norm=round(norm, 6),
        )
        self.curve.append(point)
        ctx.log.info("reinforce update", **point)
        metrics = {
            k: float(v)
            for k, v in point.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        return PolicyUpdate(policy=self.settings.policy, data=data, format=FORMAT, metrics=metrics)

    def finish(self, ctx: Any) -> None:
        """Write the curve (JSON and PNG) and the final weights into the run folder."""
        s = self.settings
        out = Path(
            ctx.out_dir
        )  # the run host's folder: a trainer on another host writes the same path there
        if not self.curve:
            return
        out.mkdir(parents=True, exist_ok=True)
        (out / s.curve_json).write_text(json.dumps(self.curve, indent=2))
        if s.weights_json:
            (out / s.weights_json).write_text(json.dumps(self.weights))
        if s.curve_png:
            plot_curve(
                self.curve,
                out / s.curve_png,
                title=f"{s.policy}: mean reward per iteration (run {ctx.run_id})",
            )
        ctx.log.info(
            "reward curve",
            train=[p["train_reward"] for p in self.curve],
            heldout=[p["heldout_reward"] for p in self.curve],
            png=str(out / s.curve_png) if s.curve_png else None,
        )


@hookimpl
def register_policies(register: Any) -> None:
    """Register the ``reinforce`` policy."""
    register("reinforce", ReinforcePolicy)


@hookimpl
def register_trainers(register: Any) -> None:
    """Register the ``reinforce-learner`` trainer."""
    register("reinforce-learner", ReinforceLearner)
