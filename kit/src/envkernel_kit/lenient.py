"""Coping with the habits of small local model servers (llama.cpp's, vLLM's, proxies).

Measured with SmolLM2-135M on llama-cpp-python's OpenAI-compatible server (chatml-function-calling):

- **escaped arguments**: argument strings come HTML-escaped (``O&#39;Brien``, sometimes the whole
  JSON: ``{&quot;id&quot;: 1}``): :func:`unescape_arguments` undoes it;
- **no call**: with ``tool_choice: "auto"`` the model often writes the call as text instead
  (a JSON object with ``name`` and ``arguments``, bare, fenced or in ``<tool_call>`` tags):
  :func:`calls_in_text` finds such calls when they name an offered tool;
- **refused options**: some values of ``tool_choice`` (``"required"``) or ``response_format``
  get an HTTP 500 or 400 instead of an answer: :class:`Refusals` remembers, per server, which
  option values were refused, so a caller tries each value once (without retries) and falls back.
"""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Collection
from typing import Any

__all__ = ["Refusals", "calls_in_text", "looks_refused", "unescape_arguments", "unescape_value"]

_ENTITY = re.compile(r"&(#\d+|#x[0-9a-fA-F]+|quot|apos|amp|lt|gt);")


def unescape_value(value: Any) -> Any:
    """``value`` with HTML entities in its strings (recursively) decoded."""
    if isinstance(value, str):
        return html.unescape(value) if _ENTITY.search(value) else value
    if isinstance(value, dict):
        return {k: unescape_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unescape_value(v) for v in value]
    return value


def unescape_arguments(raw: str) -> tuple[Any, bool]:
    """Parse a tool call's argument string, undoing HTML escaping: (value, whether anything was
    unescaped). Raises ``ValueError`` when it is not JSON even after unescaping."""
    try:
        value = json.loads(raw)
    except ValueError:
        if not _ENTITY.search(raw):
            raise
        value = json.loads(html.unescape(raw))
        return unescape_value(value), True
    fixed = unescape_value(value)
    return fixed, fixed != value


_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def _objects(text: str) -> list[Any]:
    """JSON objects or arrays in ``text``: tagged, fenced, or the first balanced one."""
    found: list[Any] = []
    for pattern in (_TAGGED, _FENCED):
        for m in pattern.finditer(text):
            try:
                found.append(json.loads(m.group(1)))
            except ValueError:
                continue
    if found:
        return found
    dec = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                value, _ = dec.raw_decode(text[i:])
            except ValueError:
                continue
            return [value]
    return []


def calls_in_text(text: str, tool_names: Collection[str]) -> list[tuple[str, dict[str, Any]]]:
    """Tool calls a model wrote as text: ``(name, arguments)`` for each JSON object with a
    ``name`` (or ``function``) naming an offered tool and ``arguments`` (or ``parameters``) that
    are an object (or a JSON string of one). Empty when there is none."""
    if not text or not tool_names or ("{" not in text):
        return []
    calls = []
    for obj in _objects(unescape_value(text)):
        for item in obj if isinstance(obj, list) else [obj]:
            if not isinstance(item, dict):
                continue
            fn: dict[str, Any] = (
                item["function"] if isinstance(item.get("function"), dict) else item
            )
            name = next(
                (n for n in (fn.get("name"), item.get("function")) if isinstance(n, str)), None
            )
            if name is None or name not in tool_names:
                continue
            args = fn.get("arguments", fn.get("parameters", {}))
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except ValueError:
                    continue
            if isinstance(args, dict):
                calls.append((name, args))
    return calls


def looks_refused(status: int | None) -> bool:
    """True for an HTTP status a server answers an option it does not support with (400, 422, 500,
    501)."""
    return status in (400, 422, 500, 501)


class Refusals:
    """Option values each server refused or accepted (thread-safe; one per component)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], bool] = {}

    def known(self, server: str, option: str) -> bool | None:
        """True: accepted before; False: refused before; None: not tried yet."""
        with self._lock:
            return self._seen.get((server, option))

    def mark(self, server: str, option: str, accepted: bool) -> None:
        """Remember the server's answer to an option value."""
        with self._lock:
            self._seen.setdefault((server, option), accepted)

    def refused(self) -> list[str]:
        """``server option`` of every refusal seen."""
        with self._lock:
            return [f"{s} {o}" for (s, o), ok in self._seen.items() if not ok]
