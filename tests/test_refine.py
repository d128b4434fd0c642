"""The optional LLM refiner (``chains.refine_*``, :mod:`envkernel_kit.refine`): a scripted
OpenAI-compatible server returns good, leaky and wrong rewrites; only the good ones are kept, the
others keep the original request, every task is still gated, and the counts say which is which."""

from __future__ import annotations

import json
import re
from typing import Any

from envkernel_kit.refine import check_rewrite, must_keep, must_not_show
from envkernel_kit.scripted import ScriptedServer, completion

TOOLS = re.compile(r"\b(cancel_order|get_customer)\b")


def test_check_rewrite_keeps_facts_and_refuses_leaks() -> None:
    req = 'I\'m Ann Lee. Cancel my pending order of the "Desk Lamp" with quantity 2.'
    keep = must_keep(req, ["Desk Lamp", 2, "pending"], ["Ann Lee"])
    assert keep == ["Desk Lamp", "2", "pending", "Ann Lee"]
    forbid = must_not_show(["gold"], ["Only the ones over 100."], ["ord_0001"], req)
    good = check_rewrite(req, 'Ann Lee here: that pending "Desk Lamp" order with quantity 2, please cancel it, plans changed.', keep=keep,
                         forbid=forbid, tool_pattern=TOOLS)
    assert good.ok and good.verdict == "refined"
    cases = {
        "names_tool": f"{req} Use cancel_order.",
        "lost_fact": "Ann Lee here, please cancel my pending lamp order.",  # the quoted product and the quantity are gone
        "added_fact": 'Ann Lee here: cancel my pending "Desk Lamp" order with quantity 2 or 3.',
        "leaks": f"{req} It is order ord_0001.",
        "unchanged": req,
        "empty": "",
    }
    for verdict, text in cases.items():
        r = check_rewrite(req, text, keep=keep, forbid=forbid, tool_pattern=TOOLS)
        assert not r.ok and r.verdict == verdict and r.text == req, (verdict, r)


def _rewrites(request: dict[str, Any], n: int) -> Any:
    """Good, leaky (names a tool) and wrong (drops every fact) rewrites, in turn."""
    original = request["messages"][-1]["content"]
    return completion([f"Hi there! {original} Thanks so much.", f"{original} (use the list_orders tool)",
                       "Please sort out my account."][n % 3])


def test_a_run_keeps_good_rewrites_and_regates_them(envk) -> None:  # type: ignore[no-untyped-def]
    with ScriptedServer(_rewrites) as server:
        run = envk.run("--set", f"chains.refine_base_url={server.base_url}", "--set", "chains.refine_model=refiner",
                       "--set", "chains.tasks_per_env=12", run_id="refine", source="sample")
        asked = len(server.requests)
        prompt = server.requests[0]["messages"][0]["content"]
    s = run.summary
    assert s["exit_code"] == 0 and s["failures"] == 0, run.proc.stderr[-3000:]
    assert "Keep every name, every quoted" in prompt and asked == s["tasks_proposed"] == 12
    stats = json.loads((run.dir / "envs" / "shop-v1" / "sampling.json").read_text())["chains"]["refiner"]
    assert stats["refined"] == 4 and stats["names_tool"] == 4 and stats["lost_fact"] == 4
    tasks = run.jsonl("tasks.jsonl")
    refined = [t for t in tasks if t["original_request"]]
    assert s["tasks_refined"] == len(refined) and 4 - s["tasks_rejected"] <= len(refined) <= 4
    for t in refined:  # a kept rewrite went through the gate like any task
        assert t["request"] == f"Hi there! {t['original_request']} Thanks so much."
    for t in tasks:
        assert "list_orders" not in t["request"] and t["request"] != "Please sort out my account."
