"""The HTTP face of an environment: the REST API its spec describes, served from a sandbox.

``envkernel env serve ENV_DIR --http [ADDR:PORT]`` (registered by this plugin through
``register_commands``) reads a run's ``envs/<id>/`` folder and answers each documented request of
a kept tool by calling that tool in a sandbox, through the same runner path ``envkernel env call``
uses; nothing of the environment runs in the server's process.

* **Routes** come from the resource model's operations: each kept tool's ``method`` and ``path``.
  Path parameters, query parameters and the JSON (or form-encoded) body become the tool's
  arguments (``productId`` -> ``product_id``, as the synthesizer names them; values are coerced to
  the argument's declared type). Parameters the tool does not take are ignored, and so is a query
  value the tool cannot use (``limit=-3``, a cursor it never issued) when the operation documents
  no answer to bad input.
* **Answers** use the operation's documented success status (``201`` for a create, ``204`` with
  no body), with the row's columns renamed back to the spec's property names. A tool error maps
  to a documented status: ``not_found`` -> 404, ``conflict`` -> 409, ``invalid`` -> 400 or 422
  (the first the operation documents), with a body built from its documented error schema when
  it has one. Undocumented routes get 404, known paths with another method 405.
* **State per session**: the ``X-Envkernel-Session`` header (or the ``envkernel_session`` cookie)
  names a session, and each session gets its own sandbox, opened at the seed state on first use
  (at most ``max_sessions``; the least recently used one is closed). Requests without one share
  the ``default`` session. ``POST /_envkernel/reset`` puts the caller's session back at the seed.
  ``GET /_envkernel/openapi.json`` serves the spec.
"""

from __future__ import annotations

import asyncio
import collections
import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import structlog
import yaml

from envkernel_kit.argsgen import schema_type
from envkernel_runtime.engine import check
from envkernel_runtime.model import Operation, model_of
from envkernel_schemas import EnvSpec

from .infer import snake, success_codes
from .seedschema import conform, from_schema

__all__ = ["SESSION_HEADER", "HttpFace", "Route", "serve", "spec_path"]

log = structlog.get_logger("envkernel.httpface")

SESSION_HEADER = "X-Envkernel-Session"
"""The request header naming a session (its own sandbox)."""
SESSION_COOKIE = "envkernel_session"
"""The cookie that may name it instead."""
_ERROR_STATUS = {
    "not_found": (404,),
    "unknown_tool": (404,),
    "conflict": (409, 422, 400),
    "invalid": (400, 422),
    "invalid_arguments": (400, 422),
    "bad_request": (400, 422),
}


def spec_path(env: EnvSpec) -> Path | None:
    """The spec file the environment was made from (``corpus:NAME`` is the shipped corpus)."""
    from . import corpus_dir

    src = env.provenance.source if env.provenance else ""
    if src.startswith("corpus:"):
        return corpus_dir() / src.removeprefix("corpus:")
    p = Path(src)
    return p if src and p.is_file() else None


class _Doc:
    """The spec document, with local ``$ref``s followed on demand."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc

    def deref(self, node: Any, depth: int = 0) -> Any:
        while (
            isinstance(node, dict)
            and isinstance(node.get("$ref"), str)
            and node["$ref"].startswith("#/")
            and depth < 20
        ):
            target: Any = self.doc
            for part in node["$ref"][2:].split("/"):
                target = (
                    target.get(part.replace("~1", "/").replace("~0", "~"), {})
                    if isinstance(target, dict)
                    else {}
                )
            node, depth = target, depth + 1
        return node

    def schema(self, node: Any, depth: int = 0) -> dict[str, Any]:
        """``node`` dereferenced, its ``allOf`` merged (one level of properties), for renaming and
        filling."""
        s = self.deref(node)
        if not isinstance(s, dict):
            return {}
        if isinstance(s.get("allOf"), list) and depth < 6:
            merged: dict[str, Any] = {k: v for k, v in s.items() if k != "allOf"}
            for part in s["allOf"]:
                p = self.schema(part, depth + 1)
                merged.setdefault("properties", {}).update(p.get("properties") or {})
                merged["required"] = [*merged.get("required", []), *(p.get("required") or [])]
                merged.setdefault("type", p.get("type"))
            return merged
        return s


class Route:
    """One served operation: an HTTP method and path template -> a tool."""

    def __init__(self, tool: str, op: Operation, raw: dict[str, Any], doc: _Doc) -> None:
        self.tool = tool
        self.op = op
        self.method = op.method.upper()
        self.path = op.path
        names = re.findall(r"\{([^}/]+)\}", op.path)
        self.path_args = [snake(n) for n in names]
        pattern = re.sub(r"\\\{[^}/]+\\\}", "([^/]+)", re.escape(op.path))
        self.regex = re.compile(f"^{pattern}/?$")
        self.literal = len(op.path) - sum(len(n) + 2 for n in names)
        self.responses: dict[str, Any] = raw.get("responses") or {}
        self.success, self.success_schema = self._success(doc)
        self.doc = doc

    def _success(self, doc: _Doc) -> tuple[int, dict[str, Any] | None]:
        for code in success_codes(self.method):
            if code in self.responses:
                return (int(code) if code.isdigit() else 200), self._json_schema(code, doc)
        return 200, None

    def _json_schema(self, code: str, doc: _Doc) -> dict[str, Any] | None:
        resp = doc.deref(self.responses.get(code))
        content = resp.get("content") if isinstance(resp, dict) else None
        if not isinstance(content, dict):
            return None
        for ctype, media in content.items():
            if "json" in ctype and isinstance(media, dict) and "schema" in media:
                return doc.schema(media["schema"])
        return None

    def documents_invalid(self) -> bool:
        """True when the operation documents an answer to invalid input (400, 422, 4XX or
        default)."""
        return any(str(c) in ("400", "422", "4XX", "4xx", "default") for c in self.responses)

    def error_status(self, code: str) -> int:
        """The documented status for a tool error ``code``."""
        documented = {int(c) for c in self.responses if str(c).isdigit()}
        wanted = _ERROR_STATUS.get(code, (400,))
        for status in wanted:
            if status in documented:
                return status
        if "default" in self.responses or "4XX" in self.responses or "4xx" in self.responses:
            return wanted[0]
        fours = sorted(s for s in documented if 400 <= s < 500)
        return fours[0] if fours else wanted[0]

    def error_body(self, status: int, code: str, message: str, rng: Any) -> Any:
        """A body for the error that fits the status's documented schema (or a plain
        ``{"error": ...}``)."""
        key = (
            str(status)
            if str(status) in self.responses
            else next((k for k in ("4XX", "4xx", "default") if k in self.responses), "")
        )
        schema = self._json_schema(key, self.doc) if key else None
        if not schema or not schema.get("properties"):
            return (
                {"error": {"code": code, "message": message}}
                if schema is None or not schema
                else conform({"error": message}, schema, rng)
            )
        out: dict[str, Any] = {}
        for name, ps in schema["properties"].items():
            ps = self.doc.schema(ps)
            w = snake(name)
            t = ps.get("type")
            if w in (
                "message",
                "detail",
                "details",
                "description",
                "title",
                "error_description",
                "reason",
            ) and t in (None, "string"):
                out[name] = message
            elif (
                w in ("code", "error_code", "type", "error")
                and t in (None, "string")
                and "enum" not in ps
            ):
                out[name] = code
            elif w in ("status", "status_code", "code") and t == "integer":
                out[name] = status
            elif name in (schema.get("required") or []):
                out[name] = from_schema(ps, rng)
        return conform(out, schema, rng)


def _coerce(value: str | list[str], schema: dict[str, Any]) -> Any:
    """A query or path string as the argument's declared type (left as it is when it does not
    parse)."""
    t = schema_type(schema)
    if t == "array":
        items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
        parts = value if isinstance(value, list) else [p for p in value.split(",") if p]
        return [_coerce(p, items) for p in parts]
    v = value[-1] if isinstance(value, list) else value
    try:
        if t == "integer":
            return int(v)
        if t == "number":
            return float(v) if not re.fullmatch(r"-?\d+", v) else int(v)
        if t == "boolean" and v.lower() in ("true", "false", "1", "0"):
            return v.lower() in ("true", "1")
    except ValueError:
        return v
    return v


class HttpFace:
    """The HTTP face of one environment: routes, sessions (one sandbox each), request -> tool
    call."""

    def __init__(
        self,
        env: EnvSpec,
        runner: Any,
        *,
        seed: int = 0,
        spec: dict[str, Any] | None = None,
        max_sessions: int = 16,
    ) -> None:
        import random

        self.env = env
        self.runner = runner
        self.seed = seed
        self.max_sessions = max_sessions
        self.spec = spec or {}
        self.rng = random.Random(seed)
        doc = _Doc(self.spec)
        model = model_of(env)
        if model is None:
            raise ValueError(f"{env.id}: only model environments (model.json) have an HTTP face")
        kept = {t.name for t in env.tools}
        paths = self.spec.get("paths") if isinstance(self.spec.get("paths"), dict) else {}
        self.routes: list[Route] = []
        for name, op in model.operations.items():
            if name not in kept or not op.method or not op.path:
                continue
            raw = doc.deref((paths.get(op.path) or {}).get(op.method.lower())) or {}
            self.routes.append(Route(name, op, raw if isinstance(raw, dict) else {}, doc))
        self.routes.sort(key=lambda r: -r.literal)
        self.params = {t.name: t.parameters for t in env.tools}
        self.sessions: collections.OrderedDict[str, Any] = collections.OrderedDict()
        self.locks: dict[str, asyncio.Lock] = {}

    # -- sessions -----------------------------------------------------------------------

    async def session(self, sid: str) -> Any:
        """The sandbox of session ``sid`` (opened at the seed state on first use)."""
        if sid in self.sessions:
            self.sessions.move_to_end(sid)
            return self.sessions[sid]
        sb = await self.runner.open(self.env, self.seed)
        self.sessions[sid] = sb
        while len(self.sessions) > self.max_sessions:
            old, osb = self.sessions.popitem(last=False)
            self.locks.pop(old, None)
            await osb.close()
        log.info("session opened", env=self.env.id, session=sid, sessions=len(self.sessions))
        return sb

    async def close(self) -> None:
        """Close every session's sandbox."""
        while self.sessions:
            _sid, sb = self.sessions.popitem()
            await sb.close()

    # -- requests -----------------------------------------------------------------------

    def match(self, method: str, path: str) -> tuple[Route | None, dict[str, str], bool]:
        """(route, path values, path known under another method)."""
        other = False
        for r in self.routes:
            m = r.regex.match(path)
            if m:
                if r.method == method:
                    return (
                        r,
                        {
                            a: urllib.parse.unquote(v)
                            for a, v in zip(r.path_args, m.groups(), strict=True)
                        },
                        True,
                    )
                other = True
        return None, {}, other

    def arguments(
        self,
        route: Route,
        path_values: dict[str, str],
        query: dict[str, list[str]],
        body: Any,
        form: bool = False,
    ) -> dict[str, Any]:
        """The tool's arguments from the path, the query and the body (by the synthesizer's names);
        a form body's strings (``form``: each key's values) are coerced to the declared types, as
        query values are."""
        props = (self.params.get(route.tool) or {}).get("properties") or {}
        args: dict[str, Any] = {}
        for arg, v in path_values.items():
            if arg in props:
                args[arg] = _coerce(v, props[arg])
        strict = route.documents_invalid()
        for k, vs in query.items():
            arg = snake(k.removesuffix("[]"))
            if arg in props and arg not in args:
                v = _coerce(vs, props[arg])
                if not strict and check(props[arg], v, arg):
                    # the spec allows it and documents no 400: an unusable filter is ignored, not
                    # refused
                    continue
                args[arg] = v
        if isinstance(body, dict):
            for k, v in body.items():
                arg = snake(k.removesuffix("[]") if form else k)
                if arg in props and arg not in args:
                    args[arg] = _coerce(v, props[arg]) if form else v
        if form:  # a form cannot carry an empty list: a required array it leaves out is one
            required = (self.params.get(route.tool) or {}).get("required") or []
            for arg in required:
                if (
                    arg not in args
                    and arg in props
                    and schema_type(props[arg]) == "array"
                    and not props[arg].get("minItems")
                ):
                    args[arg] = []
        return args

    def to_spec(self, value: Any, schema: dict[str, Any] | None, depth: int = 0) -> Any:
        """``value`` with its keys renamed to the spec's property names (``created_at`` ->
        ``createdAt``)."""
        if not schema or depth > 8:
            return value
        doc = _Doc(self.spec)
        s = doc.schema(schema)
        if isinstance(value, list):
            items = doc.schema(s.get("items")) if s.get("items") else None
            return [self.to_spec(v, items, depth + 1) for v in value]
        if isinstance(value, dict):
            props = s.get("properties") or {}
            if not props:
                for key in ("oneOf", "anyOf"):
                    if isinstance(s.get(key), list) and s[key]:
                        props = doc.schema(s[key][0]).get("properties") or {}
            names = {snake(p): p for p in props}
            out = {}
            for k, v in value.items():
                name = names.get(k, k)
                out[name] = self.to_spec(v, props.get(name), depth + 1)
            return out
        return value

    async def handle(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        """Answer one request: (status, headers, body)."""
        url = urllib.parse.urlsplit(target)
        sid = headers.get(SESSION_HEADER.lower()) or _cookie(headers.get("cookie", "")) or "default"
        out_headers = {SESSION_HEADER: sid}
        if url.path == "/_envkernel/openapi.json" and method == "GET":
            return 200, out_headers, _json(self.spec)
        lock = self.locks.setdefault(sid, asyncio.Lock())
        async with lock:
            if url.path == "/_envkernel/reset" and method == "POST":
                sb = self.sessions.pop(sid, None)
                if sb is not None:
                    await sb.close()
                return 204, out_headers, b""
            route, values, known = self.match(method, url.path)
            if route is None:
                status = 405 if known else 404
                return (
                    status,
                    out_headers,
                    _json(
                        {
                            "error": {
                                "code": "method_not_allowed" if known else "not_found",
                                "message": f"no route {method} {url.path}",
                            }
                        }
                    ),
                )
            parsed: Any = None
            form = False
            if body:
                ctype = headers.get("content-type", "")
                try:
                    form = "form" in ctype
                    parsed = (
                        urllib.parse.parse_qs(body.decode(), keep_blank_values=True)
                        if form
                        else json.loads(body)
                    )
                except (ValueError, UnicodeDecodeError):
                    return (
                        route.error_status("invalid"),
                        out_headers,
                        _json(
                            route.error_body(
                                route.error_status("invalid"),
                                "invalid",
                                "the body is not valid JSON",
                                self.rng,
                            )
                        ),
                    )
            query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
            args = self.arguments(route, values, query, parsed, form)
            sb = await self.session(sid)
            result = await sb.call(route.tool, args)
            err = getattr(result, "error", None)
            if (
                not result.ok
                and err is not None
                and err.code in ("invalid", "invalid_arguments")
                and query
                and not route.documents_invalid()
            ):
                # the operation documents no answer to bad input: query values the tool refuses (a
                # cursor it never
                # issued) are ignored, as the unusable ones already were
                result = await sb.call(route.tool, self.arguments(route, values, {}, parsed, form))
        if getattr(result, "ok", False):
            if route.success == 204:
                return 204, out_headers, b""
            return (
                route.success,
                out_headers,
                _json(self.to_spec(result.value, route.success_schema)),
            )
        code = result.error.code if result.error else "invalid"
        message = result.error.message if result.error else "the tool failed"
        status = route.error_status(code)
        log.debug(
            "tool error",
            env=self.env.id,
            tool=route.tool,
            code=code,
            status=status,
            message=message[:200],
        )
        return status, out_headers, _json(route.error_body(status, code, message, self.rng))


def _cookie(header: str) -> str:
    for part in header.split(";"):
        k, _, v = part.strip().partition("=")
        if k == SESSION_COOKIE:
            return v
    return ""


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, default=str).encode()


def load_spec(path: Path | None) -> dict[str, Any]:
    """The spec document at ``path`` (JSON or YAML), or {}."""
    if path is None:
        return {}
    text = path.read_text()
    data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    return data if isinstance(data, dict) else {}


def serve(
    face: HttpFace, host: str = "127.0.0.1", port: int = 0
) -> tuple[ThreadingHTTPServer, asyncio.AbstractEventLoop, threading.Thread]:
    """Start serving ``face`` on ``host:port`` in background threads; (server, loop, loop thread).

    ``server.server_address`` is the bound address (``port=0`` picks a free port). Stop it with
    :func:`stop`.
    """
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="httpface-loop", daemon=True)
    thread.start()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _any(self) -> None:
            n = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(n) if n > 0 else b""
            hdrs = {k.lower(): v for k, v in self.headers.items()}
            fut = asyncio.run_coroutine_threadsafe(
                face.handle(self.command, self.path, hdrs, body), loop
            )
            try:
                status, out_headers, payload = fut.result(timeout=60)
            except Exception as exc:
                log.error("request failed", error=f"{type(exc).__name__}: {exc}")
                status, out_headers, payload = (
                    503,
                    {},
                    _json(
                        {
                            "error": {
                                "code": "sandbox_error",
                                "message": f"{type(exc).__name__}: {exc}",
                            }
                        }
                    ),
                )
            self.send_response(status)
            for k, v in out_headers.items():
                self.send_header(k, v)
            if payload:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if payload and self.command != "HEAD":
                self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _any

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: one log line per tool error is written by :meth:`HttpFace.handle`."""

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="httpface-server", daemon=True).start()
    return server, loop, thread


def stop(
    face: HttpFace,
    server: ThreadingHTTPServer,
    loop: asyncio.AbstractEventLoop,
    thread: threading.Thread,
) -> None:
    """Stop the server, close every session's sandbox and the runner, and end the loop."""
    server.shutdown()
    server.server_close()
    asyncio.run_coroutine_threadsafe(face.close(), loop).result(timeout=30)
    aclose = getattr(face.runner, "aclose", None)
    if aclose is not None:
        asyncio.run_coroutine_threadsafe(aclose(), loop).result(timeout=30)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)


def _address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"--http {value!r}: expected ADDR:PORT, e.g. 127.0.0.1:8080")
    return host or "127.0.0.1", int(port)


def serve_command() -> Any:
    """The click command ``envkernel env serve`` (built on first use: click is the kernel's)."""
    import signal

    import click

    from envkernel.envcmd import runner_component
    from envkernel.errors import UsageError
    from envkernel_runtime.envdir import EnvDirError, load_env_dir

    @click.command("serve")
    @click.argument("env_dir", type=click.Path(file_okay=False))
    @click.option(
        "--http",
        "address",
        default="127.0.0.1:8080",
        show_default=True,
        is_flag=False,
        flag_value="127.0.0.1:8080",
        metavar="[ADDR:]PORT",
        help="Serve the environment as the REST API its spec describes, on this address.",
    )
    @click.option(
        "--spec",
        "spec_file",
        type=click.Path(dir_okay=False, exists=True),
        default=None,
        help="The OpenAPI document (default: the one named in env.json's provenance).",
    )
    @click.option(
        "--sandbox",
        "runner",
        default="process",
        show_default=True,
        help="Sandbox runner component.",
    )
    @click.option(
        "--seed",
        type=int,
        default=0,
        show_default=True,
        help="Seed of each session's initial state.",
    )
    @click.option(
        "--max-sessions",
        type=int,
        default=16,
        show_default=True,
        help="Sandboxes kept open (one per session).",
    )
    @click.option(
        "--config",
        "config_file",
        type=click.Path(dir_okay=False),
        default=None,
        help="TOML config file; its [RUNNER] table configures the runner.",
    )
    @click.option(
        "--set",
        "sets",
        multiple=True,
        metavar="KEY=VALUE",
        help="Set one runner setting (repeatable).",
    )
    def serve_cmd(
        env_dir: str,
        address: str,
        spec_file: str | None,
        runner: str,
        seed: int,
        max_sessions: int,
        config_file: str | None,
        sets: tuple[str, ...],
    ) -> None:
        """Serve the environment in ENV_DIR over HTTP, one sandbox per session (X-Envkernel-Session
        header)."""
        try:
            env = load_env_dir(env_dir)
            host, port = _address(address if ":" in address else f":{address}")
        except (EnvDirError, ValueError) as exc:
            raise UsageError(str(exc)) from None
        path = Path(spec_file) if spec_file else spec_path(env)
        if path is None:
            raise UsageError(
                f"{env_dir}: env.json names no spec file that exists "
                f"({env.provenance.source if env.provenance else ''!r}); give --spec"
            )
        from . import check_spec_file

        problem = check_spec_file(path)
        if problem:
            raise UsageError(f"--spec: {problem}")
        component, settings = runner_component(runner, config_file, sets)
        sandbox_runner = (
            component.factory(settings)
            if component.settings_type is not None
            else component.factory()
        )
        try:
            face = HttpFace(
                env, sandbox_runner, seed=seed, spec=load_spec(path), max_sessions=max_sessions
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        server, loop, thread = serve(face, host, port)
        bound = server.server_address
        click.echo(
            f"serving {env.id} ({len(face.routes)} routes) at http://{bound[0]}:{bound[1]} "
            f"from {runner!r} sandboxes; session header {SESSION_HEADER}; Ctrl-C stops",
            err=True,
        )
        done = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: done.set())
        done.wait()
        stop(face, server, loop, thread)

    return serve_cmd
