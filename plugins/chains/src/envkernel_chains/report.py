"""The reference's final answer to a chain that changes state, in words a person accepts.

It says what the changes did, from the rows the calls returned (never an echo of the request):
``I created the traveler Jordan Okafor (tra_0009), with email ... .``, ``The events Marketing
brainstorm and All-hands are now cancelled.``, ``The file "notes.md" is deleted.``; and, when
the request asks to see a row after the changes, the row itself: ``The booking BK-1 now reads:
status confirmed, total 420, ...``. A change whose row the calls never showed leaves the answer
to the caller (None).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from envkernel_kit.naming import is_id_name

from . import phrasing as ph
from .ground import Step
from .refs import STATUS_FIELDS, attr_rank, field_words

PERSON_FIELDS = ("name", "full_name", "display_name", "holder_name", "username", "email")
"""Fields whose values are said without quotes."""
SHOW_FIELDS = 6
"""Fields said of one shown row."""
SHOW_ROWS = 10
"""Rows said of a shown list (the rest counted)."""


def _scalar(v: Any) -> bool:
    return isinstance(v, (str, int, float, bool)) and v != ""


def said(key: str, v: Any) -> str:
    """One field of a row in words: ``status confirmed``, ``starred`` / ``not starred``."""
    fw = field_words(key)
    if isinstance(v, bool):
        return fw.removeprefix("is ") if v else "not " + fw.removeprefix("is ")
    return f"{fw} {_quoted(key, ph.fact_text(v))}"


def _quoted(key: str, text: str) -> str:
    """A text value as a request says it: in quotes when it has spaces (a title, a message),
    plain for a person's name or a single word."""
    if key in PERSON_FIELDS or not any(c in text for c in " ,"):
        return text
    return f'"{text}"'


def _label(row: dict[str, Any]) -> str | None:
    """The field that names ``row`` (see ``phrasing._row_label``)."""
    return ph._row_label([row], sorted(row, key=attr_rank))


def _name(row: dict[str, Any] | None) -> str:
    """The row's name as a person says it: a person's name plain, a title or text in quotes."""
    if not row:
        return ""
    k = _label(row)
    if not k:
        return ""
    return _quoted(k, ph.fact_text(row[k]))


@dataclass
class Change:
    """What the chain did to one row."""

    noun: str
    rid: Any
    name: str
    created: bool = False
    deleted: bool = False
    fields: dict[str, Any] = field(default_factory=dict)
    verbs: list[str] = field(default_factory=list)

    def group_key(self) -> tuple[Any, ...]:
        """Changes alike but for their row (said in one sentence)."""
        if self.created:
            return (id(self),)
        return (
            self.noun,
            self.deleted,
            tuple(sorted((k, str(v)) for k, v in self.fields.items())),
            tuple(self.verbs),
        )


def _top_row(step: Step) -> dict[str, Any] | None:
    tops = [e for e in step.elements if e.parent is None]
    if len(tops) != 1 or not isinstance(tops[0].row, dict):
        return None
    return tops[0].row


class ChangeReport:
    """Builds the answer of one chain (see the module docstring)."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps
        self.seen: dict[Any, dict[str, Any]] = {}
        """The first version of each row (by id) an earlier call returned."""
        self.changes: dict[Any, Change] = {}

    def _before(self, rid: Any) -> dict[str, Any] | None:
        return self.seen.get(rid)

    def _remember(self, step: Step) -> None:
        for e in step.elements:
            if isinstance(e.row, dict) and "id" in e.row:
                self.seen.setdefault(e.row["id"], e.row)

    def _fields(
        self, step: Step, row: dict[str, Any], before: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The fields ``step`` set on ``row``: its literal arguments found in the row, and what
        differs from the row's earlier version (timestamps only when asked)."""
        out = {
            k: row[k] for k in step.literal if k in row and not is_id_name(k) and _scalar(row[k])
        }
        for k, v in row.items():
            if before is None or k not in before or before[k] == v or k in out:
                continue
            if is_id_name(k) or not _scalar(v) or k.endswith(("_at", "_on")):
                continue
            out[k] = v
        return out

    def add(self, step: Step) -> bool:
        """Records one change; False when its row is unknown."""
        row = _top_row(step)
        rid = row.get("id") if row else (step.target.value if step.target else None)
        if rid is None:
            return False
        before = self._before(rid)
        c = self.changes.get(rid)
        if c is None:
            name = _name(before) or _name(row) or (step.target.title if step.target else "") or ""
            c = self.changes[rid] = Change(ph.noun_words(step.info.noun), rid, name or "")
        kind = step.info.kind
        if kind == "create" and before is None:
            c.created = True
        if kind == "delete":
            c.deleted = True
        fields = self._fields(step, row, before) if row else {}
        if not c.created and row and _name(row) == c.name:
            fields.pop(_label(row) or "", None)  # the name it goes by, unchanged
        c.fields.update(fields)
        if not fields and kind not in ("create", "delete"):
            c.verbs.append(ph.past(ph.words(step.info.name)[0]))
        return True

    def sentences(self) -> list[str]:
        """One sentence per group of alike changes."""
        groups: dict[tuple[Any, ...], list[Change]] = {}
        for c in self.changes.values():
            groups.setdefault(c.group_key(), []).append(c)
        return [_sentence(g) for g in groups.values()]

    def answer(self) -> str | None:
        """The whole answer; None when a change's row is unknown."""
        muts = [s for s in self.steps if s.mutating]
        for s in self.steps:
            if s.mutating and not self.add(s):
                return None
            self._remember(s)
        out = " ".join(self.sentences())
        last = self.steps[-1]
        if not last.mutating and muts:
            shown = show_rows(last)
            if shown is None:
                return None
            out += " " + shown
        return out


def _who(g: list[Change]) -> str:
    """``the event "Standup"``, ``the events A and B``."""
    c = g[0]
    names = [x.name or str(x.rid) for x in g]
    noun = c.noun if len(g) == 1 else ph.plural_noun(c.noun)
    return f"the {noun} {ph.join(names)}"


def _created(c: Change) -> str:
    """``I created the traveler Jordan Okafor (tra_0009), with email ...``."""
    rid = f" ({c.rid})" if isinstance(c.rid, str) and c.rid != c.name else ""
    rest = [said(k, v) for k, v in c.fields.items() if ph.fact_text(v) != c.name.strip('"')]
    head = f"I created the {c.noun} {c.name}".rstrip() + rid
    return head + (", with " + ph.join(rest) if rest else "") + "."


def _sentence(g: list[Change]) -> str:
    """What happened to one group of rows."""
    c = g[0]
    if c.created:
        return _created(c)
    many = len(g) > 1
    who = _who(g)
    if c.deleted:
        return f"{who[:1].upper() + who[1:]} {'are' if many else 'is'} deleted."
    status = [
        k
        for k, v in c.fields.items()
        if isinstance(v, bool) or (k in STATUS_FIELDS and isinstance(v, str))
    ]
    parts: list[str] = []
    if status:
        states = ph.join([_state(k, c.fields[k]) for k in status])
        parts.append(f"{'are' if many else 'is'} now {states}")
    rest = [said(k, v) for k, v in c.fields.items() if k not in status]
    if rest:
        parts.append(("now " if not parts else "") + ("have " if many else "has ") + ph.join(rest))
    if not parts:
        return f"I {ph.join(c.verbs)} {who}."
    return f"{who[:1].upper() + who[1:]} " + ", and ".join(parts) + "."


def _state(key: str, v: Any) -> str:
    """A state a row is in: ``cancelled``, ``pinned``, ``not starred``."""
    if isinstance(v, bool):
        return said(key, v)
    return ph.fact_text(v)


def _row_words(row: dict[str, Any], skip: str | None, n: int) -> list[str]:
    keys = [k for k in sorted(row, key=attr_rank) if k != skip and not is_id_name(k)]
    return [said(k, row[k]) for k in keys if _scalar(row[k])][:n]


def show_rows(step: Step) -> str | None:
    """The rows a read at the end of a chain returned, in a sentence (None: no rows)."""
    rows = [e.row for e in step.elements if e.parent is None and isinstance(e.row, dict)]
    noun = ph.noun_words(step.info.noun)
    if not rows:
        out = step.output
        return f"The {noun} now: {ph.fact_text(out)}." if _scalar(out) else None
    if len(rows) == 1 and step.info.kind != "list":
        r = rows[0]
        k = _label(r)
        who = f"The {noun} {ph.fact_text(r[k])}" if k else f"The {noun}"
        return f"{who} now reads: " + ph.join(_row_words(r, k, SHOW_FIELDS)) + "."
    k = _label(rows[0])
    items = []
    for r in rows[:SHOW_ROWS]:
        name = ph.fact_text(r[k]) if k and k in r else str(r.get("id", ""))
        items.append(f"{name} ({', '.join(_row_words(r, k, 2))})")
    more = f", and {len(rows) - SHOW_ROWS} more" if len(rows) > SHOW_ROWS else ""
    return f"The {ph.plural_noun(noun)} now: " + "; ".join(items) + more + "."


def change_answer(steps: list[Step]) -> str | None:
    """The reference's answer to a chain that changes state (None: a change's row unknown)."""
    return ChangeReport(steps).answer()
