"""envkernel-runtime: everything that runs inside a sandbox or speaks the executor protocol.

- :mod:`envkernel_runtime.executor` and :mod:`envkernel_runtime.engine`: the stdlib-only programs
  a sandbox runs (``python3 -S -P executor.py``; the engine is loaded from beside it). They never
  import anything outside the standard library, so a runner may copy or bind-mount the two files
  anywhere: :func:`executor_path` says where they are.
- :mod:`envkernel_runtime.session`: :class:`~envkernel_runtime.session.ExecutorSession`, the host's
  side of the executor protocol that sandbox runners subclass.
- :mod:`envkernel_runtime.model`: the typed resource model of ``{"kind": "model"}`` environments.

The runtime never imports the kernel (``envkernel``); the kernel and the plugins import it.
"""

from __future__ import annotations

import os

__all__ = ["engine_path", "executor_path", "workspace_path"]

_HERE = os.path.dirname(os.path.realpath(__file__))


def executor_path() -> str:
    """The absolute path of the stdlib-only ``executor.py`` a sandbox runs (``engine.py`` is beside it)."""
    return os.path.join(_HERE, "executor.py")


def workspace_path() -> str:
    """The absolute path of ``workspace.py`` (workspace environments), which the executor loads from its own folder."""
    return os.path.join(_HERE, "workspace.py")


def engine_path() -> str:
    """The absolute path of ``engine.py``, which the executor loads from its own folder."""
    return os.path.join(_HERE, "engine.py")
