"""envkernel-chains: the topology-aware sampler of grounded multi-step tasks (``chains``).

For each verified environment, in one sandbox:

1. **the tool dependency graph** (:mod:`envkernel_chains.graph`): an edge A -> B when an output
   of A can feed a parameter of B (by the resource an id belongs to, by name, or by format) or A
   writes state B reads. Tool kinds, resources and parameters come from the environment's resource
   model when it has one (:mod:`envkernel_kit.tools`), else from names and a few exploratory
   calls. Written to ``envs/<id>/graph.json`` (node-link) and ``graph.svg`` in the run folder;
2. **backward chaining** (:mod:`envkernel_chains.backward`): a target tool, weighted toward the
   least covered, and for each input a person would not know, a tool that produces it,
   recursively (chains of 1 to ``max_len`` calls, mixing reads and writes);
3. **grounding** (:mod:`envkernel_chains.ground`): the chain is executed from the seed state
   (the seed is snapshotted once and restored before each chain); every argument comes from the
   seed data or from a real earlier output. The task records the calls and outputs, and the
   expected final state (state-changing chains) or the answer facts (read-only chains);
4. **phrasing with implicit intent** (:mod:`envkernel_chains.phrasing`): one goal, not a script
   (a chain that cancels, deletes or edits a row it creates is dropped), no tool names, no ids the
   agent can look up, every entity phrase resolving to exactly one seed row in every field it
   could be read as, questions about rows (counts, superlatives, totals, thresholds) checked
   whole, the reference answer in words, varied wording;
5. **difficulty** (length, branching, writes) and **split** (by chain signature) on every task.

Tasks are yielded one at a time and de-duplicated by (signature, arguments); the kernel's gate
then runs the reference and do-nothing rollouts on each. Per-environment statistics (coverage,
chain lengths, distinct phrasings per kind of operation, rejections) go to
``envs/<id>/sampling.json``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from envkernel.hookspecs import hookimpl
from envkernel_kit.workspace import is_workspace
from envkernel_schemas import EnvSpec, Task

from .backward import ChainSampler
from .core import GraphSampler, SamplerSettings, difficulty_of, sample_env, split_of, task_id

__all__ = [
    "ChainSampler",
    "Chains",
    "ChainsSettings",
    "GraphSampler",
    "SamplerSettings",
    "Settings",
    "difficulty_of",
    "register_samplers",
    "sample_env",
    "split_of",
    "task_id",
]


class ChainsSettings(SamplerSettings, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``chains`` sampler (see :class:`SamplerSettings` for each field)."""


Settings = ChainsSettings
"""Alias: the settings of this plugin's component(s)."""


class Chains:
    """The ``chains`` sampler (see the module docstring)."""

    Settings = ChainsSettings
    sampler_class: type[GraphSampler] = ChainSampler

    def __init__(self, settings: ChainsSettings | None = None) -> None:
        self.settings = settings or ChainsSettings()

    async def sample(self, env: EnvSpec, ctx: Any) -> AsyncIterator[Task]:
        """Yield up to ``tasks_per_env`` grounded tasks over ``env`` (none for a workspace: its
        sampler is ``workspace``)."""
        if is_workspace(env):
            return
        async for task in sample_env(self.sampler_class, self.settings, env, ctx):
            yield task


@hookimpl
def register_samplers(register: Any) -> None:
    """Register the ``chains`` sampler."""
    register("chains", Chains)
