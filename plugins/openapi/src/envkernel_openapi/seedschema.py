"""Values that a field's JSON Schema accepts, and the check that they do.

:func:`conform` takes a candidate value (from the realistic pools of :mod:`.seeddata`) and the
field's schema and returns a value the schema accepts: the candidate when it already fits,
otherwise one built from the schema itself (``pattern`` through rstr's regex-reversing ``xeger``,
``minLength``/``maxLength``, ``minimum``/``maximum``, ``enum``, ``format``, array ``items``,
object ``properties``). :func:`problem` validates with ``jsonschema`` (formats checked), the same
validator the verifier uses.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import json
import random
import re
import uuid
from functools import lru_cache
from typing import Any

__all__ = ["CLOCK", "conform", "from_schema", "iso", "problem", "schema_of"]

CLOCK = dt.datetime(2026, 1, 15, 9, 0, 0, tzinfo=dt.UTC)
"""The executor's default frozen clock: seed times are placed around it."""

_FIELD_KEYS = (
    "type",
    "format",
    "enum",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
    "properties",
    "required",
)
_KNOWN_FORMATS = {
    "date-time",
    "date-time-rfc-2822",
    "date",
    "time",
    "email",
    "uri",
    "url",
    "uuid",
    "ipv4",
    "ipv6",
    "hostname",
    "byte",
}
_WORDS = [
    "north",
    "river",
    "maple",
    "cedar",
    "summit",
    "harbor",
    "meadow",
    "willow",
    "granite",
    "aurora",
    "atlas",
    "beacon",
]


def _two_words(rng: random.Random) -> str:
    """Two different words ("granite atlas", never "granite granite"), from the same two draws as
    before."""
    first, second = rng.choice(_WORDS), rng.choice(_WORDS)
    if second == first:
        second = _WORDS[(_WORDS.index(first) + 1) % len(_WORDS)]
    return f"{first} {second}"


def iso(t: dt.datetime) -> str:
    """``t`` as ``2026-01-15T09:00:00Z``."""
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def schema_of(field: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of one model field (its type, nullability and constraints)."""
    s = {k: field[k] for k in _FIELD_KEYS if k in field}
    if field.get("nullable"):
        t = s.get("type")
        s["type"] = [*([t] if isinstance(t, str) else t or []), "null"]
        if isinstance(s.get("enum"), list):
            s["enum"] = [*s["enum"], None]
    if s.get("type") == "object":
        s.pop("items", None)
    return s


@lru_cache(maxsize=4096)
def _validator(key: str) -> Any:
    import jsonschema

    schema = json.loads(key)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def problem(schema: dict[str, Any], value: Any) -> str:
    """Why ``value`` breaks ``schema`` (jsonschema, formats checked), or ""."""
    import jsonschema

    try:
        key = json.dumps(schema, sort_keys=True, default=str)
        err = jsonschema.exceptions.best_match(_validator(key).iter_errors(value))
    except (jsonschema.exceptions.SchemaError, TypeError, ValueError, re.error) as exc:
        return f"the schema cannot be checked: {type(exc).__name__}: {exc}"
    if err is None:
        return ""
    where = "".join(f"[{p!r}]" for p in err.absolute_path)
    return f"{where or 'the value'}: {err.message}"


def conform(value: Any, schema: dict[str, Any], rng: random.Random) -> Any:
    """``value`` when ``schema`` accepts it, else a value built from ``schema`` (see the module
    docstring)."""
    if value is not None and not problem(schema, value):
        return value
    fixed = _repair(value, schema, rng)
    if fixed is not None and not problem(schema, fixed):
        return fixed
    for _ in range(8):
        v = from_schema(schema, rng)
        if not problem(schema, v):
            return v
    return value


def _repair(value: Any, schema: dict[str, Any], rng: random.Random) -> Any:
    """Small edits that keep a realistic value: clip a number into range, trim or pad a string."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        lo, hi = _bounds(schema)
        v = min(max(value, lo), hi) if lo <= hi else value
        return int(round(v)) if _type(schema) == "integer" else v
    if (
        isinstance(value, str)
        and "pattern" not in schema
        and "enum" not in schema
        and not schema.get("format")
    ):
        lo, hi = schema.get("minLength", 0), schema.get("maxLength")
        v = value[:hi].rstrip() if isinstance(hi, int) else value
        while isinstance(lo, int) and len(v) < lo:
            v = f"{v} {rng.choice(_WORDS)}".strip()
        return v[:hi] if isinstance(hi, int) else v
    if isinstance(value, str) and isinstance(schema.get("pattern"), str):
        for cand in (
            *_time_forms(value),
            value.lower(),
            value.upper(),
            re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-"),
            re.sub(r"[^A-Za-z0-9]", "", value),
        ):
            if not problem(schema, cand):
                return cand
    return None


def _time_forms(value: str) -> list[str]:
    """The same moment written the other ways specs ask for (NHS's ``...T10:00:00+00:00`` pattern
    beside ``format: date-time``): an offset instead of ``Z``, no zone, milliseconds, the date
    alone, a space instead of the ``T``."""
    try:
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return []
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    t = t.astimezone(dt.UTC)
    return [
        t.strftime(f)
        for f in (
            "%Y-%m-%dT%H:%M:%S+00:00",
            "%Y-%m-%dT%H:%M:%S.000Z",
            "%Y-%m-%dT%H:%M:%S",
            "%Y-%m-%d",
            "%Y-%m-%d %H:%M:%S",  # Mandrill's ^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$
            "%Y-%m-%d %H:%M:%S.000",
        )
    ]


def _type(schema: dict[str, Any]) -> str:
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    if t is None:
        if "properties" in schema:
            return "object"
        if "items" in schema:
            return "array"
        if "enum" in schema:
            return "enum"
    return t or "string"


def _bounds(schema: dict[str, Any]) -> tuple[float, float]:
    lo = schema.get("minimum", -1e9)
    hi = schema.get("maximum", 1e9)
    if isinstance(schema.get("exclusiveMinimum"), (int, float)):
        lo = max(lo, schema["exclusiveMinimum"] + 1e-6)
    if isinstance(schema.get("exclusiveMaximum"), (int, float)):
        hi = min(hi, schema["exclusiveMaximum"] - 1e-6)
    return float(lo), float(hi)


def _all_of(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``allOf`` parts merged in: properties, required, and the first of each
    other keyword (a part's own ``allOf`` too)."""
    out = {k: v for k, v in schema.items() if k != "allOf"}
    props = dict(out.get("properties") or {})
    req = list(out.get("required") or [])
    for part in schema.get("allOf") or []:
        if not isinstance(part, dict):
            continue
        part = _all_of(part) if isinstance(part.get("allOf"), list) else part
        props.update(part.get("properties") or {})
        req += [r for r in part.get("required") or [] if r not in req]
        for k, v in part.items():
            if k not in ("properties", "required"):
                out.setdefault(k, v)
    if props:
        out["properties"] = props
    if req:
        out["required"] = req
    return out


def from_schema(schema: dict[str, Any], rng: random.Random, depth: int = 0, name: str = "") -> Any:
    """A value ``schema`` accepts, built from its constraints (and, for a nested property, a
    little from its ``name``: ids, emails, URLs, times)."""
    if isinstance(schema.get("allOf"), list):  # Lob's tracking events: allOf [base, {...}]
        schema = _all_of(schema)
    if isinstance(schema.get("enum"), list) and [e for e in schema["enum"] if e is not None]:
        return rng.choice([e for e in schema["enum"] if e is not None])
    if schema.get("enum") == [None]:  # Lob's normal tracking events: details is always null
        return None
    if "const" in schema:
        return schema["const"]
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _union(schema, key, rng, depth, name)
    build = _BUILDERS.get(_type(schema))
    if build is None:
        return from_schema({"type": "string"}, rng, depth + 1)
    return build(schema, rng, depth, name)


def _union(schema: dict[str, Any], key: str, rng: random.Random, depth: int, name: str) -> Any:
    """A value of a ``oneOf``/``anyOf`` schema: of its first member, or of the schema around it
    when that member only adds constraints (Apideck's CustomField: properties, and anyOf
    [{required: [id]}, {required: [name]}])."""
    member = schema[key][0] if isinstance(schema[key][0], dict) else {}
    rest = {k: v for k, v in schema.items() if k != key}
    if "type" in member or not (rest.get("type") or rest.get("properties")):
        return from_schema(member, rng, depth + 1)
    required = [*(rest.get("required") or []), *(member.get("required") or [])]
    merged = {
        **rest,
        **member,
        "properties": {**(rest.get("properties") or {}), **(member.get("properties") or {})},
        "required": list(dict.fromkeys(required)),
    }
    return from_schema(merged, rng, depth, name)


def _number(schema: dict[str, Any], rng: random.Random, depth: int, name: str) -> int | float:
    lo, hi = _bounds(schema)
    lo, hi = max(lo, 1.0 if lo < 1 <= hi else lo), min(hi, max(lo, 1.0) + 99)
    if _type(schema) == "integer":
        return rng.randint(int(-(-lo // 1)), max(int(-(-lo // 1)), int(hi // 1)))
    return round(rng.uniform(lo, hi), 2)


def _array(schema: dict[str, Any], rng: random.Random, depth: int, name: str) -> list[Any]:
    items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
    lo = schema.get("minItems", 1 if depth < 2 else 0)
    hi = schema.get("maxItems", max(lo, 3))
    n = rng.randint(lo, max(lo, min(hi, lo + 2)))
    out: list[Any] = []
    for _ in range(n * 4):
        if len(out) >= n:
            break
        v = from_schema(items, rng, depth + 1)
        if not (schema.get("uniqueItems") and v in out):
            out.append(v)
    return out


def _object(schema: dict[str, Any], rng: random.Random, depth: int, name: str) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = set(schema.get("required") or [])
    if depth > 3:  # deep down only what is required (FHIR's contact.relationship.coding: its code)
        props = {k: v for k, v in props.items() if k in required} if depth <= 12 else {}
    return {
        k: from_schema(s if isinstance(s, dict) else {}, rng, depth + 1, name=k)
        for k, s in props.items()
        if k in required or rng.random() < 0.7
    }


_TIME_NAMES = {"created", "updated", "modified", "deleted", "timestamp", "datetime"}
"""Bare field names that hold a moment ("created": a time, never two words)."""


def _name_format(schema: dict[str, Any], name: str) -> str | None:
    """The format a string's schema declares, else (no pattern either) the one its field's name
    says: ids, emails, URLs, times."""
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt.startswith("uuid"):
        return "uuid"
    if fmt in _KNOWN_FORMATS or schema.get("pattern"):
        return fmt if isinstance(fmt, str) else None
    low = name.lower()
    if low == "id" or low.endswith(("_id", "id")) and len(low) > 2:
        return "x-id"
    if "email" in low:
        return "email"
    if low.endswith(("url", "uri", "link")):
        return "uri"
    if low.endswith(("_at", "time", "date")) or low in _TIME_NAMES:
        return "date-time"
    return fmt if isinstance(fmt, str) else None


def _by_pattern(schema: dict[str, Any], rng: random.Random) -> str | None:
    """A string made from the schema's ``pattern`` (rstr's ``xeger``) that the schema accepts."""
    import rstr

    try:
        gen = rstr.Rstr(rng)
        for _ in range(6):
            s = gen.xeger(schema["pattern"])
            if not problem(schema, s):
                return str(s)
    except (re.error, ValueError, TypeError, IndexError):
        pass
    return None


def _formatted(fmt: str | None, rng: random.Random) -> str:
    """A value of a string format, a moment in the 60 days before :data:`CLOCK` for times; two
    words when there is no format."""
    when = CLOCK - dt.timedelta(days=rng.randint(1, 60), minutes=rng.randint(0, 600))
    by_format = {
        "date-time": lambda: iso(when),
        "date-time-rfc-2822": lambda: email.utils.format_datetime(
            when.replace(second=0, microsecond=0)
        ),
        "date": lambda: when.strftime("%Y-%m-%d"),
        "time": lambda: when.strftime("%H:%M:%S"),
        "email": lambda: f"{rng.choice(_WORDS)}.{rng.choice(_WORDS)}@example.com",
        "uri": lambda: f"https://example.com/{rng.choice(_WORDS)}/{rng.randint(1, 999)}",
        "url": lambda: f"https://example.com/{rng.choice(_WORDS)}/{rng.randint(1, 999)}",
        "uuid": lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "ipv4": lambda: f"192.0.2.{rng.randint(1, 254)}",
        "ipv6": lambda: f"2001:db8::{rng.randint(1, 65535):x}",
        "hostname": lambda: f"{rng.choice(_WORDS)}.example.com",
        "byte": lambda: "ZXhhbXBsZQ==",
        "x-id": lambda: f"{rng.getrandbits(64):016x}",
    }
    make = by_format.get(fmt or "")
    return make() if make else _two_words(rng)


def _string(schema: dict[str, Any], rng: random.Random, name: str = "") -> str:
    fmt = _name_format(schema, name)
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        s = _by_pattern(schema, rng)
        if s is not None:
            return s
    s = _formatted(fmt, rng)
    if isinstance(pattern, str) and problem(schema, s):
        s = next((f for f in _time_forms(s) if not problem(schema, f)), s)
    lo, hi = schema.get("minLength", 0), schema.get("maxLength")
    while isinstance(lo, int) and len(s) < lo:
        s += rng.choice("abcdefghijklmnopqrstuvwxyz0123456789")
    return s[:hi] if isinstance(hi, int) else s


_BUILDERS: dict[str, Any] = {
    "string": lambda s, rng, depth, name: _string(s, rng, name),
    "integer": _number,
    "number": _number,
    "boolean": lambda s, rng, depth, name: rng.random() < 0.5,
    "array": _array,
    "object": _object,
    "null": lambda s, rng, depth, name: None,
}
"""A value builder per JSON type: ``(schema, rng, depth, name) -> value``."""
