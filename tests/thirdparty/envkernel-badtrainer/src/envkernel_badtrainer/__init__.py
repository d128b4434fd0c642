"""envkernel-badtrainer: a trainer whose ``update`` misbehaves on purpose.

``mode = "flaky"``: iteration 0 raises; iteration 1 returns an update for the ``reinforce`` policy
in a format that policy refuses; iteration 2 returns something that is not a PolicyUpdate; later
iterations return nothing. ``mode = "plain"``: every iteration returns an update for the run's
policy (which may have no ``apply_update``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from envkernel.hookspecs import hookimpl
from envkernel_schemas import PolicyUpdate


class Settings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of ``badtrainer``."""

    mode: str = "flaky"
    """``flaky`` or ``plain``."""


class BadTrainer:
    """Trainer ``badtrainer``."""

    Settings = Settings

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.groups = 0

    def consume(self, group: Any, ctx: Any) -> None:
        """Count the groups."""
        self.groups += 1

    def update(self, ended: Any, ctx: Any) -> Any:
        """Misbehave, depending on the mode and the iteration."""
        if self.settings.mode == "plain":
            return PolicyUpdate(
                data=b"{}", format="plain/1", metrics={"groups": float(self.groups)}
            )
        if ended.iteration == 0:
            raise RuntimeError("badtrainer failed at the end of iteration 0 (on purpose)")
        if ended.iteration == 1:
            return PolicyUpdate(policy="reinforce", data=b"not weights", format="nonsense/1")
        if ended.iteration == 2:
            return "not an update"
        return None


@hookimpl
def register_trainers(register: Any) -> None:
    """Register the ``badtrainer`` trainer."""
    register("badtrainer", BadTrainer)
