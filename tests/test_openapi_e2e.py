"""End to end: ``envkernel run --source openapi:FOLDER`` through synthesis, verification, chains and
the gate."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envkernel_openapi import corpus_files

pytest.importorskip("envkernel_process")
ENVKERNEL = str(Path(sys.executable).with_name("envkernel"))


def test_run_on_user_specs_with_a_broken_one(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    for f in corpus_files():
        if f.stem in ("shop", "bank"):
            shutil.copy(f, specs / f.name)
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "openapi: 3.0.0\ninfo: {title: bad}\npaths:\n  /things: {get: {responses: oops}}\n"
    )
    out = tmp_path / "out"
    cmd = [
        ENVKERNEL,
        "run",
        "--out",
        str(out),
        "--run-id",
        "oa",
        "--no-progress",
        "--timeout",
        "240",
        "--plugins",
        "+openapi",
        "--source",
        f"openapi:{specs}",
        "--source",
        f"openapi:{bad}",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENVKERNEL_"))}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    folder = out / "oa"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["envs_verified"] == 2, proc.stderr[-3000:]
    assert summary["tasks"] > 0 and summary["mean_reward"] == 1.0
    failures = [json.loads(x) for x in (folder / "failures.jsonl").read_text().splitlines()]
    spec_failures = [f for f in failures if f["plugin"] == "openapi"]
    assert len(spec_failures) == 1
    assert "bad.yaml: at $.paths./things.get.responses" in spec_failures[0]["message"]
    for eid in ("shop", "bank"):
        meta = json.loads((folder / "envs" / eid / "env.json").read_text())
        assert meta["report"]["kept"] and meta["report"]["tools_dropped"] == {}
        assert meta["behaviour"] == {"kind": "model", "file": "model.json"}
        assert (folder / "envs" / eid / "model.json").exists()
        assert (
            meta["operations"] == len(meta["tools"]) + sum(meta["skipped"].values()) > 0
        )  # every operation is accounted for
    tasks = [json.loads(x) for x in (folder / "tasks.jsonl").read_text().splitlines()]
    assert {t["env_id"] for t in tasks} == {"shop", "bank"}
    for eid in (
        "shop",
        "bank",
    ):  # summary.json and the printed line report operations, tools and tasks per environment
        v = summary["verification"][eid]
        assert v["operations"] >= v["tools_built"] >= v["tools_kept"] > 0 and v["dropped"] == {}
        assert v["tasks"] == sum(t["env_id"] == eid for t in tasks) > 0
        assert (
            f"env {eid}: kept, {v['tools_kept']} tools kept of {v['operations']} operations, "
            f"{v['tasks']} tasks" in proc.stderr
        )
