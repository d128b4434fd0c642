"""Kernel stages: the task gate and group closing. Pure logic: events in, child events out.

The gate sends every proposed task to a reference rollout, a do-nothing rollout and
``gate_mutants`` near-miss mutants of the reference, each request saying its
:class:`~envkernel_schemas.RolloutRole` (``reference``, ``nothing``, ``mutant`` with its kind
number ``mutant``); the task is emitted only when the reference scores 1, do-nothing scores 0 and
every applicable mutant scores below 1 (a mutant that does not apply to the task ends with
termination ``not_applicable:<kind>``). The gate decides by each scored rollout's role, never by
its index. An emitted task then gets
``rollouts_per_task`` rollouts of the chosen policy, and its group closes when every member is
scored or failed. Each later training iteration rolls every emitted task out again, with the
policy update the trainers made at the end of the previous one.

With ``calibrate`` K > 0, a task that passes gets K more gate rollouts (role ``calibration``,
indexes from :data:`CALIBRATION`) of ``calibrate_policy``; a task solved (score 1) in all or none
of them is dropped (EnvCraft's filter), and an emitted task carries its ``solve_rate`` and a
difficulty of ``1 - solve_rate``. A calibration rollout that fails counts as not solved. With
``calibrate_keep`` no task is dropped for its solve rate (a real model's rates recorded, not
filtered on); a dropped task carries its rate too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import msgspec

from envkernel_runtime.taskkey import task_key
from envkernel_schemas import (
    DecodeError,
    Event,
    GroupScored,
    IterationEnded,
    PluginFailed,
    RolloutFinished,
    RolloutRequested,
    RolloutRole,
    RolloutScored,
    ScoredRollout,
    Task,
    TaskGated,
    TaskProposed,
    TaskRejected,
    Termination,
    decode,
    event_id,
    mutant_of,
    rollout_role,
    termination_of,
)

from .config import RunConfig

CALIBRATION = 1000
"""Index of the first calibration rollout of a gate."""
SOLVER = 2000
"""Index of the first ``gate_solver`` attempt of a gate (a task without a reference)."""
KERNEL = "kernel"
"""Handler name of the kernel stages (in ids and handled reports)."""
EPS = 1e-9


@dataclass
class _Gate:
    task: Task
    scores: dict[RolloutRole, float] = field(default_factory=dict)
    """Role (reference, nothing) -> score."""
    reasons: dict[RolloutRole, list[str]] = field(default_factory=dict)
    mutants: dict[int, tuple[float, bool, str]] = field(default_factory=dict)
    """Mutant kind number -> (score, applied, kind name) of each mutant rollout."""
    solved: dict[int, bool] | None = None
    """Index -> solved, of each calibration rollout (None until the gate passed)."""
    attempts: dict[int, ScoredRollout | None] | None = None
    """Index -> the scored attempt (None: it failed) of each ``gate_solver`` rollout (None: no
    solver asked)."""


@dataclass
class _Group:
    task: Task
    size: int
    scored: dict[int, ScoredRollout] = field(default_factory=dict)
    failed: set[int] = field(default_factory=set)


def _gate_problem(gate: _Gate, ref: float, nothing: float) -> tuple[str, str] | None:
    """Why the gate rejects a task (reason, detail): the reference below 1, doing nothing above 0,
    a mutant of the reference scoring 1; None when it passes."""
    if ref < 1.0 - EPS:
        why = "; ".join(gate.reasons.get(RolloutRole.REFERENCE, [])) or f"scored {ref:.3f}"
        return "reference_below_1", why
    if nothing > EPS:
        return "nothing_above_0", f"do-nothing scored {nothing:.3f}"
    survived = [name for sc, applied, name in gate.mutants.values() if applied and sc >= 1.0 - EPS]
    if survived:
        return "mutant_survived", f"mutants scoring 1: {', '.join(sorted(survived))}"
    return None


class Stages:
    """The gate and the groups of one run. :meth:`handle` returns (event, target plugin) pairs."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.gates: dict[str, _Gate] = {}
        self.groups: dict[str, _Group] = {}
        self.seen_tasks: set[bytes] = set()
        self.gated: list[Task] = []
        """Every emitted task, in order: each later iteration rolls them all out (kept only when
        there are later iterations)."""

    def _child(
        self,
        parent: Event,
        cls: type[Event],
        key: int | str,
        /,
        iteration: int | None = None,
        **fields: Any,
    ) -> Event:
        it = parent.iteration if iteration is None else iteration
        return cls(
            run=parent.run,
            id=event_id(parent.id, KERNEL, key),
            parent=parent.id,
            iteration=it,
            time=time.time(),
            **fields,
        )

    def handle(self, ev: Event) -> list[tuple[Event, str | None]]:
        """Children of a kernel-handled event, each with its work target (None: no plugin token)."""
        if isinstance(ev, TaskProposed):
            return self._proposed(ev)
        if isinstance(ev, RolloutScored):
            return self._scored(ev)
        if isinstance(ev, TaskGated):
            return self._gated(ev)
        if isinstance(ev, PluginFailed):
            return self._failed(ev)
        return []

    def _proposed(self, ev: TaskProposed) -> list[tuple[Event, str | None]]:
        key = task_key(ev.task)
        if key in self.seen_tasks or ev.task.id in self.gates:
            return [
                (
                    self._child(
                        ev,
                        TaskRejected,
                        "dup",
                        task=ev.task,
                        reason="duplicate",
                        detail="same chain and arguments as an earlier task",
                    ),
                    None,
                )
            ]
        self.seen_tasks.add(key)
        if self.config.evaluate:
            return self._eval(ev)
        self.gates[ev.task.id] = _Gate(ev.task)
        if self.config.gate_solver and not ev.task.calls:
            return self._solve(ev, self.gates[ev.task.id])
        return self._gate(ev, ev.task)

    def _gate(self, ev: Event, task: Task) -> list[tuple[Event, str | None]]:
        """The gate's rollouts of ``task``: the reference, do-nothing and the mutants."""
        out: list[tuple[Event, str | None]] = []
        size = 2 + self._n_mutants()
        baselines = (
            (RolloutRole.REFERENCE, self.config.gate_reference),
            (RolloutRole.NOTHING, self.config.gate_nothing),
        )
        for i, (role, policy) in enumerate(baselines):
            req = self._child(
                ev,
                RolloutRequested,
                f"gate/{policy}",
                task=task,
                policy=policy,
                index=i,
                group_size=size,
                purpose="gate",
                role=role,
            )
            out.append((req, policy))
        mutant = self.config.gate_mutant
        for i in range(2, size):
            out.append(
                (
                    self._child(
                        ev,
                        RolloutRequested,
                        f"gate/{mutant}/{i}",
                        task=task,
                        policy=mutant,
                        index=i,
                        group_size=size,
                        purpose="gate",
                        role=RolloutRole.MUTANT,
                        mutant=i - 2,
                    ),
                    mutant,
                )
            )
        return out

    def _eval(self, ev: TaskProposed) -> list[tuple[Event, str | None]]:
        """Evaluation mode: k attempts of the policy (purpose ``eval``), no gate (a duplicate is
        still one task: :meth:`_proposed` refused it)."""
        k, policy = max(1, self.config.rollouts_per_task), self.config.policy
        return [
            (
                self._child(
                    ev,
                    RolloutRequested,
                    f"eval/{i}",
                    task=ev.task,
                    policy=policy,
                    index=i,
                    group_size=k,
                    purpose="eval",
                    role=RolloutRole.EVAL,
                ),
                policy,
            )
            for i in range(k)
        ]

    def _solve(self, ev: Event, gate: _Gate) -> list[tuple[Event, str | None]]:
        """A task without a reference: ``gate_solver_k`` attempts of ``gate_solver`` look for
        one."""
        gate.attempts = {}
        k, policy = max(1, self.config.gate_solver_k), self.config.gate_solver
        return self._attempts(ev, gate.task, k, policy, RolloutRole.SOLVER)

    def _solved(self, parent: Event, gate: _Gate) -> list[tuple[Event, str | None]]:
        """Every solver attempt is in: the first (by index) that scored 1 is the reference, and the
        task goes through the gate; none did: rejected as ``unsolved``."""
        attempts = gate.attempts or {}
        win = next(
            (
                a
                for _, a in sorted(attempts.items())
                if a is not None and a.reward.score >= 1.0 - EPS
            ),
            None,
        )
        if win is None:
            scores = [a.reward.score for a in attempts.values() if a is not None]
            failed = sum(1 for a in attempts.values() if a is None)
            del self.gates[gate.task.id]
            detail = f"{self.config.gate_solver} solved it in 0 of {len(attempts)} attempts" + (
                f" (best score {max(scores):.3f})" if scores else ""
            )
            return [
                (
                    self._child(
                        parent,
                        TaskRejected,
                        "gate",
                        task=gate.task,
                        reason="unsolved",
                        detail=detail + (f"; {failed} attempts failed" if failed else ""),
                    ),
                    None,
                )
            ]
        t = win.trajectory
        ok = [r for r in t.calls if r.result.ok]
        task = msgspec.structs.replace(
            gate.task,
            calls=[r.call for r in ok],
            outputs=[r.result.value for r in ok],
            outcome=msgspec.structs.replace(
                gate.task.outcome, answer=t.final_answer, expected_state={}
            ),
            signature=">".join(r.call.name for r in ok),
            reference_by=self.config.gate_solver,
        )
        gate.task = task
        return self._gate(parent, task)

    def _n_mutants(self) -> int:
        return self.config.gate_mutants if self.config.gate_mutant else 0

    def _decide(self, parent: Event, gate: _Gate) -> list[tuple[Event, str | None]]:
        ref = gate.scores.get(RolloutRole.REFERENCE, 0.0)
        nothing = gate.scores.get(RolloutRole.NOTHING, 1.0)
        del self.gates[gate.task.id]
        problem = _gate_problem(gate, ref, nothing)
        if problem:
            return [self._reject(parent, gate.task, *problem)]
        k, policy = self.config.calibrate, self.config.calibrate_policy or self.config.policy
        if k > 0 and gate.solved is None:  # passed: now K attempts of the chosen policy
            gate.solved, self.gates[gate.task.id] = {}, gate
            return self._calibration(parent, gate.task, k, policy)
        task = gate.task
        if gate.solved is not None:
            rate = round(sum(gate.solved.values()) / k, 4)
            task = msgspec.structs.replace(task, solve_rate=rate, difficulty=round(1.0 - rate, 4))
            if rate in (0.0, 1.0) and not self.config.calibrate_keep:
                why = f"{policy} solved it in {sum(gate.solved.values())} of {k} attempts"
                return [
                    self._reject(parent, task, "always_solved" if rate else "never_solved", why)
                ]
        return [
            (
                self._child(parent, TaskGated, "gate", task=task, reference=ref, nothing=nothing),
                None,
            )
        ]

    def _reject(
        self, parent: Event, task: Task, reason: str, detail: str
    ) -> tuple[Event, str | None]:
        """The gate's rejection of a task."""
        return (
            self._child(parent, TaskRejected, "gate", task=task, reason=reason, detail=detail),
            None,
        )

    def _calibration(
        self, parent: Event, task: Task, k: int, policy: str
    ) -> list[tuple[Event, str | None]]:
        """The ``k`` calibration attempts of ``policy`` at a task that passed the gate."""
        return self._attempts(parent, task, k, policy, RolloutRole.CALIBRATION)

    _ATTEMPTS = {
        RolloutRole.SOLVER: ("solve", SOLVER),
        RolloutRole.CALIBRATION: ("calibrate", CALIBRATION),
    }
    """The id prefix and first index of each kind of the gate's k-attempt rollouts."""

    def _attempts(
        self, parent: Event, task: Task, k: int, policy: str | None, role: RolloutRole
    ) -> list[tuple[Event, str | None]]:
        """``k`` gate rollouts of ``policy`` at ``task`` in ``role`` (solver or calibration)."""
        prefix, first_index = self._ATTEMPTS[role]
        return [
            (
                self._child(
                    parent,
                    RolloutRequested,
                    f"{prefix}/{i}",
                    task=task,
                    policy=policy,
                    index=first_index + i,
                    group_size=k,
                    purpose="gate",
                    role=role,
                ),
                policy,
            )
            for i in range(k)
        ]

    def _scored(self, ev: RolloutScored) -> list[tuple[Event, str | None]]:
        if ev.purpose == "eval":
            return []  # the recorder keeps the attempts; an evaluation has no groups
        if ev.purpose == "gate":
            gate = self.gates.get(ev.task.id)
            if gate is None:
                return []
            role = rollout_role(ev)
            if role is RolloutRole.SOLVER:
                if gate.attempts is None:
                    return []
                gate.attempts[ev.trajectory.index] = ScoredRollout(
                    trajectory=ev.trajectory, reward=ev.reward
                )
                done = len(gate.attempts) == max(1, self.config.gate_solver_k)
                return self._solved(ev, gate) if done else []
            if role is RolloutRole.CALIBRATION:
                if gate.solved is None:
                    return []
                gate.solved[ev.trajectory.index] = ev.reward.score >= 1.0 - EPS
                return self._decide(ev, gate) if len(gate.solved) == self.config.calibrate else []
            if role is RolloutRole.MUTANT:
                kind, detail = termination_of(ev.trajectory.termination)
                name = ev.mutant_kind or detail or ev.trajectory.termination
                applied = kind is not Termination.NOT_APPLICABLE
                gate.mutants[mutant_of(ev)] = (ev.reward.score, applied, name)
            elif role in (RolloutRole.REFERENCE, RolloutRole.NOTHING):
                gate.scores[role] = ev.reward.score
                gate.reasons[role] = ev.reward.reasons + (
                    [ev.reward.error] if ev.reward.error else []
                )
            else:
                return []
            if len(gate.scores) == 2 and len(gate.mutants) == self._n_mutants():
                return self._decide(ev, gate)
            return []
        group = self.groups.get(ev.task.id)
        if group is None:
            return []
        if ev.trajectory.termination == "error":
            # the policy's model never answered (an HTTP error, a refused connection): no sample
            # of what the policy does, so the trainer gets it as failed, not as a reward of 0
            group.failed.add(ev.trajectory.index)
        else:
            group.scored[ev.trajectory.index] = ScoredRollout(
                trajectory=ev.trajectory, reward=ev.reward
            )
        return self._maybe_close(ev, group)

    def _gated(self, ev: TaskGated) -> list[tuple[Event, str | None]]:
        self.gated += (
            [ev.task] if self.config.iterations > 1 else []
        )  # a task is ~20 KB in memory: a one-iteration run keeps none
        return self._group(ev, ev.task, "train")

    def _group(
        self, parent: Event, task: Task, key: str, update: str = "", iteration: int | None = None
    ) -> list[tuple[Event, str | None]]:
        g = max(1, self.config.rollouts_per_task)
        self.groups[task.id] = _Group(task, g)
        out: list[tuple[Event, str | None]] = []
        for i in range(g):
            req = self._child(
                parent,
                RolloutRequested,
                f"{key}/{i}",
                iteration=iteration,
                task=task,
                policy=self.config.policy,
                index=i,
                group_size=g,
                purpose="train",
                update=update,
                role=RolloutRole.TRAIN,
            )
            out.append((req, self.config.policy))
        return out

    def next_iteration(self, ended: IterationEnded, update: str) -> list[tuple[Event, str | None]]:
        """The training rollouts of the iteration after ``ended``: G per emitted task, naming
        ``update``.

        Their parent is the ``iteration.ended`` event, so their ids are deterministic.
        """
        out: list[tuple[Event, str | None]] = []
        for task in self.gated:
            out.extend(self._group(ended, task, f"train/{task.id}", update, ended.iteration + 1))
        return out

    def _maybe_close(self, parent: Event, group: _Group) -> list[tuple[Event, str | None]]:
        if len(group.scored) + len(group.failed) < group.size:
            return []
        del self.groups[group.task.id]
        rollouts = [group.scored[i] for i in sorted(group.scored)]
        return [
            (
                self._child(
                    parent,
                    GroupScored,
                    "group",
                    task=group.task,
                    rollouts=rollouts,
                    failed=len(group.failed),
                ),
                None,
            )
        ]

    def _failed(self, ev: PluginFailed) -> list[tuple[Event, str | None]]:
        try:
            original = decode(ev.event) if ev.event else None
        except DecodeError:
            return []
        if not isinstance(original, (RolloutRequested, RolloutFinished)):
            return []
        task = original.task
        if original.purpose == "eval":
            return []  # the recorder lists the failed attempt
        if original.purpose == "gate":
            gate = self.gates.get(task.id)
            index = (
                original.index
                if isinstance(original, RolloutRequested)
                else original.trajectory.index
            )
            if (
                gate is not None
                and gate.attempts is not None
                and rollout_role(original) is RolloutRole.SOLVER
            ):
                gate.attempts[index] = None  # a failed attempt found no reference
                done = len(gate.attempts) == max(1, self.config.gate_solver_k)
                return self._solved(ev, gate) if done else []
            if (
                gate is not None
                and gate.solved is not None
                and rollout_role(original) is RolloutRole.CALIBRATION
            ):  # a failed attempt did not solve it
                gate.solved[index] = False
                return self._decide(ev, gate) if len(gate.solved) == self.config.calibrate else []
            gate = self.gates.pop(task.id, None)
            if gate is None:
                return []
            detail = f"{ev.plugin} ({ev.role}) failed: {ev.error_type}: {ev.message}"
            reason = (
                "gate_infra" if ev.classification == "infra" else "gate_failed"
            )  # an infrastructure fault says nothing of the task
            return [
                (
                    self._child(ev, TaskRejected, "gate", task=task, reason=reason, detail=detail),
                    None,
                )
            ]
        group = self.groups.get(task.id)
        if group is None:
            return []
        index = (
            original.index if isinstance(original, RolloutRequested) else original.trajectory.index
        )
        group.failed.add(index)
        return self._maybe_close(ev, group)
