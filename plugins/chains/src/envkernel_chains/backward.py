"""Topology-aware sampling by backward chaining (what EnvFactory's sampler does).

1. **Pick a target tool**, weighted toward the tools the emitted tasks have used least.
2. **For each input a person would not know** (an id parameter), pick a tool that produces it
   (a predecessor in the graph whose output feeds that parameter) and recurse, down to
   ``depth`` levels; an optional owner of a list (``list_orders.customer_id``) is added now and
   then. A producer already in the tree that can feed the input (an attendee row holds its
   ``event_id``) is reused rather than looked up again. Producers are mostly lookups; a
   state-changing one (``create_customer`` feeding ``create_order``) is chosen with weight
   ``mutation_share``.
3. A few trees are grown per target and the one whose size (calls) is the least represented so
   far is kept, which spreads chain lengths over 1 to ``max_len``.
4. The tree runs in post-order: every producer before its consumer.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .core import GraphSampler, is_undo
from .graph import producers, usable_producer
from .ground import PlanNode


@dataclass(eq=False)
class TNode:
    """A node of a planned tree."""

    tool: str
    needs: dict[str, TNode] = field(default_factory=dict)
    children: list[TNode] = field(default_factory=list)
    filters: bool = False
    ways: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def nodes(self) -> list[TNode]:
        """This node and every node below it (each once)."""
        out: list[TNode] = []
        seen: set[int] = set()

        def walk(n: TNode) -> None:
            if id(n) in seen:
                return
            seen.add(id(n))
            for c in n.children:
                walk(c)
            out.append(n)

        walk(self)
        return out


def linearize(root: TNode, plain: set[str] | None = None) -> list[PlanNode]:
    """The tree in execution order (producers first). Leaves that are the same plain read (a tool
    in ``plain``: no inputs, nothing random) are one call."""
    order = root.nodes()
    if plain:
        first: dict[str, TNode] = {}
        alias: dict[int, TNode] = {}
        for n in order:
            if n.tool in plain and not n.needs and not n.filters:
                alias[id(n)] = first.setdefault(n.tool, n)
        for n in order:
            for p, c in list(n.needs.items()):
                if id(c) in alias:
                    n.needs[p] = alias[id(c)]
        order = [n for n in order if alias.get(id(n), n) is n]
    index = {id(n): i for i, n in enumerate(order)}
    return [
        PlanNode(
            tool=n.tool,
            needs={p: [index[id(c)]] for p, c in n.needs.items()},
            filters=n.filters,
            ways=dict(n.ways),
        )
        for n in order
    ]


class ChainSampler(GraphSampler):
    """The ``chains`` sampler: backward chaining from a target tool (see the module docstring)."""

    name = "chains"
    grow_tries = 6

    def targets(self) -> list[str]:
        """Tools that can end a chain (every live tool whose inputs can be found; kept per
        graph)."""
        got = self.__dict__.get("_targets")
        if got is None or got[0] is not self.graph:
            got = self.__dict__["_targets"] = (
                self.graph,
                [n for n in self.graph.nodes if self.graph.nodes[n].get("depth", -1) >= 0],
            )
        return list(got[1])

    def plan(self) -> list[PlanNode] | None:
        targets = self.targets()
        if not targets:
            return None
        if not hasattr(self, "_sizes"):
            self._sizes: dict[str, Counter[int]] = {t: Counter() for t in self.graph.nodes}
            self._misses: Counter[int] = Counter()
        want = self._wanted_length()
        target = self._pick_target(targets, want)
        self.target = target
        trees = self._trees(target, want)
        if not trees:
            return None
        exact = [t for t, size in trees if size == want]
        if want is not None:
            self._misses[want] = 0 if exact else self._misses[want] + 1
        plain = self.plain_reads()
        if exact:
            return linearize(exact[0], plain)
        low = min(self.len_counts[size] for _t, size in trees)
        best = [t for t, size in trees if self.len_counts[size] == low]
        return linearize(self.rng.choice(best), plain)

    def _wanted_length(self) -> int | None:
        """The chain length with the fewest tasks so far, among those not exhausted."""
        lengths = [
            n
            for n in range(1, max(1, self.s.max_len) + 1)
            if self._misses[n] < 400 and self.len_fails[n] < 40
        ]
        return min(lengths, key=lambda n: (self.len_counts[n], n)) if lengths else None

    def _pick_target(self, targets: list[str], want: int | None) -> str:
        """Draw the chain's target: weighted by coverage, by how often it gave chains of the wanted
        length, and up for lists (a list at the end asks about rows: how many, the highest, a
        total, those over a threshold); under a full quota, not a target the quota would drop."""
        self.no_plain_creates = self.quota_full()
        if self.no_plain_creates:  # a create that looks nothing up is a plain create
            targets = [
                t for t in targets if self.infos[t].kind != "create" or any(self._needs_of(t))
            ] or targets
        targets = [
            t for t in targets if not (self.infos[t].mutates and self.kind_full(self.infos[t].kind))
        ] or targets

        def fit(t: str) -> float:
            seen = self._sizes[t]
            if want is None or want in seen:
                return 1.0
            return 0.3 if sum(seen.values()) < 24 else 0.02

        def weight(t: str) -> float:
            listed = self.s.list_target_weight if self.infos[t].kind == "list" else 1.0
            return self.coverage_weight(t, 1.0) * fit(t) * listed

        return self.rng.choices(targets, weights=[weight(t) for t in targets], k=1)[0]

    def _trees(self, target: str, want: int | None) -> list[tuple[TNode, int]]:
        """Up to ``grow_tries`` lookup trees for ``target`` that fit ``max_len``, with their sizes
        (stops at one of the wanted length)."""
        trees: list[tuple[TNode, int]] = []
        for _ in range(self.grow_tries):
            t = self.grow(target, self.s.depth, {target})
            size = len(t.nodes()) if t is not None else 0
            if t is not None and size <= self.s.max_len:
                trees.append((t, size))
                self._sizes[target][size] += 1
                if size == want:
                    break
        return trees

    def plain_reads(self) -> set[str]:
        """Reads with no required input: two of them in one tree are the same call."""
        got = self.__dict__.get("_plain")
        if got is None:
            got = self.__dict__["_plain"] = {
                n
                for n, i in self.infos.items()
                if not i.mutates and not any(p.required for p in i.params.values())
            }
        return got

    @staticmethod
    def chainable(first, then) -> bool:  # type: ignore[no-untyped-def]
        """True when action ``then`` can follow action ``first`` on the same row as one goal: the
        status ``first`` leaves is one ``then`` accepts, and ``then`` does not take the row back to
        where ``first`` started (``freeze`` then ``unfreeze``, ``pin`` then ``unpin``: a change and
        its inverse)."""
        a, b = first.transition or {}, then.transition or {}
        if a.get("field") != b.get("field") or "to" not in a:
            return True
        if "to" in b and (
            a["to"] == b["to"] or b["to"] in (a.get("from") or []) or isinstance(b["to"], bool)
        ):
            return False
        return not b.get("from") or a["to"] in b["from"]

    def born_ok(self, create, action) -> bool:  # type: ignore[no-untyped-def]
        """True when a row fresh from ``create`` is in a status ``action`` accepts."""
        tr = action.transition or {}
        col = tr.get("field")
        if not col:
            return True
        default = self.schema.defaults.get(create.resource or "", {}).get(col, None)
        if default is None or any(p.field == col for p in create.params.values()):
            return True
        if "to" in tr and default == tr["to"]:
            return False
        return not tr.get("from") or default in tr["from"]

    def _needs_of(self, tool: str) -> tuple[list[Any], list[Any]]:
        """(required id parameters, key first; optional ones) of ``tool`` that a producer must
        fill."""
        cache = self.__dict__.setdefault("_needs_cache", {})
        got = cache.get(tool)
        if got is None:
            literal = set(self.graph.graph.get("literal_needs", []))
            info = self.infos[tool]
            req = sorted(
                (p for p in info.needs() if f"{tool}.{p.name}" not in literal),
                key=lambda p: 0 if p.role == "key" else 1,
            )
            opt = [
                p
                for p in info.needs(required_only=False)
                if not p.required and f"{tool}.{p.name}" not in literal
            ]
            got = cache[tool] = (req, opt)
        return got

    @staticmethod
    def edits_new(producer, info, p) -> bool:  # type: ignore[no-untyped-def]
        """True when ``producer`` is a create feeding the key ``p`` of an update or an undo: editing
        or undoing the row the chain creates is not one goal (:meth:`GraphSampler.undoes`)."""
        return bool(
            producer.kind == "create"
            and p.role == "key"
            and (info.kind == "update" or is_undo(info))
        )

    def producers_of(self, tool: str, param: str) -> list[tuple[str, list[dict[str, Any]], int]]:
        """Tools that can produce ``param`` of ``tool`` (static checks done once): (producer, ways,
        depth)."""
        cache = self.__dict__.setdefault("_producers", {})
        key = (tool, param)
        got = cache.get(key)
        if got is not None:
            return got
        g = self.graph
        info = self.infos[tool]
        p = info.params[param]
        by: dict[str, list[dict[str, Any]]] = {}
        for a, way in producers(g, tool, param):
            if a == tool or not usable_producer(g, self.infos, a, way, p.resource):
                continue
            if g.nodes[a].get("depth", -1) >= 0 and self.may_feed(self.infos[a], info, p, way):
                by.setdefault(a, []).append(way)
        got = [(a, ways, g.nodes[a]["depth"]) for a, ways in sorted(by.items())]
        cache[key] = got
        return got

    def may_feed(self, ia: Any, info: Any, p: Any, way: dict[str, Any]) -> bool:
        """True when the producer ``ia`` may fill ``p`` of ``info`` by ``way`` as one goal: a new or
        changed row feeds only a write of itself (not a read, nor by a foreign key); an
        action follows an action it can chain with; a row just cancelled or deleted is not changed
        further (``cancel the event and update it``); a created row is not edited or undone, and
        an action takes it only in the status it is born in."""
        if ia.mutates and (way["link"] != "self" or not info.mutates):
            return False  # nor a read of itself: the change returned the row (``rereads_change``)
        if ia.kind == "action" and info.kind == "action" and not self.chainable(ia, info):
            return False
        if info.mutates and way["link"] == "self" and is_undo(ia):
            return False
        if self.edits_new(ia, info, p):
            return False
        return not (ia.kind == "create" and info.kind == "action" and not self.born_ok(ia, info))

    def echo(self, node: TNode) -> bool:
        """True for a lookup by key whose key came straight from a row already seen (it adds
        nothing)."""
        info = self.infos[node.tool]
        if info.kind != "get":
            return False
        for p in info.params.values():
            if p.role == "key" and p.name in node.needs:
                return any(w["link"] == "self" for w in node.ways.get(p.name, []))
        return False

    def grow(
        self, tool: str, depth_left: int, ancestors: set[str], listed: frozenset[str] = frozenset()
    ) -> TNode | None:
        """A tree that produces every id ``tool`` needs, or None. ``listed``: tables a call above
        this one reads as a list (a producer reading the same table again would be redundant)."""
        rng = self.rng
        g = self.graph
        info = self.infos[tool]
        if info.kind == "list" and info.resource:
            listed = listed | {info.resource}
        node = TNode(tool=tool)
        needs, optional = self._needs_of(tool)
        needs = list(needs) + [p for p in optional if rng.random() < self.s.optional_share]
        key_child: TNode | None = None
        for p in needs:
            reuse = self._reusable(node, info, p)
            if reuse and rng.random() < 0.9:
                reuse.sort(key=lambda c: 0 if c is key_child else 1)
                node.needs[p.name] = reuse[0]
                node.ways[p.name] = g.edges[reuse[0].tool, tool]["feeds"][p.name]
                continue
            cands = self._candidates(tool, p.name, depth_left, ancestors, listed)
            child = self._grow_child(cands, depth_left, ancestors, listed) if cands else None
            if child is None:
                if p.required:
                    return None
                continue
            if self.infos[child.tool].kind == "list" and rng.random() < self.s.optional_share:
                child.filters = True
            node.needs[p.name] = child
            node.ways[p.name] = cands[child.tool]
            node.children.append(child)
            if p.role == "key":
                key_child = child
        return node

    def _reusable(self, node: TNode, info: Any, p: Any) -> list[TNode]:
        """Calls already in ``node``'s tree that can also fill its required ``p`` (an optional
        filter gets its own lookup, never a by-product)."""
        if not node.children or not p.required:
            return []
        g = self.graph
        return [
            c
            for c in node.nodes()
            if c is not node
            and g.has_edge(c.tool, info.name)
            and p.name in g.edges[c.tool, info.name].get("feeds", {})
            and not self.edits_new(self.infos[c.tool], info, p)
        ]

    def _candidates(
        self, tool: str, param: str, depth_left: int, ancestors: set[str], listed: frozenset[str]
    ) -> dict[str, list[dict[str, Any]]]:
        """Producers of ``param`` that fit here (producer -> ways): not an ancestor, shallow enough,
        and not a read of a table a call above already lists."""
        cands: dict[str, list[dict[str, Any]]] = {}
        for a, ways, d in self.producers_of(tool, param):
            if a in ancestors or d > depth_left - 1:
                continue
            ia = self.infos[a]
            if ia.kind in ("list", "get") and ia.resource in listed:
                continue
            cands[a] = ways
        return cands

    def _grow_child(
        self,
        cands: dict[str, list[dict[str, Any]]],
        depth_left: int,
        ancestors: set[str],
        listed: frozenset[str],
    ) -> TNode | None:
        """A subtree under one of ``cands`` (up to three drawn, by coverage and ``mutation_share``),
        or None; not a lookup that echoes a row already seen, nor one as long as ``max_len``."""
        names = sorted(cands)
        # a created row feeding a later call would make a plain create, which the quota drops
        if self.no_plain_creates:
            names = [a for a in names if self.infos[a].kind != "create"]
        weights = [
            self.coverage_weight(a, 1.0) * (self.s.mutation_share if self.infos[a].mutates else 1.0)
            for a in names
        ]
        for _ in range(3):
            if not names:
                break
            k = self.rng.choices(range(len(names)), weights=weights, k=1)[0]
            a = names.pop(k)
            weights.pop(k)
            child = self.grow(a, depth_left - 1, ancestors | {a}, listed)
            if child is not None and not self.echo(child) and len(child.nodes()) < self.s.max_len:
                return child
        return None
