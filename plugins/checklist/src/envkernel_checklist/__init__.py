"""envkernel-checklist: the ``checklist`` reward model — the fraction of a task's checks that pass.

Partial credit, as in EnvScaler, with checks derived from the task's Outcome (see
:mod:`envkernel_checklist.checks` for the exact rules): one check per expected row change of a
state-changing task, or per answer fact of a read-only one, plus guards that nothing else
changed. The reference scores 1 and doing nothing scores 0, so the checklist can also drive the
kernel's task gate (``reward = "checklist"``).

``Reward.outcome`` is the score, ``Reward.tau`` is 0 (no trace part), and ``Reward.reasons``
lists the failed checks after a ``checklist: P/N checks passed`` line.

A task with a check script (``Outcome.check``: a workspace task) is graded by that script instead,
as ``traceoutcome`` does: :func:`envkernel_kit.grading.grade_blocking` runs it inside a sandbox over
the rollout's rebuilt final workspace and its transcript, and the score is the mean of its
criteria (each criterion is one check of the list).
"""

from __future__ import annotations

from typing import Any

import msgspec

from envkernel.hookspecs import hookimpl
from envkernel_kit.grading import GradeKind, grade_blocking, task_kind
from envkernel_schemas import Reward, Task, Trajectory

from .checks import (
    Check,
    call_check,
    checklist,
    fact_checks,
    fraction,
    pair_changes,
    state_checks,
    table_checks,
)

__all__ = [
    "Check",
    "Checklist",
    "ChecklistSettings",
    "Settings",
    "call_check",
    "checklist",
    "fact_checks",
    "fraction",
    "pair_changes",
    "register_reward_models",
    "score",
    "state_checks",
    "table_checks",
]


class ChecklistSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``checklist`` reward model."""

    strict_calls: bool = False
    """Add a guard: every tool call succeeded and none was malformed (off: exploring is allowed)."""
    max_reasons: int = 20
    """Failed checks listed in the reasons at most (the count is always given)."""


Settings = ChecklistSettings
"""Alias: the settings of this plugin's component."""


def score(
    task: Task,
    trajectory: Trajectory,
    *,
    strict_calls: bool = False,
    max_reasons: int = 20,
    model: str = "checklist",
) -> Reward:
    """Score one trajectory: ``passed credit checks / (credit checks + failed guards)``."""
    checks = checklist(task, trajectory, strict_calls=strict_calls)
    credit = [c for c in checks if not c.guard]
    if not credit:
        what = (
            "expects a state change but its expected state changes no row"
            if task.outcome.mutates
            else "is read-only but has no answer facts"
        )
        msg = f"checklist: task {task.id} {what}, so it has no checks"
        return Reward(score=0.0, model=model, tau=0.0, reasons=[msg], error=msg)
    value, passed, denom = fraction(checks)
    failed = [c for c in checks if not c.passed]
    reasons = [
        f"checklist: {passed}/{len(credit)} checks passed"
        + (f", {denom - len(credit)} guard(s) failed" if denom > len(credit) else "")
    ]
    for c in failed[:max_reasons]:
        reasons.append(
            f"failed ({c.kind}): {c.description}" + (f" — {c.detail}" if c.detail else "")
        )
    if len(failed) > max_reasons:
        reasons.append(f"… and {len(failed) - max_reasons} more failed checks")
    return Reward(
        score=round(value, 12), model=model, outcome=round(value, 12), tau=0.0, reasons=reasons
    )


class Checklist:
    """The ``checklist`` reward model."""

    Settings = ChecklistSettings

    def __init__(self, settings: ChecklistSettings | None = None) -> None:
        self.settings = settings or ChecklistSettings()

    def score(self, task: Task, trajectory: Trajectory, ctx: Any) -> Reward:
        """Score a rollout (see the module docstring); a task with a check script by that script, in
        a sandbox."""
        s = self.settings
        reward = grade_blocking(
            ctx,
            task,
            trajectory,
            in_process=lambda t, tr: score(
                t, tr, strict_calls=s.strict_calls, max_reasons=s.max_reasons, model=ctx.component
            ),
            model=ctx.component,
        )
        if task_kind(task) is not GradeKind.SCRIPT:
            return reward
        met = "every criterion met" if reward.score >= 1.0 else "criteria missed"
        head = f"checklist: graded by the task's check script ({met})"
        return msgspec.structs.replace(reward, reasons=[head, *reward.reasons[: s.max_reasons]])


@hookimpl
def register_reward_models(register: Any) -> None:
    """Register the ``checklist`` reward model."""
    register("checklist", Checklist)
