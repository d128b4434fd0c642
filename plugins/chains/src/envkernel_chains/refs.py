"""How a request refers to an entity, and the check that the words pick exactly one seed row.

A reference (:class:`Ref`) is built from how the chain found the entity, never from its id:

- ``desc``: a row of a list call, described by that call's scope (its owner, ``my``/``Kenji
  Fischer's``; its filters, ``pending``; its search text) plus the fewest of the row's own
  attributes that single it out (``"Desk Lamp"``, ``with quantity 2``);
- ``of``: the row a foreign key points to (``the customer of that order``);
- ``persona``: the person speaking (``me``, ``my``);
- ``new``: a row the chain itself creates (``the new order``);
- ``literal``: an id given as is — only for entities that no tool can look up.

Every ``desc``/``of`` reference is **resolved against the initial (seed) state**: the set of
seed rows its words describe is computed from the constraints (owner, filters, search,
attributes), and the reference is usable only when that set is exactly the row the chain used.
The attributes must also single the row out among the rows the call actually returned.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from envkernel_kit.naming import human, is_id_name, singular, words
from envkernel_kit.tools import Schema

State = dict[str, list[dict[str, Any]]]

TITLE_FIELDS = (
    "name",
    "full_name",
    "display_name",
    "title",
    "label",
    "holder_name",
    "username",
    "subject",
    "filename",
    "flight_number",
    "product_name",
    "nickname",
)
"""Columns that name a row (``the product "Desk Lamp"``), best first."""
STATUS_FIELDS = (
    "status",
    "state",
    "tier",
    "loyalty_tier",
    "category",
    "type",
    "kind",
    "level",
    "priority",
    "role",
    "plan",
    "stage",
    "genre",
    "department",
    "specialty",
    "seat_class",
    "permission",
    "response",
    "color",
    "colour",
    "currency",
)
"""Columns whose value reads as an adjective (``the pending order``)."""
NUMBER_FIELDS = (
    "quantity",
    "total",
    "price",
    "amount",
    "balance",
    "cost",
    "stars",
    "nights",
    "size_bytes",
    "duration_minutes",
    "stock",
    "seats_left",
    "nightly_rate",
    "rating",
    "score",
)
"""Numeric columns a person would mention."""
PERSON_NOUNS = frozenset(
    {
        "customer",
        "user",
        "patient",
        "traveler",
        "traveller",
        "doctor",
        "member",
        "client",
        "guest",
        "passenger",
        "student",
        "employee",
        "subscriber",
        "contact",
        "person",
        "owner",
        "payee",
        "attendee",
        "sender",
        "recipient",
        "author",
        "agent",
        "driver",
        "host",
        "buyer",
        "seller",
        "holder",
        "staff",
        "teacher",
        "instructor",
    }
)
"""Nouns of entities that are people (referred to by name, possessive:
``Kenji Fischer's orders``)."""
PERSONA_NOUNS = frozenset(
    {
        "customer",
        "user",
        "patient",
        "traveler",
        "traveller",
        "member",
        "client",
        "guest",
        "passenger",
        "student",
        "employee",
        "subscriber",
        "buyer",
    }
)
"""Nouns of entities that can be the person making the request."""
CONTAINER_NOUNS = frozenset(
    {
        "calendar",
        "folder",
        "channel",
        "directory",
        "workspace",
        "playlist",
        "album",
        "board",
        "project",
        "team",
        "category",
        "repository",
        "repo",
        "space",
        "notebook",
        "inbox",
        "mailbox",
    }
)
"""Nouns of entities that hold others (``the files in the folder "Reports"``)."""

NOT_ADJECTIVES = frozenset(
    {
        "other",
        "none",
        "unknown",
        "default",
        "general",
        "misc",
        "n/a",
        "new",
        "all",
        "any",
        "true",
        "false",
    }
)
"""Values that do not read as an adjective before a noun (``the other transaction``)."""


def adjective(v: Any) -> bool:
    """True for a value that reads well before the noun (``pending``, ``premium``)."""
    return (
        isinstance(v, str) and v.isalpha() and 2 < len(v) <= 20 and v.lower() not in NOT_ADJECTIVES
    )


_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2})?")
_BAD = re.compile(r'["\\\x00-\x1f]')
_ID_LIKE = re.compile(r"^[a-z]{2,5}_\d{3,}$")


def norm(v: Any) -> Any:
    """A value for comparing as the engine does (strings case-insensitively, 2 == 2.0)."""
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        return v.strip().lower()
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def satisfies(row: dict[str, Any], c: tuple[str, str, Any]) -> bool:
    """True when ``row`` meets constraint ``(field, op, value)`` (op ``search``: field is a
    tuple)."""
    fld, op, v = c
    if op == "search":
        text = str(v).lower()
        cols = fld or tuple(k for k, x in row.items() if isinstance(x, str))
        return any(text in str(row.get(k) or "").lower() for k in cols)
    if op == "in_set":
        return norm(row.get(fld)) in v
    got = row.get(fld)
    if op == "eq":
        return norm(got) == norm(v)
    if got is None:
        return False
    try:
        if op == "gte":
            return got >= v
        if op == "lte":
            return got <= v
        if op == "gt":
            return got > v
        if op == "lt":
            return got < v
    except TypeError:
        return True
    if op == "contains":
        return str(v).lower() in str(got).lower()
    if op == "in":
        vals = v if isinstance(v, list) else [x.strip() for x in str(v).split(",")]
        return norm(got) in {norm(x) for x in vals}
    return True  # unknown: do not narrow (a superset of the true match keeps the check sound)


def describable(key: str, value: Any, generated: set[str] | frozenset[str] = frozenset()) -> bool:
    """True when ``key: value`` can describe a row to a person (short, not an id, not generated)."""
    if key in generated or is_id_name(key) or value is None:
        return False
    if isinstance(value, bool):
        return value is True and len(words(key)) <= 2
    if isinstance(value, str):
        return (
            0 < len(value) <= 48
            and not _BAD.search(value)
            and not _ID_LIKE.match(value)
            and not _TIMESTAMP.match(value)
        )
    return isinstance(value, (int, float))


COUNTED_FIELDS = frozenset(
    {"nights", "seats", "seats_left", "guests", "attendees", "items", "stars"}
)
"""Number fields that count things: a superlative over them says ``most`` / ``fewest``, a value
``4 nights`` (``quantity`` and ``stock`` are amounts: "the highest quantity", never "the fewest
quantity")."""


def attr_rank(key: str) -> tuple[int, int]:
    """Which attributes a person uses first: names, then statuses, then numbers, then the rest."""
    for group, names in enumerate((TITLE_FIELDS, STATUS_FIELDS, NUMBER_FIELDS)):
        if key in names:
            return group, names.index(key)
    if key.endswith("_name"):
        return 0, 50
    return 3, 0


_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}", re.I)


TIME_WORDS = {
    "starts_at": "start time",
    "ends_at": "end time",
    "departure_at": "departure time",
    "arrival_at": "arrival time",
    "execute_on": "execution date",
    "expires_on": "expiry date",
    "posted_at": "posting date",
    "due_at": "due date",
}


def _time_words(key: str) -> str:
    """A time field in words: ``starts_at`` -> ``start time``, ``checked_in_at`` ->
    ``checked in time``."""
    ws = words(key)
    return TIME_WORDS.get(key) or (
        " ".join(ws[:-1]) + (" date" if ws[-1] == "on" else " time")
        if len(ws) > 1 and ws[-1] in ("at", "on")
        else " ".join(ws)
    )


def _stamp(v: Any) -> bool:
    """True for an ISO date-time string."""
    return isinstance(v, str) and _STAMP.match(v) is not None


def is_person(noun: str) -> bool:
    """True for an entity noun that stands for a person."""
    return singular(noun) in PERSON_NOUNS or words(noun)[-1:] in (["holder"], ["owner"])


@dataclass(eq=False)
class Ref:
    """A way to refer to one entity in a request (see the module docstring)."""

    kind: str
    """``desc``, ``of``, ``persona``, ``new``, ``literal``."""
    noun: str
    table: str | None
    value: Any
    """The id the reference must resolve to."""
    ids: frozenset[Any] | None
    """Seed ids the words describe (None: a row created by the chain)."""
    title: str | None = None
    person: bool = False
    adjectives: list[str] = field(default_factory=list)
    withs: list[tuple[str, Any]] = field(default_factory=list)
    quals: list[str] = field(default_factory=list)
    owner: Ref | None = None
    owner_rel: str = "of"
    """How the owner is phrased: ``poss`` (Kenji's), ``in`` (in the folder), ``for``."""
    more_owners: list[Ref] = field(default_factory=list)
    """Further owners (``for the product "Desk Lamp"``)."""
    base: Ref | None = None
    """For ``of``: the reference of the row that holds the foreign key."""
    role: str = ""
    """For ``of``: the foreign key's meaning (``customer``, ``sender``)."""
    values: list[str] = field(default_factory=list)
    """Literal strings the words contain (masked when counting phrasings)."""
    idents: list[tuple[str, Any]] = field(default_factory=list)
    """Exact ``(column, value)`` constraints of the scope (``email = ann@example.com``): what a
    person would say about themselves."""
    where: list[tuple[str, str, Any]] = field(default_factory=list)
    """For ``desc``: every constraint its words put on the row (the scope, the owners, the chosen
    attributes), so that a row added to the state later can be checked against them."""
    best: tuple[str, str] | None = None
    """For a superlative ``desc``: the field the row wins on and how (``max`` or ``min``)."""

    @property
    def ok(self) -> bool:
        """True when the words pick exactly the row the chain used (or the row is new)."""
        if self.kind == "new":
            return True
        return (
            self.ids is not None
            and len(self.ids) == 1
            and norm(next(iter(self.ids))) == norm(self.value)
        )

    @property
    def key(self) -> tuple[str, str]:
        """Identity of the entity (table, id) for "that order" on a second mention."""
        return (self.table or self.noun, repr(norm(self.value)))


class Resolver:
    """Builds references and resolves them against the seed state."""

    def __init__(self, seed: State, schema: Schema) -> None:
        self.seed = seed
        self.schema = schema
        self._by_id: dict[str, dict[Any, dict[str, Any]]] = {}
        self._norm_rows: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
        self._text_fields: dict[str, dict[Any, set[str]]] = {}
        self.rng: random.Random | None = None
        """Chooses superlative references (none without it)."""
        self.superlative_share = 0.0
        """Share of the references that can be a superlative that are one."""
        self.last_best: tuple[str, str] | None = None
        """The field and direction (``max``/``min``) of the last superlative chosen."""

    def row(self, table: str | None, value: Any) -> dict[str, Any] | None:
        """The seed row of ``table`` with id ``value`` (None when it is not a seed row)."""
        if table is None or table not in self.seed:
            return None
        idx = self._by_id.get(table)
        if idx is None:
            key = self.schema.key(table)
            idx = self._by_id[table] = {norm(r.get(key)): r for r in self.seed[table]}
        return idx.get(norm(value))

    def _normed(self, table: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        got = self._norm_rows.get(table)
        if got is None:
            got = self._norm_rows[table] = [
                (r, {k: norm(v) for k, v in r.items()}) for r in self.seed.get(table, [])
            ]
        return got

    def ids(self, table: str, constraints: list[tuple[str, str, Any]]) -> frozenset[Any]:
        """Ids of the seed rows of ``table`` that meet every constraint."""
        key = self.schema.key(table)
        eq = [(c[0], norm(c[2])) for c in constraints if c[1] == "eq"]
        sets = [(c[0], c[2]) for c in constraints if c[1] == "in_set"]
        rest = [c for c in constraints if c[1] not in ("eq", "in_set")]
        out = []
        for raw, nr in self._normed(table):
            if (
                all(nr.get(f) == v for f, v in eq)
                and all(nr.get(f) in vs for f, vs in sets)
                and all(satisfies(raw, c) for c in rest)
            ):
                out.append(nr.get(key))
        return frozenset(out)

    def superlative(
        self,
        table: str,
        value: Any,
        base: frozenset[Any],
        others: list[dict[str, Any]],
        seed_row: dict[str, Any],
        row_now: dict[str, Any],
        skip: set[str],
    ) -> str | None:
        """``with the highest total`` when the row ``value`` holds the one highest (or lowest) value
        of a number field among the rows the lookup can return (``base``, and the ``others`` it
        did return): a superlative the data decides. Chosen for about ``superlative_share`` of
        the references that can have one; None otherwise."""
        self.last_best: tuple[str, str] | None = None
        if self.rng is None or self.rng.random() >= self.superlative_share:
            return None
        key = self.schema.key(table)
        fields = [
            k
            for k, v in seed_row.items()
            if k not in skip
            and not is_id_name(k)
            and (isinstance(v, (int, float)) or _stamp(v))
            and not isinstance(v, bool)
            and norm(row_now.get(k)) == norm(v)
        ]
        self.rng.shuffle(fields)
        rows = [nr for _raw, nr in self._normed(table) if nr.get(key) in base] if fields else []
        for k in fields:
            mine = norm(seed_row[k])
            vals = [r.get(k) for r in rows if r.get(key) != norm(value)] + [
                norm(o.get(k)) for o in others
            ]
            found = (
                _time_best(k, mine, vals) if _stamp(seed_row[k]) else _number_best(k, mine, vals)
            )
            if found is not None:
                self.last_best, words_of = found
                return words_of
        return None

    def read_elsewhere(self, table: str, field: str, v: Any) -> bool:
        """True when the text ``v`` (a value of ``field``) is the value of *another* field in some
        row of ``table``: read as that field, the phrase would name a different row (the same
        field is the uniqueness check's job)."""
        if not isinstance(v, str):
            return False
        idx = self._text_fields.get(table)
        if idx is None:  # text value -> the fields that hold it somewhere in the table (built once)
            key = self.schema.key(table)
            idx = self._text_fields[table] = {}
            for raw, nr in self._normed(table):
                for k, x in nr.items():
                    if k != key and isinstance(raw.get(k), str):
                        idx.setdefault(x, set()).add(k)
        return bool(idx.get(norm(v), set()) - {field})

    # -- kinds of references -------------------------------------------------------------

    def new(self, table: str | None, noun: str, value: Any) -> Ref:
        """A row the chain created."""
        return Ref(
            kind="new", noun=noun, table=table, value=value, ids=None, person=is_person(noun)
        )

    def persona(self, table: str | None, noun: str, value: Any) -> Ref:
        """The person speaking."""
        return Ref(
            kind="persona",
            noun=noun,
            table=table,
            value=value,
            ids=frozenset([norm(value)]),
            person=True,
        )

    def literal(self, table: str | None, noun: str, value: Any) -> Ref:
        """An id given as is (for an entity no tool can look up)."""
        return Ref(
            kind="literal",
            noun=noun,
            table=table,
            value=value,
            ids=frozenset([norm(value)]),
            values=[str(value)],
        )

    def of(self, base: Ref, fk_field: str, target_table: str | None, value: Any) -> Ref:
        """The row a foreign key of ``base``'s row points to: ``the customer of that order``."""
        role = "_".join(words(fk_field)[:-1]) if is_id_name(fk_field) else fk_field
        noun = singular(target_table or role) if target_table else role
        ids: frozenset[Any]
        if base.ids is None or base.table is None:
            ids = (
                frozenset()
            )  # the foreign key of a new row is whatever the chain gave it: not a lookup
        else:
            key = self.schema.key(base.table)
            ids = frozenset(
                norm(r.get(fk_field))
                for r in self.seed.get(base.table, [])
                if norm(r.get(key)) in base.ids
            )
        return Ref(
            kind="of",
            noun=noun,
            table=target_table,
            value=value,
            ids=ids,
            base=base,
            role=role or noun,
            person=is_person(role or noun) or is_person(noun),
        )

    def describe(
        self,
        table: str,
        noun: str,
        value: Any,
        scope: list[tuple[str, str, Any]],
        owners: list[tuple[str, Ref]],
        siblings: list[dict[str, Any]],
        row_now: dict[str, Any],
        quals: list[str],
        adjectives: list[str],
        scope_values: list[str],
        max_attrs: int = 2,
        idents: list[tuple[str, Any]] | None = None,
    ) -> Ref | None:
        """A ``desc`` reference to the row ``value`` of ``table`` found by a list call, or None.

        ``scope``: the call's literal constraints; ``owners``: (column, owner reference) for its
        linked id arguments; ``siblings``: the rows the call returned (``row_now`` among them).
        """
        key = self.schema.key(table)
        seed_row = self.row(table, value)
        constraints = _owned_constraints(scope, owners)
        if seed_row is None or constraints is None:
            return None
        base = self.ids(table, constraints)
        if norm(value) not in base:
            return None
        others = [r for r in siblings if norm(r.get(key)) != norm(value)]
        found = self._said_by(table, value, base, others, seed_row, row_now, constraints, max_attrs)
        if found is None:
            return None
        chosen, superlative = found
        where = constraints + [(k, "eq", seed_row[k]) for k in chosen]
        ref = Ref(
            kind="desc",
            noun=noun,
            table=table,
            value=value,
            ids=self.ids(table, where) if superlative is None else frozenset([norm(value)]),
            person=is_person(noun),
            adjectives=list(adjectives),
            quals=list(quals)
            if superlative is None
            else merge_superlative(list(quals), superlative),
            values=list(scope_values),
            idents=list(idents or []),
            where=where,
            best=self.last_best if superlative is not None else None,
        )
        for k in chosen:
            _say_attribute(ref, k, seed_row[k])
        _set_owners(ref, owners)
        return ref if ref.ok else None

    def _said_by(
        self,
        table: str,
        value: Any,
        base: frozenset[Any],
        others: list[dict[str, Any]],
        seed_row: dict[str, Any],
        row_now: dict[str, Any],
        constraints: list[tuple[str, str, Any]],
        max_attrs: int,
    ) -> tuple[list[str], Any] | None:
        """What tells the row apart from the others in scope, as (the attributes to say, a
        superlative or None): nothing when it is the only one, else a superlative, else the
        fewest telling attributes; None when nothing does."""
        key = self.schema.key(table)
        gen = self.schema.generated.get(table, set())
        refs_cols = set(self.schema.refs.get(table, {}))
        cands = [
            k
            for k, v in seed_row.items()
            if k != key
            and k not in refs_cols
            and describable(k, v, gen)
            and norm(row_now.get(k)) == norm(v)
        ]
        cands.sort(key=attr_rank)
        # a phrase must resolve to one row in every field it could be read as: "Business Account" is
        # not a holder name to use when another account's nickname is "Business Account"
        cands = [k for k in cands if not self.read_elsewhere(table, k, seed_row[k])]
        superlative = (
            self.superlative(table, value, base, others, seed_row, row_now, gen | refs_cols | {key})
            if len(base) >= 2
            else None
        )
        if len(base) == 1 and not others:
            return [], None
        if superlative is not None:
            return [], superlative
        chosen = self._telling(table, constraints, cands, seed_row, others, max_attrs)
        return None if chosen is None else (chosen, None)

    def _telling(
        self,
        table: str,
        constraints: list[tuple[str, str, Any]],
        cands: list[str],
        seed_row: dict[str, Any],
        others: list[dict[str, Any]],
        max_attrs: int,
    ) -> list[str] | None:
        """The fewest attributes (one, else two of the first six) that tell the row apart from
        every other row in scope and every sibling; None when none do."""
        for k in cands:
            if len(self.ids(table, constraints + [(k, "eq", seed_row[k])])) == 1 and all(
                norm(o.get(k)) != norm(seed_row[k]) for o in others
            ):
                return [k]
        if max_attrs < 2:
            return None
        for a, b in combinations(cands[:6], 2):
            cs = constraints + [(a, "eq", seed_row[a]), (b, "eq", seed_row[b])]
            if len(self.ids(table, cs)) == 1 and all(
                (norm(o.get(a)), norm(o.get(b))) != (norm(seed_row[a]), norm(seed_row[b]))
                for o in others
            ):
                return [a, b]
        return None


def _owned_constraints(
    scope: list[tuple[str, str, Any]], owners: list[tuple[str, Ref]]
) -> list[tuple[str, str, Any]] | None:
    """A list call's constraints with each owner's rows (None when an owner is not resolved)."""
    constraints = list(scope)
    for col, o in owners:
        if o.ids is None or not o.ok:
            return None
        constraints.append((col, "in_set", frozenset(o.ids)))
    return constraints


def _set_owners(ref: Ref, owners: list[tuple[str, Ref]]) -> None:
    """The row's owners: the first as its owner (``Ana's``, ``in the folder``, ``for``), the rest
    after it."""
    if not owners:
        return
    o = owners[0][1]
    ref.owner = o
    ref.owner_rel = "poss" if o.person else ("in" if singular(o.noun) in CONTAINER_NOUNS else "for")
    ref.more_owners = [extra for _col, extra in owners[1:]]


def _say_attribute(ref: Ref, k: str, v: Any) -> None:
    """Add one telling attribute to a description: its title, a status adjective, a flag, or a
    ``with`` value."""
    if attr_rank(k)[0] == 0 and isinstance(v, str) and ref.title is None:
        ref.title = v
        ref.values.append(v)
    elif k in STATUS_FIELDS and adjective(v):
        ref.adjectives.append(v)
        ref.values.append(v)
    elif isinstance(v, bool):
        ref.adjectives.append(" ".join(w for w in words(k) if w not in ("is", "has")))
    else:
        ref.withs.append((k, v))
        ref.values.append(str(v))


_MADE_AT = ("created_at", "placed_at", "posted_at", "sent_at", "uploaded_at", "booked_at")
"""Time fields that say when a row was made: "created most recently", not "with the latest ..."."""


def _time_best(k: str, mine: Any, vals: list[Any]) -> tuple[tuple[str, str], str] | None:
    """((field, max or min), words) when the time ``mine`` is the latest or earliest of ``vals``
    (ISO times of one format compare as text); None otherwise."""
    if not vals or not all(_stamp(x) and len(x) == len(mine) for x in vals):
        return None
    made = k in _MADE_AT
    if all(x < mine for x in vals):
        return (k, "max"), "created most recently" if made else f"with the latest {_time_words(k)}"
    if all(x > mine for x in vals):
        return (k, "min"), "created earliest" if made else f"with the earliest {_time_words(k)}"
    return None


def _number_best(k: str, mine: Any, vals: list[Any]) -> tuple[tuple[str, str], str] | None:
    """((field, max or min), words) when the number ``mine`` is the highest or lowest of
    ``vals`` ("the most nights" for a counted field, not "the highest nights"); None otherwise."""
    if not vals or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vals):
        return None
    counted = k in COUNTED_FIELDS
    fw = field_words(k, units=False)
    if all(x < mine for x in vals):
        return (k, "max"), f"with the {'most' if counted else 'highest'} {fw}"
    if all(x > mine for x in vals):
        return (k, "min"), f"with the {'fewest' if counted else 'lowest'} {fw}"
    return None


def merge_superlative(quals: list[str], superlative: str) -> list[str]:
    """The qualifiers with ``superlative`` added, folded into a range on the same field: ``with the
    earliest start time on or after X``, never ``with start time on or after X and with the earliest
    start time``."""
    m = re.match(r"with the (?:earliest|latest|highest|lowest|most|fewest) (.+)$", superlative)
    if m:
        lead = f"with {m.group(1)} "
        for i, q in enumerate(quals):
            if q.startswith(lead):
                return quals[:i] + [f"{superlative} {q[len(lead) :]}"] + quals[i + 1 :]
    return quals + [superlative]


FIELD_WORDS = {
    "starts_at": "start time",
    "ends_at": "end time",
    "execute_on": "execution date",
    "date_of_birth": "date of birth",
    "expires_on": "expiry date",
    "departure_at": "departure time",
    "arrival_at": "arrival time",
    "mime_type": "file type",
    "iban": "IBAN",
}
"""Field names a person says differently from their words."""


def field_words(key: str, units: bool = True) -> str:
    """A field name in words: ``unit_price`` -> ``unit price``, ``starts_at`` -> ``start time``,
    ``size_bytes`` -> ``size in bytes`` (``size`` without ``units``: "the largest size", never "the
    highest size bytes")."""
    if key in FIELD_WORDS:
        return FIELD_WORDS[key]
    u = unit_of(key)
    if u and u[1] != "cents":
        return f"{u[0]} in {u[1]}" if units else u[0]
    ws = words(key)
    if len(ws) > 1 and ws[-1] == "cents":
        return " ".join(ws[:-1]) + " in cents"
    if len(ws) > 1 and ws[0] in ("is", "has"):
        return " ".join(ws[1:])
    if len(ws) > 1 and ws[-1] == "at":
        return " ".join(ws[:-1]) + " time"
    return " ".join(ws)


UNITS = {
    "minutes": "minutes",
    "bytes": "bytes",
    "cents": "cents",
    "seconds": "seconds",
    "days": "days",
    "hours": "hours",
    "ms": "milliseconds",
    "secs": "seconds",
    "mins": "minutes",
}
"""Trailing words of a field name that are the unit of its value (``duration_minutes``)."""


def unit_of(key: str) -> tuple[str, str] | None:
    """(the field without its unit, the unit) for ``duration_minutes`` -> (``duration``,
    ``minutes``), else None."""
    ws = words(key)
    if len(ws) > 1 and ws[-1] in UNITS:
        return " ".join(ws[:-1]), UNITS[ws[-1]]
    return None


def human_noun(noun: str) -> str:
    """An entity noun in words."""
    return human(noun)
