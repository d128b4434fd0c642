"""Rollouts per second through the kernel: the reference policy, and the openai policy against a
scripted OpenAI-compatible server; the kernel's per-turn overhead beside the raw HTTP round trip
to the same server, measured in the same run. Prints figures; the last line is JSON.

    python benchmarks/bench_rollouts.py [--rollouts 400] [--sequential 40]

The real path: an embedded nats-server, the kernel's Worker serving the ``process`` sandbox
runner and the ``reference`` and ``openai`` policies, ``rollout.requested`` events in JetStream,
one process sandbox per rollout (opened over NATS, tool calls over NATS, state dumped, closed),
``rollout.step`` events published per message, ``rollout.finished`` out. The tasks and environments
are those of a real ``envkernel run`` (seed 1, so the same tasks every time). The scripted server
runs in its own process (``python -m envkernel_kit.scripted --oracle tasks.jsonl``) so it does not
share the kernel's interpreter; it solves every task by replaying the reference chain, one call per
turn.

Figures:

- ``*_rollouts_per_s``: N rollouts published at once, until the N-th ``rollout.finished``;
- sequential phase (one rollout at a time, so latencies are not queueing):
  - ``raw_http_rtt_ms``: a bare ``http.client`` keep-alive POST of the very same turn bodies
    (recorded from the sequential rollouts) to the same server: the floor of a turn;
  - ``model_call_ms``: the policy's model call (AsyncOpenAI + our retry layer), per turn;
  - ``turn_ms``: the policy's wall time per turn (model call, tool call over NATS to the sandbox,
    ``rollout.step`` publishes, message handling);
  - ``kernel_overhead_per_turn_ms`` = ``turn_ms − raw_http_rtt_ms``: everything envkernel adds
    to a turn above the HTTP round trip, split into ``client_overhead_ms`` (model_call − raw),
    ``tool_call_ms`` and the rest;
  - ``rollout_fixed_ms``: per-rollout cost outside the turns (event in/out, sandbox open, state
    dump, close), wall per rollout minus the policy's own time.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec

from envkernel.config import RunConfig
from envkernel.context import store_env
from envkernel.plugins import Component, Registry
from envkernel.worker import Worker
from envkernel_baselines import Reference
from envkernel_bus import Bus, EmbeddedServer
from envkernel_bus.subjects import event_subject
from envkernel_openai import OpenAIPolicy, tool_schema
from envkernel_process import ProcessRunner
from envkernel_sample import shop_env
from envkernel_schemas import (
    EnvSpec,
    PluginFailed,
    RolloutFinished,
    RolloutRequested,
    Task,
    decode,
    encode,
    event_id,
)

ENVKERNEL = str(Path(sys.executable).with_name("envkernel"))


def load_envs(run_dir: Path) -> dict[str, EnvSpec]:
    """The verified environments of the task run (its ``envs/<id>/`` folders)."""
    try:
        from envkernel_runtime.envdir import load_env_dir
    except ImportError:  # an older kernel: the sample shop only
        env = shop_env()
        return {env.id: env}
    out = {}
    for d in sorted((run_dir / "envs").iterdir()):
        if (d / "env.json").is_file():
            env = load_env_dir(d)
            out[env.id] = env
    return out


def make_tasks(tmp: Path) -> Path:
    """Run ``envkernel run`` once (reference policy) and return its tasks.jsonl."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENVKERNEL_"))}
    subprocess.run(
        [ENVKERNEL, "run", "--out", str(tmp), "--run-id", "tasks", "--seed", "1", "--no-progress"],
        check=True,
        capture_output=True,
        env=env,
        timeout=300,
    )
    return tmp / "tasks" / "tasks.jsonl"


def start_server(tasks_path: Path) -> tuple[subprocess.Popen[str], str]:
    """The scripted server in its own process; returns it and its base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "envkernel_kit.scripted", "--oracle", str(tasks_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise RuntimeError(f"the scripted server did not start: {url!r}")
    return proc, url


class Phase:
    """Publishes rollout requests and waits for their rollout.finished events."""

    def __init__(self, bus: Bus, run: str) -> None:
        self.bus, self.run = bus, run
        self.done: dict[str, RolloutFinished] = {}
        self.failed: dict[str, str] = {}
        self.event = asyncio.Event()
        self.want = 0

    async def listen(self) -> None:
        async def on(msg: Any) -> None:
            ev = decode(msg.data)
            if isinstance(ev, RolloutFinished) and ev.parent not in self.done:
                self.done[ev.parent] = ev
            elif (
                isinstance(ev, PluginFailed)
                and ev.event_kind == "rollout.requested"
                and ev.parent not in self.failed
            ):
                self.failed[ev.parent] = f"{ev.plugin}: {ev.error_type}: {ev.message}"
            else:
                return
            if len(self.done) + len(self.failed) >= self.want:
                self.event.set()

        self.subs = [
            await self.bus.nc.subscribe(event_subject(self.run, kind) + tail, cb=on)
            for kind in ("rollout.finished", "plugin.failed")
            for tail in ("", ".>")
        ]

    async def publish(self, policy: str, tasks: list[Task], start: int, count: int) -> None:
        futs = []
        for i in range(start, start + count):
            ev = RolloutRequested(
                run=self.run,
                id=event_id(self.run, "bench", i),
                task=tasks[i % len(tasks)],
                policy=policy,
                index=i,
            )
            futs.append(
                await self.bus.publish(event_subject(self.run, ev.kind, policy), encode(ev), ev.id)
            )
        await asyncio.gather(*futs)

    async def run_batch(self, policy: str, tasks: list[Task], count: int, start: int = 0) -> float:
        """Publish ``count`` requests at once; seconds until all are finished."""
        self.want = len(self.done) + len(self.failed) + count
        self.event.clear()
        t0 = time.perf_counter()
        await self.publish(policy, tasks, start, count)
        try:
            await asyncio.wait_for(self.event.wait(), 300)
        except TimeoutError:
            raise RuntimeError(
                f"{self.run}: {len(self.done)} finished, {len(self.failed)} failed of "
                f"{self.want} after 300 s"
            ) from None
        if self.failed:
            raise RuntimeError(
                f"{self.run}: {len(self.failed)} rollouts failed, e.g. "
                f"{next(iter(self.failed.values()))}"
            )
        return time.perf_counter() - t0

    async def close(self) -> None:
        for s in self.subs:
            await s.unsubscribe()


def raw_rtt(base_url: str, bodies: list[bytes]) -> list[float]:
    """Seconds per bare keep-alive POST of each body (one connection, sequential)."""
    u = urlsplit(base_url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    path = u.path.rstrip("/") + "/chat/completions"
    headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-bench"}
    out = []
    for b in bodies[:5]:  # warm the connection
        conn.request("POST", path, body=b, headers=headers)
        conn.getresponse().read()
    for b in bodies:
        t0 = time.perf_counter()
        conn.request("POST", path, body=b, headers=headers)
        r = conn.getresponse()
        r.read()
        out.append(time.perf_counter() - t0)
        assert r.status == 200
    conn.close()
    return out


def turn_bodies(policy: OpenAIPolicy, trajs: list[Any], tools: list[dict[str, Any]]) -> list[bytes]:
    """The request body of every turn of ``trajs``, as the policy sent it."""
    bodies = []
    for t in trajs:
        for k, m in enumerate(t.messages):
            if m["role"] == "assistant":
                payload = policy.payload(t.messages[:k], tools)
                payload.pop("extra_body", None)
                bodies.append(json.dumps(payload).encode())
    return bodies


def offered(env: EnvSpec, task: Task) -> list[dict[str, Any]]:
    """The tools the kernel offers for ``task`` (as the policy sent them)."""
    return tool_schema([t for t in env.tools if not task.tools or t.name in task.tools])


def ms(xs: list[float]) -> float:
    return round(1000 * statistics.fmean(xs), 3) if xs else 0.0


def p50(xs: list[float]) -> float:
    return round(1000 * statistics.median(xs), 3) if xs else 0.0


async def main(n: int, seq: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        tasks_path = make_tasks(tmp)
        envs = load_envs(tasks_path.parent)
        tasks = [
            msgspec.json.decode(line, type=Task)
            for line in tasks_path.read_bytes().splitlines()
            if line.strip()
        ]
        tasks = [t for t in tasks if t.env_id in envs]
        server, base_url = start_server(tasks_path)
        try:
            with EmbeddedServer(tmp / "nats") as nats:
                return await measure(nats.url, base_url, tasks, envs, n, seq)
        finally:
            server.terminate()
            server.wait(10)


async def measure(
    url: str, base_url: str, tasks: list[Task], envs: dict[str, EnvSpec], n: int, seq: int
) -> dict[str, Any]:
    bus = await Bus.connect(url)
    openai_settings = {
        "base_url": base_url,
        "api_key": "sk-bench",
        "model": "scripted",
        "temperature": 0.0,
    }
    reg = Registry()
    reg.components["process"] = Component("process", "sandbox_runner", ProcessRunner, "bench")
    reg.components["reference"] = Component("reference", "policy", Reference, "bench")
    reg.components["openai"] = Component("openai", "policy", OpenAIPolicy, "bench")
    runs = {
        r: RunConfig(
            run_id=r,
            runner="process",
            components={"sandbox_runner": ["process"], "policy": ["reference", "openai"]},
            settings={"openai": openai_settings},
        )
        for r in ("warm", "ref", "oai", "seq")
    }
    for r in runs:
        for env in envs.values():
            await store_env(bus, r, env)
    worker = Worker(bus, reg, list(reg.components), known=runs)
    await worker.start()
    try:
        warm = Phase(bus, "warm")
        await warm.listen()
        await warm.run_batch("reference", tasks, 20)
        await warm.run_batch("openai", tasks, 20, start=20)
        await warm.close()

        ref = Phase(bus, "ref")
        await ref.listen()
        t_ref = await ref.run_batch("reference", tasks, n)
        await ref.close()

        oai = Phase(bus, "oai")
        await oai.listen()
        t_oai = await oai.run_batch("openai", tasks, n)
        await oai.close()
        oai_trajs = [e.trajectory for e in oai.done.values()]
        assert all(t.termination == "answer" for t in oai_trajs), {t.termination for t in oai_trajs}
        oai_turns = sum(len(t.latencies) for t in oai_trajs)

        sq = Phase(bus, "seq")
        await sq.listen()
        walls = []
        for i in range(seq):
            walls.append(await sq.run_batch("openai", tasks, 1, start=i))
        await sq.close()
        trajs = [e.trajectory for e in sq.done.values()]
    finally:
        await worker.stop()
        await bus.close()

    turns = sum(len(t.latencies) for t in trajs)
    tasks_by_id = {t.id: t for t in tasks}
    policy = OpenAIPolicy(OpenAIPolicy.Settings(**openai_settings))  # type: ignore[arg-type]
    env_of = {t.id: envs[t.env_id] for t in tasks}
    bodies = [
        b
        for t in trajs
        for b in turn_bodies(policy, [t], offered(env_of[t.task_id], tasks_by_id[t.task_id]))
    ]
    assert len(bodies) == turns
    raw = raw_rtt(base_url, bodies)
    model = [x for t in trajs for x in t.latencies]
    tool = [c.seconds for t in trajs for c in t.calls]
    turn = sum(t.seconds for t in trajs) / turns
    raw_mean = statistics.fmean(raw)
    fixed = statistics.fmean(walls) - statistics.fmean(t.seconds for t in trajs)
    result = {
        "rollouts": n,
        "tasks": len(tasks),
        "envs": len(envs),
        "reference_rollouts_per_s": round(n / t_ref, 1),
        "openai_rollouts_per_s": round(n / t_oai, 1),
        "openai_turns_per_rollout": round(oai_turns / n, 2),
        "openai_turns_per_s": round(oai_turns / t_oai, 1),
        "sequential_rollouts": seq,
        "raw_http_rtt_ms": ms(raw),
        "raw_http_rtt_p50_ms": p50(raw),
        "model_call_ms": ms(model),
        "model_call_p50_ms": p50(model),
        "turn_ms": round(1000 * turn, 3),
        "kernel_overhead_per_turn_ms": round(1000 * (turn - raw_mean), 3),
        "client_overhead_ms": round(ms(model) - ms(raw), 3),
        "tool_call_ms": ms(tool),
        "rollout_fixed_ms": round(1000 * fixed, 3),
    }
    print(
        f"tasks: {len(tasks)} over {len(envs)} environments (envkernel run --seed 1); {n} "
        "rollouts per throughput phase"
    )
    print(f"reference policy:            {result['reference_rollouts_per_s']:>8} rollouts/s")
    print(
        f"openai policy (scripted):    {result['openai_rollouts_per_s']:>8} rollouts/s  "
        f"({result['openai_turns_per_rollout']} turns each, {result['openai_turns_per_s']} turns/s)"
    )
    rest_ms = (
        result["kernel_overhead_per_turn_ms"]
        - result["client_overhead_ms"]
        - result["tool_call_ms"] * len(tool) / turns
    )
    print(f"sequential, {seq} rollouts, {turns} turns:")
    print(
        "  raw HTTP round trip (http.client, same bodies, same server): "
        f"{result['raw_http_rtt_ms']} ms (p50 {result['raw_http_rtt_p50_ms']})"
    )
    print(
        "  model call in the policy (AsyncOpenAI + retry layer):       "
        f"{result['model_call_ms']} ms (p50 {result['model_call_p50_ms']})"
    )
    print(f"  turn in the policy (model + tool over NATS + step events):  {result['turn_ms']} ms")
    print(
        "  kernel overhead per turn (turn - raw HTTP):                 "
        f"{result['kernel_overhead_per_turn_ms']} ms (client {result['client_overhead_ms']}, "
        f"tool call {result['tool_call_ms']}, rest "
        f"{round(rest_ms, 3)})"
    )
    print(
        "  fixed cost per rollout (events, sandbox open/state/close):  "
        f"{result['rollout_fixed_ms']} ms"
    )
    return result


if __name__ == "__main__":
    from envkernel import logs

    logs.configure("warning")
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rollouts", type=int, default=400, help="Rollouts per throughput phase.")
    ap.add_argument(
        "--sequential", type=int, default=40, help="Rollouts in the sequential latency phase."
    )
    args = ap.parse_args()
    print(json.dumps(asyncio.run(main(args.rollouts, args.sequential))))
