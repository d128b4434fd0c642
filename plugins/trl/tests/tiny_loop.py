"""The trainer and the server on a tiny model, in the trainers venv (torch, transformers, peft).

Run by test_trl.py as ``.venv-trainers/bin/python tiny_loop.py OUT``. Nothing is downloaded: a
byte-level BPE tokenizer is trained here on the conversations, with SmolLM2's own ChatML template
(which renders no tools, so the Hermes path of envkernel_trl.chat is the one used), and a Llama
of the same architecture as SmolLM2 is made from a config with random weights. It:

1. gives the real ``trl`` trainer a real scored group (one rollout that did the job, one that did
   not) through ``consume``; checks that one SFT step and one GRPO step each change the LoRA
   weights;
2. ends the iteration: ``update`` saves the adapter and returns the ``policy.updated`` update;
3. serves the base model with ``envkernel_trl.server`` on a free port,

and prints one JSON line (the checks, the update as msgspec JSON, the port), then serves until its
stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import msgspec
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from envkernel_kit.testing import FakeContext
from envkernel_schemas import (
    GroupScored,
    IterationEnded,
    Outcome,
    Reward,
    ScoredRollout,
    Task,
    ToolCall,
    ToolSpec,
    Trajectory,
)
from envkernel_trl import TrlSettings, TrlTrainer, chat
from envkernel_trl.server import Model, serve

SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
TOOLS = [
    ToolSpec(
        name="get_product",
        description="Get a product.",
        parameters={"type": "object", "properties": {"product_id": {"type": "integer"}}},
    )
]
TASK = Task(
    id="t1",
    env_id="shop",
    request="What does the chair cost?",
    calls=[ToolCall(name="get_product", arguments={"product_id": 2})],
    outcome=Outcome(mutates=False, answer_facts=["149"]),
)
GOOD = [
    {"role": "system", "content": "Use the tools."},
    {"role": "user", "content": TASK.request},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_product", "arguments": '{"product_id": 2}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"id": 2, "price": 149}'},
    {"role": "assistant", "content": "The chair costs 149."},
]
BAD = [*GOOD[:2], {"role": "assistant", "content": "I do not know."}]


def tokenizer(corpus: list[str]) -> PreTrainedTokenizerFast:
    """A byte-level BPE trained on ``corpus``, with SmolLM2's special tokens and template."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=2000,
            special_tokens=special,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=SMOLLM2_TEMPLATE,
    )


def group(rewards: tuple[float, float]) -> GroupScored:
    """A scored group of TASK: the rollout that did the job and the one that did not."""
    rollouts = [
        ScoredRollout(
            trajectory=Trajectory(task_id=TASK.id, policy="openai", index=i, messages=m),
            reward=Reward(score=r),
        )
        for i, (m, r) in enumerate(((GOOD, rewards[0]), (BAD, rewards[1])))
    ]
    return GroupScored(run="test-run", id="g1", task=TASK, rollouts=rollouts)


def lora_weights(trainer: TrlTrainer) -> torch.Tensor:
    """Every trainable (LoRA) weight, flattened."""
    return torch.cat([p.detach().flatten().clone() for p in trainer.learner.params])


def build_base(base: Path) -> PreTrainedTokenizerFast:
    """A tiny random Llama (SmolLM2's architecture) and its tokenizer, saved in ``base``."""
    torch.manual_seed(0)
    probe = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.BPE()), chat_template=SMOLLM2_TEMPLATE
    )
    tools = chat.tool_defs(TOOLS)
    corpus = [chat.prompt_text(probe, m, tools) for m in (GOOD, BAD)] * 4
    tok = tokenizer(corpus)
    cfg = LlamaConfig(  # SmolLM2's architecture, scaled down
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
    )
    LlamaForCausalLM(cfg).save_pretrained(base)
    tok.save_pretrained(base)
    return tok


def main(out: Path) -> None:
    """Build, train, update, serve; print the JSON line."""
    base = out / "base"
    tok = build_base(base)
    checks: dict[str, object] = {}
    settings = TrlSettings(model=str(base), device="cpu", learning_rate=5e-2, batch_size=2)
    trainer = TrlTrainer(settings)
    ctx = FakeContext(
        component="trl", role="trainer", out_dir=out, envs={"shop": SimpleNamespace(tools=TOOLS)}
    )
    asyncio.run(trainer.consume(group((1.0, 0.0)), ctx))
    sft, grpo = trainer._buffer[0]["g1"]
    checks.update(sft_examples=len(sft), grpo_examples=len(grpo))
    trainer._learner()
    before = lora_weights(trainer)
    checks["sft_metrics"] = trainer.train(sft, [], seed=0)
    after_sft = lora_weights(trainer)
    checks["sft_changed"] = float((after_sft - before).abs().max())
    checks["grpo_metrics"] = trainer.train([], grpo, seed=1)
    checks["grpo_changed"] = float((lora_weights(trainer) - after_sft).abs().max())
    checks["advantages"] = [e[2] for e in grpo]
    for _ in range(30):  # enough SFT that the adapter's reply differs from the base's
        trainer.train(sft, [], seed=2)
    update = trainer.update(IterationEnded(run="test-run", id="e0", iteration=0), ctx)
    assert update is not None
    checks["adapter_files"] = sorted(
        p.name for p in Path(json.loads(update.data)["lora_path"]).iterdir()
    )

    served = LlamaForCausalLM.from_pretrained(base)
    served.eval()
    httpd = serve(Model(tok, served, "base", "cpu"), port=0)
    print(
        json.dumps(
            {
                "checks": checks,
                "update": msgspec.json.encode(update).decode(),
                "port": httpd.server_port,
            }
        ),
        flush=True,
    )
    sys.stdin.read()
    httpd.shutdown()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--base-only"]:  # the online loop's test: only the model folder
        build_base(Path(sys.argv[2]))
    else:
        main(Path(sys.argv[1]))
