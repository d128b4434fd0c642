"""docs/training.md's Python blocks run as written (issue 32 item 2), on a real run's exports.

The run: ``envkernel run --source sample --policy sometimes -G 4 --plugins +export-extra`` (the
``sometimes`` baseline fails some rollouts, so ``pairs.jsonl`` has pairs). The page's
``/data/runs/r1`` is that run's folder. Here, in the workspace venv:

* the reward block, saved as the page says (``envkernel_reward.py``) and imported with
  ``ENVKERNEL_RUN`` set: it scores each reference rollout's calls and answer, written as a Hermes
  reply, as envkernel's own ``traceoutcome`` scored that rollout;
* the pandas block: it splits ``rl.parquet`` by ``extra_info.split``;
* the ``mytrainer`` plugin block: it registers, and its ``consume`` keeps what the run's scored
  groups with a learning signal hold.

The TRL blocks (SFT, then DPO, which uses the SFT block's names) run in the trainers venv
(tests/trainers/training_docs.py): one CPU step each on SmolLM2-135M (about 70 s and 250 s wall
on the shared 2-core machine). The GRPO block does not run yet (tests/test_docs_blocks.py).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import msgspec
import pytest
from pytest_examples import find_examples

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "training.md"
VENV = Path(os.environ.get("ENVKERNEL_TRAINERS_VENV", ROOT / ".venv-trainers"))


def block(first_line: str, nth: int = 0) -> str:
    """The page's ``nth`` Python block whose first line is ``first_line``."""
    found = [
        ex.source
        for ex in find_examples(PAGE)
        if ex.prefix in ("py", "python") and ex.source.strip().splitlines()[0] == first_line
    ]
    assert len(found) > nth, f"training.md has no Python block {nth} starting {first_line!r}"
    return found[nth]


@pytest.fixture(scope="module")
def r1(envk_factory: Any) -> Path:
    """A run with pairs: the page's ``/data/runs/r1``."""
    envk = envk_factory("trainingdocs")
    run = envk.run("--policy", "sometimes", "-G", "4", "--plugins", "+export-extra", run_id="r1")
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    assert (run.dir / "pairs.jsonl").read_text().strip()
    return run.dir


def hermes_reply(calls: list[dict[str, Any]], answer: str) -> str:
    """A reply in the Hermes format the reward block parses."""
    parts = [
        "<tool_call>"
        + json.dumps({"name": c["call"]["name"], "arguments": c["call"]["arguments"]})
        + "</tool_call>"
        for c in calls
    ]
    return "\n".join([*parts, answer])


def test_the_reward_block_scores_as_traceoutcome(
    r1: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "envkernel_reward.py").write_text(
        block(
            '"""Score a model\'s reply with envkernel\'s trace + outcome reward, outside envkernel.'
        )
    )
    monkeypatch.setenv("ENVKERNEL_RUN", str(r1))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("envkernel_reward", None)
    reward = importlib.import_module("envkernel_reward")
    rows = {
        r["extra_info"]["task_id"]: r
        for r in map(json.loads, (r1 / "rl.jsonl").read_text().splitlines())
    }
    rollouts = [json.loads(line) for line in (r1 / "rollouts.jsonl").read_text().splitlines()]
    # a workspace task's grader script is not in the rl rows' ground truth (the page says so)
    plain = {
        t["id"]
        for t in map(json.loads, (r1 / "tasks.jsonl").read_text().splitlines())
        if not t["outcome"]["check"]
    }
    scored = 0
    for ro in rollouts:
        t = ro["trajectory"]
        row = rows.get(ro["task_id"])
        if row is None or ro["task_id"] not in plain or t["format_errors"] or t["error"]:
            continue
        text = hermes_reply(t["calls"], t["final_answer"])
        got = reward.compute_score(
            row["data_source"], text, row["reward_model"]["ground_truth"], row["extra_info"]
        )
        assert got["score"] == pytest.approx(ro["reward"]["score"]), (ro["task_id"], got)
        scored += 1
    scores = {ro["reward"]["score"] for ro in rollouts}
    assert scored >= 8 and len(scores) > 1  # the sometimes policy: some pass, some fail


def test_the_pandas_block_splits_rl_parquet(r1: Path) -> None:
    import pandas as pd

    src = block("import pandas as pd").replace("/data/runs/r1", str(r1))
    exec(compile(src, str(PAGE), "exec"), {"__name__": "__docs__"})
    rl = pd.read_parquet(r1 / "rl.parquet")
    train, heldout = pd.read_parquet(r1 / "train.parquet"), pd.read_parquet(r1 / "heldout.parquet")
    assert len(train) + len(heldout) == len(rl) and len(train) > 0
    assert {e["split"] for e in train["extra_info"]} == {"train"}
    assert {e["split"] for e in heldout["extra_info"]} <= {"heldout"}


def mytrainer() -> types.ModuleType:
    """The plugin block as the module ``envkernel_mytrainer``."""
    module = types.ModuleType("envkernel_mytrainer")
    sys.modules[module.__name__] = module
    src = block('"""envkernel-mytrainer: the ``mytrainer`` trainer.')
    exec(compile(src, str(PAGE), "exec"), module.__dict__)
    return module


class Ctx:
    """What ``consume`` reads of a trainer's context: an environment by id (the run's folder)."""

    def __init__(self, run: Path) -> None:
        self.run = run

    async def env(self, env_id: str) -> Any:
        from envkernel_runtime.envdir import load_env_dir

        return load_env_dir(self.run / "envs" / env_id)


def test_the_mytrainer_block_registers_and_keeps_groups_with_signal(r1: Path) -> None:
    from envkernel_schemas import GroupScored, ScoredRollout, Task

    mod = mytrainer()
    registered: dict[str, Any] = {}
    mod.register_trainers(lambda name, cls: registered.setdefault(name, cls))
    trainer = registered["mytrainer"]()
    assert trainer.settings.base_model == "Qwen/Qwen3-8B"
    tasks = {
        t.id: t
        for t in (
            msgspec.json.decode(line, type=Task)
            for line in (r1 / "tasks.jsonl").read_text().splitlines()
        )
    }
    by_task: dict[str, list[ScoredRollout]] = {}
    for line in (r1 / "rollouts.jsonl").read_text().splitlines():
        row = json.loads(line)
        ro = msgspec.convert(
            {"trajectory": row["trajectory"], "reward": row["reward"]}, ScoredRollout
        )
        by_task.setdefault(row["task_id"], []).append(ro)
    groups = [
        GroupScored(run="r1", id=f"g-{k}", iteration=0, task=tasks[k], rollouts=v)
        for k, v in by_task.items()
    ]

    async def go() -> None:
        for g in groups:
            await trainer.consume(g, Ctx(r1))

    asyncio.run(go())
    signal = [g for g in groups if len({r.reward.score for r in g.rollouts}) > 1]
    kept = trainer._buffer.get(0, {})
    assert signal and kept  # the sometimes policy: groups with and without a learning signal
    # every kept trajectory is one of a group with signal, once, with its advantage's sign
    signal_ids = {g.id for g in signal}
    assert {key.rsplit("/", 1)[0] for key in kept} <= signal_ids
    for messages, tools, advantage in kept.values():
        assert messages[0]["role"] == "system" and tools and isinstance(advantage, float)
    assert any(a > 0 for *_, a in kept.values()) and any(a < 0 for *_, a in kept.values())


def trainers_python() -> Path:
    """The trainers venv's python (scripts/install-trainers.sh), or a skip saying why not."""
    skip = VENV.with_name(VENV.name + ".skip")
    if skip.exists():
        pytest.skip(skip.read_text().strip())
    if not (VENV / ".ready").exists():
        pytest.skip(f"the trainers venv {VENV} is not installed: bash scripts/install-trainers.sh")
    return VENV / "bin" / "python"


# Two steps of a 135M model on a shared 2-core CPU (SFT, then DPO with its reference pass).
@pytest.mark.timeout(900)
def test_the_sft_and_dpo_blocks_train_one_step_each(r1: Path, tmp_path: Path) -> None:
    python = trainers_python()
    out = tmp_path / "trl.json"
    blocks = [block("import json", 0), block("from trl import DPOConfig, DPOTrainer")]
    proc = subprocess.run(
        [str(python), str(ROOT / "tests" / "trainers" / "training_docs.py")],
        input=json.dumps([*blocks, str(r1), str(out)]) + "\n",
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=840,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    got = json.loads(out.read_text())
    sft_rows = len((r1 / "sft.jsonl").read_text().splitlines())
    pairs = len((r1 / "pairs.jsonl").read_text().splitlines())
    assert got["sft"]["global_step"] == 1 and got["sft"]["rows"] == sft_rows
    assert got["dpo"]["global_step"] == 1 and got["dpo"]["rows"] == pairs
    (dpo_log,) = [h for h in got["dpo"]["logs"] if "loss" in h]
    assert dpo_log["loss"] > 0 and "rewards/chosen" in dpo_log
    print(
        f"SFT step {got['sft']['seconds']:.1f} s wall, {got['sft']['cpu_seconds']:.1f} s CPU; "
        f"DPO step {got['dpo']['seconds']:.1f} s wall, {got['dpo']['cpu_seconds']:.1f} s CPU"
    )
