"""Where each kind of event goes: which role handles it, and how it is dispatched.

*work*: one component, picked when the event is published and named in the subject.
*broadcast*: every active component of the role sees the event.
*kernel*: a kernel stage (the task gate, group closing) in the run's coordinator.
"""

from __future__ import annotations

from envkernel_bus.subjects import event_subject
from envkernel_schemas import Event

from .config import RunConfig

WORK_INPUTS: dict[str, str] = {
    "synthesizer": "env.requested",
    "verifier": "env.synthesized",
    "sampler": "env.verified",
    "policy": "rollout.requested",
    "reward_model": "rollout.finished",
}
"""Work role -> the event kind it consumes."""

BROADCAST_INPUTS: dict[str, tuple[str, ...]] = {
    "trainer": ("group.scored", "iteration.ended", "run.ending")
}
"""Broadcast role -> the event kinds every one of its components sees."""

KERNEL_INPUTS: frozenset[str] = frozenset(
    {"task.proposed", "rollout.scored", "task.gated", "plugin.failed"}
)
"""Kinds the coordinator's kernel stages handle (``plugin.failed`` only to close gates and
groups)."""

WORK_KINDS = {kind: role for role, kind in WORK_INPUTS.items()}
"""Event kind -> work role."""
SERVED_KINDS: frozenset[str] = frozenset(WORK_KINDS) | {
    k for kinds in BROADCAST_INPUTS.values() for k in kinds
}
"""Kinds a worker decodes too (the coordinator keeps its decoding for it:
``envkernel_bus.decode_shared``)."""


def first(config: RunConfig, role: str, chosen: str = "") -> str:
    """The component of ``role`` this run uses: the configured one, else the first active."""
    return chosen or next(iter(config.components.get(role, [])), "")


def synthesizer_for(
    config: RunConfig, sources: dict[str, tuple[str, ...]], source_kind: str
) -> str:
    """The synthesizer that handles ``source_kind`` (empty when none does)."""
    for name in config.components.get("synthesizer", []):
        if source_kind in sources.get(name, (name,)):
            return name
    return ""


def subject_of(config: RunConfig, event: Event, target: str | None = None) -> str:
    """The subject to publish ``event`` on (``target`` is the work component, when there is one)."""
    return event_subject(config.run_id, event.kind, target)


def expected_handlers(config: RunConfig, kind: str) -> int:
    """How many handled reports an event of ``kind`` will get (causal completion)."""
    if kind in WORK_KINDS or kind in KERNEL_INPUTS:
        return 1
    if kind in BROADCAST_INPUTS["trainer"]:
        return len(config.components.get("trainer", []))
    return 0
