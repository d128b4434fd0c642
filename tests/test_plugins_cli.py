"""Plugin selection (``--plugins``), ``envkernel plugins``, the registration hooks of the default
preset, and ``envkernel schemas``."""

from __future__ import annotations

import json

import pytest

import envkernel_schemas
from envkernel.hookspecs import ROLE_HOOKS
from envkernel.plugins import default_preset, installed, load

pytestmark = pytest.mark.timeout(300)

DEFAULTS = ["sample", "process", "probe", "chains", "baselines", "traceoutcome", "export"]


def test_unknown_plugin_is_a_usage_error_listing_installed_plugins(envk) -> None:
    proc = envk("run", "--plugins", "+nosuchplugin", "--no-progress")
    assert proc.returncode == 2
    assert "nosuchplugin" in proc.stderr
    for name in installed():
        assert name in proc.stderr, f"installed plugin {name!r} not listed in: {proc.stderr}"
    assert not (envk.cwd / "envkernel-out").exists(), "a usage error must not start a run"


def test_removing_the_only_sampler_names_the_role(envk) -> None:
    proc = envk(
        "run", "--plugins", "-chains,-workspace", "--no-progress"
    )  # the preset's two samplers
    assert proc.returncode == 2
    assert "'sampler'" in proc.stderr


def test_mixing_a_full_list_with_changes_is_an_error(envk) -> None:
    proc = envk("run", "--plugins", "sample,process,-chains", "--no-progress")
    assert proc.returncode == 2
    assert "mixes" in proc.stderr


def test_plugins_from_the_environment_variable(envk) -> None:
    proc = envk("run", "--no-progress", env={"ENVKERNEL_PLUGINS": "-traceoutcome"})
    assert proc.returncode == 2 and "'reward_model'" in proc.stderr


def test_a_full_list_replaces_the_preset(envk) -> None:
    # a full list without `export`: trainers are optional, so the run works and exports nothing
    full = "sample,process,probe,chains,baselines,traceoutcome"
    run = envk.run("--plugins", full, "--set", "chains.tasks_per_env=3", run_id="full")
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    assert run.config["selected"] == full.split(",")
    assert run.summary["plugins"]["trainer"] == []
    assert run.summary["tasks"] > 0 and run.summary["mean_reward"] == 1.0
    assert not (run.dir / "sft.jsonl").exists() and not (run.dir / "rl.jsonl").exists()
    assert (run.dir / "tasks.jsonl").exists()


def test_plugins_json_lists_the_default_plugins(envk) -> None:
    proc = envk("plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert set(installed()) == set(rows)
    expected_roles = {
        "sample": ["synthesizer"],
        "process": ["sandbox_runner"],
        "probe": ["verifier"],
        "chains": ["sampler"],
        "baselines": ["policy"],
        "traceoutcome": ["reward_model"],
        "export": ["trainer"],
    }
    for name, roles in expected_roles.items():
        r = rows[name]
        assert r["roles"] == roles and r["default"] is True and "error" not in r
        assert r["distribution"] == f"envkernel-{name}" and r["version"]
    assert rows["baselines"]["components"] == [
        "mutant",
        "nothing",
        "reference",
        "sometimes",
    ]  # mutant: the gate's near misses; sometimes: for --calibrate
    assert rows["export"]["components"] == ["rl", "sft"]
    assert {n for n, r in rows.items() if r["default"]} == set(default_preset())


def test_plugins_table(envk) -> None:
    """One line a plugin at 80 columns, names whole; --check adds the roles and components."""
    proc = envk("plugins", env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    lines = {line.split()[0]: line for line in proc.stdout.splitlines() if line.strip()}
    for name in set(installed()):
        assert name in lines and len(lines[name].rstrip()) <= 80, lines.get(name)
    assert "yes" in lines["sample"] and "yes" not in lines["judge"]  # the default preset
    checked = envk("plugins", "--check", env={"COLUMNS": "80"})
    assert checked.returncode == 0, checked.stderr
    assert "sampler: chains" in checked.stdout and "trainer: rl, sft" in checked.stdout
    assert max(len(line.rstrip()) for line in checked.stdout.splitlines()) <= 80


def test_the_default_preset_is_declared_and_installed() -> None:
    preset = default_preset()
    assert set(DEFAULTS) <= set(preset)
    assert set(preset) <= set(installed())


# Each registration hook of envkernel/hookspecs.py, called on the default preset's plugins.
EXPECTED_BY_HOOK = {
    "register_synthesizers": {"sample"},
    "register_sandbox_runners": {"process"},
    "register_verifiers": {"probe"},
    "register_samplers": {"chains"},
    "register_policies": {"reference", "nothing"},
    "register_reward_models": {"traceoutcome"},
    "register_trainers": {"sft", "rl"},
}


@pytest.mark.parametrize("hook", sorted(EXPECTED_BY_HOOK))
def test_each_registration_hook_registers_the_default_components(hook: str) -> None:
    reg = load(DEFAULTS, strict=True)
    got: dict[str, object] = {}
    getattr(reg.pm.hook, hook)(register=lambda name, factory: got.setdefault(name, factory))
    assert EXPECTED_BY_HOOK[hook] <= set(got)
    role = {v: k for k, v in ROLE_HOOKS.items()}[hook]
    assert {c.name for c in reg.by_role(role)} >= EXPECTED_BY_HOOK[hook]
    assert all(callable(f) for f in got.values())


def test_trace_plugins_prints_the_register_commands_call(envk) -> None:
    proc = envk("sandbox", "--help", env={"ENVKERNEL_TRACE_PLUGINS": "1"})
    assert proc.returncode == 0 and "build-image" in proc.stdout  # podman's group, loaded to run
    assert "register_commands [hook]" in proc.stderr
    assert "register_commands" not in envk("sandbox", "--help").stderr  # only when asked for


def test_schemas_lists_every_event_kind(envk) -> None:
    proc = envk("schemas")
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[1] for line in proc.stdout.splitlines() if line.startswith("event ")}
    assert listed == set(envkernel_schemas.KINDS)
    assert {"task.gated", "run.finished", "plugin.failed", "kernel.handled"} <= listed
    assert any(line.startswith("record Task ") for line in proc.stdout.splitlines())


def test_schemas_json_schema(envk) -> None:
    proc = envk("schemas", "--json-schema")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    defs = doc["$defs"]
    assert len(doc["events"]) == len(envkernel_schemas.EVENT_TYPES)
    for name in doc["events"]:
        assert name in defs and defs[name]["type"] == "object"
    assert {"Task", "EnvSpec", "Trajectory", "Reward"} <= set(defs)
    # every $ref resolves inside the document
    refs = set()

    def walk(x: object) -> None:
        if isinstance(x, dict):
            if "$ref" in x:
                refs.add(x["$ref"])
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(doc)
    assert refs and all(r.startswith("#/$defs/") and r.split("/")[-1] in defs for r in refs)
