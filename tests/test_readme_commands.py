"""The suite brings every command the README names (issue 32 item 5): each ``envkernel CMD`` in
README.md is a built-in command or one a plugin declares, and that plugin's distribution is a
dependency of ``envkernel-suite``."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

from envkernel.cli import BUILTIN_LAZY, cli

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> set[str]:
    """The command names in README's code and inline code (``envkernel NAME``)."""
    text = (ROOT / "README.md").read_text()
    code = "\n".join(re.findall(r"```.*?```", text, re.S) + re.findall(r"`[^`\n]+`", text))
    return set(re.findall(r"\benvkernel ([a-z][a-z-]+)\b", code))


def test_every_readme_command_comes_with_the_suite() -> None:
    suite = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    bundled = {re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0] for d in suite}
    declared = {}
    for ep in entry_points(group="envkernel.commands"):
        assert ep.dist is not None
        declared[ep.name] = ep.dist.metadata["Name"]
    builtin = set(cli.commands) | set(BUILTIN_LAZY)
    named = readme_commands()
    assert {"run", "serve", "report", "sandbox", "install"} <= named
    for cmd in sorted(named):
        assert cmd in builtin or cmd in declared, f"README names `envkernel {cmd}`: no such command"
        if cmd in declared:
            assert declared[cmd] in bundled, f"`envkernel {cmd}` needs {declared[cmd]}"
