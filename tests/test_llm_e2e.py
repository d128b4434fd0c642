"""End to end: ``envkernel run --plugins +llm --source brief:...`` against a scripted writer model.

The server (:class:`envkernel_kit.scripted.ScriptedServer` with
:class:`envkernel_llm.playbook.Playbook`) stands in for a model, in this process on loopback;
``envkernel run`` is a subprocess. Three briefs: one written right the first time, one with a bug
the scenarios catch and the model fixes, one that stays wrong (rejected by the synthesizer, recorded
with its reason and provenance).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envkernel_kit.scripted import ScriptedServer

pytest.importorskip("envkernel_llm")
from envkernel_llm.playbook import Playbook

ENVKERNEL = str(Path(sys.executable).with_name("envkernel"))


def test_llm_environments_flow_through_the_pipeline_with_yield_and_cost(tmp_path: Path) -> None:
    rules = {"(sloppy)": "always_buggy", "bank": "bug_then_fix"}
    with ScriptedServer(Playbook(rules)) as srv:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENVKERNEL_"))}
        env.update(
            ENVKERNEL_LLM_BASE_URL=srv.base_url,
            ENVKERNEL_LLM_MODEL="scripted-writer",
            OPENAI_API_KEY="sk-llm-secret",
        )
        proc = subprocess.run(
            [
                ENVKERNEL,
                "run",
                "--out",
                str(tmp_path),
                "--run-id",
                "llm",
                "--no-progress",
                "--timeout",
                "200",
                "--plugins",
                "+llm",
                "--set",
                "llm.max_rounds=2",
                "--set",
                "chains.tasks_per_env=4",
                "--source",
                "brief:A lending library: books, members and loans.",
                "--source",
                "brief:A small bank: accounts and transfers.",
                "--source",
                "brief:A library (sloppy) of books and loans.",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=280,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "llm"
    s = json.loads((run / "summary.json").read_text())
    y = s["synthesis"]["brief"]
    assert (
        y["asked"],
        y["verified"],
        y["verified_first_round"],
        y["verified_after_repair"],
        y["rejected"],
    ) == (3, 2, 1, 1, 1)
    assert (
        y["rejected_by_reason"] == {"scenarios_failed": 1}
        and s["rejected"]["env:scenarios_failed"] == 1
    )
    assert y["tokens_per_verified_env"] > 0 and y["seconds_per_verified_env"] > 0
    assert y["first_round_pass_rate"] == pytest.approx(1 / 3, abs=1e-3) and y[
        "pass_rate_after_repair"
    ] == pytest.approx(2 / 3, abs=1e-3)
    assert s["tasks"] > 0 and s["failures"] == 0
    # each verified env records its provenance in env.json; the rejected one in rejected.json
    bank = json.loads((run / "envs" / "llm-small-bank-accounts-1" / "env.json").read_text())
    p = bank["provenance"]
    assert (
        p["plugin"] == "llm"
        and p["model"] == "scripted-writer"
        and p["rounds"] == 2
        and p["tokens"] > 0
    )
    assert p["details"]["rounds"][0]["reason"] == "scenarios_failed" and p["details"][
        "brief"
    ].startswith("A small bank")
    assert (run / "envs" / "llm-small-bank-accounts-1" / "env.py").read_text().startswith("#")
    rej = json.loads((run / "envs" / "llm-library-sloppy-books-2" / "rejected.json").read_text())
    assert (
        rej["reason"] == "scenarios_failed"
        and rej["provenance"]["rounds"] == 2
        and rej["report"]["failures"]
    )
    assert not any(b"sk-llm-secret" in f.read_bytes() for f in run.rglob("*") if f.is_file())
