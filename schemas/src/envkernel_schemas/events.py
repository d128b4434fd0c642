"""Events: the messages that travel the bus.

Every event is a frozen Struct tagged ``<kind>.v<version>`` (e.g. ``env.synthesized.v1``) under
the ``type`` field. The envelope (run, id, parent, iteration, time) is common to all. One
decoder (:func:`envkernel_schemas.decode`) decodes the whole union.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, get_args

import msgspec

from .records import EnvSpec, Reward, ScoredRollout, State, Task, Trajectory, VerifyReport

Purpose = Literal["gate", "train", "eval"]
"""Why a rollout is made: for the task gate, for the emitted task, or to evaluate a policy (``envkernel eval``)."""


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
    """Gate rollout or training rollout."""
    update: str = ""
    """Object-store reference of the policy update to roll out with ("" = the initial policy)."""


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
    """Gate rollout or training rollout."""


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
    """Gate rollout or training rollout."""


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
    """Mean reward of the iteration's rollouts of the emitted tasks (every split; not the gate's)."""
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

EVENT_TYPES: tuple[type[Event], ...] = get_args(AnyEvent)
"""Every event type, in a stable order."""

for _t in EVENT_TYPES:
    _t.kind = str(_t.__struct_config__.tag).rsplit(".v", 1)[0]

KINDS: dict[str, type[Event]] = {t.kind: t for t in EVENT_TYPES}
"""Event kind -> type."""
