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
    return compact({"error": {"code": err.code if err else "error", "message": err.message if err else ""}})
