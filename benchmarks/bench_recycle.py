"""A trainer's loop at the ``process`` runner: N sessions opened at once, one step each, all closed
at once, again and again (a GRPO-like loop), with and without ``recycle`` (closed sandboxes kept as
nests that fork the next session: docs/sessions.md), alternating A (``recycle = 0``) and B
(``recycle = N``) in each round, each with a runner of its own.

For each batch after the first (the first fills the pool; it is reported apart):

- ``open_wall_s`` and ``close_wall_s``: N opens (each until its first step answered) and N closes;
- ``runner_cpu_ms_per_session``: this process's CPU (every thread: the event loop and the threads
  that make and remove cgroups and folders) over the open and the close, per session;
- ``sandbox_cpu_ms_per_session``: the CPU of the processes that hold the sessions, from
  ``/proc/PID/schedstat`` (time on a CPU, so waiting on the shared machine is not counted): A, each
  executor and the zygote's forks; B, each session's process and its nest (which forks the next
  session and clears the sandbox at the close).

    uv run --no-sync python benchmarks/bench_recycle.py [--sessions 256] [--batches 3] [--rounds 2]

Ends with one JSON line: medians over the rounds and the batches after the first, and
``*_recycle_over_fresh`` ratios (B / A).
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sessions import COUNTER

from envkernel_process import ProcessRunner, Settings


def cpu_ms(pid: int) -> float:
    """CPU time of a process's main thread so far, in ms (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e6
    except OSError:
        return 0.0


def children(pid: int) -> list[int]:
    """The child processes of ``pid``."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


async def batch(runner: ProcessRunner, n: int) -> dict[str, float]:
    """One batch: n opens at once (each with one step), then n closes at once."""
    assert runner.zygote is not None
    zygote = runner.zygote.pid or 0
    before = {
        s.pid: cpu_ms(s.pid) for s in runner._recycled if s.pid is not None
    }  # nests waiting (B)
    z0, c0, t0 = cpu_ms(zygote), time.process_time(), time.perf_counter()

    async def one() -> Any:
        s = await runner.open(COUNTER, 0)
        assert (await s.call("step", {"delta": 1})).ok
        return s

    sessions = await asyncio.gather(*(one() for _ in range(n)))
    t1 = time.perf_counter()
    pids = [s.pid for s in sessions if s.pid is not None]
    # A: the executors; B: each nest's session process (the nest's own CPU is counted over the batch
    # below)
    own = (
        sum(cpu_ms(c) for p in pids for c in children(p))
        if runner.nests
        else sum(cpu_ms(p) for p in pids)
    )
    zygote_cpu = cpu_ms(zygote) - z0
    await asyncio.gather(*(s.close() for s in sessions))
    t2 = time.perf_counter()
    c1 = time.process_time()
    nests = sum(cpu_ms(p) - before.get(p, 0.0) for p in pids) if runner.nests else 0.0
    return {"open_wall_s": round(t1 - t0, 3), "close_wall_s": round(t2 - t1, 3),
            "runner_cpu_ms_per_session": round((c1 - c0) * 1000 / n, 3),
            "sandbox_cpu_ms_per_session": round((own + zygote_cpu + nests) / n, 3)}  # fmt: skip


async def loop(n: int, batches: int, recycle: bool) -> list[dict[str, float]]:
    """A runner of its own, its zygote started, then the batches."""
    runner = ProcessRunner(Settings(recycle=n if recycle else 0))
    try:
        await (await runner.open(COUNTER, 0)).close()
        return [await batch(runner, n) for _ in range(batches)]
    finally:
        await runner.aclose()


async def main(n: int, batches: int, rounds: int) -> dict[str, Any]:
    """Alternate A and B in each round; print every batch; the medians."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    rows: dict[str, list[list[dict[str, float]]]] = {"fresh": [], "recycle": []}
    for r in range(rounds):
        for name in ("fresh", "recycle") if r % 2 == 0 else ("recycle", "fresh"):
            got = await loop(n, batches, name == "recycle")
            rows[name].append(got)
            for b, row in enumerate(got):
                print(
                    f"round {r + 1} {name:7s} batch {b + 1}: "
                    + ", ".join(f"{k} {v}" for k, v in row.items()),
                    flush=True,
                )
    out: dict[str, Any] = {
        "sessions": n,
        "batches": batches,
        "rounds": rounds,
        "cpus": os.cpu_count() or 0,
        "load_average": round(os.getloadavg()[0], 1),
    }
    keys = list(rows["fresh"][0][0])
    for name, runs in rows.items():
        for key in keys:
            out[f"first_batch_{key}_{name}"] = round(
                statistics.median(run[0][key] for run in runs), 3
            )
            out[f"repeat_{key}_{name}"] = round(
                statistics.median(row[key] for run in runs for row in run[1:]), 3
            )
    for key in keys:
        for when in ("first_batch", "repeat"):
            a, b = out[f"{when}_{key}_fresh"], out[f"{when}_{key}_recycle"]
            out[f"{when}_{key}_recycle_over_fresh"] = round(b / a, 3) if a else None
    return out


if __name__ == "__main__":
    from envkernel import logs

    logs.configure("warning")
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--sessions", type=int, default=256, help="sessions opened (and closed) at once per batch"
    )
    ap.add_argument(
        "--batches", type=int, default=3, help="batches per loop (the first fills the pool)"
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="rounds, each running A and B once, alternating which goes first",
    )
    a = ap.parse_args()
    print(json.dumps(asyncio.run(main(a.sessions, a.batches, a.rounds))))
