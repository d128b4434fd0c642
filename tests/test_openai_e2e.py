"""End to end: ``envkernel run --plugins +openai --policy openai`` against a scripted model server.

The server (:class:`envkernel_kit.scripted.ScriptedServer`) runs in this process on loopback;
``envkernel run`` runs as a subprocess with ``OPENAI_BASE_URL`` pointing at it and
``OPENAI_API_KEY=sk-test-secret``. The key must reach the server and appear in no file of the
run folder (config, outputs, logs, the NATS store).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from envkernel_kit.scripted import ByTurn, Oracle, ScriptedServer, completion, no_choices, tool_call

pytest.importorskip("envkernel_sample")
pytest.importorskip("envkernel_process")

SECRET = "sk-test-secret"
ENVKERNEL = str(Path(sys.executable).with_name("envkernel"))
TASKS_PER_ENV = 5
"""Tasks per environment in these runs (the default is 20): every task of every environment is still
played and checked, over 35 tasks instead of 140 (each test makes one run of them per policy)."""


def run(
    out: Path, run_id: str, *args: str, env: dict[str, str] | None = None, config: str | None = None
) -> tuple[subprocess.CompletedProcess[str], Path]:
    cmd = [
        ENVKERNEL,
        "--json-logs",
        "run",
        "--out",
        str(out),
        "--run-id",
        run_id,
        "--seed",
        "3",
        "--no-progress",
        "--timeout",
        "240",
        "--set",
        f"chains.tasks_per_env={TASKS_PER_ENV}",
        *args,
    ]
    if config is not None:
        path = out / f"{run_id}.toml"
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(config)
        cmd += ["--config", str(path)]
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENVKERNEL_"))}
    full_env.update(env or {})
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=full_env, timeout=300, check=False
    )
    return proc, out / run_id


def _descends_from(pid: int, ancestor: int) -> bool:
    """True when process ``pid`` is ``ancestor`` or one of its descendants (read from /proc)."""
    for _ in range(64):
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state: the parent's pid
        if pid <= 1:
            return False
    return False


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def files_containing(root: Path, needle: bytes) -> list[str]:
    hits = []
    for p in root.rglob("*"):
        if p.is_file() and needle in p.read_bytes():
            hits.append(str(p.relative_to(root)))
    return hits


@pytest.fixture(scope="module")
def reference_tasks(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The tasks of seed 3 (a plain reference run; the same seed gives the same tasks)."""
    out = tmp_path_factory.mktemp("ref")
    proc, folder = run(out, "ref")
    assert proc.returncode == 0, proc.stderr[-3000:]
    tasks = lines(folder / "tasks.jsonl")
    assert tasks
    return tasks


def model_env(srv: ScriptedServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": srv.base_url, "OPENAI_API_KEY": SECRET, "OPENAI_MODEL": "scripted"}


def test_openai_policy_solves_every_task_and_leaks_no_secret(
    tmp_path: Path, reference_tasks: list[dict[str, Any]]
) -> None:
    with ScriptedServer(Oracle(reference_tasks), record=True) as srv:
        proc, folder = run(
            tmp_path,
            "oai",
            "--plugins",
            "+openai",
            "--policy",
            "openai",
            "-G",
            "2",
            env=model_env(srv),
        )
        auths = set(srv.authorizations)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((folder / "summary.json").read_text())
    n = len(reference_tasks)
    assert summary["tasks"] == n and summary["rollouts"] == 2 * n and summary["failures"] == 0
    assert summary["mean_reward"] == 1.0
    rollouts = lines(folder / "rollouts.jsonl")
    assert len(rollouts) == 2 * n
    no_call = {t["id"] for t in reference_tasks if not t["calls"]}  # a refusal, a confirmation
    for r in rollouts:
        t = r["trajectory"]
        assert t["policy"] == "openai" and t["termination"] == "answer" and t["format_errors"] == 0
        turns = 1 if r["task_id"] in no_call else 2
        assert t["usage"]["prompt_tokens"] > 0 and len(t["latencies"]) >= turns
    assert {r["trajectory"]["index"] for r in rollouts} == {0, 1}
    assert sorted(t["id"] for t in lines(folder / "tasks.jsonl")) == sorted(
        t["id"] for t in reference_tasks
    )
    # the key was really used, and it is nowhere in the run folder (config, outputs, NATS store)
    assert auths == {f"Bearer {SECRET}"}
    assert (folder / "nats").is_dir()
    assert files_containing(folder, SECRET.encode()) == []
    assert SECRET not in proc.stdout and SECRET not in proc.stderr
    # every step was published to the stream (so `envkernel tap` shows the agent live)
    assert files_containing(folder / "nats", b"rollout.step.v1")


def test_a_misbehaving_model_still_finishes_and_is_counted(
    tmp_path: Path, reference_tasks: list[dict[str, Any]]
) -> None:
    """Malformed tool-call JSON, then a reply with no choices, on every rollout; scored by the
    checklist."""
    script = ByTurn([completion("", [tool_call("get_product", '{"product_id": ')]), no_choices()])
    config = 'reward = "checklist"\n[openai]\ntemperature = 0.3\nmax_turns = 4\n'
    with ScriptedServer(script) as srv:
        proc, folder = run(
            tmp_path,
            "bad",
            "--plugins",
            "+openai,+checklist",
            "--policy",
            "openai",
            env=model_env(srv),
            config=config,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((folder / "summary.json").read_text())
    assert (
        summary["tasks"] == len(reference_tasks)
        and summary["rollouts"] == len(reference_tasks)
        and summary["failures"] == 0
    )
    assert summary["mean_reward"] == 0.0
    for r in lines(folder / "rollouts.jsonl"):
        t = r["trajectory"]
        assert t["termination"] == "no_choices" and t["format_errors"] == 1 and t["calls"] == []
        assert r["reward"]["model"] == "checklist" and r["reward"]["error"] == ""
    assert files_containing(folder, SECRET.encode()) == []


def test_llm_judge_as_the_reward_model(tmp_path: Path) -> None:
    """The judge scores the gate (``gate_reward``) and the emitted rollouts; the same server plays
    policy and judge.

    The scripted judge passes any rollout that made calls, so the gate's near-miss mutants are off
    here (``gate_mutants = 0``): with them on, such a judge lets every mutant through and rightly
    rejects every task."""
    proc, folder = run(
        tmp_path, "ref0", config="gate_mutants = 0\n"
    )  # the tasks of seed 3 with no mutants at the gate
    assert proc.returncode == 0, proc.stderr[-3000:]
    reference_tasks = lines(folder / "tasks.jsonl")
    oracle = Oracle(reference_tasks)

    def script(request: dict[str, Any], n: int) -> Any:
        system = request["messages"][0]["content"]
        if "You grade an AI agent" in system:
            user = request["messages"][1]["content"]
            # it did the work: called tools, or refused or asked as the domain policy says
            did = any(
                w in user for w in ("[assistant calls]", "only an administrator", "Do you confirm")
            )
            return completion(
                json.dumps(
                    {
                        "score": 1.0 if did else 0.0,
                        "verdict": "complete" if did else "incomplete",
                        "reason": "scripted",
                    }
                )
            )
        return oracle(request, n)

    with ScriptedServer(script) as srv:
        proc, folder = run(
            tmp_path,
            "judge",
            "--plugins",
            "+openai,+judge",
            "--policy",
            "openai",
            env=model_env(srv),
            config='reward = "judge"\ngate_reward = "judge"\ngate_mutants = 0\n',
        )
        judged = sum(1 for r in srv.requests if "You grade" in r["messages"][0]["content"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((folder / "summary.json").read_text())
    n = len(reference_tasks)
    assert (
        summary["tasks"] == n
        and summary["rollouts"] == n
        and summary["mean_reward"] == 1.0
        and summary["failures"] == 0
    )
    assert judged == 3 * n  # reference + do-nothing at the gate, then the openai rollout
    assert all(r["reward"]["model"] == "judge" for r in lines(folder / "rollouts.jsonl"))
    assert files_containing(folder, SECRET.encode()) == []


def test_local_workers_get_the_runs_secrets_and_url_off_argv(
    tmp_path: Path, reference_tasks: list[dict[str, Any]], nats_server: str
) -> None:
    """``--workers 1 --set openai.api_key=...``: the local worker's openai policy uses the key given
    by ``--set`` (no OPENAI_API_KEY anywhere), although the runs bucket holds it redacted; neither
    the key nor the NATS URL is on a local worker's command line (``ps``)."""
    key = "sk-set-by-flag"
    env = {"OPENAI_BASE_URL": "", "OPENAI_MODEL": "scripted"}
    cmd = [
        ENVKERNEL,
        "--json-logs",
        "--log-level",
        "debug",
        "run",
        "--out",
        str(tmp_path),
        "--run-id",
        "lwk",
        "--seed",
        "3",
        "--no-progress",
        "--timeout",
        "240",
        "--plugins",
        "+openai",
        "--policy",
        "openai",
        "-G",
        "4",
        "--workers",
        "1",
        "--nats-url",
        nats_server,
        "--set",
        f"openai.api_key={key}",
        "--set",
        f"chains.tasks_per_env={TASKS_PER_ENV}",
    ]
    seen: dict[int, str] = {}
    with ScriptedServer(Oracle(reference_tasks), record=True) as srv:
        env["OPENAI_BASE_URL"] = srv.base_url
        full_env = {
            k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENVKERNEL_"))
        } | env
        with (tmp_path / "run.out").open("w") as outf, (tmp_path / "run.err").open("w") as errf:
            proc = subprocess.Popen(cmd, stdout=outf, stderr=errf, text=True, env=full_env)
            while (
                proc.poll() is None
            ):  # every envkernel worker alive meanwhile, with its command line
                for d in Path("/proc").iterdir():
                    try:
                        line = (
                            (d / "cmdline")
                            .read_bytes()
                            .replace(b"\0", b" ")
                            .decode(errors="replace")
                        )
                    except OSError:
                        continue
                    if (
                        " worker" in line
                        and "envkernel" in line
                        and d.name.isdigit()
                        and _descends_from(int(d.name), proc.pid)
                    ):
                        seen[int(d.name)] = (
                            line  # this run's own workers (other tests' may run beside it)
                        )
                time.sleep(0.1)
        out, err = (tmp_path / "run.out").read_text(), (tmp_path / "run.err").read_text()
        auths = set(srv.authorizations)
    assert proc.returncode == 0, err[-3000:]
    folder = tmp_path / "lwk"
    summary = json.loads((folder / "summary.json").read_text())
    assert (
        summary["tasks"] == len(reference_tasks)
        and summary["failures"] == 0
        and summary["mean_reward"] == 1.0
    )
    worker_log = (folder / "workers" / "worker-0.log").read_text()
    stopped = [json.loads(x) for x in worker_log.splitlines() if '"worker stopped"' in x]
    assert stopped and stopped[0]["handled"].get("openai", 0) > 0, worker_log[
        -3000:
    ]  # the worker rolled some out, with the key
    assert auths == {f"Bearer {key}"}
    assert seen, "no local worker was seen running"
    for line in seen.values():
        assert (
            "nats://" not in line and nats_server.rsplit(":", 1)[1] not in line and key not in line
        ), line
    assert files_containing(folder, key.encode()) == []  # config.json, the workers' logs, outputs
    assert key not in out and key not in err
