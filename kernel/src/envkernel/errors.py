"""The error tree. Every message says what failed, where, and what the user can do."""

from __future__ import annotations

from envkernel_runtime.errors import EnvkernelError, InfraError, SandboxError, SandboxErrorCode

__all__ = [
    "EXIT_ABORTED",
    "EXIT_EMPTY",
    "EXIT_FAILURES",
    "EXIT_OK",
    "EXIT_USAGE",
    "ConfigError",
    "EnvkernelError",
    "InfraError",
    "PluginError",
    "RoleError",
    "RunError",
    "SandboxError",
    "SandboxErrorCode",
    "UpdateError",
    "UpdateRefused",
    "UsageError",
]


class UsageError(EnvkernelError):
    """Bad flags, config or plugin selection (exit code 2)."""


class PluginError(UsageError):
    """A plugin could not be found, loaded or configured."""


class RoleError(PluginError):
    """A component lacks a method its role requires; its plugin is refused (counted as broken)."""


class ConfigError(UsageError):
    """The config file or a setting is wrong."""


class UpdateError(EnvkernelError):
    """A policy update could not be stored, found, decoded or applied."""


class UpdateRefused(UpdateError):
    """A policy refused an update (or it does not decode): every rollout naming it fails, and the
    run never carries it into a later iteration."""


class RunError(EnvkernelError):
    """The run could not go on (bus lost, server died)."""


EXIT_OK = 0
"""Finished; no plugin failed."""
EXIT_FAILURES = 1
"""Finished, but plugins failed (``failures``), rollouts failed as ``infra`` (``infra_failures``),
or a selected plugin failed to import or register (``broken_plugins``); outputs are written."""
EXIT_USAGE = 2
"""Usage or config error; nothing ran."""
EXIT_ABORTED = 3
"""The run was interrupted or lost its bus; what was produced so far is written."""
EXIT_EMPTY = 4
"""The run finished and nothing failed, but it emitted no task (every task was rejected, or none was
proposed)."""
