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
import socket
import threading
import time
import urllib.parse
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

__all__ = ["SESSION_HEADER", "HttpFace", "Route", "Served", "app", "serve", "spec_path"]

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
        query values are. The path wins over the query, the query over the body."""
        props = (self.params.get(route.tool) or {}).get("properties") or {}
        args = {a: _coerce(v, props[a]) for a, v in path_values.items() if a in props}
        for arg, v in self._from_query(route, props, query).items():
            args.setdefault(arg, v)
        for arg, v in _from_body(props, body, form).items():
            args.setdefault(arg, v)
        if form:
            args.update(self._form_arrays(route, props, args))
        return args

    @staticmethod
    def _from_query(
        route: Route, props: dict[str, Any], query: dict[str, list[str]]
    ) -> dict[str, Any]:
        """The query's values the tool takes, coerced; when the operation documents no answer to
        bad input, a value the argument's schema refuses is left out (an unusable filter is
        ignored, not refused)."""
        strict = route.documents_invalid()
        out: dict[str, Any] = {}
        for k, vs in query.items():
            arg = snake(k.removesuffix("[]"))
            if arg not in props or arg in out:
                continue
            v = _coerce(vs, props[arg])
            if strict or not check(props[arg], v, arg):
                out[arg] = v
        return out

    def _form_arrays(
        self, route: Route, props: dict[str, Any], args: dict[str, Any]
    ) -> dict[str, Any]:
        """A form cannot carry an empty list: each required array (with no ``minItems``) that it
        leaves out is one."""
        required = (self.params.get(route.tool) or {}).get("required") or []
        return {
            arg: []
            for arg in required
            if arg not in args
            and arg in props
            and schema_type(props[arg]) == "array"
            and not props[arg].get("minItems")
        }

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
        """Answer one request (``target``: the raw path and query; ``headers``: lower-case
        names): (status, headers, body)."""
        url = urllib.parse.urlsplit(target)
        sid = headers.get(SESSION_HEADER.lower()) or _cookie(headers.get("cookie", "")) or "default"
        out_headers = {SESSION_HEADER: sid}
        if url.path == "/_envkernel/openapi.json" and method == "GET":
            return 200, out_headers, _json(self.spec)
        async with self.locks.setdefault(sid, asyncio.Lock()):
            if url.path == "/_envkernel/reset" and method == "POST":
                await self.reset(sid)
                return 204, out_headers, b""
            route, values, known = self.match(method, url.path)
            if route is None:
                return (405 if known else 404), out_headers, _no_route(method, url.path, known)
            try:
                parsed, form = _parse_body(body, headers.get("content-type", ""))
            except ValueError:
                status = route.error_status("invalid")
                message = "the body is not valid JSON"
                return (
                    status,
                    out_headers,
                    _json(route.error_body(status, "invalid", message, self.rng)),
                )
            query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
            result = await self.call(sid, route, values, query, (parsed, form))
        status, payload = self.answer(route, result)
        return status, out_headers, payload

    async def reset(self, sid: str) -> None:
        """Put session ``sid`` back at the seed (its sandbox is closed; the next use opens one)."""
        sb = self.sessions.pop(sid, None)
        if sb is not None:
            await sb.close()

    async def call(
        self,
        sid: str,
        route: Route,
        values: dict[str, str],
        query: dict[str, list[str]],
        body: tuple[Any, bool],
    ) -> Any:
        """Call the route's tool in the session's sandbox. When the operation documents no answer
        to bad input, a call the tool refuses as invalid is made again without the query (values
        the tool refuses, such as a cursor it never issued, are ignored as the unusable ones
        already were)."""
        sb = await self.session(sid)
        result = await sb.call(route.tool, self.arguments(route, values, query, *body))
        err = getattr(result, "error", None)
        if (
            not result.ok
            and err is not None
            and err.code in ("invalid", "invalid_arguments")
            and query
            and not route.documents_invalid()
        ):
            result = await sb.call(route.tool, self.arguments(route, values, {}, *body))
        return result

    def answer(self, route: Route, result: Any) -> tuple[int, bytes]:
        """(status, body) for a tool's result: the documented success, or the documented error."""
        if getattr(result, "ok", False):
            if route.success == 204:
                return 204, b""
            return route.success, _json(self.to_spec(result.value, route.success_schema))
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
        return status, _json(route.error_body(status, code, message, self.rng))

    async def shutdown(self) -> None:
        """Close every session's sandbox, then the runner (when it has ``aclose``)."""
        await self.close()
        aclose = getattr(self.runner, "aclose", None)
        if aclose is not None:
            await aclose()


def _from_body(props: dict[str, Any], body: Any, form: bool) -> dict[str, Any]:
    """The body's fields the tool takes (a form's values coerced; ``key[]`` is ``key``)."""
    if not isinstance(body, dict):
        return {}
    out: dict[str, Any] = {}
    for k, v in body.items():
        arg = snake(k.removesuffix("[]") if form else k)
        if arg in props and arg not in out:
            out[arg] = _coerce(v, props[arg]) if form else v
    return out


def _parse_body(body: bytes, content_type: str) -> tuple[Any, bool]:
    """(parsed body, is a form): form-encoded or JSON; ``None`` for no body. ``ValueError`` (or
    its ``UnicodeDecodeError``) when it does not parse."""
    if not body:
        return None, False
    if "form" in content_type:
        return urllib.parse.parse_qs(body.decode(), keep_blank_values=True), True
    return json.loads(body), False


def _no_route(method: str, path: str, known: bool) -> bytes:
    """The body of a 404 (no such path) or 405 (the path, under another method)."""
    code = "method_not_allowed" if known else "not_found"
    return _json({"error": {"code": code, "message": f"no route {method} {path}"}})


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


_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
REQUEST_TIMEOUT = 60.0
"""Seconds a request may take (its sandbox call included) before it is answered 503."""


def app(face: HttpFace) -> Any:
    """The Starlette app of ``face``: every path and method goes to :meth:`HttpFace.handle`; its
    lifespan's end closes the sessions' sandboxes and the runner."""
    import contextlib

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route as StarletteRoute

    async def endpoint(request: Request) -> Response:
        raw = request.scope.get("raw_path") or request.url.path.encode()
        query = request.scope.get("query_string") or b""
        target = raw.decode("latin-1") + ("?" + query.decode("latin-1") if query else "")
        try:
            status, headers, payload = await asyncio.wait_for(
                face.handle(request.method, target, dict(request.headers), await request.body()),
                REQUEST_TIMEOUT,
            )
        except Exception as exc:
            log.error("request failed", error=f"{type(exc).__name__}: {exc}")
            message = f"{type(exc).__name__}: {exc}"
            status, headers = 503, {}
            payload = _json({"error": {"code": "sandbox_error", "message": message}})
        media = "application/json" if payload else None
        return Response(payload, status, headers=headers, media_type=media)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> Any:
        try:
            yield
        finally:
            await face.shutdown()

    routes = [StarletteRoute("/{path:path}", endpoint, methods=_METHODS)]
    return Starlette(routes=routes, lifespan=lifespan)


def _server(face: HttpFace) -> Any:
    """A uvicorn server (not started) for ``face``'s app, quiet but for warnings."""
    import uvicorn

    config = uvicorn.Config(
        app(face), log_level="warning", lifespan="on", timeout_graceful_shutdown=5
    )
    return uvicorn.Server(config)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


class Served:
    """A face served by uvicorn in a background thread (from :func:`serve`)."""

    def __init__(self, server: Any, thread: threading.Thread, host: str, port: int) -> None:
        self.server = server
        self.thread = thread
        self.server_address = (host, port)

    @property
    def url(self) -> str:
        """``http://HOST:PORT``."""
        return f"http://{self.server_address[0]}:{self.server_address[1]}"

    def stop(self, timeout: float = 30.0) -> None:
        """Stop serving; every session's sandbox and the runner are closed."""
        self.server.should_exit = True
        self.thread.join(timeout)


def serve(face: HttpFace, host: str = "127.0.0.1", port: int = 0, timeout: float = 60.0) -> Served:
    """Serve ``face`` on ``host:port`` (``port=0``: a free one) in a background thread, once it
    answers; stop it with ``.stop()``."""
    sock = bind(host, port)
    server = _server(face)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="httpface", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError("the HTTP face did not start (see the log)")
        time.sleep(0.02)
    return Served(server, thread, host, sock.getsockname()[1])


def _address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"--http {value!r}: expected ADDR:PORT, e.g. 127.0.0.1:8080")
    return host or "127.0.0.1", int(port)


def _options() -> list[Any]:
    """The options of ``env serve``, top to bottom."""
    import click

    return [
        click.argument("env_dir", type=click.Path(file_okay=False)),
        click.option(
            "--http",
            "address",
            default="127.0.0.1:8080",
            show_default=True,
            is_flag=False,
            flag_value="127.0.0.1:8080",
            metavar="[ADDR:]PORT",
            help="Serve the environment as the REST API its spec describes, on this address.",
        ),
        click.option(
            "--spec",
            "spec_file",
            type=click.Path(dir_okay=False, exists=True),
            default=None,
            help="The OpenAPI document (default: the one named in env.json's provenance).",
        ),
        click.option(
            "--sandbox",
            "runner",
            default="process",
            show_default=True,
            help="Sandbox runner component.",
        ),
        click.option(
            "--seed",
            type=int,
            default=0,
            show_default=True,
            help="Seed of each session's initial state.",
        ),
        click.option(
            "--max-sessions",
            type=int,
            default=16,
            show_default=True,
            help="Sandboxes kept open (one per session).",
        ),
        click.option(
            "--config",
            "config_file",
            type=click.Path(dir_okay=False),
            default=None,
            help="TOML config file; its [RUNNER] table configures the runner.",
        ),
        click.option(
            "--set",
            "sets",
            multiple=True,
            metavar="KEY=VALUE",
            help="Set one runner setting (repeatable).",
        ),
    ]


def _face(
    env_dir: str,
    spec_file: str | None,
    runner: str,
    seed: int,
    max_sessions: int,
    config_file: str | None,
    sets: tuple[str, ...],
) -> HttpFace:
    """The face of the env folder, with its spec and a sandbox runner (``UsageError`` for what
    the user gave wrong)."""
    from envkernel.envcmd import runner_component
    from envkernel.errors import UsageError
    from envkernel_runtime.envdir import EnvDirError, load_env_dir

    from . import check_spec_file

    try:
        env = load_env_dir(env_dir)
    except EnvDirError as exc:
        raise UsageError(str(exc)) from None
    path = Path(spec_file) if spec_file else spec_path(env)
    if path is None:
        raise UsageError(
            f"{env_dir}: env.json names no spec file that exists "
            f"({env.provenance.source if env.provenance else ''!r}); give --spec"
        )
    problem = check_spec_file(path)
    if problem:
        raise UsageError(f"--spec: {problem}")
    component, settings = runner_component(runner, config_file, sets)
    made = (
        component.factory(settings) if component.settings_type is not None else component.factory()
    )
    try:
        return HttpFace(env, made, seed=seed, spec=load_spec(path), max_sessions=max_sessions)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def serve_command() -> Any:
    """The click command ``envkernel env serve`` (built on first use: click is the kernel's)."""
    import signal

    import click

    from envkernel.errors import UsageError

    def serve_cmd(address: str, runner: str, **given: Any) -> None:
        """Serve the environment in ENV_DIR over HTTP, one sandbox per session (X-Envkernel-Session
        header)."""
        try:
            host, port = _address(address if ":" in address else f":{address}")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        face = _face(runner=runner, **given)
        try:
            sock = bind(host, port)
        except OSError as exc:
            raise UsageError(f"cannot listen on {host}:{port}: {exc}") from None
        click.echo(
            f"serving {face.env.id} ({len(face.routes)} routes) at "
            f"http://{host}:{sock.getsockname()[1]} from {runner!r} sandboxes; session header "
            f"{SESSION_HEADER}; Ctrl-C stops",
            err=True,
        )
        for sig in (signal.SIGINT, signal.SIGTERM):  # uvicorn stops on these, then re-raises them
            signal.signal(sig, lambda *_: None)  # so that the exit is 0, not a kill
        _server(face).run(sockets=[sock])

    for option in reversed(_options()):
        serve_cmd = option(serve_cmd)
    return click.command("serve")(serve_cmd)
