"""What every graph sampler shares: settings, the graph, grounding, phrasing, the task, the stats.

A sampler subclass only decides *which chain to try next* (:meth:`GraphSampler.plan`); the rest
is here. :func:`sample_env` is the loop a sampler plugin runs for one environment: one sandbox,
the seed snapshot taken once and restored before every chain, tasks yielded one at a time (no
list of tasks is ever held), and ``envs/<env_id>/graph.json``, ``graph.svg`` and
``sampling.json`` written into the run folder.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from envkernel_kit.answers import answer_score, stuffed_answer
from envkernel_kit.argsgen import ArgumentBuilder
from envkernel_kit.tools import Schema, schema_of, tool_infos
from envkernel_schemas import EnvSpec, Outcome, Task, ToolCall
from envkernel_schemas.rows import table_digest

from .batch import BatchPlanner
from .graph import build_graph, write_graph
from .ground import Grounder, PlanNode, Rejected, Step
from .links import extract_elements
from .outcome import changed_tables, row_key, same_rows, state_outcome, strip
from .phrasing import Phrased, Phraser, all_refs, check_request, plural_noun, tool_pattern
from .plant import distractors
from .policy import under_policy
from .precision import unasked_values
from .recheck import acted_refs
from .refs import Ref

if TYPE_CHECKING:  # networkx is imported where the graph is built (graph.build_graph), not at load
    import networkx as nx

State = dict[str, list[dict[str, Any]]]


class SamplerSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings shared by the graph samplers (``chains``, ``walk``)."""

    tasks_per_env: int = 20
    """Stop after this many tasks per environment."""
    max_len: int = 6
    """Longest chain (calls)."""
    depth: int = 4
    """Deepest lookup: levels of calls that produce an input of the next (backward chaining)."""
    attempts: int = 0
    """Chains tried per environment before giving up (0: 20 per task wanted, plus 200)."""
    patience: int = 3000
    """Give up after this many chains in a row that gave no new task (the environment is
    exhausted)."""
    heldout_share: float = 0.2
    """Share of chain signatures held out (by hash of the signature)."""
    persona_share: float = 0.5
    """Chance of phrasing a chain that looks a person up as that person speaking."""
    optional_share: float = 0.35
    """Chance of each optional input: a filter, an owner to narrow a list, an optional field to
    write."""
    list_target_weight: float = 6.0
    """Weight of a list tool as the chain's target (against 1 for the others): questions about rows
    (how many, the highest, a total, the rows over a threshold) end with one."""
    batch_share: float = 0.25
    """Chance that a try is a multi-row change goal (``cancel all my held bookings with more than 3
    nights``; :mod:`envkernel_chains.batch`) instead of a chain."""
    hidden_share: float = 0.35
    """Chance that a multi-row goal's numeric condition is held back for the user to reveal
    (``Task.hidden``); 0 in a run with no ``user`` component (nobody could reveal it)."""
    hold_share: float = 0.8
    """Chance that a chain whose request can hold a detail back (who speaks, the quoted name of a
    row) does (:meth:`GraphSampler.hold_back`); 0 in a run with no ``user`` component."""
    superlative_share: float = 0.9
    """Chance of naming a row by a superlative the data decides
    (``my order with the highest total``) when one picks it out."""
    distractor_share: float = 0.6
    """Chance that a task naming a row by its attributes gets 1 to 3 near-duplicates of that row
    planted in its initial state (``Task.planted``; :mod:`envkernel_chains.plant`)."""
    mutation_share: float = 0.35
    """Weight of a state-changing producer (create, then use the new row) against a lookup."""
    explore: int = 3
    """Argument sets tried per tool when mapping the tool graph."""
    tries: int = 4
    """Rows tried per call before the chain is dropped."""
    write_graph: bool = True
    """Write ``envs/<id>/graph.json`` and ``graph.svg`` into the run folder."""
    time_limit: float = 0.0
    """Seconds of sampling per environment (0: no limit)."""
    refine_base_url: str = ""
    """OpenAI-compatible endpoint of the optional LLM refiner (:mod:`envkernel_kit.refine`; off when
    empty)."""
    refine_model: str = ""
    """Model of the refiner."""
    refine_api_key: str = ""
    """API key of the refiner (never written anywhere)."""
    refine_share: float = 1.0
    """Share of tasks the refiner rewrites."""
    question_shapes: list[str] = msgspec.field(default_factory=list)
    """Ask only these shapes of question about the rows a list returned (empty: all of
    ``envkernel_chains.phrasing.QUESTION_SHAPES``: count, total, each, sorted, superlative,
    condition, which, count_if, top_value, average, count_which, total_which, superlative_which,
    difference)."""
    plain_create_share: float = 0.5
    """Most of an environment's tasks that may be plain creates (a chain that creates a row and
    names no row by a superlative or a threshold): creates never run out (their values are
    generated), so at scale they would crowd out the goals with a condition; past this share (after
    the first 50 tasks) such a chain is dropped (``plain_create_quota``) and the sampler tries
    another. 1: no limit."""
    kind_share: float = 0.28
    """Most of an environment's tasks (past its first 50) whose last change is of one kind
    (``create``, ``update``, ``delete``, ``action``: the request's ``kind``), so that no kind crowds
    out the others at scale (reads come in many kinds: ``get``, ``list``, ``count``, ``total``...);
    an environment whose tools make one kind of change allows it half. Past it, the planner picks
    another target and a chain whose last change is of that kind is dropped before its last call
    (``kind_quota``). 1: no limit."""
    questions_per_chain: int = 4
    """Most distinct questions asked about the same read-only calls (how many, the highest, a total,
    the rows over a threshold...; each a task of its own): a chain drawn again asks what was not
    asked, so one grounded chain gives more tasks. One more is allowed per 200 tasks emitted, so a
    small run explores new chains first. Two questions whose checks (answer facts and rows) are the
    same count as one; the kernel's gate de-duplicates by calls *and* what is asked
    (``envkernel.stages.task_key``), so each further question is a task of its own. 1: one question
    per chain."""


UNDO_VERBS = frozenset(
    {
        "cancel",
        "delete",
        "remove",
        "revoke",
        "archive",
        "close",
        "reject",
        "decline",
        "void",
        "refund",
    }
)
"""Verbs of an action that undoes a row (a chain must not apply one to a row it created)."""


def is_undo(info: Any) -> bool:
    """True for a tool that undoes a row: a delete, or an action whose verb cancels, removes,
    revokes..."""
    return info.kind == "delete" or (info.verb or "").split(" ")[0] in UNDO_VERBS


def inverse(first: Any, then: Any) -> bool:
    """True when action ``then`` takes a row back to where action ``first`` found it (``freeze``
    then ``unfreeze``, ``pin`` then ``unpin``), by their transitions."""
    a, b = first.transition or {}, then.transition or {}
    if (
        not a
        or a.get("field") != b.get("field")
        or "to" not in a
        or "to" not in b
        or a["to"] == b["to"]
    ):
        return False
    return b["to"] in (a.get("from") or []) or isinstance(b["to"], bool)


def plain_create(steps: list[Step]) -> bool:
    """True for a chain that creates a row and names no row by a superlative the data decides
    (``Ref.best``) or by a threshold (``on or before``, ``with more than 3 nights``)."""
    if not any(s.mutating and s.info.kind == "create" for s in steps):
        return False
    refs: list[Ref] = []
    for s in steps:
        for r in s.refs.values():
            all_refs(r, refs)
    return not any(
        r.best is not None or any(op not in ("eq", "in_set") for _k, op, _v in r.where)
        for r in refs
    )


def rereads_change(steps: list[Step]) -> bool:
    """True when the chain ends by reading one row that its last change already returned (``pin``
    the message, then ``get`` it): nothing changed it since, so the read adds nothing and the gate's
    ``drop_last`` mutant would pass."""
    last = steps[-1]
    if last.mutating or last.info.kind != "get" or last.target is None:
        return False
    change = next((s for s in reversed(steps[:-1]) if s.mutating), None)
    return (
        change is not None
        and change.target is not None
        and change.target.key == last.target.key
        and isinstance(change.output, dict)
    )


CHANGE_KINDS = ("create", "update", "delete", "action", "other")
"""Kinds of a mutating tool; a change task's kind is the kind of its last change."""


def change_kind(steps: list[Step]) -> str | None:
    """The kind of the chain's last change (its request's ``kind``), None for a read-only chain."""
    return next((s.info.kind for s in reversed(steps) if s.mutating), None)


def rereads_row(steps: list[Step]) -> bool:
    """True when the chain ends by reading one row exactly as an earlier call returned it (a list
    showed every field the ``get`` gives, and nothing changed since): the read adds nothing."""
    last = steps[-1]
    if last.mutating or last.info.kind != "get" or not isinstance(last.output, dict):
        return False
    for lk in last.links.values():
        if lk.kind != "self" or any(s.mutating for s in steps[lk.source : len(steps) - 1]):
            continue
        row = lk.element.row
        if all(k in row and row[k] == v for k, v in last.output.items()):
            return True
    return False


_NEW = object()
"""Marks a value taken from a call that was not known before it."""


HOLD_NAME = ("I'm {n}.", "This is {n}.", "My name is {n}.", "It's {n} here.", "I am {n}.")
"""How a user who held back who they are says it when asked."""
HOLD_ROW = (
    'I mean the {noun} "{x}".',
    'The {noun} "{x}".',
    'It\'s the {noun} called "{x}".',
    'That would be the {noun} "{x}".',
)
"""How a user who held back which row they mean says it when asked."""
_QUOTED_ROW = re.compile(r'\bthe ([a-z]+) "([^"]+)"')


def _k(v: Any) -> Any:
    if isinstance(
        v, (dict, list)
    ):  # object and array arguments: compared (and hashed) as JSON text
        return json.dumps(v, sort_keys=True, default=str)
    return v.lower() if isinstance(v, str) else v


def data_edges(graph: nx.DiGraph) -> int:
    """Edges of the tool graph along which an output feeds a parameter."""
    return sum(1 for *_e, d in graph.edges(data=True) if d.get("feeds"))


def task_id(env_id: str, signature: str, calls: list[ToolCall]) -> str:
    """Deterministic task id: hash of the environment, the signature and the arguments."""
    key = json.dumps([[c.name, c.arguments] for c in calls], sort_keys=True, default=str)
    return (
        "t"
        + hashlib.blake2b(f"{env_id}\x1f{signature}\x1f{key}".encode(), digest_size=10).hexdigest()
    )


def split_of(signature: str, heldout_share: float) -> str:
    """``heldout`` for about ``heldout_share`` of signatures (by hash), else ``train``."""
    h = int.from_bytes(hashlib.blake2b(signature.encode(), digest_size=8).digest(), "big")
    return "heldout" if h / 2**64 < heldout_share else "train"


def difficulty_of(steps: list[Step]) -> float:
    """Difficulty in [0, 1] from the chain's length, its branching and its writes.

    ``0.6·(L−1)/5 + 0.25·min(B, 2)/2 + 0.15·min(W, 2)/2`` with L calls, B branchings (calls that
    take inputs from two or more earlier calls, counted once per extra source) and W calls that
    change state.
    """
    n = len(steps)
    branching = sum(max(0, len({lk.source for lk in s.links.values()}) - 1) for s in steps)
    writes = sum(1 for s in steps if s.mutating)
    d = 0.6 * (n - 1) / 5 + 0.25 * min(branching, 2) / 2 + 0.15 * min(writes, 2) / 2
    return round(min(1.0, max(0.0, d)), 4)


class GraphSampler:
    """Samples grounded tasks over one environment; subclasses choose the chains (:meth:`plan`)."""

    name = "graph"

    def __init__(
        self,
        env: EnvSpec,
        settings: SamplerSettings,
        rng: random.Random,
        seed_state: State,
        component: str = "",
    ) -> None:
        self.env = env
        self.s = settings
        self.rng = rng
        self.seed_state = seed_state
        self.component = component or self.name
        self.schema: Schema = schema_of(env, seed_state)
        self.infos = tool_infos(env, self.schema)
        self.graph: nx.DiGraph = build_graph({}, self.schema, {}, set())
        self.observed: dict[str, set[str]] = {}
        self.dead: set[str] = set()
        self.unexplored: set[str] = set()
        self.used: Counter[str] = Counter()
        self.fails: Counter[str] = Counter()
        """Chains in a row that ended at this tool and gave no task."""
        self.len_fails: Counter[int] = Counter()
        """Chains in a row of this length that gave no task (a length whose tasks are used up is
        skipped for a while)."""
        self.target: str | None = None
        """The tool the current plan ends at (set by :meth:`plan`)."""
        self.len_counts: Counter[int] = Counter()
        self.sig_counts: Counter[str] = Counter()
        self.rejected: Counter[str] = Counter()
        self.phrasings: dict[str, set[str]] = {}
        self.requests: Counter[str] = Counter()
        self.splits: Counter[str] = Counter()
        self.refined: Counter[str] = Counter()
        """Refiner verdicts: ``refined``, or why the original request was kept."""
        self.described: dict[str, list[Ref]] = {}
        """Task id -> the described references of its chain, kept for the refiner's re-check (only
        when a refiner is set)."""
        self.planting: Counter[str] = Counter()
        """Distractor planting: ``planted``, or why a task that was tried kept the seed state
        alone."""
        self._seen: set[bytes] = set()
        self.seed_rows: dict[str, Counter[Any]] = {}
        """The seed state's tables as multisets of rows (``outcome.changed_tables``'s ``known``),
        counted once."""
        from .phrasing import QUESTION_SHAPES

        unknown = sorted(set(settings.question_shapes) - set(QUESTION_SHAPES))
        if unknown:
            raise ValueError(
                f"chains.question_shapes: unknown shape(s) {', '.join(unknown)}; the shapes "
                f"are {', '.join(QUESTION_SHAPES)}"
            )
        self._shapes = frozenset(settings.question_shapes)
        self.plain_creates = 0
        """Emitted tasks that are plain creates (see ``plain_create_share``)."""
        self._questions: set[bytes] = set()
        """Digests of (calls, answer facts and rows) of the read-only tasks emitted: what the
        kernel's ``task_key`` tells apart, so a further question the gate would call a duplicate is
        dropped here."""
        self._asked: dict[bytes, set[str]] = {}
        """Read-only calls (their digest) -> the keys of the questions already asked about them."""
        self.attempts = 0
        self._emitted_at = 0  # attempts made when the last task was emitted
        self.emitted = 0
        self.no_plain_creates = False
        """True while planning under a full plain-create quota (no create feeds a later call, see
        :meth:`quota_full`)."""
        self.batch_tries = 0
        self.batch_wins = 0
        self.grounder: Grounder | None = None
        self.batch = BatchPlanner({}, self.schema, seed_state, rng)
        self.tool_names = [t.name for t in env.tools]
        self._tool_pattern = tool_pattern(self.tool_names)

    # -- the graph
    # -----------------------------------------------------------------------------------

    async def explore(self, sb: Any, seed: str) -> nx.DiGraph:
        """Call each tool a few times from the seed state, then build the tool graph."""
        builder = ArgumentBuilder(self.seed_state)
        for spec in self.env.tools:
            info = self.infos[spec.name]
            ok = False
            for args in builder.candidates(spec, self.rng, max(1, self.s.explore)):
                res = await sb.call(spec.name, args)
                if res.ok:
                    ok = True
                    for e in extract_elements(
                        res.value, spec.name, self.schema.tables, 0, set(self.schema.keys.values())
                    ):
                        if e.parent is None:
                            self.observed.setdefault(spec.name, set()).update(e.row)
                    if not info.from_model:
                        if isinstance(res.value, list) and not spec.mutates and info.kind == "get":
                            info.kind = "list"
                        if spec.mutates:
                            after = await sb.state()
                            info.writes |= set(
                                changed_tables(self.seed_state, after, self.env.generated)
                            )
                if spec.mutates or not ok:
                    await sb.restore(seed)
            if (
                not ok
            ):  # the verifier kept it: keep it (the exploration's guesses may just have clashed)
                self.unexplored.add(spec.name)
        return self.build()

    def build(self) -> nx.DiGraph:
        """(Re)build the graph from what is known."""
        self.graph = build_graph(self.infos, self.schema, self.observed, self.dead)
        lookupable = set(self.graph.graph.get("lookupable", []))
        self.grounder = Grounder(
            self.env,
            self.infos,
            self.schema,
            self.seed_state,
            lookupable,
            self.rng,
            tries=self.s.tries,
            optional_share=self.s.optional_share,
        )
        self.grounder.seed_rows = (
            self.seed_rows
        )  # the same seed state: its rows counted once for both
        self.grounder.resolver.rng = self.rng
        self.grounder.resolver.superlative_share = self.s.superlative_share
        self.batch = BatchPlanner(
            self.infos, self.schema, self.seed_state, self.rng, hidden_share=self.s.hidden_share
        )
        return self.graph

    # -- one chain
    # ---------------------------------------------------------------------------------------

    def plan(self) -> list[PlanNode] | None:
        """The next chain to try (subclasses)."""
        raise NotImplementedError

    def coverage_weight(self, tool: str, power: float = 2.0) -> float:
        """Weight of a tool when choosing: the fewer emitted tasks use it, the higher; a tool whose
        recent chains all failed fades (so one hard tool cannot starve the others)."""
        return 1.0 / (1.0 + self.used[tool]) ** power / (1.0 + self.fails[tool] / 4.0) ** 2

    def _outcome(self, tool: str | None, won: bool) -> None:
        if not tool:
            return
        if won:
            self.fails[tool] //= 2  # halved, not reset: a tool that rarely works stays faded
        else:
            self.fails[tool] += 1

    async def attempt(self, sb: Any, seed: str) -> Task | None:
        """Plan, ground, phrase and check one chain; None (with the reason counted) when it
        fails."""
        self.attempts += 1
        if self.attempts % 1000 == 0:
            self.len_fails.clear()  # try exhausted lengths again now and then
        self.target = None
        if self.batch.actions and self.rng.random() < self.s.batch_share * self.batch_promise():
            self.batch_tries += 1
            task = await self.batch_attempt(sb, seed)
            self.batch_wins += task is not None
            return task
        plan = self.plan()
        if not plan:
            self.rejected["no_plan"] += 1
            self._outcome(self.target, False)
            return None
        assert self.grounder is not None
        last = plan[-1].tool
        n = len(plan)
        why = self.plan_undoes(plan)
        if (
            why
        ):  # known before any call: the chain would act on a row it creates (see :meth:`undoes`)
            self.attempts -= (
                1  # not a chain tried against the sandbox (``patience`` still bounds these)
            )
            self.rejected[why] += 1
            self._outcome(self.target or last, False)
            self.len_fails[n] += 1
            return None
        if (
            self.quota_full()
            and any(self.infos[nd.tool].kind == "create" for nd in plan)
            and self.rng.random() < 0.75
        ):
            # most such chains would be plain creates, dropped after grounding: skip three in four
            # before any call
            self.attempts -= 1  # not tried against the sandbox (``patience`` still bounds these)
            self.rejected["plain_create_quota"] += 1
            self._outcome(self.target or last, False)
            return None
        try:
            steps, final = await self.grounder.run(sb, seed, plan, self.dropped)
        except Rejected as r:
            self.rejected[r.reason] += 1
            self._outcome(self.target or last, False)
            self.len_fails[n] += 1
            return None
        task = self.make_task(steps, final)
        if task is not None and self.s.distractor_share > 0:
            task = await self.plant(sb, seed, task, steps)
        self._outcome(self.target or last, task is not None)
        if task is None:
            self.len_fails[n] += 1
        else:
            self.len_fails[n] = 0
        return task

    def batch_promise(self) -> float:
        """How much of ``batch_share`` to spend on multi-row goals: all of it for the first 40 tries
        and while at least one try in four gives a task, less as they fail (an environment whose
        rows rarely make such a goal spends its tries on chains instead; one in 50 is always kept,
        so a goal still found now and then lifts it back)."""
        if self.batch_tries < 40:
            return 1.0
        return max(0.02, min(1.0, 4 * (self.batch_wins + 1) / (self.batch_tries + 4)))

    async def batch_attempt(self, sb: Any, seed: str) -> Task | None:
        """One multi-row change goal (:mod:`envkernel_chains.batch`), executed for real; None when
        it fails."""
        goal = self.batch.plan(persona=self.rng.random() < self.s.persona_share)
        if goal is None:
            self.rejected["batch_no_goal"] += 1
            return None
        calls = [ToolCall(name=n, arguments=a) for n, a in goal.calls]
        digest = hashlib.blake2b(
            json.dumps(["batch", goal.calls], sort_keys=True, default=str).encode(), digest_size=12
        ).digest()
        if digest in self._seen:
            self.rejected["duplicate"] += 1
            return None
        g = self.grounder
        assert g is not None
        if g.dirty:
            await sb.restore(seed)
            g.dirty = False
        outputs = await self._replay(sb, calls)
        if outputs is None:
            self.rejected["batch_call_failed"] += 1
            return None
        if not self._lists_every_row(goal.rows, calls, outputs):
            self.rejected["batch_unlisted"] += 1  # the lookup does not show every row (a page...)
            return None
        outcome = state_outcome(
            self.seed_state, await sb.state(), self.env.generated, self.seed_rows
        )
        if outcome is None:
            self.rejected["no_op"] += 1
            return None
        text = goal.request
        why = self._batch_words(text, calls)
        if why:
            self.rejected[why] += 1
            return None
        self._seen.add(digest)
        outcome = msgspec.structs.replace(outcome, answer=goal.answer)
        return self._emit(
            calls,
            outputs,
            outcome,
            text,
            goal.kind,
            text,
            round(min(1.0, 0.3 + 0.1 * len(calls)), 4),
            hidden=goal.hidden,
            persona=goal.persona,
        )

    async def _replay(self, sb: Any, calls: list[ToolCall]) -> list[Any] | None:
        """The outputs of ``calls`` made in the sandbox in turn; None when one fails."""
        g = self.grounder
        assert g is not None
        outputs: list[Any] = []
        for c in calls:
            res = await sb.call(c.name, c.arguments)
            g.calls += 1
            g.dirty = g.dirty or self.infos[c.name].mutates
            if not res.ok:
                return None
            outputs.append(res.value)
        return outputs

    def _lists_every_row(self, rows: list[Any], calls: list[ToolCall], outputs: list[Any]) -> bool:
        """True when the batch's lookup (the call before its changes) shows every row it changes."""
        listed = outputs[len(calls) - len(rows) - 1]
        if not isinstance(listed, list):
            return not rows
        key = self.schema.key(self.infos[calls[-1].name].resource)
        seen = {str(r.get(key)) for r in listed if isinstance(r, dict)}
        return {str(k) for k in rows} <= seen

    def _batch_words(self, text: str, calls: list[ToolCall]) -> str | None:
        """Why a batch's request may not be asked (it names a tool, or says a raw id), or None."""
        low = text.lower()
        if self._tool_pattern is not None and self._tool_pattern.search(low):
            return "names_tool"
        for c in calls:
            params = self.infos[c.name].params
            for k, v in c.arguments.items():
                p = params.get(k)
                if p is not None and p.is_id and len(str(v)) >= 3 and str(v).lower() in low:
                    return "raw_id"
        return None

    def whole_state(self, task: Task) -> Task:
        """The task with the digest of every table its reference leaves unchanged
        (``Outcome.unchanged``: the seed's rows plus the task's planted ones, generated columns
        removed), so that a rollout that changes anything the request did not ask for fails."""
        o = task.outcome
        if o.check:
            return task
        initial: State = {t: list(rows) for t, rows in self.seed_state.items()}
        for p in task.planted:
            initial.setdefault(p.table, []).append(p.row)
        gen = self.env.generated
        keep = [t for t in initial if t not in o.expected_state]
        return msgspec.structs.replace(
            task,
            outcome=msgspec.structs.replace(
                o,
                unchanged={t: table_digest(initial[t], gen.get(t, [])) for t in keep},
                generated={t: list(gen[t]) for t in keep if gen.get(t)},
            ),
        )

    async def plant(self, sb: Any, seed: str, task: Task, steps: list[Step]) -> Task:
        """The task with near-duplicates of the row its request names planted in its initial state
        (:func:`envkernel_chains.plant.distractors`), its outputs and outcome those of the reference
        replayed from the seed plus them; as it was when no copy fits or the reference no longer
        does the same from there (the reason is counted in ``sampling.json``, ``planting``)."""
        rng = random.Random(
            f"plant/{task.id}"
        )  # its own stream: planting never changes which tasks are sampled
        if rng.random() >= self.s.distractor_share:
            return task
        o = task.outcome
        rows = distractors(
            steps,
            self.schema,
            self.seed_state,
            rng,
            answered=None if o.mutates else list(o.answer_facts),
        )
        if not rows:
            self.planting["no_near_duplicate"] += 1
            return task
        g = self.grounder
        assert g is not None
        await sb.restore(seed)
        g.dirty = True
        planted = msgspec.structs.replace(task, planted=rows)
        try:
            await sb.patch(planted.seed_patch())
        except Exception:
            self.planting["patch_refused"] += 1
            return task
        initial = await sb.state() if o.mutates else None
        outputs = await self._replay(sb, task.calls)
        if outputs is None:
            self.planting["reference_failed"] += 1
            return task
        if not o.mutates:
            if outputs[-1] != task.outputs[-1]:  # the copies are in the rows the question is about
                self.planting["changes_answer"] += 1
                return task
            return msgspec.structs.replace(planted, outputs=outputs)
        assert initial is not None
        got = state_outcome(initial, await sb.state(), self.env.generated)
        if got is None or not self._same_change(got, o, rows):
            self.planting["changes_outcome"] += 1
            return task
        self.planting["planted"] += 1
        return msgspec.structs.replace(
            planted, outputs=outputs, outcome=msgspec.structs.replace(got, answer=o.answer)
        )

    def _same_change(self, got: Outcome, o: Outcome, rows: list[Any]) -> bool:
        """True when the reference made from the planted state the change it made from the seed
        (the same tables, the same rows), and left the planted copies untouched."""
        if set(got.expected_state) != set(o.expected_state):
            return False
        for t, rows_after in got.expected_state.items():
            gen = self.env.generated.get(t, [])
            mine = {row_key(r) for p in rows if p.table == t for r in strip([p.row], gen)}
            if len([r for r in rows_after if row_key(r) in mine]) != len(mine):
                return False
            if not same_rows(
                [r for r in rows_after if row_key(r) not in mine], o.expected_state[t]
            ):
                return False
        return True

    async def refine(self, refiner: Any, task: Task) -> Task:
        """The task with the refiner's rewrite of its request when every check passes (each entity
        phrase re-resolved against the task's initial state, :mod:`envkernel_chains.recheck`), else
        as it was."""
        from envkernel_kit.refine import must_keep, must_not_show

        from .recheck import entities

        literals, ids = [], []
        for c in task.calls:
            params = self.infos[c.name].params
            for k, v in c.arguments.items():
                (ids if params.get(k) is not None and params[k].is_id else literals).append(v)
        keep = must_keep(task.request, literals, [task.persona.get("name", "")])
        forbid = must_not_show(task.outcome.answer_facts, task.hidden, ids, task.request)
        found = entities(self.described.pop(task.id, []), self.seed_state, task, self.schema)
        r = await refiner.refine(
            task.request, keep=keep, forbid=forbid, tool_pattern=self._tool_pattern, entities=found
        )
        self.refined[r.verdict] += 1
        return (
            msgspec.structs.replace(task, request=r.text, original_request=task.request)
            if r.ok
            else task
        )

    def _emit(
        self,
        calls: list[ToolCall],
        outputs: list[Any],
        outcome: Outcome,
        text: str,
        kind: str,
        skel: str,
        difficulty: float,
        *,
        hidden: list[str] | None = None,
        persona: dict[str, str] | None = None,
        question: str = "",
    ) -> Task:
        """Count an accepted task and build it (``question``: the key of a further question about
        calls already asked about, which keeps its id apart from the first's)."""
        signature = ">".join(c.name for c in calls)
        self.emitted += 1
        self._emitted_at = self.attempts
        self.sig_counts[signature] += 1
        self.len_counts[len(calls)] += 1
        for name in {c.name for c in calls}:
            self.used[name] += 1
        self.phrasings.setdefault(kind, set()).add(skel)
        self.requests[kind] += 1
        split = split_of(signature, self.s.heldout_share)
        self.splits[split] += 1
        return Task(
            id=task_id(self.env.id, signature + (f"?{question}" if question else ""), calls),
            env_id=self.env.id,
            request=text,
            calls=calls,
            outputs=outputs,
            outcome=outcome,
            difficulty=difficulty,
            split=split,  # type: ignore[arg-type]
            signature=signature,
            sampler=self.component,
            hidden=hidden or [],
            persona=persona or {},
        )

    def digest(self, steps: list[Step]) -> bytes:
        """The de-duplication key of a chain: its signature and grounded arguments."""
        signature = ">".join(s.info.name for s in steps)
        return hashlib.blake2b(
            json.dumps([signature, [s.args for s in steps]], sort_keys=True, default=str).encode(),
            digest_size=12,
        ).digest()

    def is_duplicate(self, steps: list[Step]) -> bool:
        """True when an emitted task already has these calls (checked before the final state dump),
        unless they only read and fewer than ``questions_per_chain`` questions were asked about
        them."""
        d = self.digest(steps)
        if d not in self._seen:
            return False
        return (
            any(s.mutating for s in steps)
            or len(self._asked.get(d, ())) >= self.questions_allowed()
        )

    def dropped(self, steps: list[Step]) -> str | None:
        """Why :meth:`make_task` would drop the chain ``steps`` whatever its outputs (a duplicate, a
        useless or repeated call, an undo, a plain create past the quota), or None. It reads only
        the calls' arguments, links and references (and the outputs of the calls before the last),
        so the grounder asks it before the last call and tries another row or value instead of
        making it."""
        if self.is_duplicate(steps):
            return "duplicate"
        why = self.redundant(steps) or self.undoes(steps)
        if why:
            return why
        if self.quota_full() and plain_create(steps):
            return "plain_create_quota"
        return "kind_quota" if self.kind_full(change_kind(steps)) else None

    def quota_full(self) -> bool:
        """True when one more plain create would pass ``plain_create_share`` (never in the first 50
        tasks)."""
        return self.emitted >= 50 and self.plain_creates + 1 > self.s.plain_create_share * (
            self.emitted + 1
        )

    kind_patience = 20
    """Attempts in a row without a task after which :meth:`kind_full` lets one task of a full kind
    through (the other kinds are used up: the share is a preference, never a stall)."""

    def kind_full(self, kind: str | None) -> bool:
        """True when one more task whose last change is of ``kind`` would pass its share (see
        ``kind_share``; never for reads, in the first 50 tasks, nor after ``kind_patience``
        attempts without a task)."""
        if kind is None or self.emitted < 50:
            return False
        if self.attempts - self._emitted_at > self.kind_patience:
            return False
        return self.requests[kind] + 1 > self.kind_cap() * (self.emitted + 1)

    def kind_cap(self) -> float:
        """The share one kind of change may have here: ``kind_share``, or half when the tools make
        one kind of change only."""
        got = self.__dict__.get("_kind_cap")
        if got is None or got[0] is not self.infos:
            kinds = {i.kind for i in self.infos.values() if i.mutates}
            cap = self.s.kind_share if len(kinds) > 1 else max(self.s.kind_share, 0.5)
            got = self.__dict__["_kind_cap"] = (self.infos, cap)
        return float(got[1])

    def questions_allowed(self) -> int:
        """Questions the same read-only calls may have by now (see ``questions_per_chain``)."""
        return max(1, min(self.s.questions_per_chain, 1 + self.emitted // 200))

    def redundant(self, steps: list[Step]) -> str | None:
        """Why a chain has a useless call (None when every call counts): the same call twice, a
        read nothing uses, or a read whose every used value was already known before it."""
        seen = set()
        used: dict[int, list[Any]] = {}
        for s in steps:
            for lk in s.links.values():
                # a foreign key is a relationship only this call shows (unless it echoes the call's
                # own
                # argument); a row's own id may have been seen before
                echo = any(_k(lk.value) == _k(a) for a in steps[lk.source].args.values())
                used.setdefault(lk.source, []).append(
                    lk.value if lk.kind == "self" or echo else _NEW
                )
        known: set[Any] = set()
        for s in steps:
            key = json.dumps([s.info.name, s.args], sort_keys=True, default=str)
            if key in seen:
                return "repeated_call"
            seen.add(key)
            if not s.mutating and s is not steps[-1]:
                vals = used.get(s.index)
                if not vals:
                    return "dangling_read"
                if all(_k(v) in known for v in vals):
                    return "redundant_step"
            known.update(_k(v) for v in s.args.values())
            for e in s.elements:
                if e.parent is None:
                    known.update(
                        _k(v)
                        for v in e.row.values()
                        if not isinstance(v, (dict, list)) and v is not None
                    )
        return "rereads_change" if rereads_change(steps) else None

    def plan_undoes(self, plan: list[PlanNode]) -> str | None:
        """:meth:`undoes` decided from the plan alone: a call that cancels, deletes or edits the
        row whose key only a create call of the same plan can give."""
        for node in plan:
            info = self.infos.get(node.tool)
            if info is None or not info.mutates or info.kind == "create":
                continue
            key = next((p.name for p in info.params.values() if p.role == "key"), None)
            sources = node.needs.get(key or "", [])
            if not sources or not all(
                self.infos[plan[j].tool].kind == "create" for j in sources if j < len(plan)
            ):
                continue
            if is_undo(info):
                return "undoes_new"
            if info.kind == "update":
                return "edits_new"
        return None

    @staticmethod
    def undoes(steps: list[Step]) -> str | None:
        """Why a chain is not one goal (None when it is): it cancels, deletes or edits a row it
        created itself (create-then-cancel reads as a script, and a person would create it right),
        cancels or deletes a row it has just changed, changes a row and then changes it back
        (``freeze`` then ``unfreeze``), or changes a row it has just cancelled."""
        touched: dict[tuple[str, str], list[Any]] = {}
        for s in steps:
            t = s.target
            if not s.mutating or t is None:
                continue
            undo = is_undo(s.info)
            if t.kind == "new" and s.info.kind != "create":
                if undo:
                    return "undoes_new"
                if s.info.kind == "update":
                    return "edits_new"
            before = touched.get(t.key, [])
            if undo and before:
                return "undoes_change"  # changing a row and then cancelling it is not one goal
            if any(inverse(b, s.info) for b in before):
                return "undoes_change"  # a change and then its inverse leaves nothing done
            if any(is_undo(b) for b in before):
                return "changes_undone"
            touched.setdefault(t.key, []).append(s.info)
        return None

    def make_task(self, steps: list[Step], final_state: State | None) -> Task | None:
        """Ground and phrase an executed chain; None (with the reason counted) when it is not a good
        task."""
        calls = [ToolCall(name=s.info.name, arguments=s.args) for s in steps]
        digest = self.digest(steps)
        asked = self._asked.get(digest, set())
        why = self._drop_reason(steps, digest, asked, final_state is not None)
        if why:
            self.rejected[why] += 1
            return None
        plain = plain_create(steps)
        outcome = None
        if final_state is not None:
            outcome = state_outcome(
                self.seed_state, final_state, self.env.generated, self.seed_rows
            )
            if outcome is None:
                self.rejected["no_op"] += 1
                return None
        phrased = Phraser(
            steps, self.rng, persona_share=self.s.persona_share, taken=asked, shapes=self._shapes
        ).request()
        if phrased is None:
            self.rejected["duplicate" if asked else "unphrasable"] += 1
            return None
        bad = check_request(phrased.text, steps, self._tool_pattern)
        if bad:
            self.rejected[bad] += 1
            return None
        question = b""
        if outcome is None:
            read = self._read_outcome(phrased, steps, digest)
            if read is None:
                return None
            outcome, question = read
        else:
            outcome = msgspec.structs.replace(outcome, answer=phrased.answer)
        self._seen.add(digest)
        self.plain_creates += plain
        if final_state is None:
            self._asked.setdefault(digest, set()).add(phrased.key)
            self._questions.add(question)
        text, hidden = self.hold_back(phrased)
        task = self._emit(
            calls,
            [s.output for s in steps],
            outcome,
            text,
            phrased.kind,
            phrased.skeleton,
            difficulty_of(steps),
            persona=phrased.persona,
            question=phrased.key if asked else "",
            hidden=hidden,
        )
        if self.s.refine_base_url:
            self.described[task.id] = acted_refs(steps)
        return task

    def _drop_reason(
        self, steps: list[Step], digest: bytes, asked: set[str], mutates: bool
    ) -> str | None:
        """Why an executed chain is not a task whatever its words (a duplicate, a useless, repeated
        or re-reading call, an undo, a quota passed), or None."""
        if digest in self._seen and (mutates or len(asked) >= self.questions_allowed()):
            return "duplicate"
        why = self.redundant(steps) or self.undoes(steps)
        if why:
            return why
        if rereads_row(steps):
            return "rereads_row"
        if self.quota_full() and plain_create(steps):
            return "plain_create_quota"
        return "kind_quota" if self.kind_full(change_kind(steps)) else None

    def _read_outcome(
        self, phrased: Phrased, steps: list[Step], digest: bytes
    ) -> tuple[Outcome, bytes] | None:
        """A read-only chain's outcome (its answer checks) and the question's digest; None (the
        reason counted) when it has no facts, was asked already, or a stuffed answer passes."""
        if not phrased.facts:
            self.rejected["no_facts"] += 1
            return None
        seeded = unasked_values(steps, self.seed_state, phrased.facts, phrased.rows)
        absent = phrased.absent + [v for v in seeded if v not in phrased.absent]
        outcome = Outcome(
            mutates=False,
            answer_facts=phrased.facts,
            answer_rows=phrased.rows,
            answer_absent=absent,
            answer_ordered=phrased.ordered,
            answer=phrased.answer,
        )
        question = hashlib.blake2b(
            json.dumps(
                [digest.hex(), phrased.facts, phrased.rows, phrased.absent, phrased.ordered],
                sort_keys=True,
                default=str,
            ).encode(),
            digest_size=12,
        ).digest()
        if question in self._questions:
            # another wording of a question already asked about these calls
            self.rejected["same_question"] += 1
            return None
        stuffed = stuffed_answer(phrased.answer, [s.output for s in steps], absent)
        if stuffed is not None and answer_score(outcome, stuffed)[0] >= 1.0:
            # the gate's stuffed mutant would score 1: not a precise check
            self.rejected["imprecise_answer"] += 1
            return None
        return outcome, question

    def hold_back(self, phrased: Phrased) -> tuple[str, list[str]]:
        """The request and what its user holds back: with ``hold_share`` (a run with a user),
        a speaker who names themself only in the opening sentence leaves it out and says who
        they are when asked (``I'm Donna Alexander.``), else a request that names a row by a
        quoted name says "one of the folders" and names it when asked (``I mean the folder
        "Photos".``), each in one of several phrasings (``Task.hidden``)."""
        if self.s.hold_share <= 0:
            return phrased.text, []
        rng = random.Random(phrased.text)  # its own draws: the sampler's stream stays as it was
        held = self._hold_name(phrased, rng) or self._hold_row(phrased.text, rng)
        if held is None or rng.random() >= self.s.hold_share:
            return phrased.text, []
        return held

    def _hold_name(self, phrased: Phrased, rng: random.Random) -> tuple[str, list[str]] | None:
        """The request without the speaker's opening sentence, and who they are (that sentence,
        or their name in a short frame)."""
        text, name = phrased.text, phrased.persona.get("name", "")
        end = text.find(". ")
        if not name or end < 0 or text.count(name) != 1 or text.find(name) > end:
            return None
        rest = text[end + 2 :].strip()
        if not rest:
            return None
        intro = text[: end + 1].removeprefix("Hi, ")
        said = intro[:1].upper() + intro[1:] if rng.random() < 0.5 else ""
        return rest[:1].upper() + rest[1:], [said or rng.choice(HOLD_NAME).format(n=name)]

    def _hold_row(self, text: str, rng: random.Random) -> tuple[str, list[str]] | None:
        """The request with its first quoted row name said as "one of the <rows>", and the row."""
        m = _QUOTED_ROW.search(text)
        if m is None or text.count(f'"{m.group(2)}"') != 1:
            return None
        noun, name = m.group(1), m.group(2)
        vague = f"one of the {plural_noun(noun)}"
        said = rng.choice(HOLD_ROW).format(noun=noun, x=name)
        return text[: m.start()] + vague + text[m.end() :], [said]

    # -- stats
    # ---------------------------------------------------------------------------------------------

    def stats(self, seconds: float) -> dict[str, Any]:
        """What ``sampling.json`` holds for this sampler and environment."""
        tools = self.tool_names
        covered = [n for n in tools if self.used[n]]
        calls = self.grounder.calls if self.grounder else 0
        return {
            "sampler": self.component,
            "env": self.env.id,
            "tasks": self.emitted,
            "attempts": self.attempts,
            "yield": round(self.emitted / self.attempts, 4) if self.attempts else None,
            "seconds": round(seconds, 3),
            "tasks_per_s": round(self.emitted / seconds, 2) if seconds > 0 else None,
            "tool_calls": calls,
            "graph": {
                "tools": self.graph.number_of_nodes(),
                "edges": self.graph.number_of_edges(),
                "data_edges": data_edges(self.graph),
                "dead_tools": sorted(self.dead),
            },
            "tool_coverage": round(len(covered) / len(tools), 4) if tools else None,
            "uncovered_tools": sorted(set(tools) - set(covered)),
            "tool_uses": dict(sorted(self.used.items())),
            "chain_lengths": {str(k): v for k, v in sorted(self.len_counts.items())},
            "unique_chain_shapes": len(self.sig_counts),
            "splits": dict(self.splits),
            "phrasings": {k: len(v) for k, v in sorted(self.phrasings.items())},
            "requests": dict(sorted(self.requests.items())),
            "rejected": dict(self.rejected.most_common()),
            "refiner": dict(self.refined.most_common()),
            "planting": dict(self.planting.most_common()),
        }


def _write_json_merged(path: Path, key: str, value: Any) -> None:
    """Set ``key`` in the JSON object at ``path`` (other samplers' entries are kept)."""
    data: dict[str, Any] = {}
    if path.exists():
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
    data[key] = value
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(path)


def run_settings(settings: SamplerSettings, ctx: Any) -> SamplerSettings:
    """The settings for this run: nothing held back when the run has no ``user`` component
    (nobody could reveal it)."""
    cfg = getattr(ctx, "config", None)
    if not (cfg is not None and cfg.components.get("user")) and (
        settings.hidden_share or settings.hold_share
    ):
        return msgspec.structs.replace(settings, hidden_share=0.0, hold_share=0.0)
    return settings


def make_refiner(s: SamplerSettings) -> Any:
    """The request refiner the settings ask for, else None."""
    if not (s.refine_base_url and s.refine_model):
        return None
    from envkernel_kit.refine import Refiner

    return Refiner(base_url=s.refine_base_url, model=s.refine_model, api_key=s.refine_api_key)


def _log_graph(ctx: Any, gs: GraphSampler, graph: Any, folder: Path | None) -> None:
    """Logs the tool graph, and writes it into the env's folder when asked."""
    env_id = gs.env.id
    ctx.log.info(
        "tool graph",
        env=env_id,
        tools=graph.number_of_nodes(),
        edges=graph.number_of_edges(),
        data_edges=data_edges(graph),
        dead=sorted(gs.dead),
    )
    if gs.s.write_graph and folder is not None:
        try:
            write_graph(graph, folder, title=f"{env_id}: tool dependency graph")
        except OSError as exc:
            ctx.log.warning("could not write the tool graph", env=env_id, error=str(exc))


def _report(
    ctx: Any, gs: GraphSampler, component: str, seconds: float, folder: Path | None
) -> None:
    """Logs what the sampler did, and writes ``sampling.json``."""
    env_id = gs.env.id
    st = gs.stats(seconds)
    ctx.log.info(
        f"{component} sampled",
        env=env_id,
        tasks=gs.emitted,
        attempts=gs.attempts,
        seconds=round(seconds, 2),
        tasks_per_s=st["tasks_per_s"],
        lengths=st["chain_lengths"],
        coverage=st["tool_coverage"],
        rejected=dict(gs.rejected.most_common(6)),
    )
    ctx.log.info(
        "phrasings",
        env=env_id,
        sampler=component,
        distinct=st["phrasings"],
        requests=st["requests"],
    )
    if folder is not None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _write_json_merged(folder / "sampling.json", component, st)
        except OSError as exc:
            ctx.log.warning("could not write sampling stats", env=env_id, error=str(exc))


async def sample_env(
    cls: type[GraphSampler], settings: SamplerSettings, env: EnvSpec, ctx: Any
) -> AsyncIterator[Task]:
    """The sampling loop of one environment (see the module docstring)."""
    s = run_settings(settings, ctx)
    component = ctx.component
    rng = ctx.rng(component, env.id)
    out_dir = ctx.out_dir
    # the kernel's context always has an absolute run folder; a test context may have "."
    folder = Path(out_dir) / "envs" / env.id if Path(out_dir).is_absolute() else None
    t0 = time.perf_counter()
    budget = s.attempts or 20 * s.tasks_per_env + 200
    refiner = make_refiner(s)
    refine_rng = ctx.rng(component, env.id, "refine")
    async with ctx.sandbox(env) as sb:
        seed = await sb.snapshot()
        seed_state = await sb.state()
        gs = cls(env, s, rng, seed_state, component)
        graph = await gs.explore(sb, seed)
        _log_graph(ctx, gs, graph, folder)
        since_new = 0
        while gs.emitted < s.tasks_per_env and gs.attempts < budget and since_new < s.patience:
            if s.time_limit and time.perf_counter() - t0 > s.time_limit:
                break
            task = await gs.attempt(sb, seed)
            if task is None:
                since_new += 1
                continue
            since_new = 0
            if refiner is not None and refine_rng.random() < s.refine_share:
                task = await gs.refine(refiner, task)
            gs.described.pop(task.id, None)
            yield gs.whole_state(under_policy(env, task))
    if refiner is not None:
        await refiner.aclose()
        ctx.log.info("refiner", env=env.id, verdicts=dict(gs.refined))
    _report(ctx, gs, component, time.perf_counter() - t0, folder)
