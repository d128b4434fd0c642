"""envkernel-grpo: GRPO groups (trainer role, broadcast; not in the default preset).

For each scored group, the ``grpo`` component computes group-normalised advantages
``A_i = (r_i − mean(r)) / (std(r) + eps)`` (population std, as GRPO does) and appends one line per
rollout to ``grpo.jsonl``: ``task_id``, ``env_id``, ``index``, ``reward``, ``advantage`` (plus
``group_id``, ``policy``, ``split``, ``difficulty``, ``iteration``).

Groups that carry no learning signal are dropped, counted and logged, as DAPO and ASTRA do:

- ``zero_variance``: every reward in the group is equal (within ``var_tol``), so every advantage
  is 0;
- ``too_small``: fewer than two usable rollouts (rollouts whose reward has an ``error`` are not
  used).

When the run ends, ``grpo_stats.json`` gives, overall, per environment and per difficulty bucket:
``groups``, ``kept``, ``dropped_zero_variance``, ``dropped_too_small``, ``rollouts`` (kept),
``mean_reward`` (over every usable rollout) and ``mean_abs_advantage`` (over kept rollouts).
"""

from __future__ import annotations

import json
import os
from bisect import bisect_right
from collections import defaultdict
from pathlib import Path
from typing import Any

import msgspec

from envkernel.hookspecs import hookimpl
from envkernel_kit.groups import DEFAULT_EPS, DEFAULT_VAR_TOL, advantages, purpose_of, signal
from envkernel_kit.sink import JsonlSink
from envkernel_schemas import GroupScored

__all__ = ["Grpo", "GrpoSettings", "advantages", "bucket_of", "grpo_rows", "register_trainers"]


class GrpoSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``grpo`` component."""

    eps: float = DEFAULT_EPS
    """Added to the group's std in the denominator."""
    var_tol: float = DEFAULT_VAR_TOL
    """A group whose reward variance is at most this is dropped (zero variance)."""
    splits: list[str] = msgspec.field(default_factory=lambda: ["train"])
    """Use only tasks of these splits."""
    buckets: list[float] = msgspec.field(default_factory=lambda: [1 / 3, 2 / 3])
    """Difficulty bucket edges (ascending): ``[a, b]`` gives buckets ``[0,a)``, ``[a,b)``,
    ``[b,1]``."""
    filename: str = "grpo.jsonl"
    """JSON-lines file name in the run folder."""
    stats_filename: str = "grpo_stats.json"
    """Statistics file name in the run folder."""
    fsync: bool = False
    """fsync after every line."""


def bucket_of(difficulty: float, edges: list[float]) -> str:
    """The difficulty bucket's label, e.g. ``0.33-0.67``."""
    bounds = [0.0, *edges, 1.0]
    i = min(bisect_right(edges, difficulty), len(bounds) - 2)
    return f"{bounds[i]:.2f}-{bounds[i + 1]:.2f}"


def grpo_rows(
    group: GroupScored, settings: GrpoSettings | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """(``"kept"`` | ``"zero_variance"`` | ``"too_small"``, the group's rows; empty unless kept)."""
    s = settings or GrpoSettings()
    verdict, usable = signal(group, s.var_tol)
    if verdict != "kept":
        return verdict, []
    rewards = [float(r.reward.score) for r in usable]
    task = group.task
    rows = [
        {
            "id": f"{group.id}/{r.trajectory.index}",
            "group_id": group.id,
            "task_id": task.id,
            "env_id": task.env_id,
            "split": task.split,
            "difficulty": float(task.difficulty),
            "iteration": int(group.iteration),
            "policy": r.trajectory.policy,
            "index": int(r.trajectory.index),
            "reward": reward,
            "advantage": adv,
        }
        for r, reward, adv in zip(usable, rewards, advantages(rewards, s.eps), strict=True)
    ]
    return "kept", rows


def _key(row: dict[str, Any]) -> str | None:
    return str(row["id"]) if "id" in row else None


class _Stats:
    def __init__(self) -> None:
        self.groups = 0
        self.kept = 0
        self.zero = 0
        self.small = 0
        self.rollouts = 0
        self.reward_sum = 0.0
        self.reward_n = 0
        self.abs_adv_sum = 0.0

    def add(self, verdict: str, rewards: list[float], rows: list[dict[str, Any]]) -> None:
        self.groups += 1
        self.kept += verdict == "kept"
        self.zero += verdict == "zero_variance"
        self.small += verdict == "too_small"
        self.reward_sum += sum(rewards)
        self.reward_n += len(rewards)
        self.rollouts += len(rows)
        self.abs_adv_sum += sum(abs(r["advantage"]) for r in rows)

    def as_dict(self) -> dict[str, Any]:
        return {
            "groups": self.groups,
            "kept": self.kept,
            "dropped_zero_variance": self.zero,
            "dropped_too_small": self.small,
            "rollouts": self.rollouts,
            "mean_reward": round(self.reward_sum / self.reward_n, 6) if self.reward_n else None,
            "mean_abs_advantage": round(self.abs_adv_sum / self.rollouts, 6)
            if self.rollouts
            else None,
        }


class Grpo:
    """The ``grpo`` component.

    Lines are deduplicated by ``<group id>/<index>`` across restarts (as the exporters do);
    the statistics count the groups this process consumed, each once.
    """

    Settings = GrpoSettings

    def __init__(self, settings: GrpoSettings | None = None) -> None:
        self.settings = settings or GrpoSettings()
        self._sink: JsonlSink | None = None
        self._seen: set[str] = set()
        self.total = _Stats()
        self.per_env: dict[str, _Stats] = defaultdict(_Stats)
        self.per_bucket: dict[str, _Stats] = defaultdict(_Stats)

    def sink(self, out_dir: Path) -> JsonlSink:
        """The output file."""
        if self._sink is None:
            self._sink = JsonlSink(
                Path(out_dir) / self.settings.filename, _key, fsync=self.settings.fsync
            )
        return self._sink

    def add(self, group: GroupScored) -> tuple[str, list[dict[str, Any]]]:
        """Compute the group's rows and count it (once per group id); no I/O."""
        verdict, rows = grpo_rows(group, self.settings)
        if group.id not in self._seen:
            self._seen.add(group.id)
            rewards = [float(r.reward.score) for r in group.rollouts if not r.reward.error]
            bucket = bucket_of(group.task.difficulty, self.settings.buckets)
            for st in (self.total, self.per_env[group.task.env_id], self.per_bucket[bucket]):
                st.add(verdict, rewards, rows)
        return verdict, rows

    async def consume(self, group: GroupScored, ctx: Any) -> None:
        """Write the group's advantages, or count and log why it is dropped."""
        s = self.settings
        if purpose_of(group) != "train" or (s.splits and group.task.split not in s.splits):
            return
        verdict, rows = self.add(group)
        if verdict != "kept":
            ctx.log.info(
                "grpo group dropped",
                reason=verdict,
                task=group.task.id,
                group=group.id,
                rollouts=len(group.rollouts),
            )
            return
        sink = self.sink(ctx.out_dir)
        for row in rows:
            sink.write(row)

    def stats(self) -> dict[str, Any]:
        """The statistics: overall, per environment, per difficulty bucket."""
        return {
            "eps": self.settings.eps,
            "total": self.total.as_dict(),
            "per_env": {k: v.as_dict() for k, v in sorted(self.per_env.items())},
            "per_difficulty": {k: v.as_dict() for k, v in sorted(self.per_bucket.items())},
        }

    async def finish(self, ctx: Any) -> None:
        """Close ``grpo.jsonl`` (created empty when every group was dropped) and write
        ``grpo_stats.json`` (atomically replaced)."""
        sink = self.sink(ctx.out_dir)
        sink.close()
        sink.path.parent.mkdir(parents=True, exist_ok=True)
        sink.path.touch()
        stats = self.stats()
        path = Path(ctx.out_dir) / self.settings.stats_filename
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(stats, indent=2))
        os.replace(tmp, path)
        t = stats["total"]
        ctx.log.info(
            "grpo groups",
            groups=t["groups"],
            kept=t["kept"],
            dropped_zero_variance=t["dropped_zero_variance"],
            dropped_too_small=t["dropped_too_small"],
            path=str(path),
        )


@hookimpl
def register_trainers(register: Any) -> None:
    """Register the ``grpo`` component."""
    register("grpo", Grpo)
