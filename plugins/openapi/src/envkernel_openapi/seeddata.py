"""Deterministic seed rows a person would believe, and the spec accepts.

For each row the maker first draws a *context*: a person from a Faker locale (name, email,
phone, address and country agree with each other), a product with the category it belongs to
and a price in its range, a place, a company. Each column then takes, best first: its generated
key or foreign key, an ``enum`` value (every value appears when there are enough rows), the
schema's ``examples``, a timestamp placed in order (``created_at`` <= ``updated_at`` <= now,
an end after its start, a status stamp such as ``confirmed_at`` only on rows whose status has
reached it), a value chosen by the column's name and the resource's noun, and last a value built
from the schema. Every value then goes through :func:`.seedschema.conform`, which keeps it when
the field's schema (pattern, length and range bounds, format, items) accepts it and builds a
value that it accepts otherwise.

Identifying text (names, titles, emails, codes) is unique within a table by construction (a
fresh combination is drawn, never a " 2" suffix). Prices are above 0, an origin differs from
its destination. The same seed always gives the same rows.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import random
import unicodedata
from collections.abc import Callable
from typing import Any

from envkernel_kit.naming import words

from .seedschema import CLOCK, conform, from_schema, iso, schema_of

__all__ = ["CLOCK", "LOCALES", "RowMaker"]

LOCALES = {
    "en_US": (
        "United States",
        "US",
        "USD",
        "1",
        ["New York", "Austin", "Chicago", "Seattle", "Denver", "Boston", "San Diego"],
    ),
    "en_GB": (
        "United Kingdom",
        "GB",
        "GBP",
        "44",
        ["London", "Manchester", "Bristol", "Leeds", "Edinburgh", "Glasgow"],
    ),
    "fr_FR": (
        "France",
        "FR",
        "EUR",
        "33",
        ["Paris", "Lyon", "Marseille", "Toulouse", "Nantes", "Bordeaux"],
    ),
    "de_DE": (
        "Germany",
        "DE",
        "EUR",
        "49",
        ["Berlin", "Munich", "Hamburg", "Cologne", "Leipzig", "Frankfurt"],
    ),
    "es_ES": (
        "Spain",
        "ES",
        "EUR",
        "34",
        ["Madrid", "Barcelona", "Seville", "Valencia", "Bilbao", "Malaga"],
    ),
    "it_IT": (
        "Italy",
        "IT",
        "EUR",
        "39",
        ["Rome", "Milan", "Turin", "Florence", "Bologna", "Naples"],
    ),
    "nl_NL": (
        "Netherlands",
        "NL",
        "EUR",
        "31",
        ["Amsterdam", "Rotterdam", "Utrecht", "The Hague", "Eindhoven"],
    ),
    "pt_PT": ("Portugal", "PT", "EUR", "351", ["Lisbon", "Porto", "Braga", "Coimbra", "Faro"]),
    "en_CA": (
        "Canada",
        "CA",
        "CAD",
        "1",
        ["Toronto", "Vancouver", "Montreal", "Calgary", "Ottawa"],
    ),
    "en_AU": (
        "Australia",
        "AU",
        "AUD",
        "61",
        ["Sydney", "Melbourne", "Brisbane", "Perth", "Adelaide"],
    ),
}
"""Faker locales the people and places come from: locale -> (country, ISO code, currency, calling
code, real cities)."""

CATALOG: dict[str, list[tuple[str, float, float]]] = {
    "home office": [
        ("standing desk", 299, 699),
        ("ergonomic office chair", 149, 499),
        ("desk lamp", 19, 89),
        ("laptop stand", 25, 79),
        ("desk organizer", 12, 39),
        ("filing cabinet", 89, 249),
    ],
    "computer accessories": [
        ("wireless mouse", 15, 79),
        ("mechanical keyboard", 59, 199),
        ("USB-C hub", 19, 69),
        ("webcam", 39, 149),
        ("portable SSD", 59, 249),
        ("laptop sleeve", 15, 45),
    ],
    "audio": [
        ("noise-cancelling headphones", 99, 399),
        ("bluetooth speaker", 29, 199),
        ("wireless earbuds", 49, 249),
        ("USB microphone", 49, 169),
        ("soundbar", 129, 449),
    ],
    "displays": [
        ("27-inch monitor", 179, 549),
        ("portable monitor", 129, 299),
        ("ultrawide monitor", 349, 999),
        ("monitor arm", 39, 129),
        ("4K monitor", 299, 699),
    ],
    "kitchen": [
        ("ceramic coffee mug", 8, 24),
        ("french press", 19, 49),
        ("chef's knife", 39, 149),
        ("electric kettle", 25, 89),
    ],
    "travel": [
        ("carry-on suitcase", 89, 329),
        ("travel backpack", 49, 179),
        ("packing cubes", 15, 39),
        ("neck pillow", 12, 35),
    ],
    "fitness": [
        ("yoga mat", 19, 79),
        ("adjustable dumbbells", 99, 349),
        ("resistance bands", 12, 35),
        ("water bottle", 12, 39),
    ],
    "stationery": [
        ("leather notebook", 14, 45),
        ("fountain pen", 25, 120),
        ("desk planner", 12, 30),
        ("sticky notes", 4, 12),
    ],
}
"""Category -> products in it, each with a believable price range."""
BRANDS = [
    "Halden",
    "Lumio",
    "Northwind",
    "Keystone",
    "Brightline",
    "Orbit",
    "Vanta",
    "Novu",
    "Fjord",
    "Corvid",
    "Sable",
    "Tessel",
]
HOTEL_KINDS = ["Hotel", "Inn", "Suites", "Lodge", "Grand Hotel", "Boutique Hotel"]
AIRLINES = [
    ("Northwind Air", "NW"),
    ("Bluesky Airways", "BS"),
    ("Coastal Jet", "CJ"),
    ("Aurora Airlines", "AU"),
    ("Meridian Air", "MA"),
]
AIRPORTS = [
    "LHR",
    "CDG",
    "JFK",
    "SFO",
    "SIN",
    "HND",
    "FRA",
    "AMS",
    "LIS",
    "PRG",
    "YYZ",
    "SYD",
    "MAD",
    "MUC",
    "OSL",
]
MEETINGS = [
    "Quarterly planning",
    "Design review",
    "Team standup",
    "Budget sync",
    "Customer call",
    "Sprint retrospective",
    "Hiring panel",
    "Product demo",
    "1:1",
    "Marketing brainstorm",
    "Board prep",
    "Onboarding session",
    "Dentist appointment",
    "Yoga class",
    "Lunch",
    "Release go/no-go",
    "Roadmap review",
    "All-hands",
]
SUBJECTS = [
    "Invoice for January",
    "Lunch on Friday?",
    "Project kickoff notes",
    "Your order has shipped",
    "Re: contract draft",
    "Team offsite agenda",
    "Password reset",
    "Weekly report",
    "Welcome aboard!",
    "Question about the budget",
    "Flight itinerary",
    "Meeting moved to 3pm",
    "Holiday schedule",
    "Feedback on the design",
]
MESSAGES = [
    "Can we move the meeting to Thursday?",
    "The files are in the shared folder.",
    "Thanks, that works for me!",
    "I have attached the latest draft.",
    "Running ten minutes late, sorry.",
    "Please review the budget before Friday.",
    "Great job on the launch!",
    "Who is taking notes today?",
    "The client approved the proposal.",
    "Let's sync after lunch.",
]
TASKS = [
    "Update the onboarding guide",
    "Fix the login bug",
    "Prepare the quarterly report",
    "Book the team offsite",
    "Review the pull request",
    "Renew the SSL certificate",
    "Call the supplier",
    "Plan the product launch",
    "Clean up the backlog",
    "Write the release notes",
]
FILES = [
    ("q4-report", "pdf"),
    ("budget-2026", "xlsx"),
    ("team-photo", "jpg"),
    ("contract-draft", "docx"),
    ("meeting-notes", "md"),
    ("logo", "png"),
    ("roadmap", "pptx"),
    ("invoice-0042", "pdf"),
    ("holiday-schedule", "csv"),
    ("product-specs", "pdf"),
    ("onboarding-guide", "docx"),
    ("backup", "zip"),
]
FILE_TOPICS = [
    "marketing",
    "sales",
    "hr",
    "design",
    "finance",
    "legal",
    "ops",
    "q1",
    "q2",
    "q3",
    "client",
    "draft",
]
MIME = {
    "pdf": "application/pdf",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "jpg": "image/jpeg",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "md": "text/markdown",
    "png": "image/png",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "csv": "text/csv",
    "zip": "application/zip",
}
FOLDERS = [
    "Projects",
    "Invoices",
    "Photos",
    "Contracts",
    "Archive",
    "Marketing",
    "Personal",
    "Shared with team",
    "Receipts",
    "Design assets",
    "Travel",
    "Taxes 2025",
]
CHANNELS = [
    "general",
    "random",
    "engineering",
    "design",
    "marketing",
    "support",
    "announcements",
    "sales",
    "product",
    "hiring",
    "ops",
    "data",
    "frontend",
    "backend",
    "customer-success",
    "finance",
]
TOPICS = [
    "Company-wide announcements",
    "Off-topic chatter",
    "Ship it!",
    "Weekly metrics and dashboards",
    "Questions from customers",
    "Launch planning",
    "Design critiques",
    "Incidents and on-call",
]
CALENDARS = [
    "Work",
    "Personal",
    "Family",
    "Team Offsite",
    "Holidays",
    "Fitness",
    "Birthdays",
    "On-call",
    "Travel",
    "Side project",
]
SPECIALTIES = [
    "cardiology",
    "dermatology",
    "pediatrics",
    "general practice",
    "orthopedics",
    "neurology",
    "ophthalmology",
]
REASONS = [
    "annual check-up",
    "persistent cough",
    "knee pain",
    "skin rash",
    "follow-up visit",
    "blood test results",
    "vaccination",
    "back pain",
    "migraine",
    "allergy consultation",
]
ACCOUNTS = [
    "Everyday Checking",
    "Holiday Savings",
    "Emergency Fund",
    "Joint Account",
    "Business Account",
    "Travel Fund",
    "House Deposit",
    "Car Savings",
    "Rainy Day Fund",
    "Bills",
]
MERCHANTS = [
    "Corner Grocery",
    "City Transit",
    "Blue Bottle Coffee",
    "Online Books",
    "Power & Light Co.",
    "Fitness Club",
    "Pharmacy Plus",
    "Airline Tickets",
    "Hardware Store",
    "Streaming Service",
]
TAGS = ["urgent", "work", "personal", "finance", "travel", "family", "follow-up", "ideas"]
COLORS = ["black", "white", "silver", "blue", "red", "green"]
NOTES = [
    "Please handle with care.",
    "Follow up next week.",
    "Requested by the client.",
    "Priority item for Q1.",
    "Shared with the whole team.",
    "Needs a second review.",
]
PERSON_NOUNS = {
    "customer",
    "user",
    "patient",
    "guest",
    "passenger",
    "traveler",
    "traveller",
    "contact",
    "member",
    "employee",
    "owner",
    "person",
    "doctor",
    "physician",
    "author",
    "attendee",
    "participant",
    "recipient",
    "sender",
    "client",
    "account_holder",
    "holder",
    "student",
    "teacher",
    "agent",
    "practitioner",
    "provider",
    "staff",
    "payee",
    "beneficiary",
    "identity",
    "admin",
    "subscriber",
    "profile",
    "invitee",
    "speaker",
    "host",
    "candidate",
}
DOCTORS = {"doctor", "physician", "practitioner", "provider", "dentist"}
TRAVEL_NOUNS = {"flight", "route", "trip", "itinerary", "leg", "segment", "fare", "journey", "ride"}
PRODUCT_NOUNS = ("product", "item", "article", "good", "sku", "variant", "listing")
HOTEL_NOUNS = ("hotel", "property", "lodging", "accommodation")
NEGATIVE = {
    "cancelled",
    "canceled",
    "rejected",
    "failed",
    "archived",
    "deleted",
    "declined",
    "refunded",
    "expired",
    "no_show",
    "voided",
    "void",
    "closed",
    "suspended",
    "frozen",
    "inactive",
    "blocked",
    "revoked",
}
"""Statuses a row falls into rather than moves through: their stamps are set only on rows in
them."""
PAST_WORDS = {
    "created",
    "joined",
    "opened",
    "registered",
    "uploaded",
    "sent",
    "posted",
    "paid",
    "booked",
    "modified",
    "updated",
    "last",
    "received",
    "issued",
    "submitted",
    "signed",
    "published",
    "edited",
    "completed",
    "delivered",
    "shipped",
    "confirmed",
    "started",
    "accepted",
    "archived",
    "cancelled",
    "canceled",
    "checked",
    "verified",
    "processed",
}
START_WORDS = {
    "start",
    "starts",
    "departure",
    "departs",
    "checkin",
    "begin",
    "begins",
    "from",
    "since",
    "pickup",
}
END_WORDS = {
    "end",
    "ends",
    "arrival",
    "arrives",
    "checkout",
    "until",
    "due",
    "return",
    "dropoff",
    "expires",
    "expiry",
    "to",
}
TIME_WORDS = {"at", "time", "datetime", "timestamp", "on", "date"}
MONEY = {
    "price",
    "amount",
    "total",
    "balance",
    "cost",
    "fee",
    "subtotal",
    "salary",
    "budget",
    "fare",
    "rate",
    "charge",
    "tax",
    "deposit",
    "payment",
    "value",
    "spend",
    "revenue",
    "credit",
    "debit",
}


def _rfc2822(f: dict[str, Any]) -> bool:
    """True for a time field written the RFC 2822 way (Twilio's ``format: date-time-rfc-2822``)."""
    return "2822" in str(f.get("format") or "")


def _ascii(text: str) -> str:
    return "".join(
        c for c in unicodedata.normalize("NFKD", text) if c.isascii() and (c.isalnum() or c in ".-")
    )


def _faker(locale: str, seed: int) -> Any:
    from faker import Faker

    fake = Faker(locale)
    fake.seed_instance(seed)
    return fake


_MISS = object()
"""No rule of a :meth:`RowMaker.by_name` part applies to the column (None is a value: the
schema's)."""


CREATED_WORDS = frozenset({"created", "registered", "joined", "opened"})
"""Words of a column that holds when its row came to be."""

_PASS = object()
"""A value source's answer when it has no say on the column (the next one is asked)."""


class RowMaker:
    """Makes the seed rows of one resource (``noun`` is its singular; ``fields`` its columns)."""

    def __init__(
        self,
        rng: random.Random,
        noun: str,
        fields: dict[str, dict[str, Any]],
        key: str,
        prefix: str,
        locales: list[str] | None = None,
    ) -> None:
        self.rng = rng
        self.noun = noun
        self.fields = fields
        self.key = key
        self.prefix = prefix
        self.used: dict[str, set[str]] = {}
        self.person = noun in PERSON_NOUNS or noun.split("_")[-1] in PERSON_NOUNS
        self.locales = [loc for loc in (locales or list(LOCALES)) if loc in LOCALES] or ["en_US"]
        self.fakers = {loc: _faker(loc, rng.getrandbits(32)) for loc in self.locales}
        self.status_col = next(
            (c for c, f in fields.items() if set(words(c)) & {"status", "state"} and f.get("enum")),
            None,
        )
        self.products = self._product_pool()

    # -- uniqueness ---------------------------------------------------------------------

    def unique(self, col: str, make: Any) -> Any:
        """A value from ``make(attempt)`` no other row of this table has in ``col`` (``attempt``
        widens the choice)."""
        seen = self.used.setdefault(col, set())
        v = make(0)
        for attempt in range(1, 60):
            if str(v) not in seen:
                break
            v = make(attempt)
        else:
            v = f"{v} {self.rng.randint(100, 999)}" if isinstance(v, str) else v
        seen.add(str(v))
        return v

    # -- one row ------------------------------------------------------------------------

    def row(self, i: int, n: int, refs: dict[str, list[Any]]) -> dict[str, Any]:
        """Row ``i`` of ``n``; ``refs`` holds the keys of the tables already made."""
        ctx = self._context(i, n)
        out: dict[str, Any] = {}
        order = sorted(self.fields, key=lambda c: (self._later(c), list(self.fields).index(c)))
        for col in order:
            f = self.fields[col]
            if f.get("hidden") and not f.get("ref"):
                continue
            v = self.value(col, f, ctx, out, refs)
            if (
                v is None
                and not f.get("ref")
                and not f.get("nullable")
                and col != self.key
                and not f.get("generated")
            ):
                v = conform(
                    None, schema_of(f), self.rng
                )  # a non-nullable column always gets a value the schema accepts
            elif v is not None and not f.get("ref"):
                v = conform(v, schema_of(f), self.rng)
            if v is not None or f.get("nullable"):
                out[col] = v
        return {c: out[c] for c in self.fields if c in out}

    def _context(self, i: int, n: int) -> dict[str, Any]:
        """The row's person, place, product and company, drawn together so they agree."""
        rng = self.rng
        loc = (
            self.locales[i % len(self.locales)]
            if i < len(self.locales)
            else rng.choice(self.locales)
        )
        fake = self.fakers[loc]
        first, last = fake.first_name(), fake.last_name()
        for _ in range(30):
            if f"{first} {last}" not in self.used.setdefault("__person", set()):
                break
            first, last = fake.first_name(), fake.last_name()
        self.used["__person"].add(f"{first} {last}")
        country, code, currency, calling, cities = LOCALES[loc]
        ctx: dict[str, Any] = {
            "i": i,
            "n": n,
            "fake": fake,
            "locale": loc,
            "first": first,
            "last": last,
            "country": country,
            "code": code,
            "currency": currency,
            "calling": calling,
            "city": rng.choice(cities),
            "company": fake.company(),
            "airline": rng.choice(AIRLINES),
        }
        if self.products:
            ctx["product"] = self.products[i % len(self.products)]
        return ctx

    def _product_pool(self) -> list[tuple[str, str, float, float]]:
        """(name, category, low, high) for a product-like resource: brand x product, unique by
        construction."""
        if not any(self.noun == p or self.noun.endswith(p) for p in PRODUCT_NOUNS):
            return []
        cat_field = next((f for c, f in self.fields.items() if "category" in words(c)), None)
        allowed = [c for c in (cat_field or {}).get("enum") or [] if c in CATALOG] or list(CATALOG)
        pool = [
            (f"{b} {p}", cat, lo, hi)
            for cat in allowed
            for p, lo, hi in CATALOG[cat]
            for b in BRANDS
        ]
        self.rng.shuffle(pool)
        by_product: dict[str, list[tuple[str, str, float, float]]] = {}
        for (
            item
        ) in pool:  # spread the rows over many products before repeating one with another brand
            by_product.setdefault(item[0].split(" ", 1)[1], []).append(item)
        spread = [
            items[k] for k in range(len(BRANDS)) for items in by_product.values() if k < len(items)
        ]
        return spread

    @staticmethod
    def _later(col: str) -> int:
        """Columns that depend on others come after them (an email after the name, an end after its
        start)."""
        ws = set(words(col))
        if ws & {"total", "destination", "sku", "slug", "username", "handle", "login", "mime"} or (
            "email" in ws and "name" not in ws
        ):
            return 2
        if (
            ws & END_WORDS
            or ws & PAST_WORDS
            and ws & TIME_WORDS
            or "checkout" in ws
            or words(col)[:2] == ["check", "out"]
        ):
            return 1 if not ws & {"created"} else 0
        if (
            "category" in ws
            or ws & {"reason", "note", "notes"}
            or ("content" in ws and "type" in ws)
        ):
            return 1
        return 0

    def value(
        self,
        col: str,
        f: dict[str, Any],
        ctx: dict[str, Any],
        row: dict[str, Any],
        refs: dict[str, list[Any]],
    ) -> Any:
        """One column's value (before :func:`conform`): the first of the key's, a reference's,
        the status gate's, an enum's, the spec's examples', a time's, the name's."""
        for source in (self._key_value, self._ref_value, self._enum_value, self._examples_value):
            v = source(col, f, ctx, row, refs)
            if v is not _PASS:
                return v
        gen = f.get("generated")
        if gen in ("created", "updated", "edited") or (
            f.get("type") == "string" and self._is_time(col, f)
        ):
            return self._when(col, f, row, gen)
        return self._named_or_schema(col, f, ctx, row)

    def _key_value(
        self, col: str, f: dict[str, Any], ctx: dict[str, Any], row: Any, refs: Any
    ) -> Any:
        """The key: ``prefix_0001`` (or the row number), a schema value when it is patterned."""
        if col != self.key:
            return _PASS
        t, i, rng = f.get("type"), ctx["i"], self.rng
        if f.get("generated") == "id":
            if t == "integer":
                return i + 1
            if not (f.get("pattern") or f.get("minLength") or f.get("format")):
                return f"{self.prefix}_{i + 1:04d}"
            return self.unique(col, lambda a: conform(None, schema_of(f), rng))
        if t == "string" and not (f.get("pattern") or f.get("format") or f.get("enum")):
            return self.unique(col, lambda a: f"{self.prefix}_{i + 1 + a * 1000:04d}")
        return _PASS

    def _ref_value(
        self, col: str, f: dict[str, Any], ctx: dict[str, Any], row: Any, refs: Any
    ) -> Any:
        """A reference: a row of its target (children spread over most parents; a few parents
        stay empty)."""
        if not f.get("ref"):
            return _PASS
        pool = refs.get(f["ref"]) or []
        if not pool:
            return None
        i = ctx["i"]
        if f.get("parent") and len(pool) > 2:
            some = pool[: max(1, (3 * len(pool)) // 4)]
            return some[i % len(some)] if i < len(some) else self.rng.choice(some)
        return self.rng.choice(pool)

    def _enum_value(
        self, col: str, f: dict[str, Any], ctx: dict[str, Any], row: dict[str, Any], refs: Any
    ) -> Any:
        """None for a stamp the row's status rules out; an enum's values in turn (a category,
        the product's own)."""
        if self._status_gate(col, row) is False:
            return None
        if not f.get("enum"):
            return _PASS
        values = list(f["enum"])
        i = ctx["i"]
        if (
            col != self.status_col
            and "category" in words(col)
            and ctx.get("product")
            and ctx["product"][1] in values
        ):
            return ctx["product"][1]
        return values[i % len(values)] if i < len(values) * 2 else self.rng.choice(values)

    def _examples_value(
        self, col: str, f: dict[str, Any], ctx: dict[str, Any], row: Any, refs: Any
    ) -> Any:
        """The spec's own ``examples`` in turn, for a plain column that identifies nothing."""
        ex = f.get("examples")
        if (
            isinstance(ex, list)
            and len(ex) >= 2
            and f.get("type") in ("string", "integer", "number")
            and not self._identifying(col)
        ):
            return ex[ctx["i"] % len(ex)]
        return _PASS

    def _named_or_schema(
        self, col: str, f: dict[str, Any], ctx: dict[str, Any], row: dict[str, Any]
    ) -> Any:
        """A value from the column's name, else its example, its default or its schema (unique
        when the column identifies a row)."""
        v = self.by_name(col, f, ctx, row)
        if v is None and "example" in f and (ctx["i"] == 0 or not self._identifying(col)):
            v = f["example"]
        if v is None and "default" in f and f["default"] not in ("", None):
            v = f["default"]
        if v is not None:
            return v
        if self._identifying(col):
            return self.unique(col, lambda a: from_schema(schema_of(f), self.rng))
        return from_schema(schema_of(f), self.rng)

    # -- status and time ----------------------------------------------------------------

    def _status_gate(self, col: str, row: dict[str, Any]) -> bool | None:
        """False when ``col`` belongs to a status the row has not reached (``confirmed_at`` on a
        held booking, ``archived_at`` on an active channel, ``cancel_reason`` on a scheduled visit);
        True when it belongs to one it has; None when it belongs to no status."""
        if self.status_col is None or col == self.status_col or self.status_col not in row:
            return None
        ws = words(col)
        if len(ws) < 2 or ws[-1] not in (
            "at",
            "on",
            "date",
            "time",
            "reason",
            "by",
            "note",
            "notes",
        ):
            return None
        stem = "_".join(ws[:-1])
        values = [str(v) for v in self.fields[self.status_col]["enum"]]
        match = next((v for v in values if v == stem), None) or next(
            (v for v in values if len(stem) >= 4 and v[:5] == stem[:5]), None
        )
        if match is None:
            return None
        status = str(row[self.status_col])
        if match in NEGATIVE or status in NEGATIVE:
            return status == match
        return values.index(status) >= values.index(match)

    def _is_time(self, col: str, f: dict[str, Any]) -> bool:
        ws = words(col)
        fmt = f.get("format", "")
        if fmt in ("date-time", "date") or _rfc2822(f):
            return True
        if fmt or f.get("pattern"):
            return False
        w = set(ws)
        return (
            ws[-1] in ("at", "datetime", "timestamp", "date", "dob", "birthday")
            or ws[-1] == "on"
            and len(ws) > 1
            or "birth" in w
            or w & {"checkin", "checkout"}
            or ws[:2] in (["check", "in"], ["check", "out"])
        )

    def _when(self, col: str, f: dict[str, Any], row: dict[str, Any], gen: str | None) -> str:
        """A timestamp in order with the row's others: created <= updated <= now, an end after its
        start; written as the column's format asks (a date, RFC 2822 or ISO 8601)."""
        ws = words(col)
        date_only = f.get("format") == "date" or (
            not f.get("format") and ws[-1] in ("date", "on", "dob", "birthday")
        )
        t = self._moment(f, row, gen, ws, date_only)
        if t is None:
            return None  # type: ignore[return-value]  # most messages were never edited
        if _rfc2822(f):  # Twilio's date_created: "Thu, 15 Jan 2026 09:00:00 +0000"
            return email.utils.format_datetime(
                t.replace(second=0, microsecond=0).astimezone(dt.UTC)
            )
        return t.strftime("%Y-%m-%d") if date_only else iso(t.replace(second=0, microsecond=0))

    def _moment(
        self,
        f: dict[str, Any],
        row: dict[str, Any],
        gen: str | None,
        ws: list[str],
        date_only: bool,
    ) -> dt.datetime | None:
        """The moment a time column holds, by its words: a creation, a birth, an end after the
        row's start, a past change, a coming deadline, else a coming appointment."""
        rng, w = self.rng, set(ws)
        if gen == "created" or w & CREATED_WORDS:
            return CLOCK - dt.timedelta(days=rng.randint(20, 150), minutes=rng.randint(0, 900))
        if w & {"birth", "dob", "birthday"}:
            return dt.datetime(
                rng.randint(1950, 2004), rng.randint(1, 12), rng.randint(1, 28), tzinfo=dt.UTC
            )
        if w & END_WORDS or ws[:2] == ["check", "out"]:
            start = self._time_of(
                row, lambda c: bool(set(words(c)) & START_WORDS) or words(c)[:2] == ["check", "in"]
            )
            if start is not None:
                long = (
                    date_only
                    or w & {"checkout", "return", "expires", "expiry", "due"}
                    or ws[:2] == ["check", "out"]
                )
                return start + (
                    dt.timedelta(days=rng.randint(1, 6))
                    if long
                    else dt.timedelta(minutes=rng.choice([30, 60, 90, 120, 180]))
                )
        if gen in ("updated", "edited") or w & PAST_WORDS:
            return self._past(f, row, gen)
        if w & {"execute", "scheduled", "expires", "expiry", "due", "deadline", "renews", "next"}:
            return CLOCK + dt.timedelta(days=rng.randint(3, 60))
        return (CLOCK + dt.timedelta(days=rng.randint(1, 45))).replace(
            hour=rng.choice([8, 9, 10, 11, 13, 14, 15, 16]), minute=rng.choice([0, 30])
        )

    def _past(self, f: dict[str, Any], row: dict[str, Any], gen: str | None) -> dt.datetime | None:
        """A change between the row's creation (or its sending) and now; None for most edits of
        a nullable column (most messages were never edited)."""
        rng = self.rng
        if gen == "edited" and rng.random() < 0.6 and f.get("nullable"):
            return None
        created = self._time_of(
            row,
            lambda c: set(words(c)) & CREATED_WORDS or self.fields[c].get("generated") == "created",
        )
        floor = created or CLOCK - dt.timedelta(days=120)
        sent = self._time_of(
            row, lambda c: bool(set(words(c)) & {"sent", "posted", "uploaded", "submitted"})
        )
        lo = max(floor, sent or floor)
        return lo + (CLOCK - lo) * rng.uniform(0.05, 0.95)

    def _time_of(self, row: dict[str, Any], which: Any) -> dt.datetime | None:
        for c, v in row.items():
            if isinstance(v, str) and which(c):
                try:
                    t = dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
                except ValueError:
                    try:
                        t = email.utils.parsedate_to_datetime(v)
                    except (TypeError, ValueError, IndexError):
                        continue
                return t if t.tzinfo else t.replace(tzinfo=dt.UTC)
        return None

    # -- pools by name ------------------------------------------------------------------

    @staticmethod
    def _identifying(col: str) -> bool:
        ws = set(words(col))
        return bool(
            ws
            & {
                "name",
                "title",
                "email",
                "sku",
                "code",
                "slug",
                "username",
                "subject",
                "number",
                "handle",
                "login",
                "iban",
                "phone",
            }
        )

    def by_name(self, col: str, f: dict[str, Any], ctx: dict[str, Any], row: dict[str, Any]) -> Any:
        """A value chosen by the column's name and the resource's noun, or None."""
        rng = self.rng
        t = f.get("type")
        ws = words(col)
        w = set(ws)
        if t == "boolean":
            if w & {"active", "enabled", "verified", "available", "confirmed", "accepting"}:
                return rng.random() < 0.75
            return rng.random() < 0.3
        if t in ("integer", "number"):
            return self._number(w, f, ctx, row)
        if t == "array":
            return self._array(col, w, f, ctx)
        if t != "string":
            return None
        for part in (
            self._person_value,
            self._place_value,
            self._travel_value,
            self._domain_value,
            self._named_value,
        ):
            v = part(col, f, ctx, row, ws, w)
            if v is not _MISS:
                return v
        return None

    def _person_value(
        self,
        col: str,
        f: dict[str, Any],
        ctx: dict[str, Any],
        row: dict[str, Any],
        ws: list[str],
        w: set[str],
    ) -> Any:
        """A string value by the column's name (who the row is or how to reach them: email, web
        address, phone, names, username): the first of :data:`_PERSON_RULES` that applies;
        :data:`_MISS` when none does."""
        fmt = f.get("format")
        for applies, make in _PERSON_RULES:
            if applies(col, w, ws, fmt, f):
                return make(self, col, ctx)
        return _MISS

    def _web_address(self, col: str, ctx: dict[str, Any]) -> str:
        slug = _ascii(ctx["company"].split()[0]).lower() or "example"
        noun = self.noun
        return self.unique(
            col,
            lambda a: f"https://www.{slug}{'' if a == 0 else a}.example.com/{noun}s/{ctx['i'] + 1}",
        )

    def _phone(self, col: str, ctx: dict[str, Any]) -> str:
        rng = self.rng
        return self.unique(
            col,
            lambda a: (
                f"+{ctx['calling']} {rng.randint(200, 899)} {rng.randint(100, 999)} "
                f"{rng.randint(1000, 9999)}"
            ),
        )

    def _username(self, col: str, ctx: dict[str, Any]) -> str:
        first, last = ctx["first"], ctx["last"]
        base = _ascii(f"{first[0]}{last}").lower()
        return self.unique(
            col,
            lambda a: base if a == 0 else f"{_ascii(first).lower()}{_ascii(last[:3]).lower()}{a}",
        )

    def _place_value(
        self,
        col: str,
        f: dict[str, Any],
        ctx: dict[str, Any],
        row: dict[str, Any],
        ws: list[str],
        w: set[str],
    ) -> Any:
        """A string value by the column's name (where and in what money: city, country, address,
        postcode, currency, bank numbers, SKU); :data:`_MISS` when none applies."""
        rng = self.rng
        fake = ctx["fake"]
        if w & {"city", "town"}:
            return ctx["city"]
        if "country" in w:
            return ctx["code"] if "code" in w or f.get("maxLength") == 2 else ctx["country"]
        if w & {"street", "address", "line1"}:
            return fake.street_address().replace("\n", ", ")
        if w & {"zip", "postal", "postcode"}:
            return fake.postcode()
        if "currency" in w:
            return ctx["currency"]
        if "iban" in w:
            return self.unique(col, lambda a: fake.iban())
        if "account" in w and "number" in w:
            return self.unique(col, lambda a: fake.bban())
        if "sku" in w:
            base = "".join(p[:3] for p in str(row.get("name") or "item").upper().split()[:3])
            return self.unique(col, lambda a: f"{base}-{rng.randint(100, 999)}")
        if "flight" in w and ("number" in w or "no" in w):
            return self.unique(col, lambda a: f"{ctx['airline'][1]}{rng.randint(100, 999)}")
        return _MISS

    def _travel_value(
        self,
        col: str,
        f: dict[str, Any],
        ctx: dict[str, Any],
        row: dict[str, Any],
        ws: list[str],
        w: set[str],
    ) -> Any:
        """A string value by the column's name (travel and rooms: flight numbers, senders and
        recipients, ids, airports, airlines, seats, rooms); :data:`_MISS` when none applies."""
        rng = self.rng
        fake = ctx["fake"]
        noun = self.noun
        if ws in (["from"], ["to"], ["sender"], ["reply", "to"]) and self.noun not in TRAVEL_NOUNS:
            return (
                self.unique(col, lambda a: self._email(ctx, a))
                if ws != ["to"]
                else self._email({**ctx, "first": fake.first_name(), "last": fake.last_name()}, 0)
            )
        if ws[-1:] == ["id"] and not f.get("enum"):
            return self.unique(
                col,
                lambda a: (
                    f"{(ws[0] if len(ws) > 1 else self.prefix)[:4]}_{rng.getrandbits(48):012x}"
                ),
            )
        if w & {"origin", "destination"} or ws in (["from"], ["to"]) or "airport" in w:
            taken = {
                row[c]
                for c in row
                if set(words(c)) & {"origin", "from", "departure"} and isinstance(row[c], str)
            }
            return rng.choice([a for a in AIRPORTS if a not in taken])
        if "airline" in w or "carrier" in w:
            return ctx["airline"][0]
        if "seat" in w:
            return f"{rng.randint(1, 40)}{rng.choice('ABCDEF')}"
        if "room" in w:
            return self.unique(
                col,
                lambda a: (
                    ("Room " if noun in DOCTORS else "")
                    + f"{rng.randint(1, 5) * 100 + rng.randint(1, 30)}"
                ),
            )
        return _MISS

    def _domain_value(
        self,
        col: str,
        f: dict[str, Any],
        ctx: dict[str, Any],
        row: dict[str, Any],
        ws: list[str],
        w: set[str],
    ) -> Any:
        """A string value by the column's name (domain words: specialties, reasons, MIME types, time
        zones, languages, colours, merchants, companies); :data:`_MISS` when none applies."""
        rng = self.rng
        if "specialty" in w or "speciality" in w or "department" in w:
            return rng.choice(SPECIALTIES)
        if w & {"reason", "diagnosis", "complaint", "symptoms"}:
            return rng.choice(REASONS)
        if w & {"mime", "content"} and "type" in w:
            fn = str(row.get("name") or row.get("file_name") or row.get("filename") or "x.pdf")
            return MIME.get(fn.rsplit(".", 1)[-1], "application/octet-stream")
        if w & {"timezone", "tz"} or {"time", "zone"} <= w:  # Amadeus's timeZoneName
            return rng.choice(
                [
                    "Europe/Paris",
                    "America/New_York",
                    "Asia/Singapore",
                    "Europe/London",
                    "Australia/Sydney",
                    "UTC",
                ]
            )
        if w & {"language", "locale", "lang"}:
            return ctx["locale"].split("_")[0]
        if "color" in w or "colour" in w:
            return rng.choice(COLORS)
        if "merchant" in w or "payee" in w or "counterparty" in w:
            return rng.choice(MERCHANTS)
        if w & {
            "company",
            "organization",
            "organisation",
            "employer",
            "insurer",
            "insurance",
            "vendor",
            "supplier",
            "brand",
        }:
            return ctx["company"]
        return _MISS

    def _named_value(
        self,
        col: str,
        f: dict[str, Any],
        ctx: dict[str, Any],
        row: dict[str, Any],
        ws: list[str],
        w: set[str],
    ) -> Any:
        """A string value by the column's name (categories, places, codes, paths, files, topics,
        names and titles, texts, kinds): the first rule of :data:`_NAMED_RULES` that applies;
        :data:`_MISS` when none does."""
        for applies, make in _NAMED_RULES:
            if applies(self, w, ws, f):
                return make(self, col, f, ctx, w)
        return _MISS

    def _category(self, col: str, f: Any, ctx: dict[str, Any], w: set[str]) -> Any:
        return ctx["product"][1] if ctx.get("product") else self.rng.choice(list(CATALOG))

    def _venue(self, col: str, f: Any, ctx: dict[str, Any], w: set[str]) -> Any:
        rng = self.rng
        return rng.choice(
            [
                f"Room {rng.choice('ABC')}{rng.randint(1, 9)}",
                f"{ctx['city']} office",
                "Video call",
                "Main hall",
            ]
        )

    def _code(self, col: str, f: Any, ctx: dict[str, Any], w: set[str]) -> Any:
        rng = self.rng
        return self.unique(
            col,
            lambda a: "".join(
                rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6 + a // 20)
            ),
        )

    def _path(self, col: str, f: Any, ctx: dict[str, Any], w: set[str]) -> Any:
        return f"/{self.rng.choice(FOLDERS).lower().replace(' ', '-')}/{ctx['i'] + 1}"

    def _filename(self, col: str, f: Any, ctx: dict[str, Any], w: set[str]) -> Any:
        return self.unique(col, lambda a: self._file(a))

    def _name_like(self, col: str, f: Any, ctx: dict[str, Any], w: set[str]) -> Any:
        return self.unique(col, lambda a: self._title(w, ctx, a))

    def _email(self, ctx: dict[str, Any], attempt: int) -> str:
        fake = ctx["fake"]
        first, last = _ascii(ctx["first"]).lower(), _ascii(ctx["last"]).lower()
        if not self.person:
            first, last = _ascii(fake.first_name()).lower(), _ascii(fake.last_name()).lower()
        local = [
            f"{first}.{last}",
            f"{first[:1]}{last}",
            f"{first}{last[:1]}",
            f"{first}.{last}{self.rng.randint(10, 99)}",
        ][min(attempt, 3)]
        return f"{local}@{fake.free_email_domain()}"

    def _file(self, attempt: int) -> str:
        stem, ext = self.rng.choice(FILES)
        if attempt:
            stem = f"{self.rng.choice(FILE_TOPICS)}-{stem}"
        return f"{stem}.{ext}"

    def _title(self, w: set[str], ctx: dict[str, Any], attempt: int) -> str:
        """A name or title that fits the resource (a person's name, a product, a hotel, a
        channel...)."""
        rng = self.rng
        noun = self.noun
        fake = ctx["fake"]
        first, last = (
            (ctx["first"], ctx["last"]) if attempt == 0 else (fake.first_name(), fake.last_name())
        )
        if self.person or "holder" in w:
            return f"Dr. {first} {last}" if noun in DOCTORS else f"{first} {last}"
        if ctx.get("product"):
            return ctx["product"][0] if attempt == 0 else rng.choice(self.products)[0]
        if any(noun == h or noun.endswith(h) for h in HOTEL_NOUNS):
            return rng.choice(
                [
                    f"{ctx['city']} {rng.choice(HOTEL_KINDS)}",
                    f"Hotel {fake.last_name()}",
                    f"The {fake.last_name()} {rng.choice(HOTEL_KINDS)}",
                ]
            )
        table: dict[tuple[str, ...], Any] = {
            ("airline",): lambda: rng.choice(AIRLINES)[0],
            ("event", "meeting", "appointment_type"): lambda: (
                rng.choice(MEETINGS) + ("" if attempt == 0 else f" with {fake.first_name()}")
            ),
            ("message", "email", "mail", "thread", "conversation"): lambda: rng.choice(SUBJECTS),
            ("task", "todo", "ticket", "issue"): lambda: rng.choice(TASKS),
            ("folder", "directory", "album", "drive"): lambda: (
                rng.choice(FOLDERS) + ("" if attempt < 8 else f" {rng.randint(2019, 2025)}")
            ),
            ("channel", "room", "group"): lambda: (
                rng.choice(CHANNELS)
                + ("" if attempt < 10 else f"-{rng.choice(['eu', 'us', 'apac', 'team'])}")
            ),
            ("calendar",): lambda: rng.choice(CALENDARS),
            ("account", "wallet", "pot"): lambda: rng.choice(ACCOUNTS),
            ("clinic", "specialty"): lambda: (
                f"{ctx['city']} {rng.choice(SPECIALTIES).title()} Clinic"
            ),
            (
                "company",
                "organization",
                "merchant",
                "vendor",
                "supplier",
                "team",
                "workspace",
            ): lambda: fake.company(),
            ("project", "campaign"): lambda: fake.catch_phrase(),
        }
        for nouns, make in table.items():
            if noun in nouns or any(noun.endswith(x) for x in nouns):
                return make()
        if "subject" in w:
            return rng.choice(SUBJECTS)
        return fake.catch_phrase()

    def _text(self, ctx: dict[str, Any]) -> str:
        rng = self.rng
        if self.noun in ("message", "comment", "reply", "post", "chat_message"):
            return rng.choice(MESSAGES)
        if self.noun in ("appointment", "visit", "consultation"):
            return rng.choice(REASONS).capitalize() + "."
        if self.noun in ("transaction", "payment", "transfer"):
            return rng.choice(MERCHANTS)
        return rng.choice(NOTES)

    def _number(
        self, w: set[str], f: dict[str, Any], ctx: dict[str, Any], row: dict[str, Any]
    ) -> Any:
        """Money above 0 in a believable range, counts, ratings, sizes (:data:`_NUMBER_RULES`)."""
        t = f.get("type")
        if w & MONEY and not w & {"count", "limit"}:
            cents = "cents" in w or "minor" in w
            v = self._price(w, ctx, row)
            if cents or t == "integer":
                return max(1, int(round(v * (100 if cents else 1))))
            return round(float(v), 2)
        for applies, make in _NUMBER_RULES:
            if applies(w):
                return make(self.rng, t, ctx)
        return None

    def _price(self, w: set[str], ctx: dict[str, Any], row: dict[str, Any]) -> Any:
        """An amount of money: a balance, a line's total, the product's price, a night's or a
        fare's, or a plain price."""
        rng = self.rng
        if "balance" in w:
            return rng.randint(50, 9000) + rng.choice([0, 0.5, 0.25, 0.99])
        if (
            "total" in w
            and isinstance(row.get("quantity"), (int, float))
            and isinstance(row.get("unit_price"), (int, float))
        ):
            return row["quantity"] * row["unit_price"]
        if ctx.get("product"):
            _, _, lo, hi = ctx["product"]
            return round(rng.uniform(lo, hi)) - 0.01
        if any(self.noun.endswith(h) for h in HOTEL_NOUNS) or w & {"nightly", "night"}:
            return rng.randrange(79, 460, 10) + rng.choice([0, 0.5, 0.99])
        if self.noun in ("flight", "fare", "ticket"):
            return rng.randrange(59, 1400, 10) + 0.99
        return rng.choice(
            [9.99, 14.5, 24.99, 34.99, 49.0, 89.0, 120.0, 189.0, 229.0, 399.99, 12.75, 65.4]
        )

    def _array(self, col: str, w: set[str], f: dict[str, Any], ctx: dict[str, Any]) -> Any:
        """Items of the declared type: tags, emails, or values built from the item schema."""
        rng = self.rng
        items = f.get("items") if isinstance(f.get("items"), dict) else {}
        if (
            items.get("type") == "string"
            and not items.get("format")
            and not items.get("pattern")
            and not items.get("enum")
        ):
            if w & {"tag", "tags", "labels", "keywords"}:
                return sorted(rng.sample(TAGS, rng.randint(1, 2)))
            if "email" in col or w & {
                "attendees",
                "recipients",
                "participants",
                "cc",
                "bcc",
                "emails",
            }:
                return sorted(
                    {
                        self._email(
                            {
                                **ctx,
                                "first": ctx["fake"].first_name(),
                                "last": ctx["fake"].last_name(),
                            },
                            0,
                        )
                        for _ in range(rng.randint(1, 3))
                    }
                )
        if items.get("type") == "string" and items.get("format") == "email":
            return [
                self._email(
                    {**ctx, "first": ctx["fake"].first_name(), "last": ctx["fake"].last_name()}, 0
                )
                for _ in range(rng.randint(1, 3))
            ]
        return None  # from the schema: items of the declared type


_TEXT_WORDS = frozenset(
    {
        "description",
        "notes",
        "note",
        "body",
        "content",
        "text",
        "message",
        "comment",
        "bio",
        "summary",
        "memo",
    }
)
"""Words of a column that holds free text."""


def _is_filename(m: RowMaker, w: set[str], ws: list[str], f: dict[str, Any]) -> bool:
    return (
        "filename" in w
        or ("file" in w and "name" in w)
        or (m.noun in ("file", "document", "attachment") and bool(w & {"name", "title"}))
    )


def _is_kind(w: set[str]) -> bool:
    return "type" in w or "kind" in w


_NAMED_RULES: tuple[tuple[Callable[..., bool], Callable[..., Any]], ...] = (
    (lambda m, w, ws, f: "category" in w, RowMaker._category),
    (lambda m, w, ws, f: bool(w & {"location", "venue", "place"}), RowMaker._venue),
    # a city or airport code (Amadeus's iataCode), not a made-up one
    (lambda m, w, ws, f: "iata" in w, lambda m, col, f, ctx, w: m.rng.choice(AIRPORTS)),
    (
        lambda m, w, ws, f: bool(w & {"code", "slug", "reference", "ref", "confirmation"}),
        RowMaker._code,
    ),
    (lambda m, w, ws, f: "path" in w, RowMaker._path),
    (_is_filename, RowMaker._filename),
    (
        lambda m, w, ws, f: bool(w & {"topic", "purpose", "about", "tagline"}),
        lambda m, col, f, ctx, w: m.rng.choice(TOPICS),
    ),
    (lambda m, w, ws, f: "nickname" in w and m.person, lambda m, col, f, ctx, w: ctx["first"]),
    (
        lambda m, w, ws, f: (
            bool(w & {"name", "title", "label", "subject", "nickname"}) or ws == ["holder"]
        ),
        RowMaker._name_like,
    ),
    (lambda m, w, ws, f: bool(w & _TEXT_WORDS), lambda m, col, f, ctx, w: m._text(ctx)),
    # the one value the spec names (FHIR's resourceType "Patient"), not a made-up tier
    (
        lambda m, w, ws, f: _is_kind(w) and isinstance(f.get("default"), str) and f["default"],
        lambda m, col, f, ctx, w: f["default"],
    ),
    (
        lambda m, w, ws, f: _is_kind(w) or "tier" in w,
        lambda m, col, f, ctx, w: m.rng.choice(["standard", "premium", "basic"]),
    ),
)
"""A string column's value by its name's words: (applies, make) in order; the first that
applies makes the value (see :meth:`RowMaker._named_value`)."""


def _any_of(*names: str) -> Callable[[set[str]], bool]:
    """A rule's test: the column's words hold one of ``names``."""
    wanted = frozenset(names)
    return lambda w: bool(w & wanted)


_NUMBER_RULES: tuple[tuple[Callable[[set[str]], bool], Callable[..., Any]], ...] = (
    (
        _any_of("quantity", "qty", "guests", "nights", "adults", "passengers", "attendees"),
        lambda rng, t, ctx: rng.randint(1, 4),
    ),
    (
        _any_of("seats", "stock", "inventory", "available", "remaining", "left"),
        lambda rng, t, ctx: rng.choice([0, 3, 7, 12, 20, 35, 48]),
    ),
    (
        _any_of("rating", "stars"),
        lambda rng, t, ctx: (
            rng.randint(1, 5) if t == "integer" else round(rng.uniform(3.0, 5.0), 1)
        ),
    ),
    (_any_of("duration", "minutes"), lambda rng, t, ctx: rng.choice([15, 30, 45, 60, 90])),
    (_any_of("size", "bytes"), lambda rng, t, ctx: rng.randint(12_000, 9_000_000)),
    (_any_of("age"), lambda rng, t, ctx: rng.randint(18, 85)),
    (_any_of("year"), lambda rng, t, ctx: rng.randint(1995, 2025)),
    (
        lambda w: "latitude" in w or w == {"lat"},
        lambda rng, t, ctx: float(ctx["fake"].latitude()),
    ),
    (
        lambda w: bool(w & {"longitude", "lng", "lon"}),
        lambda rng, t, ctx: float(ctx["fake"].longitude()),
    ),
    (_any_of("floor", "level", "priority"), lambda rng, t, ctx: rng.randint(1, 5)),
    (_any_of("count", "total"), lambda rng, t, ctx: rng.randint(0, 40)),
)
"""A number column that is no money, by its name's words: (applies, make(rng, type, ctx)) in
order (see :meth:`RowMaker._number`)."""


def _is_phone(col: str, w: set[str], ws: list[str], fmt: Any, f: dict[str, Any]) -> bool:
    """A phone number, Twilio's ``To`` and ``From`` among them (their words say so)."""
    return bool(
        "phone" in w
        or "mobile" in w
        or fmt == "phone-number"
        or (ws in (["from"], ["to"]) and "phone number" in str(f.get("description") or "").lower())
    )


_PERSON_RULES: tuple[tuple[Callable[..., bool], Callable[..., Any]], ...] = (
    (
        lambda col, w, ws, fmt, f: fmt == "email" or "email" in w,
        lambda m, col, ctx: m.unique(col, lambda a: m._email(ctx, a)),
    ),
    (
        lambda col, w, ws, fmt, f: (
            fmt in ("uri", "url") or bool(w & {"url", "uri", "website", "homepage", "link"})
        ),
        RowMaker._web_address,
    ),
    # a UUID comes from the schema (a random one)
    (lambda col, w, ws, fmt, f: fmt == "uuid" or "uuid" in w, lambda m, col, ctx: None),
    (_is_phone, RowMaker._phone),
    (
        lambda col, w, ws, fmt, f: ("first" in w and "name" in w) or col == "given_name",
        lambda m, col, ctx: ctx["first"],
    ),
    (
        lambda col, w, ws, fmt, f: (
            bool(w & {"last", "family", "surname"}) and ("name" in w or "surname" in w)
        ),
        lambda m, col, ctx: ctx["last"],
    ),
    (lambda col, w, ws, fmt, f: bool(w & {"username", "handle", "login"}), RowMaker._username),
)
"""Who a row is or how to reach them, by the column's words and format: (applies, make) in
order (see :meth:`RowMaker._person_value`)."""
