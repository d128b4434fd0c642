"""Scored groups as trainers read them: their purpose and their GRPO advantages.

One definition for every trainer and policy that learns from groups (``grpo`` writes the rows,
``reinforce`` learns from them, the ``card`` exporter counts them), so they never disagree on which
groups carry a learning signal.
"""

from __future__ import annotations

import math
from typing import Any

from envkernel_schemas import GroupScored

__all__ = ["DEFAULT_EPS", "DEFAULT_VAR_TOL", "advantages", "purpose_of", "signal", "variance"]

DEFAULT_EPS = 1e-6
"""Added to a group's std in the denominator of :func:`advantages`."""
DEFAULT_VAR_TOL = 1e-12
"""A group whose reward variance is at most this carries no signal (``zero_variance``)."""


def purpose_of(group: GroupScored) -> str:
    """The group's purpose (``train`` unless the event says otherwise)."""
    return str(getattr(group, "purpose", "train") or "train")


def variance(rewards: list[float]) -> float:
    """Population variance."""
    if not rewards:
        return 0.0
    mean = sum(rewards) / len(rewards)
    return sum((r - mean) ** 2 for r in rewards) / len(rewards)


def advantages(rewards: list[float], eps: float = DEFAULT_EPS) -> list[float]:
    """Group-normalised advantages ``(r − mean) / (std + eps)`` (population std, as GRPO does)."""
    if not rewards:
        return []
    mean = sum(rewards) / len(rewards)
    std = math.sqrt(variance(rewards))
    return [(r - mean) / (std + eps) for r in rewards]


def signal(group: GroupScored, var_tol: float = DEFAULT_VAR_TOL) -> tuple[str, list[Any]]:
    """(``"kept"`` | ``"zero_variance"`` | ``"too_small"``, the usable rollouts): a group is kept
    when at least two rollouts have a reward without ``error`` and their rewards vary by more than
    ``var_tol``."""
    usable = [r for r in group.rollouts if not r.reward.error]
    if len(usable) < 2:
        return "too_small", usable
    if variance([float(r.reward.score) for r in usable]) <= var_tol:
        return "zero_variance", usable
    return "kept", usable
