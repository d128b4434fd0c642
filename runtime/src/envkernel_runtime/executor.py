#!/usr/bin/env python3
"""envkernel's sandbox executor: runs one environment inside one sandbox.

Standard library only, run as ``python3 executor.py [--socket PATH] [limits and
confinement]``. It never imports anything outside the standard library but its sibling files,
which it finds beside it whether it runs as a lone file or as ``python -m
envkernel_runtime.executor``: the same files run in a local subprocess and inside a container.

The program is split by job:

- :mod:`~envkernel_runtime.executor_protocol`: the protocol and the state (the executor proper);
- :mod:`~envkernel_runtime.executor_confine`: the confinement;
- :mod:`~envkernel_runtime.executor_serving`: the command line and the serving loops;
- :mod:`~envkernel_runtime.executor_nests`: nests, sandboxes reused (``--nest``);
- :mod:`~envkernel_runtime.executor_zygote`: the fork server (``--zygote``).

The last two are imported only when asked for; a runner that uses neither need not ship them
(:func:`envkernel_runtime.executor_files`).

Protocol: JSON lines. One request object per line, one response object per line, in order.
By default requests come on stdin and responses go to stdout; with ``--socket PATH`` it listens
on a unix socket and serves one connection at a time (the state outlives a connection).

Requests::

    {"op": "load", "env": <EnvSpec as JSON>, "seed": 0, "timeout": 30,
     "clock": "2026-01-15T09:00:00Z"}
    {"op": "call", "tool": "get_order", "arguments": {...}, "timeout": 10}
    {"op": "snapshot"}                      -> value: handle ("s1", "s2", ...)
    {"op": "restore", "snapshot": "s1"}
    {"op": "dump"}                          -> value: {table: [row, ...]}
    {"op": "patch", "rows": [{"table": "orders", "row": {...}}, ...]}   -> value: rows inserted
    {"op": "ping"}                          -> value: {"protocol", "loaded", "confinement"}
    {"op": "close"}                         -> responds, then exits 0

Control ops (they change the executor's life, not the state):

- ``ping``: what the executor is (its :data:`PROTOCOL`, whether an environment is loaded, the
  confinement applied); a cell answers it before its ``load``;
- ``close``: answer, then exit 0;
- ``recycle`` (only in a nest's session, ``--nest``): answer ``{"ok":true,"value":null}``, then
  end the session with exit code 75 so the nest forks the next one;
- ``session`` (only on a nest's control socket, with the next session's lane passed as a file
  descriptor, SCM_RIGHTS): answer ``{"session": n, "killed": k}`` and fork that session.

The serving loop recognises ``recycle`` and ``session`` by the request's first bytes
(``{"op":"recycle"``, ``{"op":"session"``) before any JSON is decoded; the host writes every
request with ``"op"`` first, as msgspec encodes a dict in order. A direct lane
(:mod:`envkernel_runtime.lane`) takes ``call``, ``restore``, ``dump`` and ``ping`` only.

Protocol versions: 1 had load, call, snapshot, restore, dump, ping and close; 2 (2026-12-04) adds
patch, recycle, session and the direct lane.

Responses: ``{"ok": true, "value": ...}`` or
``{"ok": false, "error": {"code": ..., "message": ...}}``. Error codes: ``bad_request``,
``not_loaded``, ``unsupported``, ``load_failed``, ``unknown_tool``, ``invalid_arguments``,
``timeout``, ``tool_crashed``, ``bad_return``, ``too_large``, ``unknown_snapshot``,
``snapshot_failed``, ``restore_failed``, ``invalid_patch``, ``internal``, or whatever code the
environment's ``ToolError`` carries.

Environment code (``env.py``): one plain function per tool, ``def tool(env, **arguments)``.
``ToolError(code, message)`` is injected into its namespace. ``env`` has ``db`` (sqlite3, rows as
dicts), ``new_id(prefix)``, ``now()``, ``rng``, ``seed``, ``workspace`` (the working folder) and
``error(code, message)``.

Every call runs inside a SQLite savepoint. A call that fails in any way has no effect at all: the
database, the id counters, the clock, the random generators and (when it is small) the working
folder are put back as they were. ``time.time``, ``datetime.now``, ``uuid.uuid4`` and ``random``
are deterministic, so replaying the same calls on the same seed gives the same state. Snapshots
hold the database, the counters and the working folder. A process the environment forks never
speaks the protocol, and every process a call started is killed when the call returns.

Before any environment code runs, the executor confines itself as asked (see
``executor_confine._confine``): cgroups, rlimits, a tmpfs working folder, its own uid, a
parent-death signal, Landlock. It exits with code 78 rather than run less confined than asked;
``load`` and ``ping`` report what was applied.
"""

from __future__ import annotations

import os
import sys
import types

if __package__ != "envkernel_runtime":  # run as a lone file: its siblings are found beside it
    _package = types.ModuleType("envkernel_runtime")
    _package.__path__ = [os.path.dirname(os.path.abspath(__file__))]
    sys.modules.setdefault("envkernel_runtime", _package)

# the names other code and the tests use, from the files that define them
from envkernel_runtime.executor_confine import landlock_abi
from envkernel_runtime.executor_protocol import (
    _EMPTY_FOLDER,
    CONFINEMENT,
    PROTOCOL,
    Clock,
    Env,
    Executor,
    ToolError,
    _call_capture,
)
from envkernel_runtime.executor_serving import _parser, main

__all__ = [
    "CONFINEMENT",
    "PROTOCOL",
    "Clock",
    "Env",
    "Executor",
    "ToolError",
    "_EMPTY_FOLDER",
    "_call_capture",
    "_parser",
    "landlock_abi",
    "main",
]

if __name__ == "__main__":
    sys.exit(main())
