"""A scripted OpenAI-compatible Chat Completions server on loopback, for tests and benchmarks.

It is a test double: it stands in for a model (no model runs on this machine). Everything between
a policy and it is real (the ``openai`` SDK, HTTP, retries, timeouts); only the answers are
scripted.

The server is stdlib only (``http.server.ThreadingHTTPServer`` in a thread, HTTP/1.1
keep-alive, Nagle off). It answers
``POST …/chat/completions`` from a *script*:

- :class:`Sequence`: replies by global call order (a retry consumes the next reply);
- :class:`ByTurn`: replies by the number of assistant messages already in the request, so many
  concurrent conversations each follow the same script;
- :class:`Oracle`: solves envkernel tasks: it finds the task by the user message and replays its
  reference chain one call per turn (or all at once, as parallel tool calls), then answers with
  the last tool result, as the ``reference`` policy does;
- any callable ``(request_body, call_index) -> reply``.

A reply is a dict (a JSON body sent with status 200) or a :class:`Reply` (any status, raw body,
headers, a stall before answering). Helpers build the usual ones: :func:`completion`,
:func:`tool_call`, :func:`error`, :func:`stall`, :func:`not_json`, :func:`no_choices`.

It also answers ``POST …/load_lora_adapter`` as vLLM does with ``VLLM_ALLOW_RUNTIME_LORA_UPDATING``
(200 ``Success: LoRA adapter 'NAME' added successfully.``; 400 when a name or path is missing or
the name is already loaded), or from a ``lora`` script; it records every such request
(``lora_requests``) and the adapters loaded (``adapters``). With ``served`` set, a chat request
naming a model that is neither served nor a loaded adapter gets vLLM's 404, so a test sees an
adapter used before it was loaded. ``models`` is the model each chat request named.

:func:`run_policy` rolls a policy out without the kernel, as the kernel does it (a recording
ToolEnv, then ``calls`` and ``final_state`` filled in), with :class:`StepContext` recording the
steps it publishes.

From a shell (used by the benchmark)::

    python -m envkernel_kit.scripted --oracle tasks.jsonl   # prints the base URL; serves until
                                                              # killed or its parent exits
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import msgspec

from envkernel_schemas import (
    CallRecord,
    Outcome,
    RolloutRequested,
    ToolCall,
    ToolError,
    ToolResult,
)

from .answers import facts_in_words
from .testing import FakeContext

__all__ = [
    "ByTurn",
    "Oracle",
    "RecordingEnv",
    "Reply",
    "ScriptedServer",
    "Sequence",
    "Solves",
    "StepContext",
    "completion",
    "error",
    "lora_loaded",
    "no_choices",
    "not_json",
    "run_policy",
    "stall",
    "tool_call",
]

_ids = itertools.count()


@dataclass
class Reply:
    """One scripted HTTP answer."""

    status: int = 200
    """HTTP status."""
    body: Any = None
    """A dict/list (sent as JSON), ``str`` or ``bytes`` (sent as is)."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra response headers."""
    delay: float = 0.0
    """Seconds to stall before answering (the stall ends early when the server stops)."""
    content_type: str = "application/json"
    """Content-Type of the body."""


def tool_call(name: str, arguments: Any = None, id: str | None = None) -> dict[str, Any]:
    """One tool call; ``arguments`` as a dict (sent as a JSON string) or a raw string (sent
    verbatim)."""
    args = (
        arguments
        if isinstance(arguments, str)
        else json.dumps(arguments or {}, separators=(",", ":"))
    )
    return {
        "id": id or f"call_{next(_ids)}",
        "type": "function",
        "function": {"name": name, "arguments": args},
    }


def completion(
    content: str | None = "",
    tool_calls: list[dict[str, Any]] | None = None,
    *,
    finish_reason: str | None = None,
    usage: dict[str, int] | None = None,
    model: str = "scripted",
) -> dict[str, Any]:
    """A Chat Completions body with one choice (``usage`` filled in by the server when None)."""
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        msg["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": msg,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def error(
    status: int, message: str = "scripted error", headers: dict[str, str] | None = None
) -> Reply:
    """An API error in OpenAI's error format (e.g. 429 with ``Retry-After``, or 500)."""
    return Reply(
        status=status,
        body={"error": {"message": message, "type": "scripted", "code": status}},
        headers=dict(headers or {}),
    )


def stall(seconds: float, then: Any = None) -> Reply:
    """Answer only after ``seconds`` (a client with a shorter timeout gives up first)."""
    return Reply(body=then if then is not None else completion("too late"), delay=seconds)


def not_json(text: str = "<html><body>502 Bad Gateway</body></html>", status: int = 200) -> Reply:
    """A body that is not JSON (an HTML page from a proxy)."""
    return Reply(status=status, body=text, content_type="text/html")


def no_choices() -> dict[str, Any]:
    """A well-formed body with an empty ``choices`` list."""
    return {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [],
    }


def lora_loaded(name: str) -> Reply:
    """vLLM's answer to a successful ``load_lora_adapter`` (200, plain text)."""
    return Reply(
        body=f"Success: LoRA adapter '{name}' added successfully.",
        content_type="text/plain; charset=utf-8",
    )


def exhausted(n: int) -> Reply:
    """What a script answers past its end (a 400, which nobody retries)."""
    return error(400, f"scripted server: the script has no reply for call {n}")


class Sequence:
    """Replies by global call order."""

    def __init__(self, replies: Iterable[Any]) -> None:
        self.replies = list(replies)

    def __call__(self, request: dict[str, Any], n: int) -> Any:
        return self.replies[n] if n < len(self.replies) else exhausted(n)


class ByTurn:
    """Replies by the number of assistant messages already in the conversation."""

    def __init__(self, replies: Iterable[Any]) -> None:
        self.replies = list(replies)

    def __call__(self, request: dict[str, Any], n: int) -> Any:
        turn = sum(1 for m in request.get("messages", []) if m.get("role") == "assistant")
        reply = self.replies[turn] if turn < len(self.replies) else exhausted(n)
        return reply(request, n) if callable(reply) else reply


def _user_text(request: dict[str, Any]) -> str:
    for m in request.get("messages", []):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


class Oracle:
    """Solves tasks by replaying their reference chains (found by the user's request).

    ``tasks``: objects or dicts with ``request`` and ``calls`` (each with ``name`` and
    ``arguments``), e.g. :class:`envkernel_schemas.Task` or lines of ``tasks.jsonl``. After the
    last call it says the task's reference answer in words (``outcome.answer``), as a good model
    would; a task without one gets the last tool result back. An unknown request gets ``unknown``
    (default: a polite refusal, no tool calls). With ``ask``, a task that holds something back
    (``hidden``) first gets one question per held-back fact (:data:`ASK`), as a careful model asks
    a user who talks, before the chain is replayed.
    """

    ASK = "Which ones do you mean, exactly?"
    """The clarifying question of an ``ask`` oracle."""

    def __init__(
        self,
        tasks: Iterable[Any],
        *,
        parallel: bool = False,
        unknown: str = "I don't know how to help with that.",
        ask: bool = False,
    ) -> None:
        self.chains: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        self.answers: dict[str, str] = {}
        self.hidden: dict[str, int] = {}
        self.ask = ask
        for t in tasks:
            data: dict[str, Any] = t if isinstance(t, dict) else msgspec.to_builtins(t)
            request = str(data.get("request", ""))
            self.hidden[request] = len(data.get("hidden") or [])
            outcome = data.get("outcome") or {}
            # the task's answer, else a read-only task's facts in words (not the tools' raw JSON)
            answer = outcome.get("answer") or (
                facts_in_words(msgspec.convert(outcome, Outcome))
                if outcome and not outcome.get("mutates", True)
                else ""
            )
            if answer:
                self.answers.setdefault(request, answer)
            calls = [(str(c["name"]), dict(c.get("arguments") or {})) for c in data["calls"]]
            self.chains.setdefault(request, calls)
        self.parallel = parallel
        self.unknown = unknown

    def __call__(self, request: dict[str, Any], n: int) -> Any:
        text = _user_text(request)
        chain = self.chains.get(text)
        if chain is None:
            return completion(self.unknown)
        msgs = request.get("messages", [])
        done = sum(1 for m in msgs if m.get("role") == "tool")
        if (
            self.ask
            and done == 0
            and sum(1 for m in msgs if m.get("role") == "user") <= self.hidden.get(text, 0)
        ):
            return completion(self.ASK)
        if done < len(chain):
            todo = chain[done:] if self.parallel else chain[done : done + 1]
            return completion(
                "",
                [
                    tool_call(name, args, id=f"call_{done + i}")
                    for i, (name, args) in enumerate(todo)
                ],
            )
        last = next((m.get("content", "") for m in reversed(msgs) if m.get("role") == "tool"), "")
        if text in self.answers:
            return completion(self.answers[text])
        return completion(
            f"Done. Here is the result: {last}" if chain else "There was nothing to do."
        )


class Solves:
    """A model of known skill, for ``--calibrate``: the first ``solved(request)`` conversations
    about each request (counted as each opens: no assistant or tool message yet) are the
    ``oracle``'s, which solves them; every later one is declined at once (``declined``, no call).
    So a task's solve rate over K attempts is ``min(solved(request), K) / K``."""

    def __init__(
        self,
        oracle: Oracle,
        solved: Callable[[str], int],
        *,
        declined: str = "I can't help with that.",
    ) -> None:
        self.oracle, self.solved, self.declined = oracle, solved, declined
        self.opened: dict[str, int] = {}
        """Request -> conversations opened about it so far."""
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any], n: int) -> Any:
        msgs = request.get("messages", [])
        if not any(m.get("role") in ("assistant", "tool") for m in msgs):
            text = _user_text(request)
            with self._lock:
                i = self.opened.get(text, 0)
                self.opened[text] = i + 1
            if i >= self.solved(text):
                return completion(self.declined)
        return self.oracle(request, n)


def _estimate_usage(request: dict[str, Any], body: dict[str, Any]) -> dict[str, int]:
    prompt = sum(
        len(str(m.get("content") or "")) + len(json.dumps(m.get("tool_calls") or ""))
        for m in request.get("messages", [])
    )
    prompt += len(json.dumps(request.get("tools") or ""))
    out = 0
    for ch in body.get("choices") or []:
        msg = (ch or {}).get("message") or {}
        out += len(str(msg.get("content") or "")) + len(json.dumps(msg.get("tool_calls") or ""))
    p, c = prompt // 4 + 1, out // 4 + 1
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


Script = Callable[[dict[str, Any], int], Any]


def _hello(request: dict[str, Any], n: int) -> Any:
    return completion("Hello.")


class _Replies:
    """A ``lora`` script given as a list: replies by call order; past its end, the default
    (None)."""

    def __init__(self, replies: Iterable[Any]) -> None:
        self.replies = list(replies)

    def __call__(self, request: dict[str, Any], n: int) -> Any:
        return self.replies[n] if n < len(self.replies) else None


def _encode(body: Any) -> bytes:
    """A reply body as bytes: JSON for a dict or list, UTF-8 for text."""
    if isinstance(body, (dict, list)):
        return json.dumps(body).encode()
    if isinstance(body, str):
        return body.encode()
    return b"" if body is None else bytes(body)


def _json_object(raw: bytes) -> dict[str, Any] | Reply:
    """A request body's JSON object, or the error reply when it is not one."""
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return error(400, "scripted server: the request body is not JSON")
    if not isinstance(body, dict):
        return error(400, "scripted server: the request body is not a JSON object")
    return body


class _Handler(BaseHTTPRequestHandler):
    """The HTTP side of a :class:`ScriptedServer` (``scripted``, set per server)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    scripted: ScriptedServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, reply: Reply) -> None:
        data = _encode(reply.body)
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(data)))
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (TimeoutError, BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def _send_after_delay(self, reply: Reply) -> None:
        """Send ``reply`` after its delay (nothing, and the connection closed, if the server stops
        meanwhile)."""
        if reply.delay > 0 and self.scripted._stop.wait(reply.delay):
            self.close_connection = True
            return
        self._send(reply)

    def do_POST(self) -> None:
        server = self.scripted
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        route = self.path.rstrip("/")
        if not route.endswith(("/chat/completions", "/load_lora_adapter")):
            self._send(error(404, f"scripted server: no route {self.path}"))
            return
        body = _json_object(raw)
        if isinstance(body, Reply):
            self._send(body)
            return
        if route.endswith("/load_lora_adapter"):
            self._send_after_delay(server._load_lora(body, self.headers.get("Authorization", "")))
            return
        n = server._next(body, self.headers.get("Authorization", ""))
        try:
            self._answer(body, n)
        finally:
            with server._lock:
                server.inflight -= 1

    def _answer(self, body: dict[str, Any], n: int) -> None:
        server = self.scripted
        reply: Any = server._unknown_model(body)
        if reply is None:
            try:
                reply = server.script(body, n)
            except Exception as exc:
                reply = error(
                    500, f"scripted server: the script raised {type(exc).__name__}: {exc}"
                )
        if not isinstance(reply, Reply):
            reply = Reply(body=reply)
        if (
            isinstance(reply.body, dict)
            and "choices" in reply.body
            and "usage" not in reply.body
            and reply.status == 200
        ):
            reply.body = {**reply.body, "usage": _estimate_usage(body, reply.body)}
        self._send_after_delay(reply)

    def do_GET(self) -> None:
        server = self.scripted
        if self.path.rstrip("/").endswith("/models"):
            with server._lock:
                ids = [*(server.served or ["scripted"]), *server.adapters]
            self._send(
                Reply(body={"object": "list", "data": [{"id": i, "object": "model"} for i in ids]})
            )
        else:
            self._send(error(404, f"scripted server: no route {self.path}"))


class ScriptedServer:
    """The server. Use as a context manager, or :meth:`start` / :meth:`stop`.

    ``requests`` holds every chat request body received (in arrival order) and ``authorizations``
    the ``Authorization`` header of each, so tests can check what the client sent (``models``:
    the ``model`` each named); ``max_inflight`` is the most chat requests it was ever answering at
    once. ``lora_requests`` and ``lora_authorizations`` hold the same for ``load_lora_adapter``,
    and ``adapters`` maps each loaded adapter's name to its path.

    ``lora``: how ``load_lora_adapter`` answers: ``None`` (as vLLM does), a list of replies by
    call order, or a callable ``(request_body, call_index) -> reply``; a reply of ``None`` (or a
    call past the list's end) gets vLLM's answer, and a 200 reply loads the adapter.
    ``served``: when given, the only model names (besides loaded adapters) chat requests may name.
    """

    def __init__(
        self,
        script: Script | Iterable[Any] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        record: bool = True,
        lora: Script | Iterable[Any] | None = None,
        served: Iterable[str] | None = None,
    ) -> None:
        if script is None:
            script = _hello
        elif not callable(script):
            script = Sequence(script)
        self.script: Script = script
        if lora is not None and not callable(lora):
            lora = _Replies(lora)
        self.lora: Script | None = lora
        self.served: list[str] | None = None if served is None else list(served)
        self.host, self.port = host, port
        self.record = record
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str] = []
        self.lora_requests: list[dict[str, Any]] = []
        self.lora_authorizations: list[str] = []
        self.adapters: dict[str, str] = {}
        self.lora_calls = 0
        self.calls = 0
        self.inflight = 0
        self.max_inflight = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The base URL to give an OpenAI client (``http://127.0.0.1:PORT/v1``)."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def models(self) -> list[str | None]:
        """The ``model`` each recorded chat request named, in arrival order."""
        with self._lock:
            return [r.get("model") if isinstance(r, dict) else None for r in self.requests]

    def _unknown_model(self, body: dict[str, Any]) -> Reply | None:
        """vLLM's 404 for a model that is neither served nor a loaded adapter (only with
        ``served``)."""
        if self.served is None:
            return None
        model = body.get("model")
        with self._lock:
            known = model in self.served or model in self.adapters
        if known:
            return None
        return Reply(
            status=404,
            body={
                "error": {
                    "message": f"The model `{model}` does not exist.",
                    "type": "NotFoundError",
                    "param": "model",
                    "code": 404,
                }
            },
        )

    def _load_lora(self, body: dict[str, Any], auth: str) -> Reply:
        """Answer one ``load_lora_adapter`` request (scripted, else as vLLM does)."""
        with self._lock:
            n = self.lora_calls
            self.lora_calls += 1
            self.lora_requests.append(body)
            self.lora_authorizations.append(auth)
        name, path = body.get("lora_name"), body.get("lora_path")
        reply: Any = None
        if self.lora is not None:
            try:
                reply = self.lora(body, n)
            except Exception as exc:
                reply = error(
                    500, f"scripted server: the lora script raised {type(exc).__name__}: {exc}"
                )
        if reply is None:
            if not name or not path:
                return error(400, "Both 'lora_name' and 'lora_path' must be provided.")
            with self._lock:
                if name in self.adapters and not body.get("load_inplace"):
                    return error(
                        400,
                        f"The lora adapter '{name}' has already been loaded. If you want to "
                        "load the adapter in place, set 'load_inplace' to True.",
                    )
            reply = lora_loaded(str(name))
        out = reply if isinstance(reply, Reply) else Reply(body=reply)
        if out.status == 200 and isinstance(name, str) and name:
            with self._lock:
                self.adapters[name] = str(path or "")
        return out

    def _next(self, body: dict[str, Any], auth: str) -> int:
        with self._lock:
            n = self.calls
            self.calls += 1
            self.inflight += 1
            self.max_inflight = max(self.max_inflight, self.inflight)
            if self.record:
                self.requests.append(body)
                self.authorizations.append(auth)
        return n

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return type("Handler", (_Handler,), {"scripted": self})

    def start(self) -> ScriptedServer:
        """Bind (loopback, a free port unless given) and serve in a daemon thread."""

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 1024

            def handle_error(self, request: Any, client_address: Any) -> None:
                exc = sys.exc_info()[1]
                if not isinstance(exc, (ConnectionError, TimeoutError, OSError)):
                    super().handle_error(request, client_address)

        self._stop.clear()
        self._httpd = Server((self.host, self.port), self._handler())
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="scripted-openai",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; stalled replies end at once."""
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- running a policy without the kernel ------------------------------------------------------


class RecordingEnv:
    """A ToolEnv like the kernel's ``RecordingToolEnv``: forwards to a sandbox, records each
    call."""

    def __init__(self, sandbox: Any, tools: list[Any]) -> None:
        self.sandbox = sandbox
        self.tools = list(tools)
        self.records: list[Any] = []

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call a tool the env offers (anything else is an ``unknown_tool`` error); a ``crashed``
        result (the executor died) raises ``SandboxError``, as in the kernel."""
        t0 = time.perf_counter()
        if name not in {t.name for t in self.tools}:
            result = ToolResult(
                ok=False, error=ToolError(code="unknown_tool", message=f"no tool named {name!r}")
            )
        else:
            result = await self.sandbox.call(name, arguments)
            if result.error is not None and result.error.code == "crashed":
                from envkernel.errors import SandboxError

                raise SandboxError(
                    f"the sandbox crashed under tool call {name!r}: {result.error.message}"
                )
        self.records.append(
            CallRecord(
                call=ToolCall(name=name, arguments=arguments),
                result=result,
                seconds=time.perf_counter() - t0,
            )
        )
        return result


class StepContext(FakeContext):
    """A :class:`~envkernel_kit.testing.FakeContext` for a policy (``steps`` records what it
    publishes)."""

    def __init__(self, component: str = "openai", **kw: Any) -> None:
        super().__init__(component=component, role="policy", **kw)


async def run_policy(
    policy: Any,
    task: Any,
    sandbox: Any,
    tools: list[Any],
    *,
    ctx: Any = None,
    index: int = 0,
    policy_name: str = "openai",
) -> Any:
    """Roll ``policy`` out on ``task`` as the kernel does: the task's planted rows put into the
    sandbox (its initial state), a recording ToolEnv, then ``calls`` and ``final_state`` filled in
    from the records and the sandbox."""
    if getattr(task, "planted", None):
        await sandbox.patch(task.seed_patch())
    env = RecordingEnv(sandbox, tools)
    req = RolloutRequested(
        run="test-run", id=f"req-{task.id}-{index}", task=task, policy=policy_name, index=index
    )
    traj = await policy.rollout(req, env, ctx if ctx is not None else StepContext(policy_name))
    state = await sandbox.state() if hasattr(sandbox, "state") else {}
    return msgspec.structs.replace(traj, calls=env.records, final_state=state)


def _main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m envkernel_kit.scripted",
        description="Serve a scripted OpenAI-compatible API on loopback.",
    )
    ap.add_argument("--port", type=int, default=0, help="Port (default: a free one).")
    ap.add_argument(
        "--oracle",
        metavar="TASKS_JSONL",
        help="Solve the tasks of this tasks.jsonl (else: answer 'Hello.' without tools).",
    )
    ap.add_argument(
        "--parallel",
        action="store_true",
        help="Oracle: send the whole chain as parallel tool calls in one turn.",
    )
    args = ap.parse_args(argv)
    script: Script | None = None
    if args.oracle:
        with open(args.oracle) as f:
            script = Oracle(
                [json.loads(line) for line in f if line.strip()], parallel=args.parallel
            )
    server = ScriptedServer(script, port=args.port, record=False).start()
    print(server.base_url, flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    parent = os.getppid()
    while not done.wait(0.5):  # also stop when the process that started us is gone
        if os.getppid() != parent:
            break
    server.stop()


if __name__ == "__main__":
    _main()
