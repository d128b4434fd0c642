"""A fresh open of a ``process`` sandbox with and without the cgroup join keeper
(``cgroup_keepalive``), alternating in one run: each round opens ``--opens`` sandboxes one after
another, 50 ms apart (as a trainer's episodes come), each until its first step answered, then closes
it; once with ``cgroup_keepalive = 0`` (A, the join waits for an RCU grace period) and once with the
default (B), in alternating order, each with a runner of its own. No spares, cells or recycling:
every open forks and confines a new executor. See docs/sessions.md ("Fresh opens").

    uv run --no-sync python benchmarks/bench_cgroup_join.py [--opens 20] [--rounds 4]

Ends with one JSON line: open p50 per side (the median of the rounds' p50s) and B / A.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sessions import COUNTER

from envkernel_process import ProcessRunner, Settings


async def opens(keepalive: float, n: int) -> tuple[float, int]:
    """p50 of n sequential opens (until the first step answered) in ms, and the keeper's writes."""
    runner = ProcessRunner(Settings(cgroup_keepalive=keepalive))
    out = []
    try:
        for i in range(n + 2):  # the first two start the zygote and wake the keeper: not counted
            t = time.perf_counter()
            sb = await runner.open(COUNTER, 0)
            assert (await sb.call("step", {"delta": 1})).ok
            if i >= 2:
                out.append(time.perf_counter() - t)
            await sb.close()
            await asyncio.sleep(0.05)
        return statistics.median(
            out
        ) * 1e3, runner.keeper.writes if runner.keeper is not None else 0
    finally:
        await runner.aclose()


async def main(n: int, rounds: int) -> dict[str, float]:
    """Alternate A (keeper off) and B (keeper on) for ``rounds`` rounds."""
    a: list[float] = []
    b: list[float] = []
    writes = 0
    for r in range(rounds):
        for side in ("A", "B") if r % 2 == 0 else ("B", "A"):
            p50, w = await opens(0 if side == "A" else Settings().cgroup_keepalive, n)
            (a if side == "A" else b).append(p50)
            writes += w
            print(f"round {r} {side}: open p50 {p50:.2f} ms", flush=True)
    return {
        "opens": n,
        "rounds": rounds,
        "cpus": os.cpu_count() or 0,
        "load_average": round(os.getloadavg()[0], 1),
        "open_p50_ms_keeper_off": round(statistics.median(a), 2),
        "open_p50_ms_keeper_on": round(statistics.median(b), 2),
        "open_p50_keeper_on_over_off": round(statistics.median(b) / statistics.median(a), 3),
        "keeper_writes": writes,
    }


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--opens", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    print(json.dumps(asyncio.run(main(args.opens, args.rounds))))
