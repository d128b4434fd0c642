"""The gate has its own judge (``gate_reward``, default ``traceoutcome``); ``--reward`` scores the
training rollouts only.

The case of issue 12: a third-party reward model that scores every rollout 0.5, installed from
outside the repo and selected with ``--plugins +it --reward it``, used to make the gate reject every
task of a bare run (exit 0, ``mean_reward`` null). The distribution is written by the test into a
temp folder, built and installed there for real.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)

PLUGIN = '''
"""A reward model a user might train with: every rollout scores 0.5."""

from envkernel.hookspecs import hookimpl
from envkernel_schemas import Reward


class Half:
    """Reward model ``it``: a constant 0.5."""

    def score(self, task, trajectory, ctx):
        """Score any rollout 0.5."""
        return Reward(score=0.5, reasons=["constant"])


@hookimpl
def register_reward_models(register):
    """Register ``it``."""
    register("it", Half)
'''


@pytest.fixture(scope="module")
def it_site(tmp_path_factory: pytest.TempPathFactory, plugin_dist) -> Path:  # type: ignore[no-untyped-def]
    """The ``it`` plugin, installed into a folder outside the repo (for ``PYTHONPATH``)."""
    return plugin_dist(
        tmp_path_factory.mktemp("it"),
        "envkernel-it",
        "envkernel_it",
        PLUGIN,
        {"it": "envkernel_it"},
    )


def test_a_constant_training_reward_does_not_decide_which_tasks_exist(envk, it_site: Path) -> None:
    # a bare run: the shipped corpus, the default plugins
    run = envk.run(
        "--plugins",
        "+it",
        "--reward",
        "it",
        run_id="half",
        source=None,
        env={"PYTHONPATH": str(it_site)},
        timeout=240,
    )
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    s = run.summary
    assert s["reward"] == "it" and s["gate_reward"] == "traceoutcome"
    assert s["envs_verified"] == 7 and s["tasks"] > 0
    assert s["mean_reward"] == 0.5 and s["rollouts"] == s["tasks"]
    assert "task:reference_below_1" not in s["rejected"], s["rejected"]
    rollouts = run.jsonl("rollouts.jsonl")
    assert {r["reward"]["model"] for r in rollouts} == {"it"} and {
        r["reward"]["score"] for r in rollouts
    } == {0.5}
    assert run.config["gate_reward"] == "traceoutcome" and run.config["reward"] == "it"


def test_the_gate_can_be_judged_by_the_training_reward_when_asked(envk, it_site: Path) -> None:
    run = envk.run(
        "--plugins",
        "+it",
        "--reward",
        "it",
        "--gate-reward",
        "it",
        "--set",
        "chains.tasks_per_env=3",
        run_id="gateit",
        env={"PYTHONPATH": str(it_site)},
    )
    s = run.summary
    assert s["gate_reward"] == "it" and s["tasks"] == 0 and s["tasks_proposed"] > 0
    assert s["rejected"] == {"task:reference_below_1": s["tasks_proposed"]}
    assert (
        run.proc.returncode == 4 and s["exit_code"] == 4
    )  # finished, nothing failed, no task emitted


def test_an_unknown_gate_judge_is_a_usage_error_naming_it(
    envk, it_site: Path, tmp_path: Path
) -> None:
    proc = envk("run", "--no-progress", "--source", "sample", "--gate-reward", "nosuch")
    assert (
        proc.returncode == 2
        and "gate_reward = 'nosuch'" in proc.stderr
        and "traceoutcome" in proc.stderr
    )
    # the default judge, when its plugin is not selected
    cfg = tmp_path / "gate.toml"
    cfg.write_text('plugins = "+it,-traceoutcome"\nreward = "it"\n')
    proc = envk(
        "run",
        "--no-progress",
        "--source",
        "sample",
        "--config",
        str(cfg),
        env={"PYTHONPATH": str(it_site)},
    )
    assert (
        proc.returncode == 2
        and "gate_reward = 'traceoutcome'" in proc.stderr
        and "active: it" in proc.stderr
    )
