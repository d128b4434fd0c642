"""Conversations as the model sees them, and tool calls read back from what it writes.

Both the trainer and the server use these, so a model is trained on exactly the text it is later
prompted with. A chat template that renders tools itself (it mentions ``tools``, as Qwen's and
Llama 3.1's do) gets the tools and the tool calls as they are, with arguments as objects. A
template that does not (SmolLM2's plain ChatML) gets them in the Hermes format, written into the
messages: the tool list in the system message, each call as ``<tool_call>{"name", "arguments"}
</tool_call>`` in the assistant's text, each result as a user turn in ``<tool_response>``. Either
way the model's reply is parsed for ``<tool_call>`` blocks (:func:`parse_reply`).

No torch here: only a tokenizer's ``apply_chat_template`` and ``chat_template``.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from typing import Any

from envkernel_kit.messages import tool_defs as tool_defs  # the prompts' tool list (re-exported)

TOOL_PROMPT = (
    "You may call one or more functions to assist with the user query. The functions are listed "
    "in <tools></tools>:\n<tools>\n{tools}\n</tools>\n\nFor each function call, write a JSON "
    "object with the function name and arguments in <tool_call></tool_call> tags:\n<tool_call>\n"
    '{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>\n'
    "When you have the answer, write it as plain text, without tags."
)
"""The Hermes tool prompt, appended to the system message of a template without tools."""

_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_BLOCK = re.compile(r"<tool_call>.*?(?:</tool_call>|$)", re.S)


def renders_tools(tokenizer: Any) -> bool:
    """Whether the tokenizer's chat template renders a ``tools`` list itself."""
    return "tools" in str(getattr(tokenizer, "chat_template", "") or "")


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw or "{}")
        except ValueError:
            return raw
    return raw


def _hermes_call(tc: dict[str, Any]) -> str:
    fn = tc.get("function") or {}
    body = {"name": fn.get("name", ""), "arguments": _arguments(fn.get("arguments", "{}"))}
    return "<tool_call>\n" + json.dumps(body, ensure_ascii=False) + "\n</tool_call>"


def _hermes_message(m: dict[str, Any]) -> dict[str, Any]:
    role, content = m.get("role", ""), m.get("content") or ""
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    if role == "tool":
        return {"role": "user", "content": f"<tool_response>\n{content}\n</tool_response>"}
    if role == "assistant" and m.get("tool_calls"):
        parts = [content] if content else []
        parts += [_hermes_call(tc) for tc in m["tool_calls"]]
        return {"role": "assistant", "content": "\n".join(parts)}
    return {"role": role, "content": content}


def _param(schema: Any) -> str:
    """One parameter in a few words: its type (or ``a|b|c`` for an enum), then its description."""
    if not isinstance(schema, dict):
        return "any"
    kind = "|".join(str(v) for v in schema["enum"]) if schema.get("enum") else schema.get("type")
    words = [str(kind or "any")]
    if schema.get("format"):
        words.append(f"({schema['format']})")
    if schema.get("description"):
        words.append(f"- {schema['description']}")
    return " ".join(words)


def compact_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A function tool as the Hermes prompt lists it, in about half the tokens of its JSON schema:
    ``{"name", "description", "arguments": {name: "type - description"}, "required": [...]}``
    (no ``additionalProperties``, ``x-`` extensions or nested wrappers)."""
    fn = tool.get("function", tool)
    params = _arguments(fn.get("parameters") or {})
    params = params if isinstance(params, dict) else {}
    out: dict[str, Any] = {"name": fn.get("name", ""), "description": fn.get("description", "")}
    props = params.get("properties") or {}
    out["arguments"] = {k: _param(v) for k, v in props.items()}
    if params.get("required"):
        out["required"] = list(params["required"])
    return out


def _with_tool_prompt(msgs: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
    if not tools:
        return
    listing = "\n".join(json.dumps(compact_tool(t), ensure_ascii=False) for t in tools)
    prompt = TOOL_PROMPT.format(tools=listing)
    if msgs and msgs[0]["role"] == "system":
        msgs[0] = {"role": "system", "content": f"{msgs[0]['content']}\n\n{prompt}"}
    else:
        msgs.insert(0, {"role": "system", "content": prompt})


def prepare(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """(messages, tools) to pass to ``apply_chat_template`` for this tokenizer's template."""
    if renders_tools(tokenizer):
        msgs = copy.deepcopy(messages)
        for m in msgs:
            for tc in m.get("tool_calls") or []:
                tc["function"]["arguments"] = _arguments(tc["function"].get("arguments", "{}"))
        return msgs, (tools or None)
    msgs = [_hermes_message(m) for m in messages]
    _with_tool_prompt(msgs, tools)
    return msgs, None


def prompt_text(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """The prompt for the model's next turn, as text."""
    msgs, shown = prepare(tokenizer, messages, tools)
    return str(
        tokenizer.apply_chat_template(msgs, tools=shown, add_generation_prompt=True, tokenize=False)
    )


def encode(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> tuple[list[int], list[int]] | None:
    """Token ids of a conversation, and 1 for each token the model wrote (its assistant turns).

    Each assistant turn is what the template adds after the conversation before it (with the
    generation prompt). A template that renders earlier turns differently later gives no
    consistent split: such a conversation is skipped (None).
    """
    msgs, shown = prepare(tokenizer, messages, tools)
    ids: list[int] = []
    mask: list[int] = []
    done = ""
    for i, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        prefix = tokenizer.apply_chat_template(
            msgs[:i], tools=shown, add_generation_prompt=True, tokenize=False
        )
        full = tokenizer.apply_chat_template(msgs[: i + 1], tools=shown, tokenize=False)
        if not (prefix.startswith(done) and full.startswith(prefix)):
            return None
        for text, wrote in ((prefix[len(done) :], 0), (full[len(prefix) :], 1)):
            part = tokenizer(text, add_special_tokens=False)["input_ids"]
            ids += part
            mask += [wrote] * len(part)
        done = full
    return ids, mask


def parse_reply(text: str) -> tuple[str, list[dict[str, Any]]]:
    """(content, OpenAI ``tool_calls``) of a reply: ``<tool_call>`` blocks become calls (arguments
    as a JSON string); a block that is not such JSON stays in the content, so the policy counts
    it as a call written as text."""
    calls: list[dict[str, Any]] = []
    kept = []
    for raw in _CALL.findall(text):
        try:
            obj = json.loads(raw)
        except ValueError:
            kept.append(f"<tool_call>{raw}</tool_call>")
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            kept.append(f"<tool_call>{raw}</tool_call>")
            continue
        args = obj.get("arguments", {})
        calls.append(
            {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {
                    "name": obj["name"],
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
        )
    content = _BLOCK.sub("", text).strip()
    return "\n".join([content, *kept]).strip(), calls
