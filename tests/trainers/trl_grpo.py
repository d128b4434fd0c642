"""One real TRL ``GRPOTrainer`` step on the CPU with ``environment_factory=`` envkernel's TRL class.

Run by tests/test_trainers.py in the trainers venv (torch, trl; see scripts/install-trainers.sh):

    python tests/trainers/trl_grpo.py URL RUN_DIR TASK_ID OUT.json

Nothing is downloaded (HF_HUB_OFFLINE=1): the tokenizer is made here (tiny.py: a byte-level BPE
trained on the episode's own text, with TRL's Qwen2.5 chat template, which renders tools and whose
tool calls TRL knows how to parse); the model is a tiny Llama made from a config and
fitted here, in a few seconds, to play the task's reference calls and then stop. GRPOTrainer then
samples its completions, parses the tool calls, runs them through our class's methods against the
live ``envkernel serve``, and takes ``get_reward()`` (the server's check) as its reward column. The
script writes what the trainer logged and the rewards the server reports.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from datasets import Dataset
from tiny import blank_tokenizer, make_tokenizer
from transformers import LlamaConfig, LlamaForCausalLM
from trl import GRPOConfig, GRPOTrainer

from envkernel_serve.trl import dataset_rows, environment_factories, environment_factory


def main(url: str, run_dir: str, task_id: str, out: str) -> None:
    """Fit the tiny model to the task's reference play, then run GRPO steps; write the results to
    ``out``."""
    torch.manual_seed(0)
    torch.set_num_threads(1)  # a tiny model: more threads only contend on a shared machine
    # The run has two environments: TRL's dict form, one class per environment, each row's
    # `environment` column choosing its class (and the tools its prompt shows).
    factories = environment_factories(url)
    all_tasks = [json.loads(line) for line in open(os.path.join(run_dir, "tasks.jsonl"))]
    task = next(t for t in all_tasks if t["id"] == task_id)
    rows = dataset_rows(run_dir)
    row = next(r for r in rows if r["task_id"] == task_id)
    Env = factories[row["environment"]]
    other = next(r for r in rows if r["environment"] != row["environment"])
    routing = _routing(url, factories, row, other, all_tasks)
    # The reference play, through the class itself: the tool results the model will see.
    probe = Env()
    probe.reset(**row)
    results = [getattr(probe, c["name"])(**c["arguments"]) for c in task["calls"]]
    probe_reward = probe.get_reward()
    probe.close()
    calls = [
        {"type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
        for c in task["calls"]
    ]
    turn1 = (
        "\n".join(
            "<tool_call>\n"
            + json.dumps({"name": c["name"], "arguments": c["arguments"]})
            + "\n</tool_call>"
            for c in task["calls"]
        )
        + "<|im_end|>"
    )
    final = "Done.<|im_end|>"
    tool_msgs = [
        {"role": "tool", "name": c["name"], "content": r}
        for c, r in zip(task["calls"], results, strict=True)
    ]
    methods = [
        f
        for n, f in inspect.getmembers(Env, inspect.isfunction)
        if n not in ("reset", "get_reward") and not n.startswith("_")
    ]
    from transformers.utils import get_json_schema

    schemas = [get_json_schema(m) for m in methods]
    base = blank_tokenizer()
    convo = [*row["prompt"], {"role": "assistant", "content": "", "tool_calls": calls}, *tool_msgs]
    corpus = [
        base.apply_chat_template(convo, tools=schemas, tokenize=False, add_generation_prompt=True),
        turn1,
        final,
    ] * 4
    tokenizer = make_tokenizer(corpus)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=4,
            max_position_embeddings=4096,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            bos_token_id=None,
        )
    )
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id

    args = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="trl-grpo-"),
        use_cpu=True,
        bf16=False,
        max_steps=1,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=1024,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        learning_rate=1e-5,
        temperature=0.7,
        log_completions=False,
        dataloader_num_workers=0,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        args=args,
        processing_class=tokenizer,
        environment_factory=factories,
        train_dataset=Dataset.from_list([row] * 4),
    )

    # Fit the model to the episode, token by token as the trainer itself builds it (TRL's own
    # renderers).
    tools = trainer._env_tools[row["environment"]]
    prompt_ids = tokenizer.apply_chat_template(
        row["prompt"],
        tools=tools,
        add_generation_prompt=True,
        tokenize=True,
        chat_template=trainer.chat_template,
        return_dict=False,
    )
    t1 = tokenizer.encode(turn1, add_special_tokens=False)
    suffix = trainer._get_tool_suffix_ids(tool_msgs)
    t2 = tokenizer.encode(final, add_special_tokens=False)
    ids = torch.tensor([prompt_ids + t1 + suffix + t2])
    labels = ids.clone()
    labels[0, : len(prompt_ids)] = -100
    labels[0, len(prompt_ids) + len(t1) : len(prompt_ids) + len(t1) + len(suffix)] = -100
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    started, cpu, loss, steps = time.monotonic(), time.process_time(), float("nan"), 0
    model.train()
    for _ in range(300):
        loss_t = model(input_ids=ids, labels=labels).loss
        opt.zero_grad()
        loss_t.backward()
        opt.step()
        loss, steps = float(loss_t.detach()), steps + 1
        if loss < 0.01:
            break
    fit_seconds, fit_cpu = time.monotonic() - started, time.process_time() - cpu

    started = time.monotonic()
    trainer.train()
    train_seconds = time.monotonic() - started
    rewards = [e.get_reward() for e in trainer.environments or []]
    states = [e._s().state() for e in trainer.environments or []]
    logs = [h for h in trainer.state.log_history if any(k.startswith("rewards/") for k in h)]
    with open(out, "w") as f:
        json.dump(
            {
                "probe_reward": probe_reward,
                "fit_loss": loss,
                "fit_seconds": fit_seconds,
                "fit_cpu_seconds": fit_cpu,
                "fit_steps": steps,
                "train_seconds": train_seconds,
                "env_rewards": rewards,
                "env_states": states,
                "logs": logs,
                "reward_funcs": [getattr(r, "__name__", str(r)) for r in trainer.reward_funcs],
                "reward_func_names": list(trainer.reward_func_names),
                "env_tools": {
                    str(k): sorted(getattr(t, "__name__", str(t)) for t in v)
                    for k, v in trainer._env_tools.items()
                },
                "routing": routing,
                "tool_names": sorted(getattr(t, "__name__", str(t)) for t in tools),
                "prompt_tokens": len(prompt_ids),
                "sequence_tokens": int(ids.shape[1]),
            },
            f,
            default=str,
        )


def _routing(
    url: str, factories: dict[str, type], row: dict, other: dict, tasks: list[dict]
) -> dict[str, object]:
    """A row of the other environment through each class: its own class plays it (its first
    reference call answers), the single class routes it, the wrong class says which to use."""
    by_id = {t["id"]: t for t in tasks}
    out: dict[str, object] = {}
    first = by_id[other["task_id"]]["calls"][0]
    own = factories[other["environment"]]()
    own.reset(**{k: v for k, v in other.items() if k != "environment"})
    out["own_class_call"] = (
        json.loads(getattr(own, first["name"])(**first["arguments"])) is not None
    )
    own.close()
    single = environment_factory(url)()  # every environment's tools: resets each row into its env
    single.reset(**other)
    out["single_class_call"] = (
        json.loads(getattr(single, first["name"])(**first["arguments"])) is not None
    )
    single.reset(**row)
    out["single_class_env_after"] = single._s().state()["env_id"]
    single.close()
    try:
        factories[row["environment"]]().reset(**other)
        out["wrong_class_error"] = ""
    except ValueError as exc:
        out["wrong_class_error"] = str(exc)
    return out  # the instance of the wrong class is never closed: the interpreter still exits


if __name__ == "__main__":
    # the arguments, or (when none) one JSON list of them on stdin: the test starts this script
    # first, so that its imports overlap making the run and starting the server
    main(*(sys.argv[1:5] or json.loads(sys.stdin.readline())))
