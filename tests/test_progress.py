"""The progress display of long commands (``envkernel_bus.progress``): live on a terminal (rich), a
log line now and then otherwise."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import time

import pytest
import structlog
from structlog.testing import capture_logs

from envkernel_bus import progress as progress_module
from envkernel_bus.progress import Status


@pytest.fixture(autouse=True)
def _info_level_logs(monkeypatch: pytest.MonkeyPatch) -> object:
    """Another test of this process may have configured logging at warning (``envkernel.make``
    does) and loggers are cached on first use: these tests read progress's info lines, so they get
    the default configuration and a fresh logger, and the configuration is put back after."""
    saved = structlog.get_config()
    structlog.reset_defaults()
    monkeypatch.setattr(progress_module, "log", structlog.get_logger("envkernel.progress"))
    yield
    structlog.configure(**saved)


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


def test_the_counts_are_named_for_what_they_count() -> None:
    """``verified`` counts environments (one env.verified reaches each sampler), ``rollouts`` the
    training rollouts (the summary's ``rollouts``) and ``gate rollouts`` the gate's, apart."""
    from envkernel_bus.progress import Progress
    from envkernel_kit.testing import toy_shop
    from envkernel_schemas import EnvVerified, Outcome, Reward, RolloutScored, Task, Trajectory

    env, _ = toy_shop()
    task = Task(id="t1", env_id=env.id, request="r", calls=[], outcome=Outcome(mutates=False))

    def scored(i: int, purpose: str) -> RolloutScored:
        return RolloutScored(
            run="r",
            id=f"s{i}",
            task=task,
            trajectory=Trajectory(task_id="t1", policy="reference"),
            reward=Reward(score=1.0),
            purpose=purpose,  # type: ignore[arg-type]
        )

    with capture_logs() as logs, Progress(interval=LONG) as progress:
        for i in range(2):  # the same environment, to each of two samplers
            progress.update(EnvVerified(run="r", id=f"v{i}", env=env))
        for i in range(7):
            progress.update(scored(i, "gate"))
        progress.update(scored(9, "train"))
    assert progress.line() == "verified 1  tasks 0  gate rollouts 7  rollouts 1"
    assert logs[0]["verified"] == 1 and "gate_rollouts" in logs[0]


def _in_a_terminal(code: str, env: dict[str, str]) -> str:
    main, side = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=side,
        stdout=side,
        stderr=side,
        close_fds=True,
        env={**os.environ, **env},
    )
    os.close(side)
    out = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    assert proc.wait(timeout=60) == 0, out.decode(errors="replace")
    return out.decode(errors="replace")


def test_log_lines_are_not_written_over_the_live_line() -> None:
    """While the live line is shown, info lines are held back unless a level was chosen; with
    one, each is printed through the display's console: the line is cleared first, the log line
    starts a line of its own, and the bar is drawn again below it."""
    code = (
        "import os, time, structlog\nfrom envkernel_bus import logs\nfrom "
        "envkernel_bus.progress import Status\nlogs.configure(os.environ.get('LEVEL') or None)\n"
        "log = structlog.get_logger('t')\n"
        "with Status() as s:\n    s.work = lambda: (1, 2)\n    s.show('working'); time.sleep(0.2)\n"
        "    log.info('an info line'); log.warning('a warning line')\n    s.show('still "
        "working'); time.sleep(0.2)\nlog.info('after the bar')\n"
    )
    quiet = _in_a_terminal(code, {"LEVEL": ""})
    assert "a warning line" in quiet and "an info line" not in quiet and "after the bar" in quiet
    chosen = _in_a_terminal(code, {"LEVEL": "info"})
    for line in ("an info line", "a warning line"):
        at = chosen.index(line)
        before = chosen[:at]
        # back to the start of the line (a newline, or a carriage return) and the line erased: the
        # log line does not continue the bar's text
        start = max(before.rfind("\n"), before.rfind("\r"))
        rest = before[start + 1 :]
        assert start >= 0 and rest.startswith("\x1b[2K"), repr(before[-200:])
        assert "━" not in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", rest)
    assert "still working" in chosen
