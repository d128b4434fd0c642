"""The code blocks of docs/writing-a-plugin.md run as written (issue 32 item 2).

The page's ``pyproject.toml``, ``src/envkernel_exact/__init__.py`` and ``tests/test_exact.py``
blocks are written to a folder as the page lays it out, the distribution is built and installed
for real (``uv pip install --target``, hatchling), and the page's own test file is run with
pytest: its unit tests, its conformance hint, and its whole run through the real ``envkernel run``
(a real nats-server and process sandboxes). The Python blocks are found by ``pytest-examples``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_examples import find_examples

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "writing-a-plugin.md"
LABELLED = re.compile(r"`([\w./-]+)`:\n\n```(\w+)\n(.*?)```", re.S)
"""A block under a line naming its file: `` `path`: ``."""


def page_files() -> dict[str, str]:
    """The files the page gives, by path; the Python ones as pytest-examples reads them."""
    text = PAGE.read_text()
    files = {m.group(1): m.group(3) for m in LABELLED.finditer(text)}
    python = {ex.source.strip() for ex in find_examples(PAGE)}
    for path, body in files.items():
        if path.endswith(".py"):
            assert body.strip() in python, f"{path}: not a Python block pytest-examples sees"
    return files


def test_the_page_gives_the_three_files() -> None:
    assert set(page_files()) == {
        "pyproject.toml",
        "src/envkernel_exact/__init__.py",
        "tests/test_exact.py",
    }


@pytest.mark.timeout(900)
def test_the_exact_plugin_of_the_page_builds_and_its_tests_pass(tmp_path: Path) -> None:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH: cannot build the page's distribution")
    dist = tmp_path / "envkernel-exact"
    for path, body in page_files().items():
        (dist / path).parent.mkdir(parents=True, exist_ok=True)
        (dist / path).write_text(body)
    site = tmp_path / "site"
    subprocess.run(
        [
            uv,
            "pip",
            "install",
            "--python",
            sys.executable,
            "--target",
            str(site),
            "--no-deps",
            str(dist),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=dist,
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "4 passed" in done.stdout, done.stdout[-2000:]
