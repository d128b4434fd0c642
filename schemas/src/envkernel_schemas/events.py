"""Events: the messages that travel the bus.

Every event is a frozen Struct tagged ``<kind>.v<version>`` (e.g. ``env.synthesized.v1``) under
the ``type`` field. The envelope (run, id, parent, iteration, time) is common to all. One
decoder (:func:`envkernel_schemas.decode`) decodes the whole union.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar, Literal, get_args

import msgspec

from .records import (
    EnvSpec,
    Reward,
    ScoredRollout,
    State,
    Task,
    Termination,
    Trajectory,
    VerifyReport,
    termination_of,
)

Purpose = Literal["gate", "train", "eval"]
"""Why a rollout is made: for the task gate, for the emitted task, or to evaluate a policy
(``envkernel eval``)."""


class RolloutRole(StrEnum):
    """What one rollout is for (the ``role`` of its ``rollout.*`` events)."""

    REFERENCE = "reference"
    """Gate: the reference chain replayed; the task passes only if it scores 1."""
    NOTHING = "nothing"
    """Gate: an agent that does nothing; the task passes only if it scores 0."""
    MUTANT = "mutant"
    """Gate: a near miss of the reference (kind ``mutant``); the task passes only if it scores
    below 1."""
    CALIBRATION = "calibration"
    """Gate: an attempt of the calibration policy (``--calibrate K``), to measure a solve rate."""
    TRAIN = "train"
    """A rollout of an emitted task, scored for training."""
    SOLVER = "solver"
    """Gate: an attempt of ``gate_solver`` to find a reference for a task that has none."""
    EVAL = "eval"
    """An attempt of ``envkernel eval`` (no gate, no group)."""


LEGACY_CALIBRATION = 1000
"""Index of the first calibration rollout, in events from before ``role`` was recorded."""


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Base of every event: the envelope."""

    kind: ClassVar[str] = ""
    """The event kind, e.g. ``env.synthesized`` (the tag without its version)."""

    run: str
    """Run id (a valid NATS token)."""
    id: str
    """Deterministic id: hash(parent, plugin, index). Sent as ``Nats-Msg-Id``."""
    parent: str = ""
    """Id of the event this one was produced from ("" for a run's first events)."""
    iteration: int = 0
    """Training iteration the event belongs to."""
    time: float = 0.0
    """Unix time it was produced."""


class RunStarted(Event, frozen=True, kw_only=True, tag="run.started.v1"):
    """A run began. Carries its resolved config (no secrets)."""

    config: dict[str, Any]
    """The resolved config."""


class EnvRequested(Event, frozen=True, kw_only=True, tag="env.requested.v1"):
    """Ask a synthesizer for an environment."""

    source_kind: str
    """Kind of source; picks the synthesizer."""
    source: str = ""
    """Path, URL or brief."""
    index: int = 0
    """Index among the run's requests."""
    seed: int = 0
    """Seed for this environment."""


class EnvSynthesized(Event, frozen=True, kw_only=True, tag="env.synthesized.v1"):
    """A synthesizer produced an environment."""

    env: EnvSpec
    """The environment."""


class EnvVerified(Event, frozen=True, kw_only=True, tag="env.verified.v1"):
    """A verifier executed an environment and kept it (tools it dropped are gone)."""

    env: EnvSpec
    """The environment, with its report."""


class EnvRejected(Event, frozen=True, kw_only=True, tag="env.rejected.v1"):
    """A verifier rejected an environment (or, with ``env`` set, its synthesizer did)."""

    env_id: str
    """The environment."""
    reason: str
    """Why."""
    report: VerifyReport | None = None
    """The verification report."""
    env: EnvSpec | None = None
    """The environment itself, when its synthesizer rejected it (kept for inspection)."""


class TaskProposed(Event, frozen=True, kw_only=True, tag="task.proposed.v1"):
    """A sampler proposed a grounded task; the kernel's gate decides."""

    task: Task
    """The task."""


class TaskGated(Event, frozen=True, kw_only=True, tag="task.gated.v1"):
    """The gate accepted a task: the reference scored 1 and do-nothing scored 0."""

    task: Task
    """The task."""
    reference: float = 1.0
    """Reference score."""
    nothing: float = 0.0
    """Do-nothing score."""


class TaskRejected(Event, frozen=True, kw_only=True, tag="task.rejected.v1"):
    """The gate rejected a task."""

    task: Task
    """The task."""
    reason: str
    """Why, e.g. ``reference_below_1``, ``nothing_above_0``, ``duplicate``, ``gate_failed``."""
    detail: str = ""
    """More about it."""


class RolloutRequested(Event, frozen=True, kw_only=True, tag="rollout.requested.v1"):
    """Roll a policy out on a task."""

    task: Task
    """The task."""
    policy: str
    """The policy component (also the subject's last token)."""
    index: int = 0
    """Index in the group."""
    group_size: int = 1
    """Size of the group."""
    purpose: Purpose = "train"
    """Gate rollout, training rollout, or an attempt of ``envkernel eval`` (``eval``)."""
    update: str = ""
    """Object-store reference of the policy update to roll out with ("" = the initial policy)."""
    role: RolloutRole | None = None
    """What the rollout is for; None only on events from before it was recorded (then
    :func:`rollout_role` reads it from ``purpose`` and the index)."""
    mutant: int = -1
    """The near-miss kind a ``mutant`` rollout plays (0, 1, ...: an index into the mutant policy's
    kinds, modulo their number); -1 for every other role."""


class RolloutStep(Event, frozen=True, kw_only=True, tag="rollout.step.v1"):
    """One step of a rollout, for watching an agent work live."""

    task_id: str
    """The task."""
    policy: str
    """The policy."""
    index: int = 0
    """Index in the group."""
    turn: int = 0
    """Turn number."""
    message: dict[str, Any] = msgspec.field(default_factory=dict)
    """The message (assistant or tool) in OpenAI chat format."""


class RolloutFinished(Event, frozen=True, kw_only=True, tag="rollout.finished.v1"):
    """A policy finished a rollout."""

    task: Task
    """The task."""
    trajectory: Trajectory
    """What it did."""
    group_size: int = 1
    """Size of the group."""
    purpose: Purpose = "train"
    """Gate rollout, training rollout, or an attempt of ``envkernel eval`` (``eval``)."""
    role: RolloutRole | None = None
    """What the rollout is for; None only on events from before it was recorded (then
    :func:`rollout_role` reads it from ``purpose`` and the index)."""
    mutant: int = -1
    """The near-miss kind a ``mutant`` rollout plays (0, 1, ...: an index into the mutant policy's
    kinds, modulo their number); -1 for every other role."""
    mutant_kind: str = ""
    """The name of the kind a ``mutant`` rollout played (``drop_last``, ...: its termination was
    ``mutant:<kind>``); "" when the kind did not apply to the task, and for every other role."""


class RolloutScored(Event, frozen=True, kw_only=True, tag="rollout.scored.v1"):
    """A reward model scored a rollout."""

    task: Task
    """The task."""
    trajectory: Trajectory
    """What the agent did."""
    reward: Reward
    """The score."""
    group_size: int = 1
    """Size of the group."""
    purpose: Purpose = "train"
    """Gate rollout, training rollout, or an attempt of ``envkernel eval`` (``eval``)."""
    role: RolloutRole | None = None
    """What the rollout is for; None only on events from before it was recorded (then
    :func:`rollout_role` reads it from ``purpose`` and the index)."""
    mutant: int = -1
    """The near-miss kind a ``mutant`` rollout plays (0, 1, ...: an index into the mutant policy's
    kinds, modulo their number); -1 for every other role."""
    mutant_kind: str = ""
    """The name of the kind a ``mutant`` rollout played (``drop_last``, ...: its termination was
    ``mutant:<kind>``); "" when the kind did not apply to the task, and for every other role."""


class GroupScored(Event, frozen=True, kw_only=True, tag="group.scored.v1"):
    """All members of a task's group are scored or failed. Broadcast to every trainer."""

    task: Task
    """The task."""
    rollouts: list[ScoredRollout]
    """Scored members, by index."""
    failed: int = 0
    """Members whose rollout or scoring failed."""
    initial_state: State = msgspec.field(default_factory=dict)
    """Unused by default; reserved for trainers that want it."""


class IterationEnded(Event, frozen=True, kw_only=True, tag="iteration.ended.v1"):
    """Every group of an iteration is scored and consumed. Broadcast to every trainer, whose
    ``update`` may answer with a policy update for the next iteration."""

    groups: int = 0
    """Groups scored in this iteration."""
    mean_reward: float | None = None
    """Mean reward of the iteration's rollouts of the emitted tasks (every split; not the
    gate's)."""
    last: bool = False
    """True when no iteration follows (an update is still stored, as the final policy)."""


class PolicyUpdated(Event, frozen=True, kw_only=True, tag="policy.updated.v1"):
    """A trainer produced a policy update at the end of an iteration (``iteration``).

    The update itself is in the object store under ``ref``; the rollouts of the next iteration
    name it in ``RolloutRequested.update``.
    """

    trainer: str
    """The trainer component."""
    policy: str
    """The policy it is for."""
    ref: str = ""
    """Object-store reference of the update."""
    metrics: dict[str, float] = msgspec.field(default_factory=dict)
    """Training metrics."""


class RunEnding(Event, frozen=True, kw_only=True, tag="run.ending.v1"):
    """Every stage is done; trainers and exporters flush. Broadcast to every trainer."""

    reason: str = "complete"
    """Why the run ends."""


class RunFinished(Event, frozen=True, kw_only=True, tag="run.finished.v1"):
    """The run finished. Carries the summary."""

    summary: dict[str, Any]
    """The summary (as in ``summary.json``)."""


class PluginFailed(Event, frozen=True, kw_only=True, tag="plugin.failed.v1"):
    """A plugin raised while handling an event. A failure is data: the run goes on."""

    plugin: str
    """The component that failed."""
    role: str
    """Its role."""
    event_kind: str
    """Kind of the event it was handling."""
    event_id: str
    """Id of that event."""
    error_type: str
    """Exception type."""
    message: str
    """Exception message."""
    traceback: str = ""
    """Formatted traceback."""
    event: bytes = b""
    """The event it was handling (MessagePack), so stages can correlate."""
    classification: str = "plugin"
    """Whose fault: ``plugin`` (the component's), ``infra`` (a sandbox or the bus failed, after the
    retries) or ``update_refused`` (the policy refused the update the rollout names)."""


class Handled(Event, frozen=True, kw_only=True, tag="kernel.handled.v1"):
    """Bookkeeping for causal completion: a handler finished these events."""

    handler: str
    """The component (or kernel stage) that handled them."""
    events: list[str]
    """Ids of the handled events."""
    children: list[int]
    """Number of events each produced (same order)."""


AnyEvent = (
    RunStarted
    | EnvRequested
    | EnvSynthesized
    | EnvVerified
    | EnvRejected
    | TaskProposed
    | TaskGated
    | TaskRejected
    | RolloutRequested
    | RolloutStep
    | RolloutFinished
    | RolloutScored
    | GroupScored
    | IterationEnded
    | PolicyUpdated
    | RunEnding
    | RunFinished
    | PluginFailed
    | Handled
)
"""The union of every event type."""


def rollout_role(ev: RolloutRequested | RolloutFinished | RolloutScored) -> RolloutRole:
    """The role of a rollout event: its ``role`` field, or, on an event from before that field (a
    resumed old run), the role its ``purpose`` and index meant then: a training rollout, or at the
    gate 0 reference, 1 nothing, 2 and up a mutant, :data:`LEGACY_CALIBRATION` and up
    calibration."""
    if ev.role is not None:
        return ev.role
    if ev.purpose != "gate":
        return RolloutRole.TRAIN
    index = ev.index if isinstance(ev, RolloutRequested) else ev.trajectory.index
    if index >= LEGACY_CALIBRATION:
        return RolloutRole.CALIBRATION
    return (RolloutRole.REFERENCE, RolloutRole.NOTHING)[index] if index < 2 else RolloutRole.MUTANT


def mutant_of(ev: RolloutRequested | RolloutFinished | RolloutScored) -> int:
    """The mutant kind number of a ``mutant`` rollout event (-1 for another role); on an event from
    before the field, the one its index meant (index - 2)."""
    if rollout_role(ev) is not RolloutRole.MUTANT:
        return -1
    if ev.mutant >= 0 or ev.role is not None:
        return ev.mutant
    index = ev.index if isinstance(ev, RolloutRequested) else ev.trajectory.index
    return index - 2


def mutant_kind_of(ev: RolloutFinished | RolloutScored) -> str:
    """The kind name a ``mutant`` rollout played ("" when none applied, or another role): its
    ``mutant_kind``, or, on an event from before that field, its ``mutant:<kind>`` termination."""
    if ev.role is not None:
        return ev.mutant_kind if ev.role is RolloutRole.MUTANT else ""
    kind, detail = termination_of(ev.trajectory.termination)
    return detail if kind is Termination.MUTANT else ""


EVENT_TYPES: tuple[type[Event], ...] = get_args(AnyEvent)
"""Every event type, in a stable order."""

for _t in EVENT_TYPES:
    _t.kind = str(_t.__struct_config__.tag).rsplit(".v", 1)[0]

KINDS: dict[str, type[Event]] = {t.kind: t for t in EVENT_TYPES}
"""Event kind -> type."""
