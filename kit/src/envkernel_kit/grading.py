"""One grading entry point: how a rollout of a task is graded is decided once, from the task's kind.

A task is graded in one of three ways (:class:`GradeKind`), read from its :class:`Outcome`:

- ``script``: the task has a check script (``outcome.check``, a workspace task). The script is
  untrusted code, so it runs only in a sandbox, over the rollout's rebuilt final workspace and its
  transcript (:func:`envkernel_kit.workspace.script_reward`); the score is the mean of its criteria.
- ``state``: the task changes state; the final state is compared with ``outcome.expected_state``.
- ``answer``: a read-only task; the final answer is checked for ``outcome.answer_facts``.

``state`` and ``answer`` are graded in this process. By default with the trace + outcome reward
(:func:`grade_in_process`, :func:`envkernel_kit.scoring.score`); a reward model with its own
in-process scorer (a checklist, an LLM judge) passes it as ``in_process``. Every reward model,
and so the gate, and ``envkernel serve`` grade through :func:`grade` (async) or
:func:`grade_blocking` (from a sync reward model's worker thread), so the chosen reward never
decides whether a workspace task's script runs::

    async def score(self, task, trajectory, ctx):
        return await grade(ctx, task, trajectory, in_process=self.judge, model=ctx.component)
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Any

from envkernel_kit.scoring import score
from envkernel_kit.workspace import script_reward
from envkernel_schemas import Reward, Task, Trajectory

__all__ = [
    "GradeKind",
    "InProcess",
    "grade",
    "grade_blocking",
    "grade_in_process",
    "needs_sandbox",
    "task_kind",
]


class GradeKind(StrEnum):
    """How a task's rollouts are graded."""

    SCRIPT = "script"
    """A workspace check script (``outcome.check``), run in a sandbox."""
    STATE = "state"
    """The final state against ``outcome.expected_state``, in process."""
    ANSWER = "answer"
    """The final answer against ``outcome.answer_facts`` (rows, order, absent values), here."""


InProcess = Callable[[Task, Trajectory], "Reward | Awaitable[Reward]"]
"""A reward model's own grading of a ``state`` or ``answer`` task: ``(task, trajectory) -> Reward``
(or an awaitable of one, for :func:`grade`)."""


def task_kind(task: Task) -> GradeKind:
    """How ``task`` is graded: by its check script if it has one, else its state or answer."""
    if task.outcome.check:
        return GradeKind.SCRIPT
    return GradeKind.STATE if task.outcome.mutates else GradeKind.ANSWER


def needs_sandbox(task: Task) -> bool:
    """True when grading ``task`` runs code (its check script), which happens only in a sandbox."""
    return task_kind(task) is GradeKind.SCRIPT


def grade_in_process(task: Task, trajectory: Trajectory, **trace_outcome: Any) -> Reward:
    """Grade a ``state`` or ``answer`` task with the trace + outcome reward
    (:func:`envkernel_kit.scoring.score`, whose settings ``trace_outcome`` passes on, with its
    defaults); pure, no I/O. Raises ``ValueError`` for a ``script`` task, whose check runs only in
    a sandbox (use :func:`grade`)."""
    if needs_sandbox(task):
        raise ValueError(
            f"task {task.id} is graded by its check script, which runs only in a sandbox: "
            "use envkernel_kit.grading.grade(ctx, task, trajectory)"
        )
    return score(task, trajectory, **trace_outcome)


async def grade(
    ctx: Any,
    task: Task,
    trajectory: Trajectory,
    *,
    in_process: InProcess | None = None,
    model: str = "",
    **trace_outcome: Any,
) -> Reward:
    """Grade one rollout, dispatching once on :func:`task_kind`: a ``script`` task's check runs in a
    sandbox from ``ctx`` (``ctx.env`` and ``ctx.sandbox``); a ``state`` or ``answer`` task is graded
    by ``in_process`` when given (awaited when it returns an awaitable), else by
    :func:`grade_in_process` with the ``trace_outcome`` settings (``tau``, ``length_step``, ...)."""
    if needs_sandbox(task):
        return await script_reward(ctx, task, trajectory, model=model)
    if in_process is None:
        return grade_in_process(task, trajectory, model=model, **trace_outcome)
    out = in_process(task, trajectory)
    return await out if inspect.isawaitable(out) else out


def grade_blocking(
    ctx: Any,
    task: Task,
    trajectory: Trajectory,
    *,
    in_process: Callable[[Task, Trajectory], Reward] | None = None,
    model: str = "",
    **trace_outcome: Any,
) -> Reward:
    """:func:`grade` for a sync reward model: a ``script`` task's check runs on the kernel's loop
    through ``ctx.wait`` (so call this from a worker thread, never on the loop); any other task is
    graded here, on the calling thread."""
    if needs_sandbox(task):
        reward: Reward = ctx.wait(script_reward(ctx, task, trajectory, model=model))
        return reward
    if in_process is None:
        return grade_in_process(task, trajectory, model=model, **trace_outcome)
    return in_process(task, trajectory)
