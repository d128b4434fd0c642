"""Kernel routing throughput vs raw nats-py JetStream, same payload, same server, same run.

Raw: batch pull -> async publish -> ack on PubAck (the ceiling). Kernel: the same events go
through one stage (a reward-model component that returns a fixed Reward), with decoding, the
failure boundary, child ids, handled reports and acks. Prints figures; the last line is JSON.

    python benchmarks/bench_routing.py [--events 20000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

from nats.errors import TimeoutError as NatsTimeoutError

from envkernel.config import RunConfig
from envkernel.plugins import Component, Registry
from envkernel.worker import Worker
from envkernel_bus import Bus, EmbeddedServer
from envkernel_bus.subjects import STREAM, event_subject
from envkernel_schemas import (
    Outcome,
    Reward,
    RolloutFinished,
    Task,
    ToolCall,
    Trajectory,
    encode,
    event_id,
)


class FixedReward:
    """A reward model that does no work, so the figure is the kernel's own overhead."""

    def score(self, task: Task, trajectory: Trajectory, ctx: object) -> Reward:
        """Return a constant reward."""
        return Reward(score=1.0, trace=1.0, outcome=1.0)

    score.__name__ = "score"


class AsyncFixedReward(FixedReward):
    """Async variant (no thread hop)."""

    async def score(self, task: Task, trajectory: Trajectory, ctx: object) -> Reward:  # type: ignore[override]
        """Return a constant reward."""
        return Reward(score=1.0, trace=1.0, outcome=1.0)


def payloads(run: str, n: int) -> list[tuple[str, bytes, str]]:
    """N rollout.finished events addressed to the component ``fixed``."""
    task = Task(
        id="t1",
        env_id="shop-v1",
        request="cancel my pending order for the desk lamp",
        calls=[
            ToolCall(name="find_customer", arguments={"email": "ann@example.com"}),
            ToolCall(name="cancel_order", arguments={"order_id": "ord_0003"}),
        ],
        outcome=Outcome(mutates=True),
    )
    traj = Trajectory(task_id="t1", policy="reference", final_answer="done")
    out = []
    for i in range(n):
        ev = RolloutFinished(run=run, id=event_id(run, "src", i), task=task, trajectory=traj)
        out.append((event_subject(run, ev.kind, "fixed"), encode(ev), ev.id))
    return out


async def preload(bus: Bus, msgs: list[tuple[str, bytes, str]]) -> None:
    """Empty the stream (each phase starts alike), then publish the input events."""
    await bus.js.purge_stream(STREAM)
    futs = [await bus.publish(s, d, i) for s, d, i in msgs]
    await asyncio.gather(*futs)


async def raw(url: str, run: str, n: int) -> float:
    """Raw JetStream: pull batch -> publish_async each -> ack after PubAck. Returns events/s."""
    bus = await Bus.connect(url)
    msgs = payloads(run, n)
    await preload(bus, msgs)
    psub = await bus.pull(f"raw_{run}", event_subject(run, "rollout.finished", "fixed"))
    out_subject = event_subject(run, "rollout.scored")
    done = 0
    t0 = time.perf_counter()
    while done < n:
        try:
            batch = await psub.fetch(256, timeout=1)
        except NatsTimeoutError:
            continue
        futs = [
            await bus.publish(out_subject, m.data, m.headers["Nats-Msg-Id"] + "o") for m in batch
        ]  # type: ignore[index]
        await asyncio.gather(*futs)
        for m in batch:
            await m.ack()
        done += len(batch)
    dt = time.perf_counter() - t0
    await bus.close()
    return n / dt


async def kernel(url: str, run: str, n: int, async_role: bool) -> float:
    """Through the kernel's worker: returns events/s (until every output and report is in the
    stream)."""
    bus = await Bus.connect(url)
    msgs = payloads(run, n)
    await preload(bus, msgs)
    reg = Registry()
    reg.components["fixed"] = Component(
        "fixed", "reward_model", AsyncFixedReward if async_role else FixedReward, "bench"
    )
    cfg = RunConfig(run_id=run, components={"reward_model": ["fixed"]})
    before = (await bus.js.stream_info(STREAM)).state.messages
    worker = Worker(bus, reg, ["fixed"], known={run: cfg})
    t0 = time.perf_counter()
    await worker.start()
    # finished when every input has produced its output (outputs land before their report and ack)
    durable = "rollout_finished__fixed"
    while True:
        info = await bus.js.consumer_info(STREAM, durable)
        if info.num_pending == 0 and info.num_ack_pending == 0:
            break
        await asyncio.sleep(0.005)
    dt = time.perf_counter() - t0
    after = (await bus.js.stream_info(STREAM)).state.messages
    await worker.stop()
    await bus.close()
    produced = after - before
    assert produced >= n, f"kernel produced {produced} messages for {n} events"
    return n / dt


async def main(n: int, rounds: int = 1) -> dict[str, Any]:
    """Measure raw and kernel throughput on one embedded server, alternating raw, kernel (async
    role) and kernel (sync role) in each round; the figures are the medians over the rounds, the
    ratios the median of each round's own ratio."""
    raws, asyncs, syncs = [], [], []
    with tempfile.TemporaryDirectory() as tmp, EmbeddedServer(Path(tmp)) as server:
        url = server.url
        await raw(url, "warm", 2000)
        for i in range(rounds):
            raws.append(await raw(url, f"raw{i}", n))
            asyncs.append(await kernel(url, f"kasync{i}", n, True))
            syncs.append(await kernel(url, f"ksync{i}", n, False))
    r, k_async, k_sync = median(raws), median(asyncs), median(syncs)
    result = {
        "events": n,
        "rounds": rounds,
        "raw_events_per_s": round(r),
        "kernel_events_per_s": round(k_async),
        "kernel_sync_role_events_per_s": round(k_sync),
        "ratio": round(median([k / x for k, x in zip(asyncs, raws, strict=True)]), 3),
        "ratio_sync_role": round(median([k / x for k, x in zip(syncs, raws, strict=True)]), 3),
        "ratios_per_round": [round(k / x, 3) for k, x in zip(asyncs, raws, strict=True)],
        "target_ratio": 0.8,
    }
    print(f"raw JetStream (pull->publish_async->ack): {r:,.0f} events/s")
    print(
        f"kernel, async role method:               {k_async:,.0f} events/s  "
        f"({result['ratio']:.2f}x raw)"
    )
    print(
        f"kernel, sync role method (thread hop):   {k_sync:,.0f} events/s  "
        f"({result['ratio_sync_role']:.2f}x raw)"
    )
    return result


if __name__ == "__main__":
    from envkernel import logs

    logs.configure("warning")
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument(
        "--rounds", type=int, default=1, help="alternating rounds of raw, kernel async, kernel sync"
    )
    args = ap.parse_args()
    print(json.dumps(asyncio.run(main(args.events, args.rounds))))
