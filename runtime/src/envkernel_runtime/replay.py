"""Known traces: tool results and final states that the same calls from the same start state gave before.

The executor is deterministic: from a given state (the environment's seed, the task's planted
rows) the same calls, in the same order, give the same results and the same final state (ids,
clock and random generators are part of the state it snapshots and restores). The gate rolls
every task out seven times and trains on it once more, and most of those rollouts walk the same
trace for a while: the training rollout of the reference repeats the gate's reference exactly,
the ``answer_missing`` and ``answer_stuffed`` mutants make the reference's calls and only answer
differently, ``drop_last``, ``change_arg`` and ``distractor`` share the reference's first calls,
and a planted task's do-nothing and inapplicable mutants all end in the seed state plus its rows.

:class:`TraceCache` keeps, per process, the result of each call by a digest of the start state and
every call before it, and the final state of each trace a rollout ended on. A rollout walks the
cache (:class:`Replay`) without a sandbox while the trace is known; the first call that is not
known leases a sandbox, which first repeats the calls answered from the cache (in the same
order, so it is in the same state), then makes that call. A rollout that ends on a known trace
takes its final state from the cache. When several rollouts of a task run at once, the first one to
need a result makes the call and the others wait for it, so they share one execution.

What stays the same: each rollout's calls, results, messages and final state are what its own
execution would have given. A timeout or a crashed executor is never kept (it need not happen
again). A workspace environment (files on disk) is not replayed. ``ENVKERNEL_REPLAY=0`` turns it
off.
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
_NOT_KEPT = frozenset({"timeout", "crashed", "tool_crashed", "internal", "too_large"})
"""Result codes that need not come again from the same calls: a deadline, a dead executor, an exception that may
come from a limit (a MemoryError under the rlimit), the executor's own error, a size limit that is the runner's setting."""


def replay_enabled() -> bool:
    """False when ``ENVKERNEL_REPLAY=0``."""
    return os.environ.get("ENVKERNEL_REPLAY", "1") != "0"


class _Lru:
    """A bounded table of values or in-flight futures (the oldest dropped first)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.items: OrderedDict[bytes, Any] = OrderedDict()

    async def get(self, key: bytes) -> Any:
        """The value under ``key``, waiting for it while another rollout makes it; None when unknown."""
        got = self.items.get(key)
        if isinstance(got, asyncio.Future):
            got = await asyncio.shield(got)
        return got

    def claim(self, key: bytes) -> asyncio.Future[Any] | None:
        """Say this rollout makes the value of ``key`` (others wait for it); None when it is known or claimed."""
        if key in self.items:
            return None
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.items[key] = fut
        return fut

    def resolve(self, key: bytes, fut: asyncio.Future[Any] | None, value: Any) -> None:
        """Settle a claim: keep ``value`` (None: forget the key, the next one to ask makes it)."""
        if fut is not None and not fut.done():
            fut.set_result(value)
        if self.items.get(key) is fut and fut is not None:
            if value is None:
                del self.items[key]
            else:
                self.items[key] = value
        while len(self.items) > self.limit:
            self.items.popitem(last=False)


class TraceCache:
    """The known results and final states of one process (see the module docstring)."""

    def __init__(self, results: int = 20000, states: int = 1024) -> None:
        self.results = _Lru(results)
        self.states = _Lru(states)
        self.served = 0
        """Calls answered from the cache."""
        self.repeated = 0
        """Calls a sandbox repeated to catch up with a trace answered from the cache."""

    def replay(self, start: tuple[Any, ...], env: Any, patch: list[dict[str, Any]] | None = None) -> Replay | None:
        """A rollout's walk from ``start`` (runner, seed, environment digest) plus the task's planted
        rows; None when replay is off or the environment is a workspace."""
        if not replay_enabled() or getattr(getattr(env, "behaviour", None), "kind", "") == "workspace":
            return None
        return Replay(self, hashlib.blake2b(_key_enc.encode([list(start), patch or []]), digest_size=16).digest())


class Replay:
    """One rollout's walk along the known traces of a :class:`TraceCache`."""

    def __init__(self, cache: TraceCache, start: bytes) -> None:
        self.cache = cache
        self.key = start
        self.pending: list[tuple[str, dict[str, Any], ToolResult]] = []
        """Calls answered from the cache that the rollout's sandbox (when it gets one) must repeat first."""
        self._next = start
        self._claim: asyncio.Future[Any] | None = None
        self._turn = asyncio.Lock()  # a policy that calls tools concurrently: one at a time, in the order the trace records

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
            step = b"" if not self.key else hashlib.blake2b(self.key + _key_enc.encode([name, arguments]), digest_size=16).digest()
        except (TypeError, msgspec.EncodeError):
            step = b""
        self._next = step
        if step and free and (got := await self.cache.results.get(step)) is not None:
            self.key = step
            self.pending.append((name, arguments, got))
            self.cache.served += 1
            return got  # type: ignore[no-any-return]
        self._claim = self.cache.results.claim(step) if step else None
        return None

    def learn(self, result: ToolResult | None) -> None:
        """The call after :meth:`known` was made (``None``: it failed): keep its result for the others."""
        keep = result if result is not None and self._next and (result.error is None or result.error.code not in _NOT_KEPT) else None
        self.cache.results.resolve(self._next, self._claim, keep)
        self._claim = None
        self.key = self._next if keep is not None else b""
        if self._turn.locked():
            self._turn.release()

    async def catch_up(self, sandbox: Any) -> None:
        """Bring a newly leased sandbox to where the rollout is: repeat the calls answered from the cache."""
        for name, arguments, want in self.pending:
            self.cache.repeated += 1
            got = await sandbox.call(name, arguments)
            if got != want:
                log.warning("a repeated call gave another result than before: the environment is not deterministic", tool=name)
        self.pending.clear()

    async def final(self, free: bool, read: Callable[[], Awaitable[State]]) -> State:
        """The rollout's final state: the known one of its trace when it holds no sandbox (``free``),
        else ``read()`` (kept for the others)."""
        if not self.key:
            return await read()
        if free and (got := await self.cache.states.get(self.key)) is not None:
            return got  # type: ignore[no-any-return]
        claim = self.cache.states.claim(self.key)
        state: State | None = None
        try:
            state = await read()
        finally:
            if claim is not None:
                self.cache.states.resolve(self.key, claim, state)
        return state
