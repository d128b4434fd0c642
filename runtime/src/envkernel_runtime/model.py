"""The typed resource model of a ``{"kind": "model"}`` environment.

A synthesizer (``openapi``) builds a :class:`ResourceModel`; the verifier and the samplers read it
with :func:`model_of`. On the wire (``ModelBehaviour.model``) and inside the sandbox it is plain
JSON: :meth:`ResourceModel.to_json` gives exactly the object :mod:`envkernel_runtime.engine` reads
(the engine's docstring documents every key; fields left at their default are left out, as the
engine treats a missing key and its default alike). Keys the engine does not use (``nouns``,
``warnings``, an operation's ``method``/``path``/``summary``) are carried for the host side and
ignored by the engine.

Each resource carries its :class:`Nouns` (singular, plural, a human label), filled in by the
synthesizer when it builds the model, so nothing downstream guesses English from table names.
"""

from __future__ import annotations

from typing import Any

import msgspec

from envkernel_schemas import EnvSpec, ModelBehaviour

__all__ = [
    "Crud",
    "FieldSpec",
    "Filter",
    "Nouns",
    "Operation",
    "Output",
    "Page",
    "Parent",
    "Resource",
    "ResourceModel",
    "Search",
    "Sort",
    "TestFault",
    "Transition",
    "model_of",
]


class _Part(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Base of every part of the model: keyword fields, defaults left out of the JSON."""


class Nouns(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    """How requests and messages name one resource."""

    # _Part's options, and frozen: mypy refuses a frozen Struct under a non-frozen base

    singular: str
    """One row: ``order``."""
    plural: str
    """Several rows: ``orders``."""
    label: str
    """The singular as words for people: ``order item`` for ``order_items``."""


class FieldSpec(_Part):
    """One column of a resource."""

    type: str
    """JSON type: string, integer, number, boolean, object or array."""
    nullable: bool = False
    """The value may be null."""
    format: str | None = None
    """JSON Schema format (``date-time``, ``email``, ...)."""
    enum: list[Any] | None = None
    """The allowed values."""
    default: Any = None
    """Value written when a create does not give one."""
    ref: str | None = None
    """The resource whose key this column holds."""
    generated: str | None = None
    """Filled in by the engine: ``id`` (new keys) or ``created`` (a timestamp)."""
    hidden: bool = False
    """Stored, not shown in answers."""
    parent: bool = False
    """The column scopes the row under a parent resource (a path parameter)."""
    read_only: bool = False
    """Answers show it; arguments never write it."""


class Resource(_Part, kw_only=True):
    """One table of the model."""

    key: str = "id"
    """The key column."""
    id_prefix: str | None = None
    """Prefix of new string keys (``ord`` gives ``ord_0001``)."""
    new_keys: list[str] = []
    """Keys for new rows, in order, when ``prefix_0001`` would break the key's declared schema
    (a ``pattern`` such as ``^MG[0-9a-f]{32}$``, a format, a length): the synthesizer generates
    them from that schema; the engine takes the first one not in use, then falls back to the
    prefix."""
    fields: dict[str, FieldSpec]
    """Column -> field, in column order."""
    unique: list[str] = []
    """Columns whose value no two rows share (a create or update repeating one: conflict)."""
    required: list[str] = []
    """Columns a create must be given."""
    nouns: Nouns | None = None
    """How the resource is named (filled in by the synthesizer)."""


class Parent(_Part):
    """A path parameter naming the parent row an operation is scoped under."""

    arg: str
    """The argument holding the parent's key."""
    resource: str
    """The parent resource."""
    field: str
    """The column of this resource holding the parent's key."""


class Filter(_Part):
    """A list filter: argument -> column compared with ``op``."""

    field: str
    """The column."""
    op: str = "eq"
    """eq, in, contains, gte, lte, gt or lt."""


class Search(_Part):
    """Free-text search of a list."""

    arg: str
    """The argument holding the text."""
    fields: list[str] = []
    """The columns searched."""


class Page(_Part):
    """Pagination arguments of a list."""

    limit: str | None = None
    """Argument: page size."""
    offset: str | None = None
    """Argument: rows to skip."""
    page: str | None = None
    """Argument: page number."""
    cursor: str | None = None
    """Argument: an opaque cursor."""
    default_limit: int | None = None
    """Page size when none is given."""
    first: int = 1
    """The number of the first page (Twilio's ``Page`` index starts at 0)."""


class Sort(_Part):
    """Sorting arguments of a list."""

    arg: str | None = None
    """Argument: the column to sort by."""
    order_arg: str | None = None
    """Argument: ``asc`` or ``desc``."""
    fields: list[str] = []
    """Columns that may be sorted by."""


class Output(_Part):
    """The shape of an operation's answer."""

    shape: str
    """row, list, envelope or deleted (required: the engine's default depends on the kind)."""
    keys: dict[str, str] = {}
    """Envelope keys: ``items``, ``total``, ``next_cursor`` -> the answer's key."""
    nullable: list[str] = []
    """Answer keys that may be null."""
    constants: dict[str, Any] = {}
    """Envelope keys with a fixed value (``{"object": "list", "url": "/v1/customers"}``)."""


class Transition(_Part):
    """A state change an action makes."""

    field: str
    """The status column."""
    to: Any = None
    """The new value."""
    from_: list[Any] = msgspec.field(default_factory=list, name="from")
    """Values it may change from (empty: any)."""
    stamp: list[str] = []
    """Timestamp columns set when it happens."""


class Operation(_Part, kw_only=True):
    """One tool of the model."""

    kind: str
    """create, get, list, update, patch, delete or action."""
    resource: str
    """The resource it works on."""
    parameters: dict[str, Any] = {}
    """JSON Schema of the arguments."""
    key: str | None = None
    """The argument holding the row's key (get, update, patch, delete, action)."""
    parents: list[Parent] = []
    """Parents the row is scoped under."""
    body: dict[str, str] = {}
    """Argument -> column written."""
    filters: dict[str, Filter] = {}
    """List filters by argument."""
    search: Search | None = None
    """Free-text search (lists)."""
    page: Page | None = None
    """Pagination (lists)."""
    sort: Sort | None = None
    """Sorting (lists)."""
    output: Output | None = None
    """Answer shape (default: a row)."""
    transition: Transition | None = None
    """The state change (actions)."""
    errors: list[int] = []
    """HTTP statuses the operation documents."""
    method: str = ""
    """HTTP method it came from (informative)."""
    path: str = ""
    """HTTP path it came from (informative)."""
    summary: str = ""
    """The description it came from (informative)."""


class Crud(_Part):
    """A resource's tools by kind."""

    create: str | None = None
    """The create tool."""
    get: str | None = None
    """The get tool."""
    list_: str | None = msgspec.field(default=None, name="list")
    """The main list tool (``list`` in the JSON)."""
    update: str | None = None
    """The update tool."""
    patch: str | None = None
    """The patch tool."""
    delete: str | None = None
    """The delete tool."""
    actions: list[str] = []
    """Action tools."""
    lists: list[str] = []
    """Other list tools (scoped or secondary)."""
    more: list[str] = []
    """Further tools of a kind already taken."""


class TestFault(_Part):
    """One tool made to misbehave on purpose (tests of verifiers only)."""

    __test__ = False  # not a pytest test class

    tool: str
    """The tool."""
    kind: str
    """One of the engine's ``FAULTS``."""


class ResourceModel(_Part, kw_only=True):
    """A whole model: resources, operations, seed rows."""

    engine: int = 1
    """The engine version it is for."""
    resources: dict[str, Resource]
    """Table name -> resource."""
    operations: dict[str, Operation]
    """Tool name -> operation."""
    seed: dict[str, list[dict[str, Any]]] = {}
    """Table -> initial rows."""
    crud: dict[str, Crud] = {}
    """Table -> its tools by kind."""
    test_fault: TestFault | None = None
    """A planted fault (tests only)."""
    warnings: list[str] = []
    """What the synthesizer skipped, and why."""

    def to_json(self) -> dict[str, Any]:
        """The model as the plain JSON object the engine reads (what ``ModelBehaviour.model``
        holds)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ResourceModel:
        """Decode the JSON object (raises ``msgspec.ValidationError`` naming the bad path)."""
        return msgspec.convert(data, cls)

    def nouns(self, resource: str) -> Nouns:
        """The resource's nouns (its name as every form when the synthesizer gave none)."""
        res = self.resources.get(resource)
        if res is not None and res.nouns is not None:
            return res.nouns
        label = resource.replace("_", " ")
        return Nouns(singular=resource, plural=resource, label=label)


def model_of(env: EnvSpec) -> ResourceModel | None:
    """The typed model of a model environment, or None (a code environment, or a model that does
    not decode: the engine reports that one as ``load_failed``)."""
    if not isinstance(env.behaviour, ModelBehaviour):
        return None
    try:
        return ResourceModel.from_json(env.behaviour.model)
    except (msgspec.ValidationError, TypeError):
        return None
