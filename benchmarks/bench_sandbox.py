"""Sandbox benchmark: the tool step, snapshot/restore, and concurrent process sandboxes.

Everything goes the way a stage goes: the ``process`` runner comes from the plugin registry and
is served on an embedded nats-server by the kernel's SandboxService; the stage side opens
sandboxes with ``open_sandbox`` and talks to them with the ``Sandbox`` client over NATS, on its
own connection. Each sandbox is fully confined as the host allows (on CI: own uid, network and
mount namespaces, cgroups, Landlock).

- **tool step**: ``Sandbox.call("get_order", ...)`` on a warm sandbox of the sample shop, one at a
  time, p50 and p99; beside it the raw NATS request/reply round trip (same payload size, same
  connections, same server, same run) and the same call on the runner directly (no NATS);
- **snapshot / restore**: ``Sandbox.snapshot()`` and ``Sandbox.restore()`` over NATS (state: the
  shop's database plus a small working folder), p50 and p99;
- **open**: from the open request until the environment is loaded and callable;
- **concurrent sessions**: N sandboxes held open at once, every one doing steps concurrently;
  reported with the success rate (calls that answered ok / calls made) and steps/s, for growing N.

    python benchmarks/bench_sandbox.py [--steps 2000] [--sessions 64,256,512] \
        [--steps-per-session 10]

Prints figures; the last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from envkernel.plugins import load
from envkernel.sandbox import SandboxService, open_sandbox
from envkernel_bus import Bus, EmbeddedServer
from envkernel_bus.sandboxwire import Result
from envkernel_sample import shop_env

RUNNER = "process"
ARGS = {"order_id": "ord_0003"}


def pct(xs: list[float], q: float) -> float:
    """The q-quantile of xs, in milliseconds (xs in seconds)."""
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))] * 1000, 4)


def summary(xs: list[float]) -> dict[str, float]:
    return {
        "p50_ms": pct(xs, 0.5),
        "p99_ms": pct(xs, 0.99),
        "mean_ms": round(statistics.fmean(xs) * 1000, 4),
        "n": len(xs),
    }


async def raw_round_trip(
    service_bus: Bus, client_bus: Bus, payload_size: int, n: int
) -> list[float]:
    """Core NATS request/reply with a fixed answer: the floor under a tool step."""
    reply = b"x" * payload_size

    async def answer(msg: Any) -> None:
        await msg.respond(reply)

    sub = await service_bus.nc.subscribe("bench.rr", cb=answer)
    await service_bus.nc.flush()
    req = b"y" * 64
    out = []
    for i in range(n + 200):
        t = time.perf_counter()
        await client_bus.nc.request("bench.rr", req, timeout=5)
        if i >= 200:  # warm-up
            out.append(time.perf_counter() - t)
    await sub.unsubscribe()
    return out


async def steps(sb: Any, n: int) -> list[float]:
    out = []
    for i in range(n + 200):
        t = time.perf_counter()
        r = await sb.call("get_order", ARGS)
        if i >= 200:
            out.append(time.perf_counter() - t)
        assert r.ok, r
    return out


async def snapshot_restore(sb: Any, n: int) -> tuple[list[float], list[float]]:
    await sb.call(
        "create_order", {"customer_id": "cus_0001", "product_id": "prd_0003", "quantity": 1}
    )
    snaps, restores = [], []
    base = await sb.snapshot()
    for _ in range(n):
        await sb.call("cancel_order", {"order_id": "ord_0002"})
        t = time.perf_counter()
        await sb.snapshot()
        snaps.append(time.perf_counter() - t)
        t = time.perf_counter()
        await sb.restore(base)
        restores.append(time.perf_counter() - t)
    order = await sb.call("get_order", {"order_id": "ord_0002"})
    assert order.ok and order.value["status"] == "pending", order  # the restore undid the cancel
    return snaps, restores


async def direct_steps(runner: Any, n: int) -> list[float]:
    """The same call on the runner in-process (no NATS): what NATS adds is the difference."""
    s = await runner.open(shop_env(), 0)
    try:
        out = []
        for i in range(n + 200):
            t = time.perf_counter()
            r = await s.call("get_order", ARGS)
            if i >= 200:
                out.append(time.perf_counter() - t)
            assert r.ok
        return out
    finally:
        await s.close()


async def concurrent(client: Bus, n: int, per_session: int, open_parallel: int) -> dict[str, Any]:
    """Hold n sandboxes open at once; each does per_session steps, all at the same time."""
    env = shop_env()
    gate = asyncio.Semaphore(open_parallel)
    opened: list[Any] = []
    open_errors: list[str] = []
    open_times: list[float] = []

    async def open_one() -> None:
        async with gate:
            t = time.perf_counter()
            try:
                sb = await open_sandbox(client, RUNNER, env, timeout=120, call_timeout=120)
            except Exception as exc:
                open_errors.append(f"{type(exc).__name__}: {exc}")
                return
            open_times.append(time.perf_counter() - t)
            opened.append(sb)

    t0 = time.perf_counter()
    await asyncio.gather(*(open_one() for _ in range(n)))
    open_s = time.perf_counter() - t0
    ok = failed = 0
    errors: list[str] = []

    async def work(sb: Any) -> None:
        nonlocal ok, failed
        for _ in range(per_session):
            try:
                r = await sb.call("get_order", ARGS)
            except Exception as exc:
                failed += 1
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            if r.ok:
                ok += 1
            else:
                failed += 1
                errors.append(f"{r.error.code}: {r.error.message}")

    t1 = time.perf_counter()
    await asyncio.gather(*(work(sb) for sb in opened))
    step_s = time.perf_counter() - t1
    t2 = time.perf_counter()
    await asyncio.gather(*(sb.close() for sb in opened))
    close_s = time.perf_counter() - t2
    calls = n * per_session  # a sandbox that never opened counts all its steps as failed
    return {
        "sessions": n,
        "opened": len(opened),
        "success_rate": round(ok / calls, 4) if calls else 0.0,
        "steps": calls,
        "steps_per_s": round(ok / step_s) if step_s > 0 else 0,
        "open_all_s": round(open_s, 2),
        "open_p50_ms": pct(open_times, 0.5) if open_times else None,
        "close_all_s": round(close_s, 2),
        "errors": (open_errors + errors)[:3],
    }


def _raise_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


async def main(
    n_steps: int, levels: list[int], per_session: int, open_parallel: int
) -> dict[str, Any]:
    _raise_nofile()
    registry = load([RUNNER], strict=True)
    comp = registry.get(RUNNER)
    runner = comp.factory(comp.settings_type()) if comp.settings_type else comp.factory()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedServer(Path(tmp) / "nats") as server:
        service_bus = await Bus.connect(server.url, name="bench-sandbox-service")
        client = await Bus.connect(server.url, name="bench-stage")
        service = SandboxService(service_bus, RUNNER, runner)
        await service.start()
        try:
            t = time.perf_counter()
            sb = await open_sandbox(client, RUNNER, shop_env())
            first_open = time.perf_counter() - t
            opens = []
            for _ in range(10):
                t = time.perf_counter()
                other = await open_sandbox(client, RUNNER, shop_env())
                opens.append(time.perf_counter() - t)
                await other.close()
            step = await steps(sb, n_steps)
            # the raw figure answers with as many bytes as a real get_order reply
            payload = len(
                msgspec.msgpack.encode(
                    Result(json=msgspec.json.encode(await sb.call("get_order", ARGS)))
                )
            )
            rr = await raw_round_trip(service_bus, client, payload, n_steps)
            step2 = await steps(sb, n_steps)  # again, interleaved with the raw figure
            direct = await direct_steps(runner, n_steps)
            snaps, restores = await snapshot_restore(sb, max(50, n_steps // 10))
            await sb.close()
            conc = []
            for n in levels:
                r = await concurrent(client, n, per_session, open_parallel)
                conc.append(r)
                print(
                    f"concurrent: {n:4d} sandboxes open at once, {r['success_rate'] * 100:.1f} % "
                    f"of {r['steps']} steps ok, {r['steps_per_s']:,} steps/s; opened all "
                    f"in {r['open_all_s']} s (p50 {r['open_p50_ms']} ms), closed in "
                    f"{r['close_all_s']} s" + (f"; errors: {r['errors']}" if r["errors"] else "")
                )
                if r["success_rate"] < 1.0:
                    break
        finally:
            await service.stop()
            await client.close()
            await service_bus.close()
    steps_all = step + step2
    best = max((c["sessions"] for c in conc if c["success_rate"] == 1.0), default=0)
    result = {
        "runner": RUNNER,
        "confinement": runner.support.as_dict() if hasattr(runner, "support") else {},
        "tool_step": summary(steps_all),
        "nats_request_reply": summary(rr),
        "tool_step_in_process": summary(direct),
        "snapshot": summary(snaps),
        "restore": summary(restores),
        "open": {**summary(opens), "first_ms": round(first_open * 1000, 2)},
        "concurrent": conc,
        "max_sessions_at_100_percent": best,
        "target_sessions": 512,
        "cpus": os.cpu_count(),
    }
    ts, nr, ip = result["tool_step"], result["nats_request_reply"], result["tool_step_in_process"]
    print(
        f"tool step (Sandbox.call over NATS, warm process sandbox): p50 {ts['p50_ms']} ms, "
        f"p99 {ts['p99_ms']} ms"
    )
    print(
        f"raw NATS request/reply, same run:                        p50 {nr['p50_ms']} ms, "
        f"p99 {nr['p99_ms']} ms"
    )
    print(
        f"same call on the runner in-process (no NATS):            p50 {ip['p50_ms']} ms, "
        f"p99 {ip['p99_ms']} ms"
    )
    print(
        f"snapshot: p50 {result['snapshot']['p50_ms']} ms, p99 {result['snapshot']['p99_ms']} "
        f"ms; restore: p50 {result['restore']['p50_ms']} ms, p99 {result['restore']['p99_ms']} ms"
    )
    print(f"open (request -> loaded and callable): p50 {result['open']['p50_ms']} ms")
    print(f"concurrent sessions at 100 %: {best} (target 512)")
    return result


if __name__ == "__main__":
    from envkernel import logs

    logs.configure("warning")
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--steps", type=int, default=2000, help="sequential steps for the p50/p99 figures"
    )
    ap.add_argument("--sessions", default="64,256,512", help="concurrent-session levels, ascending")
    ap.add_argument("--steps-per-session", type=int, default=10)
    ap.add_argument(
        "--open-parallel", type=int, default=32, help="sandboxes opening at the same time"
    )
    a = ap.parse_args()
    levels = [int(x) for x in a.sessions.split(",") if x.strip()]
    print(json.dumps(asyncio.run(main(a.steps, levels, a.steps_per_session, a.open_parallel))))
