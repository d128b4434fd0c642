"""Probe `envkernel serve` as an agent would: what does each surface say about the expected answer?

python benchmarks/attack/serve_probe.py URL TASKS.jsonl
"""

import json
import sys

import httpx


def main() -> None:
    """Reset on a read task and a write task; read state with and without reasons; submit wrong."""
    url, tasks_file = sys.argv[1:]
    tasks = [json.loads(x) for x in open(tasks_file)]
    read = next(t for t in tasks if not t["outcome"]["mutates"] and t["outcome"]["answer_facts"])
    write = next(t for t in tasks if t["outcome"]["mutates"] and len(t["calls"]) >= 2)
    h = httpx.Client(base_url=url, timeout=30)
    for t in (read, write):
        print("\n=== task", t["id"], repr(t["request"]))
        r = h.post("/reset", json={"task_id": t["id"]}).json()
        eid = r["observation"].get("episode_id") or r.get("episode_id")
        print("reset keys:", sorted(r), sorted(r["observation"]), "eid", eid)
        print(
            "observation (no tools):", {k: v for k, v in r["observation"].items() if k != "tools"}
        )
        st = h.get("/state", params={"episode_id": eid}).json()
        print("state before any step:", st)
        st = h.get("/state", params={"episode_id": eid, "reasons": 1}).json()
        print("state?reasons=1 before any step:", json.dumps(st)[:1500])
        # one correct first call
        c = t["calls"][0]
        s = h.post(
            "/step",
            json={
                "episode_id": eid,
                "action": {
                    "type": "call_tool",
                    "tool_name": c["name"],
                    "arguments": c["arguments"],
                },
            },
        ).json()
        print("step reward:", s.get("reward"), "done:", s.get("done"))
        st = h.get("/state", params={"episode_id": eid}).json()
        print("state mid-episode (reward oracle?):", st)
        st = h.get("/state", params={"episode_id": eid, "reasons": 1}).json()
        print("state?reasons=1 mid-episode:", json.dumps(st)[:1500])
        s = h.post(
            "/step",
            json={"episode_id": eid, "action": {"type": "submit", "answer": "I don't know."}},
        ).json()
        print("submit:", json.dumps(s)[:600])
        st = h.get("/state", params={"episode_id": eid, "reasons": 1}).json()
        print("state?reasons=1 after submit:", json.dumps(st)[:1500])


if __name__ == "__main__":
    main()
