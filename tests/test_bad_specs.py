"""A spec file that cannot be used is the user's input error (issue 32, point 4): ``envkernel run
--source SPEC`` and ``envkernel env serve --spec SPEC`` check it before anything runs and exit 2
with the file and the line, no traceback, and no run folder (so nothing in failures.jsonl)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest

from envkernel.errors import EXIT_USAGE
from envkernel_openapi import check_source, corpus_files, synthesize_file

pytestmark = pytest.mark.timeout(300)

BAD = {
    "malformed.yaml": (
        "openapi: 3.0.0\ninfo: {title: x, version: '1'}\npaths:\n  /a:\n    get: [\n",
        "malformed.yaml: not valid YAML at line 6",
    ),
    "malformed.json": (
        '{"openapi": "3.0.0",\n "paths": {\n',
        "malformed.json: not valid JSON at line",
    ),
    "empty.yaml": ("\n\n", "empty.yaml: the file is empty"),
    "nopaths.yaml": (
        "openapi: 3.0.0\ninfo: {title: x, version: '1'}\npaths: {}\n",
        "nopaths.yaml:3: the document has no operations",
    ),
    "noops.yaml": (
        "openapi: 3.0.0\ninfo: {title: x, version: '1'}\npaths:\n  /a:\n    summary: nothing\n",
        "noops.yaml:3: the document has no operations",
    ),
}


def _write(folder: Path, name: str) -> Path:
    path = folder / name
    path.write_text(BAD[name][0])
    return path


@pytest.mark.parametrize("name", sorted(BAD))
@pytest.mark.parametrize("form", ["bare", "openapi:"])
def test_run_refuses_a_bad_spec_up_front(envk: Any, name: str, form: str) -> None:
    """Exit 2, the file and the line in one error line, no traceback, no run folder."""
    spec = _write(envk.cwd, name)
    source = str(spec) if form == "bare" else f"openapi:{spec}"
    proc = envk("run", "--no-progress", "--out", "out", "--source", source)
    assert proc.returncode == EXIT_USAGE, proc.stderr[-2000:]
    assert BAD[name][1] in proc.stderr and "Traceback" not in proc.stderr
    assert not (envk.cwd / "out").exists()  # nothing ran: no run folder, no failures.jsonl


def test_run_refuses_an_unreadable_spec(envk: Any) -> None:
    """A file that is not text (not UTF-8) cannot be read: exit 2, said so."""
    spec = envk.cwd / "binary.yaml"
    spec.write_bytes(b"\x80\x81\x82 not text")
    proc = envk("run", "--no-progress", "--out", "out", "--source", str(spec))
    assert proc.returncode == EXIT_USAGE and "binary.yaml: cannot read it" in proc.stderr
    assert "Traceback" not in proc.stderr and not (envk.cwd / "out").exists()


def test_a_folder_needs_one_usable_spec(tmp_path: Path) -> None:
    """A folder with one good spec among bad ones is fine up front (the bad ones are refused during
    the run, as before); a folder of bad ones only, or of none, is refused with each file's
    reason."""
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(next(f for f in corpus_files() if f.stem == "shop"), mixed / "shop.json")
    _write(mixed, "malformed.yaml")
    assert check_source(str(mixed)) is None
    bad = tmp_path / "bad"
    bad.mkdir()
    _write(bad, "malformed.yaml")
    _write(bad, "nopaths.yaml")
    problem = check_source(str(bad))
    assert problem is not None
    assert BAD["malformed.yaml"][1] in problem and BAD["nopaths.yaml"][1] in problem
    (tmp_path / "none").mkdir()
    assert "holds no .json, .yaml or .yml file" in (check_source(str(tmp_path / "none")) or "")


def test_env_serve_refuses_a_bad_spec(envk: Any) -> None:
    """``envkernel env serve ENV_DIR --spec BAD``: exit 2 with the file and the line."""
    env, _ = synthesize_file(
        next(f for f in corpus_files() if f.stem == "travel"), source="corpus:travel.json"
    )
    d = envk.cwd / "travel"
    d.mkdir()
    meta = msgspec.to_builtins(env)
    meta.pop("seed_sql")
    meta["behaviour"] = {"kind": "model", "file": "model.json"}
    (d / "env.json").write_text(json.dumps(meta))
    (d / "model.json").write_text(json.dumps(env.behaviour.model))
    spec = _write(envk.cwd, "malformed.yaml")
    proc = envk("env", "serve", str(d), "--http", "127.0.0.1:0", "--spec", str(spec))
    assert proc.returncode == EXIT_USAGE, proc.stderr[-2000:]
    assert BAD["malformed.yaml"][1] in proc.stderr and "Traceback" not in proc.stderr
