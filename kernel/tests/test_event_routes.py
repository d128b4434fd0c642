"""Where each kind of event goes, and how the run config is merged (pure: no server, no plugin)."""

from __future__ import annotations

import pytest

from envkernel import config as cfgmod
from envkernel.config import ConfigError, RunConfig
from envkernel.event_routes import (
    BROADCAST_INPUTS,
    KERNEL_INPUTS,
    SERVED_KINDS,
    WORK_INPUTS,
    WORK_KINDS,
    expected_handlers,
    first,
    subject_of,
    synthesizer_for,
)
from envkernel_schemas import KINDS, RunStarted


def _config(**components: list[str]) -> RunConfig:
    return RunConfig(run_id="r1", components=dict(components))


def test_every_routed_kind_is_a_real_event_kind_and_each_goes_one_way() -> None:
    routed = [*WORK_KINDS, *KERNEL_INPUTS, *(k for ks in BROADCAST_INPUTS.values() for k in ks)]
    assert set(routed) <= set(KINDS)
    assert len(routed) == len(set(routed)), "a kind is both work, broadcast and/or kernel"
    assert set(WORK_KINDS) <= SERVED_KINDS and not (KERNEL_INPUTS & SERVED_KINDS)


def test_work_goes_to_the_chosen_component_else_the_first_active() -> None:
    config = _config(policy=["reference", "openai"])
    assert first(config, "policy") == "reference"
    assert first(config, "policy", "openai") == "openai"
    assert first(config, "trainer") == ""


def test_a_source_kind_finds_the_synthesizer_that_declares_it() -> None:
    config = _config(synthesizer=["sample", "openapi", "workspace"])
    sources = {"openapi": ("openapi", "spec"), "workspace": ("workspace", "pinchbench")}
    assert synthesizer_for(config, sources, "spec") == "openapi"
    assert synthesizer_for(config, sources, "sample") == "sample"  # no declaration: its own name
    assert synthesizer_for(config, sources, "pinchbench") == "workspace"
    assert synthesizer_for(config, sources, "nothing-handles-this") == ""


def test_expected_handlers_count_one_per_work_or_kernel_event_and_each_trainer() -> None:
    config = _config(trainer=["grpo", "reinforce"])
    for kind in WORK_INPUTS.values():
        assert expected_handlers(config, kind) == 1
    assert expected_handlers(config, "task.proposed") == 1
    assert expected_handlers(config, "group.scored") == 2
    assert expected_handlers(_config(), "group.scored") == 0
    assert expected_handlers(config, "run.finished") == 0


def test_the_subject_names_the_run_and_the_target() -> None:
    ev = RunStarted(run="r1", id="x", config={})
    assert subject_of(_config(), ev) == "envk.ev.r1.run.started"
    assert subject_of(_config(), ev, "sample") == "envk.ev.r1.run.started.sample"


def test_flags_override_the_environment_which_overrides_the_file() -> None:
    config = cfgmod.build({"seed": 1, "envs": 2}, {"seed": 2}, {"seed": 3, "envs": None}, {})
    assert (config.seed, config.envs) == (3, 2)


def test_a_setting_of_the_wrong_type_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match="seed"):
        cfgmod.build({"seed": "not a number"}, {}, {}, {})


def test_old_module_names_warn_and_re_export_the_same_objects() -> None:
    """``envkernel.router`` and ``envkernel.routing`` are deprecated names of ``worker`` and
    ``event_routes``: importing them warns and gives the same objects."""
    import importlib
    import sys

    import pytest

    from envkernel import event_routes, worker

    for old, new, name in (("router", worker, "Worker"), ("routing", event_routes, "subject_of")):
        sys.modules.pop(f"envkernel.{old}", None)
        with pytest.warns(DeprecationWarning, match=f"envkernel.{old} is deprecated"):
            mod = importlib.import_module(f"envkernel.{old}")
        assert getattr(mod, name) is getattr(new, name)
