"""envkernel-podman: the sandbox runner ``podman`` — one rootful Podman container per sandbox.

See :mod:`envkernel_podman.runner` for what a sandbox gets (no network, read-only root, non-root
user, limits, hard lifetime, a warm pool, no orphans), and ``envkernel sandbox build-image`` for
the image (built offline with debootstrap + ``podman import``).
"""

from __future__ import annotations

from envkernel.hookspecs import hookimpl

from .errors import SandboxError
from .image import BUILD_COMMAND, DEFAULT_IMAGE, build_image
from .runner import (
    LABEL,
    LABEL_EXPIRES,
    LABEL_RUNNER,
    PodmanRunner,
    PodmanSession,
    Settings,
    reap_containers,
)

__all__ = [
    "BUILD_COMMAND",
    "DEFAULT_IMAGE",
    "LABEL",
    "LABEL_EXPIRES",
    "LABEL_RUNNER",
    "PodmanRunner",
    "PodmanSession",
    "SandboxError",
    "Settings",
    "build_image",
    "reap_containers",
]


@hookimpl
def register_sandbox_runners(register) -> None:
    """Register the ``podman`` sandbox runner."""
    register("podman", PodmanRunner)


@hookimpl
def register_commands(cli) -> None:
    """Add ``envkernel sandbox build-image`` (and ``ps``, ``reap``)."""
    from .cli import add_commands

    add_commands(cli)
