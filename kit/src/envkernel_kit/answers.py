"""Checking a read-only task's final answer against its Outcome: complete, precise and right.

Shared by the reward models (``traceoutcome``, ``checklist``) and the samplers that build the
Outcome, so an answer is judged the same way everywhere.

- **Facts** (``answer_facts``): each must be in the answer. A text fact is found
  case-insensitively, or as the same words in another simple word form (``dermatologist`` for
  ``dermatology``, :func:`stem`); a number fact (``149``, ``12.75``) matches a number written in
  the answer within a tolerance (``12.750``, ``1,234.5``), never a digit inside another number.
  When the answer is one number (a count, a total, a value: the only fact, no rows), it must be
  the number the answer states (:func:`stated_number`: its first number outside quoted names),
  not a number said anywhere in it.
- **Raw dumps**: an answer that is, or holds, the tools' raw JSON (:func:`raw_dump`) scores 0.
- **Rows** (``answer_rows``, each ``[label, value, ...]``): each value must be said after its
  label and before the next row's label, so a per-row pair is checked, not just the set of
  distinct values. With ``answer_ordered`` the
  labels must come in order.
- **Precision** (``answer_absent``): an answer that says one of these values (rows the request did
  not ask for: the whole user list, to answer "what is my email?") scores 0.

:func:`answer_units` lists the units (facts outside rows, rows, the order when asked for, and the
precision guard); :func:`answer_score` returns the share of credit units that hold, zeroed by a
failed precision guard, with the reasons.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, NamedTuple

from .deprecation import deprecated_alias

__all__ = [
    "GUARD_KINDS",
    "ITEM_KEYS",
    "META_WORDS",
    "NUMBER",
    "Unit",
    "answer_check",
    "answer_score",
    "answer_units",
    "envelope_key",
    "facts_in_words",
    "find_number",
    "is_number",
    "mentions",
    "raw_dump",
    "result_rows",
    "stated_number",
    "stem",
    "stuffed_answer",
]

NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w])")
"""A number as written in an answer (thousands separators allowed), not part of a word or id."""
ABS_TOL = 0.005
"""Absolute tolerance for numbers (half a cent)."""
REL_TOL = 1e-6
"""Relative tolerance for numbers."""


def is_number(fact: str) -> bool:
    """True for a fact that is a plain number (``12``, ``-3.5``)."""
    return re.fullmatch(r"-?\d+(?:\.\d+)?", fact.strip()) is not None


_UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
NUMBER_WORD = re.compile(
    rf"\b(?:({'|'.join(_TENS)})(?:[- ]({'|'.join(_UNITS[1:10])}))?|({'|'.join(_UNITS)}))\b",
    re.IGNORECASE,
)
"""A whole number under 100 written in words (``three``, ``twenty-one``)."""


def _word_value(m: re.Match[str]) -> float:
    tens, unit, alone = (g.lower() if g else g for g in m.groups())
    if alone:
        return float(_UNITS.index(alone))
    return float(20 + 10 * _TENS.index(tens) + (_UNITS.index(unit) if unit else 0))


def _numbers(text: str) -> list[tuple[int, float]]:
    """The numbers in ``text`` with their positions; when it has none in digits, the ones written
    in words (``I count three of them.``: a pronoun "one" beside a digit is not read as 1)."""
    out = []
    for m in NUMBER.finditer(text):
        raw = m.group(0).replace(",", "")
        try:
            out.append((m.start(), float(raw)))
        except ValueError:
            continue
    return out or [(m.start(), _word_value(m)) for m in NUMBER_WORD.finditer(text)]


def find_number(value: float, text: str) -> int:
    """Position of the first number in ``text`` equal to ``value`` within the tolerance, or -1."""
    for pos, x in _numbers(text):
        if math.isclose(x, value, rel_tol=REL_TOL, abs_tol=ABS_TOL):
            return pos
    return -1


_WORD = re.compile(r"\w+")
_STEMS = (
    ("ologists", "olog"),
    ("ologist", "olog"),
    ("ological", "olog"),
    ("ology", "olog"),
    ("icians", "ic"),
    ("ician", "ic"),
    ("ics", "ic"),
    ("ies", "y"),
    ("sses", "ss"),
    ("shes", "sh"),
    ("ches", "ch"),
    ("s", ""),
)
"""Word endings folded together (dermatology / dermatologist, pediatrics / pediatrician, hotels /
hotel, categories / category), longest first."""


def stem(word: str) -> str:
    """A word's simple word form: lower case, one ending of :data:`_STEMS` folded (words of five
    letters or more; ``ss`` is kept, so ``class`` stays ``class``)."""
    w = word.lower()
    if len(w) < 5 or w.endswith("ss"):
        return w
    for end, rep in _STEMS:
        if w.endswith(end) and len(w) - len(end) >= 3:
            return w[: len(w) - len(end)] + rep
    return w


def _word_form_find(fact: str, text: str) -> int:
    """Position of ``fact``'s words in ``text`` as consecutive words of the same word forms
    (:func:`stem`), or -1."""
    want = [stem(w) for w in _WORD.findall(fact)]
    if not want or not any(c.isalpha() for c in fact):
        return -1
    words = [(m.start(), stem(m.group(0))) for m in _WORD.finditer(text)]
    n = len(want)
    for i in range(len(words) - n + 1):
        if all(words[i + j][1] == want[j] for j in range(n)):
            return words[i][0]
    return -1


def mentions(fact: str, text: str) -> int:
    """Position of ``fact`` in ``text`` (see the module docstring), or -1. A text fact is found
    case-insensitively, else as the same words in another simple word form (``dermatologist``
    says ``dermatology``)."""
    if is_number(fact):
        return find_number(float(fact), text)
    pos = text.lower().find(fact.lower())
    return pos if pos >= 0 else _word_form_find(fact, text)


_QUOTED = re.compile(r"(?<!\w)'[^'\n]+'(?!\w)|\"[^\"\n]*\"|“[^”\n]*”|‘[^’\n]*’")


def stated_number(answer: str) -> float | None:
    """The number an answer states: its first number outside quoted names (``'Room 12' is
    higher by 5`` states 5), or None."""
    nums = _numbers(_QUOTED.sub(lambda m: " " * len(m.group(0)), answer))
    return nums[0][1] if nums else None


def raw_dump(answer: str) -> bool:
    """True when ``answer`` is, or holds, raw tool JSON: an object of two or more members or a
    list of objects, rather than the facts said in words."""
    dec = json.JSONDecoder()
    tries = 0
    for m in re.finditer(r"[\[{]", answer):
        tries += 1
        if tries > 50:
            break
        try:
            value, _ = dec.raw_decode(answer, m.start())
        except ValueError:
            continue
        if (isinstance(value, dict) and len(value) >= 2) or (
            isinstance(value, list) and any(isinstance(x, dict) for x in value)
        ):
            return True
    return False


def _said_apart(value: str, answer: str, expected: list[str]) -> bool:
    """True when ``value`` is in ``answer`` other than inside an expected value that contains it
    (``sales`` is not said by an answer that says ``sales 2``)."""
    if is_number(value):
        return find_number(float(value), answer) >= 0
    low, v = answer.lower(), value.lower()
    covers = [
        (j, j + len(e))
        for e in expected
        if v in e.lower() and e.lower() != v
        for j in _all(low, e.lower())
    ]
    return any(not any(a <= i and i + len(v) <= b for a, b in covers) for i in _all(low, v))


def _all(text: str, sub: str) -> list[int]:
    out, i = [], text.find(sub)
    while i >= 0 and sub:
        out.append(i)
        i = text.find(sub, i + 1)
    return out


def _label_positions(labels: list[str], low: str) -> list[int]:
    """First position of each label, skipping hits inside a longer label's hit."""
    spans: list[tuple[int, int, int]] = []  # (start, end, label index), longer labels first
    for i in sorted(range(len(labels)), key=lambda i: -len(labels[i])):
        lab = labels[i].lower()
        start = 0
        while True:
            j = low.find(lab, start)
            if j < 0:
                break
            if not any(s <= j < e for s, e, _ in spans):
                spans.append((j, j + len(lab), i))
            start = j + 1
    pos = [-1] * len(labels)
    for s, _e, i in sorted(spans):
        if pos[i] < 0:
            pos[i] = s
    return pos


GUARD_KINDS = frozenset({"precision", "dump"})
"""Kinds of unit that earn no credit: a failed one makes the answer's score 0."""


class Unit(NamedTuple):
    """One checked part of an answer."""

    kind: str
    """``fact``, ``row``, ``order``, ``precision`` or ``dump`` (guards: they only ever cost
    credit)."""
    description: str
    """What is checked."""
    passed: bool
    """Whether it holds."""
    detail: str = ""
    """What was wrong when it does not."""


def _row_units(rows: list[list[str]], answer: str, ordered: bool) -> list[Unit]:
    low = answer.lower()
    pos = _label_positions([r[0] for r in rows], low)
    cuts = sorted(p for p in pos if p >= 0)
    out = []
    for r, p in zip(rows, pos, strict=True):
        what = (
            f"the answer gives {r[0]!r} with {r[1:]}"
            if len(r) > 1
            else f"the answer names {r[0]!r}"
        )
        if p < 0:
            out.append(Unit("row", what, False, f"{r[0]!r} is not in the answer"))
            continue
        after = min((c for c in cuts if c > p), default=len(answer))
        near = answer[p + len(r[0]) : after]
        bad = [v for v in r[1:] if mentions(v, near) < 0]
        out.append(Unit("row", what, not bad, f"{bad} not said with {r[0]!r}" if bad else ""))
    if ordered and len(rows) > 1:
        ok = all(p >= 0 for p in pos) and pos == sorted(pos)
        out.append(
            Unit("order", "the rows come in the order asked for", ok, "" if ok else "out of order")
        )
    return out


def _fact_units(facts: list[str], rows: list[list[str]], answer: str) -> list[Unit]:
    """The units of the facts outside rows: a lone number is a count, total or value, which the
    answer must state (not a number anywhere in it); each other fact must be mentioned."""
    if len(facts) == 1 and not rows and is_number(facts[0]):
        said = stated_number(answer)
        ok = said is not None and math.isclose(
            said, float(facts[0]), rel_tol=REL_TOL, abs_tol=ABS_TOL
        )
        why = "" if ok else ("it states no number" if said is None else "it states another")
        return [Unit("fact", f"the answer states the number {facts[0]!r}", ok, why)]
    in_rows = {v.lower() for r in rows for v in r}
    units = []
    for f in facts:
        if f.lower() not in in_rows:
            ok = mentions(f, answer) >= 0
            why = "" if ok else "not in the final answer"
            units.append(Unit("fact", f"the answer mentions {f!r}", ok, why))
    return units


def _precision_unit(
    absent: list[str], facts: list[str], rows: list[list[str]], answer: str
) -> Unit:
    """The precision guard: the answer says none of the values of rows not asked for."""
    expected = [v for v in facts + [x for r in rows for x in r] if not is_number(v)]
    extra = [v for v in absent if _said_apart(v, answer, expected)]
    return Unit(
        "precision",
        "the answer says nothing of rows not asked for",
        not extra,
        f"also says {extra[:5]}" if extra else "",
    )


_DUMP = Unit(
    "dump",
    "the answer says its facts in words, not as the tools' raw JSON",
    False,
    "it holds raw JSON",
)
"""The unit an answer that holds the tools' raw JSON fails."""


def answer_units(outcome: Any, answer: str) -> list[Unit]:
    """Every unit of the expected answer (facts outside rows, rows, order) and the precision
    guard."""
    facts: list[str] = list(outcome.answer_facts)
    rows: list[list[str]] = [list(r) for r in getattr(outcome, "answer_rows", []) if r]
    answer = answer or ""
    units = _fact_units(facts, rows, answer)
    units += _row_units(rows, answer, bool(getattr(outcome, "answer_ordered", False)))
    if raw_dump(answer):
        units.append(_DUMP)
    absent = list(getattr(outcome, "answer_absent", []))
    if absent:
        units.append(_precision_unit(absent, facts, rows, answer))
    return units


ITEM_KEYS = (
    "items",
    "data",
    "results",
    "records",
    "entries",
    "collection",
    "values",
    "rows",
    "list",
    "content",
    "objects",
    "hits",
    "matches",
    "elements",
    "nodes",
    "resources",
)
"""Names of the member that holds the rows of a list envelope
(``{"data": [...], "next_page": ...}``), by preference."""
_ROW_KEYS = ("id", "gid", "uuid", "key")
META_WORDS = frozenset(
    {
        "has",
        "more",
        "next",
        "prev",
        "previous",
        "first",
        "last",
        "page",
        "pages",
        "per",
        "size",
        "limit",
        "offset",
        "start",
        "index",
        "total",
        "count",
        "cursor",
        "token",
        "object",
        "url",
        "uri",
        "href",
        "link",
        "links",
        "meta",
        "metadata",
        "pagination",
        "paging",
        "type",
        "kind",
        "status",
        "ok",
        "success",
        "request",
        "error",
        "errors",
        "warning",
        "warnings",
        "schemas",
        "info",
        "took",
        "attributions",
        "etag",
        "version",
        "query",
        "q",
        "search",
        "term",
        "filter",
        "filters",
        "sort",
        "fields",
        "expand",
        "include",
        "keyword",
        "keywords",
    }
)
"""Words of the names of a list envelope's other members: counts, cursors, pages, links, the
request's status (``has_more``, ``total_count``, ``next_page_token``, ``itemsPerPage``,
``request_id``, ``response_metadata``), and the request it echoes (a search's ``query``,
``search_term``, ``sort_by``)."""


_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
"""The words of a member's name (``nextPageToken`` -> next, Page, Token; ``has_more`` -> has,
more)."""
_NOT_ROWS = frozenset({"error", "errors", "warning", "warnings"})


def _head(name: str) -> str:
    """The last word of a member's name (``lastMessages`` -> ``messages``), lower case."""
    words = _NAME_WORDS.findall(name)
    return words[-1].lower() if words else name.lower()


def _meta(name: str) -> bool:
    """True when a member's name is one of an envelope's (see :data:`META_WORDS`)."""
    return any(w.lower() in META_WORDS for w in _NAME_WORDS.findall(name))


def _has_id(row: dict[str, Any]) -> bool:
    """True when an object has an id of its own (a member named as in ``_ROW_KEYS``)."""
    return any(k.lower() in _ROW_KEYS for k in row)


def _page_member(name: str, value: Any) -> bool:
    """True when a member can be a page's: named so, or a number, flag, null, object or list."""
    return _meta(name) or value is None or isinstance(value, (bool, int, float, dict, list))


def _row_lists(value: dict[str, Any]) -> list[str]:
    """The members of an envelope that may hold its rows: lists of objects not named like an
    envelope's members (or whose last word is not: ``lastMessages``, ``pageItems``), else those
    named so but holding rows with ids (a page whose rows are pages or links)."""
    lists = [
        k for k, v in value.items() if isinstance(v, list) and all(isinstance(r, dict) for r in v)
    ]
    named = [k for k in lists if not _meta(k)] or [k for k in lists if _head(k) not in META_WORDS]
    if named:
        return named
    return [
        k
        for k in lists
        if value[k] and k.lower() not in _NOT_ROWS and all(_has_id(r) for r in value[k])
    ]


def envelope_key(value: Any) -> str | None:
    """The member of a list envelope that holds its rows, or None when ``value`` is not one.

    An envelope is an object without an id of its own (``id``, ``gid``, ``uuid``, ``key``) whose
    other members are the page's: a member whose name says so (:data:`META_WORDS`), a number, a
    flag, null or an object (a cursor block, the subject of a list of follows). A text under another
    name (a ``name``, a ``handle``, a ``did``) makes it one object, not a page: its inner lists are
    its parts. The rows are the list of objects named as in :data:`ITEM_KEYS` (first by that order,
    empty or not, so an empty ``data`` is an empty page, not the page of another list), else the
    only list of objects (lists under envelope names, ``errors`` or ``warnings``, are not rows)."""
    if not isinstance(value, dict) or _has_id(value):
        return None
    if not all(_page_member(k, v) for k, v in value.items()):
        return None  # a text under another name: one object, not a page
    rows = _row_lists(value)
    low = {k.lower(): k for k in rows}
    named = next((low[n] for n in ITEM_KEYS if n in low), None)
    return named or (rows[0] if len(rows) == 1 else None)


def result_rows(value: Any) -> list[dict[str, Any]]:
    """The rows of a tool's result: a list of objects, or the list a real API wraps them in
    (:func:`envelope_key`: ``{"items": [...]}``, ``{"data": [...], "next": ...}``,
    ``{"results": [...], "count": 3}``, ``{"messages": [...], "has_more": false}``, one level of
    ``{"data": {"items": [...]}}``). One object (it has an id, or text fields of its own) is one
    row, not an envelope: [] then."""
    if isinstance(value, list):
        return [r for r in value if isinstance(r, dict)]
    key = envelope_key(value)
    if key is not None:
        return list(value[key])
    if not isinstance(value, dict) or any(k.lower() in _ROW_KEYS for k in value):
        return []
    inner = [v for k, v in value.items() if isinstance(v, dict) and not _meta(k)]
    if (
        len(inner) == 1
        and not any(isinstance(v, list) and v for v in value.values())
        and all(_meta(k) or isinstance(v, dict) for k, v in value.items())
    ):
        return result_rows(inner[0])
    return []


def stuffed_answer(answer: str, outputs: list[Any], absent: list[str]) -> str | None:
    """``answer`` stuffed with every row of the earlier lookups' results (two or more rows, listed
    plain or wrapped in an envelope: :func:`result_rows`), and, when the task names values a
    precise answer leaves out (``absent``: the request asked for only some rows), with the last
    lookup's rows and those values: the gate's ``answer_stuffed`` mutant, which a precise check
    scores below 1. None when there is nothing to stuff."""
    from .messages import compact

    lookups = [result_rows(out) for out in outputs[:-1]] + (
        [result_rows(outputs[-1])] if absent and outputs else []
    )
    every = [r for rs in lookups if len(rs) >= 2 for r in rs]
    parts = ([f"Everything I found: {compact(every)}"] if every else []) + (
        [f"Also: {', '.join(absent)}."] if absent else []
    )
    return f"{answer} {' '.join(parts)}" if parts else None


def facts_in_words(outcome: Any) -> str:
    """A read-only Outcome's expected answer said plainly (``Here is what I found: Desk Lamp: 3499;
    12.``), for a task that carries no reference answer of its own (``Outcome.answer``); empty when
    it has no facts."""
    rows = [list(r) for r in getattr(outcome, "answer_rows", []) if r]
    in_rows = {v.lower() for r in rows for v in r}
    parts = [r[0] + (": " + ", ".join(r[1:]) if len(r) > 1 else "") for r in rows]
    parts += [f for f in outcome.answer_facts if f.lower() not in in_rows]
    return f"Here is what I found: {'; '.join(parts)}." if parts else ""


def reference_answer(task: Any) -> str:
    """What the reference says at the end: the task's answer in words, else (a read-only task)
    its expected facts said plainly, else the last output (the baselines' ``reference`` policy and
    the trainers' demonstrations say the same)."""
    from .messages import compact

    if task.outcome.answer:
        return str(task.outcome.answer)
    if not task.outcome.mutates and (said := facts_in_words(task.outcome)):
        return said
    return (
        f"Done. Here is the result: {compact(task.outputs[-1])}"
        if task.outputs
        else "There was nothing to do."
    )


def answer_score(outcome: Any, answer: str) -> tuple[float, list[str]]:
    """The share of the expected answer present in ``answer``, 0 when it says an absent value; with
    reasons."""
    units = answer_units(outcome, answer)
    credit = [u for u in units if u.kind not in GUARD_KINDS]
    if not credit:
        return 0.0, ["outcome: the read-only task has no answer facts to check"]
    frac = sum(u.passed for u in credit) / len(credit)
    reasons = [f"outcome: {u.description}: {u.detail}" for u in units if not u.passed]
    if any(u.kind in GUARD_KINDS and not u.passed for u in units):
        frac = 0.0
    return frac, reasons


answer_check = deprecated_alias(answer_score, "answer_check")
