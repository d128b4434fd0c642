"""The root of envkernel's errors and the one sandbox error, in the lowest layer that raises it.

The runtime's :class:`~envkernel_runtime.session.ExecutorSession` raises :class:`SandboxError`,
the runners (``process``, ``podman``) raise it, and the kernel's sandbox client raises it;
``envkernel.errors`` re-exports all three classes, so ``envkernel.errors.SandboxError``,
``envkernel_process.SandboxError``, ``envkernel_podman.SandboxError`` and
``envkernel_runtime.session.SessionError`` (deprecated: it warns) are this one class.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["EnvkernelError", "InfraError", "SandboxError", "SandboxErrorCode"]


class EnvkernelError(Exception):
    """Root of every envkernel error."""


class InfraError(EnvkernelError):
    """The infrastructure failed, not the plugin (a sandbox died, the bus did not answer): a rollout
    that meets one is retried (``infra_retries``), then fails as ``infra``, never as the policy's
    work."""


class SandboxErrorCode(StrEnum):
    """What went wrong with a sandbox operation other than a tool call's own failure.

    A ``StrEnum``: each member equals its string (``code == "crashed"`` holds)."""

    SANDBOX = "sandbox"
    """No more precise code: the sandbox service or runner failed."""
    ERROR = "error"
    """The executor answered with an error that named no code."""
    OTHER = "other"
    """The executor named a code this host does not know (the message carries it)."""
    CLOSED = "closed"
    """The sandbox (or its runner) is closed or expired."""
    CRASHED = "crashed"
    """The executor died, or its state cannot be rebuilt."""
    TIMEOUT = "timeout"
    """The operation did not answer in time; the executor was killed."""
    TOO_LARGE = "too_large"
    """The answer was longer than the host reads."""
    NO_IMAGE = "no_image"
    """The sandbox image is missing (podman)."""
    UNKNOWN_SNAPSHOT = "unknown_snapshot"
    """No snapshot of that name."""
    LOAD_FAILED = "load_failed"
    """The environment failed to load (its ``seed_sql``, ``env.py`` or workspace)."""
    NOT_LOADED = "not_loaded"
    """An operation reached an executor holding no environment."""
    BAD_REQUEST = "bad_request"
    """The executor could not read the request."""
    SNAPSHOT_FAILED = "snapshot_failed"
    """The executor could not save the state."""
    RESTORE_FAILED = "restore_failed"
    """The executor could not bring a saved state back."""
    INVALID_PATCH = "invalid_patch"
    """A patch's rows do not fit the tables."""
    INVALID_ARGUMENTS = "invalid_arguments"
    """The arguments are not JSON or do not fit."""
    UNKNOWN_TOOL = "unknown_tool"
    """No tool of that name."""
    UNSUPPORTED = "unsupported"
    """The executor does not do this (e.g. no working folder to capture)."""
    INTERNAL = "internal"
    """The executor itself failed."""

    @classmethod
    def of(cls, code: str) -> SandboxErrorCode:
        """The member for ``code`` (:attr:`OTHER` when it names none)."""
        try:
            return cls(code)
        except ValueError:
            return cls.OTHER


class SandboxError(InfraError):
    """A sandbox could not be opened, or an operation on it other than a tool call failed (start,
    load, patch, snapshot, restore, state, image, service).

    ``code`` (a :class:`SandboxErrorCode`) is the executor's error code when it gave one
    (``load_failed``, ``unknown_snapshot``...), else what the host saw (``timeout``, ``crashed``,
    ``too_large``, ``closed``, ``no_image``), else ``sandbox``."""

    def __init__(self, message: str, code: str = SandboxErrorCode.SANDBOX) -> None:
        super().__init__(message)
        self.code: SandboxErrorCode = SandboxErrorCode.of(code)
