"""envkernel-traceoutcome: the outcome reward model, with an optional EnvFactory-style trace term.

The maths lives in :mod:`envkernel_kit.scoring` (re-exported as
:mod:`envkernel_traceoutcome.scoring`); this module wires it to the ``reward_model`` role with its
settings and the τ schedule.
"""

from __future__ import annotations

from typing import Any

import msgspec

from envkernel.hookspecs import hookimpl
from envkernel_kit.grading import grade_blocking, needs_sandbox
from envkernel_kit.scoring import REL_TOL, score, tau_at
from envkernel_runtime.calls import inline_when
from envkernel_schemas import Reward, Task, Trajectory

__all__ = [
    "TraceOutcomeSettings",
    "Settings",
    "TraceOutcome",
    "register_reward_models",
    "score",
    "tau_at",
]


class TraceOutcomeSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``traceoutcome`` reward model."""

    tau: float = 0.0
    """Weight of the trace part (at iteration 0). 0 by default: the score is the outcome, so any
    path to the right end state and answer scores 1; set it (or ``tau_final``) for a warm-up
    curriculum that also rewards following the reference's calls."""
    tau_final: float | None = None
    """When set, τ moves linearly from ``tau`` to this over ``tau_iterations`` (EnvFactory: 0.9 ->
    0.1)."""
    tau_iterations: int = 1
    """Iterations the schedule spans (``tau_final`` is reached at iteration
    ``tau_iterations − 1``)."""
    length_step: float = 0.05
    """Penalty per call beyond the reference length."""
    format_step: float = 0.05
    """Penalty per format error."""
    cap: float = 0.5
    """Cap of each penalty."""
    rel_tol: float = REL_TOL
    """Relative tolerance when comparing numbers in arguments."""
    question_step: float = 0.05
    """Cost per question the user answered beyond what the task holds back (capped at ``cap``)."""
    partial: bool = True
    """A write task short of its end state scores the share of the request's row changes made
    (0 when a row is wrong or not asked for); False: all or nothing. Partial credit is never for
    the calls made."""

    def __post_init__(self) -> None:
        for name in ("tau", "tau_final"):
            v = getattr(self, name)
            if v is not None and not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {v}")
        if min(self.length_step, self.format_step, self.question_step, self.cap, self.rel_tol) < 0:
            raise ValueError(
                "length_step, format_step, question_step, cap and rel_tol must not be negative"
            )


Settings = TraceOutcomeSettings
"""Alias: the settings of this plugin's component(s)."""


class TraceOutcome:
    """The ``traceoutcome`` reward model."""

    Settings = TraceOutcomeSettings

    def __init__(self, settings: TraceOutcomeSettings | None = None) -> None:
        self.settings = settings or TraceOutcomeSettings()

    def tau(self, iteration: int) -> float:
        """τ at a training iteration."""
        s = self.settings
        return tau_at(s.tau, s.tau_final, s.tau_iterations, iteration)

    @inline_when(
        lambda task, trajectory, ctx: not needs_sandbox(task)
    )  # pure CPU: on the loop; a check script blocks: a thread
    def score(self, task: Task, trajectory: Trajectory, ctx: Any) -> Reward:
        """Score a rollout: ``max(0, τ·trace + (1−τ)·outcome − length_penalty − format_penalty)``. A
        workspace task (one with a check script) scores its check instead, run in a sandbox
        (:func:`envkernel_kit.grading.grade_blocking` decides)."""
        s = self.settings
        return grade_blocking(
            ctx,
            task,
            trajectory,
            tau=self.tau(ctx.iteration),
            length_step=s.length_step,
            format_step=s.format_step,
            cap=s.cap,
            rel_tol=s.rel_tol,
            partial=s.partial,
            question_step=s.question_step,
            model=ctx.component,
        )


@hookimpl
def register_reward_models(register: Any) -> None:
    """Register the ``traceoutcome`` reward model."""
    register("traceoutcome", TraceOutcome)
