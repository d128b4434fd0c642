"""The ``openai`` policy: a multi-turn tool-calling loop against an OpenAI-compatible server.

One *turn* is one model call. Each turn sends the conversation and the task's tools (OpenAI
function format); the reply is either a final answer (no tool calls), which ends the rollout, or
one or more tool calls (parallel calls are executed one by one, in the order given, and each gets
its own ``tool`` message with the matching ``tool_call_id``). The loop also ends at
``max_turns``, at the rollout deadline, and on a recorded condition. When the run has a ``user``
component (:mod:`envkernel_kit.users`), a reply without tool calls goes to the user first: what
the user says back (an answer, a condition it held back) is the next user message, and the
conversation ends when the user has nothing more to say.

**Multi-session tasks** (PinchBench's ``multi_session`` / ``sessions``, read with
:func:`envkernel_kit.workspace.task_sessions`) run as their sessions, in order, over the same
workspace: a session that opens a new conversation (the first, and each ``new_session: true``)
starts again from the system prompt and its own prompt, with no earlier message sent; any other
session's prompt is the next user message of the conversation going on. A session that ends with
an answer, or out of its ``max_turns``, lets the next one begin; any other ending ends the rollout.
The trajectory's ``messages`` hold every conversation in order, each from its system message;
``final_answer`` is the last session's, and ``termination`` is ``max_turns`` when any session ran
out of turns.

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

**Small local servers** (llama.cpp's, measured with SmolLM2): a ``tool_choice`` the server
refuses (HTTP 400/422/500/501 on its first use; llama.cpp answers ``"required"`` with 500) is
remembered per server and replaced by the next of ``tool_choice_fallback``; calls written as text
in the content (``recover_text_calls``) are executed and counted as format errors; HTML-escaped
arguments are decoded (``unescape_html``). See :mod:`envkernel_kit.lenient`.

**Policy updates.** With ``envkernel run --iterations N``, a trainer may answer the end of an
iteration with a :class:`~envkernel_schemas.PolicyUpdate` of format ``openai-model/1``: JSON
``{"model", "lora_name", "lora_path", "base_url"}`` (``model`` or ``lora_name`` required). The
kernel hands it to :meth:`OpenAIPolicy.apply_update` once per process, before the first rollout of
the next iteration. With ``lora_path`` (and ``load_lora``), the adapter is loaded into the server
through vLLM's runtime endpoint ``POST {base_url}/load_lora_adapter`` (the server needs
``--enable-lora`` and ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``); then rollouts name
``lora_name or model``, on ``base_url`` when it is given. A rollout keeps the model and endpoint it
started with, so rollouts in flight are not switched halfway.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, ClassVar

import msgspec

from envkernel.errors import EnvkernelError
from envkernel_kit.chat import ChatClient, ChatResult, ChatSettings
from envkernel_kit.lenient import Refusals, calls_in_text, looks_refused, unescape_arguments
from envkernel_kit.messages import compact, result_content
from envkernel_kit.policy import policy_note
from envkernel_kit.users import user_for, user_turn
from envkernel_kit.workspace import Session, task_sessions
from envkernel_schemas import (
    PolicyUpdate,
    RolloutRequested,
    ToolSpec,
    Trajectory,
    Usage,
)

SYSTEM_PROMPT = (
    "You are a helpful assistant with access to tools. Use them to fulfil the user's request: "
    "look up what you need, make the changes asked for, and finish with a short answer."
)
"""Default system prompt (the baseline policies' prompt, so trajectories compare)."""


class OpenAISettings(ChatSettings, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``openai`` policy (section ``[openai]`` of the run config): the model
    server's (:class:`envkernel_kit.chat.ChatSettings`) and the rollout loop's own.

    ``base_url``, ``api_key`` and ``model`` also come from ``OPENAI_BASE_URL``,
    ``OPENAI_API_KEY`` and ``OPENAI_MODEL``. The key never leaves the process: the kernel
    redacts it from ``config.json`` and the runs bucket, and this plugin keeps it out of events,
    logs and error messages.
    """

    section: ClassVar[str] = "openai"
    who: ClassVar[str] = "the openai policy"

    temperature: float = 1.0
    """Sampling temperature (1.0 keeps a GRPO group diverse)."""
    top_p: float | None = None
    """Nucleus sampling; not sent when unset."""
    max_turns: int = 16
    """Model calls per rollout at most (per session, for a multi-session task)."""
    max_tokens: int | None = 1024
    """Completion tokens per model call at most (``max_tokens``); not sent when unset."""
    rollout_timeout: float = 300.0
    """Deadline of a whole rollout in seconds (model calls, retries and tool calls)."""
    system_prompt: str = SYSTEM_PROMPT
    """System message that opens the conversation."""
    tool_choice: str = "auto"
    """``tool_choice`` sent with the tools (``auto``, ``required``, ``none``; empty: not sent)."""
    tool_choice_fallback: list[str] = msgspec.field(default_factory=lambda: ["auto", ""])
    """Values tried in turn when the server refuses ``tool_choice`` (HTTP 400/422/500/501 on its
    first use, as llama.cpp answers ``required``); ``""`` sends none. Each refusal is remembered
    per server, so it costs one request per process."""
    recover_text_calls: bool = True
    """Execute tool calls a model wrote as text (a JSON object naming an offered tool, bare, fenced
    or in ``<tool_call>`` tags) instead of ending the rollout; each counts as a format error."""
    unescape_html: bool = True
    """Decode HTML entities in tool-call arguments (``O&#39;Brien``; llama.cpp's habit)."""
    parallel_tool_calls: bool | None = None
    """Sent when set (some servers reject the field)."""
    max_tool_chars: int = 16000
    """Longest ``tool`` message content sent to the model; longer results are cut, with a note."""
    validate_arguments: bool = True
    """Check arguments against the tool's JSON Schema before forwarding (a failure is a format
    error)."""
    load_lora: bool = True
    """On a policy update with ``lora_path``, load the adapter into the server first (vLLM's
    ``POST /load_lora_adapter``). Off: the adapter must already be served under ``lora_name``."""
    load_timeout: float = 300.0
    """Seconds one attempt to load a LoRA adapter may take (retried like a model call)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        if min(self.rollout_timeout, self.load_timeout) <= 0:
            raise ValueError("rollout_timeout and load_timeout must be positive")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1 (or unset)")


Settings = OpenAISettings
"""Alias: the settings of this plugin's component."""


# -- policy updates ------------------------------------------------------------------------------

UPDATE_FORMAT = "openai-model/1"
"""The :class:`~envkernel_schemas.PolicyUpdate` format this policy follows."""


class PolicyUpdateError(EnvkernelError):
    """A policy update could not be applied (wrong format, bad data, or the adapter did not
    load)."""


class ModelUpdate(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The JSON ``data`` of an ``openai-model/1`` update."""

    model: str = ""
    """Model name to use from now on (ignored when ``lora_name`` is given)."""
    lora_name: str = ""
    """Name the LoRA adapter is served under; rollouts name it as their model."""
    lora_path: str = ""
    """Path of the adapter as the serving engine sees it; given: it is loaded first
    (``load_lora``)."""
    base_url: str = ""
    """Switch to this endpoint (empty: keep the current one)."""


def parse_update(update: PolicyUpdate) -> ModelUpdate:
    """The :class:`ModelUpdate` in ``update``, or a :class:`PolicyUpdateError` saying what is
    wrong."""
    fields = (
        '{"model": ..., "lora_name": ..., "lora_path": ..., "base_url": ...} (model or lora_name '
        "required)"
    )
    if update.format != UPDATE_FORMAT:
        raise PolicyUpdateError(
            f"the openai policy follows updates of format {UPDATE_FORMAT!r}, got "
            f"{update.format!r}: make the trainer return "
            f"PolicyUpdate(format={UPDATE_FORMAT!r}, data=JSON {fields}), or roll out with a "
            f"policy that reads {update.format!r}"
        )
    if not update.data.strip():
        raise PolicyUpdateError(
            f"the {UPDATE_FORMAT} update has no data: the trainer must send JSON {fields}"
        )
    try:
        raw = json.loads(update.data)
    except (UnicodeDecodeError, ValueError) as exc:
        raise PolicyUpdateError(
            f"the {UPDATE_FORMAT} update's data is not valid JSON ({exc}): the trainer must "
            f"send {fields}"
        ) from None
    if not isinstance(raw, dict):
        raise PolicyUpdateError(
            f"the {UPDATE_FORMAT} update's data must be a JSON object {fields}, got "
            f"{type(raw).__name__}"
        )
    try:
        spec = msgspec.convert(raw, ModelUpdate)
    except msgspec.ValidationError as exc:
        raise PolicyUpdateError(
            f"the {UPDATE_FORMAT} update's data is not valid: {exc}; expected {fields}"
        ) from None
    if not (spec.model or spec.lora_name):
        raise PolicyUpdateError(
            f"the {UPDATE_FORMAT} update names no model: give model or lora_name in {fields}"
        )
    if spec.lora_path and not spec.lora_name:
        raise PolicyUpdateError(
            f"the {UPDATE_FORMAT} update has lora_path {spec.lora_path!r} but no lora_name "
            "to serve it under"
        )
    if spec.base_url and not spec.base_url.startswith(("http://", "https://")):
        raise PolicyUpdateError(
            f"the {UPDATE_FORMAT} update's base_url must be an http(s) URL such as "
            f"http://host:8000/v1, got {spec.base_url!r}"
        )
    return spec


def _load_failure(res: ChatResult, spec: ModelUpdate, base_url: str) -> str:
    """Why loading the adapter failed, and what to do (no secret: ``res.error`` is scrubbed)."""
    status = res.statuses[-1] if res.statuses else None
    head = (
        f"loading LoRA adapter {spec.lora_name!r} from {spec.lora_path!r} into {base_url} failed "
        f"({res.condition}: {res.error})"
    )
    if status in (404, 405):
        hint = (
            "the server has no /load_lora_adapter route: start vLLM with "
            "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora, or serve the adapter "
            "yourself and set openai.load_lora=false"
        )
    elif res.condition in ("connection", "timeout"):
        hint = (
            "the server could not be reached in time: check that it is up at that URL (or raise "
            "openai.load_timeout)"
        )
    else:
        hint = (
            "check that lora_path exists on the serving host and holds a PEFT adapter for "
            "the served base model, and that the server runs with --enable-lora and a "
            "--max-lora-rank at least the adapter's rank"
        )
    return f"{head}; {hint}"


# -- messages ------------------------------------------------------------------------------------


def error_content(code: str, message: str) -> str:
    """A ``tool`` message content for a call that was refused before reaching the sandbox."""
    return compact({"error": {"code": code, "message": message}})


def tool_schema(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """The tools in OpenAI function format."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters or {"type": "object", "properties": {}},
            },
        }
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
            problems.append(
                f"unknown argument(s) {', '.join(map(repr, unknown))}; allowed: "
                f"{', '.join(props) or 'none'}"
            )
    for key, value in args.items():
        spec = props.get(key)
        if not isinstance(spec, dict) or value is None:
            continue
        if "type" in spec and not _type_ok(value, spec["type"]):
            problems.append(
                f"argument {key!r} must be of type {spec['type']}, got {type(value).__name__}"
            )
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

    def __init__(
        self,
        id: str,
        name: str,
        raw_args: str,
        args: dict[str, Any] | None,
        code: str,
        problem: str,
    ) -> None:
        self.id, self.name, self.raw_args, self.args, self.code, self.problem = (
            id,
            name,
            raw_args,
            args,
            code,
            problem,
        )


def parse_tool_calls(raw: Any, turn: int, seen: set[str], *, unescape: bool = False) -> list[_Call]:
    """Parse a message's ``tool_calls`` leniently; every problem becomes the call's ``problem``.
    With ``unescape``, HTML entities in the arguments are decoded first."""
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
            calls.append(
                _Call(
                    cid,
                    "",
                    "",
                    None,
                    "invalid_tool_call",
                    "the tool call has no 'function' object with a name and arguments",
                )
            )
            continue
        name = fn.get("name")
        name = name if isinstance(name, str) else ""
        raw_args = fn.get("arguments")
        # some servers send an object, not a string
        raw_args = (
            "" if raw_args is None else raw_args if isinstance(raw_args, str) else compact(raw_args)
        )
        if not name:
            calls.append(
                _Call(
                    cid,
                    name,
                    raw_args,
                    None,
                    "invalid_tool_call",
                    "the tool call has no function name",
                )
            )
            continue
        if raw_args.strip() == "":
            args: Any = {}
        else:
            try:
                args = unescape_arguments(raw_args)[0] if unescape else json.loads(raw_args)
            except ValueError as exc:
                calls.append(
                    _Call(
                        cid,
                        name,
                        raw_args,
                        None,
                        "invalid_json",
                        f"the arguments are not valid JSON ({exc}); send one JSON object, "
                        f'e.g. {{"key": "value"}}',
                    )
                )
                continue
        if not isinstance(args, dict):
            calls.append(
                _Call(
                    cid,
                    name,
                    raw_args,
                    None,
                    "invalid_arguments",
                    f"the arguments must be a JSON object, got {type(args).__name__}",
                )
            )
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
        self._lock = threading.Lock()
        self._clients: dict[str, ChatClient] = {}  # by base URL; every one is closed by aclose()
        self._target: tuple[str, ChatClient] | None = (
            None  # (model, client) new rollouts use; swapped whole
        )
        self._update_seq = 0  # updates begun
        self._applied_seq = (
            0  # the newest update applied (an older one finishing later is not applied)
        )
        self.refusals = Refusals()  # tool_choice values each server refused or accepted

    def __repr__(self) -> str:
        t = self._target
        if t is None:
            return (
                f"OpenAIPolicy(base_url={self.settings.base_url!r}, model={self.settings.model!r})"
            )
        return f"OpenAIPolicy(base_url={t[1].base_url!r}, model={t[0]!r})"

    def _client_for(self, base_url: str) -> ChatClient:
        """The client of ``base_url`` (one per URL, made on first use; call with ``_lock`` held)."""
        client = self._clients.get(base_url)
        if client is None:
            client = self._clients[base_url] = self.settings.client(base_url)
        return client

    def target(self) -> tuple[str, ChatClient]:
        """(model name, chat client) that a rollout starting now uses: the configured ones until a
        policy update switches them (made on first use; a configuration gap is a clear error)."""
        t = self._target
        if t is not None:
            return t
        with self._lock:
            if self._target is None:
                base_url, model = self.settings.target()
                self._target = (model, self._client_for(base_url))
            return self._target

    @property
    def client(self) -> ChatClient:
        """The chat client new rollouts use."""
        return self.target()[1]

    @property
    def model(self) -> str:
        """The model name new rollouts send."""
        return self.target()[0]

    async def apply_update(self, update: PolicyUpdate, ctx: Any) -> None:
        """Follow a trainer's ``openai-model/1`` update (see the module docstring): load the LoRA
        adapter it names into the server when it gives ``lora_path`` (and ``load_lora`` is on),
        then make new rollouts use ``lora_name or model`` (on ``base_url``, when given).

        Raises :class:`PolicyUpdateError` on a wrong format, bad data or a failed load; the
        policy then keeps rolling out with what it used before.
        """
        spec = parse_update(update)
        logger = ctx.log
        with self._lock:
            self._update_seq += 1
            seq = self._update_seq
        if spec.base_url:
            with self._lock:
                client = self._client_for(spec.base_url)
        else:
            client = self.target()[1]
        loaded = ""
        if spec.lora_path and self.settings.load_lora:
            res = await client.post(
                "/load_lora_adapter",
                {"lora_name": spec.lora_name, "lora_path": spec.lora_path},
                timeout=self.settings.load_timeout,
                expect_json=False,
            )
            if res.ok:
                loaded = "loaded"
            elif (
                res.condition == "http"
                and res.statuses
                and res.statuses[-1] == 400
                and "already been loaded" in res.error
            ):
                # another process (or an earlier attempt) loaded it into the same server
                loaded = "already_loaded"
                logger.warning(
                    "the LoRA adapter is already loaded under that name; using it",
                    lora_name=spec.lora_name,
                    lora_path=spec.lora_path,
                    base_url=client.base_url,
                )
            else:
                raise PolicyUpdateError(_load_failure(res, spec, client.base_url))
        model = spec.lora_name or spec.model
        with self._lock:
            if seq < self._applied_seq:
                logger.warning(
                    "a newer policy update was applied first; this one is skipped",
                    model=model,
                    update_format=update.format,
                )
                return
            self._applied_seq = seq
            self._target = (model, client)
        logger.info(
            "model switched",
            model=model,
            base_url=client.base_url,
            lora_path=spec.lora_path or None,
            lora=loaded or None,
            metrics=dict(update.metrics) or None,
        )

    def payload(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        model: str | None = None,
        tool_choice: str | None = None,
    ) -> dict[str, Any]:
        """The request body for one turn (``model``: the target's when not given; ``tool_choice``:
        the configured one when not given)."""
        s = self.settings
        fields: dict[str, Any] = {}
        choice = s.tool_choice if tool_choice is None else tool_choice
        if tools:
            fields["tools"] = tools
            if choice:
                fields["tool_choice"] = choice
            if s.parallel_tool_calls is not None:
                fields["parallel_tool_calls"] = s.parallel_tool_calls
        if s.top_p is not None:
            fields["top_p"] = s.top_p
        return s.body(
            self.model if model is None else model,
            messages,
            temperature=s.temperature,
            max_tokens=s.max_tokens,
            **fields,
        )

    def tool_choice_for(self, server: str) -> tuple[str, bool]:
        """(the ``tool_choice`` to send to ``server``, whether it is untried there): the configured
        value, or the first fallback the server has not refused."""
        s = self.settings
        for choice in dict.fromkeys([s.tool_choice, *s.tool_choice_fallback]):
            known = self.refusals.known(server, choice) if choice else True
            if known is not False:
                return choice, known is None
        return "", False

    async def _complete(
        self,
        client: ChatClient,
        wire: list[dict[str, Any]],
        schema: list[dict[str, Any]],
        model: str,
        deadline: float,
        logger: Any,
    ) -> ChatResult:
        """One turn's model call; a ``tool_choice`` the server refuses is remembered and the call
        made again with the next fallback."""
        probe = True
        while True:
            choice, untried = self.tool_choice_for(client.base_url) if schema else ("", False)
            probing = (
                probe and untried and choice not in ("auto", "")
            )  # "auto" is the API's default: never refused
            res = await client.complete(
                self.payload(wire, schema, model, tool_choice=choice),
                deadline=deadline,
                retries=0 if probing else None,
            )
            if not probing:
                return res
            if res.ok:
                self.refusals.mark(client.base_url, choice, True)
                return res
            if res.condition == "http" and looks_refused(
                res.statuses[-1] if res.statuses else None
            ):
                self.refusals.mark(client.base_url, choice, False)
                logger.warning(
                    "the server refused tool_choice; falling back",
                    tool_choice=choice,
                    error=res.error,
                    next=self.tool_choice_for(client.base_url)[0] or "(none)",
                )
                continue
            probe = (
                False  # it failed for another reason: the same call again, with the usual retries
            )

    async def rollout(self, request: RolloutRequested, env: Any, ctx: Any) -> Trajectory:
        """Run the loop; return the trajectory (the kernel fills in ``calls`` and
        ``final_state``)."""
        return await _Rollout(self, request, env, ctx, self.target()).run()

    async def aclose(self) -> None:
        """Close the HTTP client(s) of every endpoint used."""
        with self._lock:
            clients = list(self._clients.values())
        for client in clients:
            await client.aclose()


class _Rollout:
    """One rollout of :class:`OpenAIPolicy`: the conversation so far and how it is going."""

    def __init__(
        self,
        policy: OpenAIPolicy,
        request: RolloutRequested,
        env: Any,
        ctx: Any,
        target: tuple[str, ChatClient],
    ) -> None:
        self.policy, self.s, self.request, self.env, self.ctx = (
            policy,
            policy.settings,
            request,
            env,
            ctx,
        )
        self.model, self.client = target  # kept for the whole rollout, even if an update lands
        self.started = time.monotonic()
        self.deadline = self.started + self.s.rollout_timeout
        tools: list[ToolSpec] = list(getattr(env, "tools", []) or [])
        self.by_name = {t.name: t for t in tools}
        self.schema = tool_schema(tools)
        self.messages: list[dict[str, Any]] = []  # every conversation, each from its system message
        self.wire: list[
            dict[str, Any]
        ] = []  # what the server is sent (bad argument strings sanitised)
        self.seen_ids: set[str] = set()
        self.usage = [0, 0]
        self.latencies: list[float] = []
        self.format_errors = 0
        self.final_answer = ""
        self.termination = "max_turns"
        self.error = ""
        self.logger = ctx.log
        self.user = user_for(ctx)
        self.used = 0  # turns made, over all the sessions

    async def run(self) -> Trajectory:
        """Run the sessions of the task in turn; the trajectory."""
        # the sessions of a multi-session task, else one on the request. A session that opens a new
        # conversation starts from the system prompt again, with no earlier message (only the
        # workspace carries over); the others go on with the conversation. ``max_turns`` is per
        # session, the deadline for the whole rollout.
        request = self.request
        plan = task_sessions(request.task) or [
            Session(id="", prompt=request.task.request, new_conversation=True)
        ]
        ends: list[str] = []  # how each session ended
        for number, session in enumerate(plan):
            await self._open(number, session)
            await self._session()
            ends.append(self.termination)
            if self.termination not in ("answer", "max_turns"):
                break  # a condition ends the rollout; a session out of turns lets the next begin
        if self.termination in ("answer", "max_turns") and "max_turns" in ends:
            self.termination = "max_turns"
        return Trajectory(
            task_id=request.task.id,
            policy=request.policy or "openai",
            index=request.index,
            messages=self.messages,
            final_answer=self.final_answer,
            termination=self.termination,
            format_errors=self.format_errors,
            usage=Usage(prompt_tokens=self.usage[0], completion_tokens=self.usage[1]),
            latencies=[round(x, 6) for x in self.latencies],
            seconds=time.monotonic() - self.started,
            error=self.client.scrub(self.error, 1000),
        )

    async def _publish(self, turn: int, message: dict[str, Any]) -> None:
        try:
            await self.ctx.step(self.request, turn, message)
        except Exception as exc:
            self.logger.warning(
                "could not publish a rollout step", error=f"{type(exc).__name__}: {exc}"
            )

    async def _add(self, turn: int, message: dict[str, Any]) -> None:
        """A message of the conversation both kept and sent, published."""
        self.messages.append(message)
        self.wire.append(message)
        await self._publish(turn, message)

    async def _open(self, number: int, session: Session) -> None:
        """Start a session: its prompt, after the system prompt when it opens a new conversation."""
        opening: dict[str, Any] = {"role": "user", "content": session.prompt}
        if session.new_conversation:
            note = policy_note(self.request.task)  # the domain policy and who is asking
            prompt = f"{self.s.system_prompt}\n\n{note}" if note else self.s.system_prompt
            system = {"role": "system", "content": prompt}
            self.messages.extend([system, opening])
            self.wire = [system, opening]
        else:
            self.messages.append(opening)
            self.wire.append(opening)
        if number:
            await self._publish(self.used, opening)

    async def _session(self) -> None:
        """The turns of one session, until it ends or has used ``max_turns``."""
        self.final_answer = ""
        start = self.used
        for turn in range(start, start + self.s.max_turns):
            self.used = turn + 1
            if await self._turn(turn):
                return
        self.termination = "max_turns"

    def _end(self, termination: str, error: str) -> bool:
        self.termination, self.error = termination, error
        return True

    async def _turn(self, turn: int) -> bool:
        """One model call and what it asks for; True when the session ends."""
        if time.monotonic() >= self.deadline:
            return self._end(
                "deadline",
                f"the rollout deadline ({self.s.rollout_timeout:g} s) passed before turn {turn}",
            )
        res: ChatResult = await self.policy._complete(
            self.client, self.wire, self.schema, self.model, self.deadline, self.logger
        )
        if not res.ok:
            self._end(
                "deadline" if res.condition == "deadline" else "error",
                f"{res.condition}: {res.error}",
            )
            self.logger.warning(
                "model call failed; rollout ends",
                task=self.request.task.id,
                index=self.request.index,
                turn=turn,
                error=self.error,
            )
            return True
        choice = self._choice(res)
        if choice is None:
            return self._end("no_choices", f"no_choices: the reply to turn {turn} has no choices")
        msg = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        content = _text(msg.get("content"))
        calls = self._calls(msg.get("tool_calls"), content, turn)
        await self._assistant(turn, msg, content, calls)
        return await self._next(turn, choice.get("finish_reason"), content, calls)

    def _choice(self, res: ChatResult) -> dict[str, Any] | None:
        """The reply's first choice (its latency and token usage counted), or None."""
        self.latencies.append(res.latency)
        body = res.body or {}
        u = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        self.usage[0] += _as_int(u.get("prompt_tokens"))
        self.usage[1] += _as_int(u.get("completion_tokens"))
        choices = body.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        return choice if isinstance(choice, dict) else None

    def _calls(self, raw_calls: Any, content: str, turn: int) -> list[_Call]:
        """The reply's tool calls, parsed; with ``recover_text_calls``, calls written in its text
        when it has none (each a format error)."""
        if (
            not raw_calls
            and self.s.recover_text_calls
            and (written := calls_in_text(content, self.by_name.keys()))
        ):
            self.format_errors += len(written)  # the call came as text, not in tool_calls
            raw_calls = [
                {
                    "id": f"call_{turn}_{i}",
                    "type": "function",
                    "function": {"name": n, "arguments": compact(a)},
                }
                for i, (n, a) in enumerate(written)
            ]
        if not raw_calls:
            return []
        return parse_tool_calls(raw_calls, turn, self.seen_ids, unescape=self.s.unescape_html)

    async def _assistant(
        self, turn: int, msg: dict[str, Any], content: str, calls: list[_Call]
    ) -> None:
        """Keep the assistant message (with its reasoning) and send it (a call whose arguments
        did not parse sent as ``{}``, one with no name as ``invalid``)."""
        assistant: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            assistant["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.raw_args},
                }
                for c in calls
            ]
        if calls and any(c.args is None for c in calls):
            self.wire.append({**assistant, "tool_calls": [_sanitised(c) for c in calls]})
        else:
            self.wire.append(assistant)
        reasoning = msg.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:  # kept for trainers, not sent back
            assistant = {**assistant, "reasoning_content": reasoning}
        self.messages.append(assistant)
        await self._publish(turn, assistant)

    async def _next(self, turn: int, finish: Any, content: str, calls: list[_Call]) -> bool:
        """After the reply: end on a cut or filtered reply or an answer, else make the calls (or
        hear the user); True when the session ends."""
        if finish == "length":
            self.final_answer = content if not calls else ""
            return self._end(
                "length",
                f"length: the reply to turn {turn} was cut at the token limit "
                "(finish_reason=length)",
            )
        if finish == "content_filter":
            return self._end(
                "error", f"content_filter: the server filtered the reply to turn {turn}"
            )
        if not calls:
            said = await user_turn(self.user, self.request.task, self.messages, self.ctx)
            # the user answers a question, or says what it held back: it goes on
            if said is not None:
                await self._add(turn, {"role": "user", "content": said})
                return False
            self.final_answer, self.termination = content, "answer"
            return True
        for c in calls:
            text = await self._call(c)
            limit = self.s.max_tool_chars
            if limit and len(text) > limit:
                text = text[:limit] + f"… [cut: {len(text)} characters in all]"
            await self._add(turn, {"role": "tool", "tool_call_id": c.id, "content": text})
        return False

    def _refusal(self, c: _Call) -> str:
        """The error a call gets instead of being made (a format error), or ""."""
        by_name = self.by_name
        if c.args is None:
            return error_content(c.code, c.problem)
        if c.name not in by_name:
            return error_content(
                "unknown_tool",
                f"no tool named {c.name!r}; available: {', '.join(sorted(by_name)) or 'none'}",
            )
        if self.s.validate_arguments and (
            why := check_arguments(by_name[c.name].parameters or {}, c.args)
        ):
            return error_content("invalid_arguments", f"{c.name}: {why}")
        return ""

    async def _call(self, c: _Call) -> str:
        """What the tool message of a call says: its refusal, or the tool's result."""
        refusal = self._refusal(c)
        if refusal:
            self.format_errors += 1
            return refusal
        if time.monotonic() >= self.deadline:
            return error_content("deadline", "the rollout deadline passed; the call was not made")
        return result_content(await self.env.call(c.name, c.args))


def _sanitised(c: _Call) -> dict[str, Any]:
    """A tool call as sent back to the server: one whose arguments did not parse as ``{}``, one with
    no name as ``invalid``."""
    return {
        "id": c.id,
        "type": "function",
        "function": {
            "name": c.name or "invalid",
            "arguments": c.raw_args if c.args is not None else "{}",
        },
    }
