"""Sessions side by side: envkernel (an isolated process sandbox per session, over NATS) against
OpenEnv (``openenv-core`` 0.3: an in-process environment object per WebSocket session).

Both serve the same trivial counter tool (``step(delta)`` adds to a counter and returns it), each
from a server process of its own, and a client in this process drives both, alternating A and B
in every round:

- **step**: one call at a time on a warm session, p50 and p99 (envkernel: ``Sandbox.call``, which on
  the runner's host goes straight to the executor over its direct lane; ``envkernel_bus``: the same
  without the lane, over NATS to the sandbox service, which relays it to the executor, as for a
  client on another host; OpenEnv: the client's ``step`` over its WebSocket);
- **reset**: envkernel ``Sandbox.restore`` of the snapshot taken at open; OpenEnv ``reset``;
- **open**: a new session, from the request until it answers a step: envkernel ``open_sandbox``
  (a new executor with its own uid, network and mount namespaces, cgroup, Landlock and seccomp,
  forked from the runner's zygote; with ``--spares N``, one the runner opened ahead for that
  environment; with ``--cells N``, a blank executor it forked and confined ahead, into which the
  open loads the environment) against a new OpenEnv client connection and its ``reset``;
- **nats**: the baseline of a step over the bus, one raw NATS request/reply of a step's bytes to a
  callback in the service process that answers at once (``step_p50_*_over_nats_round_trip``);
- **concurrent**: 64, 256 and 512 sessions opened at once, 20 steps each, all at the same time;
  steps/s counts the time to open them (steps / (open + steps)), with the success rate. With
  ``--batches B`` (a GRPO-like loop: a trainer opens N sessions per step, again and again), each
  level is B batches one after another, each opened, stepped and closed, the two sides' batches
  interleaved: the first batch's figures keep their keys, and ``sessions_N_repeat_*`` are the
  median of batches 2..B, with the open counted and with the open and the close counted. With
  ``--recycle N`` the runner keeps up to N closed sandboxes for reuse (``Settings.recycle``), which
  only the repeated batches can use.

The real envkernel environment (the sample shop, ``shop-v1``) is measured beside the counter:
its ``get_order`` step p50/p99 and its open. So is ``envkernel serve`` on a sample run of it (the
``serve`` rows: OpenEnv's protocol and client, a process sandbox per session, the runner's
``spares`` set as the benchmark's; open is connect + ``reset(task_index=0)``).

    uv run --no-sync --with openenv-core==0.3.0 python benchmarks/bench_sessions.py [--rounds 3]

(``--with`` adds OpenEnv to this run only; the workspace does not depend on it.) Prints figures;
the last line is JSON: each side's medians over the rounds, and ``*_envkernel_over_openenv``
ratios (for the sequential figures, the median of each round's own ratio).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from envkernel.sandbox import open_sandbox
from envkernel_bus import Bus, EmbeddedServer, sandboxwire
from envkernel_sample import shop_env
from envkernel_schemas import CodeBehaviour, EnvSpec, ToolSpec

HERE = Path(__file__).resolve().parent / "sessions"
RUNNER = "process"
STEPS_PER_SESSION = 20

COUNTER = EnvSpec(
    id="counter-v1",
    name="counter",
    description="A counter: step adds delta to it and returns it.",
    tools=[ToolSpec(name="step", description="Add delta to the counter.", mutates=True,
                    parameters={"type": "object", "properties": {"delta": {"type": "integer"}}})],
    behaviour=CodeBehaviour(source=(
        "def step(env, delta=1):\n"
        "    env.db.execute('UPDATE counter SET n = n + ?', (delta,))\n"
        "    return {'count': env.db.execute('SELECT n FROM counter').fetchone()['n']}\n"
    )),
    seed_sql="CREATE TABLE counter (n INTEGER NOT NULL); INSERT INTO counter VALUES (0);",
)  # fmt: skip


def pct(xs: list[float], q: float) -> float:
    """The q-quantile of xs (seconds), in milliseconds."""
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))] * 1000, 4) if xs else float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ----------------------------------------------------------------------------- the two sides


class Envkernel:
    """The client side of envkernel: sandboxes over NATS from the service process."""

    name = "envkernel"

    def __init__(
        self,
        bus: Bus,
        env: EnvSpec = COUNTER,
        tool: str = "step",
        args: dict[str, Any] | None = None,
    ) -> None:
        self.bus = bus
        self.env = env
        self.tool = tool
        self.args = args if args is not None else {"delta": 1}

    async def open(self) -> Any:
        sb = await open_sandbox(self.bus, RUNNER, self.env, timeout=300, call_timeout=120)
        sb.base = await sb.snapshot()  # type: ignore[attr-defined]
        return sb

    async def step(self, sb: Any) -> bool:
        return bool((await sb.call(self.tool, self.args)).ok)

    async def reset(self, sb: Any) -> None:
        await sb.restore(sb.base)

    async def close(self, sb: Any) -> None:
        await sb.close()


class EnvkernelBus(Envkernel):
    """envkernel without the direct lane (``ENVKERNEL_SANDBOX_LANES=0`` in the client while it
    opens): every call crosses nats-server and the sandbox service, as a client on another host
    does."""

    name = "envkernel_bus"

    async def open(self) -> Any:
        os.environ["ENVKERNEL_SANDBOX_LANES"] = "0"
        try:
            sb = await super().open()
        finally:
            del os.environ["ENVKERNEL_SANDBOX_LANES"]
        assert sb.lane is None
        return sb


class NatsRoundTrip:
    """The baseline for a step over the bus: one raw NATS request/reply (nats-py, the same
    connection and nats-server) to a callback in the service process that answers at once
    (``bench.echo``), with the bytes of a counter step's request. The issue's bar: a step should
    cost little more than this."""

    name = "nats"

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self.payload = sandboxwire.enc.encode(sandboxwire.Call(tool="step", arguments={"delta": 1}))

    async def step(self, _: Any) -> bool:
        return bool((await self.bus.nc.request("bench.echo", self.payload, timeout=60)).data)


class OpenEnv:
    """The client side of OpenEnv: one ``GenericEnvClient`` WebSocket session per session."""

    name = "openenv"

    def __init__(self, url: str) -> None:
        from openenv.core.generic_client import GenericEnvClient

        self.url = url
        self.client_type = GenericEnvClient

    async def open(self) -> Any:
        c = self.client_type(base_url=self.url, connect_timeout_s=300, message_timeout_s=300)
        await c.connect()
        await c.reset()
        return c

    async def step(self, c: Any) -> bool:
        r = await c.step({"delta": 1})
        return isinstance(r.observation, dict) and "count" in r.observation

    async def reset(self, c: Any) -> None:
        await c.reset()

    async def close(self, c: Any) -> None:
        await c.close()


class Serve(OpenEnv):
    """``envkernel serve`` (OpenEnv's protocol, a process sandbox per session) on the sample shop's
    run folder, driven by the same OpenEnv client."""

    name = "serve"

    async def open(self) -> Any:
        c = self.client_type(base_url=self.url, connect_timeout_s=300, message_timeout_s=300)
        await c.connect()
        await c.reset(task_index=0)
        return c

    async def step(self, c: Any) -> bool:
        r = await c.step(
            {"type": "call_tool", "tool_name": "get_order", "arguments": {"order_id": "ord_0001"}}
        )
        return "ord_0001" in json.dumps(r.observation)

    async def reset(self, c: Any) -> None:
        await c.reset(task_index=0)


def start_serve(
    tmp: Path, spares: int, cells: int = 0, recycle: int = 0
) -> tuple[subprocess.Popen[bytes], str]:
    """A sample run (for its run folder and tasks), then ``envkernel serve`` on it."""
    envkernel = [sys.executable, "-m", "envkernel"]
    subprocess.run(
        [*envkernel, "run", "--source", "sample", "--out", str(tmp / "runs")],
        check=True,
        capture_output=True,
        timeout=600,
    )
    run_dir = next((tmp / "runs").iterdir())
    port = free_port()
    proc = subprocess.Popen(
        [
            *envkernel,
            "serve",
            str(run_dir),
            "--port",
            str(port),
            "--max-steps",
            "1000000",
            "--warm",
            str(max(2, spares)),
            "--set",
            f"spares={spares}",
            "--set",
            f"cells={cells}",
            "--set",
            f"recycle={recycle}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return proc, f"http://127.0.0.1:{port}"


async def wait_port(url: str, what: str) -> float:
    """Seconds until ``url``'s port accepts connections."""
    port = int(url.rsplit(":", 1)[1])
    t0 = time.monotonic()
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return time.monotonic() - t0
        except OSError:
            if time.monotonic() - t0 > 300:
                raise RuntimeError(f"{what} did not start within 300 s") from None
            await asyncio.sleep(0.2)


# ----------------------------------------------------------------------------- measurements


async def steps(side: Any, s: Any, n: int) -> list[float]:
    out = []
    for i in range(n + 50):
        t = time.perf_counter()
        ok = await side.step(s)
        if i >= 50:
            out.append(time.perf_counter() - t)
        assert ok, side.name
    return out


async def resets(side: Any, s: Any, n: int) -> list[float]:
    out = []
    for _ in range(n):
        await side.step(s)
        t = time.perf_counter()
        await side.reset(s)
        out.append(time.perf_counter() - t)
    return out


async def opens(side: Any, n: int, pause: float = 0.05) -> list[float]:
    """Open n sessions one after another (each until it answered a step), closing each after."""
    out = []
    for _ in range(n):
        t = time.perf_counter()
        s = await side.open()
        await side.step(s)
        out.append(time.perf_counter() - t)
        await side.close(s)
        if pause:
            await asyncio.sleep(
                pause
            )  # lets a runner's spare come back, as between a trainer's episodes
    return out


async def concurrent(side: Any, n: int) -> dict[str, Any]:
    """n sessions opened at once, STEPS_PER_SESSION steps each, all at the same time."""
    ok = 0
    errors: list[str] = []
    opened: list[Any] = []

    async def one() -> None:
        nonlocal ok
        try:
            s = await side.open()
        except Exception as exc:
            errors.append(f"open: {type(exc).__name__}: {exc}")
            return
        opened.append(s)
        for _ in range(STEPS_PER_SESSION):
            try:
                good = await side.step(s)  # (not `ok += await ...`: that reads ok before the await)
                ok += good
            except Exception as exc:
                errors.append(f"step: {type(exc).__name__}: {exc}")

    t = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    wall = time.perf_counter() - t
    await asyncio.gather(*(side.close(s) for s in opened), return_exceptions=True)
    with_close = time.perf_counter() - t
    total = n * STEPS_PER_SESSION
    return {
        "sessions": n,
        "success_rate": round(ok / total, 4),
        "steps_per_s_open_counted": round(ok / wall, 1),
        "steps_per_s_open_and_close_counted": round(ok / with_close, 1),
        "wall_s": round(wall, 2),
        "close_s": round(with_close - wall, 2),
        "errors": errors[:3],
    }


def med(rounds: list[dict[str, Any]], key: str) -> float:
    return round(statistics.median(r[key] for r in rounds), 4)


async def main(
    rounds: int,
    n_steps: int,
    n_opens: int,
    levels: list[int],
    spares: int,
    cells: int = 0,
    recycle: int = 0,
    batches: int = 1,
) -> dict[str, Any]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    try:
        import openenv  # noqa: F401
    except ImportError:
        sys.exit(
            "bench_sessions needs openenv-core: run it as `uv run --no-sync --with "
            "openenv-core==0.3.0 python benchmarks/bench_sessions.py`"
        )
    port = free_port()
    oe_proc = subprocess.Popen([sys.executable, str(HERE / "openenv_counter.py"), str(port)])
    with tempfile.TemporaryDirectory() as tmp, EmbeddedServer(Path(tmp) / "nats") as server:
        service = subprocess.Popen(
            [
                sys.executable,
                str(HERE / "envkernel_service.py"),
                server.url,
                str(spares),
                str(cells),
                str(recycle),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert service.stdout is not None and service.stdout.readline().strip() == "ready"
        bus = await Bus.connect(server.url, name="bench-sessions-client")
        try:
            oe_start = await wait_port(
                f"http://127.0.0.1:{port}", "the OpenEnv server"
            )  # it takes seconds to import
            serve_proc, serve_url = start_serve(Path(tmp), spares, cells, recycle)
            await wait_port(serve_url, "envkernel serve")
            ek, oe, ekbus = Envkernel(bus), OpenEnv(f"http://127.0.0.1:{port}"), EnvkernelBus(bus)
            shop = Envkernel(bus, shop_env(), "get_order", {"order_id": "ord_0001"})
            serve = Serve(serve_url)
            nats = NatsRoundTrip(bus)
            per_round = []
            for r in range(rounds):
                row: dict[str, Any] = {}
                sides = (
                    (ek, oe, serve, ekbus) if r % 2 == 0 else (ekbus, serve, oe, ek)
                )  # alternate the order
                rt = await steps(
                    nats, None, n_steps // 2
                )  # the raw round trip: half before the four sides, half after
                for side in sides:
                    s = await side.open()
                    st = await steps(side, s, n_steps)
                    rs = await resets(side, s, max(20, n_steps // 10))
                    await side.close(s)
                    op = await opens(side, n_opens)
                    row.update(
                        {
                            f"{side.name}_step_p50_ms": pct(st, 0.5),
                            f"{side.name}_step_p99_ms": pct(st, 0.99),
                            f"{side.name}_reset_p50_ms": pct(rs, 0.5),
                            f"{side.name}_open_p50_ms": pct(op, 0.5),
                        }
                    )
                rt += await steps(nats, None, n_steps - n_steps // 2)
                row.update(
                    {
                        "nats_round_trip_p50_ms": pct(rt, 0.5),
                        "nats_round_trip_p99_ms": pct(rt, 0.99),
                    }
                )
                s = await shop.open()
                st = await steps(shop, s, n_steps)
                await shop.close(s)
                row.update(
                    {
                        "shop_step_p50_ms": pct(st, 0.5),
                        "shop_step_p99_ms": pct(st, 0.99),
                        "shop_open_p50_ms": pct(await opens(shop, max(5, n_opens // 2)), 0.5),
                    }
                )
                per_round.append(row)
                print(
                    f"round {r + 1}: " + ", ".join(f"{k} {v}" for k, v in row.items()), flush=True
                )
            conc: dict[str, dict[int, list[dict[str, Any]]]] = {"envkernel": {}, "openenv": {}}
            turn = 0
            for n in levels:
                for b in range(
                    batches
                ):  # the two sides' batches interleaved, alternating which goes first
                    for side in (ek, oe) if turn % 2 == 0 else (oe, ek):
                        res = await concurrent(side, n)
                        conc[side.name].setdefault(n, []).append(res)
                        print(
                            f"concurrent {side.name:9s} {n:4d} sessions, batch {b + 1}: "
                            f"{res['success_rate'] * 100:.1f} % ok, "
                            f"{res['steps_per_s_open_counted']:,} steps/s with the open "
                            f"time counted ({res['wall_s']} s), "
                            f"{res['steps_per_s_open_and_close_counted']:,} with the close "
                            f"too (+{res['close_s']} s)"
                            + (f"; errors: {res['errors']}" if res["errors"] else ""),
                            flush=True,
                        )
                    turn += 1
        finally:
            await bus.close()
            if "serve_proc" in locals():
                serve_proc.terminate()
                serve_proc.wait(60)
            service.stdin.close()  # type: ignore[union-attr]
            service.wait(60)
            oe_proc.terminate()
            oe_proc.wait(30)
    out: dict[str, Any] = {
        "rounds": rounds,
        "spares": spares,
        "cells": cells,
        "recycle": recycle,
        "batches": batches,
        "cpus": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 1),
        "openenv_server_start_s": round(oe_start, 2),
    }
    for key in per_round[0]:
        out[key] = med(per_round, key)
    for what in (
        "step_p50",
        "step_p99",
        "reset_p50",
        "open_p50",
    ):  # the median of the rounds' own ratios
        out[f"{what}_envkernel_over_openenv"] = round(
            statistics.median(
                r[f"envkernel_{what}_ms"] / r[f"openenv_{what}_ms"] for r in per_round
            ),
            3,
        )
        out[f"{what}_serve_over_openenv"] = round(
            statistics.median(r[f"serve_{what}_ms"] / r[f"openenv_{what}_ms"] for r in per_round), 3
        )
        out[f"{what}_envkernel_bus_over_openenv"] = round(
            statistics.median(
                r[f"envkernel_bus_{what}_ms"] / r[f"openenv_{what}_ms"] for r in per_round
            ),
            3,
        )
    for side in (
        "envkernel_bus",
        "envkernel",
        "serve",
        "openenv",
    ):  # the bar for the bus: little more than one NATS round trip
        out[f"step_p50_{side}_over_nats_round_trip"] = round(
            statistics.median(
                r[f"{side}_step_p50_ms"] / r["nats_round_trip_p50_ms"] for r in per_round
            ),
            3,
        )
    for n in dict.fromkeys(levels):  # a level named twice: its last run
        runs = {name: conc[name][n][-batches:] for name in conc}
        e, o = runs["envkernel"][0], runs["openenv"][0]
        out[f"sessions_{n}_success_rate_envkernel"] = e["success_rate"]
        out[f"sessions_{n}_success_rate_openenv"] = o["success_rate"]
        out[f"sessions_{n}_steps_per_s_open_counted_envkernel"] = e["steps_per_s_open_counted"]
        out[f"sessions_{n}_steps_per_s_open_counted_openenv"] = o["steps_per_s_open_counted"]
        out[f"sessions_{n}_steps_per_s_envkernel_over_openenv"] = round(
            e["steps_per_s_open_counted"] / o["steps_per_s_open_counted"], 3
        )
        if batches < 2:
            continue
        for what in ("steps_per_s_open_counted", "steps_per_s_open_and_close_counted"):
            rep = {
                name: round(statistics.median(r[what] for r in rs[1:]), 1)
                for name, rs in runs.items()
            }
            out[f"sessions_{n}_repeat_{what}_envkernel"] = rep["envkernel"]
            out[f"sessions_{n}_repeat_{what}_openenv"] = rep["openenv"]
            out[f"sessions_{n}_repeat_{what}_envkernel_over_openenv"] = round(
                rep["envkernel"] / rep["openenv"], 3
            )
        out[f"sessions_{n}_repeat_success_rate_envkernel"] = min(
            r["success_rate"] for r in runs["envkernel"][1:]
        )
        out[f"sessions_{n}_repeat_success_rate_openenv"] = min(
            r["success_rate"] for r in runs["openenv"][1:]
        )
    return out


if __name__ == "__main__":
    from envkernel import logs

    logs.configure("warning")
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--rounds", type=int, default=3, help="alternating rounds of the sequential figures"
    )
    ap.add_argument("--steps", type=int, default=500, help="sequential steps per round and side")
    ap.add_argument("--opens", type=int, default=20, help="sequential opens per round and side")
    ap.add_argument("--sessions", default="64,256,512", help="concurrent-session levels")
    ap.add_argument(
        "--spares",
        type=int,
        default=0,
        help="the runner's spares setting (0: every open forks a new executor)",
    )
    ap.add_argument(
        "--cells",
        type=int,
        default=0,
        help="the runner's cells setting: blank executors confined ahead for any environment",
    )
    ap.add_argument(
        "--recycle",
        type=int,
        default=0,
        help="the runner's recycle setting: closed sandboxes kept for reuse (a new session "
        "forked in each)",
    )
    ap.add_argument(
        "--batches",
        type=int,
        default=1,
        help="batches per concurrent level, one after another (a GRPO-like loop); 2..B are "
        "reported as sessions_N_repeat_*",
    )
    a = ap.parse_args()
    result = asyncio.run(
        main(
            a.rounds,
            a.steps,
            a.opens,
            [int(x) for x in a.sessions.split(",")],
            a.spares,
            a.cells,
            a.recycle,
            a.batches,
        )
    )
    print(json.dumps(result))
