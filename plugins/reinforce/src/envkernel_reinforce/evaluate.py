"""Did the learner learn? Held-out reward of the trained policy against the random policy.

Iteration 0 of a ``reinforce`` run rolls out the untrained policy, whose weights are all 0: the
uniform random policy over the same actions, with the same argument oracle, on the same tasks.
The last iteration rolls out the policy trained on the *train* tasks. On each *held-out* task,
the gain is the last iteration's mean reward minus iteration 0's; tasks (over one or more seeds)
are the independent units, so the standard error is that of the mean per-task gain.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any


def task_rewards(
    run_dir: Path, split: str = "heldout", policy: str = "reinforce"
) -> dict[int, dict[str, list[float]]]:
    """iteration -> task id -> rewards of ``policy``'s training rollouts, for tasks of ``split``."""
    splits = {}
    for line in (run_dir / "tasks.jsonl").read_text().splitlines():
        if line.strip():
            t = json.loads(line)
            splits[t["id"]] = t.get("split", "train")
    out: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for line in (run_dir / "rollouts.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        if (
            r["purpose"] != "train"
            or r["trajectory"]["policy"] != policy
            or splits.get(r["task_id"]) != split
        ):
            continue
        out[r["iteration"]][r["task_id"]].append(r["reward"]["score"])
    return out


def gains(
    run_dir: Path, split: str = "heldout", policy: str = "reinforce"
) -> tuple[list[float], float, float]:
    """Per-task gains (last iteration − iteration 0) on ``split``, and the two mean rewards."""
    by_it = task_rewards(run_dir, split, policy)
    if len(by_it) < 2:
        raise ValueError(
            f"{run_dir} has fewer than two iterations of {policy} rollouts on {split} tasks"
        )
    first, last = by_it[min(by_it)], by_it[max(by_it)]
    common = sorted(set(first) & set(last))

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs)

    diffs = [mean(last[t]) - mean(first[t]) for t in common]
    return diffs, mean([mean(first[t]) for t in common]), mean([mean(last[t]) for t in common])


def compare(
    run_dirs: list[Path], split: str = "heldout", policy: str = "reinforce"
) -> dict[str, Any]:
    """Pool the per-task gains of several runs (seeds): mean gain, its standard error, z =
    mean/SE."""
    all_diffs: list[float] = []
    per_run = []
    for d in run_dirs:
        diffs, before, after = gains(d, split, policy)
        all_diffs.extend(diffs)
        per_run.append(
            {
                "run": d.name,
                "tasks": len(diffs),
                "random": round(before, 4),
                "trained": round(after, 4),
            }
        )
    n = len(all_diffs)
    mean = sum(all_diffs) / n if n else 0.0
    sd = math.sqrt(sum((x - mean) ** 2 for x in all_diffs) / (n - 1)) if n > 1 else 0.0
    se = sd / math.sqrt(n) if n else 0.0
    return {
        "tasks": n,
        "mean_gain": round(mean, 4),
        "se": round(se, 4),
        "z": round(mean / se, 2) if se else None,
        "runs": per_run,
    }
