"""Calling a component's methods from the host's event loop, whether they are sync or async.

Moved out of the kernel's router (``envkernel.router`` re-exports :func:`call_role`), which
uses them for every role method it invokes.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Iterable
from typing import Any

import structlog

__all__ = ["as_list", "call_role", "close_instance"]

log = structlog.get_logger("envkernel.worker")


async def close_instance(inst: Any) -> None:
    """Close a component instance (``aclose`` or ``close``, if it has one); failures are logged."""
    closer = getattr(inst, "aclose", None) or getattr(inst, "close", None)
    if closer is None:
        return
    try:
        res = closer()
        if inspect.isawaitable(res):
            await res
    except Exception as exc:  # noqa: BLE001
        log.warning("component close failed", error=str(exc))


async def call_role(fn: Any, *args: Any) -> Any:
    """Call a role method: await it if async, else run it in a worker thread.

    Async iterators and generators are drained into a list.
    """
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        result = fn(*args)
    else:
        result = await asyncio.to_thread(fn, *args)
    if inspect.isawaitable(result):
        result = await result
    if isinstance(result, AsyncIterator):
        return [x async for x in result]
    return result


def as_list(value: Any, kind: type, what: str, error: type[Exception] = TypeError) -> list[Any]:
    """A role method's result as a list of ``kind`` (one item or an iterable of them); else ``error``
    saying what ``what`` returned instead."""
    if isinstance(value, kind):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes, dict)):
        items = list(value)
        bad = [type(x).__name__ for x in items if not isinstance(x, kind)]
        if not bad:
            return items
        raise error(f"{what} yielded {', '.join(sorted(set(bad)))}, expected {kind.__name__}")
    raise error(f"{what} returned {type(value).__name__}, expected {kind.__name__} or a list of them")
