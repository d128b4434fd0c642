"""Logging, configured once: console output on a terminal, JSON lines otherwise (on stderr); and the
SIGINT/SIGTERM handling of the long-running commands (run, worker)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

import structlog

_configured = False
_chosen = False
"""The level was chosen (``--log-level`` or ``ENVKERNEL_LOG_LEVEL``), not the default."""
_floor = 0
"""Events below this level are dropped for now (:func:`quiet_while_live`); 0: none."""
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "msg": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "exception": logging.ERROR,
    "critical": logging.CRITICAL,
    "fatal": logging.CRITICAL,
}


class _CurrentStderr:
    """``sys.stderr`` as it is at each write, not when logging was configured: a live display
    (rich's ``Live``, :mod:`envkernel_bus.progress`) replaces it with a proxy that prints each line
    above the display, so log lines never land in the middle of the bar."""

    def write(self, text: str) -> int:
        """Write to the current ``sys.stderr``."""
        return sys.stderr.write(text)

    def flush(self) -> None:
        """Flush the current ``sys.stderr``."""
        sys.stderr.flush()


def _gate(_logger: Any, method: str, event: Any) -> Any:
    """Drop an event below :data:`_floor` (a live display is shown and no level was chosen)."""
    if _floor and _LEVELS.get(method, logging.INFO) < _floor:
        raise structlog.DropEvent
    return event


@contextlib.contextmanager
def quiet_while_live(level: int = logging.WARNING) -> Iterator[None]:
    """While a live display is on the terminal, log only ``level`` and above, unless a level was
    chosen (``--log-level``, ``ENVKERNEL_LOG_LEVEL``): the display says what info lines would."""
    global _floor
    before = _floor
    if not _chosen:
        _floor = max(_floor, level)
    try:
        yield
    finally:
        _floor = before


def configure(level: str | None = None, json_logs: bool | None = None) -> None:
    """Configure structlog for the process (idempotent). ``ENVKERNEL_LOG_LEVEL`` sets the level."""
    global _configured, _chosen
    if _configured:
        return
    _configured = True
    _chosen = bool(level or os.environ.get("ENVKERNEL_LOG_LEVEL"))
    name = (level or os.environ.get("ENVKERNEL_LOG_LEVEL") or "info").upper()
    lvl = getattr(logging, name, logging.INFO)
    if json_logs is None:
        json_logs = not sys.stderr.isatty()
    renderer = structlog.processors.JSONRenderer() if json_logs else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[
            _gate,
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )


def on_signals(callback: Callable[[], None] | None, exit_code: int = 3) -> None:
    """Call ``callback`` on SIGINT/SIGTERM in the running loop (None: restore the defaults); a
    second signal exits at once with ``exit_code``, without a clean shutdown."""
    loop = asyncio.get_running_loop()
    calls: list[int] = []

    def once() -> None:
        if calls:
            structlog.get_logger("envkernel.run").error(
                "a second signal: exiting now, without a clean shutdown"
            )
            os._exit(exit_code)
        calls.append(1)
        if callback is not None:
            callback()

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            if callback is None:
                loop.remove_signal_handler(sig)
            else:
                loop.add_signal_handler(sig, once)
        except (NotImplementedError, RuntimeError):
            pass
