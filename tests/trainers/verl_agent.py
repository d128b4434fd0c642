"""verl's own tool and agent-loop classes over a live ``envkernel serve`` (run in the trainers
venv).

    python tests/trainers/verl_agent.py URL RUN_DIR SCRIPTED_TASKS.jsonl OUT.json

* our tool config (``envkernel_serve.verl.tool_config``) written as YAML and loaded by verl's own
  ``initialize_tools_from_config``: each tool is an ``EnvkernelTool``, a real verl ``BaseTool``
  with verl's ``OpenAIFunctionToolSchema``;
* ``EnvkernelAgentLoop`` found in verl's agent-loop registry (``register("envkernel_agent")``)
  and built with ``hydra.utils.instantiate`` as verl's ``AgentLoopWorker._run_agent_loop`` does,
  with verl's config classes, its Continuous Token builder and its ``hermes`` tool parser;
* generation: verl asks a vLLM/SGLang replica for tokens (``server_manager.generate``), which
  cannot run here (no GPU). The stand-in reads the prompt the loop built (its tokens, decoded),
  asks a real HTTP server speaking the OpenAI API with scripted replies (envkernel_kit.scripted's
  Oracle, which replays a task's reference calls) for the next message, and returns it as tokens,
  the way a model server would. Tasks missing from SCRIPTED_TASKS get the Oracle's refusal.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import urllib.request
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import hydra
import yaml
from omegaconf import OmegaConf
from tiny import blank_tokenizer, make_tokenizer
from verl.experimental.agent_loop.agent_loop import (
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
)
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema
from verl.tools.tool_registry import initialize_tools_from_config
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.workers.rollout.replica import TokenOutput

import envkernel_serve.verl_agent  # noqa: F401 - registers envkernel_agent
from envkernel_kit.scripted import Oracle, ScriptedServer
from envkernel_serve.verl import EnvkernelTool, dataset_rows, tool_config


class ScriptedModelServer:
    """Stands in for verl's ``LLMServerClient`` (vLLM/SGLang replicas): prompt tokens in, response
    tokens out."""

    def __init__(self, base_url: str, tokenizer: Any, requests: list[str]) -> None:
        self.base_url, self.tokenizer, self.requests, self.prompts = (
            base_url,
            tokenizer,
            requests,
            [],
        )

    def _chat(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        req = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=json.dumps({"model": "m", "messages": messages}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())["choices"][0]["message"]

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **_: Any
    ) -> TokenOutput:
        """The next assistant message for the prompt, as the tokens a model would have sampled."""
        text = self.tokenizer.decode(prompt_ids)
        self.prompts.append(text)
        user = next((r for r in self.requests if r in text), "")
        messages = [{"role": "user", "content": user}] + [
            {"role": "tool", "content": ""}
        ] * text.count("<tool_response>")
        msg = await asyncio.to_thread(self._chat, messages)
        calls = "".join(
            "<tool_call>\n"
            + json.dumps(
                {
                    "name": c["function"]["name"],
                    "arguments": json.loads(c["function"]["arguments"]),
                }
            )
            + "\n</tool_call>"
            for c in msg.get("tool_calls") or []
        )
        ids = self.tokenizer.encode(
            (msg.get("content") or "") + calls + "<|im_end|>", add_special_tokens=False
        )
        return TokenOutput(token_ids=ids, log_probs=[0.0] * len(ids), stop_reason="completed")


def config() -> Any:
    """The part of verl's trainer config the agent loop reads."""
    return OmegaConf.create(
        {
            "actor_rollout_ref": {
                "rollout": {
                    "prompt_length": 4096,
                    "response_length": 8192,
                    "full_determinism": False,
                    "multi_turn": {
                        "max_user_turns": 8,
                        "max_assistant_turns": 8,
                        "max_parallel_calls": 4,
                        "max_tool_response_length": 100000,
                        "tool_response_truncate_side": "middle",
                        "format": "hermes",
                    },
                    "trace": {"token2text": False},
                }
            },
            "data": {"apply_chat_template_kwargs": {}, "mm_processor_kwargs": {}},
        }
    )


async def main(url: str, run_dir: str, scripted_tasks: str, out: str) -> None:
    """Load the tools through verl, play every task with the agent loop, write what came back."""
    tasks = [
        json.loads(line) for line in open(os.path.join(run_dir, "tasks.jsonl")) if line.strip()
    ]
    scripted = [json.loads(line) for line in open(scripted_tasks) if line.strip()]
    tools_yaml = os.path.join(tempfile.mkdtemp(prefix="verl-tools-"), "tools.yaml")
    with open(tools_yaml, "w") as f:
        yaml.safe_dump(await asyncio.to_thread(tool_config, url), f)
    tools = initialize_tools_from_config(tools_yaml)
    schemas = [t.tool_schema.model_dump(exclude_unset=True, exclude_none=True) for t in tools]
    base = blank_tokenizer()
    corpus = [
        base.apply_chat_template(
            [{"role": "user", "content": t["request"]}],
            tools=schemas,
            tokenize=False,
            add_generation_prompt=True,
        )
        for t in tasks
    ] * 3
    tokenizer = make_tokenizer(corpus, vocab_size=3000)
    cfg = config()
    rows = {
        r["extra_info"]["task_id"]: r for r in dataset_rows(run_dir, agent_name="envkernel_agent")
    }
    registered = {k: dict(v) for k, v in _agent_loop_registry.items()}  # what register() put there
    # The agent-loop config file, loaded as AgentLoopWorker loads agent_loop_config_path: the entry
    # (name, _target_, url) replaces the registered one, and hydra passes `url` to the loop.
    loops_yaml = os.path.join(os.path.dirname(tools_yaml), "agent_loops.yaml")
    with open(loops_yaml, "w") as f:
        yaml.safe_dump(
            [
                {
                    "name": "envkernel_agent",
                    "_target_": "envkernel_serve.verl_agent.EnvkernelAgentLoop",
                    "url": url,
                }
            ],
            f,
        )
    for entry in OmegaConf.load(loops_yaml):
        _agent_loop_registry[entry.name] = entry
    scripted_ids = {t["id"] for t in scripted}
    with ScriptedServer(Oracle(scripted)) as llm:
        gen = ScriptedModelServer(llm.base_url, tokenizer, [t["request"] for t in tasks])

        async def play(task: dict[str, Any]) -> dict[str, Any]:
            row = rows[task["id"]]
            loop = hydra.utils.instantiate(  # as verl's AgentLoopWorker._run_agent_loop builds it
                config=_agent_loop_registry[row["agent_name"]],
                trainer_config=DictConfigWrap(config=cfg),
                server_manager=gen,
                tokenizer=tokenizer,
                processor=None,
                hf_model_type=None,
                dataset_cls=RLHFDataset,
                data_config=DictConfigWrap(cfg.data),
                # the scripted task's loop reads its tools from the server (no tool config), the
                # other's from verl's loader
                tools=ToolListWrap([] if task["id"] in scripted_ids else tools),
            )
            output = await loop.run(
                {"temperature": 1.0},
                raw_prompt=row["prompt"],
                extra_info=row["extra_info"],
                tools_kwargs=row["extra_info"]["tools_kwargs"],
            )
            return {
                "task_id": task["id"],
                "loop_class": type(loop).__name__,
                "loop_url": loop.url,
                "loop_tools": sorted(loop.tools),
                "reward_score": output.reward_score,
                "num_turns": output.num_turns,
                "envkernel": output.extra_fields.get("envkernel"),
                "masked_tokens": output.response_mask.count(0),
                "response_tokens": len(output.response_ids),
                "response_text": tokenizer.decode(output.response_ids),
            }

        results = await asyncio.gather(*(play(t) for t in tasks))
    with open(out, "w") as f:
        json.dump(
            {
                "tools": [
                    {
                        "class": type(t).__name__,
                        "is_base_tool": isinstance(t, BaseTool),
                        "is_envkernel": isinstance(t, EnvkernelTool),
                        "schema_is_verls": isinstance(t.tool_schema, OpenAIFunctionToolSchema),
                        "name": t.name,
                    }
                    for t in tools
                ],
                "registry": registered,
                "results": results,
            },
            f,
            default=str,
        )


if __name__ == "__main__":
    # the arguments, or (when none) one JSON list of them on stdin: the test starts this script
    # first, so that its imports overlap making the run and starting the server
    asyncio.run(main(*(sys.argv[1:5] or json.loads(sys.stdin.readline()))))
