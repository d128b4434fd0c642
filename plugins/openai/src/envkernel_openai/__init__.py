"""envkernel-openai: the ``openai`` policy — agent rollouts against any OpenAI-compatible model.

- :mod:`envkernel_openai.policy`: the multi-turn tool-calling loop and its settings, and
  ``apply_update``: follow a trainer's ``openai-model/1`` policy updates (switch the model, load a
  LoRA adapter into vLLM at runtime) with ``envkernel run --iterations N``;
- :mod:`envkernel_kit.chat`: one Chat Completions call with one retry layer and explicit
  timeouts (also used by the ``judge`` reward model);
- :mod:`envkernel_kit.scripted`: a scripted OpenAI-compatible server on loopback for tests and
  benchmarks (``python -m envkernel_kit.scripted --help``).

Use it with ``envkernel run --plugins +openai --policy openai`` and ``OPENAI_BASE_URL``,
``OPENAI_API_KEY``, ``OPENAI_MODEL`` (or an ``[openai]`` section in the config file).
"""

from __future__ import annotations

from typing import Any

from envkernel.hookspecs import hookimpl
from envkernel_kit.chat import ChatClient, ChatResult, scrub

from .policy import (
    SYSTEM_PROMPT,
    UPDATE_FORMAT,
    ModelUpdate,
    OpenAIPolicy,
    OpenAISettings,
    PolicyUpdateError,
    Settings,
    check_arguments,
    parse_tool_calls,
    parse_update,
    tool_schema,
)

__all__ = [
    "SYSTEM_PROMPT",
    "UPDATE_FORMAT",
    "ChatClient",
    "ChatResult",
    "ModelUpdate",
    "OpenAIPolicy",
    "OpenAISettings",
    "PolicyUpdateError",
    "Settings",
    "check_arguments",
    "parse_tool_calls",
    "parse_update",
    "register_policies",
    "scrub",
    "tool_schema",
]


@hookimpl
def register_policies(register: Any) -> None:
    """Register the ``openai`` policy."""
    register("openai", OpenAIPolicy)
