"""docs/training.md's TRL blocks (SFT on sft.jsonl, then DPO on pairs.jsonl), run as written.

Run by tests/test_docs_training_examples.py in the trainers venv: it writes one JSON line on
stdin, ``[SFT_BLOCK, DPO_BLOCK, RUN, OUT.json]``. The blocks run in one scope (the DPO block uses
the SFT block's imports and ``as_objects``), with three substitutions: the page's
``/data/runs/r1`` is RUN, ``model=`` is the local SmolLM2-135M-Instruct folder (smollm2.py), and
``args=`` is one bounded CPU step (``max_steps=1``, batch 1, the page's ``max_length``). Nothing is
downloaded (``HF_HUB_OFFLINE=1``).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from smollm2 import hf_folder

BOUNDED = (
    "{cls}(output_dir={out!r}, use_cpu=True, bf16=False, max_steps=1, "
    "per_device_train_batch_size=1, max_length=8192, logging_steps=1, report_to='none', "
    "save_strategy='no', seed=0{extra})"
)


def substitute(block: str, run: str, model: str, cls: str, extra: str = "") -> str:
    """The block with the run folder, the local model and one bounded step."""
    block = block.replace("/data/runs/r1", run)
    block, n_model = re.subn(r'model="[^"]+"', f"model={model!r}", block)
    bounded = BOUNDED.format(cls=cls, out=tempfile.mkdtemp(prefix="docs-"), extra=extra)
    block, n_args = re.subn(rf"args={cls}\([^)]*\)", f"args={bounded}", block)
    assert n_model == 1 and n_args == 1, f"the block has no model= or args={cls}(...) line"
    return block


def main(sft: str, dpo: str, run: str, out: str) -> None:
    """Run both blocks; write each trainer's step count, loss and times to ``out``."""
    torch.manual_seed(0)
    folder = str(hf_folder())
    scope: dict[str, object] = {"__name__": "__docs__"}
    got = {}
    for name, block, cls in (("sft", sft, "SFTConfig"), ("dpo", dpo, "DPOConfig")):
        code = substitute(block, run, folder, cls)
        started, cpu = time.monotonic(), time.process_time()
        exec(compile(code, "docs/training.md", "exec"), scope)
        trainer = scope["trainer"]
        got[name] = {
            "seconds": time.monotonic() - started,
            "cpu_seconds": time.process_time() - cpu,
            "global_step": trainer.state.global_step,
            "rows": len(trainer.train_dataset),
            "logs": trainer.state.log_history,
        }
    with open(out, "w") as f:
        json.dump(got, f, default=str)


if __name__ == "__main__":
    main(*json.loads(sys.stdin.readline()))
