"""``envkernel tap``: live (discovering the run's embedded server), and replaying a finished run
from its folder. One real run serves every test of the module."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import envkernel_schemas

pytestmark = pytest.mark.timeout(300)

LINE = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} (?P<run>\S+) (?P<kind>[a-z]+\.[a-z]+)\b")
RUN_ID = "tapped"


@dataclass
class Tapped:
    envk: Any
    run_dir: Path
    run_rc: int
    limited: subprocess.CompletedProcess[str]
    unlimited_rc: int | None
    unlimited_out: str


@pytest.fixture(scope="module")
def tapped(envk_factory) -> Tapped:  # type: ignore[no-untyped-def]
    """A run lasting a few seconds, tapped live twice: with ``--limit 5``, and without a limit."""
    envk = envk_factory("tap")
    run_log = (envk.cwd / "run.log").open("w+")
    run = envk.popen(
        "run",
        "--source",
        "sample",
        "--out",
        "out",
        "--run-id",
        RUN_ID,
        "--no-progress",
        "-G",
        "4",
        stdout=run_log,
        stderr=run_log,
    )
    announced = Path(envk.env["XDG_RUNTIME_DIR"]) / "envkernel" / "servers" / f"{RUN_ID}.json"
    limited = unlimited = None
    try:
        deadline = time.monotonic() + 60
        while not announced.exists():
            assert run.poll() is None, (envk.cwd / "run.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the run never announced its server"
            time.sleep(0.02)
        limited = envk.popen("tap", "--limit", "5")
        unlimited_file = (envk.cwd / "unlimited.out").open(
            "w+"
        )  # a file, not a pipe: a full pipe would stall tap
        unlimited = envk.popen("tap", stdout=unlimited_file, stderr=subprocess.DEVNULL)
        lim_out, lim_err = limited.communicate(timeout=120)
        run.wait(timeout=150)
        assert run.returncode == 0, (envk.cwd / "run.log").read_text()[-3000:]
        try:  # the run and its server are gone: a live tap should notice and end
            unlimited.wait(timeout=10)
        except subprocess.TimeoutExpired:
            unlimited.kill()
            unlimited.wait()
            unlimited_rc = None
        else:
            unlimited_rc = unlimited.returncode
        unlimited_file.seek(0)
        unl_out = unlimited_file.read()
        return Tapped(
            envk,
            envk.cwd / "out" / RUN_ID,
            run.returncode,
            subprocess.CompletedProcess(limited.args, limited.returncode, lim_out, lim_err),
            unlimited_rc,
            unl_out,
        )
    finally:
        for p in (run, limited, unlimited):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def test_live_tap_discovers_the_run_and_stops_at_the_limit(tapped: Tapped) -> None:
    assert tapped.limited.returncode == 0, tapped.limited.stderr[-3000:]
    lines = tapped.limited.stdout.splitlines()
    assert len(lines) == 5
    for line in lines:
        m = LINE.match(line)
        assert m, line
        assert m["run"] == RUN_ID and m["kind"] in envkernel_schemas.KINDS


def test_live_tap_without_limit_saw_the_run_finish(tapped: Tapped) -> None:
    kinds = [m["kind"] for m in map(LINE.match, tapped.unlimited_out.splitlines()) if m]
    assert kinds and kinds[-1] == "run.finished"
    assert "kernel.handled" not in kinds  # bookkeeping only with --all


def test_live_tap_ends_when_the_server_is_gone(tapped: Tapped) -> None:
    assert tapped.unlimited_rc is not None, (
        "tap still running 10 s after the run and its server ended"
    )


def test_replay_prints_the_whole_run(tapped: Tapped) -> None:
    proc = tapped.envk("tap", "--run", str(tapped.run_dir), timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    kinds = [m["kind"] for m in map(LINE.match, proc.stdout.splitlines()) if m]
    assert len(kinds) == len(proc.stdout.splitlines())
    summary = json.loads((tapped.run_dir / "summary.json").read_text())
    assert kinds[0] == "run.started" and kinds[-1] == "run.finished"
    assert kinds.count("task.gated") == summary["tasks"] > 0
    assert kinds.count("rollout.scored") == summary["rollouts"] + summary["gate_rollouts"]
    assert kinds.count("group.scored") == summary["groups"]
    assert "kernel.handled" not in kinds


def test_replay_json_lines(tapped: Tapped) -> None:
    proc = tapped.envk("tap", "--run", str(tapped.run_dir), "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert "task.gated.v1" in types and types[-1] == "run.finished.v1"
    assert all(e["run"] == RUN_ID and e["id"] for e in events)
    # each line decodes back into its event type
    for line in proc.stdout.splitlines()[:50]:
        envkernel_schemas.from_json(line)
    finished = events[-1]
    assert (
        finished["summary"]["tasks"]
        == json.loads((tapped.run_dir / "summary.json").read_text())["tasks"]
    )

    everything = tapped.envk("tap", "--run", str(tapped.run_dir), "--json", "--all", timeout=120)
    assert everything.returncode == 0
    all_types = [json.loads(line)["type"] for line in everything.stdout.splitlines()]
    assert "kernel.handled.v1" in all_types and len(all_types) > len(types)


def test_replay_with_a_limit(tapped: Tapped) -> None:
    proc = tapped.envk("tap", "--run", str(tapped.run_dir), "--limit", "3", timeout=60)
    assert proc.returncode == 0
    assert len(proc.stdout.splitlines()) == 3


def test_replay_into_a_closed_pipe_ends(tapped: Tapped) -> None:
    tap = tapped.envk.popen("tap", "--run", str(tapped.run_dir), "--json")
    try:
        first = tap.stdout.readline()
        assert json.loads(first)["type"] == "run.started.v1"
        tap.stdout.close()  # like `| head -1`
        tap.wait(timeout=30)
        err = tap.stderr.read()
    finally:
        if tap.poll() is None:
            tap.kill()
            tap.wait()
    assert err.count("\n") < 20, f"a closed pipe floods stderr: {err[:2000]}"


def test_replay_with_a_subject_filter_ends(tapped: Tapped) -> None:
    tap = tapped.envk.popen("tap", "--run", str(tapped.run_dir), "task.gated", "--json")
    try:
        out, _ = tap.communicate(timeout=8)  # the replay itself takes about a second
    except subprocess.TimeoutExpired:
        tap.send_signal(signal.SIGINT)  # lets the replay server stop
        out, _ = tap.communicate(timeout=30)
        pytest.fail(
            f"tap with a subject filter did not end; it printed {len(out.splitlines())} lines"
        )
    finally:
        if tap.poll() is None:
            tap.kill()
            tap.wait()
    types = {json.loads(line)["type"] for line in out.splitlines()}
    assert types == {"task.gated.v1"}


def test_a_subject_filter_selects_events(tapped: Tapped) -> None:
    # `rollout.>` is not the last subject either; --limit ends it
    proc = tapped.envk(
        "tap", "--run", str(tapped.run_dir), "rollout.scored", "--json", "--limit", "6", timeout=60
    )
    assert proc.returncode == 0
    types = [json.loads(line)["type"] for line in proc.stdout.splitlines()]
    assert types == ["rollout.scored.v1"] * 6


def test_sigterm_to_a_replay_stops_its_server(tapped: Tapped, processes_mentioning) -> None:
    store = str(tapped.run_dir / "nats")
    tap = tapped.envk.popen(
        "tap", "--run", str(tapped.run_dir), "--json", "--all"
    )  # stdout is never read: tap blocks
    leftover: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while not processes_mentioning(store):
            assert tap.poll() is None and time.monotonic() < deadline, (
                "the replay server never started"
            )
            time.sleep(0.05)
        time.sleep(1.0)
        tap.send_signal(signal.SIGTERM)
        tap.wait(timeout=30)
        deadline = time.monotonic() + 5
        while processes_mentioning(store) and time.monotonic() < deadline:
            time.sleep(0.1)
        leftover = processes_mentioning(store)
    finally:
        if tap.poll() is None:
            tap.kill()
            tap.wait()
        for pid in leftover:  # the orphaned server this test's tap started
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert leftover == [], "the replay's nats-server outlived tap"


def test_tap_with_nothing_running_is_a_usage_error(envk) -> None:
    proc = envk("tap", timeout=60)
    assert proc.returncode == 2
    assert "no envkernel run is in progress" in proc.stderr


def test_tap_on_a_folder_that_is_not_a_run(envk) -> None:
    (envk.cwd / "empty").mkdir()
    proc = envk("tap", "--run", "empty", timeout=60)
    assert proc.returncode == 2 and "holds no stored events" in proc.stderr
