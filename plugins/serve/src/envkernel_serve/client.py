"""A small client of ``envkernel serve``'s session WebSocket (OpenEnv's protocol), sync and async.

The Gymnasium env, the TRL class and the verl tool use it; ``openenv-core``'s own ``EnvClient``
speaks the same protocol and works as well (see docs/serve.md). One :class:`Session` is one
server session, so one isolated sandbox.

    with Session("http://127.0.0.1:8000") as s:
        # {"observation": {"request", "tools", ...}, "reward", "done"}
        first = s.reset(task_index=0)
        s.call("get_product", product_id="prd_0001")
        s.submit("home office")["reward"]          # the task's own check
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
import weakref
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as aconnect
from websockets.sync.client import ClientConnection as SyncConnection
from websockets.sync.client import connect

__all__ = ["AsyncSession", "ServeError", "Session", "http_url", "server_metadata", "ws_url"]


class ServeError(RuntimeError):
    """The server answered with an error (``code`` is OpenEnv's: VALIDATION_ERROR, EXECUTION_ERROR,
    ...)."""

    def __init__(self, message: str, code: str = "") -> None:
        super().__init__(f"{message} ({code})" if code else message)
        self.code = code


def ws_url(url: str) -> str:
    """The session WebSocket of a server given as ``http://HOST:PORT``, ``ws://HOST:PORT`` or the
    full ``.../ws``."""
    u = url.rstrip("/")
    if u.startswith("http://"):
        u = "ws://" + u[len("http://") :]
    elif u.startswith("https://"):
        u = "wss://" + u[len("https://") :]
    elif not u.startswith(("ws://", "wss://")):
        u = "ws://" + u
    return u if u.endswith("/ws") else u + "/ws"


def http_url(url: str) -> str:
    """The HTTP base of a server given as ``http://HOST:PORT``, ``ws://HOST:PORT/ws`` or
    ``HOST:PORT``."""
    u = ws_url(url)[: -len("/ws")]
    return "http" + u[len("ws") :]


def server_metadata(url: str, *, timeout: float = 60.0) -> dict[str, Any]:
    """``GET /metadata`` of the server at ``url``: its ``envs`` (each with ``id``, ``tools``,
    ``tool_specs`` and ``task_ids``) and ``tasks``."""
    target = http_url(url) + "/metadata"
    try:
        with urllib.request.urlopen(target, timeout=timeout) as resp:
            data: dict[str, Any] = json.loads(resp.read())
    except (OSError, ValueError) as exc:
        raise ServeError(
            f"cannot read {target}: {exc}; is `envkernel serve` running there?"
        ) from None
    return data


def _close_connection(ws: SyncConnection) -> None:
    """Close a session's connection (the ``close`` message, then the WebSocket's closing
    handshake)."""
    try:
        ws.send(json.dumps({"type": "close"}))
    except Exception:
        pass
    try:
        ws.close()
    except Exception:
        pass


def _answer(raw: str | bytes) -> dict[str, Any]:
    msg = json.loads(raw)
    if msg.get("type") == "error":
        data = msg.get("data") or {}
        raise ServeError(str(data.get("message", "unknown error")), str(data.get("code", "")))
    data: dict[str, Any] = msg.get("data") or {}
    return data


def _state_message(reasons: bool, token: str) -> dict[str, Any]:
    """A ``state`` request, asking for the reasons with the trainer's token when ``reasons``."""
    if not reasons:
        return {"type": "state"}
    return {"type": "state", "data": {"reasons": True, "token": token}}


class Session:
    """One session (one sandbox) on a server, over a blocking WebSocket."""

    def __init__(
        self, url: str, *, timeout: float = 120.0, max_message_mb: float = 0, token: str = ""
    ) -> None:
        self.url = ws_url(url)
        self.timeout = timeout
        self.token = token or os.environ.get("ENVKERNEL_SERVE_TOKEN", "")
        """The trainer's token, sent when asking for reasons (``ENVKERNEL_SERVE_TOKEN``)."""
        max_size = int(max_message_mb * 1024 * 1024) if max_message_mb > 0 else None
        try:
            self._ws: SyncConnection | None = connect(
                self.url, max_size=max_size, open_timeout=timeout, close_timeout=5, legacy=True
            )
        except OSError as exc:
            raise ServeError(
                f"cannot connect to {self.url}: {exc}; is `envkernel serve` running there?"
            ) from None
        # A session that is never closed is closed when it is collected, or at interpreter exit
        # (``weakref.finalize`` runs from ``atexit``, while the connection's threads still run: a
        # close from ``__del__`` during shutdown would wait for ever on a thread that is gone).
        self._finalizer = weakref.finalize(self, _close_connection, self._ws)

    def _send(self, message: dict[str, Any]) -> dict[str, Any]:
        if self._ws is None:
            raise ServeError("the session is closed")
        self._ws.send(json.dumps(message))
        return _answer(self._ws.recv(timeout=self.timeout))

    def reset(self, **options: Any) -> dict[str, Any]:
        """Start an episode: ``task_id=...``, ``task_index=...`` or ``seed=...`` pick the task."""
        return self._send({"type": "reset", "data": options})

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        """One action (``call_tool``, ``list_tools`` or ``submit``);
        ``{"observation", "reward", "done"}``."""
        return self._send({"type": "step", "data": action})

    def call(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        """Call one tool; the step's answer (``observation`` holds ``result``, ``ok`` and
        ``error``)."""
        return self.step({"type": "call_tool", "tool_name": tool, "arguments": arguments})

    def submit(self, answer: str = "") -> dict[str, Any]:
        """End the episode with the final answer; the answer's ``reward`` is the task's check."""
        return self.step({"type": "submit", "answer": answer})

    def tools(self) -> list[dict[str, Any]]:
        """The tools offered (``name``, ``description``, ``input_schema``)."""
        tools: list[dict[str, Any]] = self.step({"type": "list_tools"})["observation"]["tools"]
        return tools

    def state(self, reasons: bool = False) -> dict[str, Any]:
        """``episode_id``, ``step_count``, ``task_id``, ``done`` and the current ``reward``; with
        ``reasons``, also why it is below 1 (trainer-side only: they quote the expected values)."""
        return self._send(_state_message(reasons, self.token))

    def close(self) -> None:
        """End the session (its sandbox goes back to the server's pool). Idempotent."""
        self._ws = None
        self._finalizer()  # runs _close_connection once; later calls do nothing

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncSession:
    """One session on a server, over an asyncio WebSocket (``await AsyncSession.open(url)``)."""

    def __init__(self, ws: ClientConnection, url: str, timeout: float) -> None:
        self._ws: ClientConnection | None = ws
        self.url = url
        self.timeout = timeout
        self.token = os.environ.get("ENVKERNEL_SERVE_TOKEN", "")
        """The trainer's token (see :attr:`Session.token`)."""

    @classmethod
    async def open(
        cls, url: str, *, timeout: float = 120.0, max_message_mb: float = 0, token: str = ""
    ) -> AsyncSession:
        """Connect a new session."""
        u = ws_url(url)
        max_size = int(max_message_mb * 1024 * 1024) if max_message_mb > 0 else None
        try:
            ws = await aconnect(u, max_size=max_size, open_timeout=timeout, close_timeout=5)
        except OSError as exc:
            raise ServeError(
                f"cannot connect to {u}: {exc}; is `envkernel serve` running there?"
            ) from None
        session = cls(ws, u, timeout)
        session.token = token or session.token
        return session

    async def _send(self, message: dict[str, Any]) -> dict[str, Any]:
        import asyncio

        if self._ws is None:
            raise ServeError("the session is closed")
        await self._ws.send(json.dumps(message))
        return _answer(await asyncio.wait_for(self._ws.recv(), self.timeout))

    async def reset(self, **options: Any) -> dict[str, Any]:
        """Start an episode (see :meth:`Session.reset`)."""
        return await self._send({"type": "reset", "data": options})

    async def step(self, action: dict[str, Any]) -> dict[str, Any]:
        """One action (see :meth:`Session.step`)."""
        return await self._send({"type": "step", "data": action})

    async def call(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        """Call one tool (see :meth:`Session.call`)."""
        return await self.step({"type": "call_tool", "tool_name": tool, "arguments": arguments})

    async def submit(self, answer: str = "") -> dict[str, Any]:
        """End the episode with the final answer (see :meth:`Session.submit`)."""
        return await self.step({"type": "submit", "answer": answer})

    async def state(self, reasons: bool = False) -> dict[str, Any]:
        """The session's state with the current ``reward`` (``reasons``: :meth:`Session.state`)."""
        return await self._send(_state_message(reasons, self.token))

    async def close(self) -> None:
        """End the session. Idempotent."""
        ws, self._ws = self._ws, None
        if ws is not None:
            try:
                await ws.send(json.dumps({"type": "close"}))
            except Exception:
                pass
            await ws.close()
