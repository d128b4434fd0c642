"""The plugin's error type: envkernel's one sandbox error.

``SandboxError`` here is :class:`envkernel_runtime.errors.SandboxError` (the same class as
``envkernel.errors.SandboxError``). Its ``code`` is the executor's error code when it gave one
(``load_failed``, ``unknown_snapshot``, ``timeout``, ``crashed``, ``closed``...), ``no_image``
when the sandbox image is missing."""

from __future__ import annotations

from envkernel_runtime.errors import SandboxError, SandboxErrorCode

__all__ = ["SandboxError", "SandboxErrorCode"]
