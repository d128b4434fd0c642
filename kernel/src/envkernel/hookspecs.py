"""The hook specifications: how a plugin hands its components to the kernel.

Each ``register_*`` hook receives a ``register(name, factory)`` callable. ``name`` is the
component's name (a NATS token, unique in a run); ``factory`` builds it, taking a settings Struct
when it has a ``Settings`` attribute. Events never travel through these hooks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

PROJECT = "envkernel"
"""pluggy project name, and the entry-point group plugins declare."""

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

Register = Callable[[str, Callable[..., Any]], None]
"""``register(name, factory)``."""


@hookspec
def register_synthesizers(register: Register) -> None:
    """Register synthesizer components (make environments from sources)."""


@hookspec
def register_sandbox_runners(register: Register) -> None:
    """Register sandbox-runner components (open isolated sandboxes)."""


@hookspec
def register_verifiers(register: Register) -> None:
    """Register verifier components (execute environments and keep what works)."""


@hookspec
def register_samplers(register: Register) -> None:
    """Register sampler components (propose grounded tasks)."""


@hookspec
def register_policies(register: Register) -> None:
    """Register policy components (roll agents out)."""


@hookspec
def register_reward_models(register: Register) -> None:
    """Register reward-model components (score rollouts)."""


@hookspec
def register_trainers(register: Register) -> None:
    """Register trainer and exporter components (consume scored groups; broadcast)."""


@hookspec
def register_users(register: Register) -> None:
    """Register user components (simulated users a policy talks with over several turns)."""


@hookspec
def register_commands(cli: Any) -> None:
    """Add subcommands to the ``envkernel`` click group."""


ROLE_HOOKS: dict[str, str] = {
    "synthesizer": "register_synthesizers",
    "sandbox_runner": "register_sandbox_runners",
    "verifier": "register_verifiers",
    "sampler": "register_samplers",
    "policy": "register_policies",
    "reward_model": "register_reward_models",
    "trainer": "register_trainers",
    "user": "register_users",
}
"""Role -> the hook that registers it."""
