"""``envkernel run --workers N`` on a shared NATS server: the local workers (and the run's own
process) serve only that run, never another run's work, and no other process takes theirs."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from nats.js.api import DeliverPolicy

from envkernel_bus import Bus
from envkernel_schemas import decode

pytestmark = pytest.mark.timeout(400)


async def _kinds(url: str, run: str) -> list[str]:
    """The kinds of every event of ``run`` in the stream."""
    bus = await Bus.connect(url, setup=False)
    try:
        sub = await bus.js.subscribe(
            f"envk.ev.{run}.>", ordered_consumer=True, deliver_policy=DeliverPolicy.ALL
        )
        kinds = []
        try:
            while True:
                msg = await sub.next_msg(timeout=3)
                kinds.append(decode(msg.data).kind)
        except Exception:
            pass
        await sub.unsubscribe()
        return kinds
    finally:
        await bus.close()


def test_local_workers_leave_another_runs_work_alone(envk: Any, nats_server: str) -> None:
    """Run ``waiting`` leaves its scoring to a remote traceoutcome worker that never comes, so its
    rollouts wait on the shared consumer. Run ``mine`` with ``--workers 1`` serves traceoutcome
    itself on the same server: neither its process nor its local worker scores ``waiting``'s
    rollouts."""
    waiting = envk.run(
        "--nats-url",
        nats_server,
        "--remote",
        "reward_model:traceoutcome",
        "--timeout",
        "20",
        "--set",
        "chains.tasks_per_env=3",
        run_id="waiting",
        out="w",
    )
    assert waiting.proc.returncode == 3, waiting.proc.stderr[
        -3000:
    ]  # it timed out, waiting for its reward model
    before = asyncio.run(_kinds(nats_server, "waiting"))
    assert "rollout.finished" in before and "rollout.scored" not in before

    mine = envk.run(
        "--nats-url",
        nats_server,
        "--workers",
        "1",
        "--set",
        "chains.tasks_per_env=5",
        run_id="mine",
        out="m",
        env={"ENVKERNEL_LOG_LEVEL": "debug"},
    )
    assert mine.proc.returncode == 0, mine.proc.stderr[-3000:]
    assert (
        mine.summary["tasks"] > 0
        and mine.summary["failures"] == 0
        and mine.config["own_work"] is True
    )
    after = asyncio.run(_kinds(nats_server, "waiting"))
    assert "rollout.scored" not in after and after.count("rollout.finished") == before.count(
        "rollout.finished"
    )

    log = (mine.dir / "workers" / "worker-0.log").read_text()
    handled = [
        json.loads(x)
        for x in log.splitlines()
        if x.startswith("{") and json.loads(x).get("event") == "handled"
    ]
    assert handled, log[-3000:]  # the local worker did some of the run's work ...
    assert {h["run"] for h in handled} == {"mine"}  # ... and only the run's


def test_a_worker_that_hangs_before_reading_a_large_config_does_not_block_the_start(
    tmp_path: Any,
) -> None:
    """A config larger than a pipe holds (64 KiB), given to a worker that hangs before it reads its
    stdin: the start returns after its readiness timeout (the run goes on without it), and stopping
    the worker ends the thread that was writing to it."""
    import sys
    import threading
    import time

    from envkernel_runtime.workers import start_local_workers, stop_local_workers

    big = json.dumps(
        {"nats_url": "nats://127.0.0.1:1", "config": {"pad": "x" * (1 << 20)}}
    ).encode()
    hang = [sys.executable, "-c", "import time; time.sleep(120)"]  # a real process that never reads
    t = time.monotonic()
    procs = start_local_workers(1, big, tmp_path, ready_timeout=2.0, cmd=hang)
    took = time.monotonic() - t
    try:
        assert took < 10, f"the start blocked for {took:.1f} s on the worker's stdin"
        assert procs[0].poll() is None
        assert any(th.name == "envk-worker-0-stdin" for th in threading.enumerate()), (
            "the config is still being written"
        )
    finally:
        stop_local_workers(procs, timeout=5.0)
    deadline = time.monotonic() + 10
    while (
        any(th.name == "envk-worker-0-stdin" for th in threading.enumerate())
        and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    assert not any(th.name == "envk-worker-0-stdin" for th in threading.enumerate()), (
        "the writer outlived its worker"
    )
