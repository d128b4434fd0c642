"""The progress display of long commands (``envkernel_bus.progress``): live on a terminal (rich), a
log line now and then otherwise."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import time

from structlog.testing import capture_logs

from envkernel_bus.progress import Status

# Longer than time.monotonic() has run (the time since boot on Linux): the first line must still be
# logged on a machine booted a minute ago, which a last-shown time of 0.0 got wrong.
LONG = time.monotonic() + 3600


def test_off_a_terminal_it_logs_at_most_once_an_interval() -> None:
    with capture_logs() as logs, Status(interval=LONG, event="worker progress") as status:
        for n in range(50):
            status.show(f"handled x {n}", handled={"x": n})
    assert [(e["event"], e["handled"]) for e in logs] == [("worker progress", {"x": 0})]


def test_disabled_it_shows_nothing() -> None:
    with capture_logs() as logs, Status(enabled=False) as status:
        status.show("nothing", n=1)
    assert logs == []


def test_on_a_terminal_it_draws_a_live_line() -> None:
    code = (
        "import time\nfrom envkernel_bus.progress import Status\n"
        "with Status() as s:\n    s.work = lambda: (7, 9)\n    for n in range(3):\n        "
        "s.show(f'handled probe {n}'); time.sleep(0.15)\n"
    )
    main, side = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=side, stdout=side, stderr=side, close_fds=True
    )
    os.close(side)
    out = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    assert proc.wait(timeout=60) == 0, out.decode(errors="replace")
    raw = out.decode(errors="replace")
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw)
    assert (
        "handled probe 2" in text
        and "7/9" in text
        and "\u2501" in text
        and "\r" in raw
        and "\x1b[2K" in raw
    )  # redrawn in place with terminal escapes
    assert "progress" not in text  # no log line on a terminal


def test_a_runs_progress_logs_its_counts_and_steps_off_a_terminal() -> None:
    from envkernel_bus.progress import Progress
    from envkernel_schemas import RunStarted

    with capture_logs() as logs, Progress(interval=LONG) as progress:
        progress.work = lambda: (3, 10)
        progress.update(RunStarted(run="r", id="a" * 24, config={}))
    assert (
        logs[0]["event"] == "progress"
        and logs[0]["steps_done"] == 3
        and logs[0]["steps_known"] == 10
        and logs[0]["tasks"] == 0
    )
