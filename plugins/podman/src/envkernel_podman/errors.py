"""The plugin's error type."""

from __future__ import annotations

from envkernel.errors import SandboxError as KernelSandboxError
from envkernel_runtime.session import SessionError


class SandboxError(SessionError, KernelSandboxError, RuntimeError):
    """A sandbox operation other than a tool call failed (image, service, start, load, snapshot...).

    ``code`` is the executor's error code when it gave one (``load_failed``, ``unknown_snapshot``,
    ``timeout``, ``crashed``, ``closed``...), ``no_image`` when the sandbox image is missing."""
