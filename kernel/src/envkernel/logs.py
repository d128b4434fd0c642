"""Logging, configured once: console output on a terminal, JSON lines otherwise (on stderr)."""

from __future__ import annotations

import logging
import os
import sys

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
