"""envkernel-runtime: everything that runs inside a sandbox or speaks the executor protocol.

- :mod:`envkernel_runtime.executor` and :mod:`envkernel_runtime.engine`: the stdlib-only programs
  a sandbox runs (``python3 -S -P executor.py``; the ``executor_*.py`` files, the engine and
  ``workspace.py`` are loaded from beside it). They never import anything outside the standard
  library, so a runner may copy or bind-mount the files anywhere, side by side:
  :func:`executor_path` says where the executor is, :func:`executor_files` lists every file.
- :mod:`envkernel_runtime.session`: :class:`~envkernel_runtime.session.ExecutorSession`, the host's
  side of the executor protocol that sandbox runners subclass.
- :mod:`envkernel_runtime.model`: the typed resource model of ``{"kind": "model"}`` environments.

The runtime never imports the kernel (``envkernel``); the kernel and the plugins import it.
"""

from __future__ import annotations

import os

__all__ = ["engine_path", "executor_files", "executor_path", "workspace_path"]

_HERE = os.path.dirname(os.path.realpath(__file__))

_EXECUTOR_FILES = (
    "executor.py",
    "executor_protocol.py",
    "executor_confine.py",
    "executor_serving.py",
    "engine.py",
    "workspace.py",
)
_FORK_SERVER_FILES = ("executor_nests.py", "executor_zygote.py")


def executor_path() -> str:
    """The absolute path of the stdlib-only ``executor.py`` a sandbox runs (``engine.py`` is beside
    it)."""
    return os.path.join(_HERE, "executor.py")


def executor_files(fork_server: bool = True) -> list[str]:
    """The absolute paths of the stdlib-only files a sandbox's executor loads, all in one folder
    (a runner that copies or mounts them keeps them side by side). Without ``fork_server``, the
    files only ``--zygote`` and ``--nest`` use are left out."""
    names = _EXECUTOR_FILES + (_FORK_SERVER_FILES if fork_server else ())
    return [os.path.join(_HERE, name) for name in names]


def workspace_path() -> str:
    """The absolute path of ``workspace.py`` (workspace environments), which the executor loads from
    its own folder."""
    return os.path.join(_HERE, "workspace.py")


def engine_path() -> str:
    """The absolute path of ``engine.py``, which the executor loads from its own folder."""
    return os.path.join(_HERE, "engine.py")
