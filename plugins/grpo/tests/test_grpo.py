"""GRPO groups: advantages, zero-variance drops, the file and the statistics."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import msgspec
import pytest

from envkernel_grpo import Grpo, GrpoSettings, advantages, bucket_of, grpo_rows, register_trainers
from envkernel_kit.testing import FakeContext
from envkernel_schemas import (
    GroupScored,
    Outcome,
    Reward,
    ScoredRollout,
    Task,
    ToolCall,
    Trajectory,
)


def _task(
    tid: str = "t1", env: str = "shop", difficulty: float = 0.2, split: str = "train"
) -> Task:
    return Task(
        id=tid,
        env_id=env,
        request="r",
        calls=[ToolCall(name="f")],
        outcome=Outcome(mutates=False),
        difficulty=difficulty,
        split=split,  # type: ignore[arg-type]
    )


def _g(
    gid: str, *scores: float, task: Task | None = None, errors: tuple[int, ...] = ()
) -> GroupScored:
    rollouts = [
        ScoredRollout(
            trajectory=Trajectory(task_id="t", policy="p", index=i),
            reward=Reward(score=s, error="x" if i in errors else ""),
        )
        for i, s in enumerate(scores)
    ]
    return GroupScored(run="r", id=gid, task=task or _task(), rollouts=rollouts)


def Ctx(out_dir: Path) -> FakeContext:
    """The kit's run-like context writing to ``out_dir``."""
    return FakeContext(component="grpo", out_dir=out_dir)


def test_advantages_are_group_normalised() -> None:
    a = advantages([1.0, 0.0], eps=0.0)
    assert a == [1.0, -1.0]
    r = [1.0, 0.5, 0.0, 0.0]
    a = advantages(r)
    mean = sum(r) / 4
    std = math.sqrt(sum((x - mean) ** 2 for x in r) / 4)
    assert a == pytest.approx([(x - mean) / (std + 1e-6) for x in r])
    assert abs(sum(a)) < 1e-9
    assert advantages([]) == []


def test_bucket_of() -> None:
    edges = [1 / 3, 2 / 3]
    assert bucket_of(0.0, edges) == "0.00-0.33" and bucket_of(0.5, edges) == "0.33-0.67"
    assert bucket_of(1.0, edges) == "0.67-1.00" and bucket_of(2 / 3, edges) == "0.67-1.00"
    assert bucket_of(0.4, []) == "0.00-1.00"


def test_grpo_rows_verdicts() -> None:
    verdict, rows = grpo_rows(_g("g", 1.0, 0.0, 0.5))
    assert verdict == "kept" and [r["index"] for r in rows] == [0, 1, 2]
    assert rows[0]["advantage"] > 0 > rows[1]["advantage"] and rows[2][
        "advantage"
    ] == pytest.approx(0.0)
    assert {"task_id", "env_id", "index", "reward", "advantage"} <= set(rows[0])
    assert grpo_rows(_g("g", 1.0, 1.0, 1.0)) == ("zero_variance", [])
    assert grpo_rows(_g("g", 1.0)) == ("too_small", [])
    assert grpo_rows(_g("g", 1.0, 0.0, errors=(1,))) == (
        "too_small",
        [],
    )  # an errored reward is not used
    verdict, rows = grpo_rows(_g("g", 1.0, 0.0, 0.0, errors=(2,)))
    assert verdict == "kept" and [r["index"] for r in rows] == [0, 1]


def test_component_file_stats_and_restart(tmp_path: Path) -> None:
    ctx = Ctx(tmp_path)

    async def go(g: Grpo) -> None:
        await g.consume(_g("g1", 1.0, 0.0, 0.0), ctx)
        await g.consume(_g("g1", 1.0, 0.0, 0.0), ctx)  # redelivered
        await g.consume(_g("g2", 1.0, 1.0, 1.0, task=_task("t2", env="bank", difficulty=0.9)), ctx)
        await g.consume(_g("g3", 0.0, 1.0, task=_task("t3", env="bank", difficulty=0.5)), ctx)
        await g.consume(
            _g("g4", 0.0, 1.0, task=_task("t4", split="heldout")), ctx
        )  # not a training split
        await g.consume(_g("g5", 0.0), ctx)
        await g.finish(ctx)

    asyncio.run(go(Grpo()))
    lines = [json.loads(x) for x in (tmp_path / "grpo.jsonl").read_text().splitlines()]
    assert [(x["group_id"], x["index"]) for x in lines] == [
        ("g1", 0),
        ("g1", 1),
        ("g1", 2),
        ("g3", 0),
        ("g3", 1),
    ]
    stats = json.loads((tmp_path / "grpo_stats.json").read_text())
    assert stats["total"] == {
        "groups": 4,
        "kept": 2,
        "dropped_zero_variance": 1,
        "dropped_too_small": 1,
        "rollouts": 5,
        "mean_reward": pytest.approx(5 / 9, rel=1e-5),
        "mean_abs_advantage": pytest.approx(stats["total"]["mean_abs_advantage"]),
    }
    assert (
        stats["per_env"]["bank"]["dropped_zero_variance"] == 1
        and stats["per_env"]["bank"]["kept"] == 1
    )
    assert stats["per_env"]["shop"]["groups"] == 2
    assert set(stats["per_difficulty"]) == {"0.00-0.33", "0.33-0.67", "0.67-1.00"}
    assert stats["per_difficulty"]["0.67-1.00"]["dropped_zero_variance"] == 1
    expected_abs = (
        sum(abs(a) for a in advantages([1.0, 0.0, 0.0])) + 2 * abs(advantages([0.0, 1.0])[0])
    ) / 5
    assert stats["total"]["mean_abs_advantage"] == pytest.approx(expected_abs, rel=1e-5)

    asyncio.run(go(Grpo()))  # a new process: the lines are not written twice
    assert len((tmp_path / "grpo.jsonl").read_text().splitlines()) == 5


def test_finish_without_groups(tmp_path: Path) -> None:
    asyncio.run(Grpo().finish(Ctx(tmp_path)))
    assert (tmp_path / "grpo.jsonl").read_text() == ""
    assert json.loads((tmp_path / "grpo_stats.json").read_text())["total"]["groups"] == 0


def test_settings_and_registration() -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"epsilon": 1}, GrpoSettings)
    got: dict[str, object] = {}
    register_trainers(lambda n, f: got.__setitem__(n, f))
    assert got == {"grpo": Grpo}
