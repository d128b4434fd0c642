"""An optional LLM refiner: rewrites a task's request more naturally, and keeps it only if every
fact survives.

A sampler hands :meth:`Refiner.refine` the request it phrased, the entities its phrases name
(:class:`Entity`), the facts the check needs
(:func:`must_keep`: every quoted value, every number, every literal argument and the speaker's
name) and what the words must never show (:func:`must_not_show`: the answer, what the user holds
back, ids). Any OpenAI-compatible model (through :class:`envkernel_kit.chat.ChatClient`) writes
the rewrite; it is then re-checked, and a rewrite that fails any check is dropped and the
original kept (the verdict says why):

- ``names_tool``: it names a tool;
- ``lost_fact``: a fact of the original is missing (a quoted value, a number, a literal
  argument, the speaker's name: a value to write, or a word a phrase needs);
- ``ambiguous_entity``: an entity phrase no longer picks exactly one row of the task's initial
  state (the seed plus any planted rows): the rewrite dropped a describing attribute the row
  needed (``the booking for Julia Verschuere`` for ``the held booking for Julia Verschuere``).
  The sampler passes one :class:`Entity` per row the reference reads or acts on, each with its
  :class:`Clue` s (the words of one constraint of its phrase and the rows that constraint fits);
  the rows that fit every clue the rewrite still says must be the target alone;
- ``added_fact``: it says a number or a quoted value the original did not (a changed value);
- ``leaks``: it shows the answer, a held-back condition or an id;
- ``unchanged`` / ``empty`` / ``model_failed``: nothing usable came back.

The emitted task still goes through the kernel's gate, so a kept rewrite is re-gated with the
task's own checks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "PROMPT",
    "Clue",
    "Entity",
    "Refined",
    "Refiner",
    "ambiguous",
    "check_rewrite",
    "must_keep",
    "must_not_show",
    "says",
]

PROMPT = """Rewrite the user's request to an assistant so it sounds like a real person wrote it: \
natural, with the intent
implicit where a person would leave it implicit (why they want it, not how to do it). Keep every \
name, every quoted
value and every number exactly as written, add no new facts, and never mention tools, functions or \
ids.
Reply with the rewritten request only."""

_QUOTED = re.compile(r'"([^"]+)"')
_NUM = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])")


@dataclass
class Refined:
    """A refiner's verdict on one request."""

    text: str
    """The request to use: the rewrite when ``ok``, else the original."""
    ok: bool
    verdict: str
    """``refined``, or why the original was kept (see the module docstring)."""
    detail: str = ""


@dataclass
class Clue:
    """One constraint of an entity phrase: the words that say it and the rows it fits."""

    words: list[str]
    """Any of these in a text says it (``held``; a number matches as a number)."""
    rows: frozenset[Any]
    """Ids of the rows of the entity's table (in the task's initial state) that meet it."""
    best: dict[Any, Any] | None = None
    """For a superlative (``with the highest total``): each row's value of the field it ranks by
    (id -> value); the clue then fits the one row that wins among the rows the other clues leave."""
    high: bool = True
    """For a superlative: the highest value wins (False: the lowest)."""


def narrow(rows: set[Any], clues: list[Clue]) -> set[Any]:
    """The rows that fit every clue: the plain clues first, then each superlative among what they
    leave."""
    left = set(rows)
    for c in clues:
        if c.best is None:
            left &= c.rows
    for c in clues:
        if c.best is not None:
            vals = {r: c.best[r] for r in left if c.best.get(r) is not None}
            if (
                vals and len({type(v) for v in vals.values()}) == 1
            ):  # values of one kind (numbers, or ISO times as text)
                top = max(vals.values()) if c.high else min(vals.values())
                left = {r for r, v in vals.items() if v == top}
    return left


@dataclass
class Entity:
    """A row the task's reference reads or acts on, and the clues its phrase gives."""

    noun: str
    target: Any
    """The row's id (as in :attr:`Clue.rows`)."""
    rows: frozenset[Any]
    """Ids of every row of its table in the task's initial state."""
    clues: list[Clue] = field(default_factory=list)


def says(text: str, words: list[str]) -> bool:
    """True when ``text`` says one of ``words`` (whole words, any case; numbers compared as
    numbers)."""
    low = text.lower()
    nums: set[float] | None = None
    for w in words:
        w = str(w).strip().lower()
        if not w:
            continue
        if _NUM.fullmatch(w):
            if nums is None:
                nums = {float(x) for x in _NUM.findall(low)}
            if float(w) in nums:
                return True
        elif re.search(rf"(?<!\w){re.escape(w)}(?!\w)", low):
            return True
    return False


def ambiguous(request: str, text: str, entities: list[Entity]) -> str | None:
    """Why ``text`` no longer picks each entity's row alone (None when it does).

    A clue the original request does not visibly say (its words are phrased some other way) is
    taken as still said; an entity the original itself does not pick alone by its clues is not
    judged (the check cannot read that phrase)."""
    for e in entities:
        base, said, unseen = set(e.rows), [], []
        for c in e.clues:
            if says(request, c.words):
                said.append(c)
            else:
                unseen.append(c)
        picked = narrow(base, unseen + said)
        if picked != {e.target}:
            continue
        kept = [c for c in said if says(text, c.words)]
        dropped = [c.words[0] for c in said if not says(text, c.words)]
        left = narrow(base, unseen + kept)
        if left != {e.target}:
            what = "picks another row" if len(left) == 1 else f"matches {len(left)} rows"
            return f"the {e.noun} without {', '.join(map(str, dropped))} {what}"
    return None


def must_keep(request: str, literals: list[Any], names: list[str]) -> list[str]:
    """The facts a rewrite must keep: quoted values and numbers of the request, literal arguments,
    names."""
    keep = list(_QUOTED.findall(request)) + _NUM.findall(request)
    for v in literals:
        if isinstance(v, str) and v and v.lower() in request.lower():
            keep.append(v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            keep.extend(x for x in _NUM.findall(request) if float(x) == float(v))
    keep += [n for n in names if n and n in request]
    return list(dict.fromkeys(keep))


def must_not_show(
    answer_facts: list[str], hidden: list[str], ids: list[Any], request: str
) -> list[str]:
    """What a rewrite must not say (unless the original already did): the answer facts, what the
    user holds back, ids."""
    low = request.lower()
    out = [str(x) for x in [*answer_facts, *hidden, *ids] if str(x) and len(str(x)) >= 3]
    return [x for x in out if x.lower() not in low]


class Refiner:
    """Rewrites requests with an OpenAI-compatible model and re-checks each rewrite."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        temperature: float = 0.7,
        max_tokens: int = 300,
        request_timeout: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        from .chat import ChatClient

        self.model, self.temperature, self.max_tokens = model, temperature, max_tokens
        self.client = ChatClient(
            base_url=base_url,
            api_key=api_key,
            request_timeout=request_timeout,
            max_retries=max_retries,
        )

    async def refine(
        self,
        request: str,
        *,
        keep: list[str],
        forbid: list[str],
        tool_pattern: re.Pattern[str] | None = None,
        entities: list[Entity] | None = None,
    ) -> Refined:
        """The rewrite of ``request`` if it passes every check, else the original with the
        reason."""
        body = {
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "messages": [
                {"role": "system", "content": PROMPT},
                {"role": "user", "content": request},
            ],
        }
        res = await self.client.complete(body)
        if not res.ok:
            return Refined(request, False, "model_failed", res.error)
        try:
            text = (
                str((res.body or {})["choices"][0]["message"]["content"] or "")
                .strip()
                .strip('"')
                .strip()
            )
        except (KeyError, IndexError, TypeError):
            text = ""
        return check_rewrite(
            request, text, keep=keep, forbid=forbid, tool_pattern=tool_pattern, entities=entities
        )

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.client.aclose()


def check_rewrite(
    request: str,
    text: str,
    *,
    keep: list[str],
    forbid: list[str],
    tool_pattern: re.Pattern[str] | None = None,
    entities: list[Entity] | None = None,
) -> Refined:
    """The checks of a rewrite (see the module docstring)."""
    if not text or len(text) > 4 * len(request) + 200:
        return Refined(request, False, "empty", "no rewrite, or one far longer than the request")
    if text == request:
        return Refined(request, False, "unchanged")
    low = text.lower()
    if tool_pattern is not None and tool_pattern.search(low):
        return Refined(request, False, "names_tool", tool_pattern.search(low).group(0))  # type: ignore[union-attr]
    lost = [k for k in keep if k.lower() not in low]
    if lost:
        return Refined(request, False, "lost_fact", ", ".join(lost))
    why = ambiguous(request, text, entities or [])
    if why:
        return Refined(request, False, "ambiguous_entity", why)
    have = {float(x) for x in _NUM.findall(request)}
    added = [x for x in _NUM.findall(text) if float(x) not in have] + [
        q for q in _QUOTED.findall(text) if q.lower() not in request.lower()
    ]
    if added:
        return Refined(request, False, "added_fact", ", ".join(added))
    shown = [f for f in forbid if f.lower() in low]
    if shown:
        return Refined(request, False, "leaks", ", ".join(shown))
    return Refined(text, True, "refined")
