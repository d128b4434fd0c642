"""shop-v1: a small shop with customers, products and orders (env.py of the ``sample`` synthesizer).

This file is never imported by the plugin: it is sent as text to the sandbox executor, which runs
each tool as ``tool(env, **arguments)`` with ``env.db`` (SQLite, rows as dicts), ``env.new_id``,
``env.now`` and ``ToolError`` in scope. Prices are integer cents.
"""
# ruff: noqa: F821  (ToolError is injected by the executor)

STATUSES = ("pending", "shipped", "cancelled")


def _int(value, name, minimum=None):
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError("invalid", f"{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ToolError("invalid", f"{name} must be at least {minimum}, got {value}")
    return value


def _text(value, name):
    if not isinstance(value, str) or not value.strip():
        raise ToolError("invalid", f"{name} must be a non-empty string")
    return value.strip()


def _customer(env, customer_id):
    row = env.db.execute(
        "SELECT id, name, email, city FROM customers WHERE id = ?",
        (_text(customer_id, "customer_id"),),
    ).fetchone()
    if row is None:
        raise ToolError(
            "not_found", f"no customer with id {customer_id!r}; use find_customer to look one up"
        )
    return row


def _product(env, product_id):
    row = env.db.execute(
        "SELECT id, name, category, price_cents, stock FROM products WHERE id = ?",
        (_text(product_id, "product_id"),),
    ).fetchone()
    if row is None:
        raise ToolError(
            "not_found", f"no product with id {product_id!r}; use list_products to find one"
        )
    return row


_ORDER = """
    SELECT o.id, o.customer_id, o.product_id, p.name AS product_name, o.quantity,
           o.unit_price_cents, o.quantity * o.unit_price_cents AS total_cents, o.status, \
o.created_at
    FROM orders o JOIN products p ON p.id = o.product_id
"""


def _order(env, order_id):
    row = env.db.execute(_ORDER + " WHERE o.id = ?", (_text(order_id, "order_id"),)).fetchone()
    if row is None:
        raise ToolError(
            "not_found",
            f"no order with id {order_id!r}; use list_orders to see a customer's orders",
        )
    return row


def _new_order_id(env):
    while True:  # ids continue after the seed's own ids
        order_id = env.new_id("ord")
        if env.db.execute("SELECT 1 FROM orders WHERE id = ?", (order_id,)).fetchone() is None:
            return order_id


def find_customer(env, email=None, name=None):
    if email is None and name is None:
        raise ToolError("invalid", "give an email or a name (or part of one)")
    clauses, params = [], []
    if email is not None:
        clauses.append("lower(email) = lower(?)")
        params.append(_text(email, "email"))
    if name is not None:
        clauses.append("lower(name) LIKE '%' || lower(?) || '%'")
        params.append(_text(name, "name"))
    return env.db.execute(
        "SELECT id, name, email, city FROM customers WHERE "
        + " AND ".join(clauses)
        + " ORDER BY id",
        params,
    ).fetchall()


def get_customer(env, customer_id):
    return _customer(env, customer_id)


def list_products(env, query=None, category=None, in_stock_only=False):
    sql = "SELECT id, name, category, price_cents, stock FROM products WHERE 1 = 1"
    params = []
    if query is not None:
        sql += " AND lower(name) LIKE '%' || lower(?) || '%'"
        params.append(_text(query, "query"))
    if category is not None:
        sql += " AND lower(category) = lower(?)"
        params.append(_text(category, "category"))
    if in_stock_only:
        sql += " AND stock > 0"
    return env.db.execute(sql + " ORDER BY id", params).fetchall()


def get_product(env, product_id):
    return _product(env, product_id)


def list_orders(env, customer_id, status=None):
    customer = _customer(env, customer_id)
    sql = _ORDER + " WHERE o.customer_id = ?"
    params = [customer["id"]]
    if status is not None:
        if status not in STATUSES:
            raise ToolError(
                "invalid", f"status must be one of {', '.join(STATUSES)}, got {status!r}"
            )
        sql += " AND o.status = ?"
        params.append(status)
    return env.db.execute(sql + " ORDER BY o.created_at, o.id", params).fetchall()


def get_order(env, order_id):
    return _order(env, order_id)


def create_order(env, customer_id, product_id, quantity):
    customer = _customer(env, customer_id)
    product = _product(env, product_id)
    quantity = _int(quantity, "quantity", 1)
    if product["stock"] < quantity:
        raise ToolError(
            "conflict",
            f"only {product['stock']} of {product['name']!r} in stock, cannot order {quantity}",
        )
    env.db.execute("UPDATE products SET stock = stock - ? WHERE id = ?", (quantity, product["id"]))
    order_id = _new_order_id(env)
    env.db.execute(
        "INSERT INTO orders (id, customer_id, product_id, quantity, unit_price_cents, "
        "status, created_at) VALUES (?, ?, ?, ?, ?, 'pending', ?)",
        (order_id, customer["id"], product["id"], quantity, product["price_cents"], env.now()),
    )
    return _order(env, order_id)


def cancel_order(env, order_id):
    order = _order(env, order_id)
    if order["status"] != "pending":
        raise ToolError(
            "conflict",
            f"order {order['id']} is {order['status']}; only pending orders can be cancelled",
        )
    env.db.execute("UPDATE orders SET status = 'cancelled' WHERE id = ?", (order["id"],))
    env.db.execute(
        "UPDATE products SET stock = stock + ? WHERE id = ?",
        (order["quantity"], order["product_id"]),
    )
    return _order(env, order["id"])


def update_order_quantity(env, order_id, quantity):
    order = _order(env, order_id)
    quantity = _int(quantity, "quantity", 1)
    if order["status"] != "pending":
        raise ToolError(
            "conflict",
            f"order {order['id']} is {order['status']}; only pending orders can be changed",
        )
    extra = quantity - order["quantity"]
    product = _product(env, order["product_id"])
    if extra > product["stock"]:
        raise ToolError(
            "conflict",
            f"only {product['stock']} more of {product['name']!r} in stock; the order can "
            f"grow to at most {order['quantity'] + product['stock']}",
        )
    env.db.execute("UPDATE products SET stock = stock - ? WHERE id = ?", (extra, product["id"]))
    env.db.execute("UPDATE orders SET quantity = ? WHERE id = ?", (quantity, order["id"]))
    return _order(env, order["id"])
