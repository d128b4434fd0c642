"""An MCP client that solves a write task without reading its condition: it tries the write on
every row, reads the reward from the session's state resource after each try, and undoes the
write when the reward did not reach 1.

    python benchmarks/attack/mcp_bruteforce.py URL TASK_ID
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def reward(s: ClientSession) -> float:
    """The session's current reward, from the MCP state resource."""
    r = await s.read_resource("envkernel://session/state")
    return json.loads(r.contents[0].text)["reward"]


async def main() -> None:
    """Try update_order(quantity=1) on every order; keep the one the reward likes."""
    url, task_id = sys.argv[1:]
    async with (
        streamable_http_client(f"{url}/mcp?task={task_id}") as streams,
        ClientSession(*streams[:2]) as s,
    ):
        await s.initialize()
        orders = json.loads((await s.call_tool("list_orders", {"limit": 100})).content[0].text)
        orders = orders.get("data", orders) if isinstance(orders, dict) else orders
        print("reward at start:", await reward(s), "orders:", len(orders))
        tries = 0
        for o in reversed(orders):  # the worst order for this task
            tries += 1
            await s.call_tool("update_order", {"order_id": o["id"], "quantity": 1})
            got = await reward(s)
            if got > 0:  # any credit says this is the row
                print(
                    f"reward {got} after {tries} tries: {o['id']} "
                    f"(customer {o.get('customer_id')}, "
                    f"quantity was {o.get('quantity')})"
                )
                break
            await s.call_tool("update_order", {"order_id": o["id"], "quantity": o["quantity"]})
            print(f"  try {o['id']}: reward {got}, after undo {await reward(s)}")
        end = await s.call_tool("submit_answer", {"answer": "Done."})
        print("submitted:", end.structured_content)


if __name__ == "__main__":
    asyncio.run(main())
