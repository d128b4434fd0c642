"""Failures are data, not crashes: broken plugins, raising role methods, bytes that are not events,
interruptions and timeouts. The exit codes are the documented ones (0, 1, 2, 3, 4)."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from pathlib import Path

import msgspec
import pytest

from envkernel.run import execute, prepare
from envkernel_bus import Bus
from envkernel_bus.subjects import STREAM, durable_name

pytestmark = pytest.mark.timeout(300)

ENVKERNEL = str(Path(sys.executable).with_name("envkernel"))
GARBAGE = b"\xc1 these bytes are not an envkernel event"


def _pp(site: Path) -> dict[str, str]:
    return {"PYTHONPATH": str(site)}


def test_plugin_that_fails_to_import_is_listed_with_its_error(envk, thirdparty_site: Path) -> None:
    proc = envk("plugins", "--json", env=_pp(thirdparty_site))
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    broken = rows["broken"]
    assert "cannot be imported (on purpose)" in broken["error"]
    assert (
        broken["roles"] == []
        and broken["distribution"] == "envkernel-broken"
        and broken["default"] is False
    )
    assert "error" not in rows["mysampler"] and "error" not in rows["chains"]
    table = envk("plugins", env=_pp(thirdparty_site))
    assert table.returncode == 0 and "broken" in table.stdout


def test_run_with_a_plugin_that_fails_to_import_warns_and_goes_on(
    envk, thirdparty_site: Path
) -> None:
    run = envk.run(
        "--plugins",
        "+broken",
        "--set",
        "chains.tasks_per_env=3",
        run_id="broken",
        env=_pp(thirdparty_site),
    )
    # the run goes on, but a plugin the user selected is missing from it: exit 1, not 0 (issue 12)
    assert run.proc.returncode == 1 and run.summary["exit_code"] == 1, run.proc.stderr[-3000:]
    assert "warning: plugin 'broken' is broken and was skipped" in run.proc.stderr
    s = run.summary
    assert "cannot be imported" in s["broken_plugins"]["broken"]
    assert s["tasks"] > 0 and s["mean_reward"] == 1.0 and s["failures"] == 0


def test_a_raising_sampler_is_a_counted_failure_and_the_run_goes_on(
    envk, thirdparty_site: Path
) -> None:
    run = envk.run(
        "--plugins",
        "+badsampler",
        "--set",
        "chains.tasks_per_env=3",
        run_id="badsampler",
        env=_pp(thirdparty_site),
    )
    assert run.proc.returncode == 1, run.proc.stderr[-3000:]
    s = run.summary
    assert s["exit_code"] == 1
    assert s["failures"] == 1 and s["failures_by_plugin"] == {"badsampler": 1}
    (fail,) = run.jsonl("failures.jsonl")
    assert (
        fail["plugin"] == "badsampler"
        and fail["role"] == "sampler"
        and fail["event_kind"] == "env.verified"
    )
    assert fail["error_type"] == "RuntimeError" and "exploded on shop-v1" in fail["message"]
    assert "BadSampler" in fail["traceback"] or "sample" in fail["traceback"]
    # the other sampler's work is all there
    assert s["tasks"] > 0 and s["mean_reward"] == 1.0
    assert all(t["sampler"] == "chains" for t in run.jsonl("tasks.jsonl"))
    for name in (
        "tasks.jsonl",
        "rollouts.jsonl",
        "sft.jsonl",
        "rl.jsonl",
        "config.json",
        "envs/shop-v1/env.json",
    ):
        assert (run.dir / name).is_file(), name


def test_a_raising_policy_closes_its_groups_and_the_run_finishes(
    envk, thirdparty_site: Path
) -> None:
    run = envk.run(
        "--plugins",
        "+crashy",
        "--policy",
        "crashy",
        "--set",
        "chains.tasks_per_env=3",
        run_id="crashy",
        env=_pp(thirdparty_site),
    )
    assert run.proc.returncode == 1, run.proc.stderr[-3000:]
    s = run.summary
    assert s["tasks"] > 0  # the gate (reference / nothing) still passes them
    assert s["rollouts"] == 0 and s["mean_reward"] is None
    assert s["groups"] == s["tasks"]  # each group closed with its one member failed
    assert s["failures"] == s["tasks"] == s["failures_by_plugin"]["crashy"]
    fails = run.jsonl("failures.jsonl")
    assert {(f["plugin"], f["role"], f["event_kind"], f["error_type"]) for f in fails} == {
        ("crashy", "policy", "rollout.requested", "ValueError")
    }
    assert run.jsonl("sft.jsonl") == []


def test_a_raising_gate_policy_rejects_the_tasks_with_a_reason(envk, thirdparty_site: Path) -> None:
    cfg = envk.cwd / "gate.toml"
    cfg.write_text('plugins = "+crashy"\ngate_reference = "crashy"\n[chains]\ntasks_per_env = 3\n')
    run = envk.run("--config", str(cfg), run_id="gate", env=_pp(thirdparty_site))
    assert run.proc.returncode == 1, run.proc.stderr[-3000:]
    s = run.summary
    assert s["tasks"] == 0 and s["tasks_proposed"] > 0
    assert s["rejected"] == {"task:gate_failed": s["tasks_proposed"]}
    assert s["failures"] == s["tasks_proposed"]
    rejected = run.jsonl("rejected.jsonl")
    assert len(rejected) == s["tasks_proposed"] and all(
        r["reason"] == "gate_failed" and "crashy" in r["detail"] for r in rejected
    )


def test_sigterm_stops_the_run_with_exit_3_and_leaves_nothing_running(
    envk, processes_mentioning
) -> None:
    log = (envk.cwd / "term.log").open("w+")
    proc = envk.popen(
        "run",
        "--source",
        "sample",
        "--out",
        "out",
        "--run-id",
        "term",
        "--no-progress",
        "-G",
        "16",
        stdout=log,
        stderr=log,
    )
    run_dir = envk.cwd / "out" / "term"
    try:
        deadline = time.monotonic() + 60
        rl = run_dir / "rl.jsonl"
        while not (
            rl.exists() and rl.read_text().strip()
        ):  # some groups are scored, more are coming
            assert proc.poll() is None, (envk.cwd / "term.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the run scored no group in 60 s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        err = (envk.cwd / "term.log").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 3, err[-3000:]
    s = json.loads((run_dir / "summary.json").read_text())
    assert s["aborted"] == "interrupted" and s["exit_code"] == 3
    assert (run_dir / "config.json").exists()
    # the trainers finished what they had: rl.parquet holds every task rl.jsonl got
    import pyarrow.parquet as pq

    rl_rows = len((run_dir / "rl.jsonl").read_text().splitlines())
    assert rl_rows >= 1
    assert pq.read_table(run_dir / "rl.parquet").num_rows == rl_rows
    assert "trainer finished what it had" in err
    time.sleep(0.5)
    assert processes_mentioning(str(run_dir / "nats")) == [], (
        "the embedded nats-server outlived its run"
    )
    assert processes_mentioning(f"--parent-pid {proc.pid} ") == [], "sandboxes outlived their run"


def test_timeout_exits_3_and_writes_the_summary(envk) -> None:
    run = envk.run("--timeout", "0.5", "-G", "32", run_id="slow")
    assert run.proc.returncode == 3, run.proc.stderr[-3000:]
    assert run.summary["aborted"] == "timed out after 0.5 s"
    assert run.summary["exit_code"] == 3


def test_undecodable_bytes_are_logged_and_dropped(envk, nats_server: str) -> None:
    """Garbage on a work subject (before and during the run): logged, dropped, the run finishes."""
    run_id = "garbage"
    subject = f"envk.ev.{run_id}.rollout.finished.traceoutcome"

    async def scenario() -> tuple[int, str, str]:
        bus = await Bus.connect(nats_server)
        try:
            await bus.publish_wait(subject, GARBAGE, "garbage-before")
            sent_during = asyncio.Event()

            async def on_gated(msg) -> None:  # type: ignore[no-untyped-def]
                if not sent_during.is_set():
                    sent_during.set()
                    await bus.publish_wait(subject, GARBAGE + b"!", "garbage-during")

            sub = await bus.nc.subscribe(f"envk.ev.{run_id}.task.gated", cb=on_gated)
            proc = await asyncio.create_subprocess_exec(
                ENVKERNEL,
                "run",
                "--source",
                "sample",
                "--nats-url",
                nats_server,
                "--out",
                "out",
                "--run-id",
                run_id,
                "--no-progress",
                "--set",
                "chains.tasks_per_env=4",
                cwd=envk.cwd,
                env=envk.env,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(proc.communicate(), 150)
            await sub.unsubscribe()
            assert sent_during.is_set(), (
                "no task.gated was seen: nothing was published during the run"
            )
            info = await bus.js.consumer_info(
                STREAM, durable_name("rollout.finished", "traceoutcome")
            )
            assert (
                info.num_ack_pending == 0 and info.num_pending == 0
            )  # acked (dropped), not left for redelivery
            assert info.num_redelivered == 0
            return proc.returncode or 0, out.decode(), err.decode()
        finally:
            await bus.close()

    code, _out, err = asyncio.run(scenario())
    assert code == 0, err[-3000:]
    drops = [json.loads(line) for line in err.splitlines() if "not an envkernel event" in line]
    assert drops, "the dropped bytes were not logged"
    assert all(d["subject"] == subject and d["level"] == "error" for d in drops)
    s = json.loads((envk.cwd / "out" / run_id / "summary.json").read_text())
    assert (
        s["undecodable_events"] == 2
    )  # the coordinator saw both, and counted them apart from failures
    assert s["failures"] == 0 and s["tasks"] > 0 and s["mean_reward"] == 1.0


@pytest.mark.timeout(120)
async def test_undecodable_bytes_in_process(bus: Bus, nats_server: str, tmp_path: Path) -> None:
    """The same through the Python API (``prepare`` / ``execute``) on a shared server."""
    prep = prepare(
        None, {"run_id": "inproc", "seed": 2, "sources": ["sample"]}, str(tmp_path / "out")
    )
    prep.config = msgspec.structs.replace(prep.config, settings={"chains": {"tasks_per_env": 3}})
    subject = "envk.ev.inproc.rollout.finished.traceoutcome"
    await bus.publish_wait(subject, GARBAGE, "inproc-garbage")
    result = await execute(prep, nats_url=nats_server, show_progress=False, timeout=100)
    assert result.exit_code == 0
    assert result.summary["undecodable_events"] == 1 and result.summary["failures"] == 0
    assert 0 < result.summary["tasks"] <= 3 and result.summary["mean_reward"] == 1.0
    info = await bus.js.consumer_info(STREAM, durable_name("rollout.finished", "traceoutcome"))
    assert info.num_ack_pending == 0 and info.num_pending == 0
    assert (result.out_dir / "tasks.jsonl").exists()
