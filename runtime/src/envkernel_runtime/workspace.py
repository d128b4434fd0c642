"""Workspace environments inside the sandbox: a folder tree and claw-shaped tools over it.

Standard library only. The executor loads this file from its own folder (like ``engine.py``) and
calls :func:`install` for a ``{"kind": "workspace", ...}`` behaviour. It never imports envkernel,
so it runs the same in a local subprocess and in a container.

The tools have the shape claw agents (OpenClaw and its kin) know: ``read``, ``write``, ``edit``
(exact string replace), ``apply_patch`` (the ``*** Begin Patch`` format), ``list``, ``glob``,
``grep`` and ``exec`` (``bash -c`` in the workspace, with a time limit and capped output). Every
path is relative to the workspace; a path that leaves it (``..``, an absolute path elsewhere, a
symlink pointing out) fails with ``outside_workspace``. Two more functions are never offered to an
agent (they are not in the environment's tool list) and serve the reward side: ``apply_final``
rebuilds a rollout's final workspace from its diff, and ``run_check`` runs a task's
``grade(transcript, workspace_path)`` in a forked child.

The state used for outcome checks is :func:`diff`: one row per file added, changed or removed
since load, with its sha256, size and (for small text files) its text.
"""

from __future__ import annotations

import base64
import datetime as _dt
import fnmatch
import functools
import hashlib
import json
import os
import re
import selectors
import signal
import subprocess
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is never imported at run time: it would slow the executor's start
    import sqlite3
    import types
    from collections.abc import Callable
    from typing import Any, Protocol, TypeAlias

    Json: TypeAlias = Any
    """A value a tool receives or returns: JSON."""
    Result: TypeAlias = dict[str, Any]
    """What a tool returns: a JSON object."""
    Scan: TypeAlias = dict[str, tuple[str, int, "str | None"]]
    """path -> (sha256, size, link target or None), see :func:`scan`."""

    class Env(Protocol):
        """What the tools use of the executor's ``env``."""

        db: sqlite3.Connection
        workspace: str


_REAL_CLOCK = {
    "time": time.time, "time_ns": time.time_ns, "gmtime": time.gmtime, "localtime": time.localtime,
    "ctime": time.ctime, "strftime": time.strftime,
}  # fmt: skip
_REAL_DATETIME = getattr(_dt.datetime, "_real", _dt.datetime)
_REAL_DATE = getattr(_dt.date, "_real", _dt.date)
CLOCK_ENV = "ENVKERNEL_CLOCK"
"""Set to ``real`` in ``exec``'s shell and in a check: both read the real time (UTC), as do the
mtimes of the files the agent writes. Only the tools' ``env.now()`` and an app's code keep the
executor's frozen clock."""

TABLE = "workspace"
"""The name of the diff in a dump (a pseudo-table next to the app's tables)."""
TEXT_LIMIT = 64 * 1024
"""Files up to this size that decode as UTF-8 carry their text in the diff."""
DATA_LIMIT = 1 << 20
"""Other changed files up to this size carry their bytes (base64), so the final tree can be
rebuilt."""
DIFF_BUDGET = 4 << 20
"""Bytes of content one diff carries in all (events stay well under the bus's 8 MiB); past it, rows
keep only their hash."""
OUTPUT_LIMIT = 64 * 1024
"""Bytes of stdout and of stderr an ``exec`` returns (the rest is counted and dropped)."""
READ_LIMIT = 2000
"""Lines a ``read`` returns by default."""
EXEC_TIMEOUT = 8.0
"""Default seconds an ``exec`` may run (the executor's call timeout still applies)."""
MATCH_LIMIT = 200
"""Entries a ``list``, ``glob`` or ``grep`` returns at most."""
GIT_DATE = "2026-01-15T09:00:00Z"

_OBJ = {"type": "object", "additionalProperties": False}
_PATH = {"type": "string", "description": "A path relative to the workspace root."}

TOOLS: list[dict[str, Any]] = [
    {
        "name": "read",
        "mutates": False,
        "description": "Read a text file of the workspace; lines are numbered from 1.",
        "parameters": {
            **_OBJ,
            "properties": {
                "path": _PATH,
                "offset": {"type": "integer", "minimum": 1, "description": "First line (1-based)."},
                "limit": {"type": "integer", "minimum": 1, "description": "Lines to return."},
            },
            "required": ["path"],
        },
    },
    {
        "name": "write",
        "mutates": True,
        "description": "Create or overwrite a file with the given "
        "content (folders are made as needed).",
        "parameters": {
            **_OBJ,
            "properties": {"path": _PATH, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
    {
        "name": "edit",
        "mutates": True,
        "description": "Replace an exact string in a file. old_string must occur exactly once "
        "unless replace_all is true.",
        "parameters": {
            **_OBJ,
            "properties": {
                "path": _PATH,
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean"},
            },
            "required": ["path", "old_string", "new_string"],
        },
    },
    {
        "name": "apply_patch",
        "mutates": True,
        "description": "Apply a patch in the '*** Begin Patch' format: '*** Add File: p', '*** "
        "Update File: p' (hunks of ' ', '-', '+' lines after '@@'), '*** Delete "
        "File: p', optional '*** Move to: q'; ends with '*** End Patch'.",
        "parameters": {**_OBJ, "properties": {"patch": {"type": "string"}}, "required": ["patch"]},
    },
    {
        "name": "list",
        "mutates": False,
        "description": "List a folder of the workspace (names, types and sizes).",
        "parameters": {**_OBJ, "properties": {"path": _PATH}, "required": []},
    },
    {
        "name": "glob",
        "mutates": False,
        "description": "Paths of the workspace matching a glob pattern ('**' crosses folders).",
        "parameters": {
            **_OBJ,
            "properties": {"pattern": {"type": "string"}},
            "required": ["pattern"],
        },
    },
    {
        "name": "grep",
        "mutates": False,
        "description": "Search files for a regular expression; returns path, line number and line "
        "for each match.",
        "parameters": {
            **_OBJ,
            "properties": {
                "pattern": {"type": "string"},
                "path": _PATH,
                "glob": {
                    "type": "string",
                    "description": "Only files whose path matches this glob.",
                },
            },
            "required": ["pattern"],
        },
    },
    {
        "name": "exec",
        "mutates": True,
        "description": "Run a shell command (bash -c) in the workspace: coreutils, git, sqlite3 "
        "and python3 are there; no network. Returns exit_code, stdout and stderr.",
        "parameters": {
            **_OBJ,
            "properties": {
                "command": {"type": "string"},
                "timeout": {
                    "type": "number",
                    "minimum": 0.1,
                    "description": "Seconds (default 8).",
                },
            },
            "required": ["command"],
        },
    },
]
"""The claw tools, as ToolSpec-shaped JSON objects."""
TOOL_NAMES: list[str] = [t["name"] for t in TOOLS]
TOOL_PROFILES = {
    "claw": {},
    "pinchbench": {
        "read": "read_file", "write": "write_file", "edit": "edit_file", "list": "list_files",
        "exec": "execute_command",
    },
}  # fmt: skip
"""Agent-facing names of the claw tools by profile (canonical name -> name the agent sees).
``claw`` keeps OpenClaw's current names (``read``, ``write``, ``edit``, ``exec``, ...);
``pinchbench`` uses the names PinchBench's graders look for in a transcript (``read_file`` with a
``files`` list, ``write_file``, ``execute_command``). Every alias is installed in the module; the
environment's tool list decides which names an agent can call."""
_READ_FILE = {
    "name": "read_file",
    "mutates": False,
    "description": "Read text files of the workspace: 'files' is a list of paths (or "
    "give one 'path'); lines are numbered from 1.",
    "parameters": {
        **_OBJ,
        "properties": {
            "files": {"type": "array", "items": _PATH, "minItems": 1},
            "path": _PATH,
            "offset": {"type": "integer", "minimum": 1, "description": "First line (1-based)."},
            "limit": {"type": "integer", "minimum": 1, "description": "Lines to return."},
        },
        "required": [],
    },
}


def tools_named(names: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The claw tools with agent-facing ``names`` (canonical -> alias; unnamed ones keep theirs).
    ``read`` renamed ``read_file`` takes a ``files`` list as PinchBench's transcripts show it."""
    out = []
    for t in TOOLS:
        alias = (names or {}).get(t["name"]) or t["name"]
        if alias == "read_file":
            out.append(dict(_READ_FILE))
        else:
            out.append({**t, "name": alias})
    return out


REWARD_TOOLS = ("apply_final", "run_check")
"""Functions the reward side calls; never in an environment's tool list, so no agent can call
them."""


class _State:
    root = ""
    baseline: Scan = {}
    error: Callable[[str, str], Exception] | None = None
    spawned: Callable[[int], None] | None = None


def install(
    module: types.ModuleType,
    behaviour: dict[str, Any],
    env: Env,
    tool_error: Callable[[str, str], Exception],
    spawned: Callable[[int], None],
    app_loader: Callable[[str], None],
) -> None:
    """Write the tree into the (emptied) workspace, run ``setup``, load the app code with
    ``app_loader(source)``, put the tools into ``module`` and record the baseline for
    :func:`diff`."""
    root = env.workspace
    if not root or not os.path.isdir(root):
        raise OSError("a workspace environment needs a working folder (the executor's --workdir)")
    _State.root, _State.error, _State.spawned = os.path.realpath(root), tool_error, spawned
    _empty(root)
    files = behaviour.get("files") or {}
    blobs = behaviour.get("blobs") or {}
    if not isinstance(files, dict) or not isinstance(blobs, dict):
        raise ValueError("workspace 'files' and 'blobs' must be objects: path -> content")
    for path, text in sorted(files.items()):
        _write_bytes(_resolve(path), str(text).encode("utf-8"))
    for path, data in sorted(blobs.items()):
        _write_bytes(_resolve(path), base64.b64decode(data))
    for command in behaviour.get("setup") or []:
        out = _run(str(command), 60.0)
        if out["exit_code"] != 0:
            raise RuntimeError(
                f"setup command {command!r} exited {out['exit_code']}: {out['stderr'][-500:]}"
            )
    source = behaviour.get("source") or ""
    if source:
        app_loader(source)
    tables = {
        r["name"]
        for r in env.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    }
    if TABLE in tables:
        raise ValueError(
            f"an app table may not be called {TABLE!r}: that name holds the workspace diff "
            "in the state"
        )
    tools: tuple[Callable[..., Result], ...] = (
        read, write, edit, apply_patch, list_, glob_, grep, exec_, apply_final, run_check
    )  # fmt: skip
    for fn in tools:
        name = fn.__name__.rstrip("_")
        fn.__module__ = "env"
        setattr(module, name, fn)
    aliases: dict[str, Callable[..., Result]] = {
        "read_file": read_file, "write_file": write, "edit_file": edit,
        "list_files": list_, "execute_command": exec_,
    }  # fmt: skip
    for alias, fn in aliases.items():
        fn.__module__ = "env"
        setattr(module, alias, fn)
    _State.baseline = scan(root)


# --------------------------------------------------------------------------- paths and files


def _fail(code: str, message: str) -> Exception:
    assert _State.error is not None  # set by install()
    return _State.error(code, message)


def _resolve(path: Json, must_exist: bool = False) -> str:
    """The real path of ``path`` inside the workspace, or ``outside_workspace``."""
    if not isinstance(path, str) or not path.strip():
        raise _fail(
            "invalid",
            "path must be a non-empty string relative to the workspace, e.g. 'notes/todo.md'",
        )
    root = _State.root
    full = os.path.realpath(os.path.join(root, path))
    if full != root and not full.startswith(root + os.sep):
        raise _fail(
            "outside_workspace",
            f"{path!r} is outside the workspace; use a path relative to the workspace root",
        )
    if must_exist and not os.path.lexists(full):
        raise _fail(
            "not_found", f"no file or folder {path!r} in the workspace; use list or glob to find it"
        )
    return full


def _rel(full: str) -> str:
    return os.path.relpath(full, _State.root).replace(os.sep, "/")


def _write_bytes(full: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(full) or ".", exist_ok=True)
    fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _read_text(full: str, path: str) -> str:
    if os.path.isdir(full):
        raise _fail("is_a_folder", f"{path!r} is a folder; use list to see what it holds")
    try:
        with open(full, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise _fail(
            "not_found", f"no file {path!r} in the workspace; use list or glob to find it"
        ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(
            "binary",
            f"{path!r} is not UTF-8 text ({len(data)} bytes); inspect it with exec (e.g. "
            "'file' or 'xxd')",
        ) from None


def _empty(root: str) -> None:
    for e in os.scandir(root):
        if e.is_dir(follow_symlinks=False):
            _rmtree(e.path)
        else:
            os.unlink(e.path)


def _rmtree(path: str) -> None:
    for e in os.scandir(path):
        if e.is_dir(follow_symlinks=False):
            _rmtree(e.path)
        else:
            os.unlink(e.path)
    os.rmdir(path)


def _walk(root: str) -> list[str]:
    """Every file and symlink under ``root`` (folders are entered, symlinks never followed),
    sorted."""
    out = []
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                stack.append(e.path)
            else:
                out.append(e.path)
    return sorted(out)


def scan(root: str) -> Scan:
    """path -> (sha256, size, link target or None) of every file under ``root``."""
    out: Scan = {}
    for full in _walk(root):
        rel = os.path.relpath(full, root).replace(os.sep, "/")
        if os.path.islink(full):
            target = os.readlink(full)
            out[rel] = (hashlib.sha256(target.encode()).hexdigest(), 0, target)
            continue
        h = hashlib.sha256()
        size = 0
        try:
            with open(full, "rb") as f:
                for chunk in iter(functools.partial(f.read, 1 << 16), b""):
                    h.update(chunk)
                    size += len(chunk)
        except OSError:
            continue
        out[rel] = (h.hexdigest(), size, None)
    return out


def diff(root: str | None = None, baseline: Scan | None = None) -> list[dict[str, Any]]:
    """The workspace's change since load: one row per file added, changed or removed, sorted by
    path: ``path``, ``change``, ``sha256``, ``size``, ``text`` (small UTF-8 files), ``data`` (base64
    of other files up to 1 MiB), ``link`` (a symlink's target). At most 4 MiB of content in all."""
    root = root or _State.root
    base = _State.baseline if baseline is None else baseline
    now = scan(root)
    rows = []
    budget = DIFF_BUDGET
    for path in sorted(set(base) | set(now)):
        old, new = base.get(path), now.get(path)
        if old == new:
            continue
        if new is None:
            rows.append(
                {
                    "path": path,
                    "change": "removed",
                    "sha256": None,
                    "size": None,
                    "text": None,
                    "data": None,
                    "link": None,
                }
            )
            continue
        row: dict[str, Any] = {
            "path": path,
            "change": "added" if old is None else "changed",
            "sha256": new[0],
            "size": new[1],
            "text": None,
            "data": None,
            "link": new[2],
        }
        if new[2] is None and new[1] <= min(DATA_LIMIT, budget):
            budget -= new[1]
            with open(os.path.join(root, path), "rb") as f:
                data = f.read()
            try:
                if len(data) > TEXT_LIMIT:
                    raise UnicodeDecodeError("utf-8", b"", 0, 1, "large")
                row["text"] = data.decode("utf-8")
            except UnicodeDecodeError:
                row["data"] = base64.b64encode(data).decode("ascii")
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- the tools


def read(env: Env, path: Json, offset: Json = 1, limit: Json = READ_LIMIT) -> Result:
    """Read a text file: ``content`` is the lines from ``offset`` (1-based), at most ``limit``."""
    full = _resolve(path, must_exist=True)
    text = _read_text(full, path)
    lines = text.splitlines(keepends=True)
    start = max(1, int(offset)) - 1
    chunk = lines[start : start + max(1, int(limit))]
    return {
        "path": _rel(full),
        "content": "".join(chunk),
        "lines": len(lines),
        "from": start + 1,
        "truncated": start + len(chunk) < len(lines),
    }


def read_file(
    env: Env, files: Json = None, path: Json = None, offset: Json = 1, limit: Json = READ_LIMIT
) -> Result:
    """``read`` under PinchBench's name: ``files`` (a list of paths) or one ``path``; returns
    ``{"files": [<read result>, ...]}`` (one ``read`` result per file, in order)."""
    paths = list(files) if isinstance(files, (list, tuple)) else [files] if files else []
    if path:
        paths.append(path)
    if not paths or not all(isinstance(p, str) and p for p in paths):
        raise _fail("invalid", "give 'files' (a list of paths) or 'path'")
    return {"files": [read(env, p, offset, limit) for p in paths]}


def write(env: Env, path: Json, content: Json) -> Result:
    """Create or overwrite ``path`` with ``content``."""
    if not isinstance(content, str):
        raise _fail("invalid", "content must be a string")
    full = _resolve(path)
    if os.path.isdir(full):
        raise _fail("is_a_folder", f"{path!r} is a folder; give a file path")
    existed = os.path.exists(full)
    _write_bytes(full, content.encode("utf-8"))
    return {"path": _rel(full), "bytes": len(content.encode("utf-8")), "created": not existed}


def edit(
    env: Env, path: Json, old_string: Json, new_string: Json, replace_all: Json = False
) -> Result:
    """Replace ``old_string`` by ``new_string`` in ``path`` (exactly once unless
    ``replace_all``)."""
    full = _resolve(path, must_exist=True)
    text = _read_text(full, path)
    if not old_string:
        raise _fail("invalid", "old_string must not be empty; to create a file use write")
    count = text.count(old_string)
    if count == 0:
        raise _fail(
            "no_match",
            f"old_string does not occur in {path!r}; read the file and copy the text exactly",
        )
    if count > 1 and not replace_all:
        raise _fail(
            "ambiguous",
            f"old_string occurs {count} times in {path!r}; add context to make it unique, or "
            "set replace_all",
        )
    _write_bytes(full, text.replace(old_string, new_string).encode("utf-8"))
    return {"path": _rel(full), "replacements": count if replace_all else 1}


def apply_patch(env: Env, patch: Json) -> Result:
    """Apply a ``*** Begin Patch`` patch; all of it or nothing (the call fails before writing)."""
    ops = _parse_patch(patch)
    writes: dict[str, Any] = {}
    deletes: list[str] = []
    done: dict[str, list[Any]] = {"added": [], "updated": [], "deleted": [], "moved": []}
    for op in ops:
        kind, path = op["kind"], op["path"]
        full = _resolve(path)
        if kind == "add":
            if os.path.exists(full) or full in writes:
                raise _fail("exists", f"*** Add File: {path} exists already; use *** Update File")
            writes[full] = "".join(line + "\n" for line in op["lines"])
            done["added"].append(path)
        elif kind == "delete":
            if not os.path.isfile(full):
                raise _fail("not_found", f"*** Delete File: {path} is not a file of the workspace")
            deletes.append(full)
            done["deleted"].append(path)
        else:
            text = writes.get(full)
            if text is None:
                text = _read_text(_resolve(path, must_exist=True), path)
            text = _apply_hunks(text, op["hunks"], path)
            if op.get("move"):
                target = _resolve(op["move"])
                writes[target] = text
                deletes.append(full)
                done["moved"].append([path, op["move"]])
            else:
                writes[full] = text
                done["updated"].append(path)
    for full, text in writes.items():
        _write_bytes(full, text.encode("utf-8"))
    for full in deletes:
        if full not in writes and os.path.exists(full):
            os.unlink(full)
    return done


def _parse_patch(patch: Json) -> list[dict[str, Any]]:
    if not isinstance(patch, str):
        raise _fail("invalid", "patch must be a string")
    lines = patch.strip("\n").split("\n")
    if not lines or lines[0].strip() != "*** Begin Patch" or lines[-1].strip() != "*** End Patch":
        raise _fail(
            "bad_patch", "a patch starts with '*** Begin Patch' and ends with '*** End Patch'"
        )
    ops: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for n, line in enumerate(lines[1:-1], start=2):
        head = re.match(r"^\*\*\* (Add|Update|Delete) File: (.+)$", line)
        if head:
            cur = {
                "kind": head.group(1).lower(),
                "path": head.group(2).strip(),
                "lines": [],
                "hunks": [],
            }
            ops.append(cur)
            continue
        if cur is None:
            raise _fail(
                "bad_patch",
                f"line {n}: expected '*** Add File:', '*** Update File:' or '*** Delete "
                f"File:', got {line!r}",
            )
        if line.startswith("*** Move to: ") and cur["kind"] == "update":
            cur["move"] = line[len("*** Move to: ") :].strip()
        elif cur["kind"] == "add":
            if not line.startswith("+"):
                raise _fail("bad_patch", f"line {n}: every line of an added file starts with '+'")
            cur["lines"].append(line[1:])
        elif cur["kind"] == "update":
            if line.startswith("@@"):
                cur["hunks"].append([])
            elif line == "*** End of File":
                continue
            elif line[:1] in (" ", "-", "+") or line == "":
                if not cur["hunks"]:
                    cur["hunks"].append([])
                cur["hunks"][-1].append((line[:1] or " ", line[1:]))
            else:
                raise _fail(
                    "bad_patch", f"line {n}: a hunk line starts with ' ', '-' or '+', got {line!r}"
                )
        else:
            raise _fail("bad_patch", f"line {n}: a deleted file has no body")
    if not ops:
        raise _fail("bad_patch", "the patch changes no file")
    return ops


def _apply_hunks(text: str, hunks: list[list[tuple[str, str]]], path: str) -> str:
    had_newline = text.endswith("\n")
    lines = text.split("\n")
    if had_newline:
        lines.pop()
    pos = 0
    for h in hunks:
        old = [t for k, t in h if k in (" ", "-")]
        new = [t for k, t in h if k in (" ", "+")]
        at = _find(lines, old, pos)
        if at < 0:
            at = _find([x.rstrip() for x in lines], [x.rstrip() for x in old], pos)
        if at < 0:
            preview = "\n".join(old[:3])
            raise _fail(
                "no_match",
                f"a hunk of the patch for {path!r} does not match the file (looking for "
                f"{preview!r}); read it again",
            )
        lines[at : at + len(old)] = new
        pos = at + len(new)
    return "\n".join(lines) + ("\n" if had_newline else "")


def _find(lines: list[str], seq: list[str], start: int) -> int:
    if not seq:
        return len(lines)
    for i in range(start, len(lines) - len(seq) + 1):
        if lines[i : i + len(seq)] == seq:
            return i
    for i in range(0, min(start, len(lines) - len(seq) + 1)):
        if lines[i : i + len(seq)] == seq:
            return i
    return -1


def list_(env: Env, path: Json = ".") -> Result:
    """The entries of a folder: ``name``, ``type`` (file, folder, link) and ``size``."""
    full = _resolve(path, must_exist=True)
    if not os.path.isdir(full):
        raise _fail("not_a_folder", f"{path!r} is a file; use read")
    entries = []
    for e in sorted(os.scandir(full), key=lambda e: e.name):
        kind = "link" if e.is_symlink() else "folder" if e.is_dir() else "file"
        entries.append(
            {
                "name": e.name,
                "type": kind,
                "size": e.stat(follow_symlinks=False).st_size if kind == "file" else None,
            }
        )
    return {
        "path": _rel(full),
        "entries": entries[:MATCH_LIMIT],
        "truncated": len(entries) > MATCH_LIMIT,
    }


def _glob_match(rel: str, pattern: str) -> bool:
    rx = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            rx += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            rx += ".*"
            i += 2
        else:
            c = pattern[i]
            rx += "[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c)
            i += 1
    return re.fullmatch(rx, rel) is not None


def glob_(env: Env, pattern: Json) -> Result:
    """Files of the workspace whose relative path matches ``pattern`` (``**`` crosses folders)."""
    if (
        not isinstance(pattern, str)
        or not pattern
        or pattern.startswith("/")
        or ".." in pattern.split("/")
    ):
        raise _fail("invalid", "pattern must be a relative glob such as '**/*.csv'")
    hits = [r for r in (_rel(f) for f in _walk(_State.root)) if _glob_match(r, pattern)]
    return {"pattern": pattern, "paths": hits[:MATCH_LIMIT], "truncated": len(hits) > MATCH_LIMIT}


def grep(env: Env, pattern: Json, path: Json = ".", glob: Json = "") -> Result:
    """Lines matching the regular expression ``pattern`` under ``path``."""
    try:
        rx = re.compile(pattern)
    except (re.error, TypeError) as exc:
        raise _fail("invalid", f"pattern is not a regular expression: {exc}") from None
    full = _resolve(path, must_exist=True)
    files = _walk(full) if os.path.isdir(full) else [full]
    matches: list[dict[str, Any]] = []
    total = 0
    for f in files:
        rel = _rel(f)
        if (
            ".git" in rel.split("/")[:-1] and not glob
        ):  # git's own files are not searched unless asked for
            continue
        if os.path.islink(f) or (
            glob and not (_glob_match(rel, glob) or fnmatch.fnmatch(os.path.basename(rel), glob))
        ):
            continue
        try:
            with open(f, encoding="utf-8") as fh:
                for n, line in enumerate(fh, start=1):
                    if rx.search(line):
                        total += 1
                        if len(matches) < MATCH_LIMIT:
                            matches.append(
                                {"path": rel, "line": n, "text": line.rstrip("\n")[:500]}
                            )
        except (UnicodeDecodeError, OSError):
            continue
    return {
        "pattern": pattern,
        "matches": matches,
        "count": total,
        "truncated": total > MATCH_LIMIT,
    }


SPAWN_RETRY = 1.0
"""Longest pause ``exec`` takes between tries to start its shell while the process limit is full
(EAGAIN): 0.01 s, doubling, about 1.3 s in all."""


def exec_(env: Env, command: Json, timeout: Json = EXEC_TIMEOUT) -> Result:
    """Run ``bash -c command`` in the workspace; ``exit_code`` 124 and ``timed_out`` when it ran too
    long."""
    if not isinstance(command, str) or not command.strip():
        raise _fail("invalid", "command must be a non-empty shell command")
    try:
        limit = min(float(timeout), 600.0)
    except (TypeError, ValueError):
        raise _fail("invalid", "timeout must be a number of seconds") from None
    return _run(command, limit)


def _shell_env() -> dict[str, str]:
    root = _State.root
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": root,
        "PWD": root,
        "TMPDIR": os.environ.get("TMPDIR") or root,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        CLOCK_ENV: "real",
        "PYTHONDONTWRITEBYTECODE": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "envkernel",
        "GIT_AUTHOR_EMAIL": "agent@example.com",
        "GIT_COMMITTER_NAME": "envkernel",
        "GIT_COMMITTER_EMAIL": "agent@example.com",
        "GIT_AUTHOR_DATE": GIT_DATE,
        "GIT_COMMITTER_DATE": GIT_DATE,
        "XDG_CONFIG_HOME": os.path.join(root, ".config"),
    }


def _spawn(command: str) -> subprocess.Popen[bytes]:
    """Start ``bash -c command`` in its own process group, trying again while the process limit is
    full."""
    pause = 0.01
    while True:
        try:
            return subprocess.Popen(
                ["bash", "-c", command],
                cwd=_State.root,
                env=_shell_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except BlockingIOError as exc:
            # EAGAIN: the process limit is full of an earlier call's killed processes, which the
            # sandbox's init may not have reaped yet (a fork bomb's, in a container): try again
            # shortly
            if pause > SPAWN_RETRY:
                raise _fail(
                    "exec_failed",
                    f"cannot start bash: {exc} (the sandbox's process limit stayed full)",
                ) from None
            time.sleep(pause)
            pause *= 2
        except OSError as exc:
            raise _fail("exec_failed", f"cannot start bash: {exc}") from None


class _Capture:
    """A process's stdout and stderr, each capped at ``OUTPUT_LIMIT`` bytes (the rest counted)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.out: dict[Any, bytearray] = {proc.stdout: bytearray(), proc.stderr: bytearray()}
        self.dropped: dict[Any, int] = {proc.stdout: 0, proc.stderr: 0}

    def read(self, deadline: float) -> bool:
        """Read until the pipes close (or shortly after the process exits: a background process
        may hold them) and the process ends; True when the deadline came first."""
        proc = self.proc
        sel = selectors.DefaultSelector()
        try:
            for f in self.out:
                sel.register(f, selectors.EVENT_READ)
            if self._drain(sel, deadline):
                return True
            try:
                proc.wait(max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                return True
            return False
        finally:
            sel.close()

    def _drain(self, sel: selectors.BaseSelector, deadline: float) -> bool:
        """Read the pipes; True when the deadline passed."""
        exited_at = None
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            if exited_at is None and self.proc.poll() is not None:
                # a background process may hold the pipes: read what is there, then stop
                exited_at = time.monotonic()
            elif exited_at is not None and time.monotonic() - exited_at > 0.05:
                return False
            for key, _ in sel.select(min(left, 0.05)):
                self._take(sel, key)
        return False

    def _take(self, sel: selectors.BaseSelector, key: selectors.SelectorKey) -> None:
        chunk = os.read(key.fd, 1 << 16)
        if not chunk:
            sel.unregister(key.fileobj)
            return
        buf = self.out[key.fileobj]
        room = OUTPUT_LIMIT - len(buf)
        buf += chunk[:room]
        self.dropped[key.fileobj] += max(0, len(chunk) - room)

    def close(self) -> None:
        """Kill what the process left running in its group, reap it, close the pipes."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # what it left running in its group
        except OSError:
            pass
        self.proc.wait()
        for f in self.out:
            f.close()

    def result(self, timed_out: bool, timeout: float) -> Result:
        """The call's result: exit code, the output, what timed out or was cut."""
        proc, out, dropped = self.proc, self.out, self.dropped
        result: Result = {
            "exit_code": 124 if timed_out else proc.returncode,
            "stdout": out[proc.stdout].decode("utf-8", "replace"),
            "stderr": out[proc.stderr].decode("utf-8", "replace"),
        }
        if timed_out:
            result["timed_out"] = True
            result["stderr"] += (
                f"\n[envkernel: the command ran longer than {timeout:g} s and was killed]"
            )
        if dropped[proc.stdout] or dropped[proc.stderr]:
            result["truncated"] = {"stdout": dropped[proc.stdout], "stderr": dropped[proc.stderr]}
        return result


def _run(command: str, timeout: float) -> Result:
    """``bash -c`` in its own process group with capped output; the group is killed afterwards
    (and the executor kills every other process the call left, see ``_Forks``)."""
    proc = _spawn(command)
    if _State.spawned is not None:
        _State.spawned(proc.pid)
    capture = _Capture(proc)
    deadline = time.monotonic() + timeout
    try:
        timed_out = capture.read(deadline)
    finally:
        capture.close()
    return capture.result(timed_out, timeout)


# --------------------------------------------------------------------------- the reward side


def apply_final(env: Env, rows: Json, tables: Json = None) -> Result:
    """Turn the loaded initial workspace into a rollout's final one: apply its diff ``rows`` (and
    replace the app tables with ``tables``). Returns the paths it could not rebuild (too large)."""
    missing = []
    for row in rows or []:
        full = _resolve(row["path"])
        if row.get("change") == "removed":
            if os.path.lexists(full):
                os.unlink(full)
            continue
        if os.path.lexists(full):
            os.unlink(full)
        if row.get("link") is not None:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            os.symlink(row["link"], full)
        elif row.get("text") is not None:
            _write_bytes(full, row["text"].encode("utf-8"))
        elif row.get("data") is not None:
            _write_bytes(full, base64.b64decode(row["data"]))
        else:
            missing.append(row["path"])
    for table, trows in (tables or {}).items():
        if table == TABLE:
            continue
        q = '"' + str(table).replace('"', '""') + '"'
        env.db.execute(f"DELETE FROM {q}")
        for r in trows:
            cols = ", ".join('"' + str(c).replace('"', '""') + '"' for c in r)
            env.db.execute(
                f"INSERT INTO {q} ({cols}) VALUES ({', '.join('?' for _ in r)})", tuple(r.values())
            )
    return {"missing": missing}


def _real_clock() -> None:
    """In the check's child only: the real clock (UTC) for ``time`` and ``datetime``, the one
    ``exec``'s ``date`` and the files' mtimes see, so "today" is the same day for agent and
    grader."""
    os.environ["TZ"], os.environ[CLOCK_ENV] = "UTC", "real"
    if hasattr(time, "tzset"):
        time.tzset()
    for name, fn in _REAL_CLOCK.items():
        setattr(time, name, fn)
    _dt.datetime, _dt.date = _REAL_DATETIME, _REAL_DATE  # type: ignore[misc]  # undo the frozen clock's patch


def run_check(env: Env, script: Json, transcript: Json = None, timeout: Json = 20.0) -> Result:
    """Run ``grade(transcript, workspace_path)`` from ``script`` in a forked child; returns
    ``{"scores": {criterion: score}}`` or ``{"error": ...}`` (never raises for the script's faults).
    A ``grade`` with a third parameter also gets the app's tables: ``{table: [row, ...]}``."""
    tables = {}
    for r in env.db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY name"
    ).fetchall():
        q = '"' + r["name"].replace('"', '""') + '"'
        tables[r["name"]] = env.db.execute(f"SELECT * FROM {q} ORDER BY rowid").fetchall()
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run the check, write one JSON line, exit without returning
        code = 0
        try:
            os.close(rfd)
            _real_clock()
            scope: dict[str, Any] = {"__name__": "envkernel_check", "__builtins__": __builtins__}
            exec(compile(script, "check.py", "exec"), scope)
            grade = scope["grade"]
            wants_state = grade.__code__.co_argcount >= 3
            scores = (
                grade(transcript or [], _State.root, tables)
                if wants_state
                else grade(transcript or [], _State.root)
            )
            clean = {str(k): float(v) for k, v in dict(scores).items()}
            payload: dict[str, Any] = {"scores": clean}
        except BaseException as exc:
            payload = {"error": f"{type(exc).__name__}: {exc}"}
            code = 1
        try:
            os.write(wfd, json.dumps(payload).encode())
        finally:
            os._exit(code)
    os.close(wfd)
    chunks, deadline = [], time.monotonic() + float(timeout)
    sel = selectors.DefaultSelector()
    sel.register(rfd, selectors.EVENT_READ)
    try:
        while time.monotonic() < deadline:
            if sel.select(0.2):
                chunk = os.read(rfd, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        else:
            os.kill(pid, signal.SIGKILL)
            return {"error": f"the check did not finish within {timeout:g} s"}
    finally:
        sel.close()
        os.close(rfd)
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass
    try:
        return json.loads(b"".join(chunks) or b"{}") or {
            "error": "the check exited without a result"
        }
    except ValueError:
        return {"error": "the check wrote something that is not JSON"}
