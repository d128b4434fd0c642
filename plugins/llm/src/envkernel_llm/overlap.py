"""Decontamination: how much an environment's tools overlap a named benchmark's.

The benchmarks' tool lists are kept in ``data/benchmark_tools.json`` (BFCL v3 multi-turn backends,
Apache-2.0; τ²-bench domains, MIT; each entry names its repository, commit, path and licence; see
``data/README.md``). A tool *matches* a benchmark tool when their names are equal after
normalisation (camelCase and case folded, separators dropped) or share at least 80 % of their name
words (Jaccard) with at least two words in common. The overlap with a benchmark is the share of the
environment's tools that match one of its tools; above the threshold the environment is flagged.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["Overlap", "benchmarks", "overlap"]

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _words(name: str) -> tuple[str, ...]:
    return tuple(w for w in re.split(r"[^a-z0-9]+", _CAMEL.sub("_", name).lower()) if w)


@cache
def benchmarks() -> dict[str, dict[str, Any]]:
    """The kept benchmark tool lists, by benchmark key (``bfcl-v3-multi-turn:trading_bot``...)."""
    text = (
        resources.files(__package__)
        .joinpath("data", "benchmark_tools.json")
        .read_text(encoding="utf-8")
    )
    return json.loads(text)["benchmarks"]


def _match(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    if "".join(a) == "".join(b):
        return True
    sa, sb = set(a), set(b)
    common = len(sa & sb)
    return common >= 2 and common / len(sa | sb) >= 0.8


@dataclass
class Overlap:
    """The overlap of one environment with one benchmark."""

    benchmark: str
    share: float
    """Share of the environment's tools matching one of the benchmark's."""
    tools: dict[str, str]
    """Environment tool -> the benchmark tool it matches."""


def overlap(
    tool_names: list[str], *, threshold: float = 0.5
) -> tuple[list[Overlap], list[Overlap]]:
    """Every benchmark with some overlap (highest first), and those at or above ``threshold``."""
    if not tool_names:
        return [], []
    ours = {n: _words(n) for n in tool_names}
    found: list[Overlap] = []
    for key, bench in benchmarks().items():
        theirs = [(t["name"], _words(t["name"])) for t in bench["tools"]]
        hits = {}
        for name, words in ours.items():
            for other, owords in theirs:
                if _match(words, owords):
                    hits[name] = other
                    break
        if hits:
            found.append(Overlap(key, round(len(hits) / len(ours), 4), hits))
    found.sort(key=lambda o: (-o.share, o.benchmark))
    return found, [o for o in found if o.share >= threshold]
