"""Errors are classified at the failure boundary: a sandbox that dies under a rollout is an
infrastructure fault. The rollout is retried; if the fault persists it fails as ``infra``, is
counted apart from the plugins' failures, and a gate rollout that failed so rejects its task as
``gate_infra``, never ``reference_below_1``.

The fault is real: a plugin distribution built into a temp folder registers the runner ``dying``,
the ``process`` runner whose rollout sandboxes (opened for a verified environment) are killed at
their first call or state dump, their executor SIGKILLed and the session closed, as when the host
loses them (or, with ``dying.close=false``, only the executor killed as a tool call goes out: the
call answers ``crashed``, which must not count as the policy's failure). Its sampler ``fixed``
proposes tasks without any sandbox, so only rollouts meet the
fault.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)

PLUGIN = '''
"""Test-only plugins: the runner ``dying`` and the sampler ``fixed``."""

from __future__ import annotations

import os
import re
import signal

import msgspec
from envkernel.hookspecs import hookimpl
from envkernel_process import ProcessRunner
from envkernel_schemas import Outcome, Task, ToolCall


class DyingSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of ``dying``."""

    deaths: int = 1_000_000
    """How many rollout sandboxes die (the first ones opened)."""
    close: bool = True
    """Close the session too (the host lost it); false: only the executor is killed, as the call
    goes out, so the call itself answers ``crashed`` (the executor died under it)."""


class Dying(ProcessRunner):
    """The ``process`` runner, except that its first ``deaths`` rollout sandboxes die when first \
used."""

    Settings = DyingSettings

    def __init__(self, settings: DyingSettings) -> None:
        super().__init__(None)
        self.deaths, self.close = settings.deaths, settings.close

    async def open(self, env, seed):
        session = await super().open(env, seed)
        session.take_lane = lambda: None  # no direct lane: its calls would skip the call path \
faults are injected in
        if env.report is None:  # not a verified environment: not a rollout's sandbox
            return session
        call, state = session.call, session.state
        if not self.close:  # the executor dies as one of the first ``deaths`` tool calls goes out
            call_raw = session.call_raw  # what the sandbox service calls (and call() too)

            async def crash(tool, arguments):
                if session.pid and self.deaths > 0:
                    self.deaths -= 1
                    os.killpg(session.pid, signal.SIGKILL)  # no await before the call: the host \
has not noticed yet
                return await call_raw(tool, arguments)

            session.call_raw = crash
        elif self.deaths > 0:
            self.deaths -= 1

            async def die(op):
                if session.pid:
                    os.killpg(session.pid, signal.SIGKILL)
                await session.close()
                return await op()

            session.call = lambda tool, arguments: die(lambda: call(tool, arguments))
            session.state = lambda: die(state)
        return session


class Fixed:
    """Sampler ``fixed``: "what is product X \
called?" for every product in the seed, with no sandbox."""

    def sample(self, env, ctx):
        for pid, name in re.findall(r"\\('(prd_\\d+)', '([^']+)'", env.seed_sql):
            yield Task(id=f"fixed-{pid}", env_id=env.id, \
request=f"What is the product {pid} called?",
                       calls=[ToolCall(name="get_product", arguments={"product_id": pid})],
                       outcome=Outcome(mutates=False, answer_facts=[name]), \
signature="get_product", sampler=ctx.component)


@hookimpl
def register_sandbox_runners(register):
    """Register ``dying``."""
    register("dying", Dying)


@hookimpl
def register_samplers(register):
    """Register ``fixed``."""
    register("fixed", Fixed)
'''


@pytest.fixture(scope="module")
def dying_site(tmp_path_factory: pytest.TempPathFactory, plugin_dist) -> Path:  # type: ignore[no-untyped-def]
    """The test-only distribution, installed into a folder outside the repo."""
    return plugin_dist(
        tmp_path_factory.mktemp("dying"),
        "envkernel-dying-test",
        "envkernel_dying_test",
        PLUGIN,
        {"dying": "envkernel_dying_test"},
    )


def _run(envk, site: Path, run_id: str, *extra: str):  # type: ignore[no-untyped-def]
    """A ``--source sample`` run whose runner is ``dying`` and whose sampler is ``fixed``."""
    return envk.run(
        "--plugins",
        "+dying,-process,-chains",
        "--runner",
        "dying",
        *extra,
        run_id=run_id,
        env={"PYTHONPATH": str(site)},
    )


def test_a_sandbox_that_keeps_dying_fails_the_gate_as_infra(envk, dying_site: Path) -> None:
    run = _run(envk, dying_site, "dying")
    s = run.summary
    assert s["tasks_proposed"] > 0 and s["tasks"] == 0
    # every gate rollout (reference, do-nothing and each near-miss mutant) died three times: 1 try +
    # the 2 default retries
    per_task = 2 + (run.config["gate_mutants"] if run.config["gate_mutant"] else 0)
    assert s["infra_failures"] == per_task * s["tasks_proposed"]
    assert s["rejected"] == {"task:gate_infra": s["tasks_proposed"]}, s["rejected"]
    assert s["failures"] == 0 and s["failures_by_plugin"] == {}  # not the policies' fault
    assert s["gate_rollouts"] == 0 and s["rollouts"] == 0 and s["mean_reward"] is None
    assert run.proc.returncode == 1 and s["exit_code"] == 1, run.proc.stderr[-3000:]
    rejected = run.jsonl("rejected.jsonl")
    assert all(r["reason"] == "gate_infra" and "SandboxError" in r["detail"] for r in rejected)
    fails = run.jsonl("failures.jsonl")
    assert len(fails) == s["infra_failures"]
    assert {(f["role"], f["event_kind"], f["classification"], f["error_type"]) for f in fails} == {
        ("policy", "rollout.requested", "infra", "SandboxError")
    }
    assert {f["plugin"] for f in fails} == {"reference", "nothing"} | (
        {run.config["gate_mutant"]} if per_task > 2 else set()
    )


def test_a_sandbox_that_dies_once_is_retried_and_the_task_is_kept(envk, dying_site: Path) -> None:
    run = _run(envk, dying_site, "once", "--set", "dying.deaths=1")
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    s = run.summary
    assert s["tasks"] == s["tasks_proposed"] > 0 and s["rejected"] == {}
    assert s["infra_failures"] == 0 and s["failures"] == 0 and s["mean_reward"] == 1.0
    assert "rollout met an infrastructure fault; retrying it" in run.proc.stderr


def test_with_no_retries_the_first_death_is_redelivered_not_failed(
    envk, dying_site: Path, tmp_path: Path
) -> None:
    """Without in-process retries, an infrastructure fault is not acked as ``plugin.failed``: the
    event is given back to JetStream, and its redelivery (here to the same process) succeeds."""
    cfg = tmp_path / "noretry.toml"
    cfg.write_text("infra_retries = 0\n[dying]\ndeaths = 1\n")
    run = _run(envk, dying_site, "noretry", "--config", str(cfg))
    s = run.summary
    assert s["infra_failures"] == 0 and s["rejected"] == {} and s["failures"] == 0, s
    assert s["tasks"] == s["tasks_proposed"] > 0
    assert (
        "retrying" not in run.proc.stderr
        and "giving an event back for redelivery" in run.proc.stderr
    )
    assert run.proc.returncode == 0


def test_a_tool_call_whose_executor_crashes_is_an_infra_fault_not_the_policys(
    envk, dying_site: Path
) -> None:
    """The executor is SIGKILLed as the rollout's tool call goes out (the session stays open): the
    call answers ``crashed``. That is retried as an infrastructure fault, so the reference still
    scores 1 and the task is kept; were it scored, the gate would reject it
    (``reference_below_1``)."""
    run = _run(envk, dying_site, "crashed", "--set", "dying.deaths=1", "--set", "dying.close=false")
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    s = run.summary
    assert s["tasks"] == s["tasks_proposed"] > 0 and s["rejected"] == {}, s["rejected"]
    assert s["infra_failures"] == 0 and s["failures"] == 0 and s["mean_reward"] == 1.0
    assert "rollout met an infrastructure fault; retrying it" in run.proc.stderr
    assert (
        "the sandbox crashed under tool call 'get_product'" in run.proc.stderr
        and "sandbox executor died" in run.proc.stderr
    )


def test_an_executor_that_keeps_crashing_under_calls_is_counted_as_infra(
    envk, dying_site: Path, tmp_path: Path
) -> None:
    cfg = tmp_path / "crashing.toml"
    cfg.write_text(
        "gate_mutants = 0\n[dying]\nclose = false\n"
    )  # no mutants: only the reference calls tools
    run = _run(envk, dying_site, "crashing", "--config", str(cfg))
    s = run.summary
    assert s["tasks_proposed"] > 0 and s["tasks"] == 0
    assert s["rejected"] == {"task:gate_infra": s["tasks_proposed"]}, s["rejected"]
    assert s["infra_failures"] > 0 and s["failures"] == 0 and s["failures_by_plugin"] == {}
    crashed = [f for f in run.jsonl("failures.jsonl") if "crashed under tool call" in f["message"]]
    assert (
        len(crashed) == s["infra_failures"] == s["tasks_proposed"]
    )  # each task's reference, after its 2 retries
    assert {(f["plugin"], f["classification"], f["error_type"]) for f in crashed} == {
        ("reference", "infra", "SandboxError")
    }


async def test_the_tool_env_raises_on_a_dead_executor_but_not_on_an_env_error_named_crashed() -> (
    None
):
    """At the boundary, with a real ``process`` sandbox: a call under which the executor dies
    raises ``SandboxError`` (and marks the rollout's fault); an environment that raises
    ``ToolError("crashed", ...)`` itself cannot pass for a dead executor (it answers
    ``tool_crashed``)."""
    import textwrap

    from envkernel.context import RecordingToolEnv
    from envkernel.errors import SandboxError
    from envkernel_process import ProcessRunner
    from envkernel_schemas import CodeBehaviour, EnvSpec, ToolSpec

    source = textwrap.dedent("""
        import os, signal

        def crash_report(env):
            raise ToolError("crashed", "the car crashed into the barrier")

        def die(env):
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    env = EnvSpec(
        id="crash-test",
        name="crash",
        tools=[ToolSpec(name="crash_report"), ToolSpec(name="die")],
        behaviour=CodeBehaviour(source=source),
        seed_sql="CREATE TABLE t (x INTEGER);",
    )
    runner = ProcessRunner()
    try:
        tool_env = RecordingToolEnv(await runner.open(env, 0), env.tools)
        res = await tool_env.call("crash_report", {})
        assert (
            res.error is not None
            and res.error.code == "tool_crashed"
            and "the car crashed" in res.error.message
        )
        assert (
            tool_env.fault is None and len(tool_env.records) == 1
        )  # the env's own error: the policy's to act on
        with pytest.raises(
            SandboxError,
            match=r"the sandbox crashed under tool call 'die': sandbox executor died \(exit code "
            r"-9",
        ):
            await tool_env.call("die", {})
        assert (
            tool_env.fault is not None and len(tool_env.records) == 1
        )  # not recorded as the policy's call
    finally:
        await runner.aclose()
