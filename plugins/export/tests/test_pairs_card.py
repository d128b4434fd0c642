"""The ``export-extra`` plugin: preference pairs (best vs worst) and the dataset card."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from envkernel_export.extra import Card, Pairs, PairsSettings, envkernel_versions, register_trainers
from envkernel_export.pairs import choose_pair, pair_row, split_prompt
from envkernel_schemas import GroupScored, Reward, ScoredRollout, Trajectory

sys.path.insert(0, str(Path(__file__).parent))
from test_export import Ctx, _task  # type: ignore[import-not-found]


def _ro(index: int, score: float, error: str = "") -> ScoredRollout:
    msgs = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c0", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c0", "content": "[]"},
        {"role": "assistant", "content": f"answer {index}"},
    ]
    return ScoredRollout(
        trajectory=Trajectory(task_id="t1", policy="p", index=index, messages=msgs),
        reward=Reward(score=score, error=error),
    )


def _g(gid: str, *scores: float, task=None, errors: tuple[int, ...] = ()) -> GroupScored:
    return GroupScored(
        run="r",
        id=gid,
        task=task or _task(),
        rollouts=[_ro(i, s, "x" if i in errors else "") for i, s in enumerate(scores)],
    )


def test_split_prompt() -> None:
    p, rest = split_prompt(_ro(0, 1).trajectory.messages)
    assert [m["role"] for m in p] == ["system", "user"] and [m["role"] for m in rest] == [
        "assistant",
        "tool",
        "assistant",
    ]
    assert split_prompt([{"role": "assistant", "content": "x"}]) == (
        [],
        [{"role": "assistant", "content": "x"}],
    )


@pytest.mark.parametrize(
    ("scores", "errors", "want"),
    [
        ((1.0, 0.5, 0.0), (), (0, 2)),
        ((0.0, 1.0, 1.0, 0.0), (), (1, 0)),  # ties: lowest index on both sides
        ((1.0, 1.0, 1.0), (), None),  # equal rewards
        ((1.0,), (), None),  # G < 2
        ((1.0, 0.0), (1,), None),  # an errored reward does not count
        ((0.2, 0.0, 1.0), (2,), (0, 1)),
    ],
)
def test_choose_pair_best_vs_worst(scores, errors, want) -> None:
    got = choose_pair(_g("g", *scores, errors=errors))
    assert (None if got is None else (got[0].trajectory.index, got[1].trajectory.index)) == want


def test_choose_pair_margin() -> None:
    assert choose_pair(_g("g", 1.0, 0.9), min_margin=0.1) is None
    assert choose_pair(_g("g", 1.0, 0.8), min_margin=0.1) is not None


def test_pair_row_shape() -> None:
    g = _g("g1", 0.0, 1.0)
    c, r = choose_pair(g)  # type: ignore[misc]
    row = pair_row(g, c, r, [{"type": "function"}])
    assert row["prompt"] == [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert (
        row["chosen"][-1]["content"] == "answer 1" and row["rejected"][-1]["content"] == "answer 0"
    )
    assert (row["chosen_reward"], row["rejected_reward"], row["task_id"], row["env_id"]) == (
        1.0,
        0.0,
        "t1",
        "shop",
    )
    assert json.loads(row["tools"]) == [{"type": "function"}]


def test_pairs_component_dedupes_and_filters(tmp_path: Path) -> None:
    ctx = Ctx(tmp_path)

    async def go(p: Pairs) -> None:
        await p.consume(_g("g1", 1.0, 0.0), ctx)
        await p.consume(_g("g1", 1.0, 0.0), ctx)  # redelivered
        await p.consume(_g("g2", 1.0, 1.0), ctx)  # no pair
        await p.consume(_g("g3", 1.0, 0.0, task=_task("t3", split="heldout")), ctx)
        await p.finish(ctx)

    asyncio.run(go(Pairs()))
    asyncio.run(go(Pairs()))  # a restart: nothing written twice
    lines = [json.loads(x) for x in (tmp_path / "pairs.jsonl").read_text().splitlines()]
    assert [x["id"] for x in lines] == ["g1"]
    assert json.loads(lines[0]["tools"])[0]["function"]["name"] == "find_customer"

    asyncio.run(go(Pairs(PairsSettings(splits=[], filename="all.jsonl"))))
    assert len((tmp_path / "all.jsonl").read_text().splitlines()) == 2


def test_pairs_finish_creates_an_empty_file(tmp_path: Path) -> None:
    asyncio.run(Pairs().finish(Ctx(tmp_path)))
    assert (tmp_path / "pairs.jsonl").read_text() == ""


def test_card_counts_and_reads_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "run_id": "r",
                "sources": ["sample"],
                "selected": ["export", "export-extra"],
                "reward": "",
                "components": {
                    "reward_model": ["traceoutcome"],
                    "trainer": ["sft", "rl", "pairs", "card"],
                },
                "settings": {},
                "overrides": {"sft": {"min_reward": 0.5}},
            }
        )
    )
    ctx = Ctx(tmp_path)
    card = Card()

    async def go() -> None:
        await card.consume(_g("g1", 1.0, 0.5, 0.0), ctx)
        await card.consume(_g("g1", 1.0, 0.5, 0.0), ctx)  # redelivered: counted once
        await card.consume(_g("g2", 1.0, 1.0, task=_task("t2", split="heldout")), ctx)
        await card.finish(ctx)

    asyncio.run(go())
    data = json.loads((tmp_path / "card.json").read_text())
    assert data["counts"] | {} == {
        "tasks": 2,
        "groups": 2,
        "rollouts": 5,
        "failed_rollouts": 0,
        "mean_reward": 0.7,
        "sft_rows": 2,
        "pairs": 1,
    }
    assert data["per_split"]["heldout"]["sft_rows"] == 0 and data["per_env"]["shop"]["tasks"] == 2
    assert (
        data["files"]["sft.jsonl"] == 2
        and data["files"]["pairs.jsonl"] == 1
        and data["files"]["rl.parquet"] == 2
    )
    assert data["export_settings"]["sft"]["min_reward"] == 0.5
    assert data["reward"]["model"] == "traceoutcome" and data["sources"]["sources"] == ["sample"]
    text = (tmp_path / "README.md").read_text()
    assert "path: sft.jsonl" in text and "| heldout |" in text and "envkernel-export" in text


def test_versions_and_registration() -> None:
    assert "envkernel-export" in envkernel_versions()
    got: dict[str, object] = {}
    register_trainers(lambda n, f: got.__setitem__(n, f))
    assert got == {"pairs": Pairs, "card": Card}
