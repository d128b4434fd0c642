"""The learner's model, as pure functions: features, action probabilities, sampling, gradients.

The policy is a linear softmax over the next action: one of the offered tools, or ``STOP``.
The state at step t is the task's request (its words), the tool called at step t−1, the step
number and the set of tools already called. Two kinds of features, both strings:

- *state* features (words, previous tool, step, tools called), each with a weight per action;
- *shared* features of a (state, action) pair, with one weight for every action
  (``weights["*"]``): how many of the tool name's words the request uses (and whether it uses
  the verb), how many of the tool description's words it uses, read/write after read/write, the
  tool's verb
  (``list``, ``create``...) after the previous tool's verb, a request word with the tool's verb,
  whether the tool works on the previous tool's resource, whether it was called already; for
  *stop*, how many verbs the request names that no call has used yet, how many writes were
  made, and whether the last call read or wrote. These
  carry over to chains, tools and environments never trained on.

With every weight 0 the policy is exactly the uniform random policy over the same actions, which
is what iteration 0 rolls out.

REINFORCE: for a rollout with advantage A, ``∇ log π(a_t|s_t) = φ(s_t) ⊗ (e_{a_t} − π(·|s_t))``,
summed over its steps and scaled by A.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Sequence
from typing import Any

from envkernel_kit.naming import singular

STOP = "<stop>"
"""The action that ends the rollout."""

Weights = dict[str, dict[str, float]]
"""feature -> action -> weight."""

_WORD = re.compile(r"[a-z][a-z]+")


def words(request: str) -> list[str]:
    """The request's distinct lower-case words (letters only, two or more), in order."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(request.lower()):
        seen.setdefault(w, None)
    return list(seen)


Feature = tuple[str, float]
"""A feature's name and value. Word features have value 1/(number of words), so the words
together weigh as much as one feature: an update cannot swing a logit by the sheer number of
words in a request."""


def features(
    request_words: Sequence[str], prev: str, step: int, called: Iterable[str]
) -> list[Feature]:
    """The features of a state: bias, previous tool, step, the request's words and the tools
    already called (word × previous tool was tried and only memorised the train chains)."""
    feats = [("bias", 1.0), (f"prev:{prev}", 1.0), (f"step:{min(step, 8)}", 1.0)]
    share = 1.0 / max(1, len(request_words))
    feats.extend((f"w:{w}", share) for w in request_words)
    feats.extend((f"called:{t}", 1.0) for t in sorted(set(called)))
    return feats


SHARED = "*"
"""Key of the row of shared (state, action) feature weights."""


def tool_parts(name: str) -> tuple[str, frozenset[str]]:
    """A tool name's verb (its first word) and the stems of its other words."""
    if name == STOP:
        return "stop", frozenset()
    parts = [p for p in re.split(r"[^a-z]+", name.lower()) if p]
    return (parts[0] if parts else ""), frozenset(singular(p) for p in parts[1:])


_STOPWORDS = frozenset(
    "the and for with from into that this these those its all any each one are was has have "
    "not you your".split()
)


class ToolInfo:
    """What the policy knows of a tool besides its name: reads or writes, and its description's
    words."""

    def __init__(self, tool: Any) -> None:
        self.name: str = getattr(tool, "name", tool)
        mutates = getattr(tool, "mutates", None)
        self.kind = "?" if mutates is None else "write" if mutates else "read"
        desc = getattr(tool, "description", "") or ""
        self.stems = frozenset(
            singular(w) for w in words(desc) if len(w) > 2 and w not in _STOPWORDS
        )


def pair_features(
    stems: frozenset[str],
    request_words: Sequence[str],
    prev: str,
    called: Sequence[str],
    action: str,
    unmet: int = 0,
    info: dict[str, ToolInfo] | None = None,
) -> list[Feature]:
    """Shared features of taking ``action`` in a state (see the module docstring). ``unmet`` is
    how many verbs the request names (among the offered tools' verbs) no call has used yet;
    ``info`` gives each tool's kind (read/write) and description words."""
    info = info or {}
    verb, res = tool_parts(action)
    pinfo = info.get(prev)
    pkind = "^" if prev == "^" else pinfo.kind if pinfo else "?"
    if action == STOP:
        writes = sum(1 for t in called if (ti := info.get(t)) is not None and ti.kind == "write")
        return [
            ("verb:stop", 1.0),
            (f"verb:{tool_parts(prev)[0] if prev != '^' else '^'}>stop", 1.0),
            (f"stop-unmet:{min(unmet, 2)}", 1.0),
            (f"stop-calls:{min(len(called), 8)}", 1.0),
            (f"stop-after:{pkind}", 1.0),
            (f"stop-writes:{min(writes, 2)}", 1.0),
        ]
    pverb, pres = tool_parts(prev) if prev != "^" else ("^", frozenset())
    named = singular(verb) in stems
    me = info.get(action)
    kind = me.kind if me else "?"
    desc = min(len(me.stems & stems), 4) if me else 0
    feats = [
        (f"verb:{verb}", 1.0),
        (f"verb:{pverb}>{verb}", 1.0),
        (f"overlap:{min(len(res & stems), 3)}", 1.0),
        (f"named:{named}:{min(len(res & stems), 2)}", 1.0),
        (f"kind:{pkind}>{kind}", 1.0),
        (f"desc:{desc}", 1.0),
    ]
    if res and res & pres:
        feats.append((f"same-resource:{verb}", 1.0))
    if action in called:
        feats.append((f"again:{verb}", 1.0))
    share = 1.0 / max(1, len(request_words))
    feats.extend((f"vw:{verb}:{w}", share) for w in request_words)
    return feats


def _logits(
    weights: Weights,
    feats: Sequence[Feature],
    actions: Sequence[str],
    pairs: Sequence[Sequence[Feature]],
) -> list[float]:
    logits = [0.0] * len(actions)
    for f, x in feats:
        row = weights.get(f)
        if row:
            for i, a in enumerate(actions):
                logits[i] += x * row.get(a, 0.0)
    shared = weights.get(SHARED)
    if shared:
        for i, pf in enumerate(pairs):
            logits[i] += sum(x * shared.get(g, 0.0) for g, x in pf)
    return logits


def probabilities(
    weights: Weights,
    feats: Sequence[Feature],
    actions: Sequence[str],
    pairs: Sequence[Sequence[Feature]] = (),
) -> list[float]:
    """π(·|s): the softmax over actions of the summed weights of the state features ``feats``
    (per action) and of each action's shared features ``pairs[i]``."""
    logits = (
        _logits(weights, feats, actions, pairs)
        if pairs
        else _logits(weights, feats, actions, [()] * len(actions))
    )
    top = max(logits)
    exps = [math.exp(x - top) for x in logits]
    total = sum(exps)
    return [e / total for e in exps]


def choose(probs: Sequence[float], rng: random.Random) -> int:
    """Sample an action index from ``probs``."""
    x = rng.random()
    acc = 0.0
    for i, p in enumerate(probs):
        acc += p
        if x < acc:
            return i
    return len(probs) - 1


class State:
    """The policy's view while a rollout unfolds: request words, previous tool, tools called."""

    def __init__(self, request: str, tools: Sequence[Any]) -> None:
        """``tools``: the offered tools, as ToolSpecs (name, mutates, description) or bare names."""
        self.words = words(request)
        self.stems = frozenset(singular(w) for w in self.words)
        infos = [ToolInfo(t) for t in tools]
        self.info = {i.name: i for i in infos}
        self.actions = [*(i.name for i in infos), STOP]
        self.named_verbs = {
            v for v in (tool_parts(i.name)[0] for i in infos) if singular(v) in self.stems
        }
        self.prev = "^"
        self.called: list[str] = []

    def featurize(self) -> tuple[list[Feature], list[list[Feature]]]:
        """State features, and each action's shared features."""
        feats = features(self.words, self.prev, len(self.called), self.called)
        unmet = len(self.named_verbs - {tool_parts(t)[0] for t in self.called})
        pairs = [
            pair_features(self.stems, self.words, self.prev, self.called, a, unmet, self.info)
            for a in self.actions
        ]
        return feats, pairs

    def probabilities(self, weights: Weights) -> list[float]:
        """π(·|s) under ``weights``."""
        feats, pairs = self.featurize()
        return probabilities(weights, feats, self.actions, pairs)

    def take(self, action: str) -> None:
        """Move on after calling ``action``."""
        self.called.append(action)
        self.prev = action


def steps(
    request: str, tools: Sequence[Any], chosen: Sequence[str]
) -> Iterable[tuple[list[Feature], list[list[Feature]], list[str], str]]:
    """Replay a rollout's decisions: (state features, shared features, actions, action taken) per
    step.

    ``chosen`` is the sequence of actions taken (tool names, ending in :data:`STOP` when the
    policy stopped by itself).
    """
    state = State(request, tools)
    for a in chosen:
        feats, pairs = state.featurize()
        yield feats, pairs, state.actions, a
        if a == STOP:
            return
        state.take(a)


def accumulate(
    grad: Weights,
    weights: Weights,
    request: str,
    tools: Sequence[Any],
    chosen: Sequence[str],
    advantage: float,
) -> int:
    """Add ``advantage · ∇ log π(chosen)`` under ``weights`` into ``grad``; return the steps
    seen."""
    n = 0
    for feats, pairs, actions, a in steps(request, tools, chosen):
        if a not in actions:
            continue  # an action this state did not offer (tools changed): no gradient
        probs = probabilities(weights, feats, actions, pairs)
        coef = [
            advantage * ((1.0 if act == a else 0.0) - p)
            for act, p in zip(actions, probs, strict=True)
        ]
        for f, x in feats:
            row = grad.setdefault(f, {})
            for act, g in zip(actions, coef, strict=True):
                if g:
                    row[act] = row.get(act, 0.0) + x * g
        shared = grad.setdefault(SHARED, {})
        for pf, g in zip(pairs, coef, strict=True):
            if g:
                for feat, x in pf:
                    shared[feat] = shared.get(feat, 0.0) + x * g
        n += 1
    return n


def apply(
    weights: Weights, grad: Weights, lr: float, accum: Weights | None = None, eps: float = 1e-8
) -> float:
    """One ascent step on ``grad``, in place; return the gradient's L2 norm.

    With ``accum`` (the running sum of squared gradients, updated here) the step is AdaGrad's,
    ``lr · g / sqrt(Σg²)``: every weight moves at most ``lr`` per step, so the bias (seen at every
    step) and a rare word (seen in one task) learn at comparable speeds. Without it, plain SGD.
    """
    sq = 0.0
    for f, row in grad.items():
        wrow = weights.setdefault(f, {})
        arow = accum.setdefault(f, {}) if accum is not None else None
        for a, g in row.items():
            sq += g * g
            if arow is None:
                step = lr * g
            else:
                arow[a] = arow.get(a, 0.0) + g * g
                step = lr * g / (math.sqrt(arow[a]) + eps)
            wrow[a] = wrow.get(a, 0.0) + step
    return math.sqrt(sq)
