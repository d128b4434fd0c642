"""envkernel-mysampler: a third-party plugin, written the way a plugin author would.

- the sampler ``mysampler`` proposes one read-only task over the ``shop-v1`` environment: "what is
  product X called?", grounded by a real ``get_product`` call in a sandbox of the run's runner;
- the command ``envkernel mysampler-hello`` (through ``register_commands``).

It records what it saw of its settings in ``<run folder>/mysampler-seen.json`` (the secret only
as a digest), so tests can check that the secret reached the plugin but not ``config.json``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from typing import Any

import click
import msgspec

from envkernel.hookspecs import hookimpl
from envkernel_schemas import EnvSpec, Outcome, Task, ToolCall


class MySamplerSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of ``mysampler``."""

    product_id: str = "prd_0003"
    """The product the task asks about."""
    api_key: str = ""
    """A secret (unused; it must never be written to the run folder)."""
    max_tokens: int = 256
    """Not a secret, although its name contains 'token'."""


class MySampler:
    """Sampler ``mysampler``."""

    Settings = MySamplerSettings

    def __init__(self, settings: MySamplerSettings) -> None:
        self.settings = settings

    async def sample(self, env: EnvSpec, ctx: Any) -> AsyncIterator[Task]:
        s = self.settings
        seen = {
            "api_key_sha256": hashlib.sha256(s.api_key.encode()).hexdigest(),
            "max_tokens": s.max_tokens,
            "env": env.id,
        }
        (ctx.out_dir / "mysampler-seen.json").write_text(json.dumps(seen))
        if env.tool("get_product") is None:
            return
        async with ctx.sandbox(env) as sb:
            result = await sb.call("get_product", {"product_id": s.product_id})
        if not result.ok:
            raise RuntimeError(f"get_product({s.product_id}) failed: {result.error}")
        name = result.value["name"]
        yield Task(
            id=f"mysampler-{env.id}-{s.product_id}",
            env_id=env.id,
            request=f"What is the product {s.product_id} called?",
            calls=[ToolCall(name="get_product", arguments={"product_id": s.product_id})],
            outputs=[result.value],
            outcome=Outcome(mutates=False, answer_facts=[name]),
            signature="get_product",
            difficulty=0.1,
            sampler=ctx.component,
        )


@hookimpl
def register_samplers(register: Any) -> None:
    """Register the ``mysampler`` sampler."""
    register("mysampler", MySampler)


@hookimpl
def register_commands(cli: Any) -> None:
    """Add ``envkernel mysampler-hello``."""

    @cli.command(name="mysampler-hello")
    @click.argument("who", default="world")
    def hello(who: str) -> None:
        """Say hello (a plugin command)."""
        click.echo(f"hello {who} from mysampler")
