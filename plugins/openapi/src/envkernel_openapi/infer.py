"""From a resolved OpenAPI document to a resource model, its tools and its seed rows.

Resources come from paths (``/orders``, ``/orders/{orderId}``, ``/customers/{customerId}/orders``)
and their schemas from the operations' responses and request bodies (or a component schema of
the same name). Field names become snake_case columns; ids and foreign keys come from path
parameters and ``*Id`` / ``*_id`` fields. Each operation becomes one tool whose kind (create,
get, list, update, patch, delete, action) the engine knows how to run. An operation that does
not fit is skipped with a warning naming it.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from envkernel_kit.answers import ITEM_KEYS
from envkernel_kit.argsgen import ID_HINT, schema_nullable, schema_type
from envkernel_kit.naming import plural, singular, words
from envkernel_runtime.model import ResourceModel

from .seeddata import RowMaker
from .seedschema import CLOCK, conform, iso, problem, schema_of
from .spec import METHODS, REF_NAME, SpecError, unresolved_refs

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
JSON_MEDIA = re.compile(r"^application/([\w.+-]*\+)?json|^\*/\*$|^application/\*$")
SKIP_KEYS = {
    REF_NAME,
    "readOnly",
    "writeOnly",
    "xml",
    "externalDocs",
    "example",
    "examples",
    "discriminator",
    "deprecated",
    "nullable",
    "$schema",
    "$id",
    "$comment",
    "contentMediaType",
    "contentEncoding",
}
UNIQUE_NAMES = {
    "email",
    "username",
    "sku",
    "slug",
    "handle",
    "login",
    "iban",
    "account_number",
    "flight_number",
    "code",
}
LIMIT_NAMES = {
    "limit",
    "per_page",
    "page_size",
    "pagesize",
    "size",
    "max_results",
    "maxresults",
    "top",
    "first",
}
OFFSET_NAMES = {"offset", "skip", "start_index"}
PAGE_NAMES = {"page", "page_number", "pagenumber", "page_no"}
CURSOR_NAMES = {
    "cursor",
    "page_token",
    "pagetoken",
    "next_token",
    "starting_after",
    "continuation_token",
    "after_cursor",
    "next_cursor",
}
SORT_NAMES = {"sort", "sort_by", "sortby", "order_by", "orderby", "sort_field"}
ORDER_NAMES = {"order", "sort_order", "sortorder", "direction", "dir", "sort_dir", "sort_direction"}
SEARCH_NAMES = {"q", "query", "search", "keyword", "keywords", "term", "text", "search_term"}
GTE_SUFFIX = ("_min", "_from", "_after", "_since", "_gte", "_start")
LTE_SUFFIX = ("_max", "_to", "_before", "_until", "_lte", "_end")
GTE_BARE = {
    "from",
    "after",
    "since",
    "time_min",
    "start_after",
    "min_date",
    "date_from",
    "start_date_from",
}
LTE_BARE = {"to", "before", "until", "time_max", "end_before", "max_date", "date_to"}
ENVELOPE = {
    "total": {"total", "total_count", "totalcount", "total_items", "count", "total_results"},
    "next_cursor": {
        "next_cursor",
        "nextcursor",
        "next",
        "cursor",
        "next_page_token",
        "nextpagetoken",
        "next_token",
    },
    "has_more": {"has_more", "hasmore", "more"},
    "limit": {"limit", "page_size", "per_page", "pagesize"},
    "offset": {"offset"},
    "page": {"page", "page_number"},
    "next_page": {"next_page"},
    "next_offset": {"next_offset"},
}
KEY_SHAPE = ("pattern", "format", "minLength", "maxLength")
"""Constraints a reference must share with the key it refers to."""
ACTION_TARGETS = {
    "cancel": ["cancelled", "canceled"],
    "pay": ["paid"],
    "send": ["sent"],
    "ship": ["shipped"],
    "start": ["started", "in_progress", "active"],
    "stop": ["stopped"],
    "pause": ["paused"],
    "resume": ["active", "in_progress", "resumed"],
    "reopen": ["open", "reopened"],
    "open": ["open"],
    "close": ["closed"],
    "confirm": ["confirmed"],
    "approve": ["approved"],
    "reject": ["rejected"],
    "decline": ["declined", "rejected"],
    "accept": ["accepted"],
    "complete": ["completed", "done"],
    "finish": ["finished", "completed", "done"],
    "archive": ["archived"],
    "unarchive": ["active"],
    "activate": ["active", "activated"],
    "deactivate": ["inactive", "deactivated"],
    "freeze": ["frozen"],
    "unfreeze": ["active"],
    "block": ["blocked"],
    "unblock": ["active"],
    "suspend": ["suspended"],
    "refund": ["refunded"],
    "deliver": ["delivered"],
    "submit": ["submitted"],
    "publish": ["published"],
    "unpublish": ["draft", "unpublished"],
    "check_in": ["checked_in"],
    "checkin": ["checked_in"],
    "check_out": ["checked_out"],
    "checkout": ["checked_out"],
    "lock": ["locked"],
    "unlock": ["unlocked", "active"],
    "restore": ["active", "restored"],
    "trash": ["trashed", "deleted"],
    "fulfill": ["fulfilled"],
    "dispatch": ["dispatched"],
    "no_show": ["no_show"],
    "expire": ["expired"],
    "void": ["voided", "void"],
    "settle": ["settled"],
    "reverse": ["reversed"],
    "schedule": ["scheduled"],
    "reschedule": ["rescheduled", "scheduled"],
    "read": ["read"],
    "mark_read": ["read"],
    "mark_as_read": ["read"],
    "verify": ["verified"],
    "resolve": ["resolved"],
    "assign": ["assigned"],
}
FLAG_ACTIONS = {
    "read": "read",
    "mark_read": "read",
    "mark_as_read": "read",
    "star": "starred",
    "pin": "pinned",
    "flag": "flagged",
    "lock": "locked",
    "mute": "muted",
    "archive": "archived",
    "verify": "verified",
    "favorite": "favorite",
    "favourite": "favourite",
    "block": "blocked",
    "hide": "hidden",
    "trash": "trashed",
}
UNFLAG_ACTIONS = {
    "unread": "read",
    "mark_unread": "read",
    "mark_as_unread": "read",
    "unstar": "starred",
    "unpin": "pinned",
    "unflag": "flagged",
    "unlock": "locked",
    "unmute": "muted",
    "unarchive": "archived",
    "unfavorite": "favorite",
    "unblock": "blocked",
    "unhide": "hidden",
    "restore": "trashed",
    "untrash": "trashed",
}
TERMINAL = {
    "cancelled",
    "canceled",
    "completed",
    "refunded",
    "rejected",
    "closed",
    "archived",
    "deleted",
    "expired",
    "failed",
    "delivered",
    "declined",
    "void",
    "voided",
    "no_show",
    "checked_out",
    "done",
    "resolved",
}
ROLE_NOUNS = {
    "owner",
    "sender",
    "author",
    "creator",
    "recipient",
    "assignee",
    "organizer",
    "host",
    "requester",
    "reporter",
    "uploader",
    "poster",
}
PEOPLE = ("users", "members", "people", "persons", "employees", "customers", "contacts", "accounts")
CREATED_WORDS = {
    "created",
    "creation",
    "inserted",
    "registered",
    "opened",
    "joined",
    "sent",
    "posted",
    "uploaded",
    "submitted",
    "booked",
    "placed",
}
REVERSALS = {
    "reopen",
    "restore",
    "resume",
    "reactivate",
    "undo",
    "unarchive",
    "unfreeze",
    "unblock",
    "unlock",
    "unpublish",
}
RPC_VERBS = {
    "list": "list",
    "search": "list",
    "query": "list",
    "all": "list",
    "find": "list",
    "get": "get",
    "info": "get",
    "retrieve": "get",
    "read": "get",
    "fetch": "get",
    "show": "get",
    "details": "get",
    "create": "create",
    "add": "create",
    "new": "create",
    "insert": "create",
    "update": "patch",
    "edit": "patch",
    "modify": "patch",
    "set": "patch",
    "change": "patch",
    "delete": "delete",
    "remove": "delete",
    "destroy": "delete",
}
"""Last path words of RPC-style APIs (``POST /documents.list``, ``POST /accounts/get``) and the kind
each means."""
FORM_MEDIA = re.compile(r"^application/x-www-form-urlencoded|^multipart/form-data")
"""Request-body media types read like JSON objects (a tool's arguments are one object either
way)."""
ENVELOPE_SINGLE = {"data", "result", "item", "object"}
"""Keys a single-object response may wrap its object in (``{"data": {...}}``)."""
ENVELOPE_EXTRA = {
    "meta",
    "links",
    "ok",
    "included",
    "pagination",
    "policies",
    "request_id",
    "warnings",
    "status",
    "success",
}
NEGATION = re.compile(r"\b(not|cannot|can't|never|except|no longer)\b", re.I)


CREDENTIAL_FIELDS = frozenset(
    {
        "key",
        "api_key",
        "apikey",
        "api_secret",
        "secret",
        "token",
        "api_token",
        "access_token",
        "auth_token",
        "authentication_token",
    }
)
"""Body field names (snake_case) that carry a caller's credentials when most operations have one."""


def skip_reason(why: str) -> str:
    """A skip message without its particulars (names, paths, numbers), to count skips by."""
    r = re.sub(r"'[^']*'|\"[^\"]*\"", "X", why)
    r = re.sub(r"\(.*\)", "", r)
    r = re.sub(r"/\S*", "/...", r)
    r = re.sub(r"\b[A-Z]{3,7}\b(?= on)", "METHOD", r)
    r = re.sub(r"\d+", "N", r)
    r = re.sub(r"(is not an?|for its) [a-z_]+", r"\1 X", r)
    return re.sub(r"\s+", " ", r).strip()[:100]


def snake(name: str) -> str:
    """``createdAt`` / ``created-at`` / ``Created At`` -> ``created_at`` (a valid identifier)."""
    s = "_".join(words(str(name)))
    if not s:
        return "x"
    if s[0].isdigit():
        s = "n_" + s
    return s[:62]


def merge_all_of(schema: Any) -> dict[str, Any]:
    """An object schema with ``allOf`` parts merged in (properties and required)."""
    if not isinstance(schema, dict):
        return {}
    if "allOf" not in schema:
        return schema
    out = {k: v for k, v in schema.items() if k != "allOf"}
    props = dict(out.get("properties") or {})
    req = list(out.get("required") or [])
    for part in schema.get("allOf") or []:
        part = merge_all_of(part)
        props.update(part.get("properties") or {})
        req += [r for r in part.get("required") or [] if r not in req]
        for k in ("type", "description", REF_NAME):
            if k in part and k not in out:
                out[k] = part[k]
    out["properties"] = props
    out["required"] = req
    out.setdefault("type", "object")
    return out


def json_schema(schema: Any, depth: int = 0) -> dict[str, Any]:
    """OpenAPI schema -> plain JSON Schema (``nullable`` folded into ``type``, OpenAPI-only keys
    dropped)."""
    if not isinstance(schema, dict) or depth > 8:
        return {}
    schema = merge_all_of(schema)
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k in SKIP_KEYS or k.startswith("x-"):
            continue
        value = _json_keyword(schema, k, v, depth)
        if value is not _DROP:
            out[k] = value
    for k, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if schema.get(k) is True:
            out.pop(bound, None)
    _fold_type(schema, out)
    return out


_DROP = object()
""":func:`_json_keyword`'s answer for a keyword plain JSON Schema leaves out."""


def _json_keyword(schema: dict[str, Any], k: str, v: Any, depth: int) -> Any:
    """One keyword's value in plain JSON Schema: subschemas converted, OpenAPI 3.0's boolean
    ``exclusiveMinimum`` as the bound it excludes."""
    if k == "properties" and isinstance(v, dict):
        return {p: json_schema(s, depth + 1) for p, s in v.items()}
    if k == "items" or (k == "additionalProperties" and isinstance(v, dict)):
        return json_schema(v, depth + 1)
    if k in ("oneOf", "anyOf") and isinstance(v, list):
        return [json_schema(s, depth + 1) for s in v]
    if k in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(v, bool):
        bound = schema.get("minimum" if k == "exclusiveMinimum" else "maximum")
        return bound if v and isinstance(bound, (int, float)) else _DROP
    return v


def _fold_type(schema: dict[str, Any], out: dict[str, Any]) -> None:
    """``nullable`` folded into ``type`` (and ``enum``); an inferred type written out."""
    t, nullable = schema_type(schema), schema_nullable(schema)
    if nullable and t:
        out["type"] = [t, "null"]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    elif t and "type" not in out and "oneOf" not in out and "anyOf" not in out:
        out["type"] = t


def _fitting(js: dict[str, Any], t: str) -> dict[str, Any] | None:
    """A body field's schema ``js`` narrowed to what a column of type ``t`` can keep: its ``anyOf``/
    ``oneOf`` members of that type (Stripe's ``integer | ""``), or None for command words of
    another type (Stripe's ``billing_cycle_anchor: "now" | "unchanged"`` on an integer stamp).
    Anything else is kept as declared (Slack's string-encoded form fields)."""

    def fits(s: Any) -> bool:
        st = schema_type(s)
        return not st or st == t or (st, t) == ("integer", "number")

    for k in ("anyOf", "oneOf"):
        members = js.get(k)
        if isinstance(members, list) and members:
            keep = [
                m for m in members if fits(m) or (isinstance(m, dict) and m.get("type") == "null")
            ]
            if any(fits(m) and not (isinstance(m, dict) and m.get("type") == "null") for m in keep):
                return {**js, k: keep}
            return js
    return None if isinstance(js.get("enum"), list) and js["enum"] and not fits(js) else js


def json_content(holder: Any, forms: bool = False) -> tuple[bool, Any]:
    """(has JSON content, its schema) of a response or request body (``forms``: form bodies
    count)."""
    if not isinstance(holder, dict):
        return False, None
    content = holder.get("content")
    if not isinstance(content, dict) or not content:
        return False, None
    for media, body in content.items():
        if JSON_MEDIA.match(str(media)) and isinstance(body, dict):
            return True, body.get("schema")
    if forms:
        for media, body in content.items():
            if (
                FORM_MEDIA.match(str(media))
                and isinstance(body, dict)
                and isinstance(body.get("schema"), dict)
            ):
                return True, body.get("schema")
    return False, "non-json"


def unwrap(schema: Any) -> Any:
    """The object inside a single-object envelope (``{"data": {...}, "meta": ...}``), else the
    schema."""
    s = merge_all_of(schema) if isinstance(schema, dict) else None
    if not s or schema_type(s) != "object":
        return schema
    props = s.get("properties") or {}
    inner = [k for k in props if k in ENVELOPE_SINGLE]
    if len(inner) != 1 or not set(props) - set(inner) <= ENVELOPE_EXTRA:
        return schema
    body = merge_all_of(props[inner[0]])
    if isinstance(body, dict) and schema_type(body) == "object" and body.get("properties"):
        return flatten_attributes(body)
    return schema


def flatten_attributes(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON:API resource object (``{type, id, attributes: {...}}``) with its attributes lifted to
    the top."""
    props = schema.get("properties") or {}
    attrs = (
        merge_all_of(props.get("attributes")) if isinstance(props.get("attributes"), dict) else {}
    )
    if not attrs.get("properties") or "type" not in props:
        return schema
    top = {
        k: v for k, v in props.items() if k not in ("attributes", "relationships", "links", "meta")
    }
    lifted = {k: v for k, v in attrs["properties"].items() if k not in top}
    required = [r for r in schema.get("required") or [] if r in top] + [
        r for r in attrs.get("required") or [] if r in lifted
    ]
    return {**schema, "properties": {**top, **lifted}, "required": required}


SUCCESS_CODES = ("200", "201", "202", "203", "204", "2XX", "2xx", "default")
CREATED_CODES = ("201", *(c for c in SUCCESS_CODES if c != "201"))
"""A POST's success responses, best first: ``201 Created`` is what a create answers (NHS's POST
/Patient documents ``200`` for "a match was found" beside it, with an OperationOutcome)."""


def success_codes(method: str) -> tuple[str, ...]:
    """The success status codes to look for in an operation of ``method``, best first."""
    return CREATED_CODES if method.lower() == "post" else SUCCESS_CODES


def success(op: dict[str, Any], method: str = "get") -> tuple[int | None, Any]:
    """(status, schema) of an operation's success response (schema None when it has no body)."""
    responses = op.get("responses") or {}
    for code in success_codes(method):
        if code in responses:
            _has, schema = json_content(responses[code])
            status = int(code) if code.isdigit() else 200
            return status, unwrap(schema)
    for code, resp in responses.items():
        if str(code).startswith("2"):
            return 200, unwrap(json_content(resp)[1])
    return None, None


def declared_errors(op: dict[str, Any]) -> list[int]:
    return sorted(int(c) for c in (op.get("responses") or {}) if str(c).isdigit() and int(c) >= 400)


@dataclass
class Op:
    """One operation of the document, classified."""

    method: str
    path: str
    raw: dict[str, Any]
    params: list[dict[str, Any]]
    kind: str = ""
    resource: str = ""
    parents: list[tuple[str, str]] = field(default_factory=list)
    """(parent resource, path parameter) pairs, outermost first."""
    key_param: str | None = None
    word: str = ""
    """The action's word (``cancel``)."""
    rpc: bool = False
    """RPC style: the kind comes from the path's last word, the key (if any) from the body or
    query."""

    @property
    def label(self) -> str:
        return f"{self.method.upper()} {self.path}" + (
            f" ({self.raw['operationId']})" if self.raw.get("operationId") else ""
        )


@dataclass
class Resource:
    name: str
    schema: dict[str, Any] | None = None
    ref: str = ""
    fields: dict[str, dict[str, Any]] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    key: str = "id"
    prefix: str = ""
    unique: list[str] = field(default_factory=list)
    spec_names: dict[str, str] = field(default_factory=dict)


_ZERO: dict[str, Any] = {
    "string": "",
    "integer": 0,
    "number": 0.0,
    "boolean": False,
    "array": [],
    "object": {},
}
"""The zero value of each column type."""


def _stamp_kind(col: str) -> str | None:
    """The stamp a timestamp column's name says the engine fills (``created``, ``edited``,
    ``updated``), or None."""
    ws = col.split("_")
    if ws[0] in CREATED_WORDS and (ws[-1] in ("at", "on", "date", "time") or col == "created"):
        return "created"
    if ws[0] == "edited" and ws[-1] in ("at", "on"):
        return "edited"
    if ws[0] in ("updated", "modified", "last") and (
        ws[-1] in ("at", "on", "date", "time") or col in ("updated", "modified")
    ):
        return "updated"
    return None


_LEFT_OUT = "-"
"""A parameter role: understood, warned about and left out."""


def _query_schema(p: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of a query parameter, one type (not null), its description carried."""
    raw = p.get("schema")
    schema = json_schema(raw) if isinstance(raw, dict) else {"type": "string"}
    if isinstance(schema.get("type"), list):
        schema["type"] = next((t for t in schema["type"] if t != "null"), "string")
    if p.get("description"):
        schema["description"] = str(p["description"])
    return schema


class _ListParams:
    """The query parameters of one list operation, read one by one into its ``page``, ``sort``,
    ``search`` and ``filters``: each parameter's role is the first of :attr:`ROLES` that claims
    it ("" when none does; :data:`_LEFT_OUT` when one claims it and leaves it out)."""

    ROLES = ("_page", "_order", "_sort", "_search", "_field_filter", "_other_filter")

    def __init__(self, b: Builder, op: Op, res: Resource, spec: dict[str, Any]) -> None:
        self.b, self.op, self.res, self.spec = b, op, res, spec
        self.filters: dict[str, Any] = {}
        self.page: dict[str, Any] = {}
        self.sort: dict[str, Any] = {}
        self.text_fields = [
            c
            for c, f in res.fields.items()
            if f["type"] == "string"
            and not f.get("enum")
            and not f.get("ref")
            and c != res.key
            and f.get("format") not in ("date", "date-time")
            and not f.get("hidden")
        ]
        self.time_fields = [
            c
            for c, f in res.fields.items()
            if f.get("format") in ("date", "date-time") and not f.get("hidden")
        ]

    def read(self, p: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        """(argument, schema) of one query parameter, or None when it is left out."""
        pname = str(p.get("name"))
        arg = snake(pname)
        schema = _query_schema(p)
        ptype = schema.get("type", "string")
        role = ""
        for method in self.ROLES:
            role = getattr(self, method)(pname, arg, schema, ptype)
            if role:
                break
        if role == _LEFT_OUT:
            return None
        if not role:
            self.b.warn(
                f"{self.op.label}: query parameter {pname!r} is not understood and is left out"
            )
            return None
        if role == "filter" and not self._filter_fits(pname, arg, schema, ptype):
            return None
        return arg, schema

    def finish(self) -> None:
        """Write the arguments read into the operation's spec."""
        if self.filters:
            self.spec["filters"] = self.filters
        if self.page:
            if "page" in self.page and "limit" not in self.page:
                self.page["default_limit"] = self.page.get("default_limit", 20)
            self.spec["page"] = self.page
        if self.sort:
            self.sort.setdefault("fields", [])
            self.spec["sort"] = self.sort

    def _page(self, pname: str, arg: str, schema: dict[str, Any], ptype: str) -> str:
        number = ptype in ("integer", "number")
        if arg in LIMIT_NAMES and number:
            self.page["limit"] = arg
            d = schema.get("default")
            self.page["default_limit"] = int(d) if isinstance(d, (int, float)) else 20
            schema.setdefault("minimum", 1)
        elif arg in OFFSET_NAMES and number:
            self.page["offset"] = arg
            schema.setdefault("minimum", 0)
        elif arg in PAGE_NAMES and number:
            self.page["page"] = arg
            if schema.get("minimum") == 0:  # a page index (Twilio's Page), not a page number
                self.page["first"] = 0
            schema.setdefault("minimum", 1)
        elif arg in CURSOR_NAMES and ptype == "string":
            self.page["cursor"] = arg
            schema.setdefault("description", "The next_cursor from the previous page.")
        else:
            return ""
        return "page"

    def _order(self, pname: str, arg: str, schema: dict[str, Any], ptype: str) -> str:
        values = set(map(str, schema.get("enum") or ["asc", "desc"]))
        if arg in ORDER_NAMES and values <= {"asc", "desc", "ASC", "DESC"}:
            self.sort["order_arg"] = arg
            return "sort"
        return ""

    def _sort(self, pname: str, arg: str, schema: dict[str, Any], ptype: str) -> str:
        # one column name: an array of them (HubDB's sort=[...]) or an object (Apideck's
        # sort={by, direction}) is no sort the engine keeps
        if not (arg in SORT_NAMES or arg == "order") or ptype in ("array", "object"):
            return ""
        fields = self.res.fields
        allowed: list[str] = []
        for v in schema.get("enum") or []:
            c = snake(str(v).lstrip("+-"))
            if c in fields and c not in allowed:
                allowed.append(c)
        if not allowed and not schema.get("enum"):
            allowed = [
                c
                for c, f in fields.items()
                if f["type"] in ("string", "integer", "number") and not f.get("hidden")
            ]
        if not allowed:
            self.b.warn(
                f"{self.op.label}: sort parameter {pname!r} names no field of "
                f"{self.res.name!r}; it is left out"
            )
            return _LEFT_OUT
        self.sort["arg"] = arg
        self.sort["fields"] = allowed
        if schema.get("enum"):
            schema["enum"] = [
                ("-" if str(v).startswith("-") else "") + snake(str(v).lstrip("+-"))
                for v in schema["enum"]
                if snake(str(v).lstrip("+-")) in allowed
            ]
        return "sort"

    def _search(self, pname: str, arg: str, schema: dict[str, Any], ptype: str) -> str:
        if arg not in SEARCH_NAMES or ptype != "string":
            return ""
        if not self.text_fields:
            self.b.warn(
                f"{self.op.label}: search parameter {pname!r} has no text field to search; it "
                "is left out"
            )
            return _LEFT_OUT
        self.spec["search"] = {"arg": arg, "fields": self.text_fields}
        return "search"

    def _field_filter(self, pname: str, arg: str, schema: dict[str, Any], ptype: str) -> str:
        f = self.res.fields.get(arg)
        if not f or f.get("hidden") or f["type"] == "object":
            return ""
        if f["type"] == "array":
            self.b.warn(
                f"{self.op.label}: filter {pname!r} on a list field is not supported; it is "
                "left out"
            )
            return _LEFT_OUT
        self.filters[arg] = {"field": arg, "op": "in" if ptype == "array" else "eq"}
        if ptype != "array" and f.get("enum") and not schema.get("enum"):
            schema["enum"] = list(f["enum"])
        return "filter"

    def _other_filter(self, pname: str, arg: str, schema: dict[str, Any], ptype: str) -> str:
        fields = self.res.fields
        one = singular(arg)
        if (
            ptype == "array"
            and one != arg
            and one in fields
            and fields[one]["type"] in ("string", "integer")
        ):
            # Amadeus's hotelIds=[...], chainCodes=[...]: rows whose hotel_id / chain_code is
            # one of them
            self.filters[arg] = {"field": one, "op": "in"}
            return "filter"
        target = self.b._range_target(arg, self.res, self.time_fields)
        if target:
            self.filters[arg] = {"field": target[0], "op": target[1]}
        elif arg.endswith(("_contains", "_like")) and arg.rsplit("_", 1)[0] in fields:
            self.filters[arg] = {"field": arg.rsplit("_", 1)[0], "op": "contains"}
        elif arg + "_id" in fields:
            self.filters[arg] = {"field": arg + "_id", "op": "eq"}
        else:
            return ""
        return "filter"

    def _filter_fits(self, pname: str, arg: str, schema: dict[str, Any], ptype: str) -> bool:
        """False (the filter left out, warned) when the parameter's format is not the one its
        column keeps: Twilio's StartTime (date-time) on start_time (RFC 2822) matches no row."""
        field = self.res.fields.get(self.filters[arg]["field"]) or {}
        fmt = schema.get("format")
        if ptype == "string" and fmt and field.get("format") and fmt != field["format"]:
            self.b.warn(
                f"{self.op.label}: filter {pname!r} is a {fmt} but {self.res.name!r} keeps "
                f"{self.filters[arg]['field']!r} as {field['format']}; it is left out"
            )
            del self.filters[arg]
            return False
        return True


class _Envelope:
    """A list answer's envelope being read: its keys by meaning, properties, required names,
    nullable page fields and constants."""

    PAGE_TYPES = {"has_more": "boolean", "next_cursor": "string"}
    """A page field's type by meaning (any other, such as a total, is an integer)."""

    LAST_PAGE_NULL = ("next_cursor", "next_page", "next_offset")
    """Page fields that have no value on the last page."""

    def __init__(self, items: str, row: dict[str, Any], req: set[str]) -> None:
        self.req = req
        self.keys: dict[str, str] = {"items": snake(items)}
        self.props: dict[str, Any] = {snake(items): {"type": "array", "items": row}}
        self.required = [snake(items)]
        self.nullable: list[str] = []
        self.constants: dict[str, Any] = {}

    def page_field(self, p: str, ps: Any, meaning: str) -> None:
        """A field the engine fills for each page (``has_more``, a cursor, a total)."""
        col, pnull = snake(p), schema_nullable(ps)
        self.keys[meaning] = col
        want = self.PAGE_TYPES.get(meaning, "integer")
        self.props[col] = {"type": [want, "null"] if pnull else want}
        if pnull:
            self.nullable.append(meaning)
        if p in self.req and (meaning not in self.LAST_PAGE_NULL or pnull):
            self.required.append(col)
        elif p in self.req:
            raise _Skip(f"its list response requires {p!r} on every page, even the last")

    def output(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The model's output entry and the answer's JSON schema."""
        out: dict[str, Any] = {"shape": "envelope", "keys": self.keys}
        if self.nullable:
            out["nullable"] = self.nullable
        if self.constants:
            out["constants"] = self.constants
        return out, {"type": "object", "properties": self.props, "required": self.required}


@dataclass
class _ToolDraft:
    """One tool being built: its model entry and its arguments (properties, required names)."""

    spec: dict[str, Any]
    props: dict[str, Any] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)


class Builder:
    """Builds one environment's model from one resolved document."""

    def __init__(
        self, doc: dict[str, Any], name: str, seed: int = 0, seed_rows: int = 8, max_tools: int = 0
    ) -> None:
        self.doc = doc
        self.max_tools = max_tools
        self.operations = 0
        """Operations in the document (path + method pairs)."""
        self.credentials: set[str] = set()
        """Body fields that carry the caller's credentials (see :meth:`_body_credentials`)."""
        self.skipped: Counter[str] = Counter()
        """Operations made into no tool, counted by reason (the reason without its particulars)."""
        self.name = name
        self.seed = seed
        self.rows_per_resource = max(1, seed_rows)
        self.warnings: list[str] = []
        self.ops: list[Op] = []
        self.resources: dict[str, Resource] = {}
        self.components = (
            ((doc.get("components") or {}).get("schemas") or {})
            if isinstance(doc.get("components"), dict)
            else {}
        )

    def warn(self, text: str) -> None:
        self.warnings.append(f"{self.name}: {text}")

    def skip(self, label: str, why: str) -> None:
        """An operation made into no tool: a warning naming it, and a count under its reason."""
        self.warn(f"skipped {label}: {why}")
        self.skipped[skip_reason(why)] += 1

    # ----------------------------------------------------------------- classify

    def classify(self) -> None:
        """Every operation of the document classified (:meth:`_classify`); those that can be no
        tool (a dangling ``$ref`` among them) are skipped with their reason."""
        paths = self.doc.get("paths") or {}
        self.prefixes: set[str] = _shared_prefixes(paths)
        memo: dict[int, tuple[str, ...]] = {}
        self.credentials = self._body_credentials(paths)
        for path, item in paths.items():
            common = [p for p in item.get("parameters") or [] if isinstance(p, dict)]
            for method in (m for m in METHODS if m in item):
                raw = item[method]
                params = {(p.get("name"), p.get("in")): p for p in common}
                for p in raw.get("parameters") or []:
                    params[(p.get("name"), p.get("in"))] = p
                op = Op(method=method, path=path, raw=raw, params=list(params.values()))
                self.operations += 1
                dangling = unresolved_refs(raw, memo) + unresolved_refs(common, memo)
                why = dangling[0] if dangling else self._classify(op)
                if why:
                    self.skip(op.label, why)
                else:
                    self.ops.append(op)

    def _classify(self, op: Op) -> str:
        """Set the operation's kind, resource, key and parents from its path and method; the
        reason it can be no tool, or ``""``."""
        if op.method not in ("get", "post", "put", "patch", "delete"):
            return f"{op.method.upper()} operations are not supported"
        if op.raw.get("deprecated"):
            return "it is deprecated"
        segs = [
            s.removesuffix(".json") for s in str(op.path).strip("/").split("/") if s
        ]  # Twilio's /Calls.json
        pairs = self._pairs(self._lead(op, segs))
        if isinstance(pairs, str):
            return pairs
        pairs = self._trim_pairs(pairs)
        if not pairs:
            return "the root path is not a resource"
        if pairs[-1][1] is not None:
            return self._item_op(op, pairs)
        if len(pairs) >= 2 and pairs[-2][1] is not None:
            if self._is_action(op, pairs[-1][0], pairs[-2][0]):
                return self._action_op(op, pairs)
        rpc = self._rpc(op, pairs)
        if rpc is not None:
            return rpc
        return self._collection_op(op, pairs)

    def _pairs(self, segs: list[str]) -> list[tuple[str, str | None]] | str:
        """A path's segments as (collection, its parameter or None) pairs, or why they cannot
        be (``/documents.list`` is ``/documents/list``)."""
        pairs: list[tuple[str, str | None]] = []
        i = 0
        while i < len(segs):
            s = segs[i]
            if s.startswith("{"):
                return "a path parameter that does not follow a collection name"
            if not re.fullmatch(r"[A-Za-z0-9_.\-]+", s):
                return f"path segment {s!r} is not supported"
            if i == len(segs) - 1 and "." in s.strip(".") and not s.endswith(".json"):
                head, _dot, verb = s.rpartition(".")
                if snake(verb) in RPC_VERBS or self._rpc_word(snake(verb)):
                    segs[i:] = [head, verb]  # /documents.list -> /documents/list
                    s = head
            nxt = segs[i + 1] if i + 1 < len(segs) else None
            if nxt is not None and nxt.startswith("{") and nxt.endswith("}"):
                pairs.append((snake(s), nxt[1:-1]))
                i += 2
            else:
                pairs.append((snake(s), None))
                i += 1
        return pairs

    def _trim_pairs(self, pairs: list[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
        """Without a trailing ``/by-city`` (a way to look the collection up: Amadeus's
        ``/hotels/by-city``) and without leading prefixes (literals every path shares, or like
        ``/api`` and ``/v1``)."""
        while (
            len(pairs) > 1
            and pairs[-1][1] is None
            and pairs[-1][0].startswith("by_")
            and pairs[-2][1] is None
        ):
            pairs.pop()
        while (
            len(pairs) > 1
            and pairs[0][1] is None
            and (pairs[0][0] in self.prefixes or re.fullmatch(r"api|rest|v\d+(_\d+)*", pairs[0][0]))
        ):
            pairs.pop(0)
        return pairs

    ITEM_KINDS = {"get": "get", "put": "update", "patch": "patch", "delete": "delete"}
    """An operation on ``/things/{id}``, by its method."""

    def _item_op(self, op: Op, pairs: list[tuple[str, str | None]]) -> str:
        """``/things/{id}``: a get, update, patch or delete of one item."""
        last, param = pairs[-1]
        op.kind = self.ITEM_KINDS.get(op.method, "")
        if op.method == "post" and op.raw.get("requestBody") is not None:
            op.kind = "patch"  # Stripe's and Xero's POST /customers/{id}: a partial update
        if not op.kind:
            return (
                f"{op.method.upper()} on a single item is not supported (use an action path "
                f"like /{last}/{{id}}/cancel)"
            )
        op.resource, op.key_param = last, param
        op.parents = [(r, p) for r, p in pairs[:-1] if p is not None]
        return ""

    def _action_op(self, op: Op, pairs: list[tuple[str, str | None]]) -> str:
        """``/things/{id}/cancel``: an action on one item."""
        last = pairs[-1][0]
        if op.method not in ("post", "put", "patch"):
            return (
                f"{op.method.upper()} on /{last} under an item is not supported (only "
                f"actions like POST .../{last})"
            )
        op.kind, op.word = "action", last
        op.resource, op.key_param = pairs[-2]
        op.parents = [(r, p) for r, p in pairs[:-2] if p is not None]
        return ""

    def _collection_op(self, op: Op, pairs: list[tuple[str, str | None]]) -> str:
        """``/things``: a list or a create (or a get by a query id)."""
        last = pairs[-1][0]
        # a literal before the collection that the answer's schema names with it is part of its name
        # (Kratos's /self-service/recovery/flows answers a recoveryFlow: recovery_flows, not flows)
        if (
            len(pairs) >= 2
            and pairs[-2][1] is None
            and self._answer_name(op) == singular(f"{pairs[-2][0]}_{last}")
        ):
            last = f"{pairs[-2][0]}_{last}"
            pairs[-2:] = [(last, None)]
        # literals before the resource name are namespaces or owners (/me/albums, /admin/identities,
        # /v1/a2p/brands, /users/{id}/repos keeps its parent): the resource is the last collection
        pairs = [pr for k, pr in enumerate(pairs) if pr[1] is not None or k == len(pairs) - 1]
        op.kind = {"get": "list", "post": "create"}.get(op.method, "")
        if not op.kind:
            return f"{op.method.upper()} on a whole collection is not supported"
        op.resource = last
        key = self._query_key(op) if op.method == "get" else None
        if key is not None:  # Kratos's GET /self-service/recovery/flows?id=...: one item, by query
            op.kind, op.key_param, op.rpc = "get", key, True
        op.parents = [(r, p) for r, p in pairs[:-1] if p is not None]
        return ""

    def _body_credentials(self, paths: dict[str, Any]) -> set[str]:
        """Request-body fields that carry the caller's credentials, not data (Mandrill's ``key``).

        A field named like a key or token (``key``, ``api_key``, ``token``, ``api_secret``) that at
        least three operations and half of those with a JSON object body carry is auth: it is left
        out of every tool and is never an item's id.
        """
        counts: Counter[str] = Counter()
        bodies = 0
        for item in paths.values():
            for method in METHODS:
                raw = item.get(method) if isinstance(item, dict) else None
                if not isinstance(raw, dict) or not isinstance(raw.get("requestBody"), dict):
                    continue
                has, schema = json_content(raw["requestBody"], forms=True)
                schema = merge_all_of(unwrap(schema)) if has and isinstance(schema, dict) else None
                if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
                    continue
                bodies += 1
                counts.update(
                    str(k) for k in schema["properties"] if snake(str(k)) in CREDENTIAL_FIELDS
                )
        found = {k for k, n in counts.items() if n >= 3 and 2 * n >= bodies}
        if found:
            self.warn(
                f"body field(s) {', '.join(repr(k) for k in sorted(found))} carry the caller's "
                "credentials in most operations: auth, not data; they are left out of the tools"
            )
        return found

    def _lead(self, op: Op, segs: list[str]) -> list[str]:
        """The path's segments with a leading path parameter (or none at all) made sense of.

        A leading ``{apiVersion}`` (a parameter named like a version, or whose values are all
        versions: ``v2``, ``2024-01-01``) is a version prefix, not a resource: it is dropped. Any
        other leading parameter follows the last literal segment of the server URL (Vonage's
        ``https://api.nexmo.com/accounts`` + ``/{api_key}/subaccounts``): that segment is the
        collection it keys, and the root path ``/`` is that collection.
        """
        if not segs:  # GET / on https://api.nexmo.com/beta/chatapp-accounts lists the accounts
            base = self._server_segment(op)
            return [base] if base else segs
        while segs and segs[0].startswith("{") and segs[0].endswith("}"):
            name = segs[0][1:-1]
            param = next((p for p in op.params if p.get("name") == name), {})
            pschema = param.get("schema") if isinstance(param.get("schema"), dict) else {}
            values = [
                str(v)
                for v in [*(pschema.get("enum") or []), pschema.get("default")]
                if v is not None
            ]
            version = re.compile(
                r"v?\d+(\.\d+)*([-_.]?(alpha|beta|preview)\d*)?|\d{4}-\d{2}(-\d{2})?"
            )
            if snake(name) in ("version", "api_version", "v", "ver") or (
                values and all(version.fullmatch(v) for v in values)
            ):
                segs = segs[1:]
                continue
            base = self._server_segment(op)
            return [base, *segs] if base else segs
        return segs

    def _server_segment(self, op: Op) -> str:
        """The last literal segment of the operation's (or the document's) first server URL."""
        servers = op.raw.get("servers") or self.doc.get("servers") or []
        url = (
            str((servers[0] or {}).get("url") or "")
            if isinstance(servers, list) and servers and isinstance(servers[0], dict)
            else ""
        )
        path = re.sub(r"^[a-z]+://[^/]*", "", url)
        segs = [x for x in path.split("/") if x]
        last = segs[-1] if segs else ""
        if not last or "{" in last or re.fullmatch(r"api|rest|v\d+(\.\d+)*", last):
            return ""
        return last

    @staticmethod
    def _rpc_word(word: str) -> bool:
        return word in ACTION_TARGETS or word in FLAG_ACTIONS or word in UNFLAG_ACTIONS

    def _rpc(self, op: Op, pairs: list[tuple[str, str | None]]) -> str | None:
        """Classify an RPC-style operation (``POST /documents.info``); None when it is not one."""
        last, param = pairs[-1]
        if param is not None or len(pairs) < 2 or pairs[-2][1] is not None:
            return None
        kind = RPC_VERBS.get(last)
        if kind is None and not (self._rpc_word(last) and op.method == "post"):
            return None
        op.rpc = True
        op.resource = pairs[-2][0]
        op.parents = [(r, p) for r, p in pairs[:-2] if p is not None]
        if kind is None:
            op.kind, op.word = "action", last
        else:
            op.kind = kind
        if op.kind in ("get", "patch", "delete", "action"):
            key = self._rpc_key(op)
            if key is None:
                if op.kind == "patch" and op.method == "post":
                    op.kind = "create"  # /x.set with no id: it writes a new one
                    return ""
                return f"RPC {last!r} names no id argument for its {op.resource}"
            op.key_param = key
        return ""

    def _rpc_key(self, op: Op) -> str | None:
        """The body or query argument naming the item of an RPC call (``id``, ``documentId``)."""
        cands: list[tuple[str, bool]] = [
            (str(p.get("name")), bool(p.get("required")))
            for p in op.params
            if p.get("in") == "query"
        ]
        body = self._body_schema(op)
        if isinstance(body, dict):
            req = set(body.get("required") or [])
            cands += [
                (str(k), k in req)
                for k in body.get("properties") or {}
                if str(k) not in self.credentials
            ]
        one = singular(op.resource)
        for want in ("id", f"{one}_id", f"{one}_gid", "gid", "uid", "sid", "key", "name"):
            for name, _req in cands:
                if snake(name) == want:
                    return name
        ids = [n for n, r in cands if r and snake(n).endswith("_id")]
        if len(ids) == 1:
            return ids[0]
        # the one argument a call requires names its item when it is a natural key (Mandrill's
        # POST /tags/delete {tag}, /allowlists/delete {email}, /ips/info {ip})
        required = [n for n, r in cands if r]
        natural = {"email", "address", "domain", "ip", "tag", "slug", "handle", "username", one}
        if len(required) == 1 and snake(required[0]) in natural:
            return required[0]
        return None

    def _answer_name(self, op: Op) -> str:
        """The snake_case component name of an operation's answer (or of its array's items), or
        ""."""
        _status, schema = success(op.raw, op.method)
        s = merge_all_of(schema) if isinstance(schema, dict) else {}
        if schema_type(s) == "array":
            s = merge_all_of(s.get("items"))
        return snake(str(s.get(REF_NAME) or ""))

    def _query_key(self, op: Op) -> str | None:
        """The required query parameter (``id``, ``<item>_id``) of a GET on a collection path that
        answers with one item carrying that field (not a list of them), else None."""
        one = singular(op.resource)
        names = [
            str(p.get("name")) for p in op.params if p.get("in") == "query" and p.get("required")
        ]
        key = next((n for n in names if snake(n) in ("id", f"{one}_id")), None)
        _status, schema = success(op.raw, op.method)
        s = merge_all_of(schema) if isinstance(schema, dict) else {}
        props = {snake(k) for k in s.get("properties") or {}}
        if key is None or schema_type(s) != "object" or "id" not in props or props & set(ITEM_KEYS):
            return None
        return key

    def _is_action(self, op: Op, word: str, parent: str) -> bool:
        if word in ACTION_TARGETS or word in FLAG_ACTIONS or word in UNFLAG_ACTIONS:
            return True
        if word.startswith(("mark_", "un")):
            return True
        _status, schema = success(op.raw, op.method)
        s = merge_all_of(schema) if isinstance(schema, dict) else {}
        ref = s.get(REF_NAME)
        return bool(ref) and snake(str(ref)) in (singular(parent), parent) and op.method == "post"

    # ----------------------------------------------------------------- resources

    def resource_schemas(self) -> None:
        """Each resource's schema: the first named object its operations answer with, else any
        (a single object before a list's item), its component, its create's body, or a bare
        id and name."""
        for op in self.ops:
            self.resources.setdefault(op.resource, Resource(op.resource))
            for parent, _p in op.parents:
                self.resources.setdefault(parent, Resource(parent))
        for res in self.resources.values():
            pick = self._answered_schema(res)
            if pick is None:
                pick = self._component_for(res.name)
            if pick is None:
                pick = self._create_body_schema(res)
            if pick is None:
                pick = {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "readOnly": True},
                        "name": {"type": "string"},
                    },
                    "required": ["id", "name"],
                }
                if any(o.resource == res.name for o in self.ops):
                    self.warn(
                        f"resource {res.name!r} has no schema in any response; it gets only "
                        "an id and a name"
                    )
            res.schema = merge_all_of(pick)
            res.ref = str(res.schema.get(REF_NAME) or "")

    def _answered_schema(self, res: Resource) -> dict[str, Any] | None:
        """The object a resource's operations answer with: a named one first; an unnamed list
        item may be a wrapper (a FHIR bundle's ``{fullUrl, resource}``), so a single object a get
        or create answers with comes before it."""
        cands: list[dict[str, Any]] = []
        listed: list[dict[str, Any]] = []
        for op in self.ops:
            if op.resource != res.name:
                continue
            _status, schema = success(op.raw, op.method)
            s = merge_all_of(schema) if isinstance(schema, dict) else None
            if not s:
                continue
            if op.kind in ITEM_ANSWERS and schema_type(s) == "object" and s.get("properties"):
                cands.append(s)
            elif op.kind == "list" and (items := self._list_items(s)) is not None:
                cands.append(items)
                listed.append(items)
        named = [c for c in cands if c.get(REF_NAME)]
        if named:
            return named[0]
        return next(iter(sorted(cands, key=lambda c: any(c is x for x in listed))), None)

    def _create_body_schema(self, res: Resource) -> dict[str, Any] | None:
        """A resource's first create's request body, when it declares properties."""
        body = next(
            (
                self._body_schema(op)
                for op in self.ops
                if op.resource == res.name and op.kind == "create"
            ),
            None,
        )
        return body if isinstance(body, dict) and body.get("properties") else None

    def _component_for(self, name: str) -> dict[str, Any] | None:
        targets = {singular(name), name}
        for cname, schema in self.components.items():
            if snake(cname) in targets and isinstance(schema, dict):
                return merge_all_of(dict(schema, **{REF_NAME: cname}))
        return None

    def _list_items(self, s: dict[str, Any]) -> dict[str, Any] | None:
        t = schema_type(s)
        if t == "array":
            items = merge_all_of(s.get("items"))
            return flatten_attributes(items) if items.get("properties") else None
        if t == "object":
            prop = self._items_prop(s)
            if prop:
                items = merge_all_of((s.get("properties") or {})[prop].get("items"))
                return flatten_attributes(items) if items.get("properties") else None
        return None

    @staticmethod
    def _items_prop(s: dict[str, Any]) -> str | None:
        props = s.get("properties") or {}
        arrays = [
            p for p, ps in props.items() if isinstance(ps, dict) and schema_type(ps) == "array"
        ]
        for k in ITEM_KEYS:
            for p in arrays:
                if snake(p) == k:
                    return p
        if (
            "id" in props
        ):  # an item with a list inside (Kratos's flow and its messages), not an envelope
            return None
        rows = [p for p in arrays if (merge_all_of(props[p].get("items")) or {}).get("properties")]
        if (
            len(rows) == 1
        ):  # one array of objects beside arrays of strings (SCIM's Resources beside its schemas)
            return rows[0]
        return arrays[0] if len(arrays) == 1 else None

    def fields(self) -> None:
        """Columns of every resource, its key, its foreign keys and its unique fields."""
        names = set(self.resources)
        for res in self.resources.values():
            self._columns(res)
            self._foreign_keys(res, names)
        for res in self.resources.values():
            self._key(res)
        for res in self.resources.values():
            self._drop_misfit_refs(res)
        self._nested_parents()
        self._prefixes()

    def _columns(self, res: Resource) -> None:
        """A resource's columns from its schema's properties (two properties of one snake name:
        the second is dropped)."""
        schema = res.schema or {}
        req = set(schema.get("required") or [])
        for pname, ps in (schema.get("properties") or {}).items():
            col = snake(pname)
            if col in res.fields:
                self.warn(
                    f"resource {res.name!r}: fields {res.spec_names[col]!r} and "
                    f"{pname!r} both become {col!r}; {pname!r} is dropped"
                )
                continue
            res.fields[col] = _column(merge_all_of(ps) if isinstance(ps, dict) else {})
            res.spec_names[col] = pname
            if pname in req:
                res.required.append(col)

    def _foreign_keys(self, res: Resource, names: set[str]) -> None:
        """A ``<thing>_id`` column refers to the resource it names (a role such as ``owner_id``,
        to the people)."""
        for col, info in res.fields.items():
            ws = col.split("_")
            if len(ws) < 2 or ws[-1] != "id" or info["type"] not in ("string", "integer"):
                continue
            ent = "_".join(ws[:-1])
            target = self._match(ent, names)
            if target is None and ent.split("_")[-1] in ROLE_NOUNS:
                target = next((n for n in PEOPLE if n in names), None)
            if target and target != res.name:
                info["ref"] = target

    def _drop_misfit_refs(self, res: Resource) -> None:
        """A reference must have the type and the shape of the key it refers to: one whose
        pattern or format is not the key's (Amadeus's hotelId ``^[A-Z0-9]{8}$``) is none."""
        for info in res.fields.values():
            target = self.resources.get(info.get("ref") or "")
            if target is None:
                continue
            key = target.fields[target.key]
            if info["type"] != key["type"] or any(
                info.get(k) is not None and info.get(k) != key.get(k) for k in KEY_SHAPE
            ):
                del info["ref"]

    def _nested_parents(self) -> None:
        """A nested path's parents are references of its resource (a hidden column when its
        schema has none)."""
        for op in self.ops:
            res = self.resources[op.resource]
            for parent, param in op.parents:
                col = self._parent_col(res, parent, param)
                info = res.fields.get(col)
                if info is None:
                    pres = self.resources[parent]
                    res.fields[col] = {
                        "type": pres.fields[pres.key]["type"],
                        "ref": parent,
                        "hidden": True,
                        "parent": True,
                    }
                else:
                    info["ref"] = parent
                    info["parent"] = True

    def _prefixes(self) -> None:
        """Each resource's id prefix: the shortest of its name's short forms not yet taken."""
        prefixes: set[str] = set()
        for res in self.resources.values():
            base = re.sub(r"[^a-z]", "", singular(res.name)) or "row"
            cons = base[0] + re.sub(r"[aeiou]", "", base[1:])
            cands = (base[:3], cons[:3], base[:4], cons[:4], base)
            res.prefix = next(
                (c for c in cands if len(c) >= 2 and c not in prefixes),
                f"{base[:3]}{len(prefixes)}",
            )
            prefixes.add(res.prefix)

    def _match(self, ent: str, names: set[str]) -> str | None:
        parts = ent.split("_")
        for k in range(len(parts)):  # from_account -> accounts
            tail = "_".join(parts[k:])
            for cand in (tail, plural(tail), singular(tail)):
                if cand in names:
                    return cand
        # several resources may end so (Slack's chat_scheduled_messages, ...): the shortest, then
        # the first
        # by name, so that the choice does not depend on the set's order (PYTHONHASHSEED)
        ends = [n for n in names if n.endswith("_" + plural(ent)) or n.endswith("_" + ent)]
        return min(ends, key=lambda n: (len(n), n)) if ends else None

    def _parent_col(self, res: Resource, parent: str, param: str) -> str:
        p = snake(param)
        own = singular(parent) + "_id"
        if p != "id" and p in res.fields and p != res.key:
            return p
        return own

    def _key(self, res: Resource) -> None:
        """A resource's key column: the first key parameter naming one of its columns, else
        ``id`` (or ``<thing>_id``); an ``id`` column is added when it has none."""
        params = [
            snake(op.key_param) for op in self.ops if op.resource == res.name and op.key_param
        ]
        key = next((k for p in params if (k := self._key_named(res, p))), None)
        if key is None:
            key = (
                "id"
                if "id" in res.fields
                else next((c for c in res.fields if c == singular(res.name) + "_id"), None)
            )
        if key is None:
            res.fields = {"id": {"type": "string", "read_only": True}, **res.fields}
            res.required.insert(0, "id")
            key = "id"
        res.key = key
        info = res.fields[key]
        info.pop("ref", None)
        if info["type"] not in ("string", "integer"):
            info["type"] = "string"
        if not any(info.get(k) is not None for k in KEY_SHAPE):
            self._key_shape(res, info)
        if key not in res.required:
            res.required.append(key)

    @staticmethod
    def _key_named(res: Resource, p: str) -> str | None:
        """The column a key parameter names: itself, itself without the resource's name
        (``allocation_gid`` -> ``gid``, ``account_sid`` -> ``sid``), or ``id`` for an id-like
        one; never a reference."""
        if p in res.fields and p != "id" and not res.fields[p].get("ref"):
            return p
        short = p.removeprefix(singular(res.name) + "_")
        if (
            short != p
            and short in res.fields
            and short != "id"
            and not res.fields[short].get("ref")
        ):
            return short
        if (p == "id" or p.endswith("_id")) and "id" in res.fields:
            return "id"
        return None

    def _key_shape(self, res: Resource, info: dict[str, Any]) -> None:
        """A key with no pattern or format of its own takes those of the path parameters that
        name it (Discord's ``{user_id}`` snowflakes ``^(0|[1-9][0-9]*)$``), so its seed and new
        keys are what the API's own parameters accept."""
        for op in self.ops:
            names = ([op.key_param] if op.resource == res.name and op.key_param else []) + [
                pp for r, pp in op.parents if r == res.name
            ]
            for name in names:
                p = next(
                    (p for p in op.params if p.get("name") == name and p.get("in") == "path"), None
                )
                js = json_schema(p.get("schema")) if p and isinstance(p.get("schema"), dict) else {}
                shape = {
                    k: js[k]
                    for k in KEY_SHAPE
                    if k in js
                    and not (k == "format" and js[k] == "uuid" and info["type"] != "string")
                }
                if shape and js.get("type", info["type"]) == info["type"]:
                    info.update(shape)
                    return

    # ----------------------------------------------------------------- operations

    def _body_schema(self, op: Op) -> Any:
        body = op.raw.get("requestBody")
        if body is None:
            return None
        has, schema = json_content(body, forms=True)
        if not has:
            return "non-json"
        return (
            merge_all_of(unwrap(schema)) if isinstance(schema, dict) else schema
        )  # Asana's {"data": {...}} bodies

    def build_ops(self) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
        ops: dict[str, dict[str, Any]] = {}
        tools: list[dict[str, Any]] = []
        used: set[str] = set()
        put_paths = {o.path for o in self.ops if o.method == "put"}
        for op in self.ops:
            res = self.resources[op.resource]
            try:
                spec_op, tool = self._op(op, res, put_paths)
            except _Skip as exc:
                self.skip(op.label, str(exc))
                continue
            name = tool["name"]
            n = 2
            while name in used:
                name = f"{tool['name'][:58]}_{n}"
                n += 1
            used.add(name)
            tool["name"] = name
            ops[name] = spec_op
            tools.append(tool)
        return ops, tools

    def _tool_name(self, op: Op, res: Resource, put_paths: set[str]) -> str:
        oid = op.raw.get("operationId")
        if isinstance(oid, str) and oid.strip():
            n = snake(oid)
            if IDENT.match(n):
                return n[:63].rstrip("_")
        sing = singular(res.name)
        parent = singular(op.parents[-1][0]) + "_" if op.parents else ""
        if op.kind == "list":
            return f"list_{parent}{res.name}"
        if op.kind == "create":
            return f"create_{parent}{sing}"
        if op.kind == "patch":
            return f"{'patch' if op.path in put_paths else 'update'}_{sing}"
        if op.kind == "action":
            return f"{op.word}_{sing}"
        return f"{op.kind}_{sing}"

    def _op(
        self, op: Op, res: Resource, put_paths: set[str]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """One operation's model entry and tool: its arguments, then its output, then its words."""
        t = _ToolDraft(
            spec={
                "kind": op.kind,
                "resource": res.name,
                "method": op.method.upper(),
                "path": op.path,
                "errors": declared_errors(op.raw),
            }
        )
        self._path_args(op, res, t)
        self._check_params(op)
        queries = self._queries(op)
        if op.kind == "list":
            self._list_params(op, res, t.spec, t.props, t.required, queries)
        else:
            for p in queries:
                self.warn(
                    f"{op.label}: query parameter {p.get('name')!r} is not understood on a "
                    f"{op.kind} operation and is left out"
                )
        if op.kind in ("create", "update", "patch", "action"):
            self._body(op, res, t.spec, t.props, t.required)
        elif op.raw.get("requestBody") is not None and not op.rpc:
            self.warn(f"{op.label}: its request body is ignored")
        if op.kind == "action":
            t.spec["transition"] = self._transition(op, res)
        if (
            op.kind == "create"
            and not any(c == res.key for c in (t.spec.get("body") or {}).values())
            and res.fields[res.key].get("type") not in ("string", "integer")
        ):
            raise _Skip("its resource has no key the engine can generate")
        status, schema = success(op.raw, op.method)
        if status is None:
            raise _Skip("it declares no success response")
        output = {"list": self._list_out, "delete": self._delete_out}.get(op.kind, self._row_out)
        returns = output(op, res, schema, t)
        params = {
            "type": "object",
            "properties": t.props,
            "required": t.required,
            "additionalProperties": False,
        }
        t.spec["parameters"] = params
        text = self._op_text(op)
        t.spec["summary"] = text
        tool = {
            "name": self._tool_name(op, res, put_paths),
            "description": text,
            "parameters": params,
            "returns": returns,
            "mutates": op.kind not in ("get", "list"),
        }
        return t.spec, tool

    def _path_args(self, op: Op, res: Resource, t: _ToolDraft) -> None:
        """The arguments the path carries: each parent's key, then the item's own key."""
        parents = []
        for parent, param in op.parents:
            pres = self.resources[parent]
            arg = snake(param)
            if arg in ("id", "gid", "uid", "key"):  # /lists/{id}/tags: the argument names whose id
                arg = f"{singular(parent)}_{arg}"
            col = self._parent_col(res, parent, param)
            parents.append({"arg": arg, "resource": parent, "field": col})
            t.props[arg] = self._param_schema(
                op,
                param,
                "path",
                pres.fields[pres.key],
                f"The {singular(parent).replace('_', ' ')}'s {pres.key.replace('_', ' ')}.",
            )
            t.required.append(arg)
        if parents:
            t.spec["parents"] = parents
        if not op.key_param:
            return
        arg = snake(op.key_param)
        if arg in t.props:
            raise _Skip(f"path parameter {op.key_param!r} appears twice")
        t.spec["key"] = arg
        t.props[arg] = self._param_schema(
            op,
            op.key_param,
            self._key_place(op),
            res.fields[res.key],
            f"The {singular(res.name).replace('_', ' ')}'s {res.key.replace('_', ' ')}.",
        )
        t.required.append(arg)

    @staticmethod
    def _key_place(op: Op) -> str:
        """Where an operation's key argument travels: the path, or an RPC call's query or body."""
        if not op.rpc:
            return "path"
        in_query = any(p.get("name") == op.key_param and p.get("in") == "query" for p in op.params)
        return "query" if in_query else "body"

    def _check_params(self, op: Op) -> None:
        """Path parameters that are not the path's are a skip; required headers, a warning."""
        in_path = {pp for _r, pp in op.parents} | {op.key_param}
        for p in op.params:
            if p.get("in") == "path" and p.get("name") not in in_path:
                raise _Skip(f"path parameter {p.get('name')!r} is not part of the path")
            if p.get("in") == "header" and p.get("required"):
                self.warn(f"{op.label}: required header {p.get('name')!r} is ignored")

    def _queries(self, op: Op) -> list[dict[str, Any]]:
        """The operation's query parameters (an RPC list's body fields count as such)."""
        queries = [
            p
            for p in op.params
            if p.get("in") == "query" and not (op.rpc and p.get("name") == op.key_param)
        ]
        if not (op.rpc and op.kind == "list"):
            return queries
        body = self._body_schema(op)  # the body of POST /x.list holds what a query string would
        if isinstance(body, dict):
            req = set(body.get("required") or [])
            queries += [
                {
                    "name": k,
                    "in": "query",
                    "schema": v,
                    "required": k in req,
                    "description": (v or {}).get("description"),
                }
                for k, v in (body.get("properties") or {}).items()
                if isinstance(v, dict)
            ]
        return queries

    def _list_out(self, op: Op, res: Resource, schema: Any, t: _ToolDraft) -> dict[str, Any]:
        """A list's output; a cursor argument whose answer gives no cursor back is left out."""
        t.spec["output"], returns = self._list_output(op, res, schema)
        cursor = (t.spec.get("page") or {}).get("cursor")
        if cursor and "next_cursor" not in (t.spec["output"].get("keys") or {}):
            # the answer carries no cursor to pass back (Twilio's is inside meta.next_page_url)
            self.warn(
                f"{op.label}: cursor parameter {cursor!r} is left out: its list response "
                "gives no cursor to pass"
            )
            del t.spec["page"]["cursor"]
            t.props.pop(cursor, None)
            if cursor in t.required:
                t.required.remove(cursor)
        return returns

    def _delete_out(self, op: Op, res: Resource, schema: Any, t: _ToolDraft) -> dict[str, Any]:
        """A delete answers the row it removed when its schema is the resource's, else a flag."""
        if isinstance(schema, dict) and self._is_resource(schema, res):
            t.spec["output"] = {"shape": "row"}
            return self.row_schema(res)
        t.spec["output"] = {"shape": "deleted"}
        return {
            "type": "object",
            "properties": {
                "deleted": {"type": "boolean"},
                res.key: json_schema(self._field_schema(res.fields[res.key])),
            },
            "required": ["deleted", res.key],
        }

    def _row_out(self, op: Op, res: Resource, schema: Any, t: _ToolDraft) -> dict[str, Any]:
        """Any other operation answers the row it touched, if its declared answer is that row."""
        if schema == "non-json":
            raise _Skip("its success response is not JSON")
        if isinstance(schema, dict) and schema and not self._is_resource(schema, res):
            raise _Skip(
                f"its response is not a {singular(res.name)} (the engine answers with "
                f"the {singular(res.name)} it touched)"
            )
        t.spec["output"] = {"shape": "row"}
        return self.row_schema(res)

    @staticmethod
    def _op_text(op: Op) -> str:
        """The tool's description: the summary, then the description when it says more."""
        summary = str(op.raw.get("summary") or "").strip()
        desc = str(op.raw.get("description") or "").strip()
        text = summary
        if desc and desc not in summary:
            text = f"{summary.rstrip('.')}. {desc}" if summary else desc
        return text or f"{op.method.upper()} {op.path}"

    def _param_schema(
        self, op: Op, name: str, where: str, fallback: dict[str, Any], desc: str
    ) -> dict[str, Any]:
        p = next((p for p in op.params if p.get("name") == name and p.get("in") == where), None)
        s = json_schema(p.get("schema")) if p and isinstance(p.get("schema"), dict) else {}
        if not s:
            s = {"type": fallback.get("type", "string")}
        if isinstance(s.get("type"), list):
            s["type"] = next((t for t in s["type"] if t != "null"), "string")
        if s.get("type") != fallback.get(
            "type", s.get("type")
        ):  # Intercom's integer {article_id} of a string id: the key's type wins
            s = {"type": fallback["type"]}
        s.pop("format", None) if s.get("format") == "uuid" else None
        d = (p or {}).get("description") or s.get("description") or desc
        s["description"] = str(d)
        return s

    def _field_schema(self, info: dict[str, Any]) -> dict[str, Any]:
        s: dict[str, Any] = {"type": info["type"]}
        for k in (
            "format",
            "enum",
            "minimum",
            "maximum",
            "minLength",
            "maxLength",
            "pattern",
            "items",
            "description",
        ):
            if k in info:
                s[k] = info[k]
        if s.get("format") == "uuid":
            del s["format"]
        if info.get("nullable"):
            s["type"] = [info["type"], "null"]
            if "enum" in s:
                s["enum"] = [*s["enum"], None]
        if info["type"] == "object" and "items" in s:
            del s["items"]
        if "items" in s:
            s["items"] = json_schema(s["items"])
        return s

    def row_schema(self, res: Resource) -> dict[str, Any]:
        """The JSON Schema of a row as the engine shows it."""
        props = {
            c: json_schema(self._field_schema(f))
            for c, f in res.fields.items()
            if not f.get("hidden")
        }
        req = [c for c in res.required if c in props]
        return {"type": "object", "properties": props, "required": req}

    def _is_resource(self, schema: Any, res: Resource) -> bool:
        s = merge_all_of(schema) if isinstance(schema, dict) else {}
        if res.ref and s.get(REF_NAME) == res.ref:
            return True
        props = {snake(p) for p in s.get("properties") or {}}
        if not props:
            return False
        return len(props & set(res.fields)) >= max(1, int(0.6 * len(props)))

    def _list_params(
        self,
        op: Op,
        res: Resource,
        spec: dict[str, Any],
        props: dict[str, Any],
        required: list[str],
        queries: list[dict[str, Any]],
    ) -> None:
        """A list operation's query parameters as page, sort, search and filter arguments (see
        :class:`_ListParams`); the ones not understood are left out with a warning."""
        lp = _ListParams(self, op, res, spec)
        for p in queries:
            got = lp.read(p)
            if got is not None:
                props[got[0]] = got[1]
                if p.get("required"):
                    required.append(got[0])
        lp.finish()

    def _range_target(
        self, arg: str, res: Resource, time_fields: list[str]
    ) -> tuple[str, str] | None:
        for suffixes, opname in ((GTE_SUFFIX, "gte"), (LTE_SUFFIX, "lte")):
            for suf in suffixes:
                if arg.endswith(suf):
                    base = arg[: -len(suf)]
                    for cand in (base, base + "_at", base + "_date", base + "_time"):
                        if cand in res.fields and res.fields[cand]["type"] in (
                            "string",
                            "integer",
                            "number",
                        ):
                            return cand, opname
        for prefix, opname in (("min_", "gte"), ("max_", "lte")):
            if arg.startswith(prefix) and arg[len(prefix) :] in res.fields:
                return arg[len(prefix) :], opname
        if arg in GTE_BARE or arg in LTE_BARE:
            start = [
                c
                for c in time_fields
                if set(c.split("_"))
                & {"start", "starts", "departure", "date", "scheduled", "check", "begin", "when"}
            ]
            pick = start[0] if start else (time_fields[0] if time_fields else None)
            if pick:
                return pick, "gte" if arg in GTE_BARE else "lte"
        return None

    def _list_output(
        self, op: Op, res: Resource, schema: Any
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A list's output: a bare array, or an envelope object holding the items beside its
        page fields (``has_more``, cursors, totals) and constants."""
        row = self.row_schema(res)
        s = merge_all_of(schema) if isinstance(schema, dict) else {}
        t = schema_type(s)
        if t == "array" or not s:
            return {"shape": "list"}, {"type": "array", "items": row}
        if t != "object":
            raise _Skip("its list response is neither an array nor an object holding one")
        items = self._items_prop(s)
        if not items:
            raise _Skip("its list response has no array of items")
        env = _Envelope(items, row, set(s.get("required") or []))
        for p, ps in (s.get("properties") or {}).items():
            if p == items:
                continue
            meaning = next((m for m, names in ENVELOPE.items() if snake(p) in names), None)
            if meaning is None or (
                meaning == "next_cursor" and schema_type(ps) not in ("string", "")
            ):
                self._envelope_constant(op, env, p, ps)
            else:
                env.page_field(p, ps, meaning)
        return env.output()

    def _envelope_constant(self, op: Op, env: _Envelope, p: str, ps: Any) -> None:
        """An envelope field that is no page field: a constant when required or fixed."""
        fixed = isinstance(ps, dict) and ("const" in ps or len(ps.get("enum") or []) == 1)
        if p not in env.req and not fixed:
            return
        value = self._constant(op, p, ps)
        if value is None:
            raise _Skip(f"its list response requires {p!r}, which the engine cannot fill")
        env.constants[p] = value
        env.props[p] = json_schema(ps)
        if p in env.req:
            env.required.append(p)

    def _constant(self, op: Op, prop: str, ps: Any) -> Any:
        """The fixed value of a list envelope's field the engine has no meaning for (Stripe's
        ``object: "list"``, ``url: "/v1/customers"``): its ``const`` or only enum value, its
        default or example when its schema accepts it, the operation's path for a URL-like field its
        schema accepts, else a value built from its schema; None when none fits."""
        js = json_schema(ps)
        if not isinstance(ps, dict):
            return None
        if "const" in ps:
            return ps["const"]
        if len(ps.get("enum") or []) == 1:
            return ps["enum"][0]
        for k in (
            "default",
            "example",
        ):  # SCIM's schemas: ["urn:ietf:params:scim:api:messages:2.0:ListResponse"]
            if k in ps and ps[k] is not None and not problem(js, ps[k]):
                return ps[k]
        if set(words(prop)) & {"url", "uri", "href", "path", "link"} and not problem(js, op.path):
            return op.path
        value = conform(None, js, random.Random(f"{self.seed}/{op.label}/{prop}"))
        return None if value is None or problem(js, value) else value

    def _body(
        self,
        op: Op,
        res: Resource,
        spec: dict[str, Any],
        props: dict[str, Any],
        required: list[str],
    ) -> None:
        """The request body's fields as arguments, each written to the column it names."""
        schema = self._body_schema(op)
        if schema is None:
            if op.kind in ("create", "update", "patch"):
                raise _Skip("it has no request body")
            return
        if schema == "non-json":
            raise _Skip("its request body is not JSON (file uploads and forms are not supported)")
        if not isinstance(schema, dict) or schema_type(schema) not in ("object", ""):
            raise _Skip("its request body is not a JSON object")
        body: dict[str, str] = {}
        req = set(schema.get("required") or [])
        for pname, ps in (schema.get("properties") or {}).items():
            ps = ps if isinstance(ps, dict) else {}
            col = self._body_col(op, res, pname, ps, props)
            js = self._body_value(op, res, pname, ps, col) if col else None
            if col is None or js is None:
                continue
            arg = snake(pname)
            props[arg] = js
            body[arg] = col
            if pname in req and op.kind in ("create", "update", "action"):
                required.append(arg)
        spec["body"] = body
        if op.kind in ("create", "update", "patch") and not body:
            raise _Skip(f"its request body writes no field of {res.name!r}")

    def _body_col(
        self, op: Op, res: Resource, pname: str, ps: dict[str, Any], props: dict[str, Any]
    ) -> str | None:
        """The column a body field writes, or None when it writes none (read-only, a credential,
        a parameter's name, no such field, hidden, the key of a row that exists)."""
        arg = snake(pname)
        if ps.get("readOnly") or pname in self.credentials:
            return None
        if arg in props:
            if not (op.rpc and pname == op.key_param):
                self.warn(
                    f"{op.label}: body field {pname!r} has the name of a path or query "
                    "parameter; the parameter wins"
                )
            return None
        col = arg if arg in res.fields else self._action_col(op, res, arg)
        if col is None:
            self.warn(
                f"{op.label}: body field {pname!r} is not a field of {res.name!r}; it is left out"
            )
            return None
        info = res.fields[col]
        if (info.get("read_only") and op.kind != "action") or info.get("hidden"):
            return None
        if col == res.key and op.kind != "create":
            return None
        return col

    def _body_value(
        self, op: Op, res: Resource, pname: str, ps: dict[str, Any], col: str
    ) -> dict[str, Any] | None:
        """The argument schema of a body field that writes ``col``, or None (warned) when what it
        writes is not what the column keeps."""
        info = res.fields[col]
        js = json_schema(ps)
        if "type" not in js and "oneOf" not in js and "anyOf" not in js:
            js["type"] = info["type"]
        left_out = f"{op.label}: body field {pname!r}"
        bt = schema_type(js)
        if bt in ("array", "object") and bt != info["type"]:
            # HubSpot's associations: an array of links to write, an object of them in the answer
            self.warn(
                f"{left_out} is an {bt} but {res.name!r} keeps {col!r} as {info['type']}; it is "
                "left out"
            )
            return None
        fit = _fitting(js, info["type"])
        if fit is None:  # a command, not a value: Stripe's billing_cycle_anchor "now" on a stamp
            self.warn(
                f"{left_out} is one of {js['enum']} but {res.name!r} keeps {col!r} as "
                f"{info['type']}: a command, not a value; it is left out"
            )
            return None
        js, foreign = self._items_shown(res, col, ps, fit)
        if foreign:  # NHS's create extensions (RegisteringAuthority) that no patient answer holds
            self.warn(
                f"{left_out} writes items of kinds {foreign} that no item of {col!r} in "
                f"{res.name!r} may be" + ("; they are left out" if js else "; it is left out")
            )
            if not js:
                return None
        missing = self._item_fields_missing(res, col, js)
        if missing:  # Stripe's subscription schedule phases: each answer phase needs its items
            self.warn(
                f"{left_out} writes items without {missing}, which every item of {col!r} in "
                f"{res.name!r} must have; it is left out"
            )
            return None
        if schema_type(js) == info["type"]:  # what the answer shows, a write keeps (Discord's ids)
            shown = json_schema(self._field_schema(info))
            keep = ("pattern", "format", "minLength", "maxLength", "items", "enum")
            js.update({k: shown[k] for k in keep if k in shown and k not in js})
        return js

    @staticmethod
    def _items_shown(
        res: Resource, col: str, ps: dict[str, Any], js: dict[str, Any]
    ) -> tuple[dict[str, Any], list[str]]:
        """An array body field whose items are a union of named schemas (``anyOf``/``oneOf``), cut
        to the members the answer's items also name: (its schema, or {} when none is left; the names
        cut)."""
        if (
            schema_type(js) != "array"
            or not isinstance(res.schema, dict)
            or not isinstance(js.get("items"), dict)
        ):
            return js, []
        shown = (merge_all_of(res.schema).get("properties") or {}).get(res.spec_names.get(col, col))
        answer = merge_all_of((shown or {}).get("items")) if isinstance(shown, dict) else {}
        theirs = answer.get("anyOf") or answer.get("oneOf")
        given = merge_all_of(ps.get("items"))
        for k in ("anyOf", "oneOf"):
            mine = given.get(k)
            if (
                isinstance(mine, list)
                and isinstance(theirs, list)
                and len(mine) == len(js["items"].get(k) or [])
            ):
                return _union_cut(js, k, mine, theirs)
        return js, []

    @staticmethod
    def _item_fields_missing(res: Resource, col: str, js: dict[str, Any]) -> list[str]:
        """The fields every item of array column ``col`` must show (its answer schema's ``items``
        ``required``) that the body field ``js`` lets a write leave out."""
        if schema_type(js) != "array" or not isinstance(res.schema, dict):
            return []
        shown = (merge_all_of(res.schema).get("properties") or {}).get(res.spec_names.get(col, col))
        items = merge_all_of((shown or {}).get("items") or {}) if isinstance(shown, dict) else {}
        given = js.get("items") if isinstance(js.get("items"), dict) else {}
        need = [
            r
            for r in items.get("required") or []
            if not (items.get("properties") or {}).get(r, {}).get("readOnly")
        ]
        return [r for r in need if r not in (given.get("required") or [])]

    def _action_col(self, op: Op, res: Resource, arg: str) -> str | None:
        if op.kind != "action":
            return None
        for cand in (
            f"{op.word}_{arg}",
            f"{op.word}ation_{arg}",
            f"{op.word}lation_{arg}",
            f"cancellation_{arg}",
        ):
            if cand in res.fields:
                return cand
        return None

    def _transition(self, op: Op, res: Resource) -> dict[str, Any]:
        """What an action sets: a status column's value its word names (from the states its
        words allow), else a boolean flag."""
        word = op.word
        base = word.removeprefix("mark_as_").removeprefix("mark_")
        tr = self._status_transition(op, res, base) or self._flag_transition(res, word)
        if tr is None:
            raise _Skip(f"the action {word!r} matches no status value or flag of {res.name!r}")
        return tr

    def _status_transition(self, op: Op, res: Resource, base: str) -> dict[str, Any] | None:
        """``cancel`` sets ``status`` to ``canceled`` (with ``canceled_at`` stamped), when a
        status column holds such a value."""
        word = op.word
        text = f"{op.raw.get('summary') or ''}. {op.raw.get('description') or ''}"
        targets = [
            *ACTION_TARGETS.get(word, []),
            base + "ed",
            base + "d",
            base[:-1] + "ied" if base.endswith("y") else base + "ed",
            base,
        ]
        for col, f in res.fields.items():
            if not (f.get("enum") and (col in ("status", "state") or col.endswith(STATUS_ENDS))):
                continue
            enum = [str(e) for e in f["enum"]]
            norm = {snake(e): e for e in enum}
            target = next((norm[t] for t in targets if t in norm), None)
            if target is None:
                continue
            tr: dict[str, Any] = {"field": col, "to": target}
            allowed = self._from_states(text, enum, target, word)
            if allowed is not None:
                tr["from"] = allowed
            t = snake(target)
            names = (f"{t}_at", f"{base}ed_at", f"{base}d_at", f"{base}_at", f"{t}_on")
            stamps = [c for c in names if c in res.fields and res.fields[c]["type"] == "string"]
            if stamps:
                tr["stamp"] = stamps[:1]
            return tr
        return None

    @staticmethod
    def _flag_transition(res: Resource, word: str) -> dict[str, Any] | None:
        """``archive`` sets ``archived`` (or ``is_archived``) true, ``unarchive`` false."""
        if word in FLAG_ACTIONS:
            flag, value = FLAG_ACTIONS[word], True
        elif word in UNFLAG_ACTIONS:
            flag, value = UNFLAG_ACTIONS[word], False
        else:
            return None
        for col in (flag, f"is_{flag}"):
            if col in res.fields and res.fields[col]["type"] == "boolean":
                tr: dict[str, Any] = {"field": col, "to": value}
                if value and f"{flag}_at" in res.fields:
                    tr["stamp"] = [f"{flag}_at"]
                return tr
        return None

    @staticmethod
    def _from_states(text: str, enum: list[str], target: str, word: str) -> list[str] | None:
        """The states an action may start from: those its words name (less those they name
        after a negation), else the live ones (not terminal), or None for any."""
        included, excluded = _states_named(text, [e for e in enum if e != target])
        if included:
            return [e for e in included if e not in excluded]
        rest = [e for e in enum if e != target and e not in excluded]
        if excluded:
            return rest
        if word in REVERSALS or word.startswith("un"):
            return None
        live = [e for e in rest if snake(e) not in TERMINAL]
        return live if live and len(live) < len(rest) else None

    # ----------------------------------------------------------------- seed

    def finish_fields(self, ops: dict[str, dict[str, Any]]) -> None:
        """Generated columns, unique fields and fill values, once the operations are known."""
        conflicts = {
            o["resource"]
            for o in ops.values()
            if 409 in o.get("errors", []) and o["kind"] in ("create", "update", "patch")
        }
        created_by_client = {
            o["resource"]
            for o in ops.values()
            if o["kind"] == "create"
            and any(c == self.resources[o["resource"]].key for c in (o.get("body") or {}).values())
        }
        for res in self.resources.values():
            if res.name not in created_by_client:
                res.fields[res.key]["generated"] = "id"
            for col, f in res.fields.items():
                self._finish_column(ops, res, col, f)
            if res.name in conflicts:
                res.unique = [
                    c
                    for c in res.fields
                    if c in UNIQUE_NAMES and c != res.key and res.fields[c]["type"] == "string"
                ]

    def _finish_column(
        self, ops: dict[str, dict[str, Any]], res: Resource, col: str, f: dict[str, Any]
    ) -> None:
        """One column's stamp (a timestamp no operation writes) and fill value (a required column
        no create writes)."""
        if (
            f["type"] == "string"
            and col != res.key
            and (f.get("read_only") or not self._written(ops, res, col))
        ):
            gen = _stamp_kind(col)
            # the engine stamps ISO 8601 (2026-01-15T09:00:00Z); a column whose schema wants
            # another form (Mandrill's "2026-01-15 09:00:00") is not stamped by it
            if gen and not problem(schema_of(f), iso(CLOCK)):
                f["generated"] = gen
        if (
            col in res.required
            and "default" not in f
            and not f.get("generated")
            and col != res.key
            and not f.get("ref")
            and not self._written_required(ops, res, col)
        ):
            f["default"] = self._fill_value(res, col, f)

    def _fill_value(self, res: Resource, col: str, f: dict[str, Any]) -> Any:
        """The value a required column no create writes starts with: its first enum value or its
        type's zero, else (a pattern, format or bound the zero breaks: Discord's version
        ``^(0|[1-9][0-9]*)$``) a value built from its schema."""
        plain = f["enum"][0] if f.get("enum") else _ZERO[f["type"]]
        if not problem(schema_of(f), plain):
            return plain
        fit = conform(
            None, schema_of(f), random.Random(f"{self.seed}/{self.name}/{res.name}/{col}")
        )
        return plain if fit is None or problem(schema_of(f), fit) else fit

    @staticmethod
    def _written(ops: dict[str, dict[str, Any]], res: Resource, col: str) -> bool:
        return any(
            o["resource"] == res.name and col in (o.get("body") or {}).values()
            for o in ops.values()
        )

    @staticmethod
    def _written_required(ops: dict[str, dict[str, Any]], res: Resource, col: str) -> bool:
        for o in ops.values():
            if o["resource"] == res.name and o["kind"] == "create":
                args = [a for a, c in (o.get("body") or {}).items() if c == col]
                if args and all(a in o["parameters"].get("required", []) for a in args):
                    return True
        return False

    @staticmethod
    def _parent_of_every_create(ops: dict[str, dict[str, Any]], res: Resource, col: str) -> bool:
        """True when every create of ``res`` names ``col`` in its path (Stripe's
        ``/v1/account/people`` names no account, ``/v1/accounts/{account}/people`` does)."""
        creates = [o for o in ops.values() if o["resource"] == res.name and o["kind"] == "create"]
        return all(any(p["field"] == col for p in o.get("parents") or []) for o in creates)

    def seed_rows(self) -> dict[str, list[dict[str, Any]]]:
        order = self._topo()
        refs: dict[str, list[Any]] = {}
        out: dict[str, list[dict[str, Any]]] = {}
        for name in order:
            res = self.resources[name]
            rng = random.Random(f"{self.seed}/{self.name}/{name}")
            is_child = any(f.get("ref") for f in res.fields.values())
            n = self.rows_per_resource + (self.rows_per_resource // 2 if is_child else 0)
            maker = RowMaker(rng, singular(name), res.fields, res.key, res.prefix)
            rows = [maker.row(i, n, refs) for i in range(n)]
            _unique_keys(rows, res.key)
            out[name] = rows
            refs[name] = [r[res.key] for r in rows if res.key in r]
        return {n: out[n] for n in self.resources if n in out}

    def _topo(self) -> list[str]:
        """Resources in seeding order: what a row refers to first. In a cycle the parent wins
        (a channel's ``last_message_id`` waits; the message's parent ``channel_id`` does not)."""
        done: list[str] = []
        visiting: set[str] = set()

        def ancestors(n: str) -> set[str]:
            out: set[str] = set()
            todo = [n]
            while todo:
                for f in self.resources[todo.pop()].fields.values():
                    if f.get("parent") and f.get("ref") in self.resources and f["ref"] not in out:
                        out.add(f["ref"])
                        todo.append(f["ref"])
            return out

        def visit(n: str) -> None:
            if n in done or n in visiting:
                return
            visiting.add(n)
            for f in sorted(self.resources[n].fields.values(), key=lambda f: not f.get("parent")):
                if (
                    f.get("ref")
                    and f["ref"] != n
                    and f["ref"] in self.resources
                    and (f.get("parent") or n not in ancestors(f["ref"]))
                ):
                    visit(f["ref"])
            visiting.discard(n)
            done.append(n)

        for n in self.resources:
            visit(n)
        return done

    # ----------------------------------------------------------------- all together

    def build(self) -> dict[str, Any]:
        """``{"model": ResourceModel, "tools": [tool dicts]}`` for the whole document (raises
        SpecError)."""
        self.classify()
        if not self.ops:
            raise SpecError(
                f"{self.name}: at $.paths: no operation can be made into a tool"
                + (f" ({'; '.join(self.warnings)})" if self.warnings else "")
            )
        self.resource_schemas()
        self.fields()
        ops, tools = self.build_ops()
        if self.max_tools and len(tools) > self.max_tools:
            ops, tools = self.trim(ops, tools)
        self._check_useful(ops)
        self.finish_fields(ops)
        seed = self.seed_rows()
        self._default_refs(ops, seed)
        for t in tools:
            self._id_hints(t, ops[t["name"]], seed)
        model = {
            "engine": 1,
            "resources": {
                res.name: self._resource_model(res, seed) for res in self.resources.values()
            },
            "operations": ops,
            "seed": seed,
            "crud": _crud(ops),
            "warnings": list(self.warnings),
        }
        return {"model": ResourceModel.from_json(model), "tools": tools}

    def _check_useful(self, ops: dict[str, dict[str, Any]]) -> None:
        """Refuse a document that gives no tool, or no list to discover ids with."""
        if not ops:
            raise SpecError(
                f"{self.name}: at $.paths: no operation can be made into a tool "
                f"({'; '.join(self.warnings)})"
            )
        if not any(o["kind"] == "list" for o in ops.values()):
            raise SpecError(
                f"{self.name}: at $.paths: no list operation could be made, so the ids of its "
                f"{', '.join(sorted({o['resource'] for o in ops.values()}))} could not be "
                f"discovered and the environment would not be useful ({len(ops)} other "
                f"tools: {', '.join(list(ops)[:5])})"
            )

    def _default_refs(
        self, ops: dict[str, dict[str, Any]], seed: dict[str, list[dict[str, Any]]]
    ) -> None:
        """A required reference no create writes (Discord's ``user_id``) defaults to the first
        row it can name."""
        for res in self.resources.values():
            for col, f in res.fields.items():
                target = seed.get(f.get("ref") or "") or []
                if (
                    col in res.required
                    and f.get("ref")
                    and "default" not in f
                    and col != res.key
                    and not (f.get("parent") and self._parent_of_every_create(ops, res, col))
                    and target
                    and not self._written_required(ops, res, col)
                ):
                    f["default"] = target[0].get(self.resources[f["ref"]].key)

    def _id_hints(
        self, tool: dict[str, Any], op: dict[str, Any], seed: dict[str, list[dict[str, Any]]]
    ) -> None:
        """Mark a tool's key and parent arguments with the column they name (``ID_HINT``) and
        describe them with a seed value."""
        holders = [(op["key"], op["resource"], None)] if op.get("key") else []
        holders += [(p["arg"], p["resource"], p["field"]) for p in op.get("parents") or []]
        for arg, res_name, via in holders:
            key = self.resources[res_name].key
            hint: dict[str, Any] = {"table": res_name, "column": key}
            if via is not None:
                hint["via"] = [op["resource"], via]
            schema = tool["parameters"]["properties"][arg]
            if op["kind"] != "create" or via is not None:  # a create's own key is a new one
                schema[ID_HINT] = hint
            rows = seed.get(res_name) or []
            if rows and key in rows[0] and isinstance(rows[0][key], str):
                d = schema.get("description", "").rstrip(".")
                if "like" not in d:
                    schema["description"] = (
                        f"{d}, like {rows[0][key]}." if d else f"Like {rows[0][key]}."
                    )

    def _resource_model(self, res: Resource, seed: dict[str, list[dict[str, Any]]]) -> Any:
        """One resource's entry in the model: key, columns, uniques, new keys and its nouns."""
        one = singular(res.name)
        return {
            "key": res.key,
            "id_prefix": res.prefix,
            "fields": {
                col: {k: v for k, v in f.items() if k in MODEL_FIELD_KEYS}
                for col, f in res.fields.items()
            },
            "unique": res.unique,
            "new_keys": self.new_keys(res, seed.get(res.name) or []),
            "required": [c for c in res.required if c in res.fields],
            "nouns": {"singular": one, "plural": plural(one), "label": " ".join(words(one))},
        }

    NEW_KEYS = 32
    """Keys made ahead for new rows of a resource whose key has a declared pattern, format or
    length."""

    def new_keys(self, res: Resource, rows: list[dict[str, Any]]) -> list[str]:
        """Keys for rows the engine creates, when ``prefix_0001`` would break the key's schema (else
        [])."""
        f = res.fields.get(res.key) or {}
        if f.get("type") != "string" or f.get("enum"):
            return []
        schema = schema_of(f)
        if str(f.get("format") or "").startswith(
            "uuid"
        ):  # Kratos's uuid4 (no validator knows it): new ids are UUIDs like the seeds'
            schema["format"] = "uuid"
        if not problem(schema, f"{res.prefix}_0001"):
            return []
        rng = random.Random(f"{self.seed}/{self.name}/{res.name}/new-keys")
        taken = {r.get(res.key) for r in rows}
        out: list[str] = []
        for _ in range(self.NEW_KEYS * 4):
            k = conform(None, schema, rng)
            if isinstance(k, str) and k not in taken and not problem(schema, k):
                taken.add(k)
                out.append(k)
                if len(out) == self.NEW_KEYS:
                    break
        return out

    def trim(
        self, ops: dict[str, dict[str, Any]], tools: list[dict[str, Any]]
    ) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
        """At most ``max_tools`` tools, whole resources at a time: first those that can be listed
        (their ids can be discovered) and do the most; the others are skipped with a warning."""
        by_res: dict[str, list[str]] = {}
        for name, o in ops.items():
            by_res.setdefault(o["resource"], []).append(name)

        def score(res: str) -> tuple[int, int, int]:
            kinds = {ops[n]["kind"] for n in by_res[res]}
            return (
                "list" in kinds,
                len(kinds & {"get", "create", "update", "patch", "delete", "action"}),
                len(by_res[res]),
            )

        keep: set[str] = set()
        for res in sorted(by_res, key=score, reverse=True):
            names = by_res[res]
            if len(keep) + len(names) <= self.max_tools and (
                score(res)[0] or len(keep) + len(names) <= self.max_tools // 2
            ):
                keep.update(names)
        for name in ops:
            if name not in keep:
                o = ops[name]
                self.skip(
                    f"{o['method']} {o['path']}",
                    f"more tools than max_tools = {self.max_tools} (its resource "
                    f"{o['resource']!r} was left out)",
                )
        return {n: o for n, o in ops.items() if n in keep}, [t for t in tools if t["name"] in keep]

    def generated(self, model: ResourceModel) -> dict[str, list[str]]:
        """Table -> the columns the engine fills in itself (generated ids and stamps, transition
        stamps)."""
        out: dict[str, list[str]] = {}
        for name, r in model.resources.items():
            cols = [c for c, f in r.fields.items() if f.generated]
            for op in model.operations.values():
                if op.resource == name and op.transition is not None:
                    cols += [c for c in op.transition.stamp if c not in cols]
            if cols:
                out[name] = cols
        return out


def _unique_keys(rows: list[dict[str, Any]], key: str) -> None:
    """Make the key column unique (a key the client writes, like ``company_id``, may repeat a
    name)."""
    seen: set[Any] = set()
    for i, row in enumerate(rows):
        v = row.get(key)
        if v is None or v not in seen:
            seen.add(v)
            continue
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            continue
        new: Any = v
        n = i + 1
        while new in seen:
            new = (
                max(x for x in seen if isinstance(x, int) and not isinstance(x, bool)) + 1
                if isinstance(v, int)
                else f"{v}-{n}"
            )
            n += 1
        row[key] = new
        seen.add(new)


COLUMN_KEYS = (
    "format",
    "enum",
    "default",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "examples",
    "items",
)
"""Schema keywords a column keeps from its property."""

_COLUMN_TYPES = ("string", "integer", "number", "boolean", "object", "array")


def _column(ps: dict[str, Any]) -> dict[str, Any]:
    """A column from its (merged) property schema: type (anything else is an ``object``),
    nullability, the :data:`COLUMN_KEYS`, an enum without nulls, read-only and its words."""
    t = schema_type(ps)
    info: dict[str, Any] = {"type": t if t in _COLUMN_TYPES else "object"}
    if schema_nullable(ps):
        info["nullable"] = True
    info.update((k, ps[k]) for k in COLUMN_KEYS if k in ps)
    if isinstance(info.get("enum"), list):
        info["enum"] = [e for e in info["enum"] if e is not None]
        if not info["enum"]:
            del info["enum"]
    if ps.get("readOnly"):
        info["read_only"] = True
    if ps.get("description"):
        info["description"] = str(ps["description"])
    return info


ITEM_ANSWERS = ("get", "create", "update", "patch", "action")
"""Operations that answer with one item of their resource."""

STATUS_ENDS = ("_status", "_state")
"""How a status column's name ends (beside ``status`` and ``state``)."""


def _states_named(text: str, states: list[str]) -> tuple[list[str], set[str]]:
    """The states a text names, by sentence: (those named plainly, in order; those named after a
    negation, unless the sentence says "only")."""
    included: list[str] = []
    excluded: set[str] = set()
    for sentence in re.split(r"(?<=[.;!?])\s+", text):
        found = [e for e in states if _names_state(e, sentence)]
        if NEGATION.search(sentence) and not re.search(r"\bonly\b", sentence, re.I):
            excluded.update(found)
        else:
            included += [e for e in found if e not in included]
    return included, excluded


def _names_state(state: str, sentence: str) -> bool:
    """Whether a sentence names a state (``in_progress`` as "in progress", "in-progress")."""
    words_re = r"[ _-]".join(map(re.escape, re.split(r"[ _-]", state)))
    return re.search(r"\b" + words_re + r"\b", sentence, re.I) is not None


def _union_cut(
    js: dict[str, Any], k: str, mine: list[Any], theirs: list[Any]
) -> tuple[dict[str, Any], list[str]]:
    """A body field's ``items.<k>`` union cut to the members the answer's union ``theirs`` names:
    (its schema, or {} when none is left; the names cut). Unnamed members cut nothing."""
    names = {m.get(REF_NAME) for m in theirs if isinstance(m, dict) and m.get(REF_NAME)}
    refs = [m.get(REF_NAME) if isinstance(m, dict) else None for m in mine]
    if not names or not all(refs):
        return js, []
    foreign = [str(r) for r in refs if r not in names]
    if not foreign:
        return js, []
    keep = [m for m, r in zip(js["items"][k], refs, strict=True) if r in names]
    return ({**js, "items": {**js["items"], k: keep}} if keep else {}), foreign


def _shared_prefixes(paths: dict[str, Any]) -> set[str]:
    """The leading literal segments every path shares (two paths or more)."""
    split = [[s for s in str(p).strip("/").split("/") if s] for p in paths]
    prefixes: set[str] = set()
    if len(split) > 1:
        for i, seg in enumerate(split[0]):
            if seg.startswith("{") or any(len(x) <= i + 1 or x[i] != seg for x in split):
                break
            prefixes.add(snake(seg))
    return prefixes


MODEL_FIELD_KEYS = frozenset(
    {
        "type",
        "nullable",
        "format",
        "enum",
        "default",
        "ref",
        "generated",
        "hidden",
        "parent",
        "read_only",
    }
)
"""The column properties a model's resource keeps (the rest is the synthesizer's own)."""


def _crud(ops: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per resource, its tool for each kind (``list``, ``get``, ...), its actions, its other
    lists (a top-level list wins over a nested one) and the tools beside those (``more``)."""
    crud: dict[str, dict[str, Any]] = {}
    for name, op in ops.items():
        c = crud.setdefault(op["resource"], {})
        kind = op["kind"]
        if kind == "action":
            c.setdefault("actions", []).append(name)
        elif kind == "list" and op.get("parents") and "list" in c:
            c.setdefault("lists", []).append(name)
        elif kind not in c or (
            kind == "list" and not op.get("parents") and ops[c["list"]].get("parents")
        ):
            if kind == "list" and "list" in c:
                c.setdefault("lists", []).append(c["list"])
            c[kind] = name
        else:
            c.setdefault("more", []).append(name)
    return crud


class _Skip(Exception):
    """An operation that cannot be supported (the message says why)."""
