"""The shared API vocabulary: words, singular and plural, tables and tool names, JSON Schema
types and argument generation (moved here from the probe plugin with the code they test)."""

from __future__ import annotations

import random

from envkernel_kit.argsgen import (
    ArgumentBuilder,
    coerce,
    default_values,
    schema_nullable,
    schema_type,
)
from envkernel_kit.naming import (
    id_entity,
    is_id_name,
    match_table,
    plural,
    singular,
    tool_parts,
    words,
)
from envkernel_kit.testing import SHOP_STATE, SHOP_TOOLS
from envkernel_schemas import ToolSpec


def _tool(name: str) -> ToolSpec:
    return next(t for t in SHOP_TOOLS if t.name == name)


def test_words_and_plurals() -> None:
    assert words("updateOrderQuantity") == ["update", "order", "quantity"]
    assert words("get_order-item") == ["get", "order", "item"]
    assert singular("orders") == "order"
    assert singular("categories") == "category"
    assert singular("addresses") == "address"
    assert singular("status") == "status"
    assert (
        singular("sizes") == "size" and singular("boxes") == "box" and singular("Orders") == "order"
    )
    assert plural("category") == "categories"
    assert plural("box") == "boxes"
    assert plural("order") == "orders"


def test_match_table_and_tool_parts() -> None:
    tables = ["customers", "products", "orders", "order_items", "categories"]
    assert match_table("order", tables) == "orders"
    assert match_table("category", tables) == "categories"
    assert match_table("item", tables) == "order_items"
    assert match_table("order_item", tables) == "order_items"
    assert match_table("invoice", tables) is None
    assert tool_parts("update_order_quantity", tables) == ("update", "order", "orders")
    assert tool_parts("list_products", tables) == ("list", "product", "products")
    assert tool_parts("get_order_items", tables) == ("get", "order_item", "order_items")
    assert tool_parts("weather", tables) == ("", "weather", None)
    assert is_id_name("customer_id") and is_id_name("id") and is_id_name("orderId")
    assert not is_id_name("identity")
    assert id_entity("customer_id") == "customer"
    assert id_entity("orderId") == "order"


def test_coerce_respects_schema() -> None:
    assert coerce("12", {"type": "integer"}) == 12
    assert coerce(3.0, {"type": "integer"}) == 3
    from envkernel_kit.argsgen import NO_VALUE

    assert coerce(3.5, {"type": "integer"}) is NO_VALUE
    assert coerce(True, {"type": "integer"}) is NO_VALUE
    assert coerce(0, {"type": "integer", "minimum": 1}) is NO_VALUE
    assert coerce(5, {"type": "string"}) == "5"
    assert coerce("x", {"type": "string", "enum": ["a"]}) is NO_VALUE
    assert schema_type({"type": ["string", "null"]}) == "string"
    assert default_values("quantity", {"type": "integer", "minimum": 2})[0] == 2
    assert default_values("contact_email", {"type": "string"}) == ["alex.rivera@example.com"]


def test_sources_draw_from_state() -> None:
    b = ArgumentBuilder(SHOP_STATE)
    rng = random.Random(0)
    props = lambda name: _tool(name).parameters["properties"]  # noqa: E731
    # order_id -> ids of orders
    assert b.sources(_tool("get_order"), "order_id", props("get_order")["order_id"], rng)[:4] == [
        1,
        2,
        3,
        4,
    ]
    # email -> the customers' emails
    assert b.sources(_tool("find_customer"), "email", props("find_customer")["email"], rng)[:3] == [
        "ann@example.com",
        "bo@example.com",
        "cy@example.com",
    ]
    # enum first
    assert (
        b.sources(_tool("list_orders"), "status", props("list_orders")["status"], rng)[0]
        == "pending"
    )
    # quantity: column values then defaults, all >= minimum
    q = b.sources(_tool("create_order"), "quantity", props("create_order")["quantity"], rng)
    assert q[0] == 2 and all(v >= 1 for v in q)
    # plain id -> the tool's own table
    t = ToolSpec(
        name="get_product",
        parameters={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
    )
    assert b.sources(t, "id", {"type": "string"}, rng)[:3] == ["1", "2", "3"]
    # search text -> name-like columns of the tool's table
    t = ToolSpec(
        name="search_products",
        parameters={"type": "object", "properties": {"query": {"type": "string"}}},
    )
    assert b.sources(t, "query", {"type": "string"}, rng)[0] == "Desk Lamp"


def test_nested_array_arguments() -> None:
    b = ArgumentBuilder(SHOP_STATE)
    schema = {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"product_id": {"type": "integer"}, "quantity": {"type": "integer"}},
            "required": ["product_id", "quantity"],
        },
    }
    vals = b.sources(ToolSpec(name="create_order"), "items", schema, random.Random(0))
    assert vals[0] == [{"product_id": 1, "quantity": 2}]


def test_candidates_are_distinct_and_complete() -> None:
    b = ArgumentBuilder(SHOP_STATE)
    cands = b.candidates(_tool("create_order"), random.Random(1), 6)
    assert 1 < len(cands) <= 6
    assert all(set(c) == {"customer_id", "product_id", "quantity"} for c in cands)
    assert len({str(sorted(c.items())) for c in cands}) == len(cands)
    assert cands[0] == {"customer_id": 1, "product_id": 1, "quantity": 2}
    cands = b.candidates(_tool("list_orders"), random.Random(1), 6, fixed={"customer_id": 2})
    assert all(c["customer_id"] == 2 for c in cands)
    assert any("status" in c for c in cands)


def test_one_schema_type_for_json_schema_and_openapi() -> None:
    assert schema_type({"oneOf": [{"type": "null"}, {"type": "integer"}]}) == "integer"
    assert schema_nullable({"oneOf": [{"type": "null"}, {"type": "integer"}]})
    assert schema_type({"allOf": [{"properties": {"a": {}}}]}) == "object"
    assert schema_type({"items": {}}) == "array" and schema_type({"enum": [True]}) == "boolean"
    assert schema_type({"type": "string", "nullable": True}) == "string" and schema_nullable(
        {"type": "string", "nullable": True}
    )
    assert schema_type("not a schema") == "" and not schema_nullable({"type": "string"})
