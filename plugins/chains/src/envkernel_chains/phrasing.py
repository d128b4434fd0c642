"""Turning a grounded chain into a person's request, with implicit intent (no LLM).

- The request **names no tool** and **gives no id the agent can look up**: entities are named the
  way a person would (``my pending order``, ``Kenji Fischer's held booking``, ``the event "Team
  standup" in the calendar "Work"``, ``the customer of that order``) — see
  :mod:`envkernel_chains.refs`, which checks that each such phrase picks exactly one row of the
  initial state. Intermediate lookups are left to the agent.
- Every **literal argument** of every call (a filter, a search text, a value to write) is in the
  words, so an agent can reproduce the reference calls exactly.
- A chain that changes state reads as **one goal** whose parts are joined (``unfreeze my account
  and set up a transfer from it to ...``), sometimes with a motive, never a narrated script
  (``..., then ..., and finally ...``); a row may be named by a superlative the data decides
  (``my order with the highest total``). A read-only chain becomes a question about the last
  result: 1–2 fields of one row, or, over the rows of a list, each row's value, how many, the
  highest or lowest, a total, the rows over a threshold or in a status, the rows in order. The
  answer is derived from the real rows and checked whole (:mod:`envkernel_kit.answers`: every
  row with its value, precision against rows not asked for), and the reference answer says it
  in words.
- The wording varies: a few greetings, the persona (``I'm Kenji Fischer.``) and a tone (brief,
  polite, busy), sentence frames, verb synonyms, values with their units (``a duration of 45
  minutes``), and several forms of each reference. :func:`skeleton` masks the literal values,
  so that the number of distinct phrasings per kind of operation can be counted.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from envkernel_kit.answers import is_number, mentions
from envkernel_kit.naming import human, is_id_name, plural, singular, words

from .ground import Step
from .refs import (
    CONTAINER_NOUNS,
    COUNTED_FIELDS,
    FIELD_WORDS,
    PERSONA_NOUNS,
    TITLE_FIELDS,
    Ref,
    adjective,
    attr_rank,
    field_words,
    is_person,
    norm,
    unit_of,
)
from .vocab import create_summary, nouns_of, summary_verb, vocab_key

NOTHING_ANSWER = "I can't help with that."
"""The do-nothing policy's answer; no answer fact may be contained in it."""

_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
_BAD_CHARS = re.compile(r'["\\\x00-\x1f]')

GREETINGS = ("",) * 12 + (
    "Hi! ",
    "Hello! ",
    "Hey there. ",
    "Hi there. ",
    "Good morning! ",
    "Hello. ",
)
TONES = {
    "brief": ("{G}.", "{G}, please.", "Need you to {g}."),
    "polite": (
        "Could you please {g}?",
        "Would you mind if I asked you to {g}?",
        "I'd be grateful if you could {g}.",
        "Kindly {g}.",
    ),
    "busy": (
        "I'm short on time, so please {g}.",
        "Quick one: {g}.",
        "In a hurry here: {g}, thanks.",
    ),
}
"""Frames of a speaker's tone (a persona speaks in one of them, or in the neutral FRAMES)."""
FRAMES = (
    "Please {g}.",
    "Could you {g}?",
    "Can you {g} for me?",
    "I'd like you to {g}.",
    "I need you to {g}.",
    "{G}, please.",
    "Would you {g}?",
    "Go ahead and {g}.",
    "Kindly {g}.",
    "I want you to {g}.",
)
MOTIVES = (
    "I'm sorting a few things out today, so ",
    "Before the end of the week, ",
    "For my records, ",
    "I'm getting things ready, so ",
    "To get this off my list, ",
)
ROLES = (
    ("a small-business owner", "I'm closing the books for the month"),
    ("an office manager", "I'm tidying up the team's records"),
    ("a freelance designer", "my plans for the week changed"),
    ("a project lead", "our schedule moved"),
    ("a nurse on night shifts", "my shifts changed"),
    ("a graduate student", "I'm getting my things in order before term"),
    ("a frequent traveler", "my plans changed"),
    ("a retired teacher", "I'm putting my affairs in order"),
    ("a new parent", "I have very little time this week"),
    ("an accountant", "I'm reconciling everything for the quarter"),
)
"""Roles a persona speaks in, each with a motive (seeded by the sampler's random generator)."""
VERB_SYNONYMS = {
    "cancel": ("cancel", "call off"),
    "delete": ("delete", "remove", "get rid of"),
    "remove": ("remove", "delete"),
    "create": ("create", "add", "set up"),
    "add": ("add", "create"),
    "ship": ("ship", "send out"),
    "archive": ("archive",),
    "freeze": ("freeze", "put a freeze on"),
    "unfreeze": ("unfreeze", "lift the freeze on"),
    "pin": ("pin",),
    "star": ("star",),
    "complete": ("complete", "mark {x} as completed"),
    "check in": ("check in",),
    "confirm": ("confirm", "go ahead and confirm"),
}
SHOW = ("show me {x}", "let me see {x}", "pull up {x}", "show {x} to me")
SHOW_AFTER = (
    "Show me {x} as it ends up.",
    "I'd like to see how {x} ends up.",
    "Let me see {x} in its final state.",
)
SHOW_AFTER_MANY = ("Show me {x} as they end up.", "I'd like to see how {x} end up.")
"""The row to see after goals that change it, in a sentence of its own."""
LIST_Q = (
    "Show me {c}, with the {f} of each.",
    "Can you list {c}? I need the {f} of each one.",
    "Please go through {c} and tell me the {f} of each.",
    "What are the {fs} of {c}?",
    "I'd like to see {c} and their {fs}.",
    "List {c} for me, including the {f} of each.",
)
ONE_Q = (
    "What is {w}?",
    "Can you tell me {w}?",
    "I need to know {w}.",
    "Could you look up {w} for me?",
    "Please find out {w}.",
    "What's {w}?",
)
TWO_Q = (
    "What are {w}?",
    "Can you tell me {w}?",
    "I need {w}.",
    "Could you look up {w} for me?",
    "Please find {w}.",
)
COUNT_Q = (
    "Can you count {c} for me?",
    "I need a count of {c}.",
    "Please count {c} for me.",
    "What's the count of {c}?",
)
SUP_Q = (
    "Which of {c} has the {w} {f}?",
    "Among {c}, which {n} has the {w} {f}?",
    "Find the {n} with the {w} {f} among {c}.",
)
TOTAL_Q = (
    "What is the total {f} of {c}?",
    "Add up the {f} of {c} for me.",
    "What do {c} come to in {f}, all together?",
)
COND_Q = (
    "Which of {c} have {h}?",
    "List {c} with {h}.",
    "I only care about {c} with {h}. Which are they?",
)
COUNT_IF_Q = (
    "How many of {c} have {h}?",
    "Of {c}, how many have {h}?",
    "Can you count how many of {c} have {h}?",
)
COUNT_WHICH_Q = (
    "How many of {c} {v}?",
    "Of {c}, how many {v}?",
    "Could you count how many of {c} {v}?",
)
TOTAL_WHICH_Q = (
    "What is the total {f} of {c} {r}?",
    "Of {c} {r}, add up the {f}, please.",
    "Counting only {c} {r}, what is their total {f}?",
)
SUP_WHICH_Q = (
    "Of {c} {r}, which has the {w} {f}?",
    "Among {c} {r}, which one has the {w} {f}?",
    "Looking only at {c} {r}, which has the {w} {f}?",
)
"""Questions over the rows in a status: ``{c}`` the rows, ``{r}`` the condition after them
(``of type checking``)."""
AVG_Q = (
    "What is the average {f} of {c}?",
    "On average, what is the {f} of {c}?",
    "Can you work out the average {f} of {c}?",
)
TOP_VALUE_Q = (
    "What is the {w} {f} among {c}?",
    "What's the {w} {f} of any of {c}?",
    "Among {c}, what is the {w} {f}?",
)
DIFF_Q = (
    "Among {c}, what is the difference in {f} between {x} and {y}?",
    "Of {c}, how far apart are {x} and {y} in {f}?",
    "Looking at {c}: by how much do {x} and {y} differ in {f}?",
)
SORT_Q = (
    "Rank {c} by {f}, {d}, and give me each one's {f}.",
    "List {c} {d} {f}, with the {f} of each.",
)
OBJ_Q = (
    "Look up {x} and tell me {its} {f}.",
    "Find {x} and tell me {its} {f}.",
    "Could you check {x} and give me {its} {f}?",
)


QUESTION_SHAPES = (
    "count",
    "total",
    "each",
    "sorted",
    "superlative",
    "condition",
    "which",
    "count_if",
    "top_value",
    "average",
    "count_which",
    "total_which",
    "superlative_which",
    "difference",
)
"""The shapes of a question about the rows a list returned (``Phraser.about_rows``)."""


def render(v: Any) -> str:
    """A value as written in a request (strings with spaces in double quotes)."""
    if isinstance(v, str):
        return f'"{v}"' if (" " in v or not v) else v
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return json.dumps(v)
    if isinstance(v, list):
        return ", ".join(render(x) for x in v)
    return str(v)


def fact_text(v: Any) -> str:
    """A value as an answer fact, a substring of its compact JSON (``149.0`` -> ``149``)."""
    if isinstance(v, str):
        return v
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return json.dumps(v, ensure_ascii=False)


def fact_ok(v: Any) -> bool:
    """True for a value that makes a checkable fact (not too short, not a timestamp, no escapes)."""
    if isinstance(v, bool) or v is None:
        return False
    if isinstance(v, str):
        return (
            3 <= len(v.strip()) <= 80
            and v == v.strip()
            and not _BAD_CHARS.search(v)
            and not _TIMESTAMP.match(v)
        )
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer()):
        return abs(v) >= 10
    if isinstance(v, float):
        return len(fact_text(v)) >= 3
    return False


def said_value(key: str, v: Any) -> str:
    """A value with its unit, as a person says it: ``45 minutes``, ``3819460 bytes``."""
    u = unit_of(key)
    if v == {} or v == []:
        return "empty"  # never "set to {}"
    return (
        f"{render(v)} {u[1]}"
        if u and isinstance(v, (int, float)) and not isinstance(v, bool)
        else render(v)
    )


_ENUM = re.compile(r"[a-z]+(?:_[a-z]+)+")


def enum_words(v: Any) -> str:
    """A value as written, a snake-case code in words: ``checked_in`` -> ``checked in``,
    ``needs_action`` -> ``needs action``."""
    return v.replace("_", " ") if isinstance(v, str) and _ENUM.fullmatch(v) else render(v)


_YOU = re.compile(r"^(?:us[aeiu]|uni|uri|ut|eu|one\b)", re.I)


def article(phrase: str) -> str:
    """``a`` or ``an`` for ``phrase`` (``an amount``, ``a size``, ``a user``, ``a unit``)."""
    return "an" if phrase[:1].lower() in "aeiou" and not _YOU.match(phrase) else "a"


NOUN_FIXES = {"people": "person", "peoples": "person", "persons": "person"}
"""Nouns made from an API's path that are no English singular (Stripe's ``/people``)."""
PLURAL_FIXES = {
    "person": "people",
    "people": "people",
    "data": "data",
    "media": "media",
    "staff": "staff",
    "news": "news",
    "metadata": "metadata",
    "feedback": "feedback",
    "info": "info",
    "information": "information",
}


def noun_words(noun: str) -> str:
    """An entity noun in words, as a singular (``people`` -> ``person``)."""
    ws = human(noun).split(" ")
    ws[-1] = NOUN_FIXES.get(ws[-1], ws[-1])
    return " ".join(ws)


def plural_noun(phrase: str) -> str:
    """A noun phrase in the plural: ``person`` -> ``people``, ``recently played`` ->
    ``recently played items`` (never ``recently playeds``), a word already plural kept."""
    ws = phrase.split(" ")
    last = ws[-1]
    if last in PLURAL_FIXES:
        ws[-1] = PLURAL_FIXES[last]
    elif last.endswith("ed") and len(ws) > 1:
        ws.append("items")
    else:
        ws[-1] = plural(last)
    return " ".join(ws)


HTTP_VERBS = frozenset({"post", "put", "patch", "get"})
POSTED = frozenset({"message", "comment", "reply", "note", "post", "update", "review", "answer"})
"""Nouns whose rows are posted (``post a message``): there ``post`` is the person's verb, not
HTTP's."""
ENGLISH_VERBS = frozenset(
    {
        "share",
        "star",
        "pin",
        "like",
        "follow",
        "comment",
        "reply",
        "invite",
        "book",
        "order",
        "transfer",
        "pay",
        "schedule",
        "tag",
        "label",
        "note",
        "review",
        "flag",
        "mark",
        "report",
        "charge",
        "refund",
        "void",
    }
)
"""Verbs that are also nouns: kept when the row is named by the same word (``share`` a file)."""


NO_VERBS = frozenset({"oauth", "api", "admin", "auth", "v1", "v2", "v3"})


def verb_of(info: Any) -> str:
    """The verb a person says for a tool: the tool's verb phrase without the words that name its
    rows or an HTTP method (``collections create`` -> ``create``, ``emails send`` -> ``send``,
    Stripe's ``post_invoices_invoice_pay`` -> ``pay``), else the plain verb of its kind."""
    verb = info.verb or (words(info.name)[0] if words(info.name) else "")
    nouns = {singular(w) for w in words(info.noun)} | set(words(info.noun))
    last_noun = singular(words(info.noun)[-1]) if words(info.noun) else ""

    def kept(w: str) -> bool:
        if w in HTTP_VERBS:
            return w == "post" and last_noun in POSTED
        if w in NO_VERBS or (
            w.endswith("s")
            and not w.endswith("ss")
            and w != singular(w)
            and w not in ENGLISH_VERBS
            and len(verb.split(" ")) > 1
        ):
            return (
                False  # "domains create", "oauth revoke": a plural noun or a prefix, never the verb
            )
        return not (singular(w) in nouns and (w != singular(w) or w not in ENGLISH_VERBS))

    said = [w for w in verb.split(" ") if w and kept(w)]
    if said:
        return " ".join(said)
    tail: list[str] = []
    for w in reversed(words(info.name)):
        if singular(w) in nouns or w in nouns or w in HTTP_VERBS or w in ("id", "by"):
            break
        tail.insert(0, w)
    if info.kind == "action" and tail:
        return (
            "mark {x} as " + " ".join(tail[1:])
            if tail[0] == "mark" and len(tail) > 1
            else " ".join(tail[-2:])
        )
    return {"create": "create", "update": "update", "delete": "delete"}.get(
        info.kind, tail[-1] if tail else verb or "do"
    )


def plural_phrase(fw: str) -> str:
    """A field phrase in the plural: ``execution date`` -> ``execution dates``, ``size in bytes`` ->
    ``sizes in bytes``."""
    head, sep, tail = fw.partition(" in ")
    ws = head.split(" ")
    if not ws[-1] or ws[-1].isupper():
        return fw
    return " ".join(ws[:-1] + [plural(ws[-1])]) + (sep + tail if sep else "")


def counts(key: str) -> bool:
    """True for a field that counts things: a known one (``nights``, ``stars``) or one named by a
    plural (``total_chapters``, ``views``), so ``fewer than 100 total chapters``,
    ``the most views``."""
    if key in COUNTED_FIELDS:
        return True
    ws = words(key)
    last = ws[-1] if ws else ""
    return (
        len(last) > 3
        and last.endswith("s")
        and not last.endswith(("ss", "us", "is", "ics"))
        and singular(last) != last
        and unit_of(key) is None
        and key not in FIELD_WORDS
    )


def compared(key: str, over: bool, t: str, rng: Any) -> str:
    """A number condition as a person says it after ``have`` / ``with``: ``a price above 200``, and
    for a field that counts things ``more than 3.5 stars`` / ``fewer than 4 nights`` (never
    ``a stars above 3.5``)."""
    fw = field_words(key)
    if counts(key):
        return f"{'more' if over else 'fewer'} than {t} {fw}"
    op = (
        rng.choice(("over", "above", "more than"))
        if over
        else rng.choice(("under", "below", "less than"))
    )
    return f"{article(fw)} {fw} {op} {t}"


def counted(key: str, v: Any) -> str:
    """A count as a person says it: ``4 nights``, ``1 star``."""
    ws = field_words(key).split(" ")
    if v == 1:
        ws[0] = singular(ws[0])
    return f"{render(v)} {' '.join(ws)}"


def attr(key: str, v: Any) -> str:
    """A field and its value as a person says them: ``quantity 2``, ``title "Team standup"``,
    ``a duration of 45 minutes``, ``4 nights``, ``marked private`` / ``not marked optional`` (never
    ``set to yes``)."""
    if isinstance(v, bool):
        return f"{'marked' if v else 'not marked'} {field_words(key)}"
    if v == {} or v == []:  # never "effort {}" or "redirect uris ."
        return f"no {field_words(key)}"
    u = unit_of(key)
    if u and isinstance(v, (int, float)):
        return f"{article(u[0])} {u[0]} of {said_value(key, v)}"
    if key in COUNTED_FIELDS and isinstance(v, int) and not isinstance(v, bool):
        return counted(key, v)
    head, sep, tail = field_words(key).partition(" in ")
    if sep and _num(v):  # "a duration of 30 months", never "duration in months 30"
        return f"{article(head)} {head} of {render(v)} {tail}"
    return f"{field_words(key)} {enum_words(v)}"


def role_words(role: str) -> str:
    """A foreign key's role in words: ``from_account`` -> ``source account`` (never
    ``the from account``)."""
    ws = human(role).split(" ")
    if len(ws) > 1 and ws[0] in ("from", "to"):
        ws[0] = "source" if ws[0] == "from" else "destination"
    return " ".join(ws)


def pronoun(ref: Ref | None) -> str:
    """The possessive for a row: ``their`` for a person, ``its`` otherwise."""
    return "their" if ref is not None and ref.person else "its"


def join(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    items = [i for i in items if i]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


_NUM = re.compile(r"\d+(\.\d+)?")
_TOKEN = re.compile(r"[A-Za-z0-9_.@+-]+")


def skeleton(text: str, values: list[str]) -> str:
    """The request with its literal values masked: what counts as one phrasing."""
    vals = sorted({v.lower() for v in values if v}, key=len, reverse=True)
    out = text
    for v in vals:
        low = out.lower()
        i = low.find(v)
        while i >= 0:
            out = out[:i] + "\u2026" + out[i + len(v) :]
            low = out.lower()
            i = low.find(v, i + 1)
    return _NUM.sub("#", out)


SUMMABLE = frozenset(
    {
        "amount",
        "total",
        "price",
        "balance",
        "quantity",
        "cost",
        "nights",
        "stock",
        "seats",
        "count",
        "fee",
        "subtotal",
    }
)
"""Number fields whose total over rows means something (and any field with a unit, like
``size_bytes``)."""


def _distinct(vals: list[str]) -> bool:
    """True when no two values are equal (case-insensitively): labels an answer can be split by (one
    inside another, ``sales`` and ``sales 2``, is told apart by :mod:`envkernel_kit.answers`)."""
    low = [v.lower() for v in vals]
    return len(set(low)) == len(low)


def _categories(rows: list[dict[str, Any]], label: str | None) -> list[str]:
    """Status-like fields (text values shared by several rows) of every row, apart from the
    label."""
    return [
        k
        for k in rows[0]
        if attr_rank(k)[0] == 1
        and k != label
        and all(isinstance(r.get(k), str) and fact_ok(r.get(k)) for r in rows)
        and len({r[k] for r in rows}) >= 2
    ]


def _apart(rows: list[dict[str, Any]], k: str, labels: list[str]) -> bool:
    """No value of field ``k`` is, or holds, a label (an answer would be split at the wrong row)."""
    low = [a.lower() for a in labels]
    return not any(
        a in fact_text(r[k]).lower() or fact_text(r[k]).lower() in a for r in rows for a in low
    )


def _most(
    f: str, high: bool, rng: random.Random, counted_words: tuple[str, str] = ("most", "fewest")
) -> str:
    """The superlative of field ``f``: ``highest`` / ``largest`` (``lowest`` / ``smallest``), or
    for a field that counts things ``most`` / ``fewest`` (never ``the largest stars``)."""
    if counts(f):
        return counted_words[0] if high else counted_words[1]
    return rng.choice(("highest", "largest")) if high else rng.choice(("lowest", "smallest"))


def _quote(label: str) -> str:
    """A row's label as a request names it, in double quotes."""
    return f'"{label}"'


def _the(c: str) -> str:
    """A collection phrase after ``of``/``among``: ``all the travelers`` -> ``the travelers``."""
    for lead in ("all the ", "all "):
        if c.startswith(lead):
            return "the " + c[len(lead) :]
    return c


ADJECTIVE_STATUS = frozenset(
    {"status", "state", "response", "stage", "tier", "loyalty_tier", "priority", "level"}
)
"""Status fields whose value reads as an adjective of the row (``the cancelled ones``)."""


KIND_FIELDS = frozenset({"type", "kind", "sort"})
"""Status-like fields that say what sort of row it is (``the accounts of type checking``)."""
GROUP_FIELDS = frozenset({"category", "department", "section", "genre", "group", "team", "region"})
"""Status-like fields that put a row in a group (``the products in the category audio``)."""


def _in_status(k: str, v: Any) -> tuple[str, str, str]:
    """A condition on a status field, after ``how many of ...``, as a noun phrase and after the rows
    it narrows: (``are cancelled``, ``the cancelled ones``, ``that are cancelled``), (``are of type
    checking``, ``the ones of type checking``, ``of type checking``), (``are in the category
    audio``,
    ...), or (``have the currency USD``, ``the ones with the currency USD``, ``with the currency
    USD``)."""
    if k in ADJECTIVE_STATUS and adjective(v):
        a = (
            enum_words(v.lower()) if isinstance(v, str) and v.isupper() else enum_words(v)
        )  # "which ones are deleted", never "are DELETED"
        return f"are {a}", f"the {a} ones", f"that are {a}"
    fw = field_words(k)
    if k in KIND_FIELDS or k.endswith("_type") or k.endswith("_kind"):
        return (
            f"are of {fw} {enum_words(v)}",
            f"the ones of {fw} {enum_words(v)}",
            f"of {fw} {enum_words(v)}",
        )
    if k in GROUP_FIELDS:
        return (
            f"are in the {fw} {enum_words(v)}",
            f"the ones in the {fw} {enum_words(v)}",
            f"in the {fw} {enum_words(v)}",
        )
    return (
        f"have the {fw} {enum_words(v)}",
        f"the ones with the {fw} {enum_words(v)}",
        f"with the {fw} {enum_words(v)}",
    )


def _with_quals(text: str, head: str, quals: list[str]) -> str:
    """Rows with their own conditions: after the head when the owner has modifiers of its own
    (``the files larger than 2 MB in the folder with ...``), else at the end."""
    if not quals:
        return text
    lead = next(
        (
            f"the {head} {rel} "
            for rel in ("in", "for", "of")
            if text.startswith(f"the {head} {rel} ")
        ),
        "",
    )
    if lead and _modified(text[len(lead) :]):
        return (
            f"the {head} "
            + " and ".join(quals)
            + " "
            + lead[len(f"the {head} ") :]
            + text[len(lead) :]
        )
    return text + " " + " and ".join(quals)


def _with_fields(s: str, fields: list[str]) -> str:
    """A state with the fields it sets: ``shared with Ana, with role editor``."""
    if not fields:
        return s
    return s + (", with " if " with " in s else " with ") + join(fields)


def _bare_create(step: Step) -> bool:
    """True for a create that says nothing of the new row: no value of its own, no row it belongs
    to (``create a new user``)."""
    if step.info.kind != "create" or step.refs:
        return False
    return not any(v not in (None, "", [], {}) for v in step.literal.values())


def _overlaps(t: str, low_expected: list[str]) -> bool:
    """True when the text is one of the expected (lowercased) values, or overlaps one."""
    return any(t.lower() in x or x in t.lower() for x in low_expected)


def _name_text(k: str, v: Any) -> str:
    """The text of a row's name field (a name-like key holding text), else ``""``."""
    return fact_text(v) if attr_rank(k)[0] == 0 and isinstance(v, str) and fact_ok(v) else ""


@dataclass
class _Among:
    """The rows of a question in a status: those whose ``k`` is ``v`` (``hit``, indexes into
    ``labels`` and ``vals``, the values of ``f``)."""

    step: Step
    label: str
    labels: list[str]
    c: str
    k: str
    v: Any
    f: str
    vals: list[float]
    hit: list[int]


@dataclass
class _Asked:
    """A question's checked parts: the facts the request does not say, its rows, what a precise
    answer leaves out."""

    facts: list[str]
    rows: list[list[str]]
    absent: list[str]


def _asked(q: Question, low: str, answer: str) -> _Asked | None:
    """The question's facts, rows and absent values once the request (``low``, lowercased) is
    known; None when the request says a row it asks for, or every fact."""
    given = [f for f in q.facts if f.lower() in low or f.lower() in NOTHING_ANSWER.lower()]
    if given and q.rows:
        return None  # a row the request already names cannot be checked
    facts = [f for f in q.facts if f not in given]
    if not facts:
        return None
    absent = [
        a
        for a in dict.fromkeys(q.absent)
        if a.lower() not in low
        and mentions(a, answer) < 0
        and a.lower() not in NOTHING_ANSWER.lower()
    ]
    return _Asked(facts, q.rows, absent)


def _mods(withs: list[str], quals: list[str]) -> str:
    """A row's attributes and conditions after its noun, in one ``with`` (``with a duration of 30
    minutes, reason "knee pain" and start time on or before X``, never ``... "knee pain" with start
    time ...``)."""
    if not withs:
        return " " + " and ".join(quals) if quals else ""
    joined = withs + [
        q[len("with ") :] for q in quals if q.startswith("with ") and not q.startswith("with the ")
    ]
    others = [q for q in quals if not (q.startswith("with ") and not q.startswith("with the "))]
    return " with " + join(joined) + ("" if not others else " " + " and ".join(others))


_QUOTED = re.compile(r'"[^"]*"')


def _modified(phrase: str) -> bool:
    """True for a reference phrase with modifiers of its own (``the transfer with reference X``,
    ``the file in the folder "Travel"``): modifiers after it would read as its own."""
    bare = _QUOTED.sub("", phrase)
    return any(w in bare for w in (" with ", " of ", " for ", " in ", " on or ", " whose "))


def _owner_prep(owner: Ref, rel: str) -> str:
    """The preposition before a row's owner after ``my <rows>``: ``with`` a person
    (``my appointments with Dr. Lopes``), ``in`` a container, ``for`` anything else."""
    if owner.person:
        return "with"
    return "in" if rel == "in" or singular(owner.noun) in CONTAINER_NOUNS else "for"


def _num(v: Any) -> bool:
    """True for a number worth comparing (not a boolean)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _fmt(x: float) -> str:
    """A number as said in a request or answer (``12.0`` -> ``12``, ``3.14159`` -> ``3.14``)."""
    x = round(x, 2)
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}".rstrip("0")


def _between(a: float, b: float) -> float | None:
    """A round threshold strictly between ``a`` < ``b`` (None when there is none at two
    decimals)."""
    for step in (100, 50, 10, 5, 1, 0.5, 0.1, 0.01):
        t = math.floor(b / step) * step
        if t == b:
            t -= step
        if a < t < b:
            return round(t, 2)
    return None


def _threshold(vals: list[float], rng: random.Random) -> tuple[float, bool] | None:
    """A round threshold between two neighbouring distinct values, and whether the rows over it
    (True) or under it are asked for; None when the values leave no such threshold."""
    distinct = sorted(set(vals))
    if len(distinct) < 2:
        return None
    j = rng.randrange(len(distinct) - 1)
    t = _between(distinct[j], distinct[j + 1])
    if t is None:
        return None
    return t, rng.random() < 0.5


@dataclass
class Question:
    """A question about a read-only chain's result, with what checks its answer."""

    text: str
    facts: list[str]
    answer: str
    """The reference answer, in words."""
    rows: list[list[str]] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    ordered: bool = False
    kind: str = "get"
    key: str = ""
    """What is asked, apart from the words (``superlative/total/max``): two questions about the same
    calls with different keys are different tasks (see ``Phraser.taken``)."""


@dataclass
class Phrased:
    """A phrased request."""

    text: str
    facts: list[str]
    kind: str
    """The kind of operation it asks for (create, update, delete, action, get, list)."""
    skeleton: str
    rows: list[list[str]] = field(default_factory=list)
    """Expected answer rows (see ``Outcome.answer_rows``)."""
    absent: list[str] = field(default_factory=list)
    """Values a precise answer leaves out (see ``Outcome.answer_absent``)."""
    ordered: bool = False
    answer: str = ""
    """The reference answer in words."""
    persona: dict[str, str] = field(default_factory=dict)
    """Who speaks (``Task.persona``)."""
    key: str = ""
    """What a question asks (``Question.key``; empty for a change)."""


def all_refs(ref: Ref | None, out: list[Ref]) -> None:
    """Appends ``ref`` and every reference it is built on (owners, bases) to ``out``."""
    if ref is None:
        return
    out.append(ref)
    all_refs(ref.owner, out)
    all_refs(ref.base, out)
    for o in ref.more_owners:
        all_refs(o, out)


class Phraser:
    """Phrases one grounded chain (see the module docstring)."""

    def __init__(
        self,
        steps: list[Step],
        rng: random.Random,
        *,
        persona_share: float = 0.5,
        taken: frozenset[str] | set[str] = frozenset(),
        shapes: frozenset[str] | set[str] = frozenset(),
    ) -> None:
        self.steps = steps
        self.only = shapes
        """Question shapes over rows to ask (empty: every one; see ``QUESTION_SHAPES``)."""
        self.rng = rng
        self.taken = taken
        """Keys of the questions already asked about these calls (a read-only chain drawn again asks
        something else)."""
        self.mentioned: set[tuple[str, str]] = set()
        self.it: tuple[str, str] | None = None
        """The row ``obj`` says as ``it`` (the new row a new row is made in)."""
        self.values: list[str] = []
        self.vocab = nouns_of(s.info for s in steps)
        """Names -> the user's words for them, from the tools' summaries (see ``vocab``)."""
        self.persona: Ref | None = None
        if rng.random() < persona_share:
            self.persona = self.persona_candidate()
        self.tone = rng.choice(("", "", "brief", "polite", "busy"))
        """The speaker's tone ("" neutral)."""
        self.role, self.motive = rng.choice(ROLES) if self.persona is not None else ("", "")
        """The persona's role and motive (empty without a persona)."""

    def noun(self, noun: str) -> str:
        """An entity noun in the user's words (singular): the spec's summary's when it names the
        rows better than the name (``mentioned message``, not ``chat get mentioned message``)."""
        said = noun_words(noun)
        return self.vocab.get(vocab_key(noun), said)

    # -- the persona -----------------------------------------------------------------------------

    def persona_candidate(self) -> Ref | None:
        """The first person of a kind that can speak, named by literals only (no owner, filter or
        search qualifiers)."""
        refs: list[Ref] = []
        for s in self.steps:
            for r in s.refs.values():
                all_refs(r, refs)
        for r in refs:
            if (
                r.kind == "desc"
                and singular(r.noun) in PERSONA_NOUNS
                and r.owner is None
                and not r.adjectives
                and len(r.quals) == len(r.idents)
                and not r.more_owners
                and (r.title or r.withs or r.idents)
            ):
                return r
        return None

    def is_persona(self, ref: Ref) -> bool:
        return self.persona is not None and ref.key == self.persona.key

    def intro(self) -> str:
        """The opening: a greeting, or who the speaker is."""
        rng = self.rng
        p = self.persona
        if p is None:
            return rng.choice(GREETINGS)
        self.values.extend(p.values)

        def said(k: str, v: Any) -> str:  # a person says their own name without quotes
            return (
                v
                if isinstance(v, str) and (k in TITLE_FIELDS or k.endswith("_name"))
                else render(v)
            )

        facts = [f"my {field_words(k)} is {said(k, v)}" for k, v in list(p.idents) + list(p.withs)]
        if (
            p.title and "@" in p.title
        ):  # a user named by an address: "My user name is kai@x.org", never "I'm kai@x.org"
            k = next((c for c, _op, v in p.where if v == p.title), "email")
            facts = [f"my {field_words(k)} is {p.title}"] + facts
            if self.role:
                return rng.choice(
                    (
                        f"Hi, I'm {self.role}; {join(facts)}. ",
                        f"{join(facts).capitalize()}; I'm {self.role}. ",
                    )
                )
            return rng.choice((f"Hi, {join(facts)}. ", f"{join(facts).capitalize()}. "))
        if p.title:
            name = p.title
            if self.role and rng.random() < 0.8:
                return rng.choice(
                    (
                        f"Hi, I'm {name}, {self.role}. ",
                        f"This is {name}, {self.role}. ",
                        f"I'm {name}, {self.role}. ",
                    )
                )
            if facts:
                return rng.choice(
                    (f"I'm {name} and {join(facts)}. ", f"This is {name}; {join(facts)}. ")
                )
            return rng.choice(
                (
                    f"Hi, I'm {name}. ",
                    f"This is {name}. ",
                    f"{name} here. ",
                    f"My name is {name}. ",
                    f"I'm {name}. ",
                )
            )
        return rng.choice(
            (
                f"Hi, {join(facts)}. ",
                f"{join(facts).capitalize()}. ",
                f"For reference, {join(facts)}. ",
            )
        )

    # -- references
    # ---------------------------------------------------------------------------------

    def obj(self, ref: Ref) -> str:
        """A reference as the object of a verb (``that order`` once it has been mentioned)."""
        if self.is_persona(ref):
            return "me"
        if self.it is not None and ref.key == self.it:
            return "them" if ref.person or is_person(ref.noun) else "it"
        if ref.key in self.mentioned:
            return (
                f"that {self.noun(ref.noun)}"
                if ref.kind != "new"
                else self.rng.choice(
                    (f"the new {self.noun(ref.noun)}", f"that new {self.noun(ref.noun)}")
                )
            )
        text = self._first(ref)
        self.mentioned.add(ref.key)
        return text

    def _first_text(self, ref: Ref) -> str:
        """What the first mention of ``ref`` would say (without mentioning it)."""
        saved, vals = set(self.mentioned), list(self.values)
        state = self.rng.getstate()
        text = self._first(ref)
        self.mentioned, self.values = saved, vals
        self.rng.setstate(state)
        return text

    def poss(self, ref: Ref, head: str) -> str:
        """``my <head>``, ``Kenji Fischer's <head>`` or ``the <head> of <ref>``."""
        if self.is_persona(ref):
            return f"my {head}"
        if (
            ref.kind == "desc"
            and ref.person
            and ref.title
            and ref.owner is None
            and not ref.withs
            and not ref.quals
            and not ref.adjectives
            and ref.key not in self.mentioned
            and "@" not in ref.title
        ):  # never "sara@x.org's display name"
            self.mentioned.add(ref.key)
            self.values.append(ref.title)
            return f"{ref.title}'s {head}"
        return f"the {head} of {self.obj(ref)}"

    def _first(self, ref: Ref) -> str:
        noun = self.noun(ref.noun)
        if ref.kind == "new":
            return f"the new {noun}"
        if ref.kind == "literal":
            self.values.extend(ref.values)
            return (
                f"no {noun}" if ref.value in ({}, [], "") else f"{noun} {render(ref.value)}"
            )  # never "assignee {}"
        if ref.kind == "of":
            assert ref.base is not None
            role = role_words(ref.role)
            if self.is_persona(ref.base):
                return f"my {role}"
            return f"the {role} of {self.obj(ref.base)}"
        self.values.extend(ref.values)
        core, bare = self._core(ref, noun)
        mods = _mods([attr(k, v) for k, v in ref.withs], ref.quals)
        mine = next((o for o in ref.more_owners if self.is_persona(o)), None)
        if ref.owner is not None and mine is not None and not self.is_persona(ref.owner):
            return self._mine_by_owner(ref, core, mods, mine)
        if ref.owner is not None:
            text, mods = self._owned(ref, core, mods)
        else:
            text = core if bare else f"the {core}"
        text += mods
        for o in ref.more_owners:
            text += f" for {self.obj(o)}"
        return text

    def _core(self, ref: Ref, noun: str) -> tuple[str, bool]:
        """A described row's head with its title, and whether it is the bare title (a person's
        name): ``Ana Lima``, ``user Ana Lima``, ``open ticket "Printer jam"``."""
        adjs = [human(a) for a in dict.fromkeys(ref.adjectives)]
        head = " ".join(adjs + [noun])
        if ref.title and ref.person:
            # never "get rid of sara@x.org": "the user sara@x.org"
            bare_ok = not adjs and ref.owner is None and "@" not in ref.title
            if not bare_ok:
                return f"{head} {ref.title}", False
            core = self.rng.choice((ref.title, f"{head} {ref.title}"))
            return core, core == ref.title
        if ref.title:
            return f'{head} "{ref.title}"', False
        return head, False

    def _mine_by_owner(self, ref: Ref, core: str, mods: str, mine: Ref) -> str:
        """The speaker's own rows filtered by another owner: "my appointments with Dr. Lopes",
        never "Dr. Lopes's appointments for me"."""
        o = ref.owner
        assert o is not None
        text = f"my {core}{mods} {_owner_prep(o, ref.owner_rel)} {self.obj(o)}"
        for extra in ref.more_owners:
            if extra is not mine:
                text += f" for {self.obj(extra)}"
        return text

    def _owned(self, ref: Ref, core: str, mods: str) -> tuple[str, str]:
        """A row said by its owner, and the modifiers still to add after it: ``Ana's booking``,
        ``the file "a.txt" in the folder "Travel"``."""
        o = ref.owner
        assert o is not None
        if ref.owner_rel == "poss":
            text = self.poss(o, core)
            lead = f"the {core} of "
            rel, rest = "of", (text[len(lead) :] if text.startswith(lead) else None)
        else:
            rel = "in" if ref.owner_rel == "in" else "for"
            rest = self.obj(o)
            text = f"the {core} {rel} {rest}"
        if not mods or rest is None:
            return text, mods
        # the owner has modifiers of its own: this row's come first, so that each reads one way
        # ("the transaction with the highest amount among those for the source account of the
        # transfer with reference X", never "... of the transfer with reference X with the highest
        # amount")
        among = ref.best is not None and _modified(rest)
        text = f"the {core}{mods}" + (f", among those {rel} {rest}" if among else f" {rel} {rest}")
        return text, ""

    def collection(self, step: Step) -> str:
        """The rows a list call returns: ``my pending orders``,
        ``all the products in category audio``."""
        sc = step.scope or {}
        noun = self.noun(step.info.noun)
        adjs = [human(a) for a in dict.fromkeys(sc.get("adjectives", []))]
        head = " ".join(adjs + [plural_noun(noun)])
        owners: list[tuple[str, Ref]] = sc.get("owners", [])
        self.values.extend(sc.get("values", []))
        mine = next((o for _c, o in owners[1:] if self.is_persona(o)), None)
        if mine is not None and not self.is_persona(owners[0][1]):
            # "my appointments with Dr. Lopes", never "Dr. Lopes's appointments for me"
            o = owners[0][1]
            rel = "in" if singular(o.noun) in CONTAINER_NOUNS else "for"
            text = f"my {head} {_owner_prep(o, rel)} {self.obj(o)}"
            owners = [owners[0]] + [(c, x) for c, x in owners[1:] if x is not mine]
        elif owners:
            text = self._owners_rows(owners[0][1], head)
        else:
            every = f"every {' '.join(adjs + [noun])}" if not sc.get("quals") else f"all the {head}"
            text = self.rng.choice((f"all the {head}", f"all {head}", every))
        text = _with_quals(text, head, sc.get("quals", []))
        for _c, o in owners[1:]:
            text += f" for {self.obj(o)}"
        return text

    def _owners_rows(self, o: Ref, head: str) -> str:
        """Rows by their owner: ``Ana's bookings``, ``the files in the folder "Travel"``."""
        if o.person or self.is_persona(o):
            return self.poss(o, head)
        if singular(o.noun) in CONTAINER_NOUNS:
            return f"the {head} in {self.obj(o)}"
        return f"the {head} for {self.obj(o)}"

    # -- imperatives ------------------------------------------------------------------------------

    def _verb(self, verb: str) -> str:
        return self.rng.choice(VERB_SYNONYMS.get(verb, (verb,)))

    def _prep(self, param: str, ref: Ref, verb: str = "", kind: str = "") -> str:
        ws = set(words(param))
        if kind in ("delete", "action", "update"):
            return (
                "in"
                if singular(ref.noun) in CONTAINER_NOUNS
                else ("from" if kind == "delete" else "of")
            )
        if verb in ("invite", "add", "post", "attach") and not (
            is_person(ref.noun) or self.is_persona(ref)
        ):
            return "in" if singular(ref.noun) in CONTAINER_NOUNS else "to"
        if ws & {"from", "sender", "source", "author"}:
            return "from"
        if ws & {"to", "recipient", "payee", "target", "destination"}:
            return "to"
        if singular(ref.noun) in CONTAINER_NOUNS:
            return "in"
        if ws & {"doctor", "host", "instructor", "teacher", "agent"}:
            return "with"
        if is_person(ref.noun) or self.is_persona(ref):
            return "for"
        return "with"

    def _skip(self, step: Step, name: str, ref: Ref) -> bool:
        """True for a linked argument the agent derives from the target (an attendee's event)."""
        t = step.target
        p = step.info.params.get(name)
        if (
            t is not None
            and p is not None
            and p.parent
            and step.info.kind != "create"
            and (t.kind == "new" or t.owner is not None)
        ):
            return True
        if t is None or name not in step.links:
            return False
        if ref.kind == "of" and ref.base is not None and ref.base.key == t.key:
            return True
        return t.owner is not None and t.owner.key == ref.key

    def _ref_parts(self, step: Step, skip: set[str]) -> list[str]:
        parts = []
        for name, ref in step.refs.items():
            if name in skip or self._skip(step, name, ref):
                continue
            p = step.info.params.get(name)
            kind = step.info.kind if p is not None and p.parent else ""
            parts.append(f"{self._prep(name, ref, kind=kind)} {self.obj(ref)}")
        return parts

    def _literals(self, step: Step, skip: set[str] = frozenset()) -> list[tuple[str, Any]]:  # type: ignore[assignment]
        out = []
        for k, v in step.literal.items():
            if k in step.refs or k in skip:
                continue
            out.append((k, v))
            self.values.append(str(v))
            if isinstance(v, str):
                self.values.append(render(v))
        return out

    def goal(self, step: Step, bare: bool = False) -> str:
        """What a mutating call achieves, as an imperative (``bare``: a create's new row without its
        verb, ``a new event in it, with title ...``)."""
        info = step.info
        noun = self.noun(info.noun)
        verb = verb_of(info)
        if info.kind == "create":
            verb = summary_verb(info.spec.description, verb, info.name) or verb
            return self._summary_goal(step, bare, noun, verb) or self._create_goal(
                step, bare, noun, verb
            )
        key_name = next((p.name for p in info.params.values() if p.role == "key"), None)
        skip = {key_name} if key_name else set()
        tref = step.target

        def target() -> str:
            return self.obj(tref) if tref is not None else f"the {noun}"

        if info.kind == "update":
            return self._update_goal(step, skip, target)
        return self._action_goal(step, skip, verb, target)

    def _summary_goal(self, step: Step, bare: bool, noun: str, verb: str) -> str | None:
        """A create in its summary's words, with its values, when its name does not say what it
        does (see ``vocab.create_summary``), then the rows it belongs to: ``elevate a client
        session for the client "Ana", with a duration of 90 seconds``; else None."""
        if bare or (step.refs and singular(verb) == singular(step.info.noun)):
            return None  # "share <the file> with ...": the shared goal's
        said = create_summary(step.info.spec.description, verb, noun, step.info.name)
        if said is None:
            return None
        said += "".join(f" {self._prep(n, r, verb)} {self.obj(r)}" for n, r in step.refs.items())
        lits = [attr(k, x) for k, x in self._literals(step)]
        return _with_fields(said, lits)

    def _create_goal(self, step: Step, bare: bool, noun: str, verb: str) -> str:
        """A create's goal: the new row with its values and the rows it belongs to."""
        v = self._verb("create" if verb in ("new", "insert") else verb)
        lits = [attr(k, x) for k, x in self._literals(step)]
        preps = [(self._prep(name, ref, verb), ref) for name, ref in step.refs.items()]
        if singular(verb) == singular(step.info.noun) and preps:
            return self._shared_goal(v, lits, preps)
        s = ("" if bare else f"{v} ") + f"{self.rng.choice(('a new', article(noun)))} {noun}"
        # flags go last: never "a user with marked active, ..."
        flags = [x for x in lits if x.startswith(("marked ", "not marked "))]
        lits = [x for x in lits if x not in flags]

        def flagged(text: str, withs: list[str]) -> str:
            return text + ((", " if withs else " ") + join(flags) if flags else "")

        said = (set(self.mentioned), list(self.values), self.rng.getstate())
        others, withs = self._create_phrases(preps, lits)
        if others and withs and any(" with " in o for o in others):
            # never two "with" phrases in a row ("for the sender of the message with text "Hi"
            # with name ops"): the new row's own values come first, so they are phrased first
            # too (a row is introduced where it is first said: never "with that doctor, ... for
            # the patient of Dr. Lopes's appointment")
            self.mentioned, self.values = said[0], said[1]
            self.rng.setstate(said[2])
            withs, others = self._create_phrases(preps, lits, withs_first=True)
            return flagged(s + " with " + join(withs) + " " + " ".join(others), withs)
        if others:
            s += " " + " ".join(others)
        if withs:
            s += (", with " if others and len(withs) > 1 else " with ") + join(withs)
        return flagged(s, withs or others)

    def _create_phrases(
        self, preps: list[tuple[str, Ref]], lits: list[str], withs_first: bool = False
    ) -> tuple[list[str], list[str]]:
        """The new row's references (``for the order``) and its ``with`` values, phrased in that
        order (``withs_first``: the ``with`` references first; returned as (withs, others))."""
        if withs_first:
            ref_withs = [self.obj(r) for pp, r in preps if pp == "with"]
            others = [f"{pp} {self.obj(r)}" for pp, r in preps if pp != "with"]
        else:
            others = [f"{pp} {self.obj(r)}" for pp, r in preps if pp != "with"]
            ref_withs = [self.obj(r) for pp, r in preps if pp == "with"]
        # a reference with its own "with ..." goes last: never "the product of my order with
        # quantity 2, quantity 2"
        withs = (
            [w for w in ref_withs if " with " not in w]
            + lits
            + [w for w in ref_withs if " with " in w]
        )
        return (withs, others) if withs_first else (others, withs)

    def _shared_goal(self, v: str, lits: list[str], preps: list[tuple[str, Ref]]) -> str:
        """A create named for its verb (share_file: share <the file> with ...)."""
        s = f"{v} {self.obj(preps[0][1])}"
        rest = [f"{pp} {self.obj(r)}" for pp, r in preps[1:]]
        if rest:
            s += " " + " ".join(rest)
        if lits:  # never two "with" phrases in a row
            s += (", with " if " with " in s else " with ") + join(lits)
        return s

    def _update_goal(self, step: Step, skip: set[str], target: Callable[[], str]) -> str:
        """An update's goal: the fields it sets, on the row it changes."""
        tref = step.target
        changes = self._changes(step, skip)
        if not changes:
            return f"update {target()}"
        if len(changes) == 1:
            return self._one_change_goal(tref, changes[0], target)
        mine = tref is not None and self.is_persona(tref)
        its_word = "my" if mine else pronoun(tref)
        t = "my details" if mine else target()
        rendered = [(f, self.obj(x) if isinstance(x, Ref) else x) for f, x in changes]
        if len(rendered) >= 3 and not mine:
            # several fields of one row: what the row becomes, not a list of settings
            return f"change {t} so that " + join(so_that(rendered, its_word))
        sets = join([f"{f} to {x}" for f, x in rendered])
        its = join([f"{its_word} {f} is {x}" for f, x in rendered])
        return self.rng.choice(
            (
                f"update {t}, setting {sets}",
                f"change {t} so that {its}",
                f"update {t}: set {sets}",
            )
        )

    def _one_change_goal(
        self, tref: Ref | None, change: tuple[str, Any], target: Callable[[], str]
    ) -> str:
        """An update of one field."""
        f, x = change
        if tref is not None and self.rng.random() < 0.8:
            w = self.poss(tref, f)
            xs = self.obj(x) if isinstance(x, Ref) else x
            return self.rng.choice(
                ("change {w} to {x}", "set {w} to {x}", "update {w} to {x}")
            ).format(w=w, x=xs)
        if tref is not None and self.is_persona(tref):  # never "update me so its email is ..."
            xs = self.obj(x) if isinstance(x, Ref) else x
            return self.rng.choice(
                ("change my {f} to {x}", "set my {f} to {x}", "update my {f} to {x}")
            ).format(f=f, x=xs)
        t = target()
        xs = self.obj(x) if isinstance(x, Ref) else x
        return f"update {t} so {pronoun(tref)} {f} is {xs}"

    def _action_goal(self, step: Step, skip: set[str], verb: str, target: Callable[[], str]) -> str:
        """A delete's or another action's goal: the verb, the row, its references and values."""
        t = target()
        parts = self._ref_parts(step, skip)
        lits = self._literals(step, skip)
        tail = ""
        if parts:
            tail += " " + " ".join(parts)
        if lits:
            # a reference with its own "with ...": a comma sets the values apart
            stacked = " with " in t or any(" with " in p for p in parts)
            tail += (", with " if stacked else self.rng.choice((" with ", ", with "))) + join(
                [attr(k, x) for k, x in lits]
            )
        v = (
            self._verb(verb if verb in ("delete", "remove", "revoke") else "delete")
            if step.info.kind == "delete"
            else self._verb(verb)
        )
        if "{x}" in v:
            return v.format(x=t) + tail
        return f"{v} {t}{tail}"

    def _changes(self, step: Step, skip: set[str]) -> list[tuple[str, Any]]:
        """The fields an update sets, as (field words, value said or the reference it points to)."""
        info = step.info
        lits = self._literals(step, skip)
        changes: list[tuple[str, Any]] = [
            ((unit_of(k) or (field_words(k), ""))[0], said_value(k, x)) for k, x in lits
        ]
        for name, ref in step.refs.items():
            if name in skip or self._skip(step, name, ref):
                continue
            p = info.params.get(name)
            fw = field_words(p.field or name) if p else field_words(name)
            fw = " ".join(w for w in fw.split() if w != "id") or human(ref.noun)
            changes.append((fw, ref))
        return changes

    def state(self, step: Step, row: Ref) -> list[str] | None:
        """What a further change to ``row`` (already named) leaves it as, after the row: ``pinned``,
        ``shared with recipient email ...``, ``with its name set to backup.zip``; None when the
        change is not to ``row`` itself or has no such wording (it is then said as an
        imperative)."""
        info = step.info
        key_name = next((p.name for p in info.params.values() if p.role == "key"), None)
        skip = {key_name} if key_name else set()
        if info.kind == "create":
            return self._made_state(step, row)
        if step.target is None or step.target.key != row.key:
            return None
        if info.kind == "update":
            return self._updated_state(step, row, skip)
        if info.kind != "action" or participle(verb_of(info)) is None:
            return None
        parts = self._ref_parts(step, skip)
        lits = self._literals(step, skip)
        s = " ".join([participle(verb_of(info)) or verb_of(info)] + parts)
        return [_with_fields(s, [attr(k, x) for k, x in lits])]

    def _made_state(self, step: Step, row: Ref) -> list[str] | None:
        """A create whose first reference is ``row``: ``shared with ...``; None for a new row of
        its own (said as a goal)."""
        verb = verb_of(step.info)
        first = next(iter(step.refs.values()), None)
        said = participle(verb)
        if singular(verb) != singular(step.info.noun) or first is None or first.key != row.key:
            return None
        if said is None:
            return None
        preps = [(self._prep(name, ref, verb), ref) for name, ref in list(step.refs.items())[1:]]
        lits = [attr(k, x) for k, x in self._literals(step)]
        s = " ".join([said] + [f"{pp} {self.obj(r)}" for pp, r in preps])
        return [_with_fields(s, lits)]

    def _updated_state(self, step: Step, row: Ref, skip: set[str]) -> list[str] | None:
        """An update to ``row``: ``with its name set to ...``, ``moved to the folder ...``."""
        changes = self._changes(step, skip)
        if not changes:
            return None

        def moves(x: Any) -> bool:
            return isinstance(x, Ref) and singular(x.noun) in CONTAINER_NOUNS

        moved = [f"moved to {self.obj(x)}" for _f, x in changes if moves(x)]
        rendered = [
            (f, self.obj(x) if isinstance(x, Ref) else x) for f, x in changes if not moves(x)
        ]
        return became(rendered, pronoun(row)) + moved

    def grouped(self, muts: list[Step]) -> list[str] | None:
        """The changes of a chain grouped by the row they concern, each group one goal: ``get the
        message in the channel "general" pinned, with its text set to "..."``, ``set up a new file
        in the folder "Travel", with name design-logo.png, starred and shared with ...``. None when
        the chain has one change, or grouping would say a row before the change that makes it."""
        if len(muts) < 2:
            return None
        groups = _ordered_groups(_groups_by_row(muts))
        if groups is None or len(groups) == len(muts):
            return None  # every change concerns another row: nothing to group
        out: list[str] = []
        for g in groups:
            row = g[0].target
            if row is None or len(g) == 1 or self.is_persona(row):
                out += [self.goal(s) for s in g]
            else:
                out.append(self._group_goal(g, row, first_group=not out))
        return out

    def _group_goal(self, g: list[Step], row: Ref, first_group: bool) -> str:
        """One goal for the changes of one row: ``book a new appointment ..., and have it checked
        in``, ``change X so that its Y is Z``, ``get X archived, and ...``."""
        head = g[0]
        t = ""
        if head.info.kind == "create":
            lead, states = self.goal(head), []
        else:
            lead = ""
            said = (set(self.mentioned), list(self.values), self.rng.getstate())
            t = self.obj(row)
            first = self.state(head, row)
            if first is None:  # no wording for the first change after its row: said as before
                self.mentioned, self.values = said[0], said[1]
                self.rng.setstate(said[2])
                lead, states = self.goal(head), []
            else:
                states = list(first)
        rest: list[str] = []
        cur = row
        for s in g[1:]:
            if lead and not states and not rest and _makes_in(s, cur):
                # a new row in the new row: one goal ("set up a calendar with name Family and a
                # new event in it, with ...")
                self.it = cur.key
                lead += " and " + self.goal(s, bare=True)
                self.it = None
                assert s.target is not None
                cur = s.target
                continue
            st = self.state(s, cur)
            if st is None:
                rest.append(self.goal(s))
            else:
                states += st
        said_states = _states(states)
        if lead:  # a new row: "book a new appointment ..., and have it checked in"
            it = "it" if first_group and cur is row else self.obj(cur)
            text = lead + (f", and have {it} {said_states}" if states else "")
        elif all(x.startswith("with ") for x in states):
            # only fields set: what the row becomes, never "get X with its Y set to Z"
            text = f"change {t} so that " + join([_SET.sub(r"\1 \2 is ", x) for x in states])
        else:
            text = self.rng.choice(("get {t} {s}", "have {t} {s}")).format(t=t, s=said_states)
        return text + ("" if not rest else ", and " + join(rest))

    def show(self, step: Step, sentence: bool = False) -> str:
        """A read at the end of a chain that changes state: ``show me ...`` (``sentence``: a
        sentence of its own after the goals, ``Show me the new booking as it ends up.``)."""
        tops = [e for e in step.elements if e.parent is None]
        if step.info.kind == "list" or (tops and tops[0].group is not None and len(tops) > 1):
            x = self.collection(step)
        elif step.target is not None:
            x = (
                "my details" if self.is_persona(step.target) else self.obj(step.target)
            )  # never "pull up me"
        else:
            x = self.collection(step)
        self._literals(step, set(step.refs))
        if sentence:
            many = (
                step.info.kind == "list"
                or x.startswith(("all ", "every "))
                or (x.startswith("my ") and x.endswith("s"))
            )
            frames = SHOW_AFTER_MANY if many else SHOW_AFTER
            return self.rng.choice(frames).format(x=x, X=x[:1].upper() + x[1:])
        return self.rng.choice(SHOW).format(x=x)

    # -- questions
    # ------------------------------------------------------------------------------------

    def question(self, step: Step) -> Question | None:
        """A question about the last call's result, with its answer facts and reference answer."""
        tops = [e for e in step.elements if e.parent is None]
        if not tops:
            return self._scalar_question(step)
        if (
            step.info.kind != "list"
            and (tops[0].group is None or len(tops) == 1)
            and step.target is not None
        ):
            return self._row_question(step, tops[0].row, step.target)
        return self.about_rows(step, [e.row for e in tops])

    def _scalar_question(self, step: Step) -> Question | None:
        """A question about a call that returned one value (not a row): ``What is the balance for
        ...?``."""
        out = step.output
        if not fact_ok(out):
            return None
        what = " ".join(w for w in words(step.info.name)[1:])
        x = self.obj(step.target) if step.target is not None else ""
        return Question(
            f"What is the {what}" + (f" for {x}" if x else "") + "?",
            [fact_text(out)],
            f"The {what} is {fact_text(out)}.",
            key="scalar",
        )

    def _row_question(self, step: Step, row: dict[str, Any], ref: Ref) -> Question | None:
        """One or two fields of the one row a call returned, not said in the request already."""
        rng = self.rng
        probe = self._first_text(ref)
        self._literals(step, set(step.refs))
        keys = [
            k
            for k, v in row.items()
            if fact_ok(v) and not is_id_name(k) and fact_text(v).lower() not in probe.lower()
        ]
        keys = sorted(keys, key=attr_rank)[:5]
        if not keys:
            return None
        k = min(len(keys), rng.choice((1, 1, 2)))
        for _ in range(4):  # another field when this one was asked already
            chosen = sorted(rng.sample(keys, k), key=keys.index)
            if "get/" + "+".join(chosen) not in self.taken:
                break
        else:
            return None
        f = join([field_words(c) for c in chosen])
        if not self.is_persona(ref) and rng.random() < 0.25:
            text = rng.choice(OBJ_Q).format(x=self.obj(ref), f=f, its=pronoun(ref))
        else:
            text = rng.choice(ONE_Q if k == 1 else TWO_Q).format(w=self.poss(ref, f))
        facts = list(dict.fromkeys(fact_text(row[c]) for c in chosen))
        answer = join([f"the {field_words(c)} is {fact_text(row[c])}" for c in chosen])
        return Question(
            text,
            facts,
            answer[:1].upper() + answer[1:] + ".",
            absent=self._absent(step, chosen, {x.lower() for x in facts}),
            key="get/" + "+".join(chosen),
        )

    def _absent(self, step: Step, keys: list[str], expected: set[str]) -> list[str]:
        """What a precise answer leaves out (a stuffed answer says them): values of ``keys`` in
        rows that earlier lookups of the same table returned, other than the expected ones, and
        the names of the rows earlier lookups returned that the chain did not go through."""
        table = next((e.table for e in step.elements if e.parent is None), None)
        low_expected = [x.lower() for x in expected]
        out = dict.fromkeys(self._other_values(table, keys, expected, low_expected))
        out.update(dict.fromkeys(self._other_names(low_expected)))
        return list(out)

    def _other_values(
        self, table: str | None, keys: list[str], expected: set[str], low_expected: list[str]
    ) -> Iterator[str]:
        """Values of ``keys`` in the rows of ``table`` the chain's calls returned, other than the
        expected ones (no numbers: one elsewhere in an answer is too easily said by chance)."""
        if table is None:
            return
        for e in self._top_elements(self.steps, table):
            for t in (fact_text(v) for v in map(e.row.get, keys) if fact_ok(v)):
                if (
                    t.lower() not in expected
                    and not _overlaps(t, low_expected)
                    and not is_number(t)
                ):
                    yield t

    def _other_names(self, low_expected: list[str]) -> Iterator[str]:
        """The names of the rows earlier lookups returned that the chain did not go through."""
        path = {
            str(v).lower() for s in self.steps for v in s.args.values() if isinstance(v, (str, int))
        }
        for e in self._top_elements(self.steps[:-1], None):
            if str(e.row.get("id", "")).lower() not in path:
                names = (_name_text(k, v) for k, v in e.row.items())
                yield from (t for t in names if t and not _overlaps(t, low_expected))

    @staticmethod
    def _top_elements(steps: list[Step], table: str | None) -> Iterator[Any]:
        """The top-level elements the steps returned (of ``table`` only, unless None)."""
        for s in steps:
            for e in s.elements:
                if e.parent is None and (table is None or e.table == table):
                    yield e

    def about_rows(self, step: Step, rows: list[dict[str, Any]]) -> Question | None:
        """A question about the rows a list call returned: each row's value, how many, the
        highest or lowest, a total, the rows over a threshold, or the rows in order. Every answer
        is derived from the real rows and checked whole (each row with its value)."""
        if not rows:
            return None
        ranked = sorted(rows[0], key=attr_rank)
        label = _row_label(rows, ranked)
        c = self.collection(step)
        if c.startswith("every "):  # "which of every folder" -> "which of all the folders"
            head, _, last = c[6:].rpartition(" ")
            c = "all the " + (head + " " if head else "") + plural_noun(last)
        self._literals(step, set(step.refs))
        noun = self.noun(step.info.noun)
        nouns = plural_noun(noun)
        nums = (
            [
                k
                for k in ranked
                if k != label and not is_id_name(k) and all(_num(r.get(k)) for r in rows)
            ]
            if len(rows) >= 2
            else []
        )
        shapes = _question_shapes(rows, label, nums)
        if self.only:
            shapes = [x for x in shapes if x in self.only]
        # these rows were asked about already: ask what only the whole set decides (no plain
        # listing again)
        if self.taken:
            shapes = [x for x in shapes if x != "each"]
        self.rng.shuffle(shapes)
        for shape in shapes:
            q = self._shape(shape, step, rows, label, nums, c, noun, nouns)
            if q is not None and q.key not in self.taken:
                return q
        return None

    def _shape(
        self,
        shape: str,
        step: Step,
        rows: list[dict[str, Any]],
        label: str | None,
        nums: list[str],
        c: str,
        noun: str,
        nouns: str,
    ) -> Question | None:
        """One question of ``shape`` about ``rows`` (None when the rows cannot carry it)."""
        if shape == "count":
            return self._count_shape(step, rows, c, nouns)
        if shape == "total":
            return self._total_shape(step, rows, nums, c)
        if shape in ("count_if", "top_value", "average", "count_which"):
            return self._number_shape(shape, step, rows, label, nums, c)
        if label is None:
            return None
        labels = [fact_text(r[label]) for r in rows]
        low_labels = [x.lower() for x in labels]

        def apart(k: str) -> bool:
            """No value of ``k`` is, or holds, a label (it would split the answer at the wrong
            row)."""
            return not any(
                a in fact_text(r[k]).lower() or fact_text(r[k]).lower() in a
                for r in rows
                for a in low_labels
            )

        if shape == "each":
            return self._each_shape(step, rows, label, labels, c, apart)
        if shape == "which":
            return self._which_shape(step, rows, label, labels, c)
        nums = [k for k in nums if apart(k)]
        if not nums:
            return None
        f = self.rng.choice(nums[:3])
        vals = [float(r[f]) for r in rows]
        if shape in ("total_which", "superlative_which", "difference"):
            return self._labelled_shape(shape, step, rows, label, labels, nums, c, noun)
        ranked = {
            "superlative": self._superlative_shape,
            "condition": self._condition_shape,
            "sorted": self._sorted_shape,
        }.get(shape)
        return None if ranked is None else ranked(step, f, vals, label, labels, c, noun)

    def _count_shape(
        self, step: Step, rows: list[dict[str, Any]], c: str, nouns: str
    ) -> Question | None:
        """How many rows there are."""
        rng, n = self.rng, len(rows)
        frames = (
            COUNT_Q
            if not c.startswith("all ")
            else (
                "How many {ns} are there?",
                "How many {ns} are there in all?",
                "Can you count {c} for me?",
            )
        )
        text = rng.choice(frames).format(
            c=c, ns=c[4:].removeprefix("the ") if c.startswith("all ") else nouns
        )
        if mentions(str(n), text) >= 0:
            return None
        return Question(
            text,
            [str(n)],
            rng.choice(("There are {n}.", "I count {n} of them.", "{n} in all.")).format(n=n),
            absent=self._absent(step, [], set()),
            kind="count",
            key="count",
        )

    def _total_shape(
        self, step: Step, rows: list[dict[str, Any]], nums: list[str], c: str
    ) -> Question | None:
        """What a summable field of the rows adds up to."""
        rng = self.rng
        f = rng.choice([k for k in nums if k in SUMMABLE or unit_of(k)])
        fw = field_words(f)
        total = round(sum(float(r[f]) for r in rows), 2)
        if fw.split(" ")[0] in ("total", "sum"):  # never "the total total of the invoices"
            text = rng.choice(
                ("What do the {fs} of {c} add up to?", "Add up the {fs} of {c} for me.")
            ).format(fs=plural_phrase(fw), c=c)
        else:
            text = rng.choice(TOTAL_Q).format(c=c, f=fw)
        if mentions(_fmt(total), text) >= 0:
            return None
        return Question(
            text,
            [_fmt(total)],
            f"The total {fw} is {_fmt(total)}.",
            absent=self._absent(step, [], set()),
            kind="total",
            key=f"total/{f}",
        )

    def _each_shape(
        self,
        step: Step,
        rows: list[dict[str, Any]],
        label: str,
        labels: list[str],
        c: str,
        apart: Callable[[str], bool],
    ) -> Question | None:
        """One field of each row, by its label."""
        vals = [
            k
            for k in sorted(rows[0], key=attr_rank)
            if k != label
            and not is_id_name(k)
            and all(fact_ok(r.get(k)) for r in rows)
            and apart(k)
        ]
        if not vals:
            return None
        f = self.rng.choice(vals[:3])
        fw = field_words(f)
        table = [[lab, fact_text(r[f])] for lab, r in zip(labels, rows, strict=True)]
        text = self.rng.choice(LIST_Q).format(c=c, f=fw, fs=plural_phrase(fw))
        answer = "; ".join(f"{lab}: {v}" for lab, v in table) + "."
        return Question(
            text,
            [x for r in table for x in r],
            answer,
            rows=table,
            absent=self._absent(step, [label], set(x.lower() for x in labels)),
            kind="list",
            key=f"each/{f}",
        )

    def _which_shape(
        self, step: Step, rows: list[dict[str, Any]], label: str, labels: list[str], c: str
    ) -> Question | None:
        """A condition on a status: "which of my channels are archived?"."""
        rng = self.rng
        cats = [
            k
            for k in rows[0]
            if attr_rank(k)[0] == 1
            and k != label
            and all(isinstance(r.get(k), str) and fact_ok(r.get(k)) for r in rows)
        ]
        if not cats:
            return None
        k = rng.choice(cats)
        v = rng.choice([r[k] for r in rows])
        hit = [lab for lab, r in zip(labels, rows, strict=True) if r[k] == v]
        miss = [lab for lab, r in zip(labels, rows, strict=True) if r[k] != v]
        if not miss or len(hit) > 12:
            return None
        text = rng.choice(("Which of {c} {v}?", "Of {c}, which ones {v}?")).format(
            c=c, v=_in_status(k, v)[0]
        )
        return Question(
            text,
            hit,
            join(hit) + ".",
            rows=[[h] for h in hit],
            absent=miss + self._absent(step, [label], {h.lower() for h in hit}),
            kind="condition",
            key=f"which/{k}/{v}",
        )

    def _superlative_shape(
        self,
        step: Step,
        f: str,
        vals: list[float],
        label: str,
        labels: list[str],
        c: str,
        noun: str,
    ) -> Question | None:
        """The row with the highest (or lowest) value of ``f``."""
        rng, fw = self.rng, field_words(f)
        high = rng.random() < 0.5
        best = max(vals) if high else min(vals)
        if vals.count(best) != 1:
            return None
        i = vals.index(best)
        word = _most(f, high, rng)
        text = rng.choice(SUP_Q).format(c=c, w=word, f=fw, n=noun)
        others = [x for j, x in enumerate(labels) if j != i]
        return Question(
            text,
            [labels[i]],
            f"{labels[i]}, with {article(fw)} {fw} of {_fmt(best)}.",
            rows=[[labels[i]]],
            absent=others + self._absent(step, [label], {labels[i].lower()}),
            kind="superlative",
            key=f"superlative/{f}/{'max' if high else 'min'}",
        )

    def _condition_shape(
        self,
        step: Step,
        f: str,
        vals: list[float],
        label: str,
        labels: list[str],
        c: str,
        noun: str,
    ) -> Question | None:
        """The rows whose ``f`` is over (or under) a threshold that splits them."""
        rng = self.rng
        if (split := _threshold(vals, rng)) is None:
            return None
        t, over = split
        hit = [lab for lab, v in zip(labels, vals, strict=True) if (v > t if over else v < t)]
        miss = [lab for lab, v in zip(labels, vals, strict=True) if not (v > t if over else v < t)]
        if not hit or not miss or len(hit) > 12:
            return None
        text = rng.choice(COND_Q).format(c=c, h=compared(f, over, _fmt(t), rng))
        return Question(
            text,
            hit,
            join(hit) + ".",
            rows=[[h] for h in hit],
            absent=miss + self._absent(step, [label], {h.lower() for h in hit}),
            kind="condition",
            key=f"condition/{f}/{'over' if over else 'under'}/{_fmt(t)}",
        )

    def _sorted_shape(
        self,
        step: Step,
        f: str,
        vals: list[float],
        label: str,
        labels: list[str],
        c: str,
        noun: str,
    ) -> Question | None:
        """The rows ordered by ``f`` (only when no two values tie)."""
        if len(set(vals)) < len(vals):
            return None
        rng, fw = self.rng, field_words(f)
        high = rng.random() < 0.5
        order = sorted(range(len(vals)), key=lambda j: -vals[j] if high else vals[j])
        table = [[labels[j], _fmt(vals[j])] for j in order]
        text = rng.choice(SORT_Q).format(
            c=c,
            f=fw,
            d="from the highest to the lowest" if high else "from the lowest to the highest",
        )
        answer = ", ".join(f"{lab} ({v})" for lab, v in table) + "."
        return Question(
            text,
            [x for r in table for x in r],
            answer,
            rows=table,
            ordered=True,
            absent=self._absent(step, [label], {x.lower() for x in labels}),
            kind="sorted",
            key=f"sorted/{f}/{'desc' if high else 'asc'}",
        )

    def _number_shape(
        self,
        shape: str,
        step: Step,
        rows: list[dict[str, Any]],
        label: str | None,
        nums: list[str],
        c: str,
    ) -> Question | None:
        """A question whose answer is one number the rows decide: how many rows meet a threshold or
        are in a status, the highest or lowest value, the average. Rows outside the condition are
        what a precise answer leaves out (a count may name the rows it counted)."""
        if label is None:
            # no name for the rows a precise answer leaves out: a dump of every row would pass
            return None
        c = _the(c)  # "how many of the travelers", not "of all the travelers"
        labels = [fact_text(r[label]) for r in rows]
        extra = self._absent(step, [label], {x.lower() for x in labels})
        if shape == "count_which":
            return self._count_which_q(rows, label, labels, c, extra)
        usable = [k for k in nums if _apart(rows, k, labels)]
        if shape == "average":
            usable = [k for k in usable if k in SUMMABLE or unit_of(k)]
        if not usable:
            return None
        f = self.rng.choice(usable[:3])
        vals = [float(r[f]) for r in rows]
        by_shape = {
            "count_if": self._count_if_q,
            "top_value": self._top_value_q,
        }
        return by_shape.get(shape, self._average_q)(f, vals, labels, c, extra)

    def _count_which_q(
        self,
        rows: list[dict[str, Any]],
        label: str,
        labels: list[str],
        c: str,
        extra: list[str],
    ) -> Question | None:
        """How many of the rows are in a status (``count_which``)."""
        rng = self.rng
        k = rng.choice(_categories(rows, label))
        v = rng.choice(sorted({r[k] for r in rows}))
        hit = [i for i, r in enumerate(rows) if r[k] == v]
        if not 1 <= len(hit) < len(rows):
            return None
        cond = _in_status(k, v)[0]  # "are cancelled", "have the specialty dermatology"
        text = rng.choice(COUNT_WHICH_Q).format(c=c, v=cond)
        n = str(len(hit))
        if mentions(n, text) >= 0:
            return None
        miss = [labels[i] for i in range(len(rows)) if i not in hit]
        one = cond.replace("are ", "is ", 1).replace("have ", "has ", 1)
        said = (
            ("Just 1.", f"Only 1 of them {one}.")
            if n == "1"
            else ("{n} of them " + cond + ".", "There are {n}.", "I count {n}.")
        )
        return Question(
            text,
            [n],
            rng.choice(said).replace("{n}", n),
            absent=miss + extra,
            kind="count",
            key=f"count_which/{k}/{v}",
        )

    def _count_if_q(
        self, f: str, vals: list[float], labels: list[str], c: str, extra: list[str]
    ) -> Question | None:
        """How many of the rows have ``f`` over or under a threshold (``count_if``)."""
        rng = self.rng
        if (split := _threshold(vals, rng)) is None:
            return None
        t, over = split
        hit = [i for i, v in enumerate(vals) if (v > t if over else v < t)]
        text = rng.choice(COUNT_IF_Q).format(c=c, h=compared(f, over, _fmt(t), rng))
        n = str(len(hit))
        if mentions(n, text) >= 0:
            return None
        miss = [labels[i] for i in range(len(vals)) if i not in hit]
        said = (
            ("Just 1.", "Only 1 of them.")
            if n == "1"
            else ("{n} of them.", "There are {n}.", "I count {n}.")
        )
        return Question(
            text,
            [n],
            rng.choice(said).format(n=n),
            absent=miss + extra,
            kind="count",
            key=f"count_if/{f}/{'over' if over else 'under'}/{_fmt(t)}",
        )

    def _top_value_q(
        self, f: str, vals: list[float], labels: list[str], c: str, extra: list[str]
    ) -> Question | None:
        """The highest or lowest value of ``f`` (``top_value``); the winner may be named, no other
        row."""
        rng = self.rng
        fw = field_words(f)
        high = rng.random() < 0.5
        best = max(vals) if high else min(vals)
        word = _most(f, high, rng, counted_words=("highest number of", "lowest number of"))
        text = rng.choice(TOP_VALUE_Q).format(c=c, w=word, f=fw)
        if mentions(_fmt(best), text) >= 0 or len(set(vals)) < 2:
            return None
        losers = [lab for lab, v in zip(labels, vals, strict=True) if v != best]
        return Question(
            text,
            [_fmt(best)],
            f"The {word} {fw} is {_fmt(best)}.",
            absent=losers + extra,
            kind="superlative",
            key=f"top_value/{f}/{'max' if high else 'min'}",
        )

    def _average_q(
        self, f: str, vals: list[float], labels: list[str], c: str, extra: list[str]
    ) -> Question | None:
        """The average of ``f`` (``average``): only one that two decimals say exactly (no rounding
        to argue about)."""
        fw = field_words(f)
        mean = sum(vals) / len(vals)
        if abs(mean * 100 - round(mean * 100)) > 1e-6:
            return None
        text = self.rng.choice(AVG_Q).format(c=c, f=fw)
        if mentions(_fmt(mean), text) >= 0:
            return None
        return Question(
            text,
            [_fmt(mean)],
            f"The average {fw} is {_fmt(mean)}.",
            absent=extra,
            kind="total",
            key=f"average/{f}",
        )

    def _labelled_shape(
        self,
        shape: str,
        step: Step,
        rows: list[dict[str, Any]],
        label: str,
        labels: list[str],
        nums: list[str],
        c: str,
        noun: str,
    ) -> Question | None:
        """A question about named rows: the total or the winner among the rows in a status (a
        condition that changes the answer: the winner over all rows is another row), or the
        difference between two named rows."""
        rng = self.rng
        f = rng.choice(nums[:3])
        fw = field_words(f)
        vals = [float(r[f]) for r in rows]
        if shape == "difference":
            i, j = rng.sample(range(len(rows)), 2)
            if vals[i] == vals[j]:
                return None
            x, y = _quote(labels[i]), _quote(labels[j])
            diff = abs(vals[i] - vals[j])
            text = rng.choice(DIFF_Q).format(c=_the(c), f=fw, x=x, y=y)
            if mentions(_fmt(diff), text) >= 0:
                return None
            hi, lo = (i, j) if vals[i] > vals[j] else (j, i)
            answer = (
                f"{_quote(labels[hi])} is higher by {_fmt(diff)} ({_fmt(vals[hi])} against "
                f"{_fmt(vals[lo])})."
            )
            others = [lab for k, lab in enumerate(labels) if k not in (i, j)]
            return Question(
                text,
                [_fmt(diff)],
                answer,
                absent=others + self._absent(step, [label], {labels[i].lower(), labels[j].lower()}),
                kind="comparison",
                key=f"difference/{f}",
            )
        # every (status field, value, number field, direction) in a random order: the first whose
        # condition changes the answer
        cands = [
            (k, v, g, high)
            for k in _categories(rows, label)
            for v in sorted({r[k] for r in rows})
            for g in nums
            for high in (True, False)
            if shape == "superlative_which" or (high and (g in SUMMABLE or unit_of(g)))
        ]
        rng.shuffle(cands)
        for k, v, g, high in cands[:24]:
            q = self._in_status_question(shape, step, rows, label, labels, c, k, v, g, high)
            if q is not None and q.key not in self.taken:
                return q
        return None

    def _in_status_question(
        self,
        shape: str,
        step: Step,
        rows: list[dict[str, Any]],
        label: str,
        labels: list[str],
        c: str,
        k: str,
        v: Any,
        f: str,
        high: bool,
    ) -> Question | None:
        """The total of ``f`` (``total_which``) or the row with the highest / lowest ``f``
        (``superlative_which``) among the rows whose ``k`` is ``v``; None when the condition would
        not change the answer, or it is a tie."""
        vals = [float(r[f]) for r in rows]
        hit = [i for i, r in enumerate(rows) if r[k] == v]
        miss = [labels[i] for i in range(len(rows)) if i not in hit]
        if len(hit) < 2 or not miss:
            return None
        among = _Among(step, label, labels, _the(c), k, v, f, vals, hit)
        if shape == "total_which":
            return self._total_which(among, miss)
        return self._superlative_which(among, high)

    def _total_which(self, a: _Among, miss: list[str]) -> Question | None:
        """The total of ``a.f`` over the rows in the status."""
        fw = field_words(a.f)
        total = round(sum(a.vals[i] for i in a.hit), 2)
        if total == round(sum(a.vals), 2):
            return None  # the condition would not change the answer
        text = self.rng.choice(TOTAL_WHICH_Q).format(c=a.c, f=fw, r=_in_status(a.k, a.v)[2])
        if mentions(_fmt(total), text) >= 0:
            return None
        expected = {a.labels[i].lower() for i in a.hit}
        return Question(
            text,
            [_fmt(total)],
            f"Their total {fw} is {_fmt(total)}.",
            absent=miss + self._absent(a.step, [a.label], expected),
            kind="total",
            key=f"total_which/{a.f}/{a.k}/{a.v}",
        )

    def _superlative_which(self, a: _Among, high: bool) -> Question | None:
        """The row with the highest / lowest ``a.f`` among the rows in the status."""
        fw = field_words(a.f)
        sub = [a.vals[i] for i in a.hit]
        best = max(sub) if high else min(sub)
        overall = max(a.vals) if high else min(a.vals)
        if sub.count(best) != 1 or best == overall:
            return None  # a tie, or the condition would not change the winner
        win = a.hit[sub.index(best)]
        word = _most(a.f, high, self.rng)
        r = _in_status(a.k, a.v)[2]
        text = self.rng.choice(SUP_WHICH_Q).format(c=a.c, r=r, w=word, f=fw)
        others = [lab for i, lab in enumerate(a.labels) if i != win]
        name = a.labels[win]
        return Question(
            text,
            [name],
            f"{name}, with {article(fw)} {fw} of {_fmt(best)}.",
            rows=[[name]],
            absent=others + self._absent(a.step, [a.label], {name.lower()}),
            kind="superlative",
            key=f"superlative_which/{a.f}/{'max' if high else 'min'}/{a.k}/{a.v}",
        )

    # -- the whole request
    # -------------------------------------------------------------------------------

    def _change_request(self, muts: list[Step], last: Step) -> tuple[str, str, str]:
        """A chain that changes state, as (the request's body, its kind, the reference's answer):
        its goals in one sentence (never a narrated script: "..., then ..., and finally ..."),
        in a frame of the user's tone, maybe with a motive, and the row to see after them."""
        grouped = self.grouped(muts)
        goals = grouped or [self.goal(s) for s in muts]
        n_goals = len(goals)
        after = ""
        if not last.mutating and grouped:
            # the changes as goals, the row to see in a sentence of its own
            after = " " + self.show(last, sentence=True)
        elif not last.mutating:
            goals.append(self.show(last))
        body = self._framed(join(goals)) + after
        body = self._with_motive(body, many=len(goals) > 1)
        answer = change_answer(self.steps) or self._done_answer(goals[:n_goals], last)
        return body, muts[-1].info.kind, answer

    def _framed(self, g: str) -> str:
        """The goals in a frame of the user's tone (no "for me" after a goal that says "me")."""
        pool = TONES[self.tone] if self.tone else FRAMES
        says_me = g.endswith(" me") or " me " in g or ": " in g
        frames = [f for f in pool if not (says_me and "for me" in f)] or ["{G}."]
        return self.rng.choice(frames).format(g=g, G=g[:1].upper() + g[1:])

    def _with_motive(self, body: str, many: bool) -> str:
        """The body after the user's motive half the time, else after a general one half the time
        for several goals (never when busy)."""
        if self.tone == "busy":
            return body
        mine = body if body.startswith(("I ", "I'")) else body[0].lower() + body[1:]
        if self.motive and self.rng.random() < 0.5:
            return self.motive + ", so " + mine
        if many and self.rng.random() < 0.5:
            return self.rng.choice(MOTIVES) + mine
        return body

    def _done_answer(self, goals: list[str], last: Step) -> str:
        """The answer when the rows of a change are unknown: the goals in the past, and the row
        to see after them."""
        answer = "Done: I " + join([past(x) for x in goals]) + "."
        if not last.mutating:
            answer += " " + (show_rows(last) or "Here it is now.")
        return answer

    def request(self) -> Phrased | None:
        """The request, its answer facts (read-only chains) and its kind; None when it cannot be
        phrased."""
        intro = self.intro()
        muts = [s for s in self.steps if s.mutating]
        last = self.steps[-1]
        q: Question | None = None
        if any(_bare_create(s) for s in muts):
            return None  # never "create a new user, please": a user gives what the row holds
        if muts:
            body, kind, answer = self._change_request(muts, last)
        else:
            q = self.question(last)
            if q is None:
                return None
            # "... appointments for me" + "for me?"
            body, answer = q.text.replace(" for me for me", " for me"), q.answer
            kind = q.kind if q.kind != "get" or last.info.kind != "list" else "list"
        text = intro + body[0].upper() + body[1:]
        asked = _Asked([], [], [])
        if q is not None:
            checked = _asked(q, text.lower(), answer)
            if checked is None:
                return None
            asked = checked
        return Phrased(
            text=text,
            facts=asked.facts,
            kind=kind,
            skeleton=skeleton(text, self.values),
            rows=asked.rows,
            absent=asked.absent,
            ordered=bool(q and q.ordered),
            answer=answer,
            persona=self._persona_record(),
            key=q.key if q is not None else "",
        )

    def _persona_record(self) -> dict[str, str]:
        """Who asks, as recorded with the task (empty without a persona)."""
        if not self.persona:
            return {}
        return {
            "name": self.persona.title or "",
            "role": self.role,
            "tone": self.tone or "neutral",
            "motive": self.motive,
        }


PAST = {
    "set": "set",
    "put": "put",
    "send": "sent",
    "get": "got",
    "pay": "paid",
    "make": "made",
    "lift": "lifted",
    "go": "went",
    "let": "showed",
    "show": "showed",
    "pull": "pulled",
    "call": "called",
    "ship": "shipped",
    "star": "starred",
    "pin": "pinned",
    "plan": "planned",
    "drop": "dropped",
    "stop": "stopped",
    "freeze": "froze",
    "unfreeze": "unfroze",
    "cancel": "cancelled",
    "mark": "marked",
    "book": "booked",
    "open": "opened",
    "check": "checked",
    "have": "had",
}


MAKE_VERBS = frozenset(
    {
        "create",
        "add",
        "new",
        "insert",
        "post",
        "book",
        "open",
        "register",
        "make",
        "upload",
        "write",
    }
)
"""Verbs that only make a row: its new row can be said without them
(``... and a new event in it``)."""
IRREGULAR = {
    "freeze": "frozen",
    "unfreeze": "unfrozen",
    "send": "sent",
    "set": "set",
    "put": "put",
    "reset": "reset",
    "pay": "paid",
    "make": "made",
    "get": "gotten",
    "give": "given",
    "take": "taken",
    "write": "written",
    "run": "run",
    "shut": "shut",
    "begin": "begun",
    "hide": "hidden",
    "hold": "held",
    "lock": "locked",
    "split": "split",
}


def participle(verb: str) -> str | None:
    """The past participle of an action's verb (``pin`` -> ``pinned``, ``check in`` ->
    ``checked in``, ``freeze`` -> ``frozen``, ``complete`` -> ``marked as completed``); None for a
    verb with no plain form."""
    head, _, rest = verb.partition(" ")
    if not head.isalpha() or not head.islower():
        return None
    rest = rest.replace("{x} ", "")  # "mark {x} as uncollectible" -> "marked as uncollectible"
    if head == "complete" and not rest:
        return "marked as completed"
    p = IRREGULAR.get(head) or past(head)
    return p + (" " + rest if rest else "")


_SET = re.compile(r"^with (its|their) (.+?) set to ")


def _states(states: list[str]) -> str:
    """What a row is left as, its states joined: what it becomes first, then the fields it gets in
    one ``with`` (``shipped, with its quantity set to 4 and its shipping address set to "..."``)."""
    plain = [x for x in states if not x.startswith("with ")]
    withs = [x[len("with ") :] for x in states if x.startswith("with ")]
    if not withs:
        return join(plain)
    w = "with " + join(withs)
    return (join(plain) + ", " + w) if plain else w


CHANGE_WORDS = {
    "became": {
        "span": "moved to run from {x} to {y}",
        "name": "renamed to {x}",
        "title": "retitled {x}",
        "field": "with {its} {f} set to {x}",
    },
    "so_that": {
        "span": "{it_runs} from {x} to {y}",
        "name": "it is called {x}",
        "title": "it is called {x}",
        "field": "{its} {f} is {x}",
    },
}
"""Field changes in words: after the row (``became``) or after ``so that`` (``so_that``)."""


def _said_changes(changes: list[tuple[str, str]], its: str, style: str) -> list[str]:
    w = CHANGE_WORDS[style]
    out: list[str] = []
    vals = dict(changes)
    for f, x in changes:
        if f == "end time" and "start time" in vals:
            continue
        if f == "start time" and "end time" in vals:
            out.append(
                w["span"].format(
                    x=x, y=vals["end time"], it_runs="it runs" if its == "its" else "they run"
                )
            )
        elif f in ("name", "title") and (style == "became" or its == "its"):
            out.append(w[f].format(x=x))
        else:
            out.append(w["field"].format(its=its, f=f, x=x))
    return out


def became(changes: list[tuple[str, str]], its: str) -> list[str]:
    """Field changes said as what they make of the row, after it: ``renamed to backup.zip``, ``moved
    to run from X to Y``, ``with its location set to "Room C6"``."""
    return _said_changes(changes, its, "became")


def so_that(changes: list[tuple[str, str]], its: str) -> list[str]:
    """Field changes said as what the row is afterwards, after ``so that``: ``it is called X``, ``it
    runs from X to Y``, ``its location is "Room C6"``."""
    return _said_changes(changes, its, "so_that")


def past(goal: str) -> str:
    """An imperative goal in the past tense (``cancel the order`` -> ``cancelled the order``)."""
    goal = goal.removeprefix("go ahead and ")  # "go ahead and confirm" -> "confirmed"
    head, _, rest = goal.partition(" ")
    w = head.lower()
    if w in PAST:
        p = PAST[w]
    elif w.endswith("e"):
        p = w + "d"
    elif w.endswith("y") and w[-2:-1] not in "aeiou":
        p = w[:-1] + "ied"
    else:
        p = w + "ed"
    if w in ("let", "show") and rest.startswith("me "):
        return "showed you " + rest[3:]
    if w == "pull":
        return "pulled up " + rest.removeprefix("up ")
    return (
        (p + " " + rest).replace(" me", " you")
        if rest.startswith("to me")
        else p + (" " + rest if rest else "")
    )


def tool_pattern(tool_names: list[str]) -> re.Pattern[str] | None:
    """One regex that finds any of the (snake_case) tool names as a word."""
    names = sorted((n.lower() for n in tool_names if "_" in n), key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b") if names else None


_ID_FILTER = re.compile(r"\bwith (?:an? |the )?id\b(?! card)")
"""Rows picked by their id in words: no person asks for "the statuses with id sta_0008"."""
_SEED_ID = re.compile(r"\b[a-z]{2,}_\d{4}\b")
"""A key as the seeds write them (``org_0005``): no person knows one."""


def check_request(
    text: str, steps: list[Step], tool_names: list[str] | re.Pattern[str] | None
) -> str | None:
    """Why a request is not acceptable (None when it is): it names a tool, shows a lookupable id
    (or picks rows by their id), or leaves out a literal argument."""
    low = text.lower()
    pat = tool_pattern(tool_names) if isinstance(tool_names, list) else tool_names
    if pat is not None and pat.search(low):
        return "names_tool"
    if _ID_FILTER.search(low) or _SEED_ID.search(low):
        return "raw_id"  # "statuses with id sta_0008", "invitations for organization org_0005"
    seen = _Said(text)
    for s in steps:
        for name, v in s.args.items():
            p = s.info.params.get(name)
            ref = s.refs.get(name)
            if p is not None and p.is_id and (ref is None or ref.kind != "literal"):
                if seen.shows_id(v):
                    return "raw_id"
                continue
            if name not in s.links and not seen.says(v):
                return "unphrased_argument"
    return None


class _Said:
    """What a request's text says: an argument's value in words, or an id as one of its
    tokens (split once, when first asked)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.low = text.lower()
        self._tokens: set[str] | None = None

    def shows_id(self, v: Any) -> bool:
        """True when the id ``v`` (at least 3 characters) is a token of the text."""
        if not isinstance(v, (str, int)) or isinstance(v, bool) or len(str(v)) < 3:
            return False
        if self._tokens is None:
            self._tokens = {t.strip(".") for t in _TOKEN.findall(self.low)}
        return str(v).lower() in self._tokens

    def says(self, v: Any) -> bool:
        """True when the literal ``v`` is in the text (flags and nulls need no words)."""
        if isinstance(v, bool) or v is None:
            return True
        if isinstance(v, str):
            return v.lower() in self.low or v.lower().replace("_", " ") in self.low
        if isinstance(v, (int, float)):
            return render(v) in self.text or fact_text(v) in self.text
        if isinstance(v, list):
            return all(not isinstance(x, str) or x.lower() in self.low for x in v)
        return True


def norm_text(v: Any) -> str:
    """A value as compared in checks."""
    return str(norm(v))


def _groups_by_row(muts: list[Step]) -> dict[tuple[str, str], list[Step]]:
    """The changes by the row they concern (a create in a row said before joins that row)."""
    groups: dict[tuple[str, str], list[Step]] = {}
    home: dict[tuple[str, str], tuple[str, str]] = {}  # a row -> the group it is said in
    for s in muts:
        t = s.target
        concern = t.key if t is not None else ("", str(s.index))
        if s.info.kind == "create" and s.refs:
            first = next(iter(s.refs.values()))
            # share <the file>, invite an attendee to <the event>, a file in <the new folder>
            if first.key in home:
                concern = first.key
        concern = home.get(concern, concern)
        groups.setdefault(concern, []).append(s)
        if t is not None:
            home.setdefault(t.key, concern)
        home.setdefault(concern, concern)
    return groups


def _ordered_groups(groups: dict[tuple[str, str], list[Step]]) -> list[list[Step]] | None:
    """The groups in an order that says each new row only after the goal that makes it (a group
    that makes a row another group uses first: "a new folder ..., and the file ... moved to it");
    None when there is none."""
    needs = _group_needs(groups)
    ordered: list[tuple[str, str]] = []
    while len(ordered) < len(groups):
        ready = [k for k in groups if k not in ordered and needs[k] <= set(ordered)]
        if not ready:
            return None
        ordered.append(ready[0])
    made: set[tuple[str, str]] = set()
    for s in (s for k in ordered for s in groups[k]):
        if any(r.kind == "new" and r.key not in made for r in s.refs.values()):
            return None
        if s.info.kind == "create" and s.target is not None:
            made.add(s.target.key)
    return [groups[k] for k in ordered]


def _group_needs(
    groups: dict[tuple[str, str], list[Step]],
) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """For each group, the other groups that make a new row it uses."""
    maker = {
        s.target.key: k
        for k, g in groups.items()
        for s in g
        if s.info.kind == "create" and s.target is not None
    }

    def makers(k: tuple[str, str], s: Step) -> set[tuple[str, str]]:
        return {
            maker[r.key]
            for r in s.refs.values()
            if r.kind == "new" and r.key in maker and maker[r.key] != k
        }

    return {k: set().union(*(makers(k, s) for s in g)) for k, g in groups.items()}


def _makes_in(s: Step, cur: Ref) -> bool:
    """True when ``s`` makes a new row in the new row ``cur`` (a calendar's first event)."""
    first_ref = next(iter(s.refs.values()), None)
    return (
        s.info.kind == "create"
        and s.target is not None
        and first_ref is not None
        and first_ref.kind == "new"
        and first_ref.key == cur.key
        and verb_of(s.info) in MAKE_VERBS
    )


def _row_label(rows: list[dict[str, Any]], ranked: list[str]) -> str | None:
    """The field that labels each row: a name (else another text field unique to each row, a
    reference or an email; never a status or a timestamp); None when no field does."""
    return next(
        (
            k
            for k in ranked
            if attr_rank(k)[0] != 1
            and not is_id_name(k)
            and not _TIMESTAMP.match(str(rows[0].get(k)))
            and all(isinstance(r.get(k), str) and fact_ok(r.get(k)) for r in rows)
            and _distinct([fact_text(r[k]) for r in rows])
        ),
        None,
    )


def _question_shapes(rows: list[dict[str, Any]], label: str | None, nums: list[str]) -> list[str]:
    """The question shapes the rows can carry, repeated by weight (before shuffling)."""
    n = len(rows)
    summable = any(k in SUMMABLE or unit_of(k) for k in nums)
    some = 2 <= n <= 40  # a set of rows a question can be about whole
    shapes = ["count"] if some else []
    if summable and n <= 40:
        shapes += ["total"]
    if label is None:
        return shapes
    weighed = some and bool(nums)  # rows with numbers to compare
    statuses = 3 <= n <= 40 and bool(_categories(rows, label))
    table: list[tuple[bool, list[str]]] = [
        (2 <= n <= 12, ["each"] + (["sorted"] if nums else [])),
        # the answer is one row, or the rows over a threshold
        (weighed, ["superlative"] * 3 + ["condition"] * 3),
        (some, ["which"] * 2),
        # counts, averages and top values the rows decide
        (weighed, ["count_if"] * 2 + ["top_value"] + (["average"] if summable else [])),
        # a condition on a status, counted or added up
        (
            statuses,
            ["count_which"] * 2 + (["total_which", "superlative_which"] * 3 if nums else []),
        ),
        (weighed, ["difference"] * 2),
        (n == 1, ["each"]),
    ]
    return shapes + [x for ok, more in table if ok for x in more]


from .report import change_answer, show_rows  # noqa: E402  (report reads this module's helpers)
