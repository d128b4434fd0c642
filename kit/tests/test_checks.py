"""The conformance checks: every default component passes its role's check, and a broken one
fails with a message naming what is wrong. Real sandboxes (``process``) and the real ``shop-v1``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envkernel_kit.checks import (
    ConformanceError,
    check_policy,
    check_reward_model,
    check_sampler,
    check_sandbox_runner,
    check_synthesizer,
    check_trainer,
    check_verifier,
    planted_rows,
    sample_env,
    sample_task,
)
from envkernel_schemas import (
    EnvRequested,
    PolicyUpdate,
    Reward,
    Task,
    ToolCall,
    ToolResult,
    Trajectory,
)

process = pytest.importorskip("envkernel_process")
sample = pytest.importorskip("envkernel_sample")


def test_the_sample_synthesizer_conforms() -> None:
    envs = check_synthesizer(sample.SampleSynthesizer())
    assert [e.id for e in envs] == ["shop-v1"]


def test_the_openapi_synthesizer_conforms() -> None:
    openapi = pytest.importorskip("envkernel_openapi")
    shop = next(f for f in openapi.corpus_files() if f.stem == "shop")
    envs = check_synthesizer(
        openapi.OpenAPISynthesizer(),
        EnvRequested(run="r", id="e", source_kind="openapi", source=str(shop)),
    )
    assert len(envs) == 1


def test_the_process_runner_conforms() -> None:
    check_sandbox_runner(process.ProcessRunner())


def test_the_probe_verifier_conforms() -> None:
    probe = pytest.importorskip("envkernel_probe")
    report = check_verifier(probe.Probe())
    assert report.kept


def test_the_chains_and_walk_samplers_conform(tmp_path: Path) -> None:
    chains = pytest.importorskip("envkernel_chains")
    from envkernel_chains.walk import Walk, WalkSettings

    assert check_sampler(chains.Chains(chains.Settings(tasks_per_env=3)), out_dir=tmp_path)
    assert check_sampler(Walk(WalkSettings(tasks_per_env=3)), out_dir=tmp_path)


def test_the_baseline_policies_conform() -> None:
    baselines = pytest.importorskip("envkernel_baselines")
    traj = check_policy(baselines.Reference(), name="reference")
    assert [r.call.name for r in traj.calls] == ["get_product"] and traj.calls[0].result.ok
    assert check_policy(baselines.Nothing(), name="nothing").calls == []


def test_the_reward_models_conform() -> None:
    traceoutcome = pytest.importorskip("envkernel_traceoutcome")
    checklist = pytest.importorskip("envkernel_checklist")
    ref, nothing = check_reward_model(traceoutcome.TraceOutcome(), name="traceoutcome")
    assert (ref.score, nothing.score) == (1.0, 0.0)
    assert len(check_reward_model(checklist.Checklist(), name="checklist")) == 2


def test_the_trainers_conform(tmp_path: Path) -> None:
    export = pytest.importorskip("envkernel_export")
    grpo = pytest.importorskip("envkernel_grpo")
    assert check_trainer(export.Sft(), tmp_path / "sft") is None
    assert check_trainer(grpo.Grpo(), tmp_path / "grpo") is None
    assert (tmp_path / "grpo" / "grpo.jsonl").read_text().count("\n") == 2


def test_the_reinforce_learner_returns_an_update(tmp_path: Path) -> None:
    reinforce = pytest.importorskip("envkernel_reinforce")
    learner = dict(_registered(reinforce, "register_trainers"))["reinforce-learner"]
    update = check_trainer(learner(), tmp_path)
    assert update is None or isinstance(update, PolicyUpdate)


def _registered(module: Any, hook: str) -> list[tuple[str, Any]]:
    got: list[tuple[str, Any]] = []
    getattr(module, hook)(lambda name, factory: got.append((name, factory)))
    return got


# --------------------------------------------------------------------------- broken components


class FloatReward:
    """Returns a bare float instead of a Reward."""

    def score(self, task: Task, trajectory: Trajectory, ctx: Any) -> float:
        return 1.0


class LoudReward:
    """Returns a score outside [0, 1]."""

    async def score(self, task: Task, trajectory: Trajectory, ctx: Any) -> Reward:
        return Reward(score=1.5)


class NoScore:
    """Has no score method at all."""

    def rate(self, task: Task) -> float:
        return 0.0


def test_a_reward_model_of_the_wrong_type_fails_clearly() -> None:
    with pytest.raises(
        ConformanceError, match=r"reward model FloatReward: score\(\) returned float, not a Reward"
    ):
        check_reward_model(FloatReward())
    with pytest.raises(
        ConformanceError, match=r"LoudReward: score\(\) gave 1.5 for the reference rollout"
    ):
        check_reward_model(LoudReward())
    with pytest.raises(ConformanceError, match=r"NoScore: has no method score\(\)"):
        check_reward_model(NoScore())


class WrongToolSampler:
    """Proposes a task whose chain calls a tool the environment does not have."""

    async def sample(self, env: Any, ctx: Any) -> Any:
        yield Task(
            id="t1",
            env_id=env.id,
            request="?",
            calls=[ToolCall(name="teleport")],
            outcome=sample_task(env).outcome,
        )


def test_a_sampler_calling_unknown_tools_fails_clearly() -> None:
    with pytest.raises(
        ConformanceError,
        match=r"task 't1' calls tools the environment does not have: \['teleport'\]",
    ):
        check_sampler(WrongToolSampler())


class DictSynthesizer:
    """Returns a plain dict instead of an EnvSpec."""

    sources = ("dict",)

    def synthesize(self, request: EnvRequested, ctx: Any) -> dict[str, Any]:
        return {"id": "x"}


def test_a_synthesizer_returning_a_dict_fails_clearly() -> None:
    with pytest.raises(ConformanceError, match="returned dict, not an EnvSpec"):
        check_synthesizer(DictSynthesizer(), load=False)


class RaisingRunner:
    """A runner whose sessions raise on an unknown tool instead of answering with a failed
    result."""

    def __init__(self) -> None:
        self.inner = process.ProcessRunner()

    async def open(self, env: Any, seed: int) -> Any:
        session = await self.inner.open(env, seed)
        real_call = session.call

        async def call(tool: str, arguments: dict[str, Any]) -> ToolResult:
            if tool.startswith("__"):
                raise KeyError(tool)
            return await real_call(tool, arguments)

        session.call = call
        return session

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_a_runner_that_raises_for_a_tool_error_fails() -> None:
    runner = RaisingRunner()
    with pytest.raises(KeyError):
        check_sandbox_runner(runner)
    # the session stays usable for the real runner; a runner must answer tool errors as data
    check_sandbox_runner(process.ProcessRunner())


class WrappedRunner:
    """The real process runner, with each session's methods changed by :meth:`wrap`."""

    def __init__(self) -> None:
        self.inner = process.ProcessRunner()
        self.opened = 0

    async def open(self, env: Any, seed: int) -> Any:
        session = await self.inner.open(env, seed)
        self.opened += 1
        self.wrap(session)
        return session

    def wrap(self, session: Any) -> None:
        """Change the session (nothing here)."""

    async def aclose(self) -> None:
        await self.inner.aclose()


class IgnoresPatch(WrappedRunner):
    """Its ``patch`` accepts the rows and inserts none (a task's planted rows would be missing)."""

    def wrap(self, session: Any) -> None:
        async def patch(rows: list[dict[str, Any]]) -> int:
            return len(rows)

        session.patch = patch


class SecondSessionDiffers(WrappedRunner):
    """Each session after the first makes one extra call before its state is read: not the same
    state from the same start."""

    def wrap(self, session: Any) -> None:
        if self.opened < 2:
            return
        real_state, done = session.state, []

        async def state() -> dict[str, Any]:
            if not done:
                done.append(await session.call("cancel_order", {"order_id": "ord_0002"}))
            return await real_state()

        session.state = state


class CountingCalls(WrappedRunner):
    """Each successful call's value carries a process-wide counter: a replay gives other results."""

    count = 0

    def wrap(self, session: Any) -> None:
        real_call = session.call

        async def call(tool: str, arguments: dict[str, Any]) -> ToolResult:
            res = await real_call(tool, arguments)
            if not res.ok or not isinstance(res.value, dict):
                return res
            CountingCalls.count += 1
            return ToolResult(ok=True, value={**res.value, "n": CountingCalls.count})

        session.call = call


def test_a_runner_whose_calls_give_other_results_on_a_replay_fails() -> None:
    with pytest.raises(ConformanceError, match="the same calls from the same snapshot"):
        check_sandbox_runner(CountingCalls())


def test_a_runner_whose_patch_inserts_nothing_fails() -> None:
    with pytest.raises(ConformanceError, match="patch\\(\\) did not put the planted row"):
        check_sandbox_runner(IgnoresPatch())


def test_a_runner_whose_sessions_differ_from_the_same_start_fails() -> None:
    with pytest.raises(ConformanceError, match="seed 0 start in different states"):
        check_sandbox_runner(SecondSessionDiffers())


def test_the_planted_rows_are_new_rows_of_the_tables_with_ids() -> None:
    plants = planted_rows(
        {"empty": [], "t": [{"id": 3, "a": 1}, {"id": 7, "a": 2}], "u": [{"id": "x", "b": 2}]}
    )
    assert plants == [
        {"table": "t", "row": {"id": 1007, "a": 1}},
        {"table": "u", "row": {"id": "x-envkernel-check", "b": 2}},
    ]
    assert planted_rows({"workspace": [{"path": "a"}]}) == []


class DictUpdateTrainer:
    """Its update returns a dict instead of a PolicyUpdate."""

    def consume(self, group: Any, ctx: Any) -> None:
        pass

    def update(self, ended: Any, ctx: Any) -> dict[str, str]:
        return {"weights": "..."}

    def finish(self, ctx: Any) -> None:
        pass


class NoFinish:
    """A trainer without finish()."""

    def consume(self, group: Any, ctx: Any) -> None:
        pass


def test_a_trainer_of_the_wrong_shape_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(ConformanceError, match=r"DictUpdateTrainer: update\(\) returned dict"):
        check_trainer(DictUpdateTrainer(), tmp_path)
    with pytest.raises(ConformanceError, match=r"NoFinish: has no method finish\(\)"):
        check_trainer(NoFinish(), tmp_path)


class StringPolicy:
    """Returns the answer text instead of a Trajectory."""

    async def rollout(self, request: Any, env: Any, ctx: Any) -> str:
        return "done"


def test_a_policy_returning_text_fails_clearly() -> None:
    with pytest.raises(ConformanceError, match="rollout\\(\\) returned str, not a Trajectory"):
        check_policy(StringPolicy())


class RejectAll:
    """Rejects every environment."""

    def verify(self, env: Any, ctx: Any) -> Any:
        from envkernel_schemas import VerifyReport

        return VerifyReport(verifier="reject", kept=False, failures=["no"])


def test_a_verifier_rejecting_the_known_good_env_fails() -> None:
    with pytest.raises(ConformanceError, match="rejected 'shop-v1', a known-good environment"):
        check_verifier(RejectAll())


def test_sample_env_is_the_shipped_shop() -> None:
    assert sample_env().id == "shop-v1"


class DeclaresUnknownCapability(WrappedRunner):
    """Its sessions declare a capability no sandbox service knows."""

    def wrap(self, session: Any) -> None:
        session.capabilities = frozenset({"raw_call", "teleport"})


def test_a_runner_declaring_an_unknown_capability_fails() -> None:
    with pytest.raises(ConformanceError, match=r"unknown capabilities \['teleport'\]"):
        check_sandbox_runner(DeclaresUnknownCapability())
