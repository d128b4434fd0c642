"""Turning an executed chain into a person's request, with implicit intent.

The request never names a tool and never gives an id that only an intermediate call revealed.
Entities are referred to the way a person would: by what the first call was given ("the
customer with email ann@example.com"), by what singles a row out among its siblings ("the
pending order with total 59.0"), or in the first person when the chain starts by looking up the
person making the request ("Hi, my email is ...; cancel my pending order").

Every literal argument of every call appears in the request, so an agent can reproduce the
reference calls exactly. For a read-only chain, the question asks for 1–2 fields of the last
call's output; their values become the answer facts, which never appear in the request.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

from envkernel_probe.naming import CREATE_VERBS, PERSON_NOUNS, UPDATE_VERBS, human, is_id_name, plural, singular, words
from envkernel_schemas import ToolSpec

from .links import STATUS_LIKE, Element, Link, distinguishing, ranked_keys

NOTHING_ANSWER = "I can't help with that."
"""The do-nothing policy's answer; no answer fact may be contained in it."""

_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
_BAD_CHARS = re.compile(r'["\\\x00-\x1f]')


@dataclass(eq=False)
class Step:
    """One executed call of a chain, with how its arguments were obtained."""

    tool: ToolSpec
    """The tool."""
    verb: str
    """The tool's verb (``get``, ``cancel``...; "" when unknown)."""
    noun: str
    """The entity the tool is about."""
    args: dict[str, Any]
    """The arguments it was called with."""
    links: dict[str, Link] = field(default_factory=dict)
    """Arguments taken from earlier outputs."""
    output: Any = None
    """What it returned."""
    elements: list[Element] = field(default_factory=list)
    """Elements of its output."""

    @property
    def mutating(self) -> bool:
        """True when the tool is declared to change state."""
        return self.tool.mutates


@dataclass
class Ref:
    """A way to refer to an entity in a request."""

    text: str
    """A noun phrase: ``the customer with email ann@example.com``."""
    noun: str
    """The entity noun."""
    persona: bool = False
    """True when the entity is the person speaking."""

    def obj(self) -> str:
        """As the object of a verb: ``my account`` for the speaker."""
        return f"my {human(self.noun)}" if self.persona else self.text

    def for_(self) -> str:
        """After "for": ``me`` for the speaker."""
        return "me" if self.persona else self.text

    def possess(self, head: str) -> str:
        """``the <head> of <this>``, or ``my <head>`` for the speaker."""
        return f"my {head}" if self.persona else f"the {head} of {self.text}"


def render(v: Any) -> str:
    """A value as written in a request (strings with spaces in double quotes)."""
    if isinstance(v, str):
        return f'"{v}"' if (" " in v or not v) else v
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return json.dumps(v)
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
        return 3 <= len(v.strip()) <= 80 and v == v.strip() and not _BAD_CHARS.search(v) and not _TIMESTAMP.match(v)
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer()):
        return abs(v) >= 10
    if isinstance(v, float):
        return len(fact_text(v)) >= 3
    return False


SEARCH_PARAMS = frozenset({"query", "q", "search", "term", "keyword", "keywords", "text", "pattern", "name_contains"})
"""Parameters that take free text to search with (phrased ``matching "..."``)."""
OWN_TITLES = ("name", "full_name", "display_name", "title", "label")
"""Columns holding a row's own name (``the product "desk lamp"``); ``<other>_name`` reads ``for "..."``."""


def field_words(key: str) -> str:
    """A field name in words: ``unit_price`` -> ``unit price``, ``total_cents`` -> ``total in cents``."""
    ws = words(key)
    if len(ws) > 1 and ws[-1] == "cents":
        return " ".join(ws[:-1]) + " in cents"
    return " ".join(ws)


def attr(key: str, v: Any) -> str:
    """A field and its value: ``quantity 2``, ``total 18900 cents``."""
    ws = words(key)
    if len(ws) > 1 and ws[-1] == "cents":
        return f"{' '.join(ws[:-1])} {render(v)} cents"
    return f"{human(key)} {render(v)}"


def qualifier(key: str, v: Any) -> tuple[str, str]:
    """A literal argument as a qualifier: ("with", "category lighting"), ("bare", 'matching "lamp"')."""
    if isinstance(v, bool):
        return "bare", f"({human(key)})" if v else f"(not {human(key)})"
    if "_".join(words(key)) in SEARCH_PARAMS:
        return "bare", f"matching {render(v)}"
    return "with", attr(key, v)


def quals_text(quals: list[tuple[str, str]]) -> str:
    """Qualifiers joined: ``matching "lamp" with category x and colour y``."""
    bare = [t for k, t in quals if k != "with"]
    withs = [t for k, t in quals if k == "with"]
    return " ".join(bare + (["with " + _join(withs)] if withs else []))


def head_phrase(noun: str, attrs: list[tuple[str, Any]]) -> str:
    """``pending order with total 59.0`` / ``product "Desk Lamp"`` / ``order for "desk lamp"`` (no article)."""
    pre = [str(v) for k, v in attrs if k in STATUS_LIKE and isinstance(v, str)]
    title = [v for k, v in attrs if k in OWN_TITLES and isinstance(v, str)]
    fors = [v for k, v in attrs if k.endswith("_name") and k not in OWN_TITLES and isinstance(v, str)]
    post = [attr(k, v) for k, v in attrs if not (isinstance(v, str) and (k in STATUS_LIKE or k in OWN_TITLES or k.endswith("_name")))]
    s = " ".join(pre + [human(noun)])
    if title:
        s += f' "{title[0]}"'
    if fors:
        s += f' for "{fors[0]}"'
    if post:
        s += " with " + " and ".join(post)
    return s


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _key(noun: str, value: Any) -> tuple[str, str]:
    return singular(noun), json.dumps(value, sort_keys=True, default=str)


def _is_own_id(param: str, noun: str) -> bool:
    ws = words(param)
    return ws == ["id"] or (is_id_name(param) and singular("_".join(ws[:-1])) == singular(noun))


class Phraser:
    """Phrases one chain; ``persona`` speaks as the entity the first call looked up."""

    def __init__(self, steps: list[Step], rng: random.Random, *, persona: bool = False) -> None:
        self.steps = steps
        self.rng = rng
        self.persona_el: Element | None = None
        if persona and self.persona_possible(steps):
            self.persona_el = steps[0].elements[0]
        self.mentioned: set[tuple[str, str]] = set()

    def _memo(self, key: tuple[str, str] | None, make: Any) -> Ref:
        """``make()`` on first mention of an entity, ``that <noun>`` afterwards."""
        if key is not None and key in self.mentioned:
            return Ref(text=f"that {human(key[0])}", noun=key[0])
        ref = make()
        if key is not None and not ref.persona:
            self.mentioned.add(key)
        return ref

    @staticmethod
    def persona_possible(steps: list[Step]) -> bool:
        """True when the chain starts by looking up one person (a customer, a user...)."""
        if len(steps) < 2:
            return False
        s0 = steps[0]
        return (
            not s0.mutating
            and bool(s0.elements)
            and (s0.elements[0].group is None or len(s0.elements[0].group) == 1)
            and s0.elements[0].parent is None
            and singular(s0.elements[0].noun) in PERSON_NOUNS
            and bool(s0.args)
            and not s0.links
        )

    # -- references --------------------------------------------------------------------

    def _is_persona(self, noun: str, value: Any) -> bool:
        p = self.persona_el
        return p is not None and value is not None and singular(noun) == singular(p.noun) and p.row.get("id") == value

    def persona_ref(self) -> Ref:
        """The speaker."""
        assert self.persona_el is not None
        return Ref(text="me", noun=self.persona_el.noun, persona=True)

    def element_ref(self, e: Element) -> Ref:
        """How to refer to an element (``that <noun>`` once it has been mentioned)."""
        if self.persona_el is not None and (e is self.persona_el or self._is_persona(e.noun, e.row.get("id"))):
            return self.persona_ref()
        key = _key(e.noun, e.row["id"]) if e.row.get("id") is not None else None
        return self._memo(key, lambda: self._element_ref(e))

    def _element_ref(self, e: Element) -> Ref:
        attrs = distinguishing(e) or []
        if e.parent is not None:
            parent = self.element_ref(e.parent)
            return Ref(text=parent.possess(head_phrase(e.noun, attrs)), noun=e.noun)
        step = self.steps[e.call]
        if e.group is None:
            if step.mutating and step.verb in CREATE_VERBS:
                return Ref(text=f"the new {human(e.noun)}", noun=e.noun)
            return self.subject(step, e.noun)
        owner, quals = self.owner(step)
        head = head_phrase(e.noun, attrs)
        text = owner.possess(head) if owner is not None else f"the {head}"
        if quals:
            text += " " + quals_text(quals)
        return Ref(text=text, noun=e.noun)

    def link_ref(self, link: Link) -> Ref:
        """How to refer to what a linked argument identifies."""
        if link.kind in ("self", "key"):
            return self.element_ref(link.element)
        if self._is_persona(link.entity, link.value):
            return self.persona_ref()
        src = self._fk_source(link.element, link.entity, link.value)
        if src is not None:
            return src
        return self._memo(
            _key(link.entity, link.value), lambda: Ref(text=self.element_ref(link.element).possess(human(link.entity)), noun=link.entity)
        )

    def _fk_source(self, e: Element, entity: str, value: Any, depth: int = 0) -> Ref | None:
        """When a foreign key's value is what the call that returned ``e`` was given, refer to that."""
        if depth > len(self.steps):
            return None
        step = self.steps[e.call]
        for p, v in step.args.items():
            if is_id_name(p) and words(p) != ["id"] and singular("_".join(words(p)[:-1])) == singular(entity) and v == value:
                return self.link_ref(step.links[p]) if p in step.links else self.literal_ref(p, v, "")
        for link in step.links.values():
            if link.kind in ("self", "key") and singular(link.entity) == singular(e.noun):
                return self._fk_source(link.element, entity, value, depth + 1)
        return None

    def literal_ref(self, param: str, value: Any, noun: str) -> Ref:
        """A literal id argument as a reference: ``order #7``."""
        ent = noun if words(param) == ["id"] else "_".join(words(param)[:-1])
        if self._is_persona(ent, value):
            return self.persona_ref()
        shown = f"#{value}" if isinstance(value, int) or (isinstance(value, str) and value.isdigit()) else render(value)
        return self._memo(_key(ent, value), lambda: Ref(text=f"{human(singular(ent))} {shown}", noun=singular(ent)))

    def subject(self, step: Step, noun: str) -> Ref:
        """What a call's arguments identify (for a call that returns one object)."""
        if step is self.steps[0] and self.persona_el is not None:
            return self.persona_ref()
        for link in step.links.values():
            if singular(link.entity) == singular(noun):
                return self.link_ref(link)
        for p, v in step.args.items():
            if p not in step.links and _is_own_id(p, noun):
                return self.literal_ref(p, v, noun)
        owners = [self.link_ref(link) for link in step.links.values()]
        owners += [self.literal_ref(p, v, noun) for p, v in step.args.items() if p not in step.links and is_id_name(p)]
        quals = [qualifier(p, v) for p, v in step.args.items() if p not in step.links and not is_id_name(p)]
        base = human(noun)
        text = owners[0].possess(base) if owners else f"the {base}"
        if len(owners) > 1:
            text += " for " + _join([o.for_() for o in owners[1:]])
        if quals:
            text += " " + quals_text(quals)
        return Ref(text=text, noun=noun)

    def owner(self, step: Step) -> tuple[Ref | None, list[tuple[str, str]]]:
        """Whose list a list call returns (its id-like argument), and its other arguments as qualifiers."""
        owner: Ref | None = None
        quals: list[tuple[str, str]] = []
        for p, v in step.args.items():
            if p in step.links:
                if owner is None:
                    owner = self.link_ref(step.links[p])
                    continue
                quals.append(("bare", f"for {self.link_ref(step.links[p]).for_()}"))
            elif is_id_name(p) and owner is None:
                owner = self.literal_ref(p, v, step.noun)
            elif is_id_name(p):
                quals.append(("bare", f"for {self.literal_ref(p, v, '').for_()}"))
            else:
                quals.append(qualifier(p, v))
        return owner, quals

    def collection(self, step: Step) -> str:
        """The list a list call returns: ``my pending orders``, ``all the products in category lighting``."""
        owner: Ref | None = None
        pre: list[str] = []
        quals: list[tuple[str, str]] = []
        for p, v in step.args.items():
            if p in step.links:
                r = self.link_ref(step.links[p])
                if owner is None:
                    owner = r
                else:
                    quals.append(("bare", f"for {r.for_()}"))
            elif is_id_name(p) and owner is None:
                owner = self.literal_ref(p, v, step.noun)
            elif p in STATUS_LIKE and isinstance(v, str) and " " not in v:
                pre.append(v)
            else:
                quals.append(qualifier(p, v))
        head = " ".join(pre + [plural(human(step.noun))])
        text = owner.possess(head) if owner is not None else f"all the {head}"
        if quals:
            text += " " + quals_text(quals)
        return text

    # -- goals and questions -------------------------------------------------------------

    def _target(self, step: Step) -> tuple[Ref | None, str | None]:
        for p, link in step.links.items():
            if singular(link.entity) == singular(step.noun):
                return self.link_ref(link), p
        for p, v in step.args.items():
            if p not in step.links and _is_own_id(p, step.noun):
                return self.literal_ref(p, v, step.noun), p
        for p, link in step.links.items():
            return self.link_ref(link), p
        for p, v in step.args.items():
            if is_id_name(p):
                return self.literal_ref(p, v, step.noun), p
        return None, None

    def goal(self, step: Step) -> str:
        """What a mutating call achieves, as an imperative (``cancel my pending order``)."""
        verb = step.verb or words(step.tool.name)[0]
        noun = human(step.noun)
        if verb in CREATE_VERBS:
            people: list[str] = []
            others: list[str] = []
            order = sorted(step.args, key=lambda p: 0 if singular("_".join(words(p)[:-1])) in PERSON_NOUNS else 1)
            for p in order:
                v = step.args[p]
                if p in step.links:
                    r = self.link_ref(step.links[p])
                    (people if singular(r.noun) in PERSON_NOUNS else others).append(
                        r.for_() if singular(r.noun) in PERSON_NOUNS else r.text
                    )
                elif is_id_name(p):
                    r = self.literal_ref(p, v, "")
                    (people if singular(r.noun) in PERSON_NOUNS else others).append(r.for_())
                else:
                    others.append(attr(p, v))
            verb_word = {"new": "create", "post": "post", "insert": "add"}.get(verb, verb)
            s = f"{verb_word} a new {noun}"
            if people:
                s += " for " + _join(people)
            if others:
                s += " with " + _join(others)
            return s
        target, used = self._target(step)
        rest_lit = [(p, v) for p, v in step.args.items() if p != used and p not in step.links]
        rest_links = [self.link_ref(link) for p, link in step.links.items() if p != used]
        tail = ""
        if rest_links:
            tail += " for " + _join([r.for_() for r in rest_links])
        if verb in UPDATE_VERBS and rest_lit and target is not None:
            changes = [(p, v) for p, v in rest_lit if not is_id_name(p)]
            ids = [self.literal_ref(p, v, "").text for p, v in rest_lit if is_id_name(p)]
            if len(changes) == 1:
                p, v = changes[0]
                s = f"change {target.possess(field_words(p))} to {render(v)}"
            else:
                s = f"update {target.obj()}, setting " + _join([f"{field_words(p)} to {render(v)}" for p, v in changes])
            if ids:
                s += " for " + _join(ids)
            return s + tail
        extra = [attr(p, v) if not is_id_name(p) else self.literal_ref(p, v, "").text for p, v in rest_lit]
        rest_words = [w for w in words(step.tool.name)[1:] if w not in words(step.noun) and singular(w) != singular(step.noun)]
        obj = target.obj() if target is not None else f"the {noun}"
        s = f"{verb} {obj}"
        if rest_words and not extra:
            s = f"{verb} {' '.join(rest_words)} for {target.for_() if target else 'the ' + noun}"
        if extra:
            s += " with " + _join(extra)
        return s + tail

    def question(self, step: Step) -> tuple[str, list[str]] | None:
        """A question whose answer is 1–2 fields of the call's output, and those values as facts."""
        rng = self.rng
        out = step.output
        tops = [e for e in step.elements if e.parent is None]
        if tops and (tops[0].group is None or len(tops[0].group) == 1):
            e = tops[0]
            subj = self.subject(step, e.noun)
            keys = [k for k in ranked_keys(e.row) if fact_ok(e.row[k]) and fact_text(e.row[k]).lower() not in subj.text.lower()]
            if not keys:
                return None
            k = min(len(keys), rng.choice((1, 2, 2)))
            chosen = sorted(rng.sample(keys[:4], min(k, len(keys[:4]))), key=keys.index)
            fields = _join([field_words(c) for c in chosen])
            what = subj.possess(fields)
            be = "are" if len(chosen) > 1 else "is"
            text = rng.choice(
                (
                    f"What {be} {what}?",
                    f"Can you tell me {what}?",
                    f"I need to know {what}.",
                    f"Could you look up {what} for me?",
                )
            )
            return text, list(dict.fromkeys(fact_text(e.row[c]) for c in chosen))
        if tops:
            rows = tops[0].group or []
            common = [k for k in ranked_keys(rows[0]) if all(fact_ok(r.get(k)) for r in rows[:3])]
            if not common:
                return None
            f = rng.choice(common[:3])
            facts = list(dict.fromkeys(fact_text(r[f]) for r in rows[:3]))
            coll = self.collection(step)
            text = rng.choice(
                (
                    f"Show me {coll}, with the {field_words(f)} of each.",
                    f"Can you list {coll}? I need the {field_words(f)} of each one.",
                    f"Please go through {coll} and tell me the {field_words(f)} of each.",
                )
            )
            return text, facts
        if fact_ok(out):
            what_words = [w for w in words(step.tool.name) if w != step.verb]
            subj_text = self.subject(step, step.noun).text if step.args else ""
            text = f"What is the {' '.join(what_words)}" + (f" for {subj_text}" if subj_text else "") + "?"
            return text, [fact_text(out)]
        return None

    def intro(self) -> str:
        """The opening: a greeting, or who the speaker is."""
        rng = self.rng
        if self.persona_el is None:
            return rng.choice(("", "", "Hi! ", "Hello! ", "Hey there. "))
        s0 = self.steps[0]
        noun = human(self.persona_el.noun)
        lits = [(p, v) for p, v in s0.args.items()]
        if len(lits) == 1 and is_id_name(lits[0][0]):
            return f"Hi, I'm {self.literal_ref(lits[0][0], lits[0][1], noun).text}. "
        parts = _join([f"my {field_words(p)} is {render(v)}" for p, v in lits])
        return rng.choice((f"Hi, {parts}. ", f"Hello! As a {noun}: {parts}. ", f"Hi there, {parts}. "))

    def request(self) -> tuple[str, list[str]] | None:
        """The request text and, for a read-only chain, its answer facts; None when it cannot be phrased."""
        rng = self.rng
        last = self.steps[-1]
        goals = [self.goal(s) for s in self.steps if s.mutating]
        intro = self.intro()
        facts: list[str] = []
        if goals:
            if not last.mutating:
                tops = [e for e in last.elements if e.parent is None]
                if tops and tops[0].group is None:
                    goals.append(f"show me {self.subject(last, tops[0].noun).obj()}")
                else:
                    goals.append(f"show me {self.collection(last)}")
            g = goals[0]
            if len(goals) > 1:
                g += rng.choice((", and then ", ", then ", " and after that ")) + goals[1]
            for more in goals[2:-1]:
                g += ", then " + more
            if len(goals) > 2:
                g += ", and finally " + goals[-1]
            body = rng.choice((f"Please {g}.", f"Could you {g}?", f"I'd like you to {g}.", f"Can you {g}?"))
        else:
            q = self.question(last)
            if q is None:
                return None
            body, facts = q
        text = intro + body[0].upper() + body[1:]
        if facts:
            low = text.lower()
            facts = [f for f in facts if f.lower() not in low and f.lower() not in NOTHING_ANSWER.lower()]
            if not facts:
                return None
        return text, facts
