"""Meta-tests (as datasette has): every hook in envkernel/hookspecs.py is documented in
docs/hooks.md and exercised by some test."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from envkernel import hookspecs

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "hooks.md"


def _hooks() -> list[str]:
    return sorted(
        name
        for name, fn in vars(hookspecs).items()
        if inspect.isfunction(fn) and hasattr(fn, f"{hookspecs.PROJECT}_spec")
    )


def test_there_are_hooks() -> None:
    hooks = _hooks()
    assert "register_samplers" in hooks and "register_commands" in hooks
    assert set(hookspecs.ROLE_HOOKS.values()) <= set(hooks)
    for name in hooks:
        assert (getattr(hookspecs, name).__doc__ or "").strip(), f"hook {name} has no docstring"


@pytest.mark.xfail(not DOC.exists(), reason="docs/hooks.md is not written yet", strict=False)
@pytest.mark.parametrize("hook", _hooks())
def test_hook_is_documented(hook: str) -> None:
    text = DOC.read_text()
    assert re.search(rf"^#+ .*`{hook}\(", text, re.M), f"docs/hooks.md has no section for {hook}"


@pytest.mark.parametrize("hook", _hooks())
def test_hook_is_exercised_by_a_test(hook: str) -> None:
    me = Path(__file__).resolve()
    sources = [p for p in ROOT.joinpath("tests").rglob("*.py") if p.resolve() != me]
    sources += [p for p in ROOT.glob("plugins/*/tests/*.py")] + [
        p for p in ROOT.glob("kernel/tests/*.py")
    ]
    users = [p for p in sources if hook in p.read_text(errors="replace")]
    assert users, f"no test mentions {hook}"
