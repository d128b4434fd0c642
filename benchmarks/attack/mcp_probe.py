"""Probe the MCP surface of `envkernel serve` as an MCP client: resources, templates, state with
reasons, and the HTTP state route under the MCP session's name.

    python benchmarks/attack/mcp_probe.py URL TASK_ID
"""

import asyncio
import json
import sys

import httpx
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main() -> None:
    """Open a task session with a chosen session name and read everything readable."""
    url, task_id = sys.argv[1:]
    name = "attack-session-1"
    client = httpx2.AsyncClient(headers={"X-Envkernel-Session": name}, timeout=30)
    async with (
        streamable_http_client(f"{url}/mcp?task={task_id}", http_client=client) as streams,
        ClientSession(*streams[:2]) as s,
    ):
        await s.initialize()
        tools = await s.list_tools()
        print("tools:", [t.name for t in tools.tools])
        res = await s.list_resources()
        print("resources:", [(r.uri, r.name) for r in res.resources])
        try:
            tpl = await s.list_resource_templates()
            print("templates:", [t.uriTemplate for t in tpl.resourceTemplates])
        except Exception as e:
            print("templates: error", e)
        for uri in (
            "envkernel://session/state",
            "envkernel://session/state?reasons=1",
            "envkernel://session/reasons",
            "envkernel://task",
            "envkernel://session/task",
        ):
            try:
                r = await s.read_resource(uri)
                print("read", uri, "->", r.contents[0].text[:800])
            except Exception as e:
                print("read", uri, "-> error", str(e)[:200])
        eid = json.loads((await s.read_resource("envkernel://session/state")).contents[0].text)[
            "episode_id"
        ]
        with httpx.Client(base_url=url) as h:
            print(
                "GET /state episode_id=<MCP state's episode_id>&reasons=1 ->",
                h.get("/state", params={"episode_id": eid, "reasons": 1}).text[:800],
            )
            for params in ({"episode_id": name, "reasons": 1},):
                print("GET /state", params, "->", h.get("/state", params=params).text[:800])
            print(
                "GET /state X-Envkernel-Session ->",
                h.get("/state", params={"reasons": 1}, headers={"X-Envkernel-Session": name}).text[
                    :800
                ],
            )
        prompts = None
        try:
            prompts = await s.list_prompts()
            print("prompts:", [p.name for p in prompts.prompts])
        except Exception as e:
            print("prompts: error", str(e)[:200])


if __name__ == "__main__":
    asyncio.run(main())
