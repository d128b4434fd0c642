"""Deprecated: the old name of :mod:`envkernel.event_routes` (which role handles each event kind
and how it is dispatched). Importing it warns; it goes away in the next release."""

from __future__ import annotations

import warnings

from .event_routes import (
    BROADCAST_INPUTS,
    KERNEL_INPUTS,
    SERVED_KINDS,
    WORK_INPUTS,
    WORK_KINDS,
    expected_handlers,
    first,
    subject_of,
    synthesizer_for,
)

__all__ = [
    "BROADCAST_INPUTS",
    "KERNEL_INPUTS",
    "SERVED_KINDS",
    "WORK_INPUTS",
    "WORK_KINDS",
    "expected_handlers",
    "first",
    "subject_of",
    "synthesizer_for",
]

warnings.warn(
    "envkernel.routing is deprecated: import from envkernel.event_routes",
    DeprecationWarning,
    stacklevel=2,
)
