"""``envkernel env call ENV_DIR TOOL``: load an environment folder, call one tool in a sandbox,
print the result as JSON. And the folder loader (:func:`envkernel_runtime.envdir.load_env_dir`)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec
import pytest

from envkernel.errors import UsageError
from envkernel.recorder import Recorder
from envkernel_runtime.envdir import EnvDirError, load_env_dir
from envkernel_sample import shop_env
from envkernel_schemas import (
    CodeBehaviour,
    EnvSpec,
    ModelBehaviour,
    Provenance,
    ToolSpec,
    VerifyReport,
)

WIRE = (
    "from envkernel.cli import cli\n"
    "from envkernel.envcmd import env\n"
    "if 'env' not in cli.commands:\n"
    "    cli.add_command(env)\n"
    "cli(prog_name='envkernel')\n"
)
"""``envkernel`` with the ``env`` group (also before cli.py registers it)."""

TOY = """
import os, time

def echo(env, text, times=1):
    return {"text": text * times, "at": env.now()}

def add(env, key, value):
    env.db.execute("INSERT INTO kv VALUES (?, ?)", (key, value))
    return env.db.execute("SELECT count(*) AS n FROM kv").fetchone()["n"]

def who(env):
    return {"uid": os.getuid(), "pid": os.getpid(), "cwd": os.getcwd() == env.workspace}

def nap(env, seconds):
    time.sleep(seconds)
    return "rested"

def spin(env):
    while True:
        pass
"""


def toy_env(source: str = TOY) -> EnvSpec:
    return EnvSpec(
        id="toy-v1",
        name="Toy",
        domain="testing",
        description="A toy.",
        tools=[ToolSpec(name=n, mutates=n == "add") for n in ("echo", "add", "who", "nap", "spin")],
        behaviour=CodeBehaviour(source=source),
        seed_sql="CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT); INSERT INTO kv VALUES "
        "('a', '1');",
        generated={"kv": []},
        provenance=Provenance(source_kind="test", plugin="test", seed=3),
        report=VerifyReport(verifier="probe", kept=True, tools_kept=["echo"], checks=1),
    )


@pytest.fixture
def root(processes_mentioning):
    """A private temp root for the sandboxes of one test; nothing of them may be left."""
    d = tempfile.mkdtemp(prefix="envk-envcall-")
    os.chmod(d, 0o755)
    yield d
    left = processes_mentioning(d, 5.0)
    shutil.rmtree(d, ignore_errors=True)
    assert not left, f"processes left running: {left}"


def env_call(root: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WIRE, "env", "call", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "TMPDIR": root},
    )


def folder(tmp_path: Path, spec: EnvSpec | None = None) -> Path:
    return Recorder(tmp_path / "run").write_env(spec or toy_env())


# ------------------------------------------------------------------------------ the folder loader


def test_a_written_folder_loads_back_to_the_same_spec(tmp_path: Path):
    for spec in (toy_env(), shop_env(seed=5, source="x")):
        assert load_env_dir(folder(tmp_path, spec)) == spec


def test_a_model_behaviour_loads_back(tmp_path: Path):
    spec = msgspec.structs.replace(
        toy_env(), behaviour=ModelBehaviour(model={"resources": [{"name": "kv"}]})
    )
    d = folder(tmp_path, spec)
    assert (d / "model.json").exists() and not (d / "env.py").exists()
    assert load_env_dir(d) == spec


def test_bad_folders_are_clear_usage_errors(tmp_path: Path):
    d = folder(tmp_path)
    with pytest.raises(EnvDirError, match="not a folder"):
        load_env_dir(tmp_path / "nope")
    # the runtime knows no kernel: `envkernel env call` turns this into a usage error (exit 2),
    # checked below
    assert issubclass(EnvDirError, ValueError) and not issubclass(EnvDirError, UsageError)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(EnvDirError, match="no env.json"):
        load_env_dir(empty)
    (empty / "rejected.json").write_text("{}")
    with pytest.raises(EnvDirError, match="rejected"):
        load_env_dir(empty)
    meta = json.loads((d / "env.json").read_text())
    for behaviour, message in (
        ({"kind": "code", "file": "../../etc/passwd"}, "plain file name"),
        ({"kind": "wasm"}, "'behaviour' must be"),
    ):
        (d / "env.json").write_text(json.dumps({**meta, "behaviour": behaviour}))
        with pytest.raises(EnvDirError, match=message):
            load_env_dir(d)
    (d / "env.json").write_text(json.dumps({**meta, "tools": "nope"}))
    with pytest.raises(EnvDirError, match="does not describe an environment"):
        load_env_dir(d)
    (d / "env.json").write_text("{not json")
    with pytest.raises(EnvDirError, match="not valid JSON"):
        load_env_dir(d)
    (d / "env.json").write_text(json.dumps(meta))
    (d / "env.py").unlink()
    with pytest.raises(EnvDirError, match="env.py is missing"):
        load_env_dir(d)


# ------------------------------------------------------------------------------ the command


def test_call_prints_the_result_as_json(root: str, tmp_path: Path):
    d = folder(tmp_path)
    r = env_call(root, str(d), "echo", "--args", '{"text": "hi", "times": 2}', "--seed", "4")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {
        "ok": True,
        "value": {"text": "hihi", "at": "2026-01-15T09:00:00Z"},
    }
    r = env_call(root, str(d), "add", "--args", '{"key": "b", "value": "2"}')
    assert json.loads(r.stdout) == {"ok": True, "value": 2}  # the seed state was loaded


def test_the_code_runs_in_the_sandbox_not_in_the_command(root: str, tmp_path: Path):
    r = env_call(root, str(folder(tmp_path)), "who", "--verbose")
    assert r.returncode == 0, r.stderr
    value = json.loads(r.stdout)["value"]
    assert value["cwd"] is True
    info = json.loads(
        next(ln for ln in r.stderr.splitlines() if ln.startswith("sandbox: "))[len("sandbox: ") :]
    )
    if os.geteuid() == 0:
        assert value["uid"] == info["confinement"]["uid"] != 0
    assert info["seconds"] < 5


def test_tool_errors_exit_1_with_the_error(root: str, tmp_path: Path):
    d = folder(tmp_path)
    r = env_call(root, str(d), "add", "--args", '{"key": "a", "value": "dup"}')
    assert r.returncode == 1
    out = json.loads(r.stdout)
    assert (
        out["ok"] is False
        and out["error"]["code"] == "tool_crashed"
        and "UNIQUE" in out["error"]["message"]
    )
    r = env_call(root, str(d), "nope")
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "unknown_tool"
    r = env_call(root, str(d), "echo", "--args", '{"txt": 1}')
    err = json.loads(r.stdout)["error"]
    assert r.returncode == 1 and err["code"] == "invalid_arguments" and "txt" in err["message"]


def test_usage_errors_exit_2(root: str, tmp_path: Path):
    d = folder(tmp_path)
    cases = [
        ([str(tmp_path / "missing"), "echo"], "not a folder"),
        ([str(d), "echo", "--args", "[1]"], "must be a JSON object"),
        ([str(d), "echo", "--args", "{oops"], "not valid JSON"),
        (
            [str(d), "echo", "--sandbox", "no-such-runner"],
            "no sandbox runner named 'no-such-runner'",
        ),
        (
            [str(d), "echo", "--sandbox", "probe"],
            "no sandbox runner named 'probe'",
        ),  # a verifier, not a runner
        ([str(d), "echo", "--set", "call_timout=1"], "call_timout"),
        ([str(d), "echo", "--set", "nonsense"], "KEY=VALUE"),
    ]
    for args, message in cases:
        r = env_call(root, *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert message in r.stderr, (args, r.stderr)
        assert r.stdout == ""


def test_an_environment_that_does_not_load_exits_3(root: str, tmp_path: Path):
    d = folder(tmp_path, toy_env("def broken(env:\n"))
    r = env_call(root, str(d), "echo")
    assert r.returncode == 3
    err = json.loads(r.stdout)["error"]
    assert (
        err["code"] == "sandbox_error"
        and "load_failed" in err["message"]
        and "SyntaxError" in err["message"]
    )


def test_settings_come_from_the_config_file_and_set_beats_it(root: str, tmp_path: Path):
    d = folder(tmp_path)
    config = tmp_path / "envk.toml"
    config.write_text("[process]\ncall_timeout = 0.5\n")
    t0 = time.monotonic()
    r = env_call(root, str(d), "spin", "--config", str(config))
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "timeout"
    assert "within 0.5 s" in r.stdout and time.monotonic() - t0 < 10
    r = env_call(
        root,
        str(d),
        "nap",
        "--args",
        '{"seconds": 1}',
        "--config",
        str(config),
        "--set",
        "call_timeout=3",
    )
    assert r.returncode == 0 and json.loads(r.stdout)["value"] == "rested"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_killed_env_call_leaves_no_process(
    root: str, tmp_path: Path, sig: signal.Signals, processes_mentioning
):
    d = folder(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", WIRE, "env", "call", str(d), "spin", "--set", "call_timeout=60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "TMPDIR": root},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not processes_mentioning(root):  # the sandbox is up
            assert time.monotonic() < deadline and proc.poll() is None, (
                proc.stderr.read() if proc.stderr else ""
            )
            time.sleep(0.05)
        time.sleep(0.3)  # and spinning
        proc.send_signal(sig)
        proc.wait(10)
    finally:
        proc.kill()
        proc.wait()
    assert not processes_mentioning(root, 5.0)
    if sig == signal.SIGTERM:  # a clean stop also removes the sandbox's folder
        assert not list(Path(root).glob("envk-p*"))
    else:  # the runner's reaper removes the folder at the kill (the next runner would sweep it too)
        deadline = time.monotonic() + 5
        while list(Path(root).glob("envk-p*")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not list(Path(root).glob("envk-p*"))
        r = env_call(root, str(d), "echo", "--args", '{"text": "x"}')
        assert r.returncode == 0, r.stderr
        assert not list(Path(root).glob("envk-p*"))
