"""envkernel-export: exporters of scored rollouts (trainer role, broadcast).

- ``sft`` appends to ``sft.jsonl`` one line per rollout scoring at least ``min_reward``:
  OpenAI chat ``messages`` (normalised: string ``content``, tool-call ``arguments`` as JSON
  strings) plus the environment's ``tools`` (each tool's ``parameters`` a JSON string by default,
  see ``tools_format``) and
  a ``metadata`` object.
- ``rl`` appends to ``rl.jsonl`` one verl-style row per task (prompt, ground truth, initial and
  expected state) and writes ``rl.parquet`` from those rows when the run ends.

The same distribution has a second plugin, ``export-extra`` (not in the default preset; add it
with ``--plugins +export-extra``), with the ``pairs`` (preference pairs) and ``card`` (dataset
card) components: see :mod:`envkernel_export.extra`.

Every exporter flushes every line as written and drop what they wrote before (by event id and index,
or by task id), so a redelivered group is written once, even after a restart.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import msgspec

from envkernel.errors import InfraError
from envkernel.hookspecs import hookimpl
from envkernel_kit.groups import purpose_of
from envkernel_kit.sink import JsonlSink
from envkernel_schemas import EnvSpec, GroupScored, Task

from .rows import (
    SYSTEM_PROMPT,
    env_tools,
    rl_key,
    rl_row,
    rl_schema,
    rl_table,
    sft_key,
    sft_row,
    shown_tools,
)

__all__ = ["Rl", "RlSettings", "Sft", "SftSettings", "register_trainers"]

PARQUET_BATCH = 2000
"""Rows of ``rl.jsonl`` read and written to ``rl.parquet`` at a time (one row group each)."""


class SftSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``sft`` exporter."""

    min_reward: float = 1.0
    """Keep rollouts scoring at least this."""
    policies: list[str] = msgspec.field(default_factory=list)
    """Keep only these policies' rollouts (empty: every policy)."""
    splits: list[str] = msgspec.field(default_factory=lambda: ["train"])
    """Keep only tasks of these splits."""
    metadata: bool = True
    """Add a ``metadata`` object (ids, score, split) to each line."""
    tools_format: Literal["parameters_json", "json", "openai"] = "parameters_json"
    """How ``tools`` is written. Tool parameter schemas differ in shape across environments, so
    as plain objects they have no one schema that ``datasets`` / ``pyarrow`` can infer.
    ``parameters_json`` (default): the OpenAI tool list with each ``function.parameters`` as a
    JSON string (every line has the same schema; ``json.loads`` it to get the object).
    ``json``: the whole tool list as one JSON string. ``openai``: plain objects, byte-for-byte
    the OpenAI fine-tuning upload format (loads with pyarrow only while the schemas agree)."""
    filename: str = "sft.jsonl"
    """File name in the run folder."""
    fsync: bool = False
    """fsync after every line (survives a machine crash, not only a process crash)."""


class RlSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``rl`` exporter."""

    system_prompt: str = SYSTEM_PROMPT
    """System message of every prompt."""
    agent_name: str = "tool_agent"
    """verl agent loop name."""
    ability: str = "tool-use"
    """verl ability tag."""
    splits: list[str] = msgspec.field(default_factory=lambda: ["train", "heldout"])
    """Export tasks of these splits (``extra_info.split`` tells them apart)."""
    filename: str = "rl.jsonl"
    """JSON-lines file name in the run folder."""
    parquet: str = "rl.parquet"
    """Parquet file name in the run folder ("" to skip it)."""
    fsync: bool = False
    """fsync after every line."""


class _EnvTools:
    """Caches the tool definitions of environments, fetched with ``ctx.env``."""

    def __init__(self) -> None:
        self._envs: dict[str, EnvSpec] = {}

    async def tools(self, task: Task, ctx: Any) -> list[dict[str, Any]]:
        env = self._envs.get(task.env_id)
        if env is None:
            try:
                env = await ctx.env(task.env_id)
                self._envs[task.env_id] = env
            except (
                InfraError
            ):  # the object store did not answer (a server restart): the group comes back later,
                raise  # rather than a row whose tools are guessed from the reference calls
            except Exception as exc:  # keep the data; say what is missing
                ctx.log.warning(
                    "environment unavailable; tools derived from the reference calls",
                    env=task.env_id,
                    error=str(exc),
                )
        return env_tools(env, task)


class Sft:
    """The ``sft`` exporter."""

    Settings = SftSettings

    def __init__(self, settings: SftSettings | None = None) -> None:
        self.settings = settings or SftSettings()
        self._sink: JsonlSink | None = None
        self._tools = _EnvTools()
        self._done: set[str] = set()

    def sink(self, out_dir: Path) -> JsonlSink:
        """The output file."""
        if self._sink is None:
            self._sink = JsonlSink(
                Path(out_dir) / self.settings.filename, sft_key, fsync=self.settings.fsync
            )
        return self._sink

    def keep(self, group: GroupScored) -> list[Any]:
        """The rollouts of ``group`` that go into the file."""
        s = self.settings
        if purpose_of(group) != "train" or (s.splits and group.task.split not in s.splits):
            return []
        return [
            r
            for r in group.rollouts
            if r.reward.score >= s.min_reward
            and not r.reward.error
            and (not s.policies or r.trajectory.policy in s.policies)
        ]

    async def consume(self, group: GroupScored, ctx: Any) -> None:
        """Append the group's good rollouts."""
        if group.id in self._done:
            return
        keep = self.keep(group)
        if keep:
            sink = self.sink(ctx.out_dir)
            tools = await self._tools.tools(group.task, ctx)
            shown = shown_tools(tools, self.settings.tools_format)
            written = sum(
                sink.write(sft_row(group, r, shown, metadata=self.settings.metadata)) for r in keep
            )
            ctx.log.debug("sft rows", task=group.task.id, written=written, kept=len(keep))
        self._done.add(group.id)

    async def finish(self, ctx: Any) -> None:
        """Close the file."""
        if self._sink is not None:
            self._sink.close()


class Rl:
    """The ``rl`` exporter."""

    Settings = RlSettings

    def __init__(self, settings: RlSettings | None = None) -> None:
        self.settings = settings or RlSettings()
        self._sink: JsonlSink | None = None
        self._tools = _EnvTools()

    def sink(self, out_dir: Path) -> JsonlSink:
        """The JSON-lines file."""
        if self._sink is None:
            self._sink = JsonlSink(
                Path(out_dir) / self.settings.filename, rl_key, fsync=self.settings.fsync
            )
        return self._sink

    async def consume(self, group: GroupScored, ctx: Any) -> None:
        """Append the group's task once."""
        s = self.settings
        task = group.task
        if purpose_of(group) != "train" or (s.splits and task.split not in s.splits):
            return
        sink = self.sink(ctx.out_dir)
        if f"task:{task.id}" in sink:
            return
        tools = await self._tools.tools(task, ctx)
        sink.write(
            rl_row(
                task,
                tools,
                system_prompt=s.system_prompt,
                agent_name=s.agent_name,
                ability=s.ability,
            )
        )

    async def finish(self, ctx: Any) -> None:
        """Write ``rl.parquet`` from every row of ``rl.jsonl`` (atomically replaced),
        ``PARQUET_BATCH`` rows at a time: a 20,000-task run's rows all at once took the process from
        0.44 to 1.4 GB at its end."""
        sink = self.sink(ctx.out_dir)
        if not self.settings.parquet:
            sink.close()
            return
        path = Path(ctx.out_dir) / self.settings.parquet
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        import pyarrow.parquet as pq  # only when a file is written

        n, batch = 0, []
        with pq.ParquetWriter(tmp, rl_schema()) as writer:
            for row in sink.rows():
                batch.append(row)
                if len(batch) >= PARQUET_BATCH:
                    writer.write_table(rl_table(batch))
                    n, batch = n + len(batch), []
            if batch or not n:
                writer.write_table(rl_table(batch))
                n += len(batch)
        sink.close()
        os.replace(tmp, path)
        ctx.log.info("rl parquet written", path=str(path), rows=n)


@hookimpl
def register_trainers(register: Any) -> None:
    """Register the ``sft`` and ``rl`` exporters."""
    register("sft", Sft)
    register("rl", Rl)
