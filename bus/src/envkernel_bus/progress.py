"""Progress of a run: a live line on a terminal, a periodic log line otherwise (the kernel's run shows it)."""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import Any

import structlog

from envkernel_schemas import Event

log = structlog.get_logger("envkernel.progress")  # (the name the run logs it under)

SHOWN = ("env.synthesized", "env.verified", "task.proposed", "task.gated", "task.rejected", "rollout.scored", "plugin.failed")
LABELS = {"env.synthesized": "envs", "env.verified": "verified", "task.proposed": "proposed", "task.gated": "tasks",
          "task.rejected": "rejected", "rollout.scored": "rollouts", "plugin.failed": "failures"}


class Progress:
    """Counts events by kind and shows them while the run works."""

    def __init__(self, enabled: bool = True, interval: float = 2.0) -> None:
        self.enabled = enabled
        self.interval = interval
        self.counts: Counter[str] = Counter()
        self._tty = enabled and sys.stderr.isatty()
        self._live: Any = None
        self._last = 0.0
        self._t0 = time.monotonic()
        self.iteration = 0
        self.last_mean: float | None = None

    def line(self) -> str:
        """The current counts as one line (with the iteration, once a run has more than one)."""
        parts = [f"{LABELS[k]} {self.counts[k]}" for k in SHOWN if self.counts[k] or k in ("task.gated", "rollout.scored")]
        if self.iteration or self.counts["iteration.ended"]:
            mean = "" if self.last_mean is None else f" (last mean reward {self.last_mean:.3f})"
            parts.insert(0, f"iteration {self.iteration}{mean}")
        return f"[{time.monotonic() - self._t0:6.1f}s] " + "  ".join(parts)

    def update(self, ev: Event) -> None:
        """Count one event; refresh the display at most every so often."""
        self.counts[ev.kind] += 1
        if ev.kind == "iteration.ended":
            self.last_mean = getattr(ev, "mean_reward", None)
        self.iteration = max(self.iteration, ev.iteration)
        if not self.enabled:
            return
        now = time.monotonic()
        if self._tty and self._live is not None:
            if now - self._last > 0.1:
                self._last = now
                self._live.update(self.line())
        elif now - self._last > self.interval:
            self._last = now
            log.info("progress", iteration=self.iteration, **{LABELS[k]: self.counts[k] for k in SHOWN})

    def __enter__(self) -> Progress:
        if self._tty:
            from rich.console import Console
            from rich.live import Live

            self._live = Live(self.line(), console=Console(stderr=True), refresh_per_second=8, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.update(self.line())
            self._live.__exit__(None, None, None)
            self._live = None
