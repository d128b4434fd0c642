"""docs/serve.md's client blocks run as written against a real ``envkernel serve`` (issue 32 item
2): the page's run (``envkernel run --source sample --out out --run-id demo``, in a temporary
folder), served in this process with process sandboxes; the plain-HTTP, ``envkernel.make`` and
openenv-core blocks are executed with the server's real port in place of the page's 8000 and, for
the HTTP block, one of the run's task ids as ``task_id``. pytest-examples finds the blocks;
``async with`` / ``await`` at the top level runs as the page shows it (an asyncio REPL would).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from pytest_examples import find_examples

from envkernel_kit.checks import process_runner
from envkernel_serve.catalog import load_catalog
from envkernel_serve.server import RunnerSandboxes, ServeSettings, start

PAGE = Path(__file__).resolve().parents[1] / "docs" / "serve.md"


def block(first_line: str) -> str:
    """The page's Python block that starts with ``first_line``."""
    for ex in find_examples(PAGE):
        if ex.source.lstrip().startswith(first_line):
            return ex.source
    raise AssertionError(f"serve.md has no Python block starting {first_line!r}")


@pytest.fixture(scope="module")
def demo(envk_factory: Any) -> Path:
    """The page's run: ``envkernel run --source sample --out out --run-id demo``."""
    envk = envk_factory("servedocs")
    run = envk.run(run_id="demo", timeout=300)
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    return run.dir


@pytest.fixture(scope="module")
def url(demo: Path) -> Any:
    running = start(
        load_catalog(demo), RunnerSandboxes(process_runner()), ServeSettings(port=0, warm=0)
    )
    yield running.url.rstrip("/")
    running.stop()


def run_block(source: str, names: dict[str, Any]) -> dict[str, Any]:
    """Execute a block, top-level ``await`` allowed; return its globals."""
    code = compile(source, str(PAGE), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    scope = dict(names)
    done = eval(code, scope)
    if asyncio.iscoroutine(done):
        asyncio.run(done)
    return scope


def printed(capsys: pytest.CaptureFixture[str]) -> str:
    """The block's last printed line (the server in this process logs to stdout too)."""
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln and "[info" not in ln]
    return lines[-1] if lines else ""


def test_the_http_block(url: str, demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task_id = json.loads((demo / "tasks.jsonl").read_text().splitlines()[0])["id"]
    src = block("import httpx").replace("http://127.0.0.1:8000", url)
    scope = run_block(src, {"task_id": task_id})
    assert scope["end"]["done"] is True
    reward, steps = printed(capsys).split()
    assert 0.0 <= float(reward) <= 1.0 and int(steps) == 1  # the tool call (the submit ends it)


def test_the_gymnasium_make_block(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with contextlib.chdir(demo.parent.parent):  # the page's `out/demo`
        scope = run_block(block("import envkernel"), {})
    assert scope["terminated"] is True
    assert printed(capsys).split()[0] == "True"


def test_the_openenv_block(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("openenv")
    src = block("from openenv.core.generic_client").replace("http://127.0.0.1:8000", url)
    scope = run_block(src, {})
    assert scope["tools"] and "product" in scope
    assert printed(capsys)
