"""A third-party plugin distribution (tests/thirdparty/envkernel-mysampler), built and installed
for real into a folder on ``PYTHONPATH``: discovered by its entry point, listed, selected with
``--plugins``, and its sampler's task goes through the whole pipeline.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envkernel.plugins import default_preset, load

pytestmark = pytest.mark.timeout(300)


def _pp(site: Path) -> dict[str, str]:
    return {"PYTHONPATH": str(site)}


def test_plugins_json_lists_the_third_party_plugin(envk, thirdparty_site: Path) -> None:
    proc = envk("plugins", "--json", env=_pp(thirdparty_site))
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    mine = rows["mysampler"]
    assert mine["distribution"] == "envkernel-mysampler"
    assert mine["version"] == "0.3.1"
    assert mine["roles"] == ["sampler"]
    assert mine["components"] == ["mysampler"]
    assert mine["default"] is False
    assert "error" not in mine
    for name in default_preset():
        assert rows[name]["default"] is True, name
    assert rows["crashy"]["roles"] == ["policy"] and rows["badsampler"]["roles"] == ["sampler"]


def test_without_its_site_the_plugin_is_unknown(envk) -> None:
    proc = envk("run", "--plugins", "+mysampler", "--no-progress")
    assert proc.returncode == 2 and "unknown plugin 'mysampler'" in proc.stderr


def test_run_with_only_the_third_party_sampler(envk, thirdparty_site: Path) -> None:
    run = envk.run(
        "--plugins", "+mysampler,-chains,-workspace", run_id="mine", env=_pp(thirdparty_site)
    )
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    s = run.summary
    assert s["plugins"]["sampler"] == ["mysampler"]
    assert s["tasks"] == 1 and s["rollouts"] == 1 and s["mean_reward"] == 1.0 and s["failures"] == 0
    (task,) = run.jsonl("tasks.jsonl")
    assert task["sampler"] == "mysampler"
    assert task["id"] == "mysampler-shop-v1-prd_0003"
    assert task["calls"] == [
        {"name": "get_product", "arguments": {"product_id": "prd_0003"}, "id": ""}
    ]
    # the answer fact came from a real call in a sandbox of the run's runner
    assert task["outcome"]["answer_facts"] == ["wireless mouse"]
    assert task["outputs"][0]["price_cents"] == 2450
    cfg = run.config
    assert "mysampler" in cfg["selected"] and "chains" not in cfg["selected"]
    assert cfg["components"]["sampler"] == ["mysampler"]
    (sft,) = run.jsonl("sft.jsonl")
    assert sft["messages"][1]["content"] == "What is the product prd_0003 called?"


@pytest.fixture(scope="module")
def two_samplers(envk_factory, thirdparty_site: Path):  # type: ignore[no-untyped-def]
    """One run with two samplers: chains (3 tasks) and mysampler (1 task)."""
    envk = envk_factory("both")
    run = envk.run(
        "--plugins",
        "+mysampler",
        "--set",
        "chains.tasks_per_env=3",
        run_id="both",
        env=_pp(thirdparty_site),
    )
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    return run


def test_two_samplers_each_get_the_verified_environment(two_samplers) -> None:  # type: ignore[no-untyped-def]
    run = two_samplers
    assert sorted(run.summary["plugins"]["sampler"]) == [
        "chains",
        "mysampler",
        "workspace-tasks",
    ]  # the preset has two samplers
    by_sampler: dict[str, int] = {}
    for t in run.jsonl("tasks.jsonl"):
        by_sampler[t["sampler"]] = by_sampler.get(t["sampler"], 0) + 1
    assert by_sampler.get("mysampler") == 1
    assert 1 <= by_sampler.get("chains", 0) <= 3
    assert run.summary["tasks"] == sum(by_sampler.values())


def test_two_samplers_count_one_verified_environment(two_samplers) -> None:  # type: ignore[no-untyped-def]
    s = two_samplers.summary
    assert s["envs_synthesized"] == 1
    assert s["envs_verified"] == 1


def test_plugin_settings_from_the_config_file(envk, thirdparty_site: Path) -> None:
    cfg = envk.cwd / "mine.toml"
    cfg.write_text('plugins = "+mysampler,-chains"\n[mysampler]\nproduct_id = "prd_0005"\n')
    run = envk.run("--config", str(cfg), run_id="fromfile", env=_pp(thirdparty_site))
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    (task,) = run.jsonl("tasks.jsonl")
    assert task["outcome"]["answer_facts"] == ["27-inch monitor"]
    bad = envk.cwd / "bad.toml"
    bad.write_text('plugins = "+mysampler,-chains"\n[mysampler]\nproduct = "prd_0005"\n')
    proc = envk("run", "--config", str(bad), "--no-progress", env=_pp(thirdparty_site))
    assert proc.returncode == 2 and "product" in proc.stderr and "mysampler" in proc.stderr


def test_plugin_command_through_register_commands(envk, thirdparty_site: Path) -> None:
    proc = envk("mysampler-hello", "bob", env=_pp(thirdparty_site))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "hello bob from mysampler"
    assert "broken" not in proc.stderr  # a declared command imports its own plugin only
    helped = envk("--help", env=_pp(thirdparty_site))
    # listed from its `envkernel.commands` entry point: --help imports no plugin, broken ones too
    assert helped.returncode == 0 and "mysampler-hello" in helped.stdout
    assert "broken" not in helped.stderr
    assert "mysampler-hello" not in envk("--help").stdout
    # an unknown name loads every plugin (a command added by the hook alone runs too): the broken
    # plugin in the same site is reported, and does not break the CLI
    unknown = envk("no-such-command", env=_pp(thirdparty_site))
    assert unknown.returncode == 2 and "No such command" in unknown.stderr
    assert "broken" in unknown.stderr


def test_components_of_a_role_follow_the_selection_order(
    thirdparty_site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(thirdparty_site))
    # (plugins.load() once iterated the hook implementations reversed: the last plugin selected came
    # first)
    for selection in (["chains", "mysampler"], ["mysampler", "chains"]):
        reg = load(selection, strict=True)
        assert [c.name for c in reg.by_role("sampler")] == selection
