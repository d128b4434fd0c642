"""Podman sandboxes over NATS: tool step, acquire (warm pool and cold), beside `podman exec`.

- tool step: ``Sandbox.call`` from a stage, over NATS (embedded server), to a warm Podman sandbox
  (SandboxService + open_sandbox, the real path); beside it, in the same run, the same call
  through ``podman exec`` into a warm container (exec, a fresh executor, load, call: what a design
  without a long-lived executor pays) and the bare socket round trip (the runner's session, no
  NATS);
- acquire: from the open request until the environment is loaded and callable, from the warm
  pool; and a cold start (pool size 0);
- throughput: calls/s with several sandboxes called concurrently over NATS;
- containers left after the benchmark (must be 0).

Needs root, Podman and the image (scripts/install-podman.sh). Prints figures; the last line is JSON.

    python benchmarks/bench_podman.py [--calls 2000] [--acquires 40]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import msgspec

from envkernel.sandbox import SandboxService, open_sandbox
from envkernel_bus import Bus, EmbeddedServer
from envkernel_podman import PodmanRunner, Settings
from envkernel_podman.service import containers_conf, podman_env
from envkernel_sample import shop_env

CALL = ("get_order", {"order_id": "ord_0003"})


def pct(xs: list[float], p: float) -> float:
    """The p-th percentile (nearest rank) of xs, in ms."""
    s = sorted(xs)
    return round(s[min(len(s) - 1, max(0, int(round(p / 100 * len(s))) - 1))] * 1000, 3)


def left_containers() -> int:
    out = subprocess.run(
        [
            "podman",
            "ps",
            "-a",
            "--filter",
            f"label=envkernel.owner.pid={os.getpid()}",
            "--format",
            "json",
        ],
        env=podman_env(containers_conf()),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return len(json.loads(out or "[]"))


async def wait_pool(runner: PodmanRunner) -> None:
    deadline = time.monotonic() + 30
    while runner.pool_ready < runner.settings.pool_size and time.monotonic() < deadline:
        await asyncio.sleep(0.005)


async def tool_step(bus: Bus, runner: PodmanRunner, calls: int) -> dict[str, float]:
    env = shop_env()
    box = await open_sandbox(bus, "podman", env)
    for _ in range(200):  # warm up
        await box.call(*CALL)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        res = await box.call(*CALL)
        times.append(time.perf_counter() - t0)
        assert res.ok, res
    await box.close()
    # the bare socket round trip (runner session, no NATS)
    session = await runner.open(env, 0)
    for _ in range(200):
        await session.call(*CALL)
    direct = []
    for _ in range(calls):
        t0 = time.perf_counter()
        await session.call(*CALL)
        direct.append(time.perf_counter() - t0)
    await session.close()
    return {
        "nats_p50_ms": pct(times, 50),
        "nats_p99_ms": pct(times, 99),
        "nats_mean_ms": round(statistics.mean(times) * 1000, 3),
        "socket_p50_ms": pct(direct, 50),
        "socket_p99_ms": pct(direct, 99),
    }


async def podman_exec(runner: PodmanRunner, n: int) -> dict[str, float]:
    """The same call through ``podman exec`` into the same kind of warm container: what a design
    without a long-lived executor pays per call (exec, a fresh executor, load, call)."""
    session = await runner.open(shop_env(), 0)
    env = shop_env()
    lines = (
        msgspec.json.encode({"op": "load", "env": env, "seed": 0})
        + b"\n"
        + msgspec.json.encode({"op": "call", "tool": CALL[0], "arguments": CALL[1], "timeout": 10})
        + b"\n"
    )
    argv = [
        "podman",
        "exec",
        "-i",
        session.container,
        "python3",
        "-S",
        "-P",
        "/opt/envk/executor.py",
    ]
    penv = podman_env(containers_conf())
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        out = await asyncio.to_thread(
            subprocess.run, argv, input=lines, capture_output=True, env=penv, check=True
        )
        times.append(time.perf_counter() - t0)
        answers = [json.loads(x) for x in out.stdout.splitlines()]
        assert len(answers) == 2 and answers[1]["ok"], out
    await session.close()
    return {"exec_p50_ms": pct(times, 50), "exec_p99_ms": pct(times, 99)}


async def acquire(bus: Bus, runner: PodmanRunner, name: str, n: int) -> dict[str, float]:
    env = shop_env()
    times, first_call = [], []
    warm_before = runner.stats["warm"]
    for _ in range(n):
        await wait_pool(runner)
        t0 = time.perf_counter()
        box = await open_sandbox(bus, name, env)
        t1 = time.perf_counter()
        res = await box.call(*CALL)
        t2 = time.perf_counter()
        assert res.ok, res
        times.append(t1 - t0)
        first_call.append(t2 - t0)
        await box.close()
    return {
        "p50_ms": pct(times, 50), "p99_ms": pct(times, 99),
        "with_first_call_p50_ms": pct(first_call, 50),
        "from_pool": runner.stats["warm"] - warm_before, "n": n,
    }  # fmt: skip


async def throughput(bus: Bus, sandboxes: int, calls: int) -> float:
    boxes = [await open_sandbox(bus, "podman", shop_env()) for _ in range(sandboxes)]

    async def drive(box) -> None:
        for _ in range(calls):
            await box.call(*CALL)

    await asyncio.gather(*(drive(b) for b in boxes[:1]))  # warm up
    t0 = time.perf_counter()
    await asyncio.gather(*(drive(b) for b in boxes))
    dt = time.perf_counter() - t0
    await asyncio.gather(*(b.close() for b in boxes))
    return sandboxes * calls / dt


async def main(calls: int, acquires: int, colds: int, execs: int, pool: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        server = EmbeddedServer(Path(tmp) / "nats")
        url = server.start()
        bus = await Bus.connect(url)
        warm = PodmanRunner(Settings(pool_size=pool))
        cold = PodmanRunner(Settings(pool_size=0, recycle=False))  # every open a new container
        services = [SandboxService(bus, "podman", warm), SandboxService(bus, "podman_cold", cold)]
        try:
            t0 = time.perf_counter()
            for s in services:
                await s.start()
            await warm.start()
            await cold.start()
            await wait_pool(warm)
            startup = time.perf_counter() - t0
            step = await tool_step(bus, warm, calls)
            ex = await podman_exec(warm, execs)
            acq = await acquire(bus, warm, "podman", acquires)
            cold_acq = await acquire(bus, cold, "podman_cold", colds)
            rate = await throughput(bus, 8, max(100, calls // 8))
        finally:
            for s in services:
                await s.stop()
            await bus.close()
            server.stop()
    left = left_containers()
    result = {
        "tool_step_p50_ms": step["nats_p50_ms"],
        "tool_step_p99_ms": step["nats_p99_ms"],
        "tool_step_socket_p50_ms": step["socket_p50_ms"],
        "tool_step_socket_p99_ms": step["socket_p99_ms"],
        "podman_exec_p50_ms": ex["exec_p50_ms"],
        "podman_exec_p99_ms": ex["exec_p99_ms"],
        "acquire_warm_p50_ms": acq["p50_ms"],
        "acquire_warm_p99_ms": acq["p99_ms"],
        "acquire_warm_from_pool": f"{acq['from_pool']}/{acq['n']}",
        "acquire_cold_p50_ms": cold_acq["p50_ms"],
        "acquire_cold_p99_ms": cold_acq["p99_ms"],
        "calls_per_s_8_sandboxes": round(rate),
        "runner_startup_s": round(startup, 3),
        "calls": calls,
        "containers_left": left,
        "target_tool_step_p50_ms": 2.0,
        "target_acquire_p50_ms": 10.0,
    }
    print(
        f"tool step over NATS:    p50 {step['nats_p50_ms']:.3f} ms  p99 "
        f"{step['nats_p99_ms']:.3f} ms  (target p50 <= 2 ms)"
    )
    print(
        f"  bare socket:          p50 {step['socket_p50_ms']:.3f} ms  p99 "
        f"{step['socket_p99_ms']:.3f} ms"
    )
    print(f"  podman exec:          p50 {ex['exec_p50_ms']:.1f} ms  p99 {ex['exec_p99_ms']:.1f} ms")
    print(f"acquire (warm pool):    p50 {acq['p50_ms']:.2f} ms  p99 {acq['p99_ms']:.2f} ms  "
          f"({acq['from_pool']}/{acq['n']} from the pool; target p50 <= 10 ms)")  # fmt: skip
    print(
        f"acquire (cold start):   p50 {cold_acq['p50_ms']:.1f} ms  p99 {cold_acq['p99_ms']:.1f} ms"
    )
    print(f"8 sandboxes over NATS:  {rate:,.0f} calls/s")
    print(f"containers left:        {left}")
    return result


if __name__ == "__main__":
    from envkernel import logs

    logs.configure("warning")
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--calls", type=int, default=2000, help="timed tool calls")
    ap.add_argument("--acquires", type=int, default=40, help="timed opens from the warm pool")
    ap.add_argument("--colds", type=int, default=10, help="timed cold opens")
    ap.add_argument("--execs", type=int, default=20, help="timed podman exec calls")
    ap.add_argument("--pool", type=int, default=2, help="warm pool size")
    a = ap.parse_args()
    print(json.dumps(asyncio.run(main(a.calls, a.acquires, a.colds, a.execs, a.pool))))
