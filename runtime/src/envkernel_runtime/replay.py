"""Known traces: tool results and final states that the same calls from the same start state gave
before.

The executor is deterministic: from a given state (the environment's seed, the task's planted
rows) the same calls, in the same order, give the same results and the same final state (ids,
clock and random generators are part of the state it snapshots and restores). The gate rolls
every task out seven times and trains on it once more, and most of those rollouts walk the same
trace for a while: the training rollout of the reference repeats the gate's reference exactly,
the ``answer_missing`` and ``answer_stuffed`` mutants make the reference's calls and only answer
differently, ``drop_last``, ``change_arg`` and ``distractor`` share the reference's first calls,
and a planted task's do-nothing and inapplicable mutants all end in the seed state plus its rows.

:class:`TraceCache` keeps, per process, the result of each call by a digest of the start state and
every call before it, and the final state of each trace a rollout ended on. The start holds the
runner, the seed, the environment's digest, the task's planted rows and the runner's settings as the
run gives them (a memory or response limit can change a result). A rollout walks the
cache (:class:`Replay`) without a sandbox while the trace is known; the first call that is not
known leases a sandbox, which first repeats the calls answered from the cache (in the same
order, so it is in the same state), then makes that call. A rollout that ends on a known trace
takes its final state from the cache. When several rollouts of a task run at once, the first one to
need a result makes the call and the others wait for it, so they share one execution.

What is kept is encoded (msgpack) and each hit decodes a copy of its own, so a consumer that
changes a result or a state it got changes nothing for the next one; the two tables are bounded by
their encoded bytes (``results_bytes``, ``states_bytes``; the oldest entries go first, and a value
larger than an eighth of its table is not kept).

What stays the same: each rollout's calls, results, messages and final state are what its own
execution would have given. A timeout or a crashed executor is never kept (it need not happen
again). A sandbox that repeats a known call and gets another result (the environment is not
deterministic) is a mismatch: it is counted (``mismatches``) and logged as a warning with what
differed, the entry is dropped, the start it came from is answered by sandboxes alone from then on,
and :meth:`Replay.catch_up` says so, so that the rollout (whose earlier results came from the cache)
is tried again on sandboxes alone. A workspace environment (files on disk) is not replayed.
``ENVKERNEL_REPLAY=0`` turns it off.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import structlog

from envkernel_schemas import State, ToolResult

__all__ = ["Replay", "TraceCache", "replay_enabled"]

log = structlog.get_logger("envkernel.replay")

_key_enc = msgspec.json.Encoder(order="sorted")
_val_enc = msgspec.msgpack.Encoder()
_result_dec = msgspec.msgpack.Decoder(ToolResult)
_state_dec = msgspec.msgpack.Decoder(State)
_NOT_KEPT = frozenset({"timeout", "crashed", "tool_crashed", "internal", "too_large"})
"""Result codes that need not come again from the same calls: a deadline, a dead executor, an
exception that may come from a limit (a MemoryError under the rlimit), the executor's own error, a
size limit that is the runner's setting."""
MB = 1 << 20


def replay_enabled() -> bool:
    """False when ``ENVKERNEL_REPLAY=0``."""
    return os.environ.get("ENVKERNEL_REPLAY", "1") != "0"


def _encoded(value: Any) -> bytes | None:
    """``value`` as the cache keeps it, or ``None`` when msgpack cannot hold it (an integer beyond
    64 bits, which environment code can return): such a value is not kept, and the rollouts
    waiting on it make the call themselves instead of waiting for good."""
    try:
        return _val_enc.encode(value)
    except (OverflowError, TypeError, ValueError, msgspec.EncodeError):
        return None


def _show(value: Any, limit: int = 300) -> str:
    text = repr(msgspec.to_builtins(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Lru:
    """A table of encoded values (bytes) or in-flight futures, bounded by the values' bytes (the
    oldest dropped first)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        """Most bytes of values kept."""
        self.size = 0
        """Bytes of the values kept now."""
        self.items: OrderedDict[bytes, bytes | asyncio.Future[bytes | None]] = OrderedDict()

    async def get(self, key: bytes) -> bytes | None:
        """The value under ``key``, waiting for it while another rollout makes it; None when
        unknown."""
        got = self.items.get(key)
        if isinstance(got, asyncio.Future):
            return await asyncio.shield(got)
        return got

    def claim(self, key: bytes) -> asyncio.Future[bytes | None] | None:
        """Say this rollout makes the value of ``key`` (others wait for it); None when it is known
        or claimed."""
        if key in self.items:
            return None
        fut: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
        self.items[key] = fut
        return fut

    def resolve(
        self, key: bytes, fut: asyncio.Future[bytes | None] | None, value: bytes | None
    ) -> None:
        """Settle a claim: keep ``value`` (None, or too large for the table: forget the key, the
        next one to ask makes it)."""
        if fut is not None and not fut.done():
            fut.set_result(value)
        if fut is None or self.items.get(key) is not fut:
            return
        if value is None or len(value) > self.limit // 8:
            del self.items[key]
            return
        self.items[key] = value
        self.size += len(value)
        while self.size > self.limit:
            old = next((k for k, v in self.items.items() if isinstance(v, bytes)), None)
            if old is None:
                break
            self.drop(old)

    def drop(self, key: bytes) -> None:
        """Forget a kept value."""
        got = self.items.get(key)
        if isinstance(got, bytes):
            del self.items[key]
            self.size -= len(got)


class TraceCache:
    """The known results and final states of one process (see the module docstring)."""

    def __init__(self, results_bytes: int = 64 * MB, states_bytes: int = 64 * MB) -> None:
        self.results = _Lru(results_bytes)
        self.states = _Lru(states_bytes)
        self.untrusted: set[bytes] = set()
        """Starts a mismatch came from: answered by sandboxes alone."""
        self.served = 0
        """Calls answered from the cache."""
        self.repeated = 0
        """Calls a sandbox repeated to catch up with a trace answered from the cache."""
        self.mismatches = 0
        """Repeated calls that gave another result than the one kept (the entry was dropped)."""

    def replay(
        self,
        start: tuple[Any, ...],
        env: Any,
        patch: list[dict[str, Any]] | None = None,
        settings: Any = None,
    ) -> Replay | None:
        """A rollout's walk from ``start`` (runner, seed, environment digest) plus the task's
        planted rows and the runner's ``settings``; None when replay is off, the environment is a
        workspace or the start met a mismatch."""
        if (
            not replay_enabled()
            or getattr(getattr(env, "behaviour", None), "kind", "") == "workspace"
        ):
            return None
        try:
            key = hashlib.blake2b(
                _key_enc.encode([list(start), patch or [], settings]), digest_size=16
            ).digest()
        except (TypeError, msgspec.EncodeError):
            return None
        return None if key in self.untrusted else Replay(self, key)


class Replay:
    """One rollout's walk along the known traces of a :class:`TraceCache`."""

    def __init__(self, cache: TraceCache, start: bytes) -> None:
        self.cache = cache
        self.start = start
        self.key = start
        self.pending: list[tuple[str, dict[str, Any], bytes, bytes]] = []
        """Calls answered from the cache (name, arguments, step key, the kept result) that the
        rollout's sandbox (when it gets one) must repeat first."""
        self._next = start
        self._claim: asyncio.Future[bytes | None] | None = None
        self._turn = (
            asyncio.Lock()
        )  # a policy that calls tools concurrently: one at a time, in the order the trace records

    async def known(self, name: str, arguments: dict[str, Any], free: bool) -> ToolResult | None:
        """The result of this call when the trace so far is known and the rollout holds no sandbox
        (``free``); else None: the rollout makes the call, then must call :meth:`learn`."""
        await self._turn.acquire()
        try:
            got = await self._known(name, arguments, free)
        except BaseException:
            self._turn.release()
            raise
        if got is not None:
            self._turn.release()
        return got

    async def _known(self, name: str, arguments: dict[str, Any], free: bool) -> ToolResult | None:
        try:  # after a result that was not kept (or arguments that are not JSON), nothing more is
            step = (
                b""
                if not self.key
                else hashlib.blake2b(
                    self.key + _key_enc.encode([name, arguments]), digest_size=16
                ).digest()
            )
        except (TypeError, msgspec.EncodeError):
            step = b""
        self._next = step
        if step and free and (got := await self.cache.results.get(step)) is not None:
            self.key = step
            self.pending.append((name, arguments, step, got))
            self.cache.served += 1
            return _result_dec.decode(got)  # a copy of its own
        self._claim = self.cache.results.claim(step) if step else None
        return None

    def learn(self, result: ToolResult | None) -> None:
        """The call after :meth:`known` was made (``None``: it failed): keep its result for the
        others."""
        keep = (
            result
            if result is not None
            and self._next
            and (result.error is None or result.error.code not in _NOT_KEPT)
            else None
        )
        kept = None if keep is None else _encoded(keep)
        self.cache.results.resolve(self._next, self._claim, kept)
        self._claim = None
        self.key = self._next if kept is not None else b""
        if self._turn.locked():
            self._turn.release()

    async def catch_up(self, sandbox: Any) -> str:
        """Bring a newly leased sandbox to where the rollout is: repeat the calls answered from the
        cache.

        Returns what differed when a repeated call gave another result than the kept one ("" when
        none did): the entry is dropped, its start is no longer replayed, and the caller must try
        the rollout again (its earlier results came from the cache, its sandbox is elsewhere)."""
        pending, self.pending = self.pending, []
        for i, (name, arguments, step, kept) in enumerate(pending):
            self.cache.repeated += 1
            got, want = await sandbox.call(name, arguments), _result_dec.decode(kept)
            if got != want:
                self.cache.mismatches += 1
                self.cache.results.drop(step)
                self.cache.untrusted.add(self.start)
                self.key = b""
                differs = f"call {i + 1} {name!r} gave {_show(got)}, the known trace {_show(want)}"
                log.warning(
                    "a repeated call gave another result than the known trace: the "
                    "environment is not deterministic; its rollouts now run on sandboxes alone",
                    tool=name,
                    call=i + 1,
                    got=_show(got),
                    known=_show(want),
                )
                return differs
        return ""

    async def final(self, free: bool, read: Callable[[], Awaitable[State]]) -> State:
        """The rollout's final state: the known one of its trace when it holds no sandbox
        (``free``), else ``read()`` (kept for the others)."""
        if not self.key:
            return await read()
        if free and (got := await self.cache.states.get(self.key)) is not None:
            return _state_dec.decode(got)  # a copy of its own
        claim = self.cache.states.claim(self.key)
        state: State | None = None
        try:
            state = await read()
        finally:
            if claim is not None:
                self.cache.states.resolve(
                    self.key, claim, None if state is None else _encoded(state)
                )
        return state
