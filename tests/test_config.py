"""Run configuration: the TOML file, environment variables, flags and ``--set``; secrets never leave
the process."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import msgspec
import pytest

from envkernel import config as cfgmod
from envkernel.run import prepare
from envkernel_bus import Bus

pytestmark = pytest.mark.timeout(300)

SECRET = "sk-envk-test-9f3b2c1d7e"


def _write(envk, text: str, name: str = "envkernel.toml") -> str:
    path = envk.cwd / name
    path.write_text(text)
    return str(path)


def test_wrong_key_in_a_component_table_is_a_usage_error(envk) -> None:
    cfg = _write(envk, "[traceoutcome]\nbogus = 1\n")
    proc = envk("run", "--config", cfg, "--no-progress")
    assert proc.returncode == 2
    assert "bogus" in proc.stderr and "traceoutcome" in proc.stderr
    assert "tau" in proc.stderr  # the message lists the valid settings
    assert not (envk.cwd / "envkernel-out").exists()


def test_unknown_top_level_key_is_a_usage_error(envk) -> None:
    cfg = _write(envk, "seed = 1\nsede = 2\n")
    proc = envk("run", "--config", cfg, "--no-progress")
    assert proc.returncode == 2
    assert "'sede'" in proc.stderr and "seed" in proc.stderr


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            "[nosuchcomponent]\nx = 1\n",
            "nosuchcomponent",
        ),  # a table for a component no plugin provides
        ("seed = 'many'\n", "seed"),  # wrong type
        ("[traceoutcome]\ntau = 2.0\n", "tau"),  # rejected by the Settings' own check
        ("seed = = 1\n", "not valid TOML"),
        ("[chains]\ntasks_per_env = 'ten'\n", "tasks_per_env"),
    ],
)
def test_bad_config_files_are_usage_errors(envk, text: str, needle: str) -> None:
    proc = envk("run", "--config", _write(envk, text), "--no-progress")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_config_file(envk) -> None:
    proc = envk("run", "--config", "does-not-exist.toml", "--no-progress")
    assert proc.returncode == 2 and "does-not-exist.toml" in proc.stderr


@pytest.mark.parametrize(
    "item", ["traceoutcome.bogus=1", "nosuch.tau=1", "traceoutcome=1", "traceoutcome.tau=7"]
)
def test_bad_set_is_a_usage_error(envk, item: str) -> None:
    proc = envk("run", "--set", item, "--no-progress")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


def test_precedence_flag_over_env_over_file_and_set_over_file(envk) -> None:
    cfg = _write(
        envk,
        "seed = 5\npolicy = 'reference'\n[traceoutcome]\ntau = 0.7\n[chains]\ntasks_per_env = 2\n",
    )
    with_flag = envk.run(
        "--config",
        cfg,
        "--seed",
        "7",
        "--set",
        "traceoutcome.tau=0.9",
        run_id="flag",
        env={"ENVKERNEL_SEED": "6"},
    )
    assert with_flag.proc.returncode == 0, with_flag.proc.stderr[-3000:]
    c = with_flag.config
    assert c["seed"] == 7
    assert _effective(c, "traceoutcome") == {"tau": 0.9}  # --set wins over the file
    assert _effective(c, "chains") == {"tasks_per_env": 2}  # the file's other tables survive --set
    assert with_flag.summary["tasks_proposed"] <= 2  # and take effect

    no_flag = envk.run("--config", cfg, run_id="env", env={"ENVKERNEL_SEED": "6"})
    assert no_flag.proc.returncode == 0, no_flag.proc.stderr[-3000:]
    assert no_flag.config["seed"] == 6
    assert _effective(no_flag.config, "traceoutcome") == {"tau": 0.7}


def _effective(config: dict, component: str) -> dict:
    """A component's settings as config.json records them: the file's table, then ``--set`` flags
    (kept in ``overrides`` when the kernel stores them apart)."""
    return {
        **config["settings"].get(component, {}),
        **config.get("overrides", {}).get(component, {}),
    }


def test_file_alone_sets_the_seed(envk, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in cfgmod.ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    cfg = _write(envk, "seed = 5\nrollouts_per_task = 3\n[chains]\nmax_len = 2\n")
    prep = prepare(cfg, {}, str(tmp_path / "out"))
    assert prep.config.seed == 5 and prep.config.rollouts_per_task == 3
    assert prep.config.settings == {"chains": {"max_len": 2}}
    monkeypatch.setenv("ENVKERNEL_ROLLOUTS_PER_TASK", "4")
    assert prepare(cfg, {}, str(tmp_path / "out")).config.rollouts_per_task == 4
    assert (
        prepare(cfg, {"rollouts_per_task": 2}, str(tmp_path / "out")).config.rollouts_per_task == 2
    )


def test_the_secret_reaches_the_plugin_but_no_file_kv_event_or_log(
    envk, thirdparty_site: Path, nats_server: str, tmp_path: Path
) -> None:
    cfg = _write(
        envk,
        f'plugins = "+mysampler,-chains"\n[mysampler]\napi_key = "{SECRET}"\nmax_tokens = 99\n',
    )
    run = envk.run(
        "--config",
        cfg,
        "--nats-url",
        nats_server,
        "--set",
        "mysampler.product_id=prd_0004",
        run_id="secret",
        env={"PYTHONPATH": str(thirdparty_site)},
    )
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    # the plugin got the real key ...
    seen = json.loads((run.dir / "mysampler-seen.json").read_text())
    assert seen["api_key_sha256"] == hashlib.sha256(SECRET.encode()).hexdigest()
    # ... config.json has it redacted, and keeps the other settings
    assert seen["max_tokens"] == 99
    settings = _effective(run.config, "mysampler")
    assert (
        settings["api_key"] != SECRET
        and settings["product_id"] == "prd_0004"
        and settings["max_tokens"] == 99
    )
    # no file of the run folder, no log line, and nothing in the NATS store (stream, KV bucket)
    # holds it
    needle = SECRET.encode()
    leaks = [str(p) for p in run.dir.rglob("*") if p.is_file() and needle in p.read_bytes()]
    assert leaks == []  # (the config file we wrote lives outside the run folder)
    assert SECRET not in run.proc.stderr and SECRET not in run.proc.stdout
    store = tmp_path / "nats"
    assert store.is_dir()
    assert [str(p) for p in store.rglob("*") if p.is_file() and needle in p.read_bytes()] == []

    async def kv_config() -> dict:
        bus = await Bus.connect(nats_server)
        try:
            return json.loads((await bus.runs.get("secret")).value)
        finally:
            await bus.close()

    kv = asyncio.run(kv_config())
    assert _effective(kv, "mysampler")["api_key"] != SECRET
    assert _effective(kv, "mysampler")["product_id"] == "prd_0004"


def test_public_config_redacts_secret_names() -> None:
    table = {
        "api_key": "k1",
        "password": "p1",
        "nested": {"client_secret": "s1", "access_token": "t1"},
        "tau": 0.5,
    }
    cfg = cfgmod.RunConfig(settings={"x": table})
    if "overrides" in cfgmod.RunConfig.__struct_fields__:
        cfg = msgspec.structs.replace(cfg, overrides={"y": {"openai_api_key": "k2", "tau": 0.25}})
    text = json.dumps(cfgmod.public(cfg))
    for secret in ("k1", "p1", "s1", "t1", "k2"):
        assert f'"{secret}"' not in text
    assert cfgmod.public(cfg)["settings"]["x"]["tau"] == 0.5


def test_public_config_keeps_settings_that_merely_contain_token() -> None:
    # (an earlier SECRET pattern matched any name containing 'token' or 'key')
    cfg = cfgmod.RunConfig(
        settings={
            "mysampler": {
                "api_key": SECRET,
                "max_tokens": 512,
                "keyword": "lamp",
                "tokens_per_step": 3,
            }
        }
    )
    pub = cfgmod.public(cfg)["settings"]["mysampler"]
    assert pub["api_key"] != SECRET
    assert pub["max_tokens"] == 512 and pub["keyword"] == "lamp" and pub["tokens_per_step"] == 3


def test_the_kv_copy_of_a_config_decodes_back_into_a_run_config() -> None:
    cfg = cfgmod.RunConfig(
        run_id="r", seed=4, settings={"traceoutcome": {"tau": 0.25}, "c": {"api_key": SECRET}}
    )
    back = msgspec.json.decode(msgspec.json.encode(cfgmod.public(cfg)), type=cfgmod.RunConfig)
    assert back.run_id == "r" and back.seed == 4 and back.settings["traceoutcome"] == {"tau": 0.25}
    assert SECRET not in msgspec.json.encode(back).decode()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--policy", "bogus"], "'bogus'"),
        (["--runner", "bogus"], "'bogus'"),
        (["--source", "bogus:x"], "'bogus'"),
        (["--seed", "x"], "--seed"),
        (["--rollouts-per-task", "two"], "--rollouts-per-task"),
    ],
)
def test_bad_flags_are_usage_errors(envk, args: list[str], needle: str) -> None:
    proc = envk("run", *args, "--no-progress")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert needle in proc.stderr and "Traceback" not in proc.stderr
    assert not (envk.cwd / "envkernel-out").exists()


def test_run_defaults_come_from_the_preset_not_the_kernel() -> None:
    """The components a run uses unless told otherwise are the preset's (``default-config`` in the
    top-level pyproject), and the kernel's config module names none of them."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    declared = tomllib.loads((root / "pyproject.toml").read_text())["project"]["entry-points"][
        "envkernel.presets"
    ]["default-config"]
    pairs = dict(item.strip().split("=", 1) for item in declared.split(";"))
    assert cfgmod.preset_config() == pairs
    defaults = cfgmod.RunConfig()
    for key, value in pairs.items():
        got = getattr(defaults, key)
        assert got == (value.split(",") if isinstance(got, list) else value), key
    assert defaults.gate_reward == "traceoutcome"
    import ast

    tree = ast.parse(Path(cfgmod.__file__).read_text())
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}  # docstrings
    strings = {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    }
    named = strings & {v for value in pairs.values() for v in value.split(",")}
    assert not named, f"config.py's code names plugin components {named}"
