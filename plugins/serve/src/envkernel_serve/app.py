"""The HTTP face of ``envkernel serve``: OpenEnv's protocol on ``/ws`` and its HTTP routes, MCP on
``/mcp``.

Routes (one Starlette app, served by uvicorn):

* ``GET /health`` -> ``{"status": "healthy"}``; ``GET /metadata`` -> name, description, the
  environments and their tasks' ids; ``GET /schema`` -> JSON Schemas of the action, observation
  and state.
* ``WS /ws``: OpenEnv's session protocol, as ``openenv-core``'s ``EnvClient`` speaks it. The client
  sends ``{"type": "reset", "data": {...}}``, ``{"type": "step", "data": ACTION}``, ``{"type":
  "state"}`` (``"data": {"reasons": true}`` from a trainer: with the grading's reasons) or
  ``{"type": "close"}``; the server answers ``{"type": "observation", "data":
  {"observation", "reward", "done"}}``, ``{"type": "state", "data": {...}}`` or ``{"type": "error",
  "data": {"message", "code"}}``. Each connection is one session with its own sandbox. Messages are
  not size-capped by default (``max_message_mb``), so a large observation arrives whole.
* ``POST /reset``, ``POST /step``, ``GET /state``: OpenEnv's HTTP routes, with its request and
  response shapes (``ResetRequest``: ``seed``, ``episode_id`` and the task options; ``StepRequest``:
  ``action``; answers ``{"observation", "reward", "done"}`` and the state). openenv-core makes a new
  environment per request there, so an episode cannot span requests; here an episode opened by
  ``/reset`` is kept under its ``episode_id`` (``observation.episode_id``) and a ``/step`` or
  ``/state`` that names it (in the body, ``?episode_id=`` or the ``X-Envkernel-Session`` header)
  continues it, until it has been idle for ``mcp_idle_seconds``. One naming no episode is OpenEnv's
  stateless call on a fresh episode. ``GET /openapi.json`` lists the routes (what openenv-core's
  runtime validator reads).
* ``POST/GET/DELETE /mcp``: the official ``mcp`` server over streamable HTTP: ``tools/list`` and
  ``tools/call``. Each MCP session (its ``mcp-session-id``, or an ``X-Envkernel-Session`` header
  value) gets its own sandbox at the seed state of its environment (the ``X-Envkernel-Env`` header
  or ``?env=ID``; the first served one by default); it is closed when the
  session has been idle for ``mcp_idle_seconds``. Requests with neither (a stateless client) share
  one sandbox. A session that names a task (the ``X-Envkernel-Task`` header or ``?task=ID``) starts
  from that task's initial state, and reading its resource ``envkernel://session/state`` (MCP
  ``resources/read``: not a tool, so a model is never offered it) returns the episode's state with
  its ``reward``, the task's own check on what the session did (never its ``reasons``, which quote
  the expected values, unless the server runs with ``show_reasons``). Such a session is also
  offered the tool ``submit_answer`` (``{"answer": TEXT}``), which ends the episode with the final
  answer; its result is the reward and the episode's state.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as mtypes
import msgspec
import structlog
from mcp.server.lowlevel import Server as McpServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .catalog import CatalogError, tool_list
from .sessions import ActionError, Episode, ServeCore

__all__ = ["SESSION_HEADER", "build_app"]

log = structlog.get_logger("envkernel.serve")

SESSION_HEADER = "x-envkernel-session"
"""An MCP request header naming the session (its sandbox) explicitly, instead of the MCP session."""
ENV_HEADER = "x-envkernel-env"
"""An MCP request header (or the ``env`` query parameter of the URL) choosing the environment of a
RUN_DIR."""
TASK_HEADER = "x-envkernel-task"
"""An MCP request header (or the ``task`` query parameter) naming the task the session plays."""
STATE_URI = "envkernel://session/state"
"""The MCP resource holding a session's state and reward."""
SUBMIT_TOOL = "submit_answer"
"""The MCP tool a session that names a task ends its episode with (``envkernel_submit_answer`` if
the environment has a tool of that name)."""
_SUBMIT_SCHEMA = {
    "type": "object",
    "required": ["answer"],
    "properties": {
        "answer": {
            "type": "string",
            "description": "your final answer to the request (empty if the request asked only "
            "for changes)",
        }
    },
}


def submit_name(env: Any) -> str:
    """The name of the submit tool in ``env``'s sessions: :data:`SUBMIT_TOOL`, unless one of its
    tools has that name."""
    return (
        SUBMIT_TOOL if all(t.name != SUBMIT_TOOL for t in env.tools) else f"envkernel_{SUBMIT_TOOL}"
    )


_ACTION_SCHEMA = {
    "oneOf": [
        {
            "type": "object",
            "required": ["type", "tool_name"],
            "properties": {
                "type": {"const": "call_tool"},
                "tool_name": {"type": "string"},
                "arguments": {"type": "object"},
            },
        },
        {"type": "object", "required": ["type"], "properties": {"type": {"const": "list_tools"}}},
        {
            "type": "object",
            "required": ["type"],
            "properties": {"type": {"const": "submit"}, "answer": {"type": "string"}},
        },
    ]
}
_OBSERVATION_SCHEMA = {
    "type": "object",
    "properties": {
        "request": {"type": "string"},
        "policy": {"type": "string"},
        "task_id": {"type": ["string", "null"]},
        "env_id": {"type": "string"},
        "tools": {"type": "array"},
        "tool_name": {"type": "string"},
        "result": {},
        "ok": {"type": "boolean"},
        "error": {"type": ["object", "null"]},
        "truncated": {"type": "boolean"},
        "submitted": {"type": "string"},
    },
}
_STATE_SCHEMA = {
    "type": "object",
    "properties": {
        "episode_id": {"type": ["string", "null"]},
        "step_count": {"type": "integer", "minimum": 0},
        "task_id": {"type": ["string", "null"]},
        "env_id": {"type": "string"},
        "done": {"type": "boolean"},
        "truncated": {"type": "boolean"},
        "reward": {"type": ["number", "null"]},
        "reasons": {
            "type": "array",
            "items": {"type": "string"},
            "description": "why the reward is below 1 (quoting the expected values): only when "
            "the trainer asks for it or the server runs with --show-reasons",
        },
    },
}


_json = msgspec.json.Encoder(
    enc_hook=str
)  # msgspec: several times faster than json.dumps on the step path


def _wants_reasons(msg: dict[str, Any], core: ServeCore) -> bool | None:
    """A trainer's ``{"type": "state", "data": {"reasons": true, "token": TOKEN}}``: True (the
    state with its reasons), None when asked without the trainer's token, else False."""
    data = msg.get("data")
    if not (isinstance(data, dict) and data.get("reasons") is True):
        return False
    return True if core.may_see_reasons(data.get("token")) else None


def _dumps(value: Any) -> str:
    return _json.encode(value).decode()


async def _send_text(send: Any, text: str) -> bool:
    """Send one text message; False when the client is gone. uvicorn raises ``ClientDisconnected``
    (an ``OSError``) once the connection is lost, and ``RuntimeError`` once the client's close frame
    was answered (a step still running when the client closed): either is the session's quiet
    end."""
    try:
        await send({"type": "websocket.send", "text": text})
    except (OSError, RuntimeError):
        return False
    return True


WS_PATHS = ("/ws", "/ws/")
"""The session WebSocket's paths (openenv-core's client connects to ``/ws``; ``/ws/`` is the same
route)."""


async def _ws_session(core: ServeCore, receive: Any, send: Any) -> None:
    """One OpenEnv WebSocket session, on the raw ASGI messages (no routing or middleware per
    message)."""
    if (await receive())["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    ep = core.episode()
    log.info("session opened", session=ep.session_id, sessions=len(core.live))
    try:
        while True:
            event = await receive()
            if event["type"] != "websocket.receive":
                break  # websocket.disconnect
            raw = event.get("text")
            if raw is None:
                raw = event.get("bytes") or b""
            try:
                msg = msgspec.json.decode(raw)
            except msgspec.DecodeError as exc:
                if not await _send_text(
                    send,
                    _dumps(
                        {
                            "type": "error",
                            "data": {"message": f"Invalid JSON: {exc}", "code": "INVALID_JSON"},
                        }
                    ),
                ):
                    break
                continue
            kind = msg.get("type", "") if isinstance(msg, dict) else ""
            if kind == "close":
                break
            try:
                async with ep.lock:
                    if kind == "step":
                        out = {"type": "observation", "data": await ep.step(msg.get("data"))}
                    elif kind == "reset":
                        out = {"type": "observation", "data": await ep.reset(msg.get("data") or {})}
                    elif kind == "state":
                        out = {"type": "state", "data": await ep.state(_wants_reasons(msg, core))}
                    else:
                        out = {
                            "type": "error",
                            "data": {
                                "message": f"Unknown message type: {kind}",
                                "code": "UNKNOWN_TYPE",
                            },
                        }
            except ActionError as exc:
                out = {"type": "error", "data": {"message": str(exc), "code": "VALIDATION_ERROR"}}
            except Exception as exc:
                log.warning(
                    "session operation failed",
                    session=ep.session_id,
                    op=kind,
                    error=f"{type(exc).__name__}: {exc}",
                )
                out = {
                    "type": "error",
                    "data": {"message": f"{type(exc).__name__}: {exc}", "code": "EXECUTION_ERROR"},
                }
            if not await _send_text(send, _dumps(out)):
                break
        with contextlib.suppress(Exception):  # the client may be gone already
            await send({"type": "websocket.close", "code": 1000})
    finally:
        await ep.close()
        log.info(
            "session closed", session=ep.session_id, steps=len(ep.calls), sessions=len(core.live)
        )


def _http_error(exc: Exception, op: str) -> JSONResponse:
    if isinstance(exc, ActionError | CatalogError):
        return JSONResponse({"detail": str(exc)}, status_code=422)
    log.warning("http operation failed", op=op, error=f"{type(exc).__name__}: {exc}")
    return JSONResponse({"detail": f"{type(exc).__name__}: {exc}"}, status_code=500)


async def _http_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ActionError(f"the request body is not JSON ({exc}); send a JSON object") from None
    if not isinstance(body, dict):
        raise ActionError(f"the request body must be a JSON object, got {type(body).__name__}")
    return body


class _HttpEpisodes:
    """OpenEnv's stateless HTTP routes, kept as episodes by ``episode_id`` (see
    :func:`build_app`)."""

    def __init__(self, sessions: _McpSessions) -> None:
        self.sessions = sessions
        self.core = sessions.core

    def _named(self, request: Request, body: dict[str, Any]) -> str:
        return str(
            body.get("episode_id")
            or request.headers.get(SESSION_HEADER)
            or request.query_params.get("episode_id")
            or ""
        )

    def _find(self, episode_id: str) -> Episode:
        ep = self.sessions.by_key.get(("http", episode_id))
        if ep is None:
            raise ActionError(
                f"no episode {episode_id!r} is open here (it was never reset, or it was idle "
                f"for longer than {self.sessions.idle_seconds:g} s); POST /reset first and "
                "use the episode_id it returns"
            )
        ep.last_used = time.monotonic()
        return ep

    async def reset(self, request: Request) -> JSONResponse:
        """``POST /reset``: a new episode (or the named one, started over); its id is
        ``observation.episode_id``."""
        try:
            body = await _http_body(request)
            wanted = self._named(request, body)
            ep = self.sessions.by_key.get(("http", wanted)) if wanted else None
            new = ep is None
            if ep is None:
                ep = self.core.episode()
            try:
                async with ep.lock:
                    out = await ep.reset({**body, "episode_id": wanted} if wanted else body)
            except BaseException:
                if new:
                    await ep.close()
                raise
            self.sessions.by_key.pop(("http", wanted), None)
            self.sessions.by_key[("http", ep.episode_id)] = ep
            ep.last_used = time.monotonic()
            return JSONResponse(out)
        except Exception as exc:
            return _http_error(exc, "reset")

    async def step(self, request: Request) -> JSONResponse:
        """``POST /step`` ``{"action": ..., "episode_id": ...}``; without an episode id, one step of
        a fresh episode (as OpenEnv)."""
        try:
            body = await _http_body(request)
            if "action" not in body:
                raise ActionError(
                    'a step needs an "action": send {"action": {"type": "call_tool", '
                    '"tool_name": ..., "arguments": {...}}, "episode_id": ID from /reset}'
                )
            wanted = self._named(request, body)
            if not wanted:
                ep = self.core.episode()
                try:
                    return JSONResponse(await ep.step(body["action"]))
                finally:
                    await ep.close()
            ep = self._find(wanted)
            async with ep.lock:
                return JSONResponse(await ep.step(body["action"]))
        except Exception as exc:
            return _http_error(exc, "step")

    def _reasons(self, request: Request) -> bool | None:
        """``?reasons=1`` with the trainer's ``Authorization: Bearer TOKEN``: True; without the
        token: None (withheld); not asked: False."""
        if request.query_params.get("reasons", "").lower() not in ("1", "true", "yes"):
            return False
        auth = request.headers.get("authorization", "")
        token = auth[7:] if auth.lower().startswith("bearer ") else None
        return True if self.core.may_see_reasons(token) else None

    async def state(self, request: Request) -> JSONResponse:
        """``GET /state?episode_id=ID``; without one, the state of a fresh environment (as
        OpenEnv)."""
        try:
            wanted = self._named(request, {})
            if not wanted:
                ep = self.core.episode()
                try:
                    return JSONResponse(await ep.state())
                finally:
                    await ep.close()
            ep = self._find(wanted)
            async with ep.lock:
                return JSONResponse(await ep.state(self._reasons(request)))
        except Exception as exc:
            return _http_error(exc, "state")


class _McpEndpoint:
    """``/mcp``: the official MCP app, except that a POST of a JSON object that is no JSON-RPC
    message is answered as openenv-core's own server answers it (200, a JSON-RPC "invalid request"
    error), which is what its runtime validator probes (the MCP app would answer 400)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Route one ASGI request (see the class docstring)."""
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            chunks.append(msg.get("body", b""))
            more = msg.get("more_body", False)
        body = b"".join(chunks)
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and "jsonrpc" not in parsed:
            await JSONResponse(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {
                        "code": -32600,
                        "message": (
                            'not a JSON-RPC message: send {"jsonrpc": "2.0", "id": 1, '
                            '"method": "initialize", ...} '
                            "(an MCP client over streamable HTTP)"
                        ),
                    },
                }
            )(scope, receive, send)
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


class _McpSessions:
    """One episode per MCP session (or per ``X-Envkernel-Session`` value), closed when idle."""

    def __init__(self, core: ServeCore, idle_seconds: float) -> None:
        self.core = core
        self.idle_seconds = idle_seconds
        self.by_key: dict[Any, Episode] = {}

    def key(self, ctx: Any) -> Any:
        """``X-Envkernel-Session``, else the MCP session id (``mcp-session-id``), else one shared
        session."""
        headers = getattr(getattr(ctx, "request", None), "headers", None) or {}
        named = headers.get(SESSION_HEADER)
        if named:
            return ("header", named)
        return ("mcp", headers.get("mcp-session-id") or "shared")

    def env(self, ctx: Any) -> Any:
        """The environment an MCP request asks for (``X-Envkernel-Env`` or ``?env=``), else the
        default one."""
        request = getattr(ctx, "request", None)
        headers = getattr(request, "headers", None) or {}
        query = getattr(request, "query_params", None) or {}
        wanted = headers.get(ENV_HEADER) or query.get("env")
        if not wanted:
            return self.core.catalog.default_env
        env = self.core.catalog.envs.get(wanted)
        if env is None:
            raise ActionError(
                f"no environment {wanted!r} is served here; the environments are: "
                f"{', '.join(self.core.catalog.envs)}"
            )
        return env

    def task(self, ctx: Any) -> str:
        """The task an MCP request names (``X-Envkernel-Task`` or ``?task=``), else ``""``."""
        request = getattr(ctx, "request", None)
        headers = getattr(request, "headers", None) or {}
        query = getattr(request, "query_params", None) or {}
        return str(headers.get(TASK_HEADER) or query.get("task") or "")

    def target(self, ctx: Any) -> tuple[str, Any]:
        """The task a request names (``""``: none) and its environment (else the one :meth:`env`
        picks)."""
        task_id = self.task(ctx)
        if not task_id:
            return "", self.env(ctx)
        cat = self.core.catalog
        return task_id, cat.envs[cat.task({"task_id": task_id}, 0).env_id]

    async def get(self, ctx: Any) -> Episode:
        """The session's episode, made (and its task loaded) at its first request."""
        task_id, env = self.target(ctx)
        k = (*self.key(ctx), env.id, task_id)
        ep = self.by_key.get(k)
        if ep is None:
            ep = self.core.episode(env)
            if task_id:
                await ep.reset({"task_id": task_id})
            if k in self.by_key:  # a concurrent first request of the same session made it meanwhile
                await ep.close()
            ep = self.by_key.setdefault(k, ep)
        ep.last_used = time.monotonic()
        return ep

    async def reap(self) -> None:
        while True:
            await asyncio.sleep(min(5.0, self.idle_seconds))
            now = time.monotonic()
            for k, ep in list(self.by_key.items()):
                if now - ep.last_used > self.idle_seconds and not ep.lock.locked():
                    self.by_key.pop(k, None)
                    await ep.close()


async def _submit(ep: Episode, arguments: dict[str, Any]) -> mtypes.CallToolResult:
    """The submit tool: end the episode with ``arguments["answer"]``; the result is the reward and
    the state."""
    answer = arguments.get("answer", "")
    if not isinstance(answer, str):
        raise ActionError(
            f'{SUBMIT_TOOL} takes {{"answer": TEXT}}; the answer must be a string, got '
            f"{type(answer).__name__}"
        )
    if ep.done:
        raise ActionError(
            "the episode is done (an answer was submitted, or it ran out of steps); open a "
            f"new MCP session for another episode, or read {STATE_URI} for its reward"
        )
    out = await ep.step({"type": "submit", "answer": answer})
    result = {**await ep.state(), "reward": out["reward"], "submitted": answer}
    return mtypes.CallToolResult(
        content=[mtypes.TextContent(text=_dumps(result))], structured_content=result, is_error=False
    )


_SUBMIT_DESCRIPTION = (
    "Submit your final answer and end the episode; the result is the "
    "reward (the task's check, 0 to 1). Call it once, after the other tools."
)

_STATE_RESOURCE = mtypes.Resource(
    uri=STATE_URI,
    name="session-state",
    mime_type="application/json",
    description="This session's episode: task_id, step_count, done and reward "
    "(the task's own check).",
)


def _error_result(text: str) -> mtypes.CallToolResult:
    """A tool call's failure as MCP reports it."""
    return mtypes.CallToolResult(content=[mtypes.TextContent(text=text)], is_error=True)


def _tool_result(obs: dict[str, Any]) -> mtypes.CallToolResult:
    """A tool call's observation as an MCP result (text and, for a value, structured content)."""
    if obs["error"] is not None:
        return _error_result(obs["error"]["message"])
    value = obs["result"]
    text = value if isinstance(value, str) else _dumps(value)
    structured = value if isinstance(value, dict) else {"result": value}
    return mtypes.CallToolResult(
        content=[mtypes.TextContent(text=text)],
        structured_content=structured,
        is_error=not obs["ok"],
    )


class _McpHandlers:
    """The MCP server's four requests, each on its session's episode."""

    def __init__(self, core: ServeCore, sessions: _McpSessions) -> None:
        self.cat, self.sessions = core.catalog, sessions

    async def list_tools(self, ctx: Any, params: Any) -> mtypes.ListToolsResult:
        """The environment's tools; a session that names a task is offered that task's tools
        only, as a /ws session after its reset, and the tool that ends its episode with the
        answer (its result holds the reward)."""
        try:
            task_id, env = self.sessions.target(ctx)
            task = self.cat.task({"task_id": task_id}, 0) if task_id else None
        except (ActionError, CatalogError) as exc:
            raise ValueError(str(exc)) from None
        tools = [
            mtypes.Tool(
                name=t["name"],
                description=t["description"] or t["name"],
                input_schema=t["input_schema"],
            )
            for t in tool_list(env, task)
        ]
        if task is not None:
            tools.append(
                mtypes.Tool(
                    name=submit_name(env),
                    input_schema=_SUBMIT_SCHEMA,
                    description=_SUBMIT_DESCRIPTION,
                )
            )
        return mtypes.ListToolsResult(tools=tools)

    async def call_tool(self, ctx: Any, params: Any) -> mtypes.CallToolResult:
        """One tool call (or the submit tool) on the session's episode."""
        try:
            ep = await self.sessions.get(ctx)
        except (ActionError, CatalogError) as exc:
            return _error_result(str(exc))
        async with ep.lock:
            try:
                if ep.task is not None and params.name == submit_name(ep.env):
                    return await _submit(ep, dict(params.arguments or {}))
                obs = await ep.call(params.name, dict(params.arguments or {}))
            except ActionError as exc:
                return _error_result(str(exc))
        return _tool_result(obs)

    async def list_resources(self, ctx: Any, params: Any) -> mtypes.ListResourcesResult:
        """The one resource: the session's state."""
        return mtypes.ListResourcesResult(resources=[_STATE_RESOURCE])

    async def read_resource(self, ctx: Any, params: Any) -> mtypes.ReadResourceResult:
        """The session's episode state, as JSON."""
        if str(params.uri) != STATE_URI:
            raise ValueError(f"no resource {params.uri}; the one resource is {STATE_URI}")
        try:
            ep = await self.sessions.get(ctx)
        except (ActionError, CatalogError) as exc:
            raise ValueError(str(exc)) from None
        async with ep.lock:
            state = await ep.state()
        if not state["done"] and not ep.core.show_reasons:
            # the reward before the episode ends would let an agent search by trial (write, read
            # the reward, undo): the harness reads it after submit_answer or max_steps
            state["reward"] = None
        return mtypes.ReadResourceResult(
            contents=[
                mtypes.TextResourceContents(
                    uri=STATE_URI, mime_type="application/json", text=_dumps(state)
                )
            ]
        )


def _mcp_server(core: ServeCore, sessions: _McpSessions) -> McpServer[Any]:
    handlers = _McpHandlers(core, sessions)
    names = ", ".join(core.catalog.envs)
    return McpServer(
        "envkernel",
        version="0.1.0",
        instructions=f"Tools of the environment(s) {names}; each MCP session has its own "
        "isolated sandbox (choose the environment with the X-Envkernel-Env header or ?env=).",
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources,
        on_read_resource=handlers.read_resource,
    )


_OPENAPI = {
    "openapi": "3.1.0",
    "info": {"title": "envkernel serve", "version": "0.1.0"},
    "paths": {
        "/reset": {"post": {"summary": "start an episode"}},
        "/step": {"post": {"summary": "one action of an episode"}},
        "/state": {"get": {"summary": "an episode's state and reward"}},
        "/health": {"get": {}},
        "/metadata": {"get": {}},
        "/schema": {"get": {}},
        "/mcp": {"post": {"summary": "MCP, streamable HTTP"}},
    },
}
"""The path list openenv-core's ``validate_running_environment`` reads to tell the simulation
mode."""


class _Pages:
    """The read-only HTTP pages: health, metadata, schema, openapi.json."""

    def __init__(self, core: ServeCore) -> None:
        self.core = core
        self.task_ids: dict[str, list[str]] = {}
        for t in core.catalog.tasks:
            self.task_ids.setdefault(t.env_id, []).append(t.id)

    async def health(self, _: Request) -> JSONResponse:
        """Always healthy while it answers."""
        return JSONResponse({"status": "healthy"})

    async def metadata(self, _: Request) -> JSONResponse:
        """The served environments, tasks, live sessions and the pool's counts."""
        core, cat = self.core, self.core.catalog
        env = cat.default_env
        one = len(cat.envs) == 1
        return JSONResponse(
            {
                "name": env.name if one else f"envkernel run {cat.source}",
                "description": env.description if one else f"{len(cat.envs)} environments",
                "version": "0.1.0",
                "author": "envkernel",
                "envs": [
                    {
                        "id": e.id,
                        "name": e.name,
                        "tools": [t.name for t in e.tools],
                        "tool_specs": tool_list(e),
                        "task_ids": self.task_ids.get(e.id, []),
                    }
                    for e in cat.envs.values()
                ],
                "tasks": [t.id for t in cat.tasks],
                "sessions": len(core.live),
                "sandboxes": {
                    "opened": core.pool.opened,
                    "reused": core.pool.reused,
                    "idle": core.pool.idle,
                },
                "tool_calls_by_path": dict(sorted(core.call_paths.items())),
            }
        )

    async def schema(self, _: Request) -> JSONResponse:
        """The action, observation and state schemas."""
        return JSONResponse(
            {"action": _ACTION_SCHEMA, "observation": _OBSERVATION_SCHEMA, "state": _STATE_SCHEMA}
        )

    async def openapi(self, _: Request) -> JSONResponse:
        """:data:`_OPENAPI`."""
        return JSONResponse(_OPENAPI)


def _security(host: str) -> TransportSecuritySettings | None:
    """DNS-rebinding protection when bound to loopback (None otherwise)."""
    if host not in ("127.0.0.1", "localhost", "::1"):
        return None
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


def _lifespan(
    core: ServeCore, sessions: _McpSessions, manager: Any, on_start: Any, on_stop: Any
) -> Any:
    """The app's lifespan: ``on_start``, the MCP manager and the idle reaper, then closing."""

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        if on_start is not None:
            await on_start()
        reaper = asyncio.create_task(sessions.reap())
        try:
            async with manager.run():
                yield
        finally:
            reaper.cancel()
            await core.close()
            if on_stop is not None:
                await on_stop()

    return lifespan


def build_app(
    core: ServeCore,
    *,
    host: str = "127.0.0.1",
    mcp_idle_seconds: float = 600.0,
    on_start: Any = None,
    on_stop: Any = None,
) -> Any:
    """The ASGI app serving ``core`` (see the module docstring): ``/ws`` itself, the rest a
    Starlette app. ``on_start``/``on_stop`` are awaited in its lifespan."""
    sessions = _McpSessions(core, mcp_idle_seconds)
    manager = StreamableHTTPSessionManager(
        app=_mcp_server(core, sessions),
        security_settings=_security(host),
        max_sessions=None,
        session_idle_timeout=mcp_idle_seconds,
    )
    pages = _Pages(core)
    http = _HttpEpisodes(sessions)
    routes = Starlette(
        routes=[
            Route("/health", pages.health),
            Route("/metadata", pages.metadata),
            Route("/schema", pages.schema),
            Route("/reset", http.reset, methods=["POST"]),
            Route("/step", http.step, methods=["POST"]),
            Route("/state", http.state),
            Route("/openapi.json", pages.openapi),
            Route("/mcp", _McpEndpoint(StreamableHTTPASGIApp(manager))),
        ],
        lifespan=_lifespan(core, sessions, manager, on_start, on_stop),
    )

    async def app(scope: Any, receive: Any, send: Any) -> None:
        # the session WebSocket goes straight to its handler: Starlette's router, middleware and
        # WebSocket wrapper cost each step more than the handler itself
        if scope["type"] == "websocket" and scope["path"] in WS_PATHS:
            await _ws_session(core, receive, send)
        else:
            await routes(scope, receive, send)

    return app
