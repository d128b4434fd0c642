"""The online loop end to end on a tiny random Llama: ``envkernel run --plugins +openai --remote
trainer:trl --policy openai --iterations 2`` against a real ``envkernel_trl.server``, with the
real ``trl`` trainer in an ``envkernel worker`` of the trainers venv. Nothing is stubbed: the
policy's turns are the tiny model's, the trainer trains it (LoRA, CPU), the policy loads each
adapter through the server's ``/load_lora_adapter``, and the report draws the curves."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
VENV = Path(os.environ.get("ENVKERNEL_TRAINERS_VENV", ROOT / ".venv-trainers"))
HERE = Path(__file__).parent
ENVKERNEL = str(Path(sys.executable).with_name("envkernel"))
HOLDOUT = "shop-v1"
"""The sample shop: never trained on (the trainer learns from the travel environment only)."""


def _trainers_python() -> Path:
    python = VENV / "bin" / "python"
    if not (python.exists() and (VENV / "bin" / "envkernel").exists()):
        pytest.skip(f"the trainers venv {VENV} is not installed: run scripts/install-trainers.sh")
    probe = "import torch, transformers, peft, trl, envkernel_trl"
    if subprocess.run([str(python), "-c", probe], check=False).returncode:
        pytest.skip(f"{VENV} lacks torch, transformers, peft, trl or envkernel_trl")
    return python


def _wait(proc: subprocess.Popen[str], log: Path, pattern: str, timeout: float) -> re.Match[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, log.read_text() if log.exists() else "")
        if found:
            return found
        assert proc.poll() is None, f"exited {proc.returncode}:\n{log.read_text()[-3000:]}"
        time.sleep(0.1)
    raise AssertionError(f"{pattern!r} not in {log} within {timeout} s")


def _start(cmd: list[str], log: Path, **env: str) -> subprocess.Popen[str]:
    with log.open("w") as f:
        return subprocess.Popen(
            cmd,
            stdout=f,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1", **env},
        )


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def loop(tmp_path: Path, envkernel_nats: str) -> Iterator[dict[str, Any]]:
    """The tiny model served, the trainer's worker serving: their URLs and folders."""
    python = _trainers_python()
    base = tmp_path / "tiny"
    subprocess.run(
        [str(python), str(HERE / "tiny_loop.py"), "--base-only", str(base)],
        check=True,
        capture_output=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    server_log, worker_log = tmp_path / "server.log", tmp_path / "worker.log"
    server = _start(
        [str(python), "-m", "envkernel_trl.server", "--model", str(base), "--name", "base"]
        + ["--device", "cpu", "--port", "0"],
        server_log,
    )
    worker = _start(
        [str(VENV / "bin" / "envkernel"), "--json-logs", "worker", "--plugins", "trl"]
        + ["--nats-url", envkernel_nats],
        worker_log,
    )
    try:
        url = _wait(server, server_log, r"serving base on (http://\S+/v1)", 600).group(1)
        _wait(worker, worker_log, "worker serving", 600)
        yield {"url": url, "nats": envkernel_nats, "base": base, "worker_log": worker_log}
    finally:
        _stop(worker)
        _stop(server)


@pytest.mark.timeout(1200)  # about a minute on a quiet machine; CPU torch imports under load
def test_the_loop_trains_the_served_model_and_the_report_draws_its_curves(
    loop: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    cmd = [ENVKERNEL, "--json-logs", "run", "--nats-url", loop["nats"], "--out", str(out)]
    cmd += ["--run-id", "loop", "--no-progress", "--source", "sample", "--source"]
    cmd += [f"openapi:{ROOT}/plugins/openapi/src/envkernel_openapi/corpus/travel.json"]
    cmd += ["--plugins", "+openai", "--remote", "trainer:trl", "--policy", "openai"]
    cmd += ["--iterations", "2", "-G", "2", "--set", "chains.tasks_per_env=4"]
    for kv in (
        f"trl.model={loop['base']}",
        "trl.device=cpu",
        "trl.max_length=100000",
        "trl.learning_rate=0.01",
        f'trl.holdout_envs=["{HOLDOUT}"]',
        "openai.max_turns=2",
        "openai.max_tokens=8",
        "openai.temperature=0",
    ):
        cmd += ["--set", kv]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENVKERNEL_"))}
    env.update(OPENAI_BASE_URL=loop["url"], OPENAI_MODEL="base", OPENAI_API_KEY="local")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = out / "loop"
    summary = json.loads((run / "summary.json").read_text())
    its = summary["iterations"]
    assert len(its) == 2 and summary["failures"] == 0
    metrics = [it["updates"]["trl"]["metrics"] for it in its]
    for m in metrics:
        # trained on travel's train split (its reference chains: the tiny model solves nothing)
        assert m["sft_optimizer_steps"] >= 1 and m["groups_train"] >= 1
        assert m["groups_heldout_env"] >= 1  # the shop's groups were measured, never learned from
        assert 0.0 <= m["reward_heldout_env"] <= 1.0
    # the first update was applied: the server loaded its adapter, iteration 1 rolled out with it
    with urllib.request.urlopen(loop["url"] + "/models", timeout=10) as r:
        served = [m["id"] for m in json.loads(r.read())["data"]]
    assert served == ["base", "loop-iter-0"]
    rollouts = [json.loads(x) for x in (run / "rollouts.jsonl").read_text().splitlines()]
    assert {r["iteration"] for r in rollouts} == {0, 1}
    assert {r["env_id"] for r in rollouts} == {HOLDOUT, "travel-s1"}
    worker = [json.loads(x) for x in loop["worker_log"].read_text().splitlines() if x[:1] == "{"]
    saved = [e for e in worker if e.get("event") == "adapter saved"]
    assert [e["lora_name"] for e in saved] == ["loop-iter-0", "loop-iter-1"]
    # the report: the learning curves, the held-out environment named as such
    rep = subprocess.run(
        [ENVKERNEL, "report", str(run)], capture_output=True, text=True, timeout=300, check=False
    )
    assert rep.returncode == 0, rep.stderr[-3000:]
    html = (run / "report.html").read_text()
    assert "Mean reward per iteration, by kind of task" in html
    assert f"held-out environment ({HOLDOUT})" in html
