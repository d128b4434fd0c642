"""Local worker processes for ``envkernel run --workers N``: the second core of a one-host run.

A run's own process holds one event loop: the samplers, the gate's rollouts, scoring, the
coordinator and the exporters all share it, so on its own a run uses about one core (plus its
executors and nats-server). ``--workers N`` starts N ``envkernel worker`` processes on the run's
server, serving the run's plugins. They bind the same durable consumers as the run's process, so
JetStream splits sampling (one environment at a time), rollouts and scoring between them. The
run's own process keeps the coordinator, the trainers and exporters (broadcast components are
never shared) and the run folder. The workers stop when the run ends; their logs go to
``<run>/workers/worker-<i>.log``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import structlog

__all__ = ["start_local_workers", "stop_local_workers"]

log = structlog.get_logger("envkernel.run")


def start_local_workers(n: int, plugins: list[str], nats_url: str, out: Path, ready_timeout: float = 60.0) -> list[subprocess.Popen[bytes]]:
    """Start ``n`` ``envkernel worker`` processes serving ``plugins`` on ``nats_url`` (none when ``n`` < 1), and wait
    up to ``ready_timeout`` s until they serve. Blocking: call it from a thread in async code."""
    if n < 1:
        return []
    folder = out / "workers"
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "envkernel", "worker", "--plugins", ",".join(plugins), "--nats-url", nats_url]
    procs: list[subprocess.Popen[bytes]] = []
    starts: list[int] = []  # each log's size before its worker started (a resumed run's log already says "worker serving")
    try:
        for i in range(n):
            path = folder / f"worker-{i}.log"
            starts.append(path.stat().st_size if path.exists() else 0)
            with open(path, "ab") as logf:  # the child keeps its own descriptor
                procs.append(subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=dict(os.environ), start_new_session=True))
        _wait_ready(procs, folder, ready_timeout, starts)
    except BaseException:  # a failed start, or Ctrl-C while waiting: stop the ones already started
        stop_local_workers(procs, timeout=10.0)
        raise
    log.info("local workers started", workers=n, pids=[p.pid for p in procs], logs=str(folder))
    return procs


def _wait_ready(procs: list[subprocess.Popen[bytes]], folder: Path, timeout: float, starts: list[int]) -> None:
    """Wait until each worker serves (its log says ``worker serving`` after where it started), so the run's first work is shared too."""
    deadline = time.monotonic() + timeout
    waiting = dict(enumerate(procs))
    while waiting and time.monotonic() < deadline:
        for i, p in list(waiting.items()):
            with open(folder / f"worker-{i}.log", "rb") as f:
                f.seek(starts[i])
                text = f.read()
            if b"worker serving" in text or p.poll() is not None:
                waiting.pop(i)
                if p.poll() is not None:
                    log.warning("a local worker exited at start; the run goes on without it (see its log)", pid=p.pid, log=str(folder / f"worker-{i}.log"),
                                tail=text[-500:].decode(errors="replace"))
        time.sleep(0.1)
    if waiting:
        log.warning("local workers not serving yet; the run starts without waiting for them", pids=[p.pid for p in waiting.values()], waited=timeout)


def stop_local_workers(procs: list[subprocess.Popen[bytes]], timeout: float = 30.0) -> None:
    """Ask each worker to stop (SIGTERM: it finishes what it holds), then kill any left after ``timeout`` s."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning("a local worker did not stop; killing it", pid=p.pid)
            p.kill()
            p.wait()
        if p.returncode not in (0, -signal.SIGTERM, 130, 143):
            log.warning("a local worker ended with an error; see its log", pid=p.pid, exit_code=p.returncode)
