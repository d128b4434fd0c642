"""Deprecated: the old name of :mod:`envkernel.worker` (the ``Worker`` that serves components' role
methods on the bus). Importing it warns; it goes away in the next release."""

from __future__ import annotations

import warnings

from envkernel_runtime.calls import call_role

from .worker import PluginContractError, Worker, classify

__all__ = ["PluginContractError", "Worker", "call_role", "classify"]

warnings.warn(
    "envkernel.router is deprecated: import from envkernel.worker",
    DeprecationWarning,
    stacklevel=2,
)
