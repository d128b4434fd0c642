"""Calling a component's methods from the host's event loop, whether they are sync or async.

Moved out of the kernel's router (``envkernel.worker`` re-exports :func:`call_role`), which
uses them for every role method it invokes.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import structlog

__all__ = [
    "INLINE",
    "ROLE_THREADS",
    "as_list",
    "call_role",
    "close_instance",
    "inline_when",
    "role_threads",
]

log = structlog.get_logger("envkernel.worker")

F = TypeVar("F", bound=Callable[..., Any])


async def close_instance(inst: Any) -> None:
    """Close a component instance (``aclose`` or ``close``, if it has one); failures are logged."""
    closer = getattr(inst, "aclose", None) or getattr(inst, "close", None)
    if closer is None:
        return
    try:
        res = closer()
        if inspect.isawaitable(res):
            await res
    except Exception as exc:
        log.warning("component close failed", error=str(exc))


ROLE_THREADS = int(os.environ.get("ENVKERNEL_ROLE_THREADS", "") or 64)
"""Threads for sync role methods (``ENVKERNEL_ROLE_THREADS``, default 64), apart from the event
loop's default executor."""

_pool: list[ThreadPoolExecutor] = []
_pool_lock = threading.Lock()


def role_threads() -> ThreadPoolExecutor:
    """The process's pool for sync role methods.

    A sync role method may block on the event loop (``Context.wait``: open a sandbox, run a check),
    and the loop's own work runs in its default executor (a sandbox's folders and cgroups, for one).
    Were both in one pool, as many blocked role calls as it has threads (6 on 2 cores) would starve
    the work they wait for, and the run would stall for good; so role methods get a pool of their
    own.
    """
    with _pool_lock:
        if not _pool:
            _pool.append(
                ThreadPoolExecutor(max_workers=ROLE_THREADS, thread_name_prefix="envkernel-role")
            )
        return _pool[0]


INLINE = "__envkernel_inline__"
"""Attribute of a sync role method marked by :func:`inline_when`."""


def inline_when(predicate: Callable[..., bool]) -> Callable[[F], F]:
    """Mark a sync role method as quick and CPU-bound when ``predicate(*args)`` (the method's
    arguments, without ``self``) is true: :func:`call_role` then calls it on the event loop instead
    of handing it to a thread. The hand-off costs more than a scorer's few hundred microseconds, and
    a thread gives pure-Python work no second core anyway. Calls the predicate rejects (those that
    block, such as ``Context.wait``) still go to a thread."""

    def mark(fn: F) -> F:
        setattr(fn, INLINE, predicate)
        return fn

    return mark


async def call_role(fn: Any, *args: Any) -> Any:
    """Call a role method: await it if async, call it here if :func:`inline_when` says it is quick,
    else run it in a thread of :func:`role_threads`.

    Async iterators and generators are drained into a list.
    """
    quick = getattr(fn, INLINE, None)
    if (
        inspect.iscoroutinefunction(fn)
        or inspect.isasyncgenfunction(fn)
        or (quick is not None and quick(*args))
    ):
        result = fn(*args)
    else:
        ctx = (
            contextvars.copy_context()
        )  # as asyncio.to_thread does: structlog's bound values go along
        result = await asyncio.get_running_loop().run_in_executor(
            role_threads(), functools.partial(ctx.run, fn, *args)
        )
    if inspect.isawaitable(result):
        result = await result
    if isinstance(result, AsyncIterator):
        return [x async for x in result]
    return result


def as_list(value: Any, kind: type, what: str, error: type[Exception] = TypeError) -> list[Any]:
    """A role method's result as a list of ``kind`` (one item or an iterable of them); else
    ``error`` saying what ``what`` returned instead."""
    if isinstance(value, kind):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes, dict)):
        items = list(value)
        bad = [type(x).__name__ for x in items if not isinstance(x, kind)]
        if not bad:
            return items
        raise error(f"{what} yielded {', '.join(sorted(set(bad)))}, expected {kind.__name__}")
    raise error(
        f"{what} returned {type(value).__name__}, expected {kind.__name__} or a list of them"
    )
