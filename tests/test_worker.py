"""``envkernel worker``: a separate process serving some plugins' stages for the runs on a shared
NATS server (the ``nats_server`` fixture), next to an ``envkernel run --nats-url``."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest
from nats.js.api import DeliverPolicy

from envkernel_bus import Bus
from envkernel_schemas import decode

pytestmark = pytest.mark.timeout(300)


async def _read_run(url: str, run: str) -> list[Any]:
    """Every event of ``run`` in the stream, decoded, in stream order."""
    bus = await Bus.connect(url, setup=False)
    events: list[Any] = []
    try:
        subject = f"envk.ev.{run}.>"
        info = await bus.js.stream_info("ENVK", subjects_filter=subject)
        total = sum((info.state.subjects or {}).values()) if info.state.subjects else None
        done = asyncio.Event()

        async def on_msg(msg: Any) -> None:
            events.append(decode(msg.data))
            if msg.metadata.num_pending == 0:
                done.set()

        sub = await bus.js.subscribe(
            subject, cb=on_msg, ordered_consumer=True, deliver_policy=DeliverPolicy.ALL
        )
        await asyncio.wait_for(done.wait(), 60)
        await sub.unsubscribe()
        if total is not None:
            assert len(events) == total
    finally:
        await bus.close()
    return events


def test_worker_serves_the_reward_model_for_runs_on_a_shared_server(
    envk, nats_server: str, worker_process
) -> None:
    with worker_process("traceoutcome") as log:
        first = envk.run("--nats-url", nats_server, "-G", "4", run_id="w1")
        second = envk.run(
            "--nats-url", nats_server, "--seed", "5", "--set", "chains.tasks_per_env=5", run_id="w2"
        )
    for run in (first, second):
        assert run.proc.returncode == 0, run.proc.stderr[-3000:]
        assert (
            run.summary["tasks"] > 0
            and run.summary["mean_reward"] == 1.0
            and run.summary["failures"] == 0
        )
        assert not (run.dir / "nats").exists()  # no embedded server: the shared one was used
    assert first.summary["rollouts"] == 4 * first.summary["tasks"]

    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assert any(e["event"] == "worker stopped" for e in lines)
    handled = [e for e in lines if e["event"] == "handled" and e.get("component") == "traceoutcome"]
    assert handled, "the worker handled no event (the run's own process took them all)"
    assert {e["kind"] for e in handled} == {"rollout.finished"}
    stopped = next(
        e for e in lines if e["event"] == "worker stopped"
    )  # the one-line summary counts what it handled
    assert stopped["handled"] == {"traceoutcome": len(handled)}

    # in the stream: every rollout.finished of each run was scored exactly once (by either process)
    for run_id in ("w1", "w2"):
        events = asyncio.run(_read_run(nats_server, run_id))
        finished = {e.id for e in events if e.kind == "rollout.finished"}
        scored_parents = [e.parent for e in events if e.kind == "rollout.scored"]
        assert finished and sorted(scored_parents) == sorted(finished)
        reports = [
            eid
            for e in events
            if e.kind == "kernel.handled" and e.handler == "traceoutcome"
            for eid in e.events
        ]
        assert set(reports) == finished
        assert events[-1].kind == "run.finished"


def test_a_worker_never_takes_a_trainer_the_run_serves_itself(
    envk, nats_server: str, worker_process
) -> None:
    """Trainers are stateful: a run's own trainers get consumers of their own, and a worker serves
    a trainer only for runs that name it in --remote, so a run's groups are never split."""
    with worker_process("export") as log:
        run = envk.run("--nats-url", nats_server, "-G", "2", run_id="own")
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    s = run.summary
    assert len(run.jsonl("sft.jsonl")) + len(run.jsonl("rl.jsonl")) > 0
    assert len(run.jsonl("rl.jsonl")) == s["tasks"]  # every group reached the run's own rl exporter
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]
    assert not [e for e in lines if e["event"] == "handled" and e.get("component") in ("sft", "rl")]
    # the run's own consumers are gone with it
    infos = asyncio.run(_consumer_names(nats_server))
    assert not [n for n in infos if n.endswith("__own")], infos


async def _consumer_names(url: str) -> list[str]:
    bus = await Bus.connect(url, setup=False)
    try:
        return [c.name for c in await bus.js.consumers_info("ENVK")]
    finally:
        await bus.close()


def test_worker_cli_errors(envk) -> None:
    unknown = envk("worker", "--plugins", "nosuch", "--nats-url", "nats://127.0.0.1:1", timeout=60)
    assert unknown.returncode == 2 and "unknown plugin 'nosuch'" in unknown.stderr
    missing = envk("worker", "--plugins", "traceoutcome", timeout=60)
    assert missing.returncode == 2 and "--nats-url" in missing.stderr


def test_run_against_an_unreachable_server_exits_3(envk) -> None:
    # (the worker shares this path: cli.Group.invoke turns BusError into exit code 3)
    proc = envk(
        "run",
        "--nats-url",
        "nats://127.0.0.1:1",
        "--no-progress",
        "--out",
        "out",
        "--run-id",
        "nobus",
        timeout=60,
    )
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert (
        "cannot connect" in proc.stderr
        and "127.0.0.1:1" in proc.stderr
        and "Traceback" not in proc.stderr
    )


def test_a_run_id_already_used_on_a_shared_server_is_refused(envk, nats_server: str) -> None:
    first = envk.run(
        "--nats-url", nats_server, "--set", "chains.tasks_per_env=2", run_id="taken", out="a"
    )
    assert first.proc.returncode == 0, first.proc.stderr[-3000:]
    second = envk.run(
        "--nats-url", nats_server, "--set", "chains.tasks_per_env=2", run_id="taken", out="b"
    )
    assert second.proc.returncode == 2, second.proc.stderr[-3000:]
    assert "'taken'" in second.proc.stderr
    # the first run's record is untouched
    assert first.summary["tasks"] == len(first.jsonl("tasks.jsonl")) > 0


def test_run_workers_share_the_run_and_stop_with_it(envk) -> None:
    """``envkernel run --workers 1``: a local worker serves the run's plugins beside its own
    process, takes part of the work (scoring and rollouts are split by the shared consumers) and is
    gone when the run ends."""
    run = envk.run("--workers", "1", "--set", "chains.tasks_per_env=5", run_id="lw")
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    assert (
        run.summary["tasks"] > 0
        and run.summary["failures"] == 0
        and run.summary["infra_failures"] == 0
    )
    started = [
        json.loads(line)
        for line in run.proc.stderr.splitlines()
        if '"local workers started"' in line
    ]
    assert started and len(started[0]["pids"]) == 1
    log = (run.dir / "workers" / "worker-0.log").read_text()
    stopped = [json.loads(line) for line in log.splitlines() if '"worker stopped"' in line]
    assert stopped and sum(stopped[0]["handled"].values()) > 0, log[
        -2000:
    ]  # it did some of the run's work
    with pytest.raises(ProcessLookupError):
        os.kill(started[0]["pids"][0], 0)
