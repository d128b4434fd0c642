"""envkernel-chains: a topology-aware sampler of grounded multi-step tasks.

In one sandbox it:

1. **maps the tool graph**: calls every tool a few times from the seed state and adds an edge
   A -> B when an object A returned can fill a parameter of B (``find_customer`` returns a
   customer whose ``id`` fills ``list_orders.customer_id``) — see :mod:`envkernel_chains.links`;
2. **walks it**: picks a chain length (keeping lengths balanced) and a walk of that length
   (favouring signatures it has emitted least), restores the seed snapshot and executes the walk
   for real, each call taking its linked arguments from the previous output and the rest from
   the seed state;
3. **grounds the task**: keeps a chain only if every call succeeded; a chain that declares a
   mutation must change the state (generated columns aside), and its outcome is the changed
   tables before and after; a read-only chain's outcome is 1–3 answer facts from its last output;
4. **phrases the request** with implicit intent (see :mod:`envkernel_chains.phrasing`).

Tasks are deduplicated by (signature, arguments) and get deterministic ids.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import networkx as nx
from envkernel.hookspecs import hookimpl
from envkernel_probe.argsgen import _MISSING, ArgumentBuilder, coerce
from envkernel_probe.naming import is_id_name, singular, tool_parts
from envkernel_schemas import EnvSpec, Outcome, Task, ToolCall, ToolSpec

from .links import Element, Link, distinguishing, extract_elements, link_param
from .outcome import changed_tables, state_outcome
from .phrasing import Phraser, Step

__all__ = ["ChainsSettings", "ChainSampler", "Chains", "Settings", "register_samplers", "split_of", "task_id"]


class ChainsSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``chains`` sampler."""

    tasks_per_env: int = 20
    """Stop after this many tasks per environment."""
    max_len: int = 3
    """Longest chain (calls)."""
    attempts: int = 200
    """Chains tried per environment before giving up."""
    heldout_share: float = 0.2
    """Share of chain signatures held out (by hash of the signature)."""
    persona_share: float = 0.6
    """Chance of phrasing a chain that starts at a person as that person speaking."""
    explore: int = 4
    """Argument sets tried per tool when mapping the tool graph."""


Settings = ChainsSettings
"""Alias: the settings of this plugin's component(s)."""


def task_id(env_id: str, signature: str, calls: list[ToolCall]) -> str:
    """Deterministic task id: hash of the environment, the signature and the arguments."""
    key = json.dumps([[c.name, c.arguments] for c in calls], sort_keys=True, default=str)
    return "t" + hashlib.blake2b(f"{env_id}\x1f{signature}\x1f{key}".encode(), digest_size=10).hexdigest()


def split_of(signature: str, heldout_share: float) -> str:
    """``heldout`` for about ``heldout_share`` of signatures (by hash), else ``train``."""
    h = int.from_bytes(hashlib.blake2b(signature.encode(), digest_size=8).digest(), "big")
    return "heldout" if h / 2**64 < heldout_share else "train"


def describable(e: Element) -> bool:
    """True when a person can single ``e`` out (and its parents) among its siblings."""
    while e is not None:
        if distinguishing(e) is None:
            return False
        e = e.parent  # type: ignore[assignment]
    return True


class ChainSampler:
    """Samples chains over one environment (the state machine behind :class:`Chains`)."""

    def __init__(self, env: EnvSpec, settings: ChainsSettings, rng: random.Random, seed_state: dict[str, list[dict[str, Any]]]) -> None:
        self.env = env
        self.s = settings
        self.rng = rng
        self.seed_state = seed_state
        self.tables = list(seed_state)
        self.tools: dict[str, ToolSpec] = {t.name: t for t in env.tools}
        self.builder = ArgumentBuilder(seed_state)
        self.graph: nx.DiGraph = nx.DiGraph()
        self.sig_counts: Counter[str] = Counter()
        self.len_counts: Counter[int] = Counter()
        self.seen: set[tuple[str, str]] = set()
        self.rejected: Counter[str] = Counter()
        self._walks: dict[int, list[tuple[str, ...]]] = {}

    # -- the tool graph ------------------------------------------------------------------

    def add_edges(self, tool: ToolSpec, value: Any) -> None:
        """Add an edge from ``tool`` to every tool one of its output elements can feed."""
        els = [e for e in extract_elements(value, tool.name, self.tables, 0) if describable(e)]
        for other in self.tools.values():
            if other.name == tool.name:
                continue
            props = (other.parameters or {}).get("properties") or {}
            params = sorted(set(props))
            for p in params:
                if any(link_param(p, other.name, e, self.tables) is not None for e in els):
                    data = self.graph.get_edge_data(tool.name, other.name) or {"params": set()}
                    data["params"].add(p)
                    self.graph.add_edge(tool.name, other.name, **data)

    async def explore(self, sb: Any, seed: str) -> nx.DiGraph:
        """Call each tool a few times from the seed state and build the tool graph."""
        for tool in self.tools.values():
            self.graph.add_node(tool.name, ok=False)
        for tool in self.tools.values():
            for args in self.builder.candidates(tool, self.rng, self.s.explore):
                res = await sb.call(tool.name, args)
                await sb.restore(seed)
                if res.ok:
                    self.graph.nodes[tool.name]["ok"] = True
                    self.add_edges(tool, res.value)
        dead = [n for n, d in self.graph.nodes(data=True) if not d.get("ok")]
        self.graph.remove_nodes_from(dead)
        self._walks.clear()
        return self.graph

    def walks(self, length: int, cap: int = 50_000) -> list[tuple[str, ...]]:
        """Walks of ``length`` tools over the graph (no tool twice in a row), at most ``cap``."""
        if length in self._walks:
            return self._walks[length]
        out: list[tuple[str, ...]] = []
        nodes = sorted(self.graph.nodes)

        def dfs(path: tuple[str, ...]) -> None:
            if len(out) >= cap:
                return
            if len(path) == length:
                out.append(path)
                return
            for nxt in sorted(self.graph.successors(path[-1])):
                if nxt != path[-1]:
                    dfs(path + (nxt,))

        for n in nodes:
            dfs((n,))
        self._walks[length] = out
        return out

    def pick_walk(self) -> tuple[str, ...] | None:
        """A walk of the least-served length, favouring signatures emitted least."""
        lengths = [n for n in range(1, max(1, self.s.max_len) + 1) if self.walks(n)]
        if not lengths:
            return None
        low = min(self.len_counts[n] for n in lengths)
        length = self.rng.choice([n for n in lengths if self.len_counts[n] == low])
        walks = self.walks(length)
        weights = [1.0 / (1 + self.sig_counts[">".join(w)]) ** 2 for w in walks]
        return self.rng.choices(walks, weights=weights, k=1)[0]

    # -- one chain -----------------------------------------------------------------------

    def link_args(self, steps: list[Step], tool: ToolSpec, final: bool) -> tuple[dict[str, Any], dict[str, Link]] | None:
        """Arguments for the next call: linked from the previous output (at least one), else the state."""
        props: dict[str, Any] = (tool.parameters or {}).get("properties") or {}
        required = set((tool.parameters or {}).get("required") or [])
        rng = self.rng

        def links_from(e: Element, params: list[str]) -> dict[str, Link]:
            got: dict[str, Link] = {}
            for p in params:
                link = link_param(p, tool.name, e, self.tables)
                if link is None:
                    continue
                v = coerce(link.value, props.get(p) or {})
                if v is _MISSING:
                    continue
                link.value = v
                got[p] = link
            return got

        options: list[tuple[Element, dict[str, Link]]] = []
        weights: list[float] = []
        for e in steps[-1].elements:
            if not describable(e):
                continue
            got = links_from(e, list(props))
            if got:
                options.append((e, got))
                weights.append(3.0 if e.parent is None else 1.0)
        if not options:
            return None
        _e, links = rng.choices(options, weights=weights, k=1)[0]
        for p in sorted(required - set(links)):
            if not is_id_name(p):
                continue
            earlier = [(e, g) for s in steps[:-1] for e in s.elements if describable(e) and (g := links_from(e, [p]))]
            if earlier:
                links.update(rng.choice(earlier)[1])
        fixed = {p: link.value for p, link in links.items()}
        optional = 0.3 if final and not tool.mutates else 0.0
        cands = self.builder.candidates(tool, rng, 4, fixed=fixed, optional=optional)
        if not cands:
            return None
        return rng.choice(cands), links

    async def run_chain(self, sb: Any, seed: str, walk: tuple[str, ...]) -> tuple[list[Step], dict[str, list[dict[str, Any]]]] | None:
        """Execute ``walk`` from the seed state; None when a call fails, cannot be linked, or a mutation is a no-op."""
        await sb.restore(seed)
        steps: list[Step] = []
        current = self.seed_state
        for i, name in enumerate(walk):
            tool = self.tools[name]
            final = i == len(walk) - 1
            if i == 0:
                needs_optional = not (tool.parameters or {}).get("required")
                optional = 0.5 if needs_optional or (final and not tool.mutates) else 0.0
                cands = self.builder.candidates(tool, self.rng, 6, optional=optional)
                if not cands:
                    self.rejected["no_arguments"] += 1
                    return None
                args, links = self.rng.choice(cands), dict[str, Link]()
            else:
                got = self.link_args(steps, tool, final)
                if got is None:
                    self.rejected["no_link"] += 1
                    return None
                args, links = got
            res = await sb.call(name, args)
            if not res.ok:
                self.rejected[f"call_failed:{res.error.code if res.error else '?'}"] += 1
                return None
            if tool.mutates:
                after = await sb.state()
                if not changed_tables(current, after, self.env.generated):
                    self.rejected["no_op"] += 1
                    return None
                current = after
            verb, noun, _t = tool_parts(name, self.tables)
            steps.append(
                Step(
                    tool=tool,
                    verb=verb,
                    noun=noun,
                    args=args,
                    links=links,
                    output=res.value,
                    elements=extract_elements(res.value, name, self.tables, i),
                )
            )
        return steps, await sb.state()

    @staticmethod
    def _stale(e: Element, seen: dict[tuple[str, str], dict[str, Any]]) -> bool:
        if e.row.get("id") is None:
            return False
        prev = seen.get((singular(e.noun), json.dumps(e.row["id"], default=str)))
        return prev is not None and all(k in prev and prev[k] == v for k, v in e.row.items())

    def redundant(self, steps: list[Step]) -> bool:
        """True when a read-only call adds nothing: it finds nothing, it only returns rows an earlier
        call returned (unchanged), or every value the next call took from it was already the call's own
        argument or in the output before it."""
        seen: dict[tuple[str, str], dict[str, Any]] = {}
        for i, step in enumerate(steps):
            tops = [e for e in step.elements if e.parent is None]
            if not step.mutating and not tops and step.output in (None, [], {}, ""):
                return True  # it found nothing
            if i > 0 and not step.mutating and tops and all(self._stale(e, seen) for e in tops):
                return True  # it only shows rows an earlier call already returned, unchanged
            for e in step.elements:
                if e.row.get("id") is not None:
                    seen[(singular(e.noun), json.dumps(e.row["id"], default=str))] = e.row
        for k in range(0, len(steps) - 1):
            if steps[k].mutating:
                continue
            nxt = steps[k + 1]
            from_k = [(p, link) for p, link in nxt.links.items() if link.element.call == k]
            if not from_k:
                continue
            own = {json.dumps(v, sort_keys=True, default=str) for v in steps[k].args.values()}
            if all(json.dumps(link.value, sort_keys=True, default=str) in own for _p, link in from_k):
                return True
            if k > 0 and all(
                any(
                    (alt := link_param(p, nxt.tool.name, e, self.tables)) is not None and alt.value == link.value
                    for e in steps[k - 1].elements
                )
                for p, link in from_k
            ):
                return True
        return False

    def make_task(self, steps: list[Step], final_state: dict[str, list[dict[str, Any]]], sampler: str) -> Task | None:
        """Ground and phrase an executed chain; None (with the reason counted) when it is not a good task."""
        calls = [ToolCall(name=s.tool.name, arguments=s.args) for s in steps]
        signature = ">".join(c.name for c in calls)
        key = json.dumps([c.arguments for c in calls], sort_keys=True, default=str)
        if (signature, key) in self.seen:
            self.rejected["duplicate"] += 1
            return None
        if self.redundant(steps):
            self.rejected["redundant_step"] += 1
            return None
        outcome = state_outcome(self.seed_state, final_state, self.env.generated)
        if outcome is None and any(s.mutating for s in steps):
            self.rejected["no_op"] += 1
            return None
        persona = Phraser.persona_possible(steps) and self.rng.random() < self.s.persona_share
        phrased = Phraser(steps, self.rng, persona=persona).request()
        if phrased is None:
            self.rejected["unphrasable"] += 1
            return None
        text, facts = phrased
        if outcome is None:
            if not facts:
                self.rejected["no_facts"] += 1
                return None
            outcome = Outcome(mutates=False, answer_facts=facts)
        names = [n for n in self.tools if "_" in n]
        if any(re.search(rf"\b{re.escape(n)}\b", text) for n in names):
            self.rejected["names_tool"] += 1
            return None
        self.seen.add((signature, key))
        self.sig_counts[signature] += 1
        self.len_counts[len(calls)] += 1
        return Task(
            id=task_id(self.env.id, signature, calls),
            env_id=self.env.id,
            request=text,
            calls=calls,
            outputs=[s.output for s in steps],
            outcome=outcome,
            difficulty=round(min(1.0, len(calls) / 6), 4),
            split=split_of(signature, self.s.heldout_share),  # type: ignore[arg-type]
            signature=signature,
            sampler=sampler,
        )


class Chains:
    """The ``chains`` sampler (see the module docstring)."""

    Settings = ChainsSettings

    def __init__(self, settings: ChainsSettings | None = None) -> None:
        self.settings = settings or ChainsSettings()

    async def sample(self, env: EnvSpec, ctx: Any) -> AsyncIterator[Task]:
        """Yield up to ``tasks_per_env`` grounded tasks over ``env``."""
        s = self.settings
        rng = ctx.rng("chains", env.id)
        emitted = 0
        async with ctx.sandbox(env) as sb:
            seed = await sb.snapshot()
            seed_state = await sb.state()
            cs = ChainSampler(env, s, rng, seed_state)
            graph = await cs.explore(sb, seed)
            ctx.log.info("tool graph", env=env.id, tools=graph.number_of_nodes(), edges=graph.number_of_edges())
            for _ in range(s.attempts):
                if emitted >= s.tasks_per_env:
                    break
                walk = cs.pick_walk()
                if walk is None:
                    break
                ran = await cs.run_chain(sb, seed, walk)
                if ran is None:
                    continue
                task = cs.make_task(ran[0], ran[1], ctx.component)
                if task is None:
                    continue
                emitted += 1
                yield task
        ctx.log.info("chains sampled", env=env.id, tasks=emitted, lengths=dict(cs.len_counts), rejected=dict(cs.rejected))


@hookimpl
def register_samplers(register: Any) -> None:
    """Register the ``chains`` sampler."""
    register("chains", Chains)
