"""OpenAI chat-message helpers shared by policies (so every policy writes tool messages alike)."""

from __future__ import annotations

import json
from typing import Any

from envkernel_schemas import ToolResult


def compact(value: Any) -> str:
    """Compact JSON (no spaces, non-ASCII kept), as answers and tool messages carry it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def result_content(result: ToolResult) -> str:
    """The content of a ``tool`` message: the value, or ``{"error": {code, message}}``."""
    if result.ok:
        return compact(result.value)
    err = result.error
    return compact(
        {"error": {"code": err.code if err else "error", "message": err.message if err else ""}}
    )


async def call_and_record(
    env: Any, messages: list[dict[str, Any]], call_id: str, name: str, arguments: dict[str, Any]
) -> ToolResult:
    """Call one tool through ``env`` and append the assistant ``tool_calls`` and ``tool``
    messages."""
    messages.append(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": compact(arguments)},
                }
            ],
        }
    )
    result: ToolResult = await env.call(name, dict(arguments))
    messages.append({"role": "tool", "tool_call_id": call_id, "content": result_content(result)})
    return result


def answer_from(last: ToolResult | None) -> str:
    """A final answer that carries the last call's output (so every answer fact appears)."""
    if last is None:
        return "There was nothing to do."
    if last.ok:
        return f"Done. Here is the result: {compact(last.value)}"
    return f"The last step failed: {result_content(last)}"


def tool_defs(tools: list[Any], only: list[str] | None = None) -> list[dict[str, Any]]:
    """OpenAI function-tool definitions of an environment's ``ToolSpec``s (only ``only``, when it
    is non-empty): what the export's rows and the trl trainer's prompts offer a model."""
    keep = set(only or [])
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
        if not keep or t.name in keep
    ]
