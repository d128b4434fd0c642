"""Users who talk: how a policy finds the run's ``user`` component and asks it for a turn.

A ``user`` component (role :class:`envkernel.roles.User`, registered with ``register_users``)
plays the person behind a task over several turns: the task's ``request`` is the opening, and
the user reveals what it held back (``Task.hidden``) when the agent asks or acts. It has no
events of its own; a policy asks it for each user turn:

    user = user_for(ctx)                       # the run's user component, or None (one turn)
    said = await user_turn(user, task, messages, ctx)
    if said: messages.append({"role": "user", "content": said})

The run's user is ``user = NAME`` in the config file, else the first active user component.
:func:`user_for` builds it once per run and process, from the plugins the run selected, with the
settings of its own config section.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any

import structlog

__all__ = ["MAX_EXTRA_TURNS", "last_assistant", "revealed", "user_for", "user_turn"]

log = structlog.get_logger("envkernel.users")

MAX_EXTRA_TURNS = 2
"""User turns allowed beyond one per held-back fact (a bound on any conversation)."""

_users: dict[tuple[str, str], Any] = {}
_lock = threading.Lock()


def user_for(ctx: Any) -> Any | None:
    """The run's ``user`` component (built once per run in this process), or None when the run has
    none."""
    cfg = getattr(ctx, "config", None)
    if cfg is None or not hasattr(cfg, "components"):
        return None
    names = cfg.components.get("user", [])
    name = getattr(cfg, "user", "") or (names[0] if names else "")
    if not name:
        return None
    key = (cfg.run_id, name)
    with _lock:
        if key not in _users:
            from envkernel.config import settings_for
            from envkernel.errors import ConfigError
            from envkernel.plugins import load

            comp = load(list(cfg.selected)).components.get(name)
            if comp is None or comp.role != "user":
                raise ConfigError(
                    f"user = {name!r}: no selected plugin provides a user component of that name "
                    f"(selected users: {', '.join(names) or 'none'}); add one with --plugins +users"
                )
            settings = settings_for(
                name, comp.settings_type, cfg.settings.get(name), flags=cfg.overrides.get(name)
            )
            _users[key] = (
                comp.factory(settings) if comp.settings_type is not None else comp.factory()
            )
            log.info("user component", run=cfg.run_id, user=name)
        return _users[key]


async def user_turn(user: Any, task: Any, messages: list[dict[str, Any]], ctx: Any) -> str | None:
    """The user's next words (None: nothing more to say, or the conversation is long enough).

    A user that has spoken once per held-back fact plus :data:`MAX_EXTRA_TURNS` times is not
    asked again; a sync ``reply`` runs in a worker thread.
    """
    if user is None:
        return None
    spoken = sum(1 for m in messages if m.get("role") == "user")
    if spoken > len(getattr(task, "hidden", []) or []) + MAX_EXTRA_TURNS:
        return None
    if inspect.iscoroutinefunction(user.reply):
        said = await user.reply(task, messages, ctx)
    else:
        said = await asyncio.to_thread(user.reply, task, messages, ctx)
        if inspect.isawaitable(said):
            said = await said
    if not isinstance(said, str) or not said.strip():
        return None
    return said.strip()


def last_assistant(messages: list[dict[str, Any]]) -> str:
    """The text of the conversation's last assistant message ("" when there is none)."""
    for m in reversed(messages):
        if m.get("role") == "assistant":
            c = m.get("content")
            return c if isinstance(c, str) else ""
    return ""


def revealed(task: Any, messages: list[dict[str, Any]]) -> list[str]:
    """The held-back facts the user has already said."""
    said = " ".join(
        m.get("content") or ""
        for m in messages
        if m.get("role") == "user" and isinstance(m.get("content"), str)
    )
    return [h for h in (getattr(task, "hidden", []) or []) if h in said]
