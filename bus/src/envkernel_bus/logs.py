"""Logging, configured once: console output on a terminal, JSON lines otherwise (on stderr); and the
SIGINT/SIGTERM handling of the long-running commands (run, worker)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable

import structlog

_configured = False


def configure(level: str | None = None, json_logs: bool | None = None) -> None:
    """Configure structlog for the process (idempotent). ``ENVKERNEL_LOG_LEVEL`` sets the level."""
    global _configured
    if _configured:
        return
    _configured = True
    name = (level or os.environ.get("ENVKERNEL_LOG_LEVEL") or "info").upper()
    lvl = getattr(logging, name, logging.INFO)
    if json_logs is None:
        json_logs = not sys.stderr.isatty()
    renderer = structlog.processors.JSONRenderer() if json_logs else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
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
