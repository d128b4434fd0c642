"""The one sandbox pool: sandboxes kept per key, lent out, and reset between uses.

Runs (:class:`envkernel.sandbox.SandboxPool`, keyed by runner, seed and environment) and
``envkernel serve`` (its ``WarmPool``, keyed by environment) both lend sandboxes through
:class:`Pool`; what differs between them is a :class:`PoolPolicy`:

- ``reuse``: ``"restore"`` — a sandbox given back after a clean use is kept, and restored to the
  snapshot taken right after it was opened (the seed state: database, ids, clock, generators, the
  working folder and env.py's own module state) when it is lent again; ``"fresh"`` — no sandbox
  is lent twice: one given back is closed, and unused ones are opened in the background so that
  ``prefill`` (at least one, once a key is used) stay ready;
- ``per_env``: at most this many of one key out at once (0: no cap; further leases wait);
- ``keep_idle``: at most this many of one key kept idle;
- ``prefill``: how many :meth:`Pool.warm` opens ahead (and, ``fresh``, keeps ready).

Opening a sandbox is the caller's (an ``opener``: a coroutine function of no arguments returning a
sandbox with ``snapshot``, ``restore`` and ``close``); so is closing one (``closer``), so a lane or
other handle kept beside a sandbox closes with it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Literal

import structlog

__all__ = ["Pool", "PoolPolicy", "Pooled"]

log = structlog.get_logger("envkernel.pool")

Reuse = Literal["restore", "fresh"]


@dataclass(frozen=True)
class PoolPolicy:
    """How a :class:`Pool` reuses, caps and prefills (see the module docstring)."""

    reuse: Reuse = "restore"
    per_env: int = 0
    keep_idle: int = 256
    prefill: int = 0

    def describe(self) -> str:
        """The policy in a few words (for the run's stack description)."""
        cap = f"{self.per_env} out per env" if self.per_env else "no cap per env"
        how = (
            "restored to the open-time snapshot between uses"
            if self.reuse == "restore"
            else "never lent twice, unused ones opened ahead"
        )
        return f"{cap}, {how}"


@dataclass(eq=False)
class Pooled:
    """A sandbox of the pool, with the snapshot of its seed state and what the caller keeps
    beside it (``extra``: serve's direct lane)."""

    key: Hashable
    sandbox: Any
    snapshot: str
    extra: Any = None
    broken: bool = False
    """Set by the borrower when the use failed: the sandbox is closed, not kept."""
    used: bool = False


Opener = Callable[[], Awaitable[Any]]


@dataclass
class _Slot:
    """One key's idle sandboxes, its cap, and how to open another."""

    slots: asyncio.Semaphore | None
    opener: Opener
    idle: list[Pooled] = field(default_factory=list)
    want: int = 0
    filling: int = 0


class Pool:
    """Sandboxes per key under one :class:`PoolPolicy` (see the module docstring)."""

    def __init__(
        self,
        policy: PoolPolicy | None = None,
        *,
        closer: Callable[[Pooled], Awaitable[None]] | None = None,
        on_open: Callable[[Any], Any] | None = None,
    ) -> None:
        self.policy = policy or PoolPolicy()
        self._closer = closer or _close
        self._on_open = on_open
        self._keys: dict[Hashable, _Slot] = {}
        self._background: set[asyncio.Future[None]] = set()
        self.opened = 0
        """Sandboxes opened."""
        self.reused = 0
        """Leases served by a restored sandbox (``restore`` policy)."""
        self.out = 0
        """Sandboxes lent out now."""

    def _slot(self, key: Hashable, opener: Opener) -> _Slot:
        slot = self._keys.get(key)
        if slot is None:
            cap = self.policy.per_env
            slot = self._keys[key] = _Slot(asyncio.Semaphore(cap) if cap else None, opener)
        slot.opener = opener
        return slot

    async def _open(self, key: Hashable, opener: Opener) -> Pooled:
        sb = await opener()
        try:
            snap = await sb.snapshot()
        except BaseException:
            await sb.close()
            raise
        self.opened += 1
        extra = self._on_open(sb) if self._on_open is not None else None
        return Pooled(key, sb, snap, extra)

    async def acquire(self, key: Hashable, opener: Opener) -> Pooled:
        """A sandbox of ``key`` in its seed state: an idle one (restored if it was used), else
        one ``opener`` opens. Waits while ``per_env`` are out."""
        slot = self._slot(key, opener)
        if slot.slots is not None:
            await slot.slots.acquire()
        try:
            item = await self._take(slot) or await self._open(key, opener)
        except BaseException:
            if slot.slots is not None:
                slot.slots.release()
            raise
        self.out += 1
        if self.policy.reuse == "fresh":
            slot.want = max(slot.want, 1)  # a key sessions use: keep one ready
            self._refill(key, slot)
        return item

    async def _take(self, slot: _Slot) -> Pooled | None:
        """An idle sandbox made ready for a lease, or None (the broken ones closed)."""
        while slot.idle:
            item = slot.idle.pop()
            if getattr(item.sandbox, "closed", False):
                continue
            if not item.used:
                return item
            try:
                await item.sandbox.restore(item.snapshot)
            except Exception as exc:  # expired or broken: open a fresh one
                log.debug("pooled sandbox unusable", error=str(exc))
                await self._closer(item)
                continue
            self.reused += 1
            return item
        return None

    async def release(self, item: Pooled) -> None:
        """Give a sandbox back: kept for the next lease after a clean use (``restore``), else
        closed."""
        self.out -= 1
        slot = self._keys[item.key]
        if slot.slots is not None:
            slot.slots.release()
        item.used = True
        if (
            self.policy.reuse == "fresh"
            or item.broken
            or getattr(item.sandbox, "closed", False)
            or len(slot.idle) >= self.policy.keep_idle
        ):
            await self._closer(item)
        else:
            slot.idle.append(item)

    def _refill(self, key: Hashable, slot: _Slot) -> None:
        """``fresh``: open unused sandboxes of ``key`` in the background until ``want`` are
        ready."""
        missing = min(slot.want, self.policy.keep_idle) - len(slot.idle) - slot.filling
        for _ in range(max(0, missing)):
            slot.filling += 1
            task = asyncio.ensure_future(self._fill_one(key, slot))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _fill_one(self, key: Hashable, slot: _Slot) -> None:
        try:
            item = await self._open(key, slot.opener)
        except Exception as exc:
            log.warning("could not open a sandbox ahead", key=str(key), error=str(exc))
            return
        finally:
            slot.filling -= 1
        slot.idle.append(item)

    async def warm(self, key: Hashable, opener: Opener, n: int | None = None) -> None:
        """Open ``n`` (default: the policy's ``prefill``) sandboxes of ``key`` ahead of the first
        leases (``fresh``: and keep that many ready)."""
        n = self.policy.prefill if n is None else n
        slot = self._slot(key, opener)
        items = await asyncio.gather(*(self._open(key, opener) for _ in range(n)))
        slot.idle.extend(items)
        slot.want = max(slot.want, n)

    @property
    def idle(self) -> int:
        """Sandboxes waiting for a lease."""
        return sum(len(s.idle) for s in self._keys.values())

    def idle_by_key(self) -> dict[Hashable, int]:
        """Idle sandboxes per key."""
        return {k: len(s.idle) for k, s in self._keys.items()}

    def stats(self) -> dict[str, int]:
        """Opened, reused (restored), idle and out, as numbers."""
        return {"opened": self.opened, "reused": self.reused, "idle": self.idle, "out": self.out}

    async def close_where(self, keep: Callable[[Pooled], bool]) -> None:
        """Close the idle sandboxes ``keep`` says no to."""
        gone: list[Pooled] = []
        for slot in self._keys.values():
            gone.extend(i for i in slot.idle if not keep(i))
            slot.idle[:] = [i for i in slot.idle if keep(i)]
        await asyncio.gather(*(self._closer(i) for i in gone))

    async def close(self) -> None:
        """Close every idle sandbox (and stop opening more)."""
        for slot in self._keys.values():
            slot.want = 0
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.close_where(lambda _: False)


async def _close(item: Pooled) -> None:
    await item.sandbox.close()
