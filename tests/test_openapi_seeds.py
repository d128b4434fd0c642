"""Seed rows a person would believe, and the spec accepts (issue 13, point 3).

On the shipped 7-domain corpus: every seed row validates (jsonschema) against the schema of the
row its get tool declares; identifying text is unique without " 2" suffixes or placeholder words;
prices are above 0; origins differ from destinations; status stamps only on rows in that status;
created <= updated; a product's category fits its name. On fields built by hand: patterns
(``^MG[0-9a-f]{32}$``, ``HH:mm``), length and range bounds, arrays of dates; and on a real spec
(Twilio Messaging, copied under tests/data/realspecs with its source and licence).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from envkernel_openapi import corpus_files, synthesize_file
from envkernel_openapi.seeddata import CATALOG, RowMaker
from envkernel_openapi.seedschema import problem, schema_of


@pytest.fixture(scope="module")
def corpus() -> dict[str, dict]:
    """Each corpus environment's model, by file stem."""
    return {f.stem: synthesize_file(f)[0] for f in corpus_files()}


def _visible(model: dict, table: str, row: dict) -> dict:
    fields = model["resources"][table]["fields"]
    return {k: v for k, v in row.items() if not fields[k].get("hidden")}


def _check_seed_rows(env) -> int:  # type: ignore[no-untyped-def]
    """Assert every seed row fits the answer schema of its resource's get tool; the rows checked."""
    model = env.behaviour.model
    checked = 0
    for tool in env.tools:
        op = model["operations"][tool.name]
        if op["kind"] != "get":
            continue
        for row in model["seed"][op["resource"]]:
            checked += 1
            assert problem(tool.returns, _visible(model, op["resource"], row)) == "", (
                env.id,
                tool.name,
                row,
            )
    return checked


def test_every_seed_row_fits_its_get_schema(corpus: dict) -> None:
    assert sum(_check_seed_rows(env) for env in corpus.values()) >= 60


def test_no_placeholders_no_suffixes_unique_names(corpus: dict) -> None:
    placeholder = re.compile(
        r"\b(alpha|bravo|coral|delta|ember|falcon|garnet|harbor|indigo|juniper|kestrel|lumen)\b",
        re.I,
    )
    for stem, env in corpus.items():
        model = env.behaviour.model
        for table, rows in model["seed"].items():
            for col in model["resources"][table]["fields"]:
                values = [r[col] for r in rows if isinstance(r.get(col), str)]
                for v in values:
                    assert not placeholder.search(v), (stem, table, col, v)
                ident = col in (
                    "name",
                    "title",
                    "email",
                    "full_name",
                    "display_name",
                    "flight_number",
                    "iban",
                    "sku",
                    "nickname",
                    "subject",
                )
                assert not (ident and any(re.search(r"\S \d$", v) for v in values)), (
                    stem,
                    table,
                    col,
                    values,
                )
                if col in (
                    "name",
                    "title",
                    "email",
                    "full_name",
                    "display_name",
                    "flight_number",
                    "iban",
                    "sku",
                ):
                    assert len(set(values)) == len(values), (stem, table, col, values)


def test_consistent_rows(corpus: dict) -> None:
    seed = {stem: env.behaviour.model["seed"] for stem, env in corpus.items()}
    for hotel in seed["travel"]["hotels"]:
        assert hotel["nightly_rate"] > 0
    for flight in seed["travel"]["flights"]:
        assert flight["origin"] != flight["destination"] and flight["price"] > 0
        assert flight["arrival_at"] > flight["departure_at"]
        assert flight["flight_number"][:2] in {"NW", "BS", "CJ", "AU", "MA"}
    bookings = seed["travel"]["bookings"]
    assert {b["status"] for b in bookings} >= {"held", "confirmed"}
    for b in bookings:
        assert (b.get("confirmed_at") is None) == (b["status"] in ("held", "cancelled")), b
        assert b.get("confirmed_at") is None or b["confirmed_at"] >= b["created_at"]
    for ch in seed["messaging"]["channels"]:
        assert (ch.get("archived_at") is None) == (ch["status"] != "archived"), ch
    for msg in seed["messaging"]["messages"]:
        assert msg.get("edited_at") is None or msg["edited_at"] >= msg["sent_at"]
    for order in seed["shop"]["orders"]:
        assert (order.get("cancelled_at") is None) == (order["status"] != "cancelled"), order
    category_of = {p: c for c, items in CATALOG.items() for p, _lo, _hi in items}
    for product in seed["shop"]["products"]:
        kind = product["name"].split(" ", 1)[1]
        assert category_of[kind] == product["category"] and product["price"] > 0, product
    for appt in seed["clinic"]["appointments"]:
        assert (appt.get("cancel_reason") is None) == (appt["status"] != "cancelled"), appt
    for event in seed["calendar"]["events"]:
        assert event["ends_at"] > event["starts_at"]
    for stem, tables in seed.items():
        for table, rows in tables.items():
            for r in rows:
                if r.get("created_at") and r.get("updated_at"):
                    assert r["created_at"] <= r["updated_at"], (stem, table, r)


def test_the_same_seed_gives_the_same_rows() -> None:
    f = corpus_files()[0]
    a = synthesize_file(f, seed=3)[0].behaviour.model["seed"]
    b = synthesize_file(f, seed=3)[0].behaviour.model["seed"]
    c = synthesize_file(f, seed=4)[0].behaviour.model["seed"]
    assert a == b and a != c


def test_patterns_bounds_formats_and_arrays() -> None:
    fields = {
        "sid": {"type": "string", "pattern": "^MG[0-9a-f]{32}$", "minLength": 34, "maxLength": 34},
        "opens": {"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"},
        "code": {"type": "string", "minLength": 12, "maxLength": 16},
        "score": {"type": "integer", "minimum": 10, "maximum": 20},
        "price": {"type": "number", "minimum": 0, "exclusiveMinimum": 0},
        "holidays": {"type": "array", "items": {"type": "string", "format": "date"}, "minItems": 1},
        "sizes": {"type": "array", "items": {"type": "string", "enum": ["S", "M", "L"]}},
        "website": {"type": "string", "format": "uri"},
        "token": {"type": "string", "format": "uuid"},
        "when": {"type": "string", "format": "date-time"},
        "kind": {"type": "string", "enum": ["a", "b"]},
    }
    maker = RowMaker(random.Random(1), "service", fields, "sid", "svc")
    rows = [maker.row(i, 12, {}) for i in range(12)]
    for row in rows:
        for col, f in fields.items():
            assert problem(schema_of(f), row[col]) == "", (col, row[col])
        assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", d) for d in row["holidays"])
    assert len({r["sid"] for r in rows}) == len(rows)


REAL = Path(__file__).parent / "data" / "realspecs"


def test_real_spec_seed_rows_match_its_patterns() -> None:
    """Twilio Messaging (tests/data/realspecs/SOURCES.md): its ids carry patterns such as
    ``^MG[0-9a-fA-F]{32}$``; every seed row fits the get schema, and the pattern-bound keys
    match."""
    env, _ = synthesize_file(REAL / "twilio-messaging-v1.json")
    model = env.behaviour.model
    assert _check_seed_rows(env) >= 50
    services = model["seed"]["services"]
    assert services and all(re.fullmatch(r"MG[0-9a-fA-F]{32}", s["sid"]) for s in services)
    assert len({s["sid"] for s in services}) == len(services)
