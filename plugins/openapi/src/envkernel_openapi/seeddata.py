"""Deterministic, realistic seed rows generated from a resource's fields.

Values come, best first, from the schema (``enum``, ``examples``/``example``, ``default``), then
from pools chosen by the field's name and the resource's noun (people's names, emails derived
from them, cities, product names, meeting titles, file names...), then from the type and format.
Identifying text (names, titles, emails, codes) is unique within a table, every enum value
appears when there are enough rows, foreign keys point at existing rows, and an ``end`` time
comes after its ``start``. The same seed always gives the same rows.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from typing import Any

from envkernel_kit.naming import words

CLOCK = dt.datetime(2026, 1, 15, 9, 0, 0, tzinfo=dt.UTC)
"""The executor's default frozen clock: seed times are placed around it."""

FIRST = ["Alice", "Bruno", "Chen", "Dana", "Emil", "Farah", "Goran", "Hana", "Ivan", "Julia", "Kenji", "Lena", "Marco", "Nadia",
         "Omar", "Priya", "Quentin", "Rosa", "Samir", "Tara", "Umar", "Vera", "Wen", "Yusuf", "Zoe"]
LAST = ["Martin", "Silva", "Wei", "Okafor", "Novak", "Haddad", "Petrov", "Sato", "Lindqvist", "Moreau", "Kowalski", "Rossi",
        "Nguyen", "Fischer", "Costa", "Mensah", "Ibrahim", "Larsen", "Dubois", "Kim", "Garcia", "Tanaka", "Schmidt", "Ali"]
CITIES = [("Lyon", "France", "FR"), ("Porto", "Portugal", "PT"), ("Singapore", "Singapore", "SG"), ("Lagos", "Nigeria", "NG"),
          ("Prague", "Czechia", "CZ"), ("Osaka", "Japan", "JP"), ("Toronto", "Canada", "CA"), ("Austin", "United States", "US"),
          ("Melbourne", "Australia", "AU"), ("Bergen", "Norway", "NO"), ("Seville", "Spain", "ES"), ("Munich", "Germany", "DE")]
STREETS = ["Oak Street", "Harbour Road", "Maple Avenue", "Rue de la Paix", "King's Lane", "Station Road", "Elm Court", "Riverside Drive"]
PRODUCTS = ["desk lamp", "ergonomic office chair", "wireless mouse", "mechanical keyboard", "27-inch monitor", "laptop stand",
            "noise-cancelling headphones", "USB-C hub", "standing desk", "webcam", "ceramic coffee mug", "leather notebook",
            "bluetooth speaker", "phone charger", "backpack", "water bottle", "reading glasses", "yoga mat", "desk organizer",
            "portable SSD"]
CATEGORIES = ["home office", "computer accessories", "audio", "displays", "kitchen", "travel", "fitness", "stationery"]
HOTELS = ["Harbour View Hotel", "Grand Central Inn", "Maple Lodge", "The Riverside", "Old Town Suites", "Sunset Resort",
          "Alpine Chalet", "City Loft Hotel", "Garden Court", "Seaside Retreat"]
AIRLINES = [("Northwind Air", "NW"), ("Bluesky Airways", "BS"), ("Coastal Jet", "CJ"), ("Aurora Airlines", "AU"), ("Meridian Air", "MA")]
AIRPORTS = ["LHR", "CDG", "JFK", "SFO", "SIN", "HND", "FRA", "AMS", "LIS", "PRG", "YYZ", "SYD", "MAD", "MUC", "OSL"]
MEETINGS = ["Quarterly planning", "Design review", "Team standup", "Budget sync", "Customer call with Acme", "Sprint retrospective",
            "Hiring panel", "Product demo", "1:1 with manager", "Marketing brainstorm", "Board prep", "Onboarding session",
            "Dentist appointment", "Yoga class", "Lunch with Sam", "Release go/no-go"]
SUBJECTS = ["Invoice for January", "Lunch on Friday?", "Project kickoff notes", "Your order has shipped", "Re: contract draft",
            "Team offsite agenda", "Password reset", "Weekly report", "Welcome aboard!", "Question about the budget",
            "Flight itinerary", "Meeting moved to 3pm", "Holiday schedule", "Feedback on the design"]
MESSAGES = ["Can we move the meeting to Thursday?", "The files are in the shared folder.", "Thanks, that works for me!",
            "I have attached the latest draft.", "Running ten minutes late, sorry.", "Please review the budget before Friday.",
            "Great job on the launch!", "Who is taking notes today?", "The client approved the proposal.", "Let's sync after lunch."]
TASKS = ["Update the onboarding guide", "Fix the login bug", "Prepare the quarterly report", "Book the team offsite",
         "Review pull request", "Renew the SSL certificate", "Call the supplier", "Plan the product launch", "Clean up the backlog",
         "Write release notes"]
FILES = ["q4-report.pdf", "budget-2026.xlsx", "team-photo.jpg", "contract-draft.docx", "meeting-notes.md", "logo.png",
         "roadmap.pptx", "invoice-0042.pdf", "holiday-schedule.csv", "product-specs.pdf", "onboarding-guide.docx", "backup.zip"]
FOLDERS = ["Projects", "Invoices", "Photos", "Contracts", "Archive", "Marketing", "Personal", "Shared with team"]
MIME = {"pdf": "application/pdf", "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "jpg": "image/jpeg",
        "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "md": "text/markdown", "png": "image/png",
        "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation", "csv": "text/csv", "zip": "application/zip"}
CHANNELS = ["general", "random", "engineering", "design", "marketing", "support", "announcements", "sales"]
CALENDARS = ["Work", "Personal", "Family", "Team Offsite", "Holidays", "Fitness"]
SPECIALTIES = ["cardiology", "dermatology", "pediatrics", "general practice", "orthopedics", "neurology", "ophthalmology"]
REASONS = ["annual check-up", "persistent cough", "knee pain", "skin rash", "follow-up visit", "blood test results",
           "vaccination", "back pain", "migraine", "allergy consultation"]
ACCOUNTS = ["Everyday Checking", "Holiday Savings", "Emergency Fund", "Joint Account", "Business Account", "Travel Fund"]
MERCHANTS = ["Corner Grocery", "City Transit", "Blue Bottle Coffee", "Online Books", "Power & Light Co.", "Fitness Club",
             "Pharmacy Plus", "Airline Tickets", "Hardware Store", "Streaming Service"]
COMPANIES = ["Acme Corp", "Globex", "Initech", "Umbrella Health", "Stark Supplies", "Wayne Travel", "Hooli", "Vandelay Imports"]
TAGS = ["urgent", "work", "personal", "finance", "travel", "family", "follow-up", "ideas"]
COLORS = ["black", "white", "silver", "blue", "red", "green"]
WORDS = ["alpha", "bravo", "coral", "delta", "ember", "falcon", "garnet", "harbor", "indigo", "juniper", "kestrel", "lumen"]
PERSON_NOUNS = {"customer", "user", "patient", "guest", "passenger", "traveler", "traveller", "contact", "member", "employee",
                "owner", "person", "doctor", "physician", "author", "attendee", "participant", "recipient", "sender", "client",
                "account_holder", "holder", "student", "teacher", "agent", "practitioner", "provider", "staff", "payee", "beneficiary", "traveller"}


def _iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class RowMaker:
    """Makes the seed rows of one resource."""

    def __init__(self, rng: random.Random, noun: str, fields: dict[str, dict[str, Any]], key: str, prefix: str) -> None:
        self.rng = rng
        self.noun = noun
        self.fields = fields
        self.key = key
        self.prefix = prefix
        self.used: dict[str, set[str]] = {}
        self.person = noun in PERSON_NOUNS or noun.endswith(("er", "or")) and noun in PERSON_NOUNS

    # -- uniqueness ---------------------------------------------------------------------

    def unique(self, col: str, make) -> Any:
        seen = self.used.setdefault(col, set())
        v = None
        for attempt in range(40):
            v = make(attempt)
            if str(v) not in seen:
                break
        else:
            v = f"{v} {len(seen) + 1}"
        seen.add(str(v))
        return v

    # -- one row ------------------------------------------------------------------------

    def row(self, i: int, n: int, refs: dict[str, list[Any]]) -> dict[str, Any]:
        rng = self.rng
        person = (rng.choice(FIRST), rng.choice(LAST))
        for _ in range(30):
            if " ".join(person) not in self.used.setdefault("__person", set()):
                break
            person = (rng.choice(FIRST), rng.choice(LAST))
        self.used["__person"].add(" ".join(person))
        ctx: dict[str, Any] = {"person": person, "city": rng.choice(CITIES), "i": i, "n": n}
        out: dict[str, Any] = {}
        order = sorted(self.fields, key=lambda c: (self._later(c), list(self.fields).index(c)))
        for col in order:
            f = self.fields[col]
            if f.get("hidden") and not f.get("ref"):
                continue
            v = self.value(col, f, ctx, out, refs)
            if v is not None or f.get("nullable"):
                out[col] = v
        return {c: out[c] for c in self.fields if c in out}

    @staticmethod
    def _later(col: str) -> int:
        ws = words(col)
        if "email" in ws or ws[-1:] in (["end"], ["until"]) or "end" in ws or "checkout" in ws or "arrival" in ws or "total" in ws:
            return 1
        if ws[:2] == ["check", "out"]:
            return 1
        return 0

    def value(self, col: str, f: dict[str, Any], ctx: dict[str, Any], row: dict[str, Any], refs: dict[str, list[Any]]) -> Any:
        rng = self.rng
        t = f.get("type")
        i, n = ctx["i"], ctx["n"]
        if col == self.key and f.get("generated") == "id":
            return (i + 1) if t == "integer" else f"{self.prefix}_{i + 1:04d}"
        if f.get("ref"):
            pool = refs.get(f["ref"]) or []
            if not pool:
                return None
            if f.get("parent") and len(pool) > 2:  # children spread over most parents; a few parents stay empty
                some = pool[: max(1, (3 * len(pool)) // 4)]
                return some[i % len(some)] if i < len(some) else rng.choice(some)
            return rng.choice(pool)
        if f.get("enum"):
            values = list(f["enum"])
            return values[i % len(values)] if i < len(values) * 2 else rng.choice(values)
        ex = f.get("examples")
        if isinstance(ex, list) and len(ex) >= 2 and t in ("string", "integer", "number"):
            pick = ex[i % len(ex)]
            if self._fits(pick, f):
                return self.unique(col, lambda a: pick if a == 0 else f"{pick} {a + 1}") if t == "string" and self._identifying(col) else pick
        gen = f.get("generated")
        if gen in ("created", "updated"):
            return _iso(CLOCK - dt.timedelta(days=rng.randint(3, 60), minutes=rng.randint(0, 600)))
        v = self.by_name(col, f, ctx, row)
        if v is None and "example" in f and self._fits(f["example"], f):
            v = f["example"] if i == 0 or not self._identifying(col) else None
        if v is None and "default" in f:
            v = f["default"]
        if v is None:
            v = self.by_type(col, f, ctx)
        return self._clip(v, f)

    def _fits(self, v: Any, f: dict[str, Any]) -> bool:
        t = f.get("type")
        ok = {"string": isinstance(v, str), "integer": isinstance(v, int) and not isinstance(v, bool),
              "number": isinstance(v, (int, float)) and not isinstance(v, bool), "boolean": isinstance(v, bool),
              "array": isinstance(v, list), "object": isinstance(v, dict)}.get(t, True)
        return bool(ok)

    @staticmethod
    def _identifying(col: str) -> bool:
        ws = set(words(col))
        return bool(ws & {"name", "title", "email", "sku", "code", "slug", "username", "subject", "number", "handle", "login", "iban"})

    def _clip(self, v: Any, f: dict[str, Any]) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            lo, hi = f.get("minimum"), f.get("maximum")
            if isinstance(lo, (int, float)) and v < lo:
                v = lo
            if isinstance(hi, (int, float)) and v > hi:
                v = hi
            if f.get("type") == "integer":
                v = int(v)
        if isinstance(v, str):
            if isinstance(f.get("maxLength"), int) and len(v) > f["maxLength"]:
                v = v[: f["maxLength"]]
            if isinstance(f.get("minLength"), int) and len(v) < f["minLength"]:
                v = v + "x" * (f["minLength"] - len(v))
            pattern = f.get("pattern")
            if isinstance(pattern, str):
                try:
                    if not re.search(pattern, v):
                        for cand in (v.lower(), re.sub(r"[^a-z0-9]+", "-", v.lower()).strip("-"), re.sub(r"[^A-Za-z0-9]", "", v).upper()):
                            if re.search(pattern, cand):
                                v = cand
                                break
                        else:
                            v = _from_pattern(pattern, self.rng) or v
                except re.error:
                    pass
        return v

    # -- pools by name ------------------------------------------------------------------

    def by_name(self, col: str, f: dict[str, Any], ctx: dict[str, Any], row: dict[str, Any]) -> Any:  # noqa: C901, PLR0911, PLR0912
        rng = self.rng
        t = f.get("type")
        ws = words(col)
        w = set(ws)
        last = ws[-1] if ws else ""
        noun = self.noun
        first, surname = ctx["person"]
        city, country, ccode = ctx["city"]
        fmt = f.get("format", "")
        if t == "boolean":
            if w & {"active", "enabled", "verified", "available", "confirmed"}:
                return rng.random() < 0.75
            return rng.random() < 0.3
        if t == "string":
            if fmt == "email" or "email" in w:
                base = f"{first}.{surname}".lower()
                if not self.person:
                    base = f"{rng.choice(FIRST).lower()}.{rng.choice(LAST).lower()}"
                return self.unique(col, lambda a: f"{base}{'' if a == 0 else a + 1}@example.com")
            if fmt in ("date-time",) or last in ("at", "time", "datetime", "timestamp") or w & {"start", "end", "departure", "arrival", "starts", "ends"} and fmt != "date":
                return self._when(col, ws, row, fmt or "date-time")
            if fmt == "date" or last in ("date", "on", "dob", "birthday") or "birth" in w or w & {"checkin", "checkout"} or ws[:2] in (["check", "in"], ["check", "out"]):
                return self._when(col, ws, row, "date")
            if fmt == "time":
                return f"{rng.choice([8, 9, 10, 11, 13, 14, 15, 16])}:{rng.choice(['00', '15', '30', '45'])}"
            if fmt in ("uri", "url") or w & {"url", "uri", "website", "homepage", "link"}:
                return self.unique(col, lambda a: f"https://example.com/{noun}s/{ctx['i'] + 1 + a * 100}")
            if fmt == "uuid":
                return "%08x-%04x-4%03x-a%03x-%012x" % (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12), rng.getrandbits(12), rng.getrandbits(48))
            if "phone" in w or "mobile" in w:
                return self.unique(col, lambda a: f"+1-555-01{rng.randint(0, 99):02d}")
            if w & {"first"} and "name" in w or col in ("given_name",):
                return first
            if w & {"last", "family", "surname"} and ("name" in w or "surname" in w):
                return surname
            if "username" in w or "handle" in w or "login" in w:
                return self.unique(col, lambda a: f"{first.lower()}{surname[0].lower()}{'' if a == 0 else a}")
            if w & {"city", "town"}:
                return city
            if "country" in w:
                return ccode if "code" in w or f.get("maxLength") == 2 else country
            if w & {"street", "address", "line1"}:
                return f"{rng.randint(1, 220)} {rng.choice(STREETS)}"
            if w & {"zip", "postal", "postcode"}:
                return f"{rng.randint(10000, 99999)}"
            if "currency" in w:
                return rng.choice(["USD", "EUR", "GBP"])
            if w & {"iban"}:
                return self.unique(col, lambda a: f"DE{rng.randint(10, 99)} 3704 0044 {rng.randint(1000, 9999)} {rng.randint(1000, 9999)} {rng.randint(10, 99)}")
            if "account" in w and "number" in w:
                return self.unique(col, lambda a: f"{rng.randint(10000000, 99999999)}")
            if "sku" in w:
                base = str(row.get("name") or rng.choice(PRODUCTS)).upper().replace(" ", "-")[:8].strip("-")
                return self.unique(col, lambda a: f"{base}-{a + 1:03d}")
            if "flight" in w and ("number" in w or "no" in w):
                return self.unique(col, lambda a: f"{rng.choice(AIRLINES)[1]}{rng.randint(100, 999)}")
            if w & {"origin", "destination"} or ws in (["from"], ["to"]) or "airport" in w:
                return rng.choice(AIRPORTS)
            if "airline" in w:
                return rng.choice(AIRLINES)[0]
            if "seat" in w:
                return f"{rng.randint(1, 40)}{rng.choice('ABCDEF')}"
            if "room" in w and ("number" in w or "no" in w):
                return self.unique(col, lambda a: str(rng.choice([1, 2, 3, 4, 5]) * 100 + rng.randint(1, 30)))
            if "specialty" in w or "speciality" in w or "department" in w:
                return rng.choice(SPECIALTIES)
            if w & {"reason", "diagnosis", "complaint", "symptoms"}:
                return rng.choice(REASONS)
            if w & {"mime", "content"} and "type" in w:
                fn = str(row.get("name") or row.get("file_name") or row.get("filename") or "x.pdf")
                return MIME.get(fn.rsplit(".", 1)[-1], "application/octet-stream")
            if w & {"timezone", "tz"}:
                return rng.choice(["Europe/Paris", "America/New_York", "Asia/Singapore", "UTC"])
            if w & {"language", "locale", "lang"}:
                return rng.choice(["en", "fr", "de", "es", "ja"])
            if "color" in w or "colour" in w:
                return rng.choice(COLORS)
            if "merchant" in w or "payee" in w or "counterparty" in w:
                return rng.choice(MERCHANTS)
            if "company" in w or "organization" in w or "employer" in w:
                return rng.choice(COMPANIES)
            if "category" in w:
                return rng.choice(CATEGORIES)
            if "location" in w or "venue" in w or "place" in w:
                return rng.choice([f"Room {rng.choice('ABC')}{rng.randint(1, 9)}", f"{city} office", "Video call", "Main hall"])
            if "code" in w or "slug" in w or "reference" in w or "ref" in w or "confirmation" in w:
                return self.unique(col, lambda a: "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6)))
            if w & {"path"}:
                return f"/{rng.choice(FOLDERS).lower().replace(' ', '-')}/{ctx['i'] + 1}"
            if w & {"filename"} or ("file" in w and "name" in w) or (noun in ("file", "document", "attachment") and w & {"name", "title"}):
                return self.unique(col, lambda a: _variant(rng.choice(FILES), a))
            if w & {"name", "title", "label", "subject", "nickname"}:
                return self.unique(col, lambda a: _variant(self._title(col, w, ctx), a))
            if w & {"description", "notes", "note", "body", "content", "text", "message", "comment", "bio", "summary", "memo"}:
                return self._text(w)
            if "status" in w or "state" in w:
                return "active"
            if "type" in w or "kind" in w:
                return rng.choice(["standard", "premium", "basic"])
            return None
        if t in ("integer", "number"):
            money = w & {"price", "amount", "total", "balance", "cost", "fee", "subtotal", "limit", "salary", "budget", "fare"}
            if money:
                cents = "cents" in w
                if "balance" in w:
                    v = rng.randint(50, 9000) + rng.choice([0, 0.5, 0.25, 0.99])
                elif "total" in w and "quantity" in "".join(self.fields) and row.get("quantity") and row.get("unit_price"):
                    v = row["quantity"] * row["unit_price"]
                else:
                    v = rng.choice([9.99, 14.5, 24.99, 34.99, 49.0, 89.0, 120.0, 189.0, 229.0, 399.99, 12.75, 65.4])
                if cents or t == "integer":
                    return int(round(v * (100 if cents else 1)))
                return round(float(v), 2)
            if w & {"quantity", "qty", "count", "guests", "seats", "nights", "adults", "passengers", "attendees"}:
                return rng.randint(1, 4)
            if w & {"stock", "inventory"}:
                return rng.choice([0, 3, 7, 12, 20, 35])
            if w & {"rating", "stars"}:
                return rng.randint(1, 5) if t == "integer" else round(rng.uniform(3.0, 5.0), 1)
            if w & {"duration", "minutes"}:
                return rng.choice([15, 30, 45, 60, 90])
            if w & {"size", "bytes"}:
                return rng.randint(12_000, 9_000_000)
            if w & {"age"}:
                return rng.randint(18, 85)
            if w & {"year"}:
                return rng.randint(1995, 2025)
            if "latitude" in w or w == {"lat"}:
                return round(rng.uniform(-60, 60), 4)
            if "longitude" in w or w & {"lng", "lon"}:
                return round(rng.uniform(-150, 150), 4)
            if w & {"floor", "level"}:
                return rng.randint(1, 9)
            if w & {"priority"}:
                return rng.randint(1, 5)
            return None
        if t == "array":
            items = f.get("items") or {}
            if "tag" in w or "tags" in w or "labels" in w:
                return sorted(rng.sample(TAGS, rng.randint(1, 2)))
            if items.get("type") == "string":
                if "email" in "".join(ws) or items.get("format") == "email" or w & {"attendees", "recipients", "participants", "cc"}:
                    return [f"{rng.choice(FIRST).lower()}.{rng.choice(LAST).lower()}@example.com" for _ in range(rng.randint(1, 3))]
                return [rng.choice(WORDS) for _ in range(rng.randint(1, 2))]
            return []
        return None

    def _title(self, col: str, w: set[str], ctx: dict[str, Any]) -> str:
        rng = self.rng
        noun = self.noun
        first, surname = ctx["person"]
        if self.person or noun in ("account_holder",):
            if noun in ("doctor", "physician", "practitioner", "provider"):
                return f"Dr. {first} {surname}"
            return f"{first} {surname}"
        table = {
            ("product", "item", "article", "good"): PRODUCTS,
            ("hotel", "property", "lodging"): HOTELS,
            ("airline", "carrier"): [a[0] for a in AIRLINES],
            ("event", "meeting", "appointment_type"): MEETINGS,
            ("message", "email", "mail", "thread", "conversation"): SUBJECTS,
            ("task", "todo", "ticket", "issue"): TASKS,
            ("file", "document", "attachment"): FILES,
            ("folder", "directory", "album", "drive"): FOLDERS,
            ("channel", "room", "group"): CHANNELS,
            ("calendar",): CALENDARS,
            ("account", "wallet", "pot"): ACCOUNTS,
            ("category",): CATEGORIES,
            ("clinic", "department", "specialty"): [s.title() for s in SPECIALTIES],
            ("company", "organization", "merchant", "vendor", "supplier"): COMPANIES,
        }
        for nouns, pool in table.items():
            if noun in nouns or any(noun.endswith(x) for x in nouns):
                return rng.choice(pool)
        if "subject" in w:
            return rng.choice(SUBJECTS)
        return f"{noun.replace('_', ' ').capitalize()} {rng.choice(WORDS)}"

    def _text(self, w: set[str]) -> str:
        rng = self.rng
        if self.noun in ("message", "comment", "reply", "post", "chat_message"):
            return rng.choice(MESSAGES)
        if self.noun in ("appointment", "visit", "consultation"):
            return rng.choice(REASONS).capitalize() + "."
        if self.noun in ("transaction", "payment", "transfer"):
            return rng.choice(MERCHANTS)
        return rng.choice(["Please handle with care.", "Follow up next week.", "Requested by the client.", "Priority item for Q1.",
                           "Shared with the whole team.", "Needs a second review."])

    def _when(self, col: str, ws: list[str], row: dict[str, Any], fmt: str) -> str:
        rng = self.rng
        w = set(ws)
        start_cols = [c for c in row if set(words(c)) & {"start", "starts", "departure", "checkin", "begin", "from"} or words(c)[:2] == ["check", "in"]]
        past = w & {"birth", "dob", "birthday", "created", "joined", "opened", "registered", "uploaded", "sent", "posted", "paid", "booked", "modified", "updated", "last"}
        is_end = bool(w & {"end", "ends", "arrival", "checkout", "until", "due"} or ws[:2] == ["check", "out"])
        if is_end and start_cols:
            base_txt = str(row[start_cols[0]])
            try:
                base = dt.datetime.fromisoformat(base_txt.replace("Z", "+00:00"))
                if base.tzinfo is None:
                    base = base.replace(tzinfo=dt.UTC)
            except ValueError:
                base = CLOCK
            delta = dt.timedelta(days=rng.randint(1, 6)) if fmt == "date" or w & {"checkout"} else dt.timedelta(minutes=rng.choice([30, 60, 90, 120, 180]))
            t = base + delta
        elif "birth" in w or "dob" in w or "birthday" in w:
            t = dt.datetime(rng.randint(1950, 2004), rng.randint(1, 12), rng.randint(1, 28), tzinfo=dt.UTC)
        elif past:
            t = CLOCK - dt.timedelta(days=rng.randint(1, 90), hours=rng.randint(0, 10))
        else:
            t = (CLOCK + dt.timedelta(days=rng.randint(1, 45))).replace(hour=rng.choice([8, 9, 10, 11, 13, 14, 15, 16]), minute=rng.choice([0, 30]))
        return t.strftime("%Y-%m-%d") if fmt == "date" else _iso(t)

    # -- by type ------------------------------------------------------------------------

    def by_type(self, col: str, f: dict[str, Any], ctx: dict[str, Any]) -> Any:
        rng = self.rng
        t = f.get("type")
        if t == "string":
            return self.unique(col, lambda a: f"{col.replace('_', ' ')} {rng.choice(WORDS)}{'' if a == 0 else ' ' + str(a + 1)}")
        if t == "integer":
            lo = f.get("minimum", 1)
            return rng.randint(int(lo) if isinstance(lo, (int, float)) else 1, max(int(lo) if isinstance(lo, (int, float)) else 1, 10) + 10)
        if t == "number":
            return round(rng.uniform(1, 100), 2)
        if t == "boolean":
            return rng.random() < 0.5
        if t == "array":
            return []
        if t == "object":
            return {}
        return None


def _variant(base: str, attempt: int) -> str:
    if attempt == 0:
        return base
    if "." in base and " " not in base:
        stem, ext = base.rsplit(".", 1)
        return f"{stem}-{attempt + 1}.{ext}"
    return f"{base} {attempt + 1}"


_CLASS = {r"\d": "0123456789", "[0-9]": "0123456789", "[A-Z]": "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "[a-z]": "abcdefghijklmnopqrstuvwxyz",
          "[A-Za-z]": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", "[A-Z0-9]": "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"}


def _from_pattern(pattern: str, rng: random.Random) -> str | None:
    """A string for a simple pattern: anchors, literals and character classes with ``{n}`` / ``{n,m}``."""
    p = pattern.removeprefix("^").removesuffix("$")
    out = []
    i = 0
    while i < len(p):
        chars = None
        for cls, pool in _CLASS.items():
            if p.startswith(cls, i):
                chars, i = pool, i + len(cls)
                break
        if chars is None:
            c = p[i]
            if c in "()[]|*+?\\.":
                return None
            chars, i = c, i + 1
        n = 1
        m = re.match(r"\{(\d+)(?:,(\d+))?\}", p[i:])
        if m:
            n = int(m.group(1)) if not m.group(2) else rng.randint(int(m.group(1)), int(m.group(2)))
            i += m.end()
        out.append("".join(rng.choice(chars) for _ in range(n)))
    s = "".join(out)
    try:
        return s if re.search(pattern, s) else None
    except re.error:
        return None
