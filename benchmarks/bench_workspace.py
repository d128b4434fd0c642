"""Workspace benchmark: shell and file steps over the bus, snapshot/restore of a big tree, warm-pool
acquire, and workspace tasks per second through the gate.

Everything goes the way a stage goes: the ``process`` runner (confined as the host allows) is
served on an embedded nats-server by the kernel's SandboxService, and the stage side talks to
its sandboxes with the ``Sandbox`` client over NATS.

- **steps**: ``exec`` of a trivial command (``true``: a real ``bash`` started in the sandbox) and
  ``read`` of a small file on a warm workspace sandbox, beside ``get_order`` of the sample shop (a
  tool-API step) in the same run, in alternating rounds (A, B, C, A, B, C, ...); p50 and p99, and
  the ratios of each workspace step to the tool-API step;
- **snapshot / restore** of a 1,000-file workspace (50 folders, about 300 KiB), p50 and p99;
- **acquire** from the kernel's warm pool (``SandboxPool.lease``: a restore to the seed snapshot),
  p50 and p99 (target: p50 at most 10 ms);
- **gate throughput**: ``envkernel run --source workspace`` (every archetype, ``--variants`` each),
  gated tasks per second of the run's own ``seconds``.

    python benchmarks/bench_workspace.py [--steps 300] [--rounds 6] [--variants 2]

Prints figures; the last line is JSON.
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

from envkernel.plugins import load
from envkernel.sandbox import SandboxPool, SandboxService, open_sandbox
from envkernel_bus import Bus, EmbeddedServer
from envkernel_kit.workspace import workspace_env
from envkernel_sample import shop_env
from envkernel_workspace.archetypes import make_variant

RUNNER = "process"


def pct(xs: list[float], q: float) -> float:
    """The q-quantile of xs, in milliseconds (xs in seconds)."""
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))] * 1000, 3)


def summary(xs: list[float]) -> dict[str, float]:
    return {
        "p50_ms": pct(xs, 0.5),
        "p99_ms": pct(xs, 0.99),
        "mean_ms": round(statistics.fmean(xs) * 1000, 3),
        "n": len(xs),
    }


async def timed(sb: Any, tool: str, args: dict[str, Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        r = await sb.call(tool, args)
        out.append(time.perf_counter() - t)
        if not r.ok:
            raise RuntimeError(f"{tool} failed: {r.error}")
    return out


def big_tree(n: int = 1000) -> dict[str, str]:
    return {f"dir{i % 50:02d}/file{i:04d}.txt": f"line {i}\n" * 30 for i in range(n)}


def gate_run(variants: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run(
            [
                str(Path(sys.executable).with_name("envkernel")),
                "run",
                "--source",
                "workspace",
                "--set",
                f"workspace.variants={variants}",
                "--out",
                out,
                "--run-id",
                "bench",
                "--no-progress",
            ],
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
        if not (Path(out) / "bench" / "summary.json").exists():
            raise RuntimeError(
                f"the gate run failed (exit {proc.returncode}): {proc.stderr[-2000:]}"
            )
        s = json.loads((Path(out) / "bench" / "summary.json").read_text())
    return {
        "tasks": s["tasks"],
        "tasks_rejected": s["tasks_rejected"],
        "gate_rollouts": s["gate_rollouts"],
        "seconds": s["seconds"],
        "tasks_per_s": round(s["tasks"] / s["seconds"], 3) if s["seconds"] else None,
        "exit_code": proc.returncode,
    }


async def main(n_steps: int, rounds: int, variants: int) -> dict[str, Any]:
    registry = load([RUNNER], strict=True)
    comp = registry.get(RUNNER)
    runner = comp.factory(comp.settings_type()) if comp.settings_type else comp.factory()
    v = make_variant("ledger", 1)
    ws = workspace_env("bench-ws", "bench workspace", files=v.files)
    tree = workspace_env("bench-tree", "1,000 files", files=big_tree())
    with tempfile.TemporaryDirectory() as tmp, EmbeddedServer(Path(tmp) / "nats") as server:
        service_bus = await Bus.connect(server.url, name="bench-ws-service")
        client = await Bus.connect(server.url, name="bench-ws-stage")
        service = SandboxService(service_bus, RUNNER, runner)
        await service.start()
        try:
            wsb = await open_sandbox(client, RUNNER, ws)
            shop = await open_sandbox(client, RUNNER, shop_env())
            for sb, tool, args in (
                (wsb, "exec", {"command": "true"}),
                (wsb, "read", {"path": "ledger.csv"}),
                (shop, "get_order", {"order_id": "ord_0003"}),
            ):
                await timed(sb, tool, args, 20)  # warm-up
            ex: list[float] = []
            rd: list[float] = []
            api: list[float] = []
            per = max(1, n_steps // rounds)
            for _ in range(rounds):  # alternating A, B, C
                ex += await timed(wsb, "exec", {"command": "true"}, per)
                rd += await timed(wsb, "read", {"path": "ledger.csv"}, per)
                api += await timed(shop, "get_order", {"order_id": "ord_0003"}, per)
            await wsb.close()
            await shop.close()

            big = await open_sandbox(client, RUNNER, tree)
            snaps, restores = [], []
            handle = await big.snapshot()
            for i in range(20):
                await big.call("write", {"path": f"dir00/new{i}.txt", "content": "x"})
                t = time.perf_counter()
                h = await big.snapshot()
                snaps.append(time.perf_counter() - t)
                t = time.perf_counter()
                await big.restore(handle)
                restores.append(time.perf_counter() - t)
                del h
            files = int(
                (await big.call("exec", {"command": "find . -type f | wc -l"})).value["stdout"]
            )
            await big.close()

            pool = SandboxPool(client, per_env=2)
            async with pool.lease(RUNNER, ws) as sb:  # the first lease opens; later ones restore
                await sb.call("write", {"path": "scratch.txt", "content": "dirty"})
            acquire = []
            for i in range(60):
                t = time.perf_counter()
                async with pool.lease(RUNNER, ws) as sb:
                    acquire.append(time.perf_counter() - t)
                    await sb.call("write", {"path": f"scratch{i}.txt", "content": "dirty"})
            for items in pool._idle.values():
                for sb, _ in items:
                    await sb.close()
        finally:
            await service.stop()
            await client.close()
            await service_bus.close()
    gate = gate_run(variants)
    e, r, a = summary(ex), summary(rd), summary(api)
    result = {
        "runner": RUNNER,
        "confinement": runner.support.as_dict() if hasattr(runner, "support") else {},
        "exec_step": e,
        "read_step": r,
        "tool_api_step": a,
        "exec_over_tool_api_p50_ratio": round(e["p50_ms"] / a["p50_ms"], 3),
        "read_over_tool_api_p50_ratio": round(r["p50_ms"] / a["p50_ms"], 3),
        "snapshot_1000_files": {**summary(snaps), "files": files},
        "restore_1000_files": summary(restores),
        "pool_acquire": summary(acquire),
        "pool_acquire_target_p50_ms": 10.0,
        "gate": gate,
        "gate_tasks_per_s": gate["tasks_per_s"],
    }
    print(f"exec 'true' over the bus:   p50 {e['p50_ms']} ms, p99 {e['p99_ms']} ms")
    print(f"read over the bus:          p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms")
    print(
        f"tool-API step (get_order):  p50 {a['p50_ms']} ms, p99 {a['p99_ms']} ms  (exec/api "
        f"{result['exec_over_tool_api_p50_ratio']}x, read/api "
        f"{result['read_over_tool_api_p50_ratio']}x)"
    )
    print(
        f"snapshot of {files} files:  p50 {result['snapshot_1000_files']['p50_ms']} ms, p99 "
        f"{result['snapshot_1000_files']['p99_ms']} ms; restore p50 "
        f"{result['restore_1000_files']['p50_ms']} ms, p99 "
        f"{result['restore_1000_files']['p99_ms']} ms"
    )
    print(
        f"warm-pool acquire:          p50 {result['pool_acquire']['p50_ms']} ms, p99 "
        f"{result['pool_acquire']['p99_ms']} ms (target p50 <= 10 ms)"
    )
    print(
        f"gate: {gate['tasks']} workspace tasks ({gate['tasks_rejected']} rejected, "
        f"{gate['gate_rollouts']} gate rollouts) in {gate['seconds']} s = "
        f"{gate['tasks_per_s']} tasks/s"
    )
    return result


if __name__ == "__main__":
    from envkernel import logs

    logs.configure("warning")
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--steps", type=int, default=300, help="steps of each kind (split over the rounds)"
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=6,
        help="alternating rounds of exec, read and the tool-API step",
    )
    ap.add_argument(
        "--variants", type=int, default=2, help="variants of each archetype in the gate run"
    )
    a = ap.parse_args()
    print(json.dumps(asyncio.run(main(a.steps, a.rounds, a.variants))))
