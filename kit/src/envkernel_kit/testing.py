"""Test helpers: an in-memory sandbox, run-like contexts and a toy shop environment.

They let verifier, sampler, policy and trainer code be unit-tested without a bus. They are test
doubles and say so: :class:`FakeSandbox` stands in for a sandbox (a dict of tables and Python tool
functions, no executor), :class:`FakeContext` for the kernel's ``Context`` (every attribute and
method a role method may use, without a bus), and :class:`RunnerContext` opens *real* sandboxes
through a sandbox runner. The toy shop follows the shape of the sample environment (customers,
products, orders) but is not it; integration tests and the conformance checks run the real one.
"""

from __future__ import annotations

import asyncio
import copy
import random
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import structlog

from envkernel.config import RunConfig
from envkernel_schemas import CodeBehaviour, EnvSpec, ToolError, ToolResult, ToolSpec

from .naming import State

ToolImpl = Callable[[State, dict[str, Any]], Any]
"""A fake tool: takes the (mutable) state and the arguments, returns a JSON value."""


class ToolFailure(Exception):
    """Raised by a fake tool to return a tool error."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class FakeSandbox:
    """An in-memory sandbox: the state is a dict, tools are Python functions over it."""

    def __init__(
        self, state: State, tools: dict[str, ToolImpl], specs: list[ToolSpec] | None = None
    ) -> None:
        self._state = copy.deepcopy(state)
        self._tools = tools
        self._specs = {t.name: t for t in specs or []}
        self._snaps: dict[str, State] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.closed = False
        self.id = "fake"

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Call a tool; unknown tools, missing arguments and ToolFailure become tool errors."""
        self.calls.append((tool, dict(arguments)))
        fn = self._tools.get(tool)
        if fn is None:
            return ToolResult(
                ok=False, error=ToolError(code="unknown_tool", message=f"no tool {tool!r}")
            )
        spec = self._specs.get(tool)
        if spec is not None:
            for r in spec.parameters.get("required", []):
                if r not in arguments:
                    return ToolResult(
                        ok=False, error=ToolError(code="invalid", message=f"missing argument {r!r}")
                    )
        before = copy.deepcopy(self._state)
        try:
            value = fn(self._state, dict(arguments))
        except ToolFailure as exc:
            self._state = before
            return ToolResult(ok=False, error=ToolError(code=exc.code, message=exc.message))
        except (KeyError, TypeError, ValueError) as exc:
            self._state = before
            return ToolResult(
                ok=False, error=ToolError(code="invalid", message=f"{type(exc).__name__}: {exc}")
            )
        return ToolResult(ok=True, value=copy.deepcopy(value))

    async def snapshot(self) -> str:
        """Save the state."""
        handle = f"s{len(self._snaps)}"
        self._snaps[handle] = copy.deepcopy(self._state)
        return handle

    async def restore(self, handle: str) -> None:
        """Return to a saved state."""
        self._state = copy.deepcopy(self._snaps[handle])

    async def patch(self, rows: list[dict[str, Any]]) -> int:
        """Insert rows (``{"table": ..., "row": {...}}`` each, a task's planted rows), all or
        none."""
        if any(
            not isinstance(r, dict)
            or r.get("table") not in self._state
            or not isinstance(r.get("row"), dict)
            for r in rows
        ):
            raise ValueError(
                f"patch rows must name one of the tables {sorted(self._state)} and give a row each"
            )
        for r in rows:
            self._state[r["table"]].append(copy.deepcopy(r["row"]))
        return len(rows)

    async def state(self) -> State:
        """Dump the state, rows sorted by id."""
        return {
            t: sorted(copy.deepcopy(rows), key=lambda r: (str(type(r.get("id"))), r.get("id") or 0))
            for t, rows in self._state.items()
        }

    async def close(self) -> None:
        """Close it."""
        self.closed = True


_T = TypeVar("_T")


class FakeContext:
    """The kernel's ``Context`` without a bus: the same attributes (``run_id``, ``component``,
    ``role``, ``settings``, ``seed``, ``iteration``, ``out_dir``, ``log``, ``config``) and methods
    (``rng``, ``sandbox``, ``env``, ``step``, ``wait``), so role methods read them directly."""

    def __init__(
        self,
        *,
        component: str = "test",
        role: str = "",
        seed: int = 0,
        iteration: int = 0,
        settings: Any = None,
        out_dir: Path | None = None,
        sandboxes: dict[str, Callable[[], FakeSandbox]] | None = None,
        envs: dict[str, EnvSpec] | None = None,
        config: RunConfig | None = None,
    ) -> None:
        self.run_id = "test-run"
        self.component = component
        self.role = role
        self.seed = seed
        self.iteration = iteration
        self.settings = settings
        self.out_dir = out_dir or Path(".")
        self.config = config or RunConfig(run_id=self.run_id, seed=seed, out=str(self.out_dir))
        self.log = structlog.get_logger("test").bind(component=component)
        self._sandboxes = sandboxes or {}
        self._envs = envs or {}
        self.opened: list[Any] = []
        self.steps: list[tuple[int, dict[str, Any]]] = []
        """Every ``(turn, message)`` a policy published through :meth:`step`."""
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None

    def rng(self, *keys: object) -> random.Random:
        """Deterministic randomness, like the kernel's."""
        return random.Random(f"{self.seed}/{self.component}/" + "/".join(map(str, keys)))

    @asynccontextmanager
    async def sandbox(self, env: EnvSpec) -> AsyncIterator[FakeSandbox]:
        """Open the fake sandbox registered for ``env.id``."""
        sb = self._sandboxes[env.id]()
        self.opened.append(sb)
        try:
            yield sb
        finally:
            await sb.close()

    async def env(self, env_id: str) -> EnvSpec:
        """An environment by id."""
        return self._envs[env_id]

    async def step(self, request: Any, turn: int, message: dict[str, Any]) -> None:
        """Record one step of a rollout (the kernel publishes it as ``rollout.step``)."""
        self.steps.append((turn, message))

    def wait(self, coro: Coroutine[Any, Any, _T], timeout: float | None = None) -> _T:
        """From a sync role method in a worker thread: run ``coro`` on the loop this context was
        made on (or on a new loop when it was made outside one)."""
        if self._loop is None:
            return asyncio.run(asyncio.wait_for(coro, timeout))
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)


class RunnerContext(FakeContext):
    """A :class:`FakeContext` whose sandboxes are real ones, opened by a sandbox runner
    (anything with ``async open(env, index)``, e.g. ``envkernel_process.ProcessRunner``)."""

    def __init__(self, runner: Any, **kw: Any) -> None:
        super().__init__(**kw)
        self.runner = runner

    @asynccontextmanager
    async def sandbox(self, env: EnvSpec) -> AsyncIterator[Any]:
        """Open a sandbox for ``env`` through the runner."""
        sb = await self.runner.open(env, 0)
        self.opened.append(sb)
        try:
            yield sb
        finally:
            await sb.close()


# -- a toy shop -------------------------------------------------------------------------------

CLOCK = "2024-06-01T12:00:00Z"

SHOP_STATE: State = {
    "customers": [
        {"id": 1, "name": "Ann Lee", "email": "ann@example.com", "tier": "gold"},
        {"id": 2, "name": "Bo Diaz", "email": "bo@example.com", "tier": "silver"},
        {"id": 3, "name": "Cy Young", "email": "cy@example.com", "tier": "silver"},
    ],
    "products": [
        {
            "id": 1,
            "name": "Desk Lamp",
            "sku": "LAMP-01",
            "price": 29.5,
            "stock": 10,
            "category": "lighting",
        },
        {
            "id": 2,
            "name": "Office Chair",
            "sku": "CHAIR-02",
            "price": 149.0,
            "stock": 3,
            "category": "furniture",
        },
        {
            "id": 3,
            "name": "Standing Desk",
            "sku": "DESK-03",
            "price": 399.99,
            "stock": 0,
            "category": "furniture",
        },
    ],
    "orders": [
        {
            "id": 1,
            "customer_id": 1,
            "product_id": 1,
            "quantity": 2,
            "status": "pending",
            "total": 59.0,
            "created_at": "2024-05-01T09:00:00Z",
        },
        {
            "id": 2,
            "customer_id": 1,
            "product_id": 2,
            "quantity": 1,
            "status": "shipped",
            "total": 149.0,
            "created_at": "2024-05-02T09:00:00Z",
        },
        {
            "id": 3,
            "customer_id": 2,
            "product_id": 2,
            "quantity": 1,
            "status": "pending",
            "total": 149.0,
            "created_at": "2024-05-03T09:00:00Z",
        },
        {
            "id": 4,
            "customer_id": 3,
            "product_id": 1,
            "quantity": 1,
            "status": "cancelled",
            "total": 29.5,
            "created_at": "2024-05-04T09:00:00Z",
        },
    ],
}


def _row(state: State, table: str, id_: Any, what: str) -> dict[str, Any]:
    for r in state[table]:
        if r["id"] == id_:
            return r
    raise ToolFailure("not_found", f"no {what} with id {id_!r}")


def _find_customer(s: State, a: dict[str, Any]) -> Any:
    for r in s["customers"]:
        if r["email"].lower() == str(a["email"]).strip().lower():
            return r
    raise ToolFailure("not_found", f"no customer with email {a['email']!r}")


def _list_products(s: State, a: dict[str, Any]) -> Any:
    return [r for r in s["products"] if "category" not in a or r["category"] == a["category"]]


def _get_product(s: State, a: dict[str, Any]) -> Any:
    return _row(s, "products", a["product_id"], "product")


def _list_orders(s: State, a: dict[str, Any]) -> Any:
    _row(s, "customers", a["customer_id"], "customer")
    return [
        r
        for r in s["orders"]
        if r["customer_id"] == a["customer_id"]
        and ("status" not in a or r["status"] == a["status"])
    ]


def _get_order(s: State, a: dict[str, Any]) -> Any:
    o = dict(_row(s, "orders", a["order_id"], "order"))
    o["product_name"] = _row(s, "products", o["product_id"], "product")["name"]
    return o


def _create_order(s: State, a: dict[str, Any]) -> Any:
    _row(s, "customers", a["customer_id"], "customer")
    p = _row(s, "products", a["product_id"], "product")
    q = int(a["quantity"])
    if q < 1:
        raise ToolFailure("invalid", "quantity must be at least 1")
    if p["stock"] < q:
        raise ToolFailure("conflict", f"only {p['stock']} in stock")
    p["stock"] -= q
    o = {
        "id": max(r["id"] for r in s["orders"]) + 1,
        "customer_id": a["customer_id"],
        "product_id": p["id"],
        "quantity": q,
        "status": "pending",
        "total": round(p["price"] * q, 2),
        "created_at": CLOCK,
    }
    s["orders"].append(o)
    return o


def _pending(s: State, order_id: Any) -> dict[str, Any]:
    o = _row(s, "orders", order_id, "order")
    if o["status"] != "pending":
        raise ToolFailure("conflict", f"order {order_id} is {o['status']}")
    return o


def _cancel_order(s: State, a: dict[str, Any]) -> Any:
    o = _pending(s, a["order_id"])
    o["status"] = "cancelled"
    _row(s, "products", o["product_id"], "product")["stock"] += o["quantity"]
    return o


def _update_order_quantity(s: State, a: dict[str, Any]) -> Any:
    o = _pending(s, a["order_id"])
    p = _row(s, "products", o["product_id"], "product")
    q = int(a["quantity"])
    if q < 1:
        raise ToolFailure("invalid", "quantity must be at least 1")
    if p["stock"] + o["quantity"] < q:
        raise ToolFailure("conflict", "not enough stock")
    p["stock"] += o["quantity"] - q
    o["quantity"] = q
    o["total"] = round(p["price"] * q, 2)
    return o


def _broken(s: State, a: dict[str, Any]) -> Any:
    raise ToolFailure("crashed", "division by zero")


SHOP_IMPL: dict[str, ToolImpl] = {
    "find_customer": _find_customer,
    "list_products": _list_products,
    "get_product": _get_product,
    "list_orders": _list_orders,
    "get_order": _get_order,
    "create_order": _create_order,
    "cancel_order": _cancel_order,
    "update_order_quantity": _update_order_quantity,
    "broken_report": _broken,
}


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required}


SHOP_TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="find_customer",
        description="Find a customer by email.",
        parameters=_obj({"email": {"type": "string"}}, ["email"]),
    ),
    ToolSpec(
        name="list_products",
        description="List products, optionally by category.",
        parameters=_obj({"category": {"type": "string", "enum": ["lighting", "furniture"]}}, []),
    ),
    ToolSpec(
        name="get_product",
        description="Get a product.",
        parameters=_obj({"product_id": {"type": "integer"}}, ["product_id"]),
    ),
    ToolSpec(
        name="list_orders",
        description="List a customer's orders.",
        parameters=_obj(
            {
                "customer_id": {"type": "integer"},
                "status": {"type": "string", "enum": ["pending", "shipped", "cancelled"]},
            },
            ["customer_id"],
        ),
    ),
    ToolSpec(
        name="get_order",
        description="Get an order.",
        parameters=_obj({"order_id": {"type": "integer"}}, ["order_id"]),
    ),
    ToolSpec(
        name="create_order",
        description="Place an order.",
        parameters=_obj(
            {
                "customer_id": {"type": "integer"},
                "product_id": {"type": "integer"},
                "quantity": {"type": "integer", "minimum": 1},
            },
            ["customer_id", "product_id", "quantity"],
        ),
        mutates=True,
    ),
    ToolSpec(
        name="cancel_order",
        description="Cancel a pending order.",
        parameters=_obj({"order_id": {"type": "integer"}}, ["order_id"]),
        mutates=True,
    ),
    ToolSpec(
        name="update_order_quantity",
        description="Change the quantity of a pending order.",
        parameters=_obj(
            {"order_id": {"type": "integer"}, "quantity": {"type": "integer", "minimum": 1}},
            ["order_id", "quantity"],
        ),
        mutates=True,
    ),
]


def toy_shop(
    *, broken: bool = False, env_id: str = "toyshop"
) -> tuple[EnvSpec, Callable[[], FakeSandbox]]:
    """The toy shop: its EnvSpec and a factory of fresh fake sandboxes at the seed state.

    With ``broken=True`` it has one more tool, ``broken_report``, that always crashes.
    """
    tools = list(SHOP_TOOLS)
    if broken:
        tools.append(
            ToolSpec(
                name="broken_report",
                description="A report.",
                parameters=_obj({"customer_id": {"type": "integer"}}, ["customer_id"]),
            )
        )
    env = EnvSpec(
        id=env_id,
        name="Toy shop",
        tools=tools,
        behaviour=CodeBehaviour(source="# in-memory fake"),
        domain="e-commerce",
        generated={"orders": ["id", "created_at"]},
    )
    return env, lambda: FakeSandbox(SHOP_STATE, SHOP_IMPL, tools)
