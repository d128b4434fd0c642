"""Preference pairs from scored groups (pure row building, no I/O).

The rule: a group gives at most one pair, **best vs worst**. Only rollouts whose reward has no
error count. A group needs at least two of them, and its best and worst scores must differ by
more than ``min_margin``. ``chosen`` is the highest-scoring rollout (ties: the lowest index),
``rejected`` the lowest-scoring one (ties: the lowest index). ``prompt`` is the chosen
trajectory's messages up to and including the first user turn; ``chosen`` / ``rejected`` are the
assistant and tool messages after it.
"""

from __future__ import annotations

from typing import Any

from envkernel_schemas import GroupScored, ScoredRollout

from .rows import chat_messages, dumps


def split_prompt(
    messages: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(messages up to and including the first user turn, the continuation after it)."""
    for i, m in enumerate(messages):
        if m.get("role") == "user":
            return messages[: i + 1], messages[i + 1 :]
    return [], list(messages)


def choose_pair(
    group: GroupScored, *, min_margin: float = 0.0
) -> tuple[ScoredRollout, ScoredRollout] | None:
    """(chosen, rejected) by the best-vs-worst rule, or None when the group gives no pair."""
    usable = [r for r in group.rollouts if not r.reward.error]
    if len(usable) < 2:
        return None
    best = max(usable, key=lambda r: (r.reward.score, -r.trajectory.index))
    worst = min(usable, key=lambda r: (r.reward.score, r.trajectory.index))
    if best.reward.score - worst.reward.score <= min_margin:
        return None
    return best, worst


def pair_row(
    group: GroupScored,
    chosen: ScoredRollout,
    rejected: ScoredRollout,
    tools: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One ``pairs.jsonl`` line (``tools`` as a JSON string: their schemas vary by environment)."""
    prompt, chosen_cont = split_prompt(chat_messages(chosen.trajectory.messages))
    _, rejected_cont = split_prompt(chat_messages(rejected.trajectory.messages))
    task = group.task
    return {
        "id": group.id,
        "prompt": prompt,
        "chosen": chosen_cont,
        "rejected": rejected_cont,
        "chosen_reward": float(chosen.reward.score),
        "rejected_reward": float(rejected.reward.score),
        "chosen_index": int(chosen.trajectory.index),
        "rejected_index": int(rejected.trajectory.index),
        "task_id": task.id,
        "env_id": task.env_id,
        "split": task.split,
        "difficulty": float(task.difficulty),
        "group_size": len(group.rollouts),
        "iteration": int(group.iteration),
        "tools": dumps(tools or []),
    }


def pair_key(row: dict[str, Any]) -> str | None:
    """Deduplication key of a pair: its group's event id."""
    return f"pair:{row['id']}" if "id" in row else None
