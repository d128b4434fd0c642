"""The ``llm`` synthesizer against a scripted OpenAI-compatible server, with real sandboxes.

The server (:class:`envkernel_kit.scripted.ScriptedServer`) stands in for a model and answers
from :class:`envkernel_llm.playbook.Playbook`; the client is the real ``openai`` client, and every
candidate runs in a real ``process`` sandbox (as root: its own uid, an empty network namespace,
Landlock). One module-scoped fixture writes one environment per behaviour; the tests read it.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path
from typing import Any

import msgspec
import pytest

from envkernel_kit.scripted import ScriptedServer, error
from envkernel_kit.testing import RunnerContext
from envkernel_llm import LLMSettings, LLMSynthesizer
from envkernel_llm.overlap import benchmarks, overlap
from envkernel_llm.playbook import Playbook
from envkernel_llm.reply import Candidate, Draft, ReplyProblem, code_findings, parse_files
from envkernel_llm.scenarios import subset_problem
from envkernel_llm.sources import SourceError, html_text, load_source
from envkernel_llm.templates import nearest, templates
from envkernel_schemas import EnvRequested

process = pytest.importorskip("envkernel_process")

BRIEFS = {
    "clean": "A lending library: books with copies, members who borrow them, loans that are "
    "returned.",
    "bug_then_fix": "A small bank: customers' accounts with balances, and transfers between "
    "accounts.",
    "network_then_fix": "Meeting room booking: rooms with a capacity, reservations for time slots.",
    "files_then_fix": "A lending library (audited) of books and loans.",
    "malformed_then_fix": "A credit union (chatty) with accounts and transfers.",
    "truncated_then_fix": "Room booking (verbose) with reservations.",
    "always_buggy": "A library (sloppy) of books, members and loans.",
    "benchmark_names": "A brokerage (clone) with accounts, balances and transfers.",
}
RULES = {
    "(audited)": "files_then_fix",
    "(chatty)": "malformed_then_fix",
    "(verbose)": "truncated_then_fix",
    "(sloppy)": "always_buggy",
    "(clone)": "benchmark_names",
    "bank": "bug_then_fix",
    "booking": "network_then_fix",
}


class Listener:
    """A TCP listener on loopback that counts the connections it gets (none may come from a
    sandbox)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.hits += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._t.join(2)
        self.sock.close()


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One environment per behaviour (max_rounds 3), the server's requests and the listener."""
    secret = tmp_path_factory.mktemp("host") / "secret.txt"
    secret.write_text("host-secret-7f3a\n")
    secret.chmod(0o600)
    listener = Listener()
    doc = tmp_path_factory.mktemp("docs") / "circulation-api.html"
    doc.write_text(
        "<html><body><h1>Circulation API</h1><h2>POST /loans</h2><p>Lends a "
        "<code>book</code> to a member; 409 when no copy is available.</p><h2>POST "
        "/loans/{id}/return</h2><p>Returns a loan.</p></body></html>"
    )
    written_doc = str(doc)

    async def go() -> dict[str, Any]:
        runner = process.ProcessRunner()
        ctx = RunnerContext(runner)
        try:
            with ScriptedServer(Playbook(RULES, port=listener.port, host_file=str(secret))) as srv:
                syn = LLMSynthesizer(
                    LLMSettings(base_url=srv.base_url, model="scripted-writer", max_rounds=3)
                )
                envs = {}
                for i, (b, brief) in enumerate(BRIEFS.items()):
                    req = EnvRequested(
                        run="t", id=f"r{i}", time=0.0, source_kind="brief", source=brief, index=i
                    )
                    envs[b] = await syn.synthesize(req, ctx)
                req = EnvRequested(
                    run="t", id="doc", time=0.0, source_kind="doc", source=str(doc), index=99
                )
                envs["doc"] = await syn.synthesize(req, ctx)
                return {"envs": envs, "requests": list(srv.requests)}
        finally:
            await runner.aclose()

    try:
        out = asyncio.run(go())
    finally:
        listener.close()
    out["hits"] = listener.hits
    out["doc"] = written_doc
    out["secret"] = "host-secret-7f3a"
    return out


def test_realistic_code_is_written_in_one_round(written: dict[str, Any]) -> None:
    env = written["envs"]["clean"]
    p = env.provenance
    assert p.rounds == 1 and not p.rejected and env.report is None
    assert {t.name for t in env.tools} == {
        "search_books",
        "get_member",
        "list_loans",
        "borrow_book",
        "return_book",
    }
    assert (
        "def borrow_book(env, member_id, book_id)" in env.behaviour.source
        and "CREATE TABLE loans" in env.seed_sql
    )
    assert p.model == "scripted-writer" and p.tokens > 0 and p.seconds > 0
    d = p.details
    assert d["brief"] == BRIEFS["clean"] and d["templates"][0] == "library"
    assert set(d["prompt_hashes"]) >= {"system", "schema", "code", "scenarios", "repair"}
    assert len(d["request_hashes"]) == d["model_calls"] == 3
    assert d["rounds"][0]["scenarios"] == d["rounds"][0]["scenarios_passed"] == 4


def test_an_html_api_reference_is_a_source(written: dict[str, Any]) -> None:
    env = written["envs"]["doc"]
    p = env.provenance
    assert (
        p.source_kind == "doc" and p.source == written["doc"] and p.rounds == 1 and not p.rejected
    )
    assert "## POST /loans" in p.details["document"] and "<code>" not in p.details["document"]
    assert p.details["source"]["format"] == "html" and len(p.details["source"]["sha256"]) == 64
    assert env.id == "llm-circulation-api-99"
    first = next(r for r in written["requests"] if "Circulation API" in r["messages"][1]["content"])
    assert "authentic documentation" in first["messages"][1]["content"]


def test_a_bug_the_scenarios_catch_is_fed_back_and_fixed(written: dict[str, Any]) -> None:
    p = written["envs"]["bug_then_fix"].provenance
    assert p.rounds == 2 and not p.rejected
    first = p.details["rounds"][0]
    assert first["reason"] == "scenarios_failed"
    assert any("acc_0003" in f and "expected 1500" in f for f in first["failures"])
    # the repair message carried those failures to the model
    repair = [r for r in written["requests"] if "Round 2 of 3" in str(r["messages"][-1]["content"])]
    assert repair and "expected 1500" in repair[0]["messages"][-1]["content"]


def test_network_is_blocked_by_the_sandbox_and_reported(written: dict[str, Any]) -> None:
    assert written["hits"] == 0, "a sandboxed tool reached the host's loopback listener"
    p = written["envs"]["network_then_fix"].provenance
    assert p.rounds == 2 and not p.rejected and "sandbox_blocked:network" in p.flags
    first = p.details["rounds"][0]
    assert first["reason"] == "sandbox_violation"
    assert any("network" in f and "urllib" in f for f in first["failures"])
    assert p.details["sandbox_blocked"] and p.details["sandbox_blocked"][0].startswith("network:")


def test_host_files_are_blocked_by_the_sandbox_and_reported(written: dict[str, Any]) -> None:
    env = written["envs"]["files_then_fix"]
    p = env.provenance
    assert p.rounds == 2 and not p.rejected and "sandbox_blocked:files" in p.flags
    assert any("open()" in f for f in p.details["rounds"][0]["failures"])
    assert written["secret"] not in msgspec.json.encode(env).decode()


def test_malformed_and_truncated_replies_are_asked_again(written: dict[str, Any]) -> None:
    for b, reason in (
        ("malformed_then_fix", "malformed_reply"),
        ("truncated_then_fix", "truncated_reply"),
    ):
        p = written["envs"][b].provenance
        assert p.rounds == 2 and not p.rejected, b
        first = p.details["rounds"][0]
        assert first["reason"] == reason and "still missing: env.py" in first["failures"][0]


def test_code_that_stays_wrong_is_rejected_with_its_reason(written: dict[str, Any]) -> None:
    env = written["envs"]["always_buggy"]
    p = env.provenance
    assert p.rounds == 3 and p.rejected == "scenarios_failed"
    assert env.report is not None and not env.report.kept and env.report.failures


def test_benchmark_overlap_is_flagged(written: dict[str, Any]) -> None:
    p = written["envs"]["benchmark_names"].provenance
    assert "overlap:bfcl-v3-multi-turn:trading_bot" in p.flags
    assert p.details["overlap"]["bfcl-v3-multi-turn:trading_bot"]["share"] == 1.0
    assert not any(f.startswith("overlap:") for f in written["envs"]["clean"].provenance.flags)


def test_templates_pass_their_own_scenarios_and_are_retrieved_by_the_brief() -> None:
    assert [t.name for t in templates()] == ["booking", "ledger", "library"]
    assert nearest("members borrow books from the library", 1)[0].name == "library"
    assert nearest("schedule appointments at a clinic", 1)[0].name == "booking"
    assert nearest("wallet payments and balances", 1)[0].name == "ledger"
    # every template is complete and parses (its scenarios ran in the fixture's rounds)
    for t in templates():
        d = Draft()
        d.update(t.files)
        c = Candidate.from_draft(d)
        assert {tool.name for tool in c.tools} <= set(c.findings.functions)


def test_model_errors_and_refusals_are_a_rejection_not_a_crash() -> None:
    async def go() -> Any:
        runner = process.ProcessRunner()
        try:
            with ScriptedServer([error(400, "context length exceeded")]) as srv:
                syn = LLMSynthesizer(
                    LLMSettings(base_url=srv.base_url, model="m", max_rounds=2, max_retries=0)
                )
                req = EnvRequested(
                    run="t", id="x", time=0.0, source_kind="brief", source="a shop", index=0
                )
                return await syn.synthesize(req, RunnerContext(runner))
        finally:
            await runner.aclose()

    env = asyncio.run(go())
    assert env.provenance.rejected == "model_error" and env.provenance.rounds == 1
    assert "HTTP 400" in env.report.failures[0]


def test_reply_parsing() -> None:
    files = parse_files(
        "Sure.\n```sql seed.sql\nCREATE TABLE t (id TEXT);\n```\ntext\n```python\ndef "
        "f(env):\n    return 1\n```\n"
    )
    assert set(files) == {"seed.sql", "env.py"} and files["env.py"].startswith("def f(env)")
    with pytest.raises(ReplyProblem, match="cut off"):
        parse_files("```python env.py\ndef f(env):\n")
    with pytest.raises(ReplyProblem, match="no fenced code block"):
        parse_files("I would write a function per tool.")
    with pytest.raises(ReplyProblem, match="syntax error at line 2"):
        code_findings("def f(env):\n    return (1,\n")
    found = code_findings(
        "import socket\nimport subprocess\n\ndef f(env):\n    return open('/etc/passwd').read()\n"
    )
    assert (
        found.network == ["import socket"]
        and "import subprocess" in found.host
        and "open()" in found.host
    )


def test_scenario_matching() -> None:
    assert (
        subset_problem(
            {"a": 1, "b": [{"id": "x"}]},
            {"a": 1.0, "b": [{"id": "y"}, {"id": "x", "n": 2}], "c": 0},
        )
        == ""
    )
    assert "has no field 'z'" in subset_problem({"z": 1}, {"a": 1})
    assert "no item matching" in subset_problem([{"id": "q"}], [{"id": "x"}])


def test_sources(tmp_path: Path) -> None:
    page = tmp_path / "api.html"
    page.write_text(
        "<html><head><style>x{}</style><script>evil()</script></head><body><h2>POST /loans</h2>"
        "<p>Creates a <code>loan</code>.</p></body></html>"
    )
    src = load_source("doc", str(page))
    assert (
        src.format == "html"
        and "## POST /loans" in src.text
        and "`loan`" in src.text
        and "evil" not in src.text
    )
    assert len(src.sha256) == 64 and src.path == str(page)
    brief = tmp_path / "b.toml"
    brief.write_text(
        'domain = "veterinary clinic"\nentities = ["pets", "owners"]\nstories = ["book a '
        'check-up"]\n'
    )
    b = load_source("brief", str(brief))
    assert b.domain == "veterinary-clinic" and "- book a check-up" in b.text
    long = tmp_path / "man.1"
    long.write_text("N\x08NAME\n" + "x" * 200)
    m = load_source("doc", str(long), max_chars=50)
    assert m.format == "manual" and m.cut > 0 and "more characters not shown" in m.text
    with pytest.raises(SourceError, match="no such file"):
        load_source("doc", str(tmp_path / "missing.md"))
    assert html_text("<p>a</p><p>b</p>") == "a\n\nb"


def test_benchmark_lists_are_kept_with_source_and_licence() -> None:
    b = benchmarks()
    assert {k.split(":")[0] for k in b} == {"bfcl-v3-multi-turn", "tau2-bench"}
    for entry in b.values():
        assert (
            entry["source"]["licence"] in ("Apache-2.0", "MIT")
            and len(entry["source"]["commit"]) == 40
            and entry["tools"]
        )
    _, flagged = overlap(
        [
            "get_order_details",
            "cancel_pending_order",
            "return_delivered_order_items",
            "list_products",
        ]
    )
    assert flagged and flagged[0].benchmark == "tau2-bench:retail"
