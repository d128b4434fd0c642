"""Reading a model's reply: the fenced files it wrote, and what is wrong with them.

A reply names each file in the fence's info string (```` ```python env.py ````); a fence without a
name is matched by its language (``sql`` → ``seed.sql``, ``python`` → ``env.py``). A fence that is
never closed, or a reply cut by ``finish_reason: length``, is *truncated*. Nothing here executes
the model's code: ``env.py`` is only parsed (:func:`ast.parse`) to find its functions and what it
imports; it runs in a sandbox alone.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

import msgspec

from envkernel_schemas import ToolSpec

__all__ = ["Candidate", "Draft", "ReplyProblem", "code_findings", "parse_files", "tools_from"]

FILES = ("seed.sql", "tools.json", "env.py", "scenarios.json")
"""The files of a candidate environment, in the order the model writes them."""

_BY_LANG = {"sql": "seed.sql", "sqlite": "seed.sql", "python": "env.py", "py": "env.py"}
_FENCE = re.compile(r"^[ \t]*```[ \t]*([^\n`]*)\n", re.M)

NETWORK_MODULES = frozenset(
    {
        "socket",
        "ssl",
        "urllib",
        "http",
        "requests",
        "httpx",
        "aiohttp",
        "ftplib",
        "smtplib",
        "telnetlib",
    }
)
"""Imports that mean the code wants the network."""
HOST_MODULES = frozenset(
    {
        "subprocess",
        "shutil",
        "pathlib",
        "glob",
        "ctypes",
        "multiprocessing",
        "importlib",
        "pty",
        "signal",
    }
)
"""Imports that mean the code wants host processes or files."""


class ReplyProblem(Exception):
    """A reply the synthesizer cannot use: ``kind`` is ``malformed`` or ``truncated``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def parse_files(text: str, *, truncated: bool = False) -> dict[str, str]:
    """The files in a reply, by name. Raises :class:`ReplyProblem` for an unclosed fence (or
    ``truncated``, the server's ``finish_reason: length``) and for a reply with no fence."""
    if truncated:
        raise ReplyProblem(
            "truncated",
            "the reply was cut off (finish_reason 'length'): write shorter code, or fewer "
            "files per reply",
        )
    files: dict[str, str] = {}
    pos = 0
    while True:
        m = _FENCE.search(text, pos)
        if m is None:
            break
        info = m.group(1).strip().split()
        end = text.find("\n```", m.end() - 1)
        if end < 0:
            name = _name(info) or "a file"
            raise ReplyProblem(
                "truncated",
                f"the reply ends inside the code block of {name} (no closing ```): it was cut off",
            )
        body = text[m.end() : end + 1]
        name = _name(info)
        if name:
            files[name] = body
        pos = text.find("\n", end + 4)
        if pos < 0:
            break
    if not files:
        raise ReplyProblem(
            "malformed",
            "the reply has no fenced code block naming one of "
            + ", ".join(FILES)
            + " (write e.g. ```python env.py ... ```)",
        )
    return files


def _name(info: list[str]) -> str:
    for word in reversed(info):
        if word in FILES:
            return word
    if info:
        lang = info[0].lower()
        if lang in _BY_LANG:
            return _BY_LANG[lang]
    return ""


def _json(text: str, name: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ReplyProblem("malformed", f"{name} is not valid JSON: {exc}") from None


def tools_from(text: str) -> tuple[list[ToolSpec], dict[str, list[str]]]:
    """``tools.json`` as ToolSpecs and the generated fields
    (``{"tools": [...], "generated": {...}}`` or a bare list). Raises :class:`ReplyProblem` saying
    what is wrong."""
    data = _json(text, "tools.json")
    generated: Any = {}
    if isinstance(data, dict):
        generated = data.get("generated") or {}
        data = data.get("tools")
    if not isinstance(data, list) or not data:
        raise ReplyProblem(
            "malformed", 'tools.json must be a non-empty list of tools, or {"tools": [...]}'
        )
    try:
        tools = msgspec.convert(data, list[ToolSpec])
        gen = msgspec.convert(generated, dict[str, list[str]])
    except msgspec.ValidationError as exc:
        raise ReplyProblem(
            "malformed",
            "tools.json does not fit the tool format (name, description, parameters, "
            f"returns, mutates): {exc}",
        ) from None
    names = [t.name for t in tools]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ReplyProblem("malformed", f"tools.json names a tool twice: {', '.join(dup)}")
    bad = [n for n in names if not n.isidentifier() or n.startswith("_")]
    if bad:
        raise ReplyProblem(
            "malformed",
            f"tool names must be Python identifiers not starting with '_': {', '.join(bad)}",
        )
    return tools, gen


@dataclass
class Findings:
    """What parsing ``env.py`` found (it is never run here)."""

    functions: dict[str, list[str]] = field(default_factory=dict)
    """Public top-level functions and their parameter names."""
    network: list[str] = field(default_factory=list)
    """Imports that reach for the network."""
    host: list[str] = field(default_factory=list)
    """Imports or calls that reach for host processes or files (``open``, ``os.system``...)."""


def code_findings(source: str) -> Findings:
    """Parse ``env.py``; raises :class:`ReplyProblem` on a syntax error (often a cut-off reply)."""
    try:
        tree = ast.parse(source, "env.py")
    except SyntaxError as exc:
        line = (exc.text or "").strip()
        raise ReplyProblem(
            "malformed",
            f"env.py has a syntax error at line {exc.lineno}: {exc.msg}"
            + (f" ({line[:80]!r})" if line else ""),
        ) from None
    out = Findings()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith(
            "_"
        ):
            out.functions[node.name] = [a.arg for a in node.args.args + node.args.kwonlyargs]
    for node in ast.walk(tree):
        mods: list[str] = []
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            mods = [node.module]
        for mod in mods:
            top = mod.split(".")[0]
            if top in NETWORK_MODULES:
                out.network.append(f"import {mod}")
            elif top in HOST_MODULES:
                out.host.append(f"import {mod}")
        if isinstance(node, ast.Call):
            fn = node.func
            name = (
                fn.id
                if isinstance(fn, ast.Name)
                else (
                    f"{getattr(fn.value, 'id', '?')}.{fn.attr}"
                    if isinstance(fn, ast.Attribute)
                    else ""
                )
            )
            if name in {
                "open",
                "exec",
                "eval",
                "__import__",
                "os.system",
                "os.popen",
                "os.remove",
                "os.listdir",
                "os.open",
                "os.fork",
            }:
                out.host.append(f"{name}()")
    return out


@dataclass
class Draft:
    """The files of the candidate so far (a repair reply replaces the files it contains)."""

    files: dict[str, str] = field(default_factory=dict)

    def update(self, files: dict[str, str]) -> list[str]:
        """Take the files of a reply; returns the names replaced or added."""
        self.files.update(files)
        return sorted(files)

    def missing(self) -> list[str]:
        """Files not written yet."""
        return [f for f in FILES if not self.files.get(f, "").strip()]


@dataclass
class Candidate:
    """A complete, parsed candidate: ready to run in a sandbox."""

    seed_sql: str
    tools: list[ToolSpec]
    generated: dict[str, list[str]]
    code: str
    scenarios: list[dict[str, Any]]
    findings: Findings
    name: str = ""
    """The environment's name, from tools.json (optional)."""
    description: str = ""
    """Its description, from tools.json (optional)."""

    @classmethod
    def from_draft(cls, draft: Draft) -> Candidate:
        """Parse every file; raises :class:`ReplyProblem` naming the first problem."""
        missing = draft.missing()
        if missing:
            raise ReplyProblem("malformed", f"still missing: {', '.join(missing)}")
        tools, generated = tools_from(draft.files["tools.json"])
        findings = code_findings(draft.files["env.py"])
        scen = _json(draft.files["scenarios.json"], "scenarios.json")
        if isinstance(scen, dict):
            scen = scen.get("scenarios")
        if (
            not isinstance(scen, list)
            or not scen
            or not all(isinstance(s, dict) and isinstance(s.get("steps"), list) for s in scen)
        ):
            raise ReplyProblem(
                "malformed",
                'scenarios.json must be a non-empty list of {"name", "steps": [...], '
                '"state": [...]}',
            )
        meta = _json(draft.files["tools.json"], "tools.json")
        meta = meta if isinstance(meta, dict) else {}
        return cls(
            draft.files["seed.sql"],
            tools,
            generated,
            draft.files["env.py"],
            scen,
            findings,
            str(meta.get("name") or "")[:80],
            str(meta.get("description") or "")[:500],
        )
