"""Replay benchmark: the gate with and without known traces (``envkernel_runtime.replay``), same
code, alternating.

Runs ``envkernel run`` over the 7-environment corpus with ``+users`` (``bench_tasks.run_pipeline``)
ROUNDS times each way, alternating: A with ``ENVKERNEL_REPLAY=0`` (every rollout makes all its calls
in a sandbox of its own), B with replay on (the default). Reported per round and as means: the CPU
per gated task of the run's process and of all its processes (the run, nats-server, the
executors), tasks/s to the target, and whether both ways emitted the same task ids with the same
mutant figures.

    python benchmarks/bench_replay.py [--tasks 1000] [--rounds 2]

Prints figures; the last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_tasks import run_pipeline


def _ids(folder: Path) -> list[str]:
    return sorted(
        json.loads(line)["id"]
        for line in (folder / "tasks.jsonl").read_text().splitlines()
        if line.strip()
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1000, help="gated tasks per run (default 1000)")
    ap.add_argument("--rounds", type=int, default=2, help="runs each way, alternating (default 2)")
    ap.add_argument("--timeout", type=float, default=1200.0)
    args = ap.parse_args()
    rows: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    same = True
    first: dict[str, Any] = {}
    for r in range(args.rounds):
        for side, env in (("A", {"ENVKERNEL_REPLAY": "0"}), ("B", {})):
            out = run_pipeline(args.tasks, 0.03, "chains", args.timeout, True, extra_env=env)
            folder = Path(out["folder"])
            got = (_ids(folder), json.loads((folder / "summary.json").read_text()).get("mutants"))
            first = first or {"ids": got[0], "mutants": got[1]}
            same = same and got[0] == first["ids"] and got[1] == first["mutants"]
            rows[side].append(
                {
                    k: out[k]
                    for k in (
                        "tasks",
                        "tasks_per_s_to_target",
                        "run_process_cpu_ms_per_task",
                        "all_processes_cpu_ms_per_task",
                    )
                }
            )
            print(f"{side}{r + 1}: {rows[side][-1]}", flush=True)
            shutil.rmtree(folder.parent, ignore_errors=True)

    def mean(side: str, key: str) -> float:
        return round(statistics.fmean(x[key] for x in rows[side] if x[key] is not None), 2)

    res = {
        "benchmark": "replay",
        "tasks": args.tasks,
        "rounds": args.rounds,
        "same_task_ids_and_mutants": same,
        "no_replay_run_process_cpu_ms_per_task": mean("A", "run_process_cpu_ms_per_task"),
        "replay_run_process_cpu_ms_per_task": mean("B", "run_process_cpu_ms_per_task"),
        "no_replay_all_processes_cpu_ms_per_task": mean("A", "all_processes_cpu_ms_per_task"),
        "replay_all_processes_cpu_ms_per_task": mean("B", "all_processes_cpu_ms_per_task"),
        "no_replay_tasks_per_s": mean("A", "tasks_per_s_to_target"),
        "replay_tasks_per_s": mean("B", "tasks_per_s_to_target"),
    }
    res["replay_over_no_replay_run_process_cpu"] = round(
        res["replay_run_process_cpu_ms_per_task"] / res["no_replay_run_process_cpu_ms_per_task"], 3
    )
    res["replay_over_no_replay_all_processes_cpu"] = round(
        res["replay_all_processes_cpu_ms_per_task"]
        / res["no_replay_all_processes_cpu_ms_per_task"],
        3,
    )
    print(json.dumps(res))


if __name__ == "__main__":
    main()
