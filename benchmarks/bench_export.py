"""Export throughput: rows/s of the sft, rl, pairs and grpo trainers (row building + writing).

In-process: one real ``envkernel run --source sample -G 3`` (subprocess) gives the tasks,
trajectories and environment; from them, ``--groups`` synthetic GroupScored events (G=3, rewards
1 / 0.5 / 0 by index, so every group gives a pair and GRPO keeps it) are fed to each component's
``consume`` and then ``finish`` (which writes ``rl.parquet`` and ``grpo_stats.json``), each into
its own fresh folder. Prints figures; the last line is JSON.

    python benchmarks/bench_export.py [--groups 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import msgspec
import structlog

from envkernel_export import Rl, Sft
from envkernel_export.extra import Pairs
from envkernel_grpo import Grpo
from envkernel_schemas import (
    CodeBehaviour,
    EnvSpec,
    GroupScored,
    Reward,
    ScoredRollout,
    Task,
    ToolSpec,
    Trajectory,
)


class Ctx:
    """What a trainer uses of the kernel's Context."""

    def __init__(self, out_dir: Path, envs: dict[str, EnvSpec]) -> None:
        self.out_dir = out_dir
        self.log = structlog.get_logger("bench")
        self._envs = envs

    async def env(self, env_id: str) -> EnvSpec:
        return self._envs[env_id]


def real_run(root: Path) -> Path:
    exe = Path(sys.executable).with_name("envkernel")
    subprocess.run(
        [
            str(exe),
            "run",
            "--source",
            "sample",
            "-G",
            "3",
            "--no-progress",
            "--run-id",
            "bench",
            "--out",
            str(root),
        ],
        check=True,
        capture_output=True,
        cwd=root,
        timeout=300,
    )
    return root / "bench"


def synthetic_groups(run: Path, n: int) -> tuple[list[GroupScored], dict[str, EnvSpec]]:
    tasks = [
        msgspec.convert(json.loads(x), Task)
        for x in (run / "tasks.jsonl").read_text().splitlines()
        if x.strip()
    ]
    trajs: dict[str, list[Trajectory]] = defaultdict(list)
    for line in (run / "rollouts.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["purpose"] == "train":
            trajs[r["task_id"]].append(msgspec.convert(r["trajectory"], Trajectory))
    tasks = [t for t in tasks if len(trajs[t.id]) >= 3]
    envs = {}
    for p in (run / "envs").glob("*/env.json"):
        raw = json.loads(p.read_text())  # env.json: the spec without its code
        tools = msgspec.convert(raw["tools"], list[ToolSpec])
        envs[raw["id"]] = EnvSpec(
            id=raw["id"],
            name=raw.get("name", raw["id"]),
            tools=tools,
            behaviour=CodeBehaviour(source=""),
        )
    groups = []
    for i in range(n):
        base = tasks[i % len(tasks)]
        task = msgspec.structs.replace(base, id=f"{base.id}-{i}", split="train")
        rollouts = [
            ScoredRollout(trajectory=t, reward=Reward(score=(1.0, 0.5, 0.0)[k]))
            for k, t in enumerate(sorted(trajs[base.id], key=lambda t: t.index)[:3])
        ]
        groups.append(GroupScored(run="bench", id=f"g{i}", task=task, rollouts=rollouts))
    return groups, envs


async def measure(
    name: str,
    component: Any,
    groups: list[GroupScored],
    out: Path,
    envs: dict[str, EnvSpec],
    rows_of: str,
) -> dict[str, Any]:
    ctx = Ctx(out, envs)
    t0 = time.perf_counter()
    for g in groups:
        await component.consume(g, ctx)
    await component.finish(ctx)
    dt = time.perf_counter() - t0
    if not rows_of:
        return {}
    path = out / rows_of
    rows = sum(1 for line in path.read_bytes().splitlines() if line.strip())
    return {
        "rows": rows,
        "seconds": round(dt, 4),
        "rows_per_s": round(rows / dt, 1),
        "groups_per_s": round(len(groups) / dt, 1),
        "bytes_per_row": round(path.stat().st_size / max(rows, 1)),
    }


async def main(n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        groups, envs = synthetic_groups(real_run(root), n)
        result: dict[str, Any] = {
            "benchmark": "export",
            "groups": n,
            "group_size": 3,
            "env": sorted(envs),
        }
        for comp in (
            Sft(),
            Rl(),
            Pairs(),
            Grpo(),
        ):  # warm-up: one-time imports (pyarrow's table building)
            await measure(
                "warmup", comp, groups[:20], root / "warmup" / type(comp).__name__, envs, ""
            )
        for name, comp, rows_of in (
            ("sft", Sft(), "sft.jsonl"),  # min_reward 1: one row per group
            ("rl", Rl(), "rl.jsonl"),  # one row per task, plus rl.parquet on finish
            ("pairs", Pairs(), "pairs.jsonl"),
            ("grpo", Grpo(), "grpo.jsonl"),  # one row per rollout, plus grpo_stats.json
        ):
            result[name] = await measure(name, comp, groups, root / name, envs, rows_of)
            r = result[name]
            print(
                f"{name:6s} {r['rows']:7d} rows in {r['seconds']:7.3f} s: "
                f"{r['rows_per_s']:>10,.0f} rows/s ({r['groups_per_s']:,.0f} groups/s, "
                f"{r['bytes_per_row']} B/row)"
            )
    return result


if __name__ == "__main__":
    from envkernel import logs

    logs.configure("warning")
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--groups", type=int, default=5000)
    args = ap.parse_args()
    print(json.dumps(asyncio.run(main(args.groups))))
