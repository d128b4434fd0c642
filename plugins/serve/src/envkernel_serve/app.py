"""The HTTP face of ``envkernel serve``: OpenEnv's protocol on ``/ws``, MCP on ``/mcp``.

Routes (one Starlette app, served by uvicorn):

* ``GET /health`` -> ``{"status": "healthy"}``; ``GET /metadata`` -> name, description, the
  environments and their tasks' ids; ``GET /schema`` -> JSON Schemas of the action, observation
  and state.
* ``WS /ws``: OpenEnv's session protocol, as ``openenv-core``'s ``EnvClient`` speaks it. The client
  sends ``{"type": "reset", "data": {...}}``, ``{"type": "step", "data": ACTION}``, ``{"type":
  "state"}`` or ``{"type": "close"}``; the server answers ``{"type": "observation", "data":
  {"observation", "reward", "done"}}``, ``{"type": "state", "data": {...}}`` or ``{"type": "error",
  "data": {"message", "code"}}``. Each connection is one session with its own sandbox. Messages are
  not size-capped by default (``max_message_mb``), so a large observation arrives whole.
* ``POST/GET/DELETE /mcp``: the official ``mcp`` server over streamable HTTP: ``tools/list`` and
  ``tools/call``. Each MCP session (its ``mcp-session-id``, or an ``X-Envkernel-Session`` header
  value) gets its own sandbox at the seed state of its environment (the ``X-Envkernel-Env`` header
  or ``?env=ID``; the first served one by default); it is closed when the
  session has been idle for ``mcp_idle_seconds``. Requests with neither (a stateless client) share
  one sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as mtypes
import structlog
from mcp.server.lowlevel import Server as McpServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from .sessions import ActionError, Episode, ServeCore

__all__ = ["SESSION_HEADER", "build_app"]

log = structlog.get_logger("envkernel.serve")

SESSION_HEADER = "x-envkernel-session"
"""An MCP request header naming the session (its sandbox) explicitly, instead of the MCP session."""
ENV_HEADER = "x-envkernel-env"
"""An MCP request header (or the ``env`` query parameter of the URL) choosing the environment of a RUN_DIR."""

_ACTION_SCHEMA = {
    "oneOf": [
        {"type": "object", "required": ["type", "tool_name"], "properties": {
            "type": {"const": "call_tool"}, "tool_name": {"type": "string"}, "arguments": {"type": "object"}}},
        {"type": "object", "required": ["type"], "properties": {"type": {"const": "list_tools"}}},
        {"type": "object", "required": ["type"], "properties": {"type": {"const": "submit"}, "answer": {"type": "string"}}},
    ]
}
_OBSERVATION_SCHEMA = {"type": "object", "properties": {
    "request": {"type": "string"}, "task_id": {"type": ["string", "null"]}, "env_id": {"type": "string"},
    "tools": {"type": "array"}, "tool_name": {"type": "string"}, "result": {}, "ok": {"type": "boolean"},
    "error": {"type": ["object", "null"]}, "truncated": {"type": "boolean"}, "submitted": {"type": "string"}}}
_STATE_SCHEMA = {"type": "object", "properties": {
    "episode_id": {"type": ["string", "null"]}, "step_count": {"type": "integer", "minimum": 0},
    "task_id": {"type": ["string", "null"]}, "env_id": {"type": "string"}, "done": {"type": "boolean"},
    "truncated": {"type": "boolean"}, "reward": {"type": ["number", "null"]}}}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


async def _ws_session(core: ServeCore, ws: WebSocket) -> None:
    await ws.accept()
    ep = core.episode()
    log.info("session opened", session=ep.session_id, sessions=len(core.live))
    try:
        while True:
            raw = await ws.receive_text()
            try:
                msg = json.loads(raw)
            except json.JSONDecodeError as exc:
                await ws.send_text(_dumps({"type": "error", "data": {"message": f"Invalid JSON: {exc}", "code": "INVALID_JSON"}}))
                continue
            kind = msg.get("type", "") if isinstance(msg, dict) else ""
            if kind == "close":
                break
            try:
                async with ep.lock:
                    if kind == "reset":
                        out = {"type": "observation", "data": await ep.reset(msg.get("data") or {})}
                    elif kind == "step":
                        out = {"type": "observation", "data": await ep.step(msg.get("data"))}
                    elif kind == "state":
                        out = {"type": "state", "data": await ep.state()}
                    else:
                        out = {"type": "error", "data": {"message": f"Unknown message type: {kind}", "code": "UNKNOWN_TYPE"}}
            except ActionError as exc:
                out = {"type": "error", "data": {"message": str(exc), "code": "VALIDATION_ERROR"}}
            except Exception as exc:  # noqa: BLE001 - a sandbox that cannot open is an answer, not a dead server
                log.warning("session operation failed", session=ep.session_id, op=kind, error=f"{type(exc).__name__}: {exc}")
                out = {"type": "error", "data": {"message": f"{type(exc).__name__}: {exc}", "code": "EXECUTION_ERROR"}}
            await ws.send_text(_dumps(out))
    except WebSocketDisconnect:
        pass
    finally:
        await ep.close()
        log.info("session closed", session=ep.session_id, steps=len(ep.calls), sessions=len(core.live))
        with contextlib.suppress(RuntimeError):
            await ws.close()


class _McpSessions:
    """One episode per MCP session (or per ``X-Envkernel-Session`` value), closed when idle."""

    def __init__(self, core: ServeCore, idle_seconds: float) -> None:
        self.core = core
        self.idle_seconds = idle_seconds
        self.by_key: dict[Any, Episode] = {}

    def key(self, ctx: Any) -> Any:
        """``X-Envkernel-Session``, else the MCP session id (``mcp-session-id``), else one shared session."""
        headers = getattr(getattr(ctx, "request", None), "headers", None) or {}
        named = headers.get(SESSION_HEADER)
        if named:
            return ("header", named)
        return ("mcp", headers.get("mcp-session-id") or "shared")

    def env(self, ctx: Any) -> Any:
        """The environment an MCP request asks for (``X-Envkernel-Env`` or ``?env=``), else the default one."""
        request = getattr(ctx, "request", None)
        headers = getattr(request, "headers", None) or {}
        query = getattr(request, "query_params", None) or {}
        wanted = headers.get(ENV_HEADER) or query.get("env")
        if not wanted:
            return self.core.catalog.default_env
        env = self.core.catalog.envs.get(wanted)
        if env is None:
            raise ActionError(f"no environment {wanted!r} is served here; the environments are: {', '.join(self.core.catalog.envs)}")
        return env

    def get(self, ctx: Any) -> Episode:
        env = self.env(ctx)
        k = (*self.key(ctx), env.id)
        ep = self.by_key.get(k)
        if ep is None:
            ep = self.by_key[k] = self.core.episode(env)
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


def _mcp_server(core: ServeCore, sessions: _McpSessions) -> McpServer[Any]:
    cat = core.catalog

    async def list_tools(ctx: Any, params: Any) -> mtypes.ListToolsResult:
        try:
            env = sessions.env(ctx)
        except ActionError as exc:
            raise ValueError(str(exc)) from None
        return mtypes.ListToolsResult(tools=[mtypes.Tool(name=t.name, description=t.description or t.name,
                                                         input_schema=t.parameters or {"type": "object", "properties": {}})
                                             for t in env.tools])

    async def call_tool(ctx: Any, params: Any) -> mtypes.CallToolResult:
        try:
            ep = sessions.get(ctx)
        except ActionError as exc:
            return mtypes.CallToolResult(content=[mtypes.TextContent(text=str(exc))], is_error=True)
        async with ep.lock:
            try:
                obs = await ep.call(params.name, dict(params.arguments or {}))
            except ActionError as exc:
                return mtypes.CallToolResult(content=[mtypes.TextContent(text=str(exc))], is_error=True)
        if obs["error"] is not None:
            return mtypes.CallToolResult(content=[mtypes.TextContent(text=obs["error"]["message"])], is_error=True)
        value = obs["result"]
        text = value if isinstance(value, str) else _dumps(value)
        structured = value if isinstance(value, dict) else {"result": value}
        return mtypes.CallToolResult(content=[mtypes.TextContent(text=text)], structured_content=structured, is_error=not obs["ok"])

    names = ", ".join(cat.envs)
    return McpServer("envkernel", version="0.1.0", instructions=f"Tools of the environment(s) {names}; each MCP session has its own "
                     "isolated sandbox (choose the environment with the X-Envkernel-Env header or ?env=).",
                     on_list_tools=list_tools, on_call_tool=call_tool)


def build_app(core: ServeCore, *, host: str = "127.0.0.1", mcp_idle_seconds: float = 600.0,
              on_start: Any = None, on_stop: Any = None) -> Starlette:
    """The Starlette app serving ``core`` (see the module docstring). ``on_start``/``on_stop`` are awaited in its lifespan."""
    sessions = _McpSessions(core, mcp_idle_seconds)
    security = None
    if host in ("127.0.0.1", "localhost", "::1"):
        security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                             allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                                             allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"])
    manager = StreamableHTTPSessionManager(app=_mcp_server(core, sessions), security_settings=security, max_sessions=None,
                                           session_idle_timeout=mcp_idle_seconds)
    cat = core.catalog

    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"status": "healthy"})

    async def metadata(_: Request) -> JSONResponse:
        env = cat.default_env
        return JSONResponse({"name": env.name if len(cat.envs) == 1 else f"envkernel run {cat.source}",
                             "description": env.description if len(cat.envs) == 1 else f"{len(cat.envs)} environments",
                             "version": "0.1.0", "author": "envkernel",
                             "envs": [{"id": e.id, "name": e.name, "tools": [t.name for t in e.tools]} for e in cat.envs.values()],
                             "tasks": [t.id for t in cat.tasks], "sessions": len(core.live),
                             "sandboxes": {"opened": core.pool.opened, "reused": core.pool.reused, "idle": core.pool.idle}})

    async def schema(_: Request) -> JSONResponse:
        return JSONResponse({"action": _ACTION_SCHEMA, "observation": _OBSERVATION_SCHEMA, "state": _STATE_SCHEMA})

    async def ws_endpoint(ws: WebSocket) -> None:
        await _ws_session(core, ws)

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

    return Starlette(routes=[Route("/health", health), Route("/metadata", metadata), Route("/schema", schema),
                             WebSocketRoute("/ws", ws_endpoint), Route("/mcp", StreamableHTTPASGIApp(manager))],
                     lifespan=lifespan)
