"""The ``openai`` policy: a multi-turn tool-calling loop against an OpenAI-compatible server.

One *turn* is one model call. Each turn sends the conversation and the task's tools (OpenAI
function format); the reply is either a final answer (no tool calls), which ends the rollout, or
one or more tool calls (parallel calls are executed one by one, in the order given, and each gets
its own ``tool`` message with the matching ``tool_call_id``). The loop also ends at
``max_turns``, at the rollout deadline, and on a recorded condition.

Nothing the model or the server does crashes a rollout. What happens is recorded instead:

================================  =================================  ==============================
what                              ``Trajectory.termination``         also recorded
================================  =================================  ==============================
an answer without tool calls      ``answer``
``max_turns`` model calls made    ``max_turns``
the rollout deadline passed       ``deadline``                       ``error``
``finish_reason == "length"``     ``length``                         ``error``; the cut message
no ``choices`` in the reply       ``no_choices``                     ``error``
body not JSON, HTTP error that    ``error``                          ``error`` (``bad_response:``,
is not retried or kept failing,                                      ``http:``, ``timeout:``,
timeouts, connection errors                                          ``connection:``...)
``finish_reason`` content_filter  ``error``                          ``error``
================================  =================================  ==============================

A tool call whose arguments are not a JSON object, that names a tool the task does not offer,
or whose arguments break the tool's schema (missing required or unknown-when-forbidden keys,
wrong JSON types, values outside an ``enum``) is not forwarded to the sandbox: it gets an error
observation the model can act on (``{"error": {"code": "invalid_json" | "unknown_tool" |
"invalid_arguments", "message": ...}}``) and counts in ``Trajectory.format_errors``. The
trajectory's messages keep what the model sent, verbatim (with its ``reasoning_content``, when a
reasoning server sends one); the copy sent back to the server has unparsable argument strings
replaced by ``"{}"``, and no reasoning, so servers that re-parse history do not refuse it.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, ClassVar

import msgspec
import structlog
from envkernel.errors import ConfigError
from envkernel_schemas import RolloutRequested, ToolResult, ToolSpec, Trajectory, Usage

from .client import ChatClient, ChatResult

log = structlog.get_logger("envkernel.openai")

SYSTEM_PROMPT = (
    "You are a helpful assistant with access to tools. Use them to fulfil the user's request: "
    "look up what you need, make the changes asked for, and finish with a short answer."
)
"""Default system prompt (the baseline policies' prompt, so trajectories compare)."""

REDACTED = "<redacted>"
"""What the kernel stores in place of a secret; never sent as a key."""


class OpenAISettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``openai`` policy (section ``[openai]`` of the run config).

    ``base_url``, ``api_key`` and ``model`` also come from ``OPENAI_BASE_URL``,
    ``OPENAI_API_KEY`` and ``OPENAI_MODEL``. The key never leaves the process: the kernel
    redacts it from ``config.json`` and the runs bucket, and this plugin keeps it out of events,
    logs and error messages.
    """

    __env__: ClassVar[dict[str, str]] = {"base_url": "OPENAI_BASE_URL", "api_key": "OPENAI_API_KEY", "model": "OPENAI_MODEL"}

    base_url: str = ""
    """Base URL of the OpenAI-compatible API, e.g. ``http://127.0.0.1:8000/v1``."""
    api_key: str = ""
    """API key (empty: ``EMPTY`` is sent, as local servers expect)."""
    model: str = ""
    """Model name."""
    temperature: float = 1.0
    """Sampling temperature (1.0 keeps a GRPO group diverse)."""
    top_p: float | None = None
    """Nucleus sampling; not sent when unset."""
    max_turns: int = 16
    """Model calls per rollout at most."""
    max_tokens: int | None = 1024
    """Completion tokens per model call at most (``max_tokens``); not sent when unset."""
    concurrency: int = 64
    """Model requests in flight per process and run at most (a semaphore around each call)."""
    request_timeout: float = 60.0
    """Seconds one HTTP attempt may take (never the client's 10-minute default)."""
    connect_timeout: float = 10.0
    """Seconds to connect."""
    rollout_timeout: float = 300.0
    """Deadline of a whole rollout in seconds (model calls, retries and tool calls)."""
    max_retries: int = 3
    """Retries of one model call on 408/409/429/5xx, timeouts and connection errors."""
    backoff: float = 0.5
    """First backoff in seconds; doubles per retry, with full jitter (``Retry-After`` wins)."""
    backoff_max: float = 8.0
    """Longest backoff in seconds."""
    system_prompt: str = SYSTEM_PROMPT
    """System message that opens the conversation."""
    tool_choice: str = "auto"
    """``tool_choice`` sent with the tools (``auto``, ``required``, ``none``; empty: not sent)."""
    parallel_tool_calls: bool | None = None
    """Sent when set (some servers reject the field)."""
    extra_body: dict[str, Any] = msgspec.field(default_factory=dict)
    """Extra JSON members of every request (vendor parameters such as ``top_k``)."""
    max_tool_chars: int = 16000
    """Longest ``tool`` message content sent to the model; longer results are cut, with a note."""
    validate_arguments: bool = True
    """Check arguments against the tool's JSON Schema before forwarding (a failure is a format error)."""

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if min(self.request_timeout, self.connect_timeout, self.rollout_timeout) <= 0:
            raise ValueError("request_timeout, connect_timeout and rollout_timeout must be positive")
        if self.max_retries < 0 or self.backoff < 0 or self.backoff_max < 0:
            raise ValueError("max_retries, backoff and backoff_max must not be negative")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1 (or unset)")


Settings = OpenAISettings
"""Alias: the settings of this plugin's component."""


# -- messages ------------------------------------------------------------------------------------


from envkernel.messages import compact, result_content  # noqa: E402 - shared with every policy


def error_content(code: str, message: str) -> str:
    """A ``tool`` message content for a call that was refused before reaching the sandbox."""
    return compact({"error": {"code": code, "message": message}})


def tool_schema(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """The tools in OpenAI function format."""
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters or {"type": "object", "properties": {}}}}
        for t in tools
    ]


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _type_ok(value: Any, kind: Any) -> bool:
    kinds = kind if isinstance(kind, list) else [kind]
    for k in kinds:
        py = _TYPES.get(k)
        if py is None:
            return True  # a type we do not know: do not refuse
        if isinstance(value, bool) and k in ("integer", "number"):
            continue
        if k == "integer" and isinstance(value, float) and value.is_integer():
            return True
        if isinstance(value, py):
            return True
    return False


def check_arguments(schema: dict[str, Any], args: dict[str, Any]) -> str:
    """Why ``args`` break the top level of a tool's JSON Schema ("" when they do not).

    Deliberately shallow: required members, unknown members when ``additionalProperties`` is
    false, each member's JSON type and ``enum``. The sandbox validates the rest.
    """
    props = schema.get("properties") or {}
    problems = []
    missing = [r for r in schema.get("required") or [] if r not in args]
    if missing:
        problems.append(f"missing required argument(s) {', '.join(map(repr, missing))}")
    if schema.get("additionalProperties") is False:
        unknown = [k for k in args if k not in props]
        if unknown:
            problems.append(f"unknown argument(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(props) or 'none'}")
    for key, value in args.items():
        spec = props.get(key)
        if not isinstance(spec, dict) or value is None:
            continue
        if "type" in spec and not _type_ok(value, spec["type"]):
            problems.append(f"argument {key!r} must be of type {spec['type']}, got {type(value).__name__}")
        elif isinstance(spec.get("enum"), list) and value not in spec["enum"]:
            problems.append(f"argument {key!r} must be one of {spec['enum']}, got {value!r}")
    return "; ".join(problems)


def _text(content: Any) -> str:
    """Message content as text (strings, or lists of text parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def _as_int(v: Any) -> int:
    try:
        return int(v or 0)
    except (TypeError, ValueError):
        return 0


class _Call:
    """One tool call of an assistant message, parsed."""

    __slots__ = ("args", "code", "id", "name", "problem", "raw_args")

    def __init__(self, id: str, name: str, raw_args: str, args: dict[str, Any] | None, code: str, problem: str) -> None:
        self.id, self.name, self.raw_args, self.args, self.code, self.problem = id, name, raw_args, args, code, problem


def parse_tool_calls(raw: Any, turn: int, seen: set[str]) -> list[_Call]:
    """Parse a message's ``tool_calls`` leniently; every problem becomes the call's ``problem``."""
    calls: list[_Call] = []
    items = raw if isinstance(raw, list) else [raw]
    for i, tc in enumerate(items):
        cid = tc.get("id") if isinstance(tc, dict) else None
        if not isinstance(cid, str) or not cid or cid in seen:
            cid = f"call_{turn}_{i}"
            while cid in seen:
                cid += "_"
        seen.add(cid)
        fn = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict):
            calls.append(_Call(cid, "", "", None, "invalid_tool_call", "the tool call has no 'function' object with a name and arguments"))
            continue
        name = fn.get("name")
        name = name if isinstance(name, str) else ""
        raw_args = fn.get("arguments")
        if isinstance(raw_args, dict):  # some servers send an object, not a string
            raw_args = compact(raw_args)
        raw_args = "" if raw_args is None else raw_args if isinstance(raw_args, str) else compact(raw_args)
        if not name:
            calls.append(_Call(cid, name, raw_args, None, "invalid_tool_call", "the tool call has no function name"))
            continue
        if raw_args.strip() == "":
            args: Any = {}
        else:
            try:
                args = json.loads(raw_args)
            except ValueError as exc:
                calls.append(_Call(cid, name, raw_args, None, "invalid_json",
                                   f"the arguments are not valid JSON ({exc}); send one JSON object, e.g. {{\"key\": \"value\"}}"))
                continue
        if not isinstance(args, dict):
            calls.append(_Call(cid, name, raw_args, None, "invalid_arguments", f"the arguments must be a JSON object, got {type(args).__name__}"))
            continue
        calls.append(_Call(cid, name, raw_args, args, "", ""))
    return calls


# -- the policy ----------------------------------------------------------------------------------


class OpenAIPolicy:
    """The ``openai`` policy (see the module docstring)."""

    Settings = OpenAISettings

    concurrency: ClassVar[int] = int(os.environ.get("ENVKERNEL_OPENAI_ROLLOUTS", "256"))
    """Rollouts in flight per process (read by the kernel's router; each holds a sandbox)."""

    def __init__(self, settings: OpenAISettings | None = None) -> None:
        self.settings = settings or OpenAISettings()
        self._client: ChatClient | None = None

    def __repr__(self) -> str:
        s = self.settings
        return f"OpenAIPolicy(base_url={s.base_url!r}, model={s.model!r})"

    @property
    def client(self) -> ChatClient:
        """The chat client (made on first use; a configuration gap is a clear error)."""
        if self._client is None:
            s = self.settings
            key = s.api_key if s.api_key and s.api_key != REDACTED else os.environ.get("OPENAI_API_KEY", "")
            base_url = s.base_url or os.environ.get("OPENAI_BASE_URL", "")
            if not base_url:
                raise ConfigError("the openai policy has no base URL: set OPENAI_BASE_URL, [openai] base_url, or --set openai.base_url=...")
            if not (s.model or os.environ.get("OPENAI_MODEL")):
                raise ConfigError("the openai policy has no model: set OPENAI_MODEL, [openai] model, or --set openai.model=...")
            self._client = ChatClient(
                base_url=base_url, api_key=key, request_timeout=s.request_timeout, connect_timeout=s.connect_timeout,
                max_retries=s.max_retries, backoff=s.backoff, backoff_max=s.backoff_max, concurrency=s.concurrency,
            )
        return self._client

    def payload(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """The request body for one turn."""
        s = self.settings
        body: dict[str, Any] = {"model": s.model or os.environ.get("OPENAI_MODEL", ""), "messages": messages, "temperature": s.temperature}
        if tools:
            body["tools"] = tools
            if s.tool_choice:
                body["tool_choice"] = s.tool_choice
            if s.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = s.parallel_tool_calls
        if s.max_tokens is not None:
            body["max_tokens"] = s.max_tokens
        if s.top_p is not None:
            body["top_p"] = s.top_p
        if s.extra_body:
            body["extra_body"] = dict(s.extra_body)
        return body

    async def rollout(self, request: RolloutRequested, env: Any, ctx: Any) -> Trajectory:
        """Run the loop; return the trajectory (the kernel fills in ``calls`` and ``final_state``)."""
        s = self.settings
        client = self.client
        started = time.monotonic()
        deadline = started + s.rollout_timeout
        tools: list[ToolSpec] = list(getattr(env, "tools", []) or [])
        by_name = {t.name: t for t in tools}
        schema = tool_schema(tools)
        messages: list[dict[str, Any]] = [{"role": "system", "content": s.system_prompt}, {"role": "user", "content": request.task.request}]
        wire: list[dict[str, Any]] = list(messages)  # what the server is sent (bad argument strings sanitised)
        seen_ids: set[str] = set()
        usage = [0, 0]
        latencies: list[float] = []
        format_errors = 0
        final_answer = ""
        termination = "max_turns"
        error = ""
        logger = getattr(ctx, "log", log)

        async def publish(turn: int, message: dict[str, Any]) -> None:
            step = getattr(ctx, "step", None)
            if step is None:
                return
            try:
                await step(request, turn, message)
            except Exception as exc:  # noqa: BLE001 - watching must never break a rollout
                logger.warning("could not publish a rollout step", error=f"{type(exc).__name__}: {exc}")

        for turn in range(s.max_turns):
            if time.monotonic() >= deadline:
                termination, error = "deadline", f"the rollout deadline ({s.rollout_timeout:g} s) passed before turn {turn}"
                break
            res: ChatResult = await client.complete(self.payload(wire, schema), deadline=deadline)
            if not res.ok:
                termination = "deadline" if res.condition == "deadline" else "error"
                error = f"{res.condition}: {res.error}"
                logger.warning("model call failed; rollout ends", task=request.task.id, index=request.index, turn=turn, error=error)
                break
            latencies.append(res.latency)
            body = res.body or {}
            u = body.get("usage") if isinstance(body.get("usage"), dict) else {}
            usage[0] += _as_int(u.get("prompt_tokens"))
            usage[1] += _as_int(u.get("completion_tokens"))
            choices = body.get("choices")
            choice = choices[0] if isinstance(choices, list) and choices else None
            if not isinstance(choice, dict):
                termination, error = "no_choices", f"no_choices: the reply to turn {turn} has no choices"
                break
            msg = choice.get("message") if isinstance(choice.get("message"), dict) else {}
            finish = choice.get("finish_reason")
            content = _text(msg.get("content"))
            raw_calls = msg.get("tool_calls")
            calls = parse_tool_calls(raw_calls, turn, seen_ids) if raw_calls else []
            assistant: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                assistant["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw_args}} for c in calls]
            if calls and any(c.args is None for c in calls):
                wire.append({**assistant, "tool_calls": [
                    {"id": c.id, "type": "function", "function": {"name": c.name or "invalid", "arguments": c.raw_args if c.args is not None else "{}"}}
                    for c in calls
                ]})
            else:
                wire.append(assistant)
            reasoning = msg.get("reasoning_content")
            if isinstance(reasoning, str) and reasoning:  # kept for trainers, not sent back
                assistant = {**assistant, "reasoning_content": reasoning}
            messages.append(assistant)
            await publish(turn, assistant)
            if finish == "length":
                termination, error = "length", f"length: the reply to turn {turn} was cut at the token limit (finish_reason=length)"
                final_answer = content if not calls else ""
                break
            if finish == "content_filter":
                termination, error = "error", f"content_filter: the server filtered the reply to turn {turn}"
                break
            if not calls:
                final_answer, termination = content, "answer"
                break
            for c in calls:
                if c.args is None:
                    format_errors += 1
                    text = error_content(c.code, c.problem)
                elif c.name not in by_name:
                    format_errors += 1
                    text = error_content("unknown_tool", f"no tool named {c.name!r}; available: {', '.join(sorted(by_name)) or 'none'}")
                elif s.validate_arguments and (why := check_arguments(by_name[c.name].parameters or {}, c.args)):
                    format_errors += 1
                    text = error_content("invalid_arguments", f"{c.name}: {why}")
                elif time.monotonic() >= deadline:
                    text = error_content("deadline", "the rollout deadline passed; the call was not made")
                else:
                    result = await env.call(c.name, c.args)
                    text = result_content(result)
                if s.max_tool_chars and len(text) > s.max_tool_chars:
                    text = text[: s.max_tool_chars] + f"… [cut: {len(text)} characters in all]"
                tool_msg = {"role": "tool", "tool_call_id": c.id, "content": text}
                messages.append(tool_msg)
                wire.append(tool_msg)
                await publish(turn, tool_msg)
        else:
            termination = "max_turns"
        return Trajectory(
            task_id=request.task.id,
            policy=request.policy or "openai",
            index=request.index,
            messages=messages,
            final_answer=final_answer,
            termination=termination,
            format_errors=format_errors,
            usage=Usage(prompt_tokens=usage[0], completion_tokens=usage[1]),
            latencies=[round(x, 6) for x in latencies],
            seconds=time.monotonic() - started,
            error=client.scrub(error, 1000),
        )

    async def aclose(self) -> None:
        """Close the HTTP client(s)."""
        if self._client is not None:
            await self._client.aclose()
