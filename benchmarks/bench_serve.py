"""``envkernel serve``'s session path against the sandbox call under it, in the same run.

One server (``envkernel serve`` of the sample environment, process sandboxes, in a background
thread) and, in alternating rounds:

* A: a tool step through the server (the sync WebSocket client: client -> ``/ws`` -> episode ->
  sandbox -> back), and a reset (a restore of the seed snapshot, through the server);
* B: the same tool call straight on a sandbox of the same runner (``session.call``: the floor the
  server adds to), and its restore;
* a new session on the warm pool (connect, reset), and opening a new sandbox (the cold path the
  warm pool avoids).

Medians over rounds. Prints figures; the last line is JSON.

    python benchmarks/bench_serve.py [--rounds 5] [--steps 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from envkernel_kit.checks import process_runner
from envkernel_serve.catalog import load_catalog
from envkernel_serve.client import Session
from envkernel_serve.server import RunnerSandboxes, ServeSettings, start


def _p50(xs: list[float]) -> float:
    return statistics.median(xs) * 1e3


def main() -> None:
    """Run the benchmark (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=200)
    a = ap.parse_args()
    out = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    envkernel = Path(sys.executable).with_name("envkernel")
    subprocess.run(
        [
            str(envkernel),
            "run",
            "--source",
            "sample",
            "--no-progress",
            "--out",
            str(out),
            "--run-id",
            "b",
        ],
        check=True,
        capture_output=True,
    )
    catalog = load_catalog(out / "b")
    env = catalog.default_env
    running = start(
        catalog, RunnerSandboxes(process_runner()), ServeSettings(port=0, warm=2, max_steps=10**9)
    )
    loop = asyncio.new_event_loop()
    runner = process_runner()
    direct = loop.run_until_complete(runner.open(env, catalog.seed))
    snap = loop.run_until_complete(direct.snapshot())
    args: dict[str, Any] = {"product_id": "prd_0001"}
    fig: dict[str, list[float]] = {
        k: []
        for k in (
            "serve_step",
            "direct_step",
            "serve_reset",
            "direct_restore",
            "new_session",
            "new_sandbox",
        )
    }
    try:
        with Session(running.url) as s:
            s.reset(task_index=0)
            for r in range(a.rounds):
                a_steps, b_steps, a_resets, b_restores = [], [], [], []
                for _ in range(a.steps):  # A, then B, alternating call by call
                    t = time.perf_counter()
                    s.call("get_product", **args)
                    a_steps.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    loop.run_until_complete(direct.call("get_product", args))
                    b_steps.append(time.perf_counter() - t)
                for _ in range(max(10, a.steps // 10)):
                    t = time.perf_counter()
                    s.reset(task_index=0)
                    a_resets.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    loop.run_until_complete(direct.restore(snap))
                    b_restores.append(time.perf_counter() - t)
                t = time.perf_counter()
                with Session(running.url) as fresh:
                    fresh.reset(task_index=0)
                fig["new_session"].append(time.perf_counter() - t)
                t = time.perf_counter()
                cold = loop.run_until_complete(runner.open(env, catalog.seed))
                fig["new_sandbox"].append(time.perf_counter() - t)
                loop.run_until_complete(cold.close())
                fig["serve_step"].append(statistics.median(a_steps))
                fig["direct_step"].append(statistics.median(b_steps))
                fig["serve_reset"].append(statistics.median(a_resets))
                fig["direct_restore"].append(statistics.median(b_restores))
                print(
                    f"round {r + 1}: step p50 serve {_p50(a_steps):.3f} ms, direct "
                    f"{_p50(b_steps):.3f} ms; reset p50 serve {_p50(a_resets):.3f} ms, "
                    f"direct restore {_p50(b_restores):.3f} ms; new session "
                    f"{fig['new_session'][-1] * 1e3:.1f} ms, new sandbox "
                    f"{fig['new_sandbox'][-1] * 1e3:.1f} ms",
                    flush=True,
                )
    finally:
        loop.run_until_complete(direct.close())
        loop.run_until_complete(runner.aclose())
        running.stop()
    med = {k: _p50(v) for k, v in fig.items()}
    result = {
        "serve_step_p50_ms": round(med["serve_step"], 3),
        "direct_sandbox_call_p50_ms": round(med["direct_step"], 3),
        "serve_step_over_direct_call": round(med["serve_step"] / med["direct_step"], 3),
        "serve_reset_p50_ms": round(med["serve_reset"], 3),
        "direct_restore_p50_ms": round(med["direct_restore"], 3),
        "new_warm_session_p50_ms": round(med["new_session"], 3),
        "new_sandbox_p50_ms": round(med["new_sandbox"], 3),
        "new_warm_session_over_new_sandbox": round(med["new_session"] / med["new_sandbox"], 3),
        "rounds": a.rounds,
        "steps_per_round": a.steps,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
