"""Archetype templates: small complete environments, retrieved as few-shot examples.

Each folder under ``templates/`` holds ``meta.json`` (name, archetype, keywords, description) and
the four files the model is asked to write (``seed.sql``, ``tools.json``, ``env.py``,
``scenarios.json``). They pass their own scenarios (a test checks it). Retrieval scores each
template by how many of its keywords (and description words) the brief or document mentions, as
EnvCraft picks the nearest archetypes; ties go to the library order, so retrieval is deterministic.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from .reply import FILES

__all__ = ["Template", "nearest", "templates"]


@dataclass(frozen=True)
class Template:
    """One archetype and its files."""

    name: str
    archetype: str
    description: str
    keywords: frozenset[str]
    files: dict[str, str]

    def as_example(self) -> str:
        """The template as the model sees it: its files in the reply format."""
        lang = {
            "seed.sql": "sql",
            "tools.json": "json",
            "env.py": "python",
            "scenarios.json": "json",
        }
        parts = [f"Example environment '{self.name}' ({self.archetype}):"]
        parts += [f"```{lang[f]} {f}\n{self.files[f].rstrip()}\n```" for f in FILES]
        return "\n".join(parts)


@cache
def templates() -> tuple[Template, ...]:
    """Every template shipped with the plugin, in name order."""
    root = resources.files(__package__).joinpath("templates")
    out = []
    for folder in sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.name):
        meta = json.loads(folder.joinpath("meta.json").read_text(encoding="utf-8"))
        files = {f: folder.joinpath(f).read_text(encoding="utf-8") for f in FILES}
        words = set(meta.get("keywords", [])) | set(
            re.findall(r"[a-z]{4,}", meta.get("description", "").lower())
        )
        out.append(
            Template(
                meta["name"],
                meta.get("archetype", ""),
                meta.get("description", ""),
                frozenset(words),
                files,
            )
        )
    return tuple(out)


def nearest(text: str, k: int = 2) -> list[Template]:
    """The ``k`` templates whose keywords ``text`` mentions most (deterministic)."""
    words = set(re.findall(r"[a-z]+", text.lower()))
    words |= {w[:-1] for w in words if w.endswith("s")}
    scored = [(-len(t.keywords & words), i, t) for i, t in enumerate(templates())]
    return [t for _, _, t in sorted(scored)[: max(0, k)]]
