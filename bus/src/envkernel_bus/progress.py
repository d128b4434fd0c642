"""Progress of long commands: a live line on a terminal (rich), a log line now and then otherwise.

With ``work`` set, the live line starts with a bar of the steps done out of the steps known so far
(a run learns its work as it goes: each event it sees adds the handled reports it expects).

:class:`Status` is the display; :class:`Progress` counts a run's events for ``envkernel run``, and
``envkernel worker`` shows what it has handled through :class:`Status` too. Like the tap, it only
watches events, so it lives with the bus and any command (or plugin) can use it.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import structlog

from envkernel_schemas import Event

log = structlog.get_logger("envkernel.progress")

SHOWN = (
    "env.synthesized",
    "env.verified",
    "task.proposed",
    "task.gated",
    "task.rejected",
    "rollout.scored.gate",
    "rollout.scored",
    "plugin.failed",
)
"""What the line counts, in its order. ``env.verified`` counts environments (one event reaches each
sampler: the count is of distinct environment ids); ``rollout.scored`` counts the training
rollouts (what the summary's ``rollouts`` counts) and ``rollout.scored.gate`` the gate's own
(``gate_rollouts``)."""
LABELS = {
    "env.synthesized": "envs",
    "env.verified": "verified",
    "task.proposed": "proposed",
    "task.gated": "tasks",
    "task.rejected": "rejected",
    "rollout.scored.gate": "gate_rollouts",
    "rollout.scored": "rollouts",
    "plugin.failed": "failures",
}
"""The name each count has in the line and in the log's fields (the summary's names)."""


class Status:
    """One status line: redrawn live on a terminal (rich), else logged at most every ``interval``
    s."""

    def __init__(
        self, enabled: bool = True, interval: float = 2.0, event: str = "progress"
    ) -> None:
        self.enabled = enabled
        self.interval = interval
        self.event = event
        self._tty = enabled and sys.stderr.isatty()
        self._live: Any = None
        self._quiet: Any = None
        self._last = (
            -math.inf
        )  # never shown: the first show() draws or logs, whatever the clock reads
        self._t0 = time.monotonic()
        self._text = ""
        self.work: Callable[[], tuple[int, int]] | None = None
        """Optional: (steps done, steps known so far); on a terminal they are drawn as a bar."""

    def stamp(self, text: str) -> str:
        """``text`` after the time elapsed since the start."""
        return f"[{time.monotonic() - self._t0:6.1f}s] {text}"

    def _render(self) -> Any:
        if self.work is None:
            return self.stamp(self._text)
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        done, known = self.work()
        grid = Table.grid(padding=(0, 1))
        grid.add_row(
            ProgressBar(total=max(known, 1), completed=done, width=20),
            f"{done}/{known}",
            self.stamp(self._text),
        )
        return grid

    def show(self, text: str, **fields: Any) -> None:
        """Show ``text`` live (at most 10 times a second), or log ``fields`` (at most every
        ``interval`` s)."""
        self._text = text
        now = time.monotonic()
        if not self.enabled:
            return
        if self._live is not None:
            if now - self._last > 0.1:
                self._last = now
                self._live.update(self._render())
        elif now - self._last > self.interval:
            self._last = now
            log.info(self.event, **fields)

    def __enter__(self) -> Status:
        if self._tty:
            from rich.console import Console
            from rich.live import Live

            from .logs import quiet_while_live

            # Log lines go through the display's console (it redirects sys.stderr, which the logs
            # write to), above the bar; and below warning only when a level was chosen.
            self._quiet = quiet_while_live()
            self._quiet.__enter__()
            self._live = Live(
                self._render(),
                console=Console(stderr=True),
                refresh_per_second=8,
                transient=False,
                redirect_stderr=True,
                redirect_stdout=True,
            )
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.update(self._render())
            self._live.__exit__(None, None, None)
            self._live = None
            self._quiet.__exit__(None, None, None)


class Progress(Status):
    """Counts a run's events by kind and shows them while the run works."""

    def __init__(self, enabled: bool = True, interval: float = 2.0) -> None:
        super().__init__(enabled, interval)
        self.counts: Counter[str] = Counter()
        self._verified: set[str] = set()
        self.iteration = 0
        self.last_mean: float | None = None
        self._text = self.line()

    def line(self) -> str:
        """The current counts as one line (with the iteration, once a run has more than one)."""
        parts = [
            f"{LABELS[k].replace('_', ' ')} {self.counts[k]}"
            for k in SHOWN
            if self.counts[k] or k in ("task.gated", "rollout.scored")
        ]
        if self.iteration or self.counts["iteration.ended"]:
            mean = "" if self.last_mean is None else f" (last mean reward {self.last_mean:.3f})"
            parts.insert(0, f"iteration {self.iteration}{mean}")
        return "  ".join(parts)

    def update(self, ev: Event) -> None:
        """Count one event; refresh the display at most every so often."""
        if ev.kind == "env.verified":
            env = getattr(ev, "env", None)
            env_id = getattr(env, "id", None)
            if env_id is not None:
                if env_id in self._verified:
                    return  # the same environment, sent to another sampler
                self._verified.add(env_id)
        kind = ev.kind
        if kind == "rollout.scored" and getattr(ev, "purpose", "train") == "gate":
            kind = "rollout.scored.gate"
        self.counts[kind] += 1
        if ev.kind == "iteration.ended":
            self.last_mean = getattr(ev, "mean_reward", None)
        self.iteration = max(self.iteration, ev.iteration)
        if self.enabled:
            work = (
                dict(zip(("steps_done", "steps_known"), self.work(), strict=True))
                if self.work
                else {}
            )
            self.show(
                self.line(),
                iteration=self.iteration,
                **{LABELS[k]: self.counts[k] for k in SHOWN},
                **work,
            )
