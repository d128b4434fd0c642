"""envkernel-sample: the synthesizer ``sample``, a hand-written shop environment (``shop-v1``).

It needs no model and no network, so a bare ``envkernel run`` has an environment to work on. The
behaviour is ``shop_env.py`` in this package, sent as text to the sandbox (never imported here).
"""

from __future__ import annotations

from importlib import metadata, resources
from typing import Any

from envkernel.hookspecs import hookimpl
from envkernel_schemas import (
    CodeBehaviour,
    DomainPolicy,
    EnvRequested,
    EnvSpec,
    Provenance,
    ToolSpec,
)

__all__ = ["SEED_SQL", "TOOLS", "SampleSynthesizer", "shop_env"]

ENV_ID = "shop-v1"

SEED_SQL = """\
PRAGMA foreign_keys = ON;
CREATE TABLE customers (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    city TEXT NOT NULL
);
CREATE TABLE products (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    category TEXT NOT NULL,
    price_cents INTEGER NOT NULL CHECK (price_cents > 0),
    stock INTEGER NOT NULL CHECK (stock >= 0)
);
CREATE TABLE orders (
    id TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL REFERENCES customers (id),
    product_id TEXT NOT NULL REFERENCES products (id),
    quantity INTEGER NOT NULL CHECK (quantity > 0),
    unit_price_cents INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'shipped', 'cancelled')),
    created_at TEXT NOT NULL
);
INSERT INTO customers (id, name, email, city) VALUES
    ('cus_0001', 'Alice Martin', 'alice.martin@example.com', 'Lyon'),
    ('cus_0002', 'Bruno Silva', 'bruno.silva@example.com', 'Porto'),
    ('cus_0003', 'Chen Wei', 'chen.wei@example.com', 'Singapore'),
    ('cus_0004', 'Dana Okafor', 'dana.okafor@example.com', 'Lagos'),
    ('cus_0005', 'Emil Novak', 'emil.novak@example.com', 'Prague');
INSERT INTO products (id, name, category, price_cents, stock) VALUES
    ('prd_0001', 'desk lamp', 'home office', 3499, 12),
    ('prd_0002', 'ergonomic office chair', 'home office', 18900, 4),
    ('prd_0003', 'wireless mouse', 'computer accessories', 2450, 30),
    ('prd_0004', 'mechanical keyboard', 'computer accessories', 8900, 7),
    ('prd_0005', '27-inch monitor', 'displays', 22900, 3),
    ('prd_0006', 'laptop stand', 'home office', 3999, 15),
    ('prd_0007', 'noise-cancelling headphones', 'audio', 14900, 0),
    ('prd_0008', 'USB-C hub', 'computer accessories', 4599, 20);
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price_cents, status, created_at) \
VALUES
    ('ord_0001', 'cus_0001', 'prd_0001', 2, 3499, 'shipped', '2026-01-08T10:15:00Z'),
    ('ord_0002', 'cus_0001', 'prd_0004', 1, 8900, 'pending', '2026-01-12T16:40:00Z'),
    ('ord_0003', 'cus_0002', 'prd_0002', 1, 18900, 'pending', '2026-01-10T09:05:00Z'),
    ('ord_0004', 'cus_0002', 'prd_0003', 3, 2450, 'cancelled', '2026-01-11T13:22:00Z'),
    ('ord_0005', 'cus_0003', 'prd_0005', 2, 22900, 'shipped', '2026-01-09T08:30:00Z'),
    ('ord_0006', 'cus_0003', 'prd_0008', 1, 4599, 'pending', '2026-01-13T11:00:00Z'),
    ('ord_0007', 'cus_0004', 'prd_0006', 1, 3999, 'pending', '2026-01-14T17:45:00Z'),
    ('ord_0008', 'cus_0005', 'prd_0007', 1, 14900, 'shipped', '2026-01-07T19:10:00Z');
"""
"""The initial state: 5 customers, 8 products (one out of stock), 8 orders."""


def _obj(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required or [],
        "additionalProperties": False,
    }


_ID = {"type": "string"}
_CUSTOMER = _obj(
    {
        "id": _ID,
        "name": {"type": "string"},
        "email": {"type": "string"},
        "city": {"type": "string"},
    },
    ["id", "name", "email", "city"],
)
_PRODUCT = _obj(
    {
        "id": _ID,
        "name": {"type": "string"},
        "category": {"type": "string"},
        "price_cents": {"type": "integer"},
        "stock": {"type": "integer"},
    },
    ["id", "name", "category", "price_cents", "stock"],
)
_ORDER = _obj(
    {
        "id": _ID,
        "customer_id": _ID,
        "product_id": _ID,
        "product_name": {"type": "string"},
        "quantity": {"type": "integer"},
        "unit_price_cents": {"type": "integer"},
        "total_cents": {"type": "integer"},
        "status": {"type": "string", "enum": ["pending", "shipped", "cancelled"]},
        "created_at": {"type": "string", "format": "date-time"},
    },
    [
        "id",
        "customer_id",
        "product_id",
        "product_name",
        "quantity",
        "unit_price_cents",
        "total_cents",
        "status",
        "created_at",
    ],
)
_STATUS = {
    "type": "string",
    "enum": ["pending", "shipped", "cancelled"],
    "description": "Only orders with this status.",
}
_QUANTITY = {"type": "integer", "minimum": 1, "description": "Number of units."}


TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="find_customer",
        description="Find customers by email (exact, case-insensitive) or by part of their name. "
        "Give at least one.",
        parameters=_obj(
            {
                "email": {"type": "string", "description": "The customer's email address."},
                "name": {"type": "string", "description": "The customer's name or part of it."},
            }
        ),
        returns={"type": "array", "items": _CUSTOMER},
    ),
    ToolSpec(
        name="get_customer",
        description="Get one customer by id.",
        parameters=_obj(
            {"customer_id": {"type": "string", "description": "Customer id, like cus_0001."}},
            ["customer_id"],
        ),
        returns=_CUSTOMER,
    ),
    ToolSpec(
        name="list_products",
        description="List products, optionally filtered by part of the name, by category, or to "
        "those in stock. Prices are in cents.",
        parameters=_obj(
            {
                "query": {
                    "type": "string",
                    "description": "Part of the product name, e.g. 'lamp'.",
                },
                "category": {
                    "type": "string",
                    "description": "Exact category, e.g. 'home office'.",
                },
                "in_stock_only": {
                    "type": "boolean",
                    "description": "Only products with stock left.",
                    "default": False,
                },
            }
        ),
        returns={"type": "array", "items": _PRODUCT},
    ),
    ToolSpec(
        name="get_product",
        description="Get one product by id, with its price in cents and its stock.",
        parameters=_obj(
            {"product_id": {"type": "string", "description": "Product id, like prd_0001."}},
            ["product_id"],
        ),
        returns=_PRODUCT,
    ),
    ToolSpec(
        name="list_orders",
        description="List a customer's orders, oldest first, optionally only those with one "
        "status.",
        parameters=_obj(
            {
                "customer_id": {"type": "string", "description": "Customer id, like cus_0001."},
                "status": _STATUS,
            },
            ["customer_id"],
        ),
        returns={"type": "array", "items": _ORDER},
    ),
    ToolSpec(
        name="get_order",
        description="Get one order by id, with its product, quantity, total in cents and status.",
        parameters=_obj(
            {"order_id": {"type": "string", "description": "Order id, like ord_0001."}},
            ["order_id"],
        ),
        returns=_ORDER,
    ),
    ToolSpec(
        name="create_order",
        description="Place a new pending order for a customer. Fails with 'conflict' when there "
        "is not enough stock.",
        parameters=_obj(
            {
                "customer_id": {"type": "string", "description": "Customer id, like cus_0001."},
                "product_id": {"type": "string", "description": "Product id, like prd_0001."},
                "quantity": _QUANTITY,
            },
            ["customer_id", "product_id", "quantity"],
        ),
        returns=_ORDER,
        mutates=True,
    ),
    ToolSpec(
        name="cancel_order",
        description="Cancel a pending order and put its units back in stock. Shipped or "
        "cancelled orders cannot be cancelled.",
        parameters=_obj(
            {"order_id": {"type": "string", "description": "Order id, like ord_0001."}},
            ["order_id"],
        ),
        returns=_ORDER,
        mutates=True,
    ),
    ToolSpec(
        name="update_order_quantity",
        description="Change the quantity of a pending order; stock is adjusted. Fails with "
        "'conflict' when stock is short.",
        parameters=_obj(
            {
                "order_id": {"type": "string", "description": "Order id, like ord_0001."},
                "quantity": _QUANTITY,
            },
            ["order_id", "quantity"],
        ),
        returns=_ORDER,
        mutates=True,
    ),
]
"""The shop's tools."""


def _version() -> str:
    try:
        return metadata.version("envkernel-sample")
    except metadata.PackageNotFoundError:
        return "0"


def shop_env(seed: int = 0, source: str = "") -> EnvSpec:
    """The ``shop-v1`` environment. Its state does not depend on ``seed``; the seed is recorded."""
    code = resources.files(__package__).joinpath("shop_env.py").read_text(encoding="utf-8")
    return EnvSpec(
        id=ENV_ID,
        name="Small shop",
        domain="e-commerce",
        description=(
            "A small online shop: customers, a catalogue of products with prices and stock, "
            "and orders that are pending, shipped or cancelled. Orders can be placed, "
            "changed and cancelled while pending."
        ),
        tools=list(TOOLS),
        behaviour=CodeBehaviour(source=code),
        seed_sql=SEED_SQL,
        generated={"orders": ["id", "created_at"]},
        policy=DomainPolicy(
            text=(
                "Customers may look up products, customers and orders, place orders and change "
                "their quantity. Cancelling an order cannot be undone: ask the customer to "
                "confirm first unless the request already does."
            ),
            confirm={"cancel_order": "cancel an order"},
        ),
        provenance=Provenance(
            source_kind="sample",
            source=source,
            plugin="sample",
            plugin_version=_version(),
            seed=seed,
        ),
    )


class SampleSynthesizer:
    """Synthesizer ``sample``: returns the hand-written shop environment for every request."""

    sources = ("sample",)

    def synthesize(self, request: EnvRequested, ctx: Any = None) -> EnvSpec:
        """Return ``shop-v1`` (deterministic; the request's seed goes into its provenance)."""
        return shop_env(seed=request.seed, source=request.source)


@hookimpl
def register_synthesizers(register) -> None:
    """Register the ``sample`` synthesizer."""
    register("sample", SampleSynthesizer)
