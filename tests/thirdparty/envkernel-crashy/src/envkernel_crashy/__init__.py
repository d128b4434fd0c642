"""envkernel-crashy: a policy that makes one real tool call, then raises."""

from __future__ import annotations

from typing import Any

from envkernel.hookspecs import hookimpl


class Crashy:
    """Policy ``crashy``: calls the first reference tool, then raises."""

    async def rollout(self, request: Any, env: Any, ctx: Any) -> Any:
        first = request.task.calls[0]
        await env.call(first.name, dict(first.arguments))
        raise ValueError(f"crashy gave up on {request.task.id} (on purpose)")


@hookimpl
def register_policies(register: Any) -> None:
    """Register the ``crashy`` policy."""
    register("crashy", Crashy)
