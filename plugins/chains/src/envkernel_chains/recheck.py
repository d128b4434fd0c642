"""What the refiner's re-check needs to re-resolve a rewrite's entity phrases (:func:`entities`).

Every ``desc`` reference a chain's calls act on or read (:func:`acted_refs`: each call's target
and entity arguments; an owner that only helps find one of them need not be named) carries the
constraints its words put on its row (``Ref.where``: the lookup's scope, its owners, the chosen
attributes). Each becomes a :class:`envkernel_kit.refine.Clue`: the words a request says it with
(the value, ``held``, ``"Desk Lamp"``, ``4``; an owner's own words, ``Julia Verschuere`` or ``my``)
and the rows of the task's **initial state** (the seed plus ``Task.planted``) it fits. The kit's
check (:func:`envkernel_kit.refine.ambiguous`) then keeps a rewrite only when the clues it still
says fit the target row alone. A superlative (``with the highest total``) picks the row that wins
among those the other clues still said leave (dropping ``confirmed`` from ``Shaun Brown's confirmed
order with the lowest quantity`` names his order with the lowest quantity of all, maybe another).
"""

from __future__ import annotations

from typing import Any

from envkernel_kit.naming import human, words
from envkernel_kit.refine import Clue, Entity
from envkernel_kit.tools import Schema
from envkernel_schemas import Task

from .ground import Step
from .phrasing import enum_words, role_words
from .refs import Ref, norm, satisfies

__all__ = ["acted_refs", "entities", "initial_state"]

State = dict[str, list[dict[str, Any]]]

BEST_WORDS = {
    "max": [
        "highest",
        "most",
        "latest",
        "largest",
        "biggest",
        "greatest",
        "maximum",
        "top",
        "newest",
        "most recent",
        "recently",
        "last",
    ],
    "min": [
        "lowest",
        "fewest",
        "earliest",
        "smallest",
        "least",
        "minimum",
        "oldest",
        "first",
        "cheapest",
        "shortest",
    ],
}
"""Words that keep a superlative (``max`` / ``min``) in a rewrite."""
FIRST_PERSON = ["my", "me", "i", "i'm", "mine", "our", "we"]


def acted_refs(steps: list[Step]) -> list[Ref]:
    """The ``desc`` references of the rows the chain's calls act on or read (targets and entity
    arguments), once each."""
    out: list[Ref] = []
    for s in steps:
        for r in [s.target, *s.refs.values()]:
            if (
                r is not None
                and r.kind == "desc"
                and r.table
                and r.where
                and all(r is not x for x in out)
            ):
                out.append(r)
    return out


def initial_state(seed: State, task: Task, tables: set[str]) -> State:
    """The rows of ``tables`` a task's episodes start from: the seed plus its planted rows."""
    return {
        t: list(seed.get(t, [])) + [p.row for p in task.planted if p.table == t] for t in tables
    }


def _owner_words(o: Ref, persona: str) -> list[str]:
    if o.kind == "persona":
        return [persona, *FIRST_PERSON] if persona else list(FIRST_PERSON)
    if o.kind == "of":
        return [role_words(o.role), human(o.noun)]
    if o.kind == "literal":
        return [str(o.value)]
    if o.kind == "new":
        return ["new"]
    return [o.title] if o.title else (list(o.values) or [human(o.noun)])


def _words(c: tuple[str, str, Any], ref: Ref, persona: str) -> list[str]:
    """The words a request says constraint ``c`` of ``ref`` with ([]: none this check can see)."""
    fld, op, v = c
    if op == "in_set":
        owner = next(
            (
                o
                for o in [ref.owner, *ref.more_owners]
                if o is not None and o.ids is not None and frozenset(o.ids) == v
            ),
            None,
        )
        return _owner_words(owner, persona) if owner is not None else []
    if isinstance(v, bool):
        return [" ".join(w for w in words(fld) if w not in ("is", "has"))] if v else []
    if isinstance(v, (list, tuple, set, frozenset)):
        return [str(x) for x in v if isinstance(x, (str, int, float))]
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, (str, int, float)):
        return list(dict.fromkeys([str(v), enum_words(v).strip('"')]))
    return []


def _rank(v: Any) -> Any:
    """A value a superlative ranks by (a number, or an ISO time as text); None for anything else."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    return v if isinstance(v, str) else None


def entities(refs: list[Ref], seed: State, task: Task, schema: Schema) -> list[Entity]:
    """One :class:`~envkernel_kit.refine.Entity` per described row of the chain, its clues fitted to
    the task's initial state."""
    state = initial_state(seed, task, {r.table for r in refs if r.table})
    persona = task.persona.get("name", "")
    out: list[Entity] = []
    for r in refs:
        if not r.table:
            continue
        key = schema.key(r.table)
        rows = state.get(r.table, [])
        every = frozenset(norm(x.get(key)) for x in rows)
        clues = []
        for c in r.where:
            fits = frozenset(norm(x.get(key)) for x in rows if satisfies(x, c))
            if fits != every:  # a constraint every row meets tells no row apart
                clues.append(Clue(_words(c, r, persona), fits))
        if (
            r.best is not None
        ):  # the row that wins among those the other clues the text still says leave
            fld, how = r.best
            best = {
                norm(x.get(key)): _rank(x.get(fld)) for x in rows if _rank(x.get(fld)) is not None
            }
            clues.append(
                Clue(
                    BEST_WORDS.get(how, []),
                    frozenset([norm(r.value)]),
                    best=best,
                    high=how == "max",
                )
            )
        out.append(Entity(noun=human(r.noun), target=norm(r.value), rows=every, clues=clues))
    return out
