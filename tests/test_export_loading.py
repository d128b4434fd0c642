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


def _reward_module(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """docs/training.md's ``envkernel_reward.py``, as the page prints it, reading ``run_dir``."""
    import re
    import types

    page = (Path(__file__).parents[1] / "docs" / "training.md").read_text()
    code = next(
        b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "def compute_score" in b
    )
    monkeypatch.setenv("ENVKERNEL_RUN", str(run_dir))
    module = types.ModuleType("envkernel_reward")
    exec(compile(code, "envkernel_reward.py", "exec"), module.__dict__)
    return module


def _hermes(calls: list[tuple[str, dict[str, Any]]], answer: str) -> str:
    """A reply in the Hermes format the documented reward parses."""
    blocks = [f"<tool_call>{json.dumps({'name': n, 'arguments': a})}</tool_call>" for n, a in calls]
    return "\n".join([*blocks, answer])


@pytest.fixture(scope="module")
def bare_run(envk_factory: Any) -> Any:
    """A bare run (its default samplers, whose tasks carry ``Outcome.unchanged``)."""
    envk = envk_factory("exportbare")
    run = envk.run("-G", "1", "--set", "chains.tasks_per_env=4", run_id="bare", source=None)
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    return run


def _kept(state: dict[str, Any], generated: dict[str, list[str]]) -> dict[str, Any]:
    """``state`` without the columns the server generates (per table)."""
    return {
        t: [{k: v for k, v in r.items() if k not in generated.get(t, [])} for r in rows]
        for t, rows in state.items()
    }


def test_the_documented_reward_scores_exported_rows_as_the_kit_does(
    bare_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/training.md's reward over rl.jsonl rows gives the kit's score (``traceoutcome``'s) of
    the same replayed calls: the reference (1, as the run scored it), the reference plus a change
    nobody asked for (0), and a read-only answer guessed without a lookup (0). Without the rows'
    ``unchanged`` and ``outputs`` the last two would score as if the job was done."""
    from envkernel_kit.scoring import score
    from envkernel_schemas import CallRecord, ToolCall, to_builtins

    mod = _reward_module(bare_run.dir, monkeypatch)
    tasks = {t["id"]: msgspec.convert(t, Task) for t in bare_run.jsonl("tasks.jsonl")}
    rows = {r["extra_info"]["task_id"]: r for r in bare_run.jsonl("rl.jsonl")}
    recorded = {
        r["task_id"]: r["reward"]["score"]
        for r in bare_run.jsonl("rollouts.jsonl")
        if r["purpose"] == "train"
    }
    assert set(rows) == set(tasks)
    # a change: another task's last mutating call, in the same environment
    change = {
        t.env_id: (t.calls[-1].name, dict(t.calls[-1].arguments))
        for t in tasks.values()
        if t.outcome.mutates and t.calls
    }
    compared = destructive = guessed = old_blind = complied = 0
    for tid, task in sorted(tasks.items()):
        # a workspace task's grader script is not in the rl rows (docs/training.md says so)
        if task.outcome.check or task.env_id not in change:
            continue
        row = rows[tid]
        gt, info = row["reward_model"]["ground_truth"], row["extra_info"]
        ref = [(c.name, dict(c.arguments)) for c in task.calls]
        variants = {"reference": ref}
        if change[task.env_id] not in ref:  # the same call again is not a change of another row
            variants["destructive"] = [*ref, change[task.env_id]]
        if task.outcome.expects:  # a refusal or confirmation: carrying the request out fails
            variants["complied"] = [
                *ref,
                *((c.name, dict(c.arguments)) for c in task.outcome.declined),
            ]
        elif not task.outcome.mutates:
            variants["guess"] = []
        for kind, calls in variants.items():
            from_rows = mod.score_text(_hermes(calls, task.outcome.answer), gt, info).score
            records, state = mod.run(mod.replay(task.env_id, calls, to_builtins(task.planted)))
            traj = Trajectory(
                task_id=tid,
                policy="external",
                calls=[
                    CallRecord(call=ToolCall(name=n, arguments=a), result=r.result)
                    for (n, a), r in zip(calls, records, strict=True)
                ],  # fmt: skip
                final_answer=task.outcome.answer,
                final_state=state,
            )
            kit = score(task, traj).score
            assert from_rows == kit, (tid, kind, from_rows, kit)
            compared += 1
            if kind == "reference" and tid in recorded:
                assert kit == recorded[tid] == 1.0, (tid, kit, recorded[tid])
            # a change the state keeps (a field the server generates, like an edit's timestamp,
            # is not one: an edit that writes a message's own text back changes nothing else)
            after_ref = mod.run(mod.replay(task.env_id, ref, to_builtins(task.planted)))[1]
            changed = _kept(state, task.outcome.generated) != _kept(
                after_ref, task.outcome.generated
            )
            if kind == "destructive" and changed:
                assert kit == 0.0, (tid, kit)
                destructive += 1
                # the rows as they were: no digests of the untouched tables, no looked-up rows
                old = {**info, "unchanged": "{}", "generated": "{}", "outputs": "[]"}
                text = _hermes(calls, task.outcome.answer)
                old_blind += mod.score_text(text, gt, old).score > 0.0
            if kind == "guess":
                assert kit == 0.0, (tid, kit)
                guessed += 1
            if kind == "complied" and task.outcome.declined:
                assert kit == 0.0, (tid, kit)
                complied += 1
    assert compared >= 10 and destructive >= 3 and guessed >= 1, (compared, destructive, guessed)
    # refusal and confirmation tasks: the rows score them too (the reference 1, complying 0)
    assert complied >= 1, complied
    assert old_blind >= 1  # what the rows lacked: a destructive rollout scored above 0 from them
