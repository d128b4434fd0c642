"""Every exported file loads with ``datasets`` and with ``pyarrow``, without hand-fixing.

Real runs (``envkernel run`` as a subprocess) give the SFT, RL, GRPO files and the dataset card;
the reference policy always scores 1, so the pair and GRPO files with differing rewards are made
in-process from the run's real tasks and trajectories with rewards assigned per index.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import datasets
import msgspec
import pyarrow.json as pj
import pyarrow.parquet as pq
import pytest

from envkernel_export.extra import Card, Pairs
from envkernel_grpo import Grpo
from envkernel_kit.testing import FakeContext
from envkernel_schemas import GroupScored, Reward, ScoredRollout, Task, Trajectory

pytestmark = pytest.mark.timeout(300)


def load_both(path: Path, cache: Path) -> tuple[Any, Any]:
    """(pyarrow table, datasets Dataset) of a JSON-lines or parquet file."""
    if path.suffix == ".parquet":
        table = pq.read_table(path)
        ds = datasets.load_dataset(
            "parquet", data_files=str(path), split="train", cache_dir=str(cache)
        )
    else:
        table = pj.read_json(path)
        ds = datasets.load_dataset(
            "json", data_files=str(path), split="train", cache_dir=str(cache)
        )
    assert table.num_rows == len(ds)
    return table, ds


def nlines(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.strip())


def Ctx(out_dir: Path) -> FakeContext:
    """The kit's run-like context for a trainer called in-process (no environment service)."""
    return FakeContext(component="card", role="trainer", out_dir=out_dir)


@pytest.fixture(scope="module")
def sample_run(envk_factory: Any) -> Any:
    envk = envk_factory("exportrun")
    run = envk.run("-G", "3", "--plugins", "+export-extra,+grpo", run_id="exp")
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    return run


@pytest.fixture(scope="module")
def varied_groups(sample_run: Any) -> list[GroupScored]:
    """GroupScored events from the run's real tasks and trajectories, rewards 1, 0.5, 0 by index
    (every fourth group all 1: no pair, zero variance)."""
    tasks = {t["id"]: msgspec.convert(t, Task) for t in sample_run.jsonl("tasks.jsonl")}
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in sample_run.jsonl("rollouts.jsonl"):
        if r["purpose"] == "train":
            by_task[r["task_id"]].append(r)
    groups = []
    for n, (tid, rows) in enumerate(sorted(by_task.items())):
        rollouts = []
        for r in sorted(rows, key=lambda x: x["trajectory"]["index"]):
            traj = msgspec.convert(r["trajectory"], Trajectory)
            score = 1.0 if n % 4 == 0 else (1.0, 0.5, 0.0)[traj.index % 3]
            rollouts.append(ScoredRollout(trajectory=traj, reward=Reward(score=score)))
        groups.append(GroupScored(run="exp", id=f"g{n}", task=tasks[tid], rollouts=rollouts))
    assert len(groups) >= 8 and all(len(g.rollouts) == 3 for g in groups)
    return groups


def test_sft_loads_both_ways(sample_run: Any, tmp_path: Path) -> None:
    path = sample_run.dir / "sft.jsonl"
    table, ds = load_both(path, tmp_path)
    assert table.num_rows == nlines(path) > 0
    row = ds[0]
    assert {"messages", "tools", "metadata"} <= set(ds.column_names)
    tools = row["tools"]  # the OpenAI tool list; each `parameters` is a JSON string
    assert (
        tools[0]["type"] == "function"
        and json.loads(tools[0]["function"]["parameters"])["type"] == "object"
    )
    calls = [tc for m in row["messages"] if m.get("tool_calls") for tc in m["tool_calls"]]
    assert calls and all(isinstance(tc["function"]["arguments"], str) for tc in calls)
    assert row["metadata"]["score"] >= 1.0


def test_rl_jsonl_and_parquet_load_both_ways(sample_run: Any, tmp_path: Path) -> None:
    for name in ("rl.jsonl", "rl.parquet"):
        table, ds = load_both(sample_run.dir / name, tmp_path)
        assert table.num_rows == sample_run.summary["tasks"]
        row = ds[0]
        assert row["prompt"][-1]["role"] == "user" and row["data_source"].startswith("envkernel/")
        gt = row["reward_model"]["ground_truth"]
        assert (
            gt["calls"]
            and isinstance(gt["calls"][0]["arguments"], str)
            and isinstance(gt["masked_arguments"], list)
        )
        info = row["extra_info"]
        assert info["split"] in ("train", "heldout") and isinstance(
            json.loads(info["initial_state"]), dict
        )
        assert isinstance(json.loads(info["expected_state"]), dict)


def test_run_writes_the_card_and_grpo_stats(sample_run: Any) -> None:
    card = (sample_run.dir / "README.md").read_text()
    assert card.startswith("---\nconfigs:") and "## Versions" in card and "envkernel-export" in card
    data = json.loads((sample_run.dir / "card.json").read_text())
    s = sample_run.summary
    assert data["counts"]["tasks"] == s["tasks"] and data["counts"]["rollouts"] == s["rollouts"]
    assert sum(v["tasks"] for v in data["per_split"].values()) == s["tasks"]
    assert data["files"]["sft.jsonl"] == nlines(sample_run.dir / "sft.jsonl")
    assert data["counts"]["pairs"] == 0  # the reference scores 1 every time
    assert data["sources"]["sources"] == ["sample"] and data["reward"]["model"] == "traceoutcome"
    assert "tau" in data["reward"]["settings"]
    assert data["versions"]["envkernel-grpo"]
    stats = json.loads((sample_run.dir / "grpo_stats.json").read_text())
    train_groups = data["per_split"]["train"]["groups"]
    assert stats["total"]["groups"] == stats["total"]["dropped_zero_variance"] == train_groups
    assert stats["total"]["kept"] == 0 and (sample_run.dir / "grpo.jsonl").read_text() == ""
    assert (sample_run.dir / "pairs.jsonl").exists()


def test_pairs_and_grpo_from_varied_rewards_load_both_ways(
    varied_groups: list[GroupScored], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    ctx = Ctx(out)
    pairs, grpo, card = Pairs(), Grpo(), Card()

    async def go() -> None:
        for g in varied_groups:
            for t in (pairs, grpo, card):
                await t.consume(g, ctx)
        for t in (pairs, grpo, card):
            await t.finish(ctx)

    asyncio.run(go())
    train = [g for g in varied_groups if g.task.split == "train"]
    varied = [g for i, g in enumerate(train) if len({r.reward.score for r in g.rollouts}) > 1]
    assert varied and len(varied) < len(train)

    _, ds = load_both(out / "pairs.jsonl", tmp_path / "cache")
    assert len(ds) == len(varied)
    for row in ds:
        assert row["chosen_reward"] == 1.0 and row["rejected_reward"] == 0.0
        assert row["prompt"][-1]["role"] == "user" and row["chosen"][0]["role"] == "assistant"
        assert row["task_id"] and row["env_id"] == "shop-v1"
    assert set(ds.column_names) >= {
        "prompt",
        "chosen",
        "rejected",
        "chosen_reward",
        "rejected_reward",
        "task_id",
        "env_id",
    }

    _, ds = load_both(out / "grpo.jsonl", tmp_path / "cache")
    assert len(ds) == 3 * len(varied)
    assert abs(sum(ds["advantage"])) < 1e-6
    stats = json.loads((out / "grpo_stats.json").read_text())
    assert stats["total"]["groups"] == len(train) and stats["total"]["kept"] == len(varied)
    assert stats["total"]["dropped_zero_variance"] == len(train) - len(varied)
    assert sum(v["groups"] for v in stats["per_difficulty"].values()) == len(train)
    assert json.loads((out / "card.json").read_text())["counts"]["pairs"] == len(varied)


def test_multi_environment_corpus_loads_both_ways(envk_factory: Any, tmp_path: Path) -> None:
    # the shipped OpenAPI corpus: many environments whose tool schemas differ in shape
    envk = envk_factory("exportcorpus")
    run = envk.run("-G", "1", "--plugins", "+export-extra", run_id="corpus", source=None)
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    assert len(json.loads((run.dir / "card.json").read_text())["per_env"]) > 1
    for name in ("sft.jsonl", "rl.jsonl", "rl.parquet"):
        table, _ = load_both(run.dir / name, tmp_path)
        assert table.num_rows > 0
