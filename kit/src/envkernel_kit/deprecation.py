"""Deprecated aliases: an old name kept for one release, warning where it is used."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["deprecated_alias"]

F = TypeVar("F", bound=Callable[..., Any])


def deprecated_alias(new: F, old: str) -> F:
    """``new`` under its old name ``old``: the same function (a coroutine function stays one),
    which also emits a :class:`DeprecationWarning` naming the new one at each call."""
    where = f"{new.__module__}.{new.__name__}"
    message = f"{old} is deprecated; use {where}"

    if inspect.iscoroutinefunction(new):

        @functools.wraps(new)
        async def alias(*args: Any, **kwargs: Any) -> Any:
            warnings.warn(message, DeprecationWarning, stacklevel=2)
            return await new(*args, **kwargs)

    else:

        @functools.wraps(new)
        def alias(*args: Any, **kwargs: Any) -> Any:
            warnings.warn(message, DeprecationWarning, stacklevel=2)
            return new(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"Deprecated alias of :func:`{where}` (kept for one release)."
    return alias  # type: ignore[return-value]
