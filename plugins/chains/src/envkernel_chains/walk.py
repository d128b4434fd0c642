"""The ``walk`` sampler, a random-walk baseline over the tool dependency graph.

It ships in the ``envkernel-chains`` distribution under its own plugin entry point, ``walk``, so
``--plugins +walk,-chains`` selects it as before (the ``envkernel-walk`` distribution is gone). It
shares everything with ``chains`` (:mod:`envkernel_chains`): the tool graph, grounding in one
sandbox from the seed state, phrasing with implicit intent, the checks, difficulty and split.
Only the choice of chain differs:

- ``chains`` chains **backward** from a target tool, planning a producer for every input a person
  would not know and steering lookups toward rows the target can use;
- ``walk`` starts at a tool a person can call with what they know (no id to look up), then
  **walks forward** along data edges: each next tool must take at least one id from the previous
  call's output, and every id it needs from some earlier output. Rows are picked at random among
  those the request can name (no look-ahead), which makes it a baseline: compare yields, lengths
  and coverage in ``envs/<id>/sampling.json``.

    envkernel run --plugins +walk,-chains
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from envkernel.hookspecs import hookimpl
from envkernel_schemas import EnvSpec, Task

from .core import GraphSampler, SamplerSettings, sample_env
from .graph import usable_producer
from .ground import PlanNode

__all__ = ["RandomWalkSampler", "Settings", "Walk", "WalkSettings", "register_samplers"]


class WalkSettings(SamplerSettings, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``walk`` sampler (the same fields as ``chains``; ``depth`` is unused)."""


Settings = WalkSettings
"""Alias: the settings of this plugin's component(s)."""


class RandomWalkSampler(GraphSampler):
    """Random walks over the tool graph (see the module docstring)."""

    name = "walk"

    def starts(self) -> list[str]:
        """Tools a walk can start at: every required id is either absent or not lookupable."""
        literal = set(self.graph.graph.get("literal_needs", []))
        return [
            n
            for n in self.graph.nodes
            if all(f"{n}.{p.name}" in literal for p in self.infos[n].needs())
        ]

    def _feeds(self, src: str, dst: str, param: str) -> bool:
        if not self.graph.has_edge(src, dst):
            return False
        ways = self.graph.edges[src, dst].get("feeds", {}).get(param, [])
        return any(usable_producer(self.graph, self.infos, src, w, None) for w in ways)

    def plan(self) -> list[PlanNode] | None:
        rng = self.rng
        starts = self.starts()
        if not starts:
            return None
        lengths = [n for n in range(1, max(1, self.s.max_len) + 1) if self.len_fails[n] < 40] or [1]
        want = min(lengths, key=lambda n: (self.len_counts[n], rng.random()))
        first = rng.choices(starts, weights=[self.coverage_weight(t, 1.0) for t in starts], k=1)[0]
        self.target = first
        tools = [first]
        nodes = [PlanNode(tool=first)]
        literal = set(self.graph.graph.get("literal_needs", []))
        while len(tools) < want:
            cands = [
                (b, needs)
                for b in sorted(self.graph.successors(tools[-1]))
                if b != tools[-1]
                for needs in [self._step_needs(tools, b, literal)]
                if needs is not None
            ]
            if not cands:
                break
            b, needs = rng.choices(
                cands, weights=[self.coverage_weight(c[0], 1.0) for c in cands], k=1
            )[0]
            tools.append(b)
            nodes.append(PlanNode(tool=b, needs=needs))
        return nodes

    def _step_needs(
        self, tools: list[str], b: str, literal: set[str]
    ) -> dict[str, list[int]] | None:
        """Which earlier calls fill each required id of ``b`` (the latest first), or None when one
        has no producer; the walk's last call must feed ``b`` (an optional input drawn when no
        required one is fed by it)."""
        info = self.infos[b]
        last = len(tools) - 1
        needs: dict[str, list[int]] = {}
        for p in info.needs():
            if f"{b}.{p.name}" in literal:
                continue
            srcs = [j for j in reversed(range(len(tools))) if self._feeds(tools[j], b, p.name)]
            if not srcs:
                return None
            needs[p.name] = srcs
        if not any(last in s for s in needs.values()):
            opt = [
                p
                for p in info.needs(required_only=False)
                if not p.required and self._feeds(tools[last], b, p.name)
            ]
            if not opt:
                return None
            needs[self.rng.choice(opt).name] = [last]
        return needs


class Walk:
    """The ``walk`` sampler (see the module docstring)."""

    Settings = WalkSettings

    def __init__(self, settings: WalkSettings | None = None) -> None:
        self.settings = settings or WalkSettings()

    async def sample(self, env: EnvSpec, ctx: Any) -> AsyncIterator[Task]:
        """Yield up to ``tasks_per_env`` grounded tasks over ``env``."""
        async for task in sample_env(RandomWalkSampler, self.settings, env, ctx):
            yield task


@hookimpl
def register_samplers(register: Any) -> None:
    """Register the ``walk`` sampler."""
    register("walk", Walk)
