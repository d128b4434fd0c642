"""Local worker processes for ``envkernel run --workers N``: the second core of a one-host run.

A run's own process holds one event loop: the samplers, the gate's rollouts, scoring, the
coordinator and the exporters all share it, so on its own a run uses about one core (plus its
executors and nats-server). ``--workers N`` starts N ``envkernel worker`` processes on the run's
server that serve **only this run**: the run is marked ``own_work``, its process and its local
workers bind consumers of the run's own (``<kind>__<component>__<run>``, filtered on the run's
subjects) and split its sampling (one environment at a time), rollouts and scoring between them,
while every other process on the server (another run's, a shared ``envkernel worker``) leaves this
run's work alone, and these workers never see another run's. The run's own process keeps the
coordinator, the trainers and exporters (broadcast components are never shared), the sandbox
runner (a local worker leases its sandboxes from the run's runner) and the run folder. Components
the run names in ``--remote`` stay on the shared consumers, for the workers elsewhere.

A local worker gets the run's NATS URL and its whole config, secrets given by ``--set`` or the
config file included, as one JSON document on its stdin (``envkernel worker --run-from-stdin``):
nothing of either is on its argv (visible in ``ps``), in its environment or on disk. The workers
stop when the run ends; their logs go to ``<run>/workers/worker-<i>.log``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import structlog

__all__ = ["check_remote", "start_local_workers", "stop_local_workers"]

log = structlog.get_logger("envkernel.run")


def start_local_workers(
    n: int, run: bytes, out: Path, ready_timeout: float = 60.0, cmd: list[str] | None = None
) -> list[subprocess.Popen[bytes]]:
    """Start ``n`` local workers of a run (none when ``n`` < 1), each given ``run`` (JSON:
    ``nats_url`` and the full ``config``) on its stdin, and wait up to ``ready_timeout`` s until
    they serve. Blocking: call it from a thread in async code. ``cmd`` is the worker's command line
    (default: ``envkernel worker --run-from-stdin`` of this Python)."""
    if n < 1:
        return []
    folder = out / "workers"
    folder.mkdir(parents=True, exist_ok=True)
    cmd = cmd or [sys.executable, "-m", "envkernel", "worker", "--run-from-stdin"]
    procs: list[subprocess.Popen[bytes]] = []
    starts: list[
        int
        # each log's size before its worker started (a resumed run's log already says "worker
        # serving")
    ] = []
    try:
        for i in range(n):
            path = folder / f"worker-{i}.log"
            starts.append(path.stat().st_size if path.exists() else 0)
            with open(path, "ab") as logf:  # the child keeps its own descriptor
                p = subprocess.Popen(
                    cmd,
                    stdin=subprocess.PIPE,
                    stdout=logf,
                    stderr=subprocess.STDOUT,
                    env=dict(os.environ),
                    start_new_session=True,
                )
            procs.append(p)
            # written by a thread of its own: a pipe holds 64 KiB, so a large config given to a
            # worker that
            # hangs before reading it would otherwise block the run here, past the readiness timeout
            threading.Thread(
                target=_feed, args=(p, run), name=f"envk-worker-{i}-stdin", daemon=True
            ).start()
        _wait_ready(procs, folder, ready_timeout, starts)
    except BaseException:  # a failed start, or Ctrl-C while waiting: stop the ones already started
        stop_local_workers(procs, timeout=10.0)
        raise
    log.info("local workers started", workers=n, pids=[p.pid for p in procs], logs=str(folder))
    return procs


def _feed(p: subprocess.Popen[bytes], data: bytes) -> None:
    """Write a worker's config to its stdin and close it (a worker that died or was stopped
    meanwhile: nothing to do)."""
    try:
        p.stdin.write(data)  # type: ignore[union-attr]
    except (
        OSError,
        ValueError,
    ):  # BrokenPipeError: it died (_wait_ready says so, with its log); ValueError: closed
        pass
    finally:
        with contextlib.suppress(OSError, ValueError):
            p.stdin.close()  # type: ignore[union-attr]


def _wait_ready(
    procs: list[subprocess.Popen[bytes]], folder: Path, timeout: float, starts: list[int]
) -> None:
    """Wait until each worker serves (its log says ``worker serving`` after where it started), so
    the run's first work is shared too."""
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
                    log.warning(
                        "a local worker exited at start; the run goes on without it (see its log)",
                        pid=p.pid,
                        log=str(folder / f"worker-{i}.log"),
                        tail=text[-500:].decode(errors="replace"),
                    )
        time.sleep(0.1)
    if waiting:
        log.warning(
            "local workers not serving yet; the run starts without waiting for them",
            pids=[p.pid for p in waiting.values()],
            waited=timeout,
        )


def stop_local_workers(procs: list[subprocess.Popen[bytes]], timeout: float = 30.0) -> None:
    """Ask each worker to stop (SIGTERM: it finishes what it holds), then kill any left after
    ``timeout`` s."""
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
            log.warning(
                "a local worker ended with an error; see its log", pid=p.pid, exit_code=p.returncode
            )


async def check_remote(
    consumer_info: Callable[[str], Awaitable[Any]], remote: list[tuple[str, str, str]], server: str
) -> None:
    """Warn about each remote component (role, name, its durable consumer) that no worker has ever
    served on ``server`` (its URL without credentials): the run would wait for it."""
    for role, name, durable in remote:
        try:
            await consumer_info(durable)
        except Exception as exc:
            log.warning(
                "no worker has served this remote component on this server yet; the run "
                "waits for one (start `envkernel worker --plugins PLUGIN --nats-url URL`, "
                "and bound the wait with --timeout)",
                component=name,
                role=role,
                nats=server,
                detail=f"{type(exc).__name__}: {exc}",
            )
