"""Multi-row change goals: one action applied to every row a condition picks out.

``cancel all my held bookings with more than 3 nights``, ``archive every active channel``,
``star all the PDFs in the folder "Archive"``. The condition is derived from the real seed rows
(a status the action accepts, optionally an owner and a numeric threshold), so the set of rows it
picks is known exactly; there must be 2 to :data:`MAX_ROWS` of them, and at least one *near-miss*
row (it matches all but one part of the condition: the row a careless agent would also change).
The reference chain finds the rows by lookup (the owner's list, then the table's list with the
filters it offers), then acts on each one; it is executed for real, and the expected final state
is what it leaves. A condition the user holds back (``Only the ones with more than 3 nights.``,
``Only the held ones.``) goes into ``Task.hidden``, for a user component to reveal over the turns.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from envkernel_kit.naming import human, plural, singular, words
from envkernel_kit.tools import Schema, ToolInfo

from .phrasing import (
    ROLES,
    _between,
    _fmt,
    article,
    field_words,
    join,
    past,
    render,
    unit_of,
    verb_of,
)
from .refs import CONTAINER_NOUNS, PERSONA_NOUNS, STATUS_FIELDS, TITLE_FIELDS, is_person
from .vocab import user_noun, vocab_key

State = dict[str, list[dict[str, Any]]]

COUNTED = frozenset({"nights", "seats", "stars", "attendees", "items", "guests", "seats_left"})
"""Numeric columns said as a count of things (``with more than 3 nights``)."""
MAX_ROWS = 6
"""The most rows one goal changes."""


@dataclass
class BatchGoal:
    """A multi-row change: the calls to make and the words."""

    calls: list[tuple[str, dict[str, Any]]]
    """The reference chain (tool, arguments): lookups, then one action per row."""
    request: str
    """The opening words."""
    hidden: list[str]
    """Conditions the user holds back (revealed over the turns)."""
    answer: str
    """The reference answer in words."""
    rows: list[Any]
    """Keys of the rows the goal changes."""
    persona: dict[str, str] = field(default_factory=dict)
    """Who speaks (``Task.persona``; empty when nobody in particular)."""
    kind: str = "batch"


def _title(row: dict[str, Any]) -> tuple[str, str] | None:
    for k in TITLE_FIELDS:
        v = row.get(k)
        if isinstance(v, str) and 3 <= len(v) <= 60 and '"' not in v:
            return k, v
    return None


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _beyond(row: dict[str, Any], cond: tuple[str, str, float]) -> bool:
    """True when ``row``'s value of the condition's column is over (or under) its threshold."""
    v = float(row[cond[0]])
    return v > cond[2] if cond[1] == "over" else v < cond[2]


@dataclass
class _Pick:
    """The rows a multi-row goal changes and the parts of the condition that pick them."""

    status: str | None
    """The status the rows are in (None: any)."""
    owner: tuple[str, str, dict[str, Any], str] | None
    """(column, owner table, owner row, its name), or None."""
    cond: tuple[str, str, float] | None
    """(column, over or under, threshold), or None."""
    rows: list[dict[str, Any]]
    """The rows picked."""
    setting: tuple[str, str, Any] | None = None
    """An update's (parameter, column, new value)."""


BATCH_FRAMES = (
    "Please {g}.",
    "Could you {g}?",
    "I need you to {g}.",
    "{G}, please.",
    "Can you {g} for me?",
)
"""The frames of a multi-row request."""


@dataclass
class _Words:
    """The words of a multi-row goal's rows: ``held`` (``st``), ``booking`` / ``bookings``,
    whose they are (``my``, ``Ana's``, ``the``), where (`` in the folder "Travel"``) and the
    threshold in words."""

    noun: str
    nouns: str
    st: str
    whose: str
    where: str
    cond_words: str

    @classmethod
    def of(cls, act: ToolInfo, table: str, pick: _Pick, whose: str, cond_words: str) -> _Words:
        """The words for the rows ``pick`` of ``table`` (``whose``: from the speaker)."""
        name = act.noun or table
        noun = user_noun(vocab_key(name), act.spec.description or "") or human(name)
        st = " ".join(words(pick.status)) + " " if pick.status else ""
        owner = pick.owner
        where = ""
        if owner is not None and whose == "the ":
            onoun = singular(human(owner[1]))
            where = f' {"in" if onoun in CONTAINER_NOUNS else "for"} the {onoun} "{owner[3]}"'
        return cls(noun, plural(noun), st, whose, where, cond_words)


def _batch_verb(act: ToolInfo) -> str:
    """The verb of a multi-row goal: the tool's verb as a person says it, the plain verb of a
    delete or an update (never "delete app all the applications")."""
    verb = verb_of(act) or "update"
    first = verb.split(" ")[0]
    return first if act.kind in ("delete", "update") and first == act.kind else verb


def _done(w: _Words, verb: str, pick: _Pick) -> str:
    """The reference answer: ``Done: I cancelled your 3 held bookings (A, B and C).``."""
    labels = [t[1] for t in (_title(r) for r in pick.rows) if t]
    them = f"{w.whose.replace('my ', 'your ')}{len(pick.rows)} {w.st}{w.nouns}{w.where}" + (
        f" {w.cond_words}" if w.cond_words else ""
    )
    s = pick.setting
    done = past(
        f"set the {field_words(s[1])} of {them} to {render(s[2])}" if s else f"{verb} {them}"
    )
    return f"Done: I {done}" + (f" ({join(labels)})." if len(labels) == len(pick.rows) else ".")


class BatchPlanner:
    """Plans multi-row change goals over one environment (pure: no calls; the sampler runs them)."""

    def __init__(
        self,
        infos: dict[str, ToolInfo],
        schema: Schema,
        seed_state: State,
        rng: random.Random,
        *,
        hidden_share: float = 0.35,
    ) -> None:
        self.hidden_share = hidden_share
        self.infos = infos
        self.schema = schema
        self.seed = seed_state
        self.rng = rng
        self.actions = [i for i in infos.values() if self._action_ok(i)]

    def _action_ok(self, i: ToolInfo) -> bool:
        """An action (with a transition), an update or a delete that takes only the key of the row
        (other inputs optional; an update writes one of them), over a table a person can list."""
        if (
            not i.resource
            or not self.seed.get(i.resource)
            or i.kind not in ("action", "update", "delete")
        ):
            return False
        if i.kind == "action" and not i.transition:
            return False
        if i.kind == "update" and not self._values(i):
            return False
        key = i.key_param
        cols = set(self.seed[i.resource][0])
        others_ok = all(
            p.name == key or not p.required or (p.role == "ref" and p.field in cols)
            for p in i.params.values()
        )
        return (
            key is not None
            and others_ok
            and (self.list_of(i.resource) is not None or self.needs_owner(i.resource) is not None)
        )

    def _values(self, i: ToolInfo) -> list[str]:
        """The columns an update may set to another row's value (text with a few distinct
        values)."""
        rows = self.seed.get(i.resource or "", [])
        out = []
        for p in i.params.values():
            if (
                p.role == "value"
                and p.field
                and rows
                and all(isinstance(r.get(p.field), str) for r in rows)
            ):
                vals = {r[p.field] for r in rows}
                if 2 <= len(vals) <= max(2, len(rows) // 2) and all(
                    3 <= len(v) <= 40 and '"' not in v for v in vals
                ):
                    out.append(p.name)
        return out

    def _categories(self, table: str, skip: set[str]) -> list[str]:
        """Columns that sort the rows into a few kinds (a status, a type, a response)."""
        rows = self.seed.get(table, [])
        out = []
        for c in rows[0] if rows else {}:
            if c in skip or self.schema.ref(table, c) or c == self.schema.key(table):
                continue
            vals = {r.get(c) for r in rows}
            if (
                (c in STATUS_FIELDS or c in self.schema.enums.get(table, {}))
                and all(isinstance(v, str) and 3 <= len(v) <= 20 for v in vals)
                and 2 <= len(vals) <= 8
            ):
                out.append(c)
        return out

    def list_of(self, table: str, owner_col: str | None = None) -> ToolInfo | None:
        """The list tool of ``table`` that needs nothing a person would not know: no required input
        but filters, searches and (with ``owner_col``) the owner's id on that column."""
        for i in self.infos.values():
            if (
                i.kind == "list"
                and i.resource == table
                and not any(
                    p.required
                    and p.role not in ("filter", "search")
                    and not (p.role == "ref" and owner_col and p.field == owner_col)
                    for p in i.params.values()
                )
            ):
                return i
        return None

    def needs_owner(self, table: str) -> str | None:
        """The owner column every list of ``table`` requires (``calendar_id``), or None when one
        lists them all."""
        if self.list_of(table) is not None:
            return None
        for i in self.infos.values():
            if i.kind == "list" and i.resource == table:
                refs = [p for p in i.params.values() if p.required and p.role == "ref" and p.field]
                if len(refs) == 1 and self.list_of(table, refs[0].field) is not None:
                    return refs[0].field
        return None

    def plan(self, persona: bool) -> BatchGoal | None:
        """One multi-row goal, or None when this try found none: the rows an action picks by a
        status, an owner and a threshold (each optional), with a near miss left out."""
        if not self.actions:
            return None
        act = self.rng.choice(self.actions)
        table = act.resource or ""
        tr = act.transition or {}
        fld, to = tr.get("field"), tr.get("to")
        rows = self.seed[table]
        pick = self._pick(act, table, rows, fld)
        if pick is None:
            return None
        if isinstance(fld, str) and all(r.get(fld) == to for r in pick.rows):
            return None  # nothing would change
        if act.kind == "update":
            pick.setting = self._setting_part(act, rows, pick.rows)
            if pick.setting is None:
                return None
        # a near miss: a row that matches all but one part (another status, another owner, the
        # other side of the threshold)
        if len(pick.rows) == len(rows):
            return None
        owner = pick.owner
        as_owner = persona and owner is not None and singular(human(owner[1])) in PERSONA_NOUNS
        return self._phrase(act, table, pick, as_owner)

    def _pick(
        self, act: ToolInfo, table: str, rows: list[dict[str, Any]], fld: Any
    ) -> _Pick | None:
        """The rows the goal changes, by a status, an owner and a threshold (each optional; the
        owner required when every list of the table needs one); None for fewer than 2 rows or
        more than :data:`MAX_ROWS`."""
        found = self._status_part(act, table, rows)
        if found is None:
            return None
        status, scol = found
        accepted = [r for r in rows if (status is None or r.get(scol) == status)]
        must = self.needs_owner(table)
        owner = self._owner_part(table, rows, accepted, must)
        if must and owner is None:
            return None
        scope = accepted
        if owner is not None:
            okey = owner[2].get(self.schema.key(owner[1]))
            scope = [r for r in accepted if r.get(owner[0]) == okey]
        cond = self._threshold_part(table, rows, fld, scope)
        picked = [r for r in scope if cond is None or _beyond(r, cond)]
        if not 2 <= len(picked) <= MAX_ROWS:
            return None
        return _Pick(status, owner, cond, picked)

    def _setting_part(
        self, act: Any, rows: list[dict[str, Any]], picked: list[dict[str, Any]]
    ) -> tuple[str, str, Any] | None:
        """An update's (parameter, column, new value): a value none of the picked rows has yet
        (None when every value is taken)."""
        pname = self.rng.choice(self._values(act))
        col = act.params[pname].field or pname
        new = [v for v in sorted({r[col] for r in rows}) if all(r.get(col) != v for r in picked)]
        return (pname, col, self.rng.choice(new)) if new else None

    def _status_part(
        self, act: Any, table: str, rows: list[dict[str, Any]]
    ) -> tuple[str | None, str | None] | None:
        """The status part, as (status, its column): a from-state the action accepts (bool
        transitions: the rows not yet set), or for an update or a delete, sometimes a kind of row
        (``declined attendees``); (None, column) for none; None when no row is in a from-state."""
        rng = self.rng
        tr = act.transition or {}
        fld, frm = tr.get("field"), tr.get("from")
        scol = fld if isinstance(fld, str) else None
        if frm and scol:
            present = [s for s in frm if any(r.get(scol) == s for r in rows)]
            if not present:
                return None
            return rng.choice(present), scol
        if act.kind != "action" and rng.random() < 0.6:
            setp = act.params.get(self._values(act)[0]) if act.kind == "update" else None
            cats = self._categories(table, {setp.field} if setp and setp.field else set())
            if cats:
                scol = rng.choice(cats)
                return rng.choice(sorted({r[scol] for r in rows})), scol
        return None, scol

    def _owner_part(
        self,
        table: str,
        rows: list[dict[str, Any]],
        accepted: list[dict[str, Any]],
        must: str | None,
    ) -> tuple[str, str, dict[str, Any], str] | None:
        """The owner part, as (column, owner table, owner row, its name): a reference column
        whose row has a name (``must``: that column or none)."""
        rng = self.rng
        owner_cols = [c for c in rows[0] if self.schema.ref(table, c)] if must is None else [must]
        rng.shuffle(owner_cols)
        for col in owner_cols:
            otable = self.schema.ref(table, col) or ""
            cands = {r.get(col) for r in accepted}
            orows = [
                o
                for o in self.seed.get(otable, [])
                if o.get(self.schema.key(otable)) in cands and _title(o)
            ]
            if orows and (must or rng.random() < 0.7):
                o = rng.choice(orows)
                t = _title(o)
                assert t is not None
                names = [x for x in self.seed.get(otable, []) if _title(x) == t]
                return (col, otable, o, t[1]) if len(names) == 1 else None
        return None

    def _threshold_part(
        self, table: str, rows: list[dict[str, Any]], fld: Any, scope: list[dict[str, Any]]
    ) -> tuple[str, str, float] | None:
        """The numeric part, as (column, over or under, threshold): a threshold between two of
        the values in scope, on a count or an amount (not a 0/1 flag)."""
        rng = self.rng
        keycol = self.schema.key(table)
        nums = [
            c
            for c in rows[0]
            if c != fld
            and c != keycol
            and not self.schema.ref(table, c)
            and all(_is_num(r.get(c)) for r in rows)
            and len({r.get(c) for r in rows}) >= 3
        ]
        if not (nums and len(scope) >= 3 and rng.random() < 0.75):
            return None
        c = rng.choice(nums)
        vals = sorted({float(r[c]) for r in scope})
        if len(vals) < 2:
            return None
        j = rng.randrange(len(vals) - 1)
        over = rng.random() < 0.5
        if all(float(v).is_integer() for v in vals):  # whole numbers: "more than 3", "fewer than 4"
            t: float | None = vals[j] if over else vals[j + 1]
        else:
            t = _between(vals[j], vals[j + 1])
        return None if t is None else (c, "over" if over else "under", t)

    def _phrase(self, act: ToolInfo, table: str, pick: _Pick, as_owner: bool) -> BatchGoal | None:
        """The goal's calls and its words: the request, what is held back, the answer."""
        calls = self._batch_calls(act, table, pick)
        cond_words = "" if pick.cond is None else self._cond_words(pick.cond)
        persona, whose, intro = self._speaker(pick.owner, as_owner)
        w = _Words.of(act, table, pick, whose, cond_words)
        hide, hide_status, head = self._head(w, pick.cond is not None)
        tail = f" {cond_words}" if cond_words and not hide else ""
        setting = pick.setting
        verb = "set" if setting is not None else _batch_verb(act)
        if setting is not None:
            goal = f"set the {field_words(setting[1])} of {head}{tail} to {render(setting[2])}"
        else:
            goal = f"{verb} {head}{tail}"
        frame = self.rng.choice(BATCH_FRAMES)
        hidden = (
            [f"Only the ones {cond_words}."]
            if hide
            else [f"Only the {w.st.strip()} ones."]
            if hide_status
            else []
        )
        return BatchGoal(
            calls=calls,
            request=intro + frame.format(g=goal, G=goal[:1].upper() + goal[1:]),
            hidden=hidden,
            answer=_done(w, verb, pick),
            rows=[r[self.schema.key(table)] for r in pick.rows],
            persona=persona,
        )

    def _head(self, w: _Words, has_cond: bool) -> tuple[bool, bool, str]:
        """The rows in words, as (the threshold held back, the status held back, the words):
        ``all my held bookings``, ``every held booking``, ``some of my bookings``."""
        rng = self.rng
        hide = has_cond and rng.random() < self.hidden_share
        if w.whose != "the " or rng.random() < 0.5:
            of = "of " if w.whose not in ("the ", "my ") else ""
            head = f"all {of}{w.whose}{w.st}{w.nouns}{w.where}"
        else:
            head = f"every {w.st}{w.noun}{w.where}"
        # "some of my bookings" + "Only the held ones."
        hide_status = not hide and bool(w.st) and rng.random() < self.hidden_share
        if hide:
            head = f"some of {w.whose}{w.st}{w.nouns}{w.where}"
        elif hide_status:
            head = f"some of {w.whose}{w.nouns}{w.where}"
        return hide, hide_status, head

    def _batch_calls(
        self, act: ToolInfo, table: str, pick: _Pick
    ) -> list[tuple[str, dict[str, Any]]]:
        """The lookups (the owner by its list, with a search or name filter when there is one,
        then the rows), then the action on each picked row."""
        keycol = self.schema.key(table)
        calls = self._lookups(act, table, pick)
        parents = [p for p in act.params.values() if p.role == "ref" and p.required and p.field]
        for r in pick.rows:
            args: dict[str, Any] = {act.key_param or "id": r[keycol]}
            for p in parents:  # the row's owner (an attendee's event), from the row itself
                args[p.name] = r.get(p.field or "")
            if pick.setting is not None:
                args[pick.setting[0]] = pick.setting[2]
            calls.append((act.name, args))
        return calls

    def _lookups(self, act: ToolInfo, table: str, pick: _Pick) -> list[tuple[str, dict[str, Any]]]:
        """The calls that find the rows: the owner by its list, then the table's list filtered by
        the status and the owner where it can be."""
        owner, status = pick.owner, pick.status
        calls: list[tuple[str, dict[str, Any]]] = []
        lst = self.list_of(table, owner[0] if owner else None)
        assert lst is not None
        largs: dict[str, Any] = {}
        scol = self._status_column(act, table, status, pick.rows)
        for p in lst.params.values():
            if p.role == "filter" and p.field == scol and status is not None and p.op == "eq":
                largs[p.name] = status
        if owner is not None:
            ref = next(
                (p for p in lst.params.values() if p.role == "ref" and p.field == owner[0]), None
            )
            olist = self.list_of(owner[1])
            if ref is not None and olist is not None:
                calls.append((olist.name, self._owner_lookup(olist, owner)))
                largs[ref.name] = owner[2].get(self.schema.key(owner[1]))
        calls.append((lst.name, largs))
        return calls

    def _status_column(
        self, act: ToolInfo, table: str, status: str | None, picked: list[dict[str, Any]]
    ) -> Any:
        """The column the status is a value of: the action's transition field, else the category
        column every picked row has ``status`` in (None when there is no status)."""
        if act.kind == "action":
            return (act.transition or {}).get("field")
        if status is None:
            return None
        return next(
            (
                c
                for c in picked[0]
                if all(r.get(c) == status for r in picked) and c in self._categories(table, set())
            ),
            None,
        )

    @staticmethod
    def _owner_lookup(
        olist: ToolInfo, owner: tuple[str, str, dict[str, Any], str]
    ) -> dict[str, Any]:
        """The owner list's arguments: its search, or a name filter equal to the owner's name."""
        tk = _title(owner[2])
        for p in olist.params.values():
            if p.role == "search" or (
                p.role == "filter" and tk and p.field == tk[0] and p.op == "eq"
            ):
                return {p.name: owner[3]}
        return {}

    def _cond_words(self, cond: tuple[str, str, float]) -> str:
        """The threshold in words: ``with more than 3 nights``, ``with an amount over 200 EUR``."""
        c, op, t = cond
        u = unit_of(c)
        opw = (
            self.rng.choice(("over", "above", "of more than"))
            if op == "over"
            else self.rng.choice(("under", "below", "of less than"))
        )
        if c in COUNTED:
            return f"with {'more' if op == 'over' else 'fewer'} than {_fmt(t)} {field_words(c)}"
        if u:
            return f"with {article(u[0])} {u[0]} {opw} {_fmt(t)} {u[1]}"
        return f"with {article(field_words(c))} {field_words(c)} {opw} {_fmt(t)}"

    def _speaker(
        self, owner: tuple[str, str, dict[str, Any], str] | None, as_owner: bool
    ) -> tuple[dict[str, str], str, str]:
        """Who asks, as (persona, whose the rows are in words, an introduction): the owner
        themselves (``my``), or someone asking about a person's (``Ana's``) or a thing's rows."""
        if owner is not None and as_owner:
            role, motive = self.rng.choice(ROLES)
            persona = {"name": owner[3], "role": role, "tone": "neutral", "motive": motive}
            intro = self.rng.choice(
                (
                    f"I'm {owner[3]}, {role}. {motive[0].upper()}{motive[1:]}. ",
                    f"This is {owner[3]}. ",
                    f"Hi, I'm {owner[3]}, {role}. ",
                )
            )
            return persona, "my ", intro
        if owner is not None and is_person(singular(human(owner[1]))):
            return {}, f"{owner[3]}'s ", ""
        return {}, "the ", ""
