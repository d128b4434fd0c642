"""Roles are checked when a component registers: a component that lacks a method its role requires
is refused at load with a message naming the component, its role and the method; its plugin
counts as broken, like a plugin that fails to import. Optional methods (``finish``, ``update``,
``apply_update``, ``aclose``) are Protocols of their own, never required.

The refused plugin is a distribution the test writes into a temp folder and installs there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envkernel.roles import (
    ROLE_PROTOCOLS,
    AppliesUpdates,
    Finishes,
    Trainer,
    Updates,
    missing_methods,
)

pytestmark = pytest.mark.timeout(300)

PLUGIN = '''
"""A policy with a typo: ``roll_out`` instead of ``rollout``."""

from envkernel.hookspecs import hookimpl


class Lazy:
    """Policy ``lazy``: it cannot roll out."""

    def roll_out(self, request, env, ctx):
        """Misspelt."""
        raise AssertionError("never called")


@hookimpl
def register_policies(register):
    """Register ``lazy``."""
    register("lazy", Lazy)
'''

REASON = "component 'lazy' (policy) has no method rollout, which its role requires"


@pytest.fixture(scope="module")
def lazy_site(tmp_path_factory: pytest.TempPathFactory, plugin_dist) -> Path:  # type: ignore[no-untyped-def]
    """The ``lazy`` plugin, installed into a folder outside the repo."""
    return plugin_dist(
        tmp_path_factory.mktemp("lazy"),
        "envkernel-lazy",
        "envkernel_lazy",
        PLUGIN,
        {"lazy": "envkernel_lazy"},
    )


def test_required_and_optional_methods() -> None:
    assert {role: missing_methods(role, object) for role in ROLE_PROTOCOLS} == {
        "synthesizer": ["synthesize"],
        "sandbox_runner": ["open"],
        "verifier": ["verify"],
        "sampler": ["sample"],
        "policy": ["rollout"],
        "reward_model": ["score"],
        "trainer": ["consume"],
        "user": ["reply"],
    }

    class Consumes:
        def consume(self, group: object, ctx: object) -> None:
            """Take a group."""

    class Full(Consumes):
        def update(self, ended: object, ctx: object) -> None:
            """No update."""

        def finish(self, ctx: object) -> None:
            """Nothing to flush."""

    assert missing_methods("trainer", Consumes) == [] and isinstance(Consumes(), Trainer)
    assert not isinstance(Consumes(), Finishes) and not isinstance(Consumes(), Updates)
    assert (
        isinstance(Full(), Finishes)
        and isinstance(Full(), Updates)
        and not isinstance(Full(), AppliesUpdates)
    )


def test_the_plugin_list_shows_the_refusal(envk, lazy_site: Path) -> None:
    proc = envk("plugins", "--json", env={"PYTHONPATH": str(lazy_site)})
    assert proc.returncode == 0, proc.stderr
    row = next(r for r in json.loads(proc.stdout) if r["name"] == "lazy")
    assert REASON in row["error"] and row["components"] == []


def test_a_run_skips_the_refused_plugin(envk, lazy_site: Path) -> None:
    run = envk.run(
        "--plugins",
        "+lazy",
        "--set",
        "chains.tasks_per_env=3",
        run_id="lazy",
        env={"PYTHONPATH": str(lazy_site)},
    )
    assert f"warning: plugin 'lazy' is broken and was skipped: {REASON}" in run.proc.stderr
    s = run.summary
    assert s["broken_plugins"] == {"lazy": REASON}
    assert "lazy" not in s["plugins"]["policy"] and s["tasks"] > 0 and s["failures"] == 0
    assert (
        run.proc.returncode == 1 and s["exit_code"] == 1
    )  # a selected plugin is missing from the run


def test_a_run_that_needs_the_refused_component_does_not_start(envk, lazy_site: Path) -> None:
    proc = envk(
        "run",
        "--no-progress",
        "--source",
        "sample",
        "--plugins",
        "+lazy",
        "--policy",
        "lazy",
        env={"PYTHONPATH": str(lazy_site)},
    )
    assert (
        proc.returncode == 2
        and "--policy names policy 'lazy', which no selected plugin provides" in proc.stderr
    )
