"""Where a burst of opens spends its CPU, at the ``process`` runner: N sandboxes opened at once
(the counter of bench_sessions.py), then the CPU each part used per open, from
``/proc/PID/schedstat`` (time on a CPU, so a busy machine's waiting is not counted):

- the runner's event-loop thread (this process's main thread; the cgroup and folder work of an
  open runs in worker threads and is not in it),
- the zygote (its forks),
- the executors (p50 and p90 of each one's own CPU until it answered its load: its copy-on-write
  faults after the fork, its confinement and the load), and their minor faults (p50).

    uv run --no-sync python benchmarks/bench_open_burst.py [--opens 128] [--rounds 2]

Ends with one JSON line (medians over the rounds). Compare two trees by running it in each,
alternating, on the same machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sessions import COUNTER

from envkernel_process import ProcessRunner


def cpu_ms(pid: int) -> float:
    """CPU time of a process's main thread so far, in ms."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e6


def minor_faults(pid: int) -> int:
    """Minor page faults of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


async def burst(n: int) -> dict[str, float]:
    """One round: a new runner, one open to start its zygote, then n opens at once."""
    runner = ProcessRunner()
    try:
        await runner.open(COUNTER, 0)
        assert runner.zygote is not None and runner.zygote.pid is not None
        zygote, me = runner.zygote.pid, os.getpid()
        z0, m0, t = cpu_ms(zygote), cpu_ms(me), time.perf_counter()
        sessions = await asyncio.gather(*(runner.open(COUNTER, 0) for _ in range(n)))
        wall = time.perf_counter() - t
        z1, m1 = cpu_ms(zygote), cpu_ms(me)
        pids = [s.pid for s in sessions if s.pid is not None]
        own = sorted(cpu_ms(p) for p in pids)
        faults = sorted(minor_faults(p) for p in pids)
        return {
            "opens_wall_s": round(wall, 3),
            "event_loop_cpu_ms_per_open": round((m1 - m0) / n, 3),
            "zygote_cpu_ms_per_open": round((z1 - z0) / n, 3),
            "executor_cpu_ms_p50": round(own[len(own) // 2], 3),
            "executor_cpu_ms_p90": round(own[int(len(own) * 0.9)], 3),
            "executor_minor_faults_p50": faults[len(faults) // 2],
            "zygote_packets": getattr(runner.zygote, "packets", -1),
        }  # fmt: skip (-1: a tree without batching)
    finally:
        await runner.aclose()


async def main(n: int, rounds: int) -> dict[str, float]:
    """Run the rounds and print each; the medians."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    rows = []
    for r in range(rounds):
        rows.append(await burst(n))
        print(f"round {r + 1}: " + ", ".join(f"{k} {v}" for k, v in rows[-1].items()), flush=True)
    out: dict[str, float] = {
        "opens": n,
        "rounds": rounds,
        "cpus": os.cpu_count() or 0,
        "load_average": round(os.getloadavg()[0], 1),
    }
    for key in rows[0]:
        out[key] = round(statistics.median(row[key] for row in rows), 3)
    return out


if __name__ == "__main__":
    from envkernel import logs

    logs.configure("warning")
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--opens", type=int, default=128, help="sandboxes opened at once")
    ap.add_argument("--rounds", type=int, default=2, help="rounds (a new runner each)")
    a = ap.parse_args()
    print(json.dumps(asyncio.run(main(a.opens, a.rounds))))
