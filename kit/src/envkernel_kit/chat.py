"""One Chat Completions call with one retry layer, explicit timeouts and no crash on bad replies.

The ``openai`` client is built with ``max_retries=0`` so its own retries never stack with ours,
and with an explicit :class:`openai.Timeout` (never the client's 10-minute default). Retrying is
a :mod:`tenacity` policy (the SDK's own retries know no deadline and report no attempts): 408,
409, 429 and 5xx answers, connection errors and timed-out attempts are retried with exponential
backoff and jitter (``Retry-After`` honoured, capped), up to ``max_retries`` times and never past
the caller's deadline. Every other outcome is returned as
data in a :class:`ChatResult`: a parsed JSON body, or a *condition* (``deadline``, ``timeout``,
``http``, ``connection``, ``bad_response``) with a message that never contains the API key.

The request goes through the client's documented low-level ``post("/chat/completions", body=…,
cast_to=str)``: the same base URL, auth, connection pool and error types as
``chat.completions.create``, without its per-call parameter transformation (≈1 ms per turn on a
4 KB body). The body is parsed here, leniently, so OpenAI-compatible servers that omit fields the
official types require (vLLM, llama.cpp, proxies) still work, and a body that is not JSON is a
recorded condition rather than an exception. ``extra_body`` members are merged into the body.

:meth:`ChatClient.post` is the same call for any other route of the server (the ``openai``
policy loads LoRA adapters with it: vLLM's ``POST /v1/load_lora_adapter`` answers plain text).

:class:`ChatSettings` is the one set of model-server settings (``base_url``, ``api_key``,
``model``, timeouts, retries, backoff, concurrency, ``extra_body``) that every component calling a
model subclasses (the ``openai`` policy, the ``judge``, the ``llm`` synthesizer, the ``llm-user``),
with the ``OPENAI_*`` fallbacks, the error for a missing URL or model, and the client factory;
:class:`UsesChat` gives a component its one lazily made client and ``aclose``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec
import structlog

if TYPE_CHECKING:
    import openai
    import tenacity

log = structlog.get_logger("envkernel.openai")

RETRY_STATUS = frozenset({408, 409, 429})
"""Statuses retried besides every 5xx (the ones the openai client itself would retry)."""

NO_KEY = "EMPTY"
"""API key sent when none is configured (local servers such as vLLM accept anything)."""


def scrub(text: str, secret: str | None, limit: int = 500) -> str:
    """``text`` without ``secret`` (replaced by ``<redacted>``), cut to ``limit`` characters."""
    text = str(text)
    if secret and secret != NO_KEY:
        text = text.replace(secret, "<redacted>")
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class ChatResult:
    """What one logical call (with its retries) came to."""

    body: dict[str, Any] | None = None
    """The parsed JSON object the server answered, or None on a condition (with
    ``expect_json=False``: the object if the answer is one, else ``{}``)."""
    text: str = ""
    """The raw body of a successful answer."""
    condition: str = ""
    """Empty on success; else ``deadline``, ``timeout``, ``http``, ``connection`` or
    ``bad_response``."""
    error: str = ""
    """What went wrong (secret-free), when ``condition`` is set."""
    latency: float = 0.0
    """Seconds of the attempt that produced the answer (or of the last attempt)."""
    attempts: int = 0
    """HTTP attempts made."""
    waited: float = 0.0
    """Seconds spent in backoff sleeps and waiting for a concurrency slot."""
    statuses: list[int] = field(default_factory=list)
    """HTTP status of each attempt that got one."""

    @property
    def ok(self) -> bool:
        """True when ``body`` holds the server's JSON object."""
        return self.body is not None


def _retry_after(headers: Any) -> float | None:
    if headers is None:
        return None
    for name, div in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / div)
        except (TypeError, ValueError):
            continue
    return None


class ChatClient:
    """An ``AsyncOpenAI`` client per event loop, a concurrency semaphore and the retry loop."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str = "",
        request_timeout: float = 60.0,
        connect_timeout: float = 10.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        backoff_max: float = 8.0,
        concurrency: int = 64,
        headers: dict[str, str] | None = None,
    ) -> None:
        if not base_url:
            raise ValueError(
                "no base URL: set base_url in the config, --set COMPONENT.base_url=..., or "
                "OPENAI_BASE_URL"
            )
        if request_timeout <= 0 or connect_timeout <= 0:
            raise ValueError("request_timeout and connect_timeout must be positive")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.base_url = base_url
        self._api_key = api_key or NO_KEY
        self.request_timeout = request_timeout
        self.connect_timeout = connect_timeout
        self.max_retries = max(0, max_retries)
        self.backoff = max(0.0, backoff)
        self.backoff_max = max(0.0, backoff_max)
        self.concurrency = concurrency
        self._headers = dict(headers or {})
        self._per_loop: dict[
            int, tuple[asyncio.AbstractEventLoop, openai.AsyncOpenAI, asyncio.Semaphore]
        ] = {}

    def __repr__(self) -> str:  # never show the key
        return (
            f"ChatClient(base_url={self.base_url!r}, timeout={self.request_timeout}, "
            f"retries={self.max_retries})"
        )

    def scrub(self, text: str, limit: int = 500) -> str:
        """``text`` without the API key."""
        return scrub(text, self._api_key, limit)

    def _for_loop(self) -> tuple[openai.AsyncOpenAI, asyncio.Semaphore]:
        import openai

        loop = asyncio.get_running_loop()
        got = self._per_loop.get(id(loop))
        if got is None or got[0] is not loop:
            for key, (other, _c, _s) in list(self._per_loop.items()):
                if other.is_closed():
                    del self._per_loop[key]
            client = openai.AsyncOpenAI(
                base_url=self.base_url,
                api_key=self._api_key,
                max_retries=0,
                timeout=openai.Timeout(self.request_timeout, connect=self.connect_timeout),
                default_headers=self._headers or None,
            )
            got = (loop, client, asyncio.Semaphore(self.concurrency))
            self._per_loop[id(loop)] = got
        return got[1], got[2]

    def _delay(self, attempt: int, headers: Any) -> float:
        hinted = _retry_after(headers)
        if hinted is not None:
            return min(hinted, self.backoff_max)
        cap = min(self.backoff_max, self.backoff * (2**attempt))
        return random.uniform(cap / 2, cap) if cap > 0 else 0.0

    async def complete(
        self, payload: dict[str, Any], *, deadline: float | None = None, retries: int | None = None
    ) -> ChatResult:
        """POST ``payload`` to ``/chat/completions``; retries as the module says; never raises
        for anything the server or the network does. ``deadline`` is a ``time.monotonic()`` value;
        ``retries`` replaces ``max_retries`` for this call (0: probe an option the server may
        refuse)."""
        payload = dict(payload)
        payload.update(payload.pop("extra_body", None) or {})
        return await self.post("/chat/completions", payload, deadline=deadline, retries=retries)

    async def post(
        self,
        path: str,
        payload: dict[str, Any],
        *,
        deadline: float | None = None,
        timeout: float | None = None,
        expect_json: bool = True,
        retries: int | None = None,
    ) -> ChatResult:
        """POST ``payload`` (JSON) to ``path`` under the base URL, with the retries, timeouts,
        concurrency slot and secret scrubbing of :meth:`complete`; never raises for anything the
        server or the network does. ``timeout`` replaces ``request_timeout`` for each attempt.
        With ``expect_json=False`` a body that is not a JSON object is fine (kept in ``text``);
        ``retries`` replaces ``max_retries`` for this call."""
        client, sem = self._for_loop()
        res = ChatResult()
        if not await _take_slot(sem, deadline, res):
            return res
        call = _Call(self, client, path, payload, deadline, expect_json, res)
        call.per_attempt = self.request_timeout if timeout is None else timeout
        try:
            await call.retrying(self.max_retries if retries is None else max(0, retries))(call.once)
        finally:
            sem.release()
        return res

    async def aclose(self) -> None:
        """Close every HTTP client this object made."""
        items, self._per_loop = list(self._per_loop.values()), {}
        current = asyncio.get_running_loop()
        for loop, client, _sem in items:
            if loop is current:
                try:
                    await client.close()
                except Exception as exc:
                    log.warning("closing the model client failed", error=str(exc))


async def _take_slot(sem: asyncio.Semaphore, deadline: float | None, res: ChatResult) -> bool:
    """Wait for a concurrency slot until ``deadline``; False (and a ``deadline`` condition) if
    none came."""
    t_wait = time.monotonic()
    try:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise TimeoutError
        await asyncio.wait_for(sem.acquire(), remaining)
        return True
    except TimeoutError:
        res.condition = "deadline"
        res.error = "the rollout deadline passed while waiting for a free model slot"
        return False
    finally:
        res.waited += time.monotonic() - t_wait


class _Call:
    """One logical call: its attempts (:meth:`once`) and the tenacity policy that repeats them
    (:meth:`retrying`). Each attempt writes what it came to into ``res``."""

    def __init__(
        self,
        owner: ChatClient,
        client: openai.AsyncOpenAI,
        path: str,
        payload: dict[str, Any],
        deadline: float | None,
        expect_json: bool,
        res: ChatResult,
    ) -> None:
        self.owner, self.client, self.path, self.payload = owner, client, path, payload
        self.deadline, self.expect_json, self.res = deadline, expect_json, res
        self.per_attempt = owner.request_timeout
        self.limit = owner.max_retries
        self.headers: Any = None
        """Headers of the last failed answer (for ``Retry-After``)."""

    def retrying(self, limit: int) -> tenacity.AsyncRetrying:
        """Retry an attempt that asks for it, up to ``limit`` times and never past the deadline,
        with :meth:`ChatClient._delay` between attempts; giving up returns (never raises)."""
        import tenacity

        self.limit = limit
        return tenacity.AsyncRetrying(
            retry=tenacity.retry_if_result(bool),
            wait=lambda rs: self.owner._delay(rs.attempt_number - 1, self.headers),
            stop=lambda rs: rs.attempt_number > limit or self._no_time_left(rs),
            before_sleep=self._before_sleep,
            retry_error_callback=self._give_up,
        )

    def _no_time_left(self, rs: tenacity.RetryCallState) -> bool:
        return self.deadline is not None and time.monotonic() + rs.upcoming_sleep >= self.deadline

    def _give_up(self, rs: tenacity.RetryCallState) -> None:
        res = self.res
        if rs.attempt_number <= self.limit and self._no_time_left(rs):
            res.error += " (no time left for another attempt before the deadline)"
            if res.condition == "timeout":
                res.condition = "deadline"
        else:
            res.error += f" (gave up after {res.attempts} attempts)"

    def _before_sleep(self, rs: tenacity.RetryCallState) -> None:
        delay = rs.upcoming_sleep
        self.res.waited += delay
        log.warning(
            "model call failed; retrying",
            base_url=self.owner.base_url,
            path=self.path,
            attempt=self.res.attempts,
            condition=self.res.condition,
            error=self.res.error,
            delay=round(delay, 3),
        )

    async def once(self) -> bool:
        """One HTTP attempt; True when it failed in a way worth another."""
        import openai

        res, timeout = self.res, self.per_attempt
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                res.condition = "deadline"
                last = f"; last: {res.error}" if res.error else ""
                res.error = f"the rollout deadline passed after {res.attempts} attempt(s){last}"
                return False
            timeout = min(timeout, left)
        res.attempts += 1
        self.headers = None
        t0 = time.perf_counter()
        try:
            text = await self.client.post(
                self.path,
                body=self.payload,
                cast_to=str,
                options={
                    "timeout": openai.Timeout(
                        timeout, connect=min(self.owner.connect_timeout, timeout)
                    )
                },
            )
        except openai.OpenAIError as exc:
            res.latency = time.perf_counter() - t0
            return self._failed(exc, timeout)
        res.latency = time.perf_counter() - t0
        res.statuses.append(200)
        self._answered(text)
        return False

    def _answered(self, text: Any) -> None:
        res = self.res
        try:
            body = json.loads(text)
        except (TypeError, ValueError):
            body = None
        if not isinstance(body, dict):
            if self.expect_json:
                res.condition = "bad_response"
                res.error = self.owner.scrub(
                    f"the server's body is not a JSON object: {str(text)[:200]!r}"
                )
                return
            body = {}
        res.body = body
        res.text = "" if text is None else str(text)
        res.condition = res.error = ""

    def _failed(self, exc: openai.OpenAIError, timeout: float) -> bool:
        """Record a failed attempt; True when it is worth another (408, 409, 429, 5xx, a timeout,
        a connection error)."""
        import openai

        res, scrub = self.res, self.owner.scrub
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            res.statuses.append(status)
            self.headers = exc.response.headers if exc.response is not None else None
            res.condition, res.error = "http", scrub(f"HTTP {status}: {exc.message or ''}")
            return status in RETRY_STATUS or status >= 500
        if isinstance(exc, openai.APITimeoutError):  # (a subclass of APIConnectionError)
            res.condition, res.error = "timeout", f"no answer within {timeout:.3g} s"
            deadline = self.deadline
            cut = deadline is not None and timeout < self.per_attempt
            if cut and deadline is not None and time.monotonic() >= deadline - 1e-3:
                res.condition = "deadline"
                res.error = (
                    f"the rollout deadline passed during a model call (attempt {res.attempts})"
                )
                return False
            return True
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            res.condition, res.error = "connection", scrub(f"{type(cause).__name__}: {cause}")
            return True
        res.condition, res.error = "bad_response", scrub(f"{type(exc).__name__}: {exc}")
        return False  # anything else the client raises about the reply


# -- the settings every model-calling component shares -------------------------------------------

REDACTED = "<redacted>"
"""What the kernel stores in place of a secret; never sent as a key."""

_FALLBACK = {"base_url": "OPENAI_BASE_URL", "api_key": "OPENAI_API_KEY", "model": "OPENAI_MODEL"}


class ChatSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The model-server settings of a component that calls an OpenAI-compatible model.

    A component's settings subclass this and add their own fields; a subclass may give a field
    here another default by declaring it again, and name other environment variables in
    ``__env__`` (read by the kernel: file < environment < ``--set``). ``base_url``, ``api_key``
    and ``model`` left empty fall back to ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and
    ``OPENAI_MODEL`` when used. :meth:`client` makes the :class:`ChatClient` they describe.
    """

    __env__: ClassVar[dict[str, str]] = dict(_FALLBACK)
    section: ClassVar[str] = "chat"
    """The config section (component name) these settings are usually given under, for errors."""
    who: ClassVar[str] = "the component"
    """What uses these settings, for errors (``the judge``)."""

    base_url: str = ""
    """Base URL of the OpenAI-compatible API, e.g. ``http://127.0.0.1:8000/v1`` (empty:
    ``OPENAI_BASE_URL``)."""
    api_key: str = ""
    """API key (empty: ``OPENAI_API_KEY``, else ``EMPTY``, as local servers expect); never written
    anywhere."""
    model: str = ""
    """Model name (empty: ``OPENAI_MODEL``)."""
    request_timeout: float = 60.0
    """Seconds one HTTP attempt may take (never the client's 10-minute default)."""
    connect_timeout: float = 10.0
    """Seconds to connect."""
    max_retries: int = 3
    """Retries of one model call on 408/409/429/5xx, timeouts and connection errors."""
    backoff: float = 0.5
    """First backoff in seconds; doubles per retry, with full jitter (``Retry-After`` wins)."""
    backoff_max: float = 8.0
    """Longest backoff in seconds."""
    concurrency: int = 64
    """Model requests in flight per process at most (a semaphore around each call)."""
    extra_body: dict[str, Any] = msgspec.field(default_factory=dict)
    """Extra JSON members of every request (vendor parameters such as ``top_k``)."""

    def __post_init__(self) -> None:
        if min(self.request_timeout, self.connect_timeout) <= 0:
            raise ValueError("request_timeout and connect_timeout must be positive")
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if self.max_retries < 0 or self.backoff < 0 or self.backoff_max < 0:
            raise ValueError("max_retries, backoff and backoff_max must not be negative")

    def resolved(self, name: str) -> str:
        """``base_url``, ``api_key`` or ``model``: the setting, else its ``OPENAI_*`` variable
        (a redacted key counts as unset)."""
        value = getattr(self, name)
        return value if value and value != REDACTED else os.environ.get(_FALLBACK[name], "")

    def _missing(self, name: str, what: str) -> str:
        own = type(self).__env__.get(name)
        env = " or ".join(dict.fromkeys(v for v in (own, _FALLBACK[name]) if v))
        return (
            f"{self.who} has no {what}: set {env}, [{self.section}] {name}, or --set "
            f"{self.section}.{name}=..."
        )

    def target(self, *, need_model: bool = True) -> tuple[str, str]:
        """(base URL, model) to call; a missing one is a ``ConfigError`` that says where to set
        it."""
        from envkernel.errors import ConfigError

        base_url, model = self.resolved("base_url"), self.resolved("model")
        if not base_url:
            raise ConfigError(self._missing("base_url", "base URL"))
        if need_model and not model:
            raise ConfigError(self._missing("model", "model"))
        return base_url, model

    def client(self, base_url: str | None = None) -> ChatClient:
        """A new :class:`ChatClient` for ``base_url`` (default: the resolved one) with these
        settings' key, timeouts, retries, backoff and concurrency."""
        return ChatClient(
            base_url=base_url or self.target(need_model=False)[0],
            api_key=self.resolved("api_key"),
            request_timeout=self.request_timeout,
            connect_timeout=self.connect_timeout,
            max_retries=self.max_retries,
            backoff=self.backoff,
            backoff_max=self.backoff_max,
            concurrency=self.concurrency,
        )

    def body(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        temperature: float | None,
        max_tokens: int | None,
        **fields: Any,
    ) -> dict[str, Any]:
        """A Chat Completions request: ``temperature`` and ``max_tokens`` when set, ``fields``,
        and ``extra_body`` (merged into the body by :meth:`ChatClient.complete`)."""
        body: dict[str, Any] = {"model": model, "messages": messages}
        if temperature is not None:
            body["temperature"] = temperature
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        body.update(fields)
        if self.extra_body:
            body["extra_body"] = dict(self.extra_body)
        return body


class UsesChat:
    """A component that makes one :class:`ChatClient` from its ``settings`` on first use and
    closes it in :meth:`aclose`."""

    settings: ChatSettings
    _client: ChatClient | None = None

    def chat_client(self) -> ChatClient:
        """The chat client (made on first use; a missing base URL is a ``ConfigError``)."""
        if self._client is None:
            self._client = self.settings.client()
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            await self._client.aclose()
