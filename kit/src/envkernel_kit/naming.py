"""Name heuristics shared by the probe and the chain sampler.

Tools and parameters are linked to tables by their names: ``get_order`` is about the ``orders``
table, ``customer_id`` holds an id of ``customers``. These helpers do that matching, generically
over any environment.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

State = dict[str, list[dict[str, Any]]]

CREATE_VERBS = frozenset(
    {
        "create",
        "add",
        "place",
        "make",
        "book",
        "register",
        "open",
        "new",
        "insert",
        "submit",
        "post",
        "schedule",
        "reserve",
    }
)
"""Verbs of tools that make a new entity."""
UPDATE_VERBS = frozenset(
    {"update", "set", "change", "edit", "modify", "rename", "adjust", "patch", "move", "assign"}
)
"""Verbs of tools that change fields of an entity."""
DELETE_VERBS = frozenset(
    {"delete", "remove", "cancel", "close", "archive", "drop", "void", "revoke", "deactivate"}
)
"""Verbs of tools that end an entity."""
READ_VERBS = frozenset(
    {
        "get",
        "list",
        "find",
        "search",
        "lookup",
        "look",
        "show",
        "fetch",
        "read",
        "view",
        "describe",
        "query",
        "check",
        "count",
    }
)
"""Verbs of read-only tools."""
VERBS = (
    CREATE_VERBS
    | UPDATE_VERBS
    | DELETE_VERBS
    | READ_VERBS
    | frozenset(
        {
            "ship",
            "refund",
            "approve",
            "reject",
            "pay",
            "send",
            "transfer",
            "restock",
            "return",
            "apply",
            "confirm",
            "complete",
            "reopen",
        }
    )
)
"""Every verb the heuristics recognise as a tool name's first word."""

KEY_LIKE = frozenset(
    {
        "email",
        "sku",
        "code",
        "username",
        "login",
        "slug",
        "handle",
        "number",
        "phone",
        "isbn",
        "barcode",
        "reference",
        "ref",
    }
)
"""Columns that identify a row the way a person would (besides ``id``)."""
NAME_LIKE = (
    "name",
    "full_name",
    "display_name",
    "title",
    "label",
    "product_name",
    "username",
    "email",
    "sku",
    "code",
)
"""Columns a person uses to name a row, best first."""
PERSON_NOUNS = frozenset(
    {
        "customer",
        "user",
        "account",
        "member",
        "client",
        "patient",
        "employee",
        "student",
        "guest",
        "passenger",
        "buyer",
        "subscriber",
        "contact",
        "person",
        "owner",
    }
)
"""Entity nouns that stand for the person making a request."""

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def words(name: str) -> list[str]:
    """Split an identifier (snake, kebab, dotted or camel case: ``createdAt``, ``created_at``) into
    lowercase words; any character but an ASCII letter or digit separates words (so words joined
    by ``_`` always make a valid identifier)."""
    return [p for p in re.split(r"[^a-z0-9]+", _CAMEL.sub("_", name).lower()) if p]


def singular(word: str) -> str:
    """A naive English singular, lowercase (``orders`` -> ``order``, ``categories`` -> ``category``,
    ``sizes`` -> ``size``, ``addresses`` -> ``address``)."""
    w = word.lower()
    if len(w) > 3 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith(("sses", "xes", "ches", "shes")):
        return w[:-2]
    if len(w) > 2 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def plural(word: str) -> str:
    """A naive English plural (``order`` -> ``orders``, ``category`` -> ``categories``)."""
    w = word
    if w.endswith("y") and len(w) > 1 and w[-2] not in "aeiou":
        return w[:-1] + "ies"
    if w.endswith(("s", "x", "ch", "sh", "z")):
        return w + "es"
    return w + "s"


def human(name: str) -> str:
    """An identifier as words: ``unit_price`` -> ``unit price``."""
    return " ".join(words(name))


def match_table(noun: str, tables: Iterable[str]) -> str | None:
    """The table a noun refers to (``order`` -> ``orders``; ``item`` -> ``order_items``), or
    None."""
    s = singular("_".join(words(noun)))
    if not s:
        return None
    tables = list(tables)
    for t in tables:
        if singular("_".join(words(t))) == s:
            return t
    for t in tables:
        tw = words(t)
        if tw and singular(tw[-1]) == s:
            return t
    return None


def tool_parts(tool_name: str, tables: Iterable[str] = ()) -> tuple[str, str, str | None]:
    """Split a tool name into (verb, noun, table): ``update_order_quantity`` -> ("update", "order",
    "orders").

    The verb is "" when the first word is not a known verb. The noun is the longest run of words
    right after the verb that names a table (else the first word after the verb, singular).
    """
    ws = words(tool_name)
    verb = ws[0] if ws and ws[0] in VERBS and len(ws) > 1 else ""
    rest = ws[1:] if verb else ws
    tables = list(tables)
    for size in range(len(rest), 0, -1):
        for start in range(0, len(rest) - size + 1):
            cand = "_".join(rest[start : start + size])
            t = match_table(cand, tables)
            if t is not None:
                return verb, singular(cand), t
    noun = singular(rest[0]) if rest else tool_name
    return verb, noun, None


def id_column(table: str, rows: list[dict[str, Any]]) -> str | None:
    """The column holding a table's ids: ``id``, else ``<singular>_id``, else None."""
    if not rows:
        return None
    keys = rows[0].keys()
    if "id" in keys:
        return "id"
    own = singular("_".join(words(table))) + "_id"
    if own in keys:
        return own
    return None


def column_values(rows: list[dict[str, Any]], column: str) -> list[Any]:
    """Distinct non-null values of a column, in row order."""
    out: list[Any] = []
    seen: set[str] = set()
    for r in rows:
        if column not in r or r[column] is None:
            continue
        v = r[column]
        key = repr(v)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


def is_id_name(name: str) -> bool:
    """True for ``id`` and ``*_id`` / ``*Id`` parameter names."""
    ws = words(name)
    return bool(ws) and ws[-1] == "id"


def id_entity(name: str) -> str:
    """The entity an id parameter names: ``customer_id`` -> ``customer`` ("" for plain ``id``)."""
    ws = words(name)
    return "_".join(ws[:-1]) if ws and ws[-1] == "id" else ""
