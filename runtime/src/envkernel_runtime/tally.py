"""Counting helpers the kernel's recorder uses for ``summary.json`` (kept here so the kernel stays
small).

:class:`SynthesisYield` is the ``synthesis`` section: per source kind, the environments asked for,
made, verified (on the first round or after repair), rejected (by reason), flagged, and the model
tokens and seconds spent per verified environment. It reads only the generic :class:`Provenance`
fields (``rounds``, ``tokens``, ``seconds``, ``rejected``, ``flags``), so any synthesizer that
fills them in is counted, and one that does not (``rounds == 0``) still gets its counts.

:class:`IterationStats` holds the rewards of one training iteration.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from envkernel_schemas import EnvRejected, EnvRequested, EnvSpec, EnvSynthesized, EnvVerified

__all__ = ["IterationStats", "SynthesisYield"]


class IterationStats:
    """Rewards of one training iteration: totals (index 0) and per split."""

    def __init__(self) -> None:
        self.groups = 0
        self.rollouts: Counter[Any] = Counter()
        self.reward: dict[Any, float] = {0: 0.0}
        self.updates: dict[str, dict[str, Any]] = {}

    def add(self, split: str, score: float) -> None:
        """Count one scored training rollout."""
        for key in (0, split):
            self.rollouts[key] += 1
            self.reward[key] = self.reward.get(key, 0.0) + score

    def mean(self, split: Any = 0) -> float | None:
        """Mean reward overall (0) or of one split, None without rollouts."""
        n = self.rollouts[split]
        return round(self.reward[split] / n, 6) if n else None

    def summary(self, iteration: int) -> dict[str, Any]:
        """This iteration's line of ``summary.json``."""
        return {
            "iteration": iteration,
            "groups": self.groups,
            "rollouts": self.rollouts[0],
            "mean_reward": self.mean(),
            "mean_reward_train": self.mean("train"),
            "mean_reward_heldout": self.mean("heldout"),
            "rollouts_heldout": self.rollouts["heldout"],
            "updates": self.updates,
        }


class _Kind:
    def __init__(self) -> None:
        self.n: Counter[str] = Counter()
        self.rejected: Counter[str] = Counter()
        self.flagged: dict[str, list[str]] = {}
        self.tokens = 0
        self.seconds = 0.0
        self.modelled = False
        """True once an environment of this kind records rounds (it was written by a model)."""


class SynthesisYield:
    """Yield and cost of environment synthesis, by source kind (see the module docstring)."""

    def __init__(self) -> None:
        self._kinds: dict[str, _Kind] = {}
        self._envs: dict[str, tuple[str, EnvSpec]] = {}
        self._done: set[str] = set()

    def _kind(self, kind: str) -> _Kind:
        return self._kinds.setdefault(kind or "unknown", _Kind())

    def _made(self, env: EnvSpec) -> _Kind:
        p = env.provenance
        kind = self._kind(p.source_kind if p else "")
        if env.id not in self._envs:
            self._envs[env.id] = (p.source_kind if p else "", env)
            kind.n["synthesized"] += 1
            if p is not None:
                kind.tokens += p.tokens
                kind.seconds += p.seconds
                kind.modelled = kind.modelled or p.rounds > 0
                if p.flags:
                    kind.flagged[env.id] = list(p.flags)
        return kind

    def record(self, ev: Any) -> None:
        """Account for one event (each id once; the caller drops duplicates)."""
        if isinstance(ev, EnvRequested):
            self._kind(ev.source_kind).n["asked"] += 1
        elif isinstance(ev, EnvSynthesized):
            self._made(ev.env)
        elif isinstance(ev, EnvRejected) and ev.env_id not in self._done:
            self._done.add(ev.env_id)
            if ev.env is not None:  # rejected by its synthesizer
                kind = self._made(ev.env)
            else:
                kind = self._kind(self._envs.get(ev.env_id, ("", None))[0])
            kind.n["rejected"] += 1
            kind.rejected[ev.reason] += 1
        elif isinstance(ev, EnvVerified) and ev.env.id not in self._done:
            self._done.add(ev.env.id)
            kind = self._made(ev.env)
            p = ev.env.provenance
            kind.n["verified"] += 1
            if p is not None and p.rounds:
                kind.n["verified_first_round" if p.rounds == 1 else "verified_after_repair"] += 1

    def summary(self) -> dict[str, Any]:
        """The ``synthesis`` section of ``summary.json``: one entry per source kind."""
        out: dict[str, Any] = {}
        for name, k in sorted(self._kinds.items()):
            verified = k.n["verified"]
            modelled = k.n["verified_first_round"] + k.n["verified_after_repair"]
            rate = k.modelled and k.n["asked"] > 0
            out[name] = {
                "asked": k.n["asked"],
                "returned": k.n["synthesized"],
                "verified": verified,
                "verified_first_round": k.n["verified_first_round"],
                "verified_after_repair": k.n["verified_after_repair"],
                "rejected": k.n["rejected"],
                "rejected_by_reason": dict(k.rejected.most_common()),
                "flagged": dict(sorted(k.flagged.items())),
                "tokens": k.tokens,
                "seconds": round(k.seconds, 3),
                "tokens_per_verified_env": round(k.tokens / verified, 1)
                if verified and k.tokens
                else None,
                "seconds_per_verified_env": round(k.seconds / verified, 3)
                if verified and k.seconds
                else None,
                "first_round_pass_rate": round(k.n["verified_first_round"] / k.n["asked"], 4)
                if rate
                else None,
                "pass_rate_after_repair": round(modelled / k.n["asked"], 4) if rate else None,
            }
        return out
