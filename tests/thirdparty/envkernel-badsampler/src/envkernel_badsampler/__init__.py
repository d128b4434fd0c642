"""envkernel-badsampler: a sampler whose ``sample`` raises (a failure is data, not a crash)."""

from __future__ import annotations

from typing import Any

from envkernel.hookspecs import hookimpl


class BadSampler:
    """Sampler ``badsampler``: always raises."""

    def sample(self, env: Any, ctx: Any) -> Any:
        raise RuntimeError(f"badsampler exploded on {env.id} (on purpose)")


@hookimpl
def register_samplers(register: Any) -> None:
    """Register the ``badsampler`` sampler."""
    register("badsampler", BadSampler)
