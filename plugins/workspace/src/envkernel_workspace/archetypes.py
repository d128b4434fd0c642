"""The workspace archetypes: templates that a seed turns into a concrete workspace and its task.

Each archetype is a function ``(rng, fake) -> Variant``. It makes a realistic tree (Faker names,
companies, amounts and sentences), distractor files that look relevant but are not, a goal-shaped
request, the reference chain of claw tool calls that does the job, and the check: Python source
defining ``grade(transcript, workspace_path) -> dict`` with one score per criterion. The expected
values are computed here, from the data the archetype generated, and written into the check as
constants; the check itself only reads the final workspace. Every criterion is 0 on the untouched
workspace, and the reference chain ends with the call that matters, so a near miss (its last call
dropped, or an argument changed) loses points.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import random
import re
import textwrap
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from envkernel_kit.workspace import GIT_INIT
from envkernel_schemas import ToolCall, ToolSpec

_MAIL_FROM, _MAIL_TO = _dt.datetime(2026, 1, 1), _dt.datetime(2026, 1, 15)
"""The window of the inbox's Date headers: fixed, so a variant is the same at any time it is
made."""

__all__ = ["ARCHETYPES", "Variant", "make_variant"]


@dataclass
class Variant:
    """One concrete workspace and its task."""

    archetype: str
    name: str
    description: str
    files: dict[str, str]
    request: str
    calls: list[ToolCall]
    check: str
    answer: str
    setup: list[str] = field(default_factory=list)
    category: str = "file_ops"
    app_source: str = ""
    app_tools: list[ToolSpec] = field(default_factory=list)
    seed_sql: str = ""


_REQUESTS: dict[str, tuple[str, ...]] = {
    "ledger": (
        (
            "Before we close {quarter}, check ledger.csv against the scanned invoices and put "
            "every entry that doesn't add up into reconciliation.csv (columns entry_id, issue, "
            "ledger_amount, invoice_amount; issue is amount_mismatch or missing_invoice)."
        ),
        (
            "Our {quarter} ledger has to match the invoices folder. Write reconciliation.csv with "
            "one row per ledger entry whose invoice total differs (issue amount_mismatch) or whose "
            "invoice is missing (issue missing_invoice); columns: entry_id, issue, ledger_amount, "
            "invoice_amount (empty when there is no invoice)."
        ),
    ),
    "inbox": (
        "Please go through my inbox folder and file everything the way RULES.md says.",
        (
            "Triage inbox/ into the project folders following the rules file; whatever matches no "
            "project goes to the archive."
        ),
    ),
    "fixtest": (
        (
            "The unit tests of {pkg} fail. Find the bug in the package and fix it; do not change "
            "the tests."
        ),
        (
            "CI is red on {pkg}: please make the test suite pass by fixing the code (the tests are "
            "right)."
        ),
    ),
    "rotate": (
        (
            "The payments API key was rotated; the new one is in secrets/. Switch the app over and "
            "regenerate the deploy files."
        ),
        (
            "Please swap our payments key for the new key in the secrets folder, and make sure "
            "everything generated from the config is up to date."
        ),
    ),
    "logs": (
        (
            "Summarise the current logs into report.md: a markdown table | service | errors | "
            "warnings | with one row per service, most errors first (ties by name), then a line "
            "'Most frequent error: <service>: <message>'."
        ),
        (
            "I need report.md with ERROR and WARN counts per service from the logs (skip the "
            "archive), as a table | service | errors | warnings | sorted by errors descending then "
            "name, and the most frequent error as 'Most frequent error: <service>: <message>'."
        ),
    ),
    "downloads": (
        "My Downloads folder is a mess. Tidy it up following ORGANISE.md.",
        (
            "Clean up Downloads/ per the policy in ORGANISE.md (sort by type, drop duplicate "
            "copies, leave partial downloads)."
        ),
    ),
    "crm": (
        (
            "Work through the trade-show lead export and update the CRM the way RULES.md "
            "describes, then write the follow-up list."
        ),
        (
            "We got leads from the trade show (exports/). Please process them into the CRM per "
            "RULES.md and prepare followups.md."
        ),
    ),
}
"""Archetype name -> the phrasings of its request (one is drawn per variant; ``{...}`` are
the variant's values)."""


def _call(tool: str, /, **arguments: Any) -> ToolCall:
    return ToolCall(name=tool, arguments=arguments)


def _check(constants: dict[str, Any], body: str, keep: dict[str, str] | None = None) -> str:
    """A check script: the constants as JSON literals, then ``grade``. With ``keep`` (path ->
    text: the files the request does not ask to change), also ``KEEP`` and ``_untouched()``,
    which a grader uses to score 0 when any of them was changed, moved or removed."""
    if keep is not None:
        constants = {**constants, "KEEP": keep}
        body = _grader("_keep") + "\n\n" + textwrap.dedent(body).strip()
    head = "".join(
        f"{k} = json.loads({json.dumps(json.dumps(v, sort_keys=True))})\n"
        for k, v in constants.items()
    )
    return "import json\n" + head + "\n\n" + textwrap.dedent(body).strip() + "\n"


def _grader(name: str) -> str:
    """The ``grade()`` source of archetype ``name``: ``checks/<name>.py.txt`` beside this module
    (data, never imported here: it runs only inside a sandbox, after :func:`_check`'s constants)."""
    return (resources.files(__package__) / "checks" / f"{name}.py.txt").read_text(encoding="utf-8")


def _csv(rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def _money(rng: random.Random, lo: int, hi: int) -> str:
    return f"{rng.randint(lo * 100, hi * 100) / 100:.2f}"


# --------------------------------------------------------------------------- 1. ledger
# reconciliation


def _ledger_distractors(
    rng: random.Random, fake: Any, vendors: list[str], quarter: str
) -> dict[str, str]:
    """Files that look relevant to a reconciliation but are not: last year's ledger, a meeting
    note, the invoices folder's README."""
    files = {}
    files["archive/ledger_2025.csv"] = _csv(
        [["entry_id", "date", "vendor", "invoice", "amount_eur"]]
        + [
            [
                f"E{j:03d}",
                "2025-11-0" + str(j % 9 + 1),
                rng.choice(vendors),
                f"INV-{rng.randint(1000, 9999)}-old",
                _money(rng, 50, 900),
            ]
            for j in range(1, 6)
        ]
    )
    files["notes/finance-sync.md"] = (
        f"# Finance sync\n\n- {fake.sentence()}\n- Close {quarter} books by Friday.\n- "
        f"{fake.sentence()}\n"
    )
    files["invoices/README.txt"] = "Scanned invoices, one text file per invoice (OCR output).\n"
    return files


def ledger(rng: random.Random, fake: Any) -> Variant:
    """Reconcile a CSV ledger against invoice files: find amount mismatches and missing invoices."""
    n = rng.randint(8, 14)
    quarter = rng.choice(["Q1", "Q2", "Q3", "Q4"])
    vendors = [fake.unique.company() for _ in range(6)]
    entries, files = [], {}
    for i in range(n):
        inv = f"INV-{rng.randint(1000, 9999)}-{i:02d}"
        entries.append(
            {
                "entry": f"E{i + 1:03d}",
                "invoice": inv,
                "vendor": rng.choice(vendors),
                "date": fake.date_between("-90d", "-1d").isoformat(),
                "amount": _money(rng, 80, 4000),
            }
        )
    k_mis, k_miss = rng.randint(1, 3), rng.randint(1, 2)
    picked = rng.sample(range(n), k_mis + k_miss)
    mismatched, missing = sorted(picked[:k_mis]), sorted(picked[k_mis:])
    for i, e in enumerate(entries):
        if i in missing:
            continue
        amount = e["amount"]
        if i in mismatched:
            shifted = (
                float(amount)
                + rng.choice([-1, 1]) * rng.randint(5, 300)
                + rng.choice([0, 0.5, 0.99])
            )
            amount = f"{shifted:.2f}"
        files[f"invoices/{e['invoice']}.txt"] = (
            f"INVOICE {e['invoice']}\nVendor: {e['vendor']}\nBill to: "
            f"{fake.company()}\nDate: {e['date']}\nDescription: {fake.bs()}\nTotal due: "
            f"{amount} EUR\nPayment terms: net {rng.choice([15, 30, 45])} days\n"
        )
        e["invoice_amount"] = amount
    files["ledger.csv"] = _csv(
        [["entry_id", "date", "vendor", "invoice", "amount_eur"]]
        + [[e["entry"], e["date"], e["vendor"], e["invoice"], e["amount"]] for e in entries]
    )
    files.update(_ledger_distractors(rng, fake, vendors, quarter))
    issues = []
    for i in mismatched:
        e = entries[i]
        issues.append([e["entry"], "amount_mismatch", e["amount"], e["invoice_amount"]])
    for i in missing:
        e = entries[i]
        issues.append([e["entry"], "missing_invoice", e["amount"], ""])
    issues.sort()
    content = _csv([["entry_id", "issue", "ledger_amount", "invoice_amount"], *issues])
    expected = {r[0]: {"issue": r[1], "ledger": r[2], "invoice": r[3]} for r in issues}
    check = _check(
        {"EXPECTED": expected},
        _grader("ledger"),
        keep=dict(files),
    )
    request = rng.choice(_REQUESTS["ledger"]).format(quarter=quarter)
    calls = [
        _call("read", path="ledger.csv"),
        _call("glob", pattern="invoices/*.txt"),
        _call("exec", command="grep -H 'Total due' invoices/INV-*.txt"),
        _call("write", path="reconciliation.csv", content=content),
    ]
    return Variant(
        "ledger",
        f"{quarter} ledger reconciliation",
        "A finance folder: a ledger CSV, scanned invoices and old books.",
        files,
        request,
        calls,
        check,
        f"I wrote reconciliation.csv with {len(issues)} entries that need attention.",
        category="data_reconciliation",
    )


# --------------------------------------------------------------------------- 2. inbox triage


def inbox(rng: random.Random, fake: Any) -> Variant:
    """Triage an inbox folder into project folders by the rules in RULES.md."""
    projects = rng.sample(
        ["atlas", "beacon", "cobalt", "delta", "ember", "fjord", "granite", "harbor"], 3
    )
    clients = {p: fake.unique.domain_name() for p in projects}
    files: dict[str, str] = {}
    rules = ["# Inbox rules", "", "Sort every message in inbox/ into a folder:", ""]
    for p in projects:
        rules.append(
            f"- mail from `@{clients[p]}` or with `[{p.upper()}]` in the subject goes to "
            f"`projects/{p}/`"
        )
    rules += [
        "- anything else goes to `archive/`",
        "- never edit or rename a message; keep `inbox/` itself (empty)",
        "",
    ]
    files["RULES.md"] = "\n".join(rules)
    dest: dict[str, str] = {}
    for i in range(rng.randint(7, 11)):
        kind = rng.random()
        p = rng.choice(projects)
        if kind < 0.4:
            sender, subject, where = (
                f"{fake.user_name()}@{clients[p]}",
                fake.sentence(nb_words=5).rstrip("."),
                f"projects/{p}",
            )
        elif kind < 0.7:
            sender, subject, where = (
                fake.free_email(),
                f"[{p.upper()}] {fake.sentence(nb_words=4).rstrip('.')}",
                f"projects/{p}",
            )
        else:
            sender, subject, where = (
                fake.free_email(),
                fake.sentence(nb_words=6).rstrip("."),
                "archive",
            )
        name = f"{i + 1:03d}-{fake.slug()[:24]}.eml"
        files[f"inbox/{name}"] = (
            f"From: {fake.name()} <{sender}>\nTo: me@example.com\nSubject: {subject}\nDate: "
            f"{fake.date_time_between(_MAIL_FROM, _MAIL_TO).isoformat()}Z\n\n"
            f"{fake.paragraph(nb_sentences=3)}\n"
        )
        dest[name] = where
    files["projects/README.md"] = "One folder per active project.\n"
    files["drafts/reply-to-landlord.eml"] = (
        f"From: me@example.com\nSubject: Re: lease\n\n{fake.paragraph()}\n"  # not in inbox/: stays
    )
    folders = sorted(set(dest.values()))
    moves = " && ".join(f"mv inbox/{n} {d}/" for n, d in sorted(dest.items()))
    command = f"mkdir -p {' '.join(folders)} && {moves}"
    check = _check(
        {"DEST": dest, "CONTENT": {n: files[f"inbox/{n}"] for n in dest}},
        _grader("inbox"),
        keep={p: t for p, t in files.items() if not p.startswith("inbox/")},
    )
    request = rng.choice(_REQUESTS["inbox"])
    calls = [
        _call("read", path="RULES.md"),
        _call("grep", pattern="^(From|Subject):", path="inbox"),
        _call("exec", command=command),
    ]
    return Variant(
        "inbox",
        "inbox triage",
        "A mail folder exported as .eml files, with filing rules.",
        files,
        request,
        calls,
        check,
        f"Filed {len(dest)} messages.",
        category="organisation",
    )


# --------------------------------------------------------------------------- 3. fix a failing test


_FIXES = [
    (
        "discount",
        'def apply_discount(total, percent):\n    """Total after a percentage discount, '
        'rounded to cents."""\n    return round(total * (1 - percent), 2)\n',
        "    return round(total * (1 - percent), 2)",
        "    return round(total * (1 - percent / 100), 2)",
        "from {pkg}.pricing import apply_discount\n\n\nclass "
        "TestDiscount(unittest.TestCase):\n    def test_ten_percent(self):\n        "
        "self.assertEqual(apply_discount({a}, 10), {b})\n\n    def test_zero(self):\n        "
        "self.assertEqual(apply_discount({a}, 0), {a})\n",
        "pricing.py",
        lambda a: round(a * 0.9, 2),
        "apply_discount({a}, 10) == {b}",
    ),
    (
        "slug",
        'import re\n\n\ndef slugify(title):\n    """Lower-case words joined by hyphens."""\n '
        '   words = re.findall(r"[A-Za-z0-9]+", title)\n    return "_".join(w.lower() for w '
        "in words)\n",
        '    return "_".join(w.lower() for w in words)',
        '    return "-".join(w.lower() for w in words)',
        "from {pkg}.text import slugify\n\n\nclass TestSlug(unittest.TestCase):\n    def "
        "test_title(self):\n        self.assertEqual(slugify({a!r}), {b!r})\n",
        "text.py",
        None,
        "slugify({a!r}) == {b!r}",
    ),
    (
        "average",
        'def average(values):\n    """Arithmetic mean; 0.0 for an empty list."""\n    if not '
        "values:\n        return 0.0\n    return sum(values) / (len(values) - 1)\n",
        "    return sum(values) / (len(values) - 1)",
        "    return sum(values) / len(values)",
        "from {pkg}.stats import average\n\n\nclass TestAverage(unittest.TestCase):\n    def "
        "test_mean(self):\n        self.assertAlmostEqual(average({a}), {b})\n\n    def "
        "test_empty(self):\n        self.assertEqual(average([]), 0.0)\n",
        "stats.py",
        None,
        "abs(average({a}) - {b}) < 1e-9",
    ),
]


def _fix_cases(kind: str, rng: random.Random, fake: Any) -> tuple[Any, Any, Any, Any]:
    """The test's input and value (``a``, ``b``), the test's cases and the hidden probe's, as
    ``[[args, value], ...]`` (the grader calls the fixed function on each ``args``)."""
    if kind == "discount":
        a = float(rng.randint(20, 500))
        b = round(a * 0.9, 2)
        a2 = float(rng.randint(501, 999))
        return a, b, [[[a, 10], b], [[a, 0], a]], [[[a2, 25], round(a2 * 0.75, 2)]]
    if kind == "slug":
        a, a2 = fake.catch_phrase(), fake.catch_phrase()
        b, b2 = ("-".join(w.lower() for w in re.findall(r"[A-Za-z0-9]+", t)) for t in (a, a2))
        return a, b, [[[a], b]], [[[a2], b2]]
    a = [rng.randint(1, 50) for _ in range(rng.randint(3, 6))]
    a2 = [rng.randint(1, 90) for _ in range(7)]
    return a, sum(a) / len(a), [[[a], sum(a) / len(a)], [[[]], 0.0]], [[[a2], sum(a2) / len(a2)]]


def fixtest(rng: random.Random, fake: Any) -> Variant:
    """Fix the bug that makes a small package's unit test fail, without touching the tests."""
    kind, source, bad, good, test_tpl, module, _, probe_tpl = rng.choice(_FIXES)
    pkg = rng.choice(["shopkit", "ledgerly", "tinytools", "acme_utils", "billing_core"])
    func = {"discount": "apply_discount", "slug": "slugify", "average": "average"}[kind]
    a, b, cases, probes = _fix_cases(kind, rng, fake)
    test = "import unittest\n\n" + test_tpl.format(pkg=pkg, a=a, b=b)
    files = {
        f"{pkg}/__init__.py": f'"""{fake.catch_phrase()}."""\n',
        f"{pkg}/{module}": source,
        # distractor: correct, untested
        f"{pkg}/helpers.py": "def clamp(x, lo, hi):\n    return max(lo, min(hi, x))\n",
        f"tests/test_{module}": test,
        "tests/__init__.py": "",
        "README.md": f"# {pkg}\n\n{fake.paragraph()}\n\nRun the tests with `python3 -m unittest "
        "discover -s tests -t .`\n",
        "CHANGELOG.md": f"## 0.3.0\n- {fake.sentence()}\n- {fake.sentence()}\n",
    }
    check = _check(
        {
            "PKG": pkg,
            "TESTS": {f"tests/test_{module}": test, "tests/__init__.py": ""},
            "MODULE": module[:-3],
            "FUNC": func,
            "CASES": cases,
            "PROBES": probes,
        },
        _grader("fixtest"),
        keep={p: t for p, t in files.items() if p != f"{pkg}/{module}"},
    )
    request = rng.choice(_REQUESTS["fixtest"]).format(pkg=pkg)
    calls = [
        _call("exec", command="python3 -m unittest discover -s tests -t . 2>&1 | tail -n 15"),
        _call("read", path=f"{pkg}/{module}"),
        _call("edit", path=f"{pkg}/{module}", old_string=bad, new_string=good),
    ]
    return Variant(
        "fixtest",
        f"{pkg} failing test",
        "A small Python package in a git repository, with its unit tests.",
        files,
        request,
        calls,
        check,
        f"Fixed the bug in {pkg}/{module}; the tests pass.",
        setup=[GIT_INIT],
        category="coding",
    )


# --------------------------------------------------------------------------- 4. rotate a config
# value


_RENDER = '''\
"""Render deploy/ from config/app.ini (run: python3 scripts/render.py)."""
import configparser
import os
import sys

if len(sys.argv) > 1:
    sys.exit("usage: python3 scripts/render.py (it takes no arguments; it reads config/app.ini)")
cfg = configparser.ConfigParser()
cfg.read("config/app.ini")
os.makedirs("deploy", exist_ok=True)
with open("deploy/app.env", "w") as f:
    for section in cfg.sections():
        for key, value in cfg[section].items():
            f.write(f"{section.upper()}_{key.upper()}={value}\\n")
with open("deploy/healthcheck.sh", "w") as f:
    f.write(f"curl -fsS -H 'Authorization: Bearer {cfg['payments']['api_key']}' \
{cfg['payments']['endpoint']}/health\\n")
'''


def _render(ini: dict[str, dict[str, str]]) -> dict[str, str]:
    env = "".join(f"{s.upper()}_{k.upper()}={v}\n" for s, kv in ini.items() for k, v in kv.items())
    health = (
        f"curl -fsS -H 'Authorization: Bearer {ini['payments']['api_key']}' "
        f"{ini['payments']['endpoint']}/health\n"
    )
    return {"deploy/app.env": env, "deploy/healthcheck.sh": health}


def _ini(ini: dict[str, dict[str, str]]) -> str:
    return "\n".join(
        f"[{s}]\n" + "".join(f"{k} = {v}\n" for k, v in kv.items()) for s, kv in ini.items()
    )


def rotate(rng: random.Random, fake: Any) -> Variant:
    """Rotate the payments API key to the new one and regenerate what is rendered from the
    config."""
    old = "pk_live_" + fake.hexify("^" * 24)
    new = "pk_live_" + fake.hexify("^" * 24)
    ini = {
        "app": {
            "name": fake.slug(),
            "region": rng.choice(["eu-west-1", "us-east-2", "ap-south-1"]),
        },
        "database": {
            "host": f"db.{fake.domain_name()}",
            "port": str(rng.choice([5432, 5433, 6432])),
        },
        "payments": {
            "endpoint": f"https://api.{fake.domain_name()}/v2",
            "api_key": old,
            "timeout": str(rng.choice([10, 20, 30])),
        },
    }
    files = {
        "config/app.ini": _ini(ini),
        "scripts/render.py": _RENDER,
        **_render(ini),
        "secrets/payments_key.new": new + "\n",
        "secrets/payments_key.old": old + "\n",  # distractor
        "docs/runbook.md": "# Runbook\n\nKey rotation: put the new key in config/app.ini, then "
        f"re-render deploy/.\n\n{fake.paragraph()}\n",
        "config/app.ini.example": _ini(
            {**ini, "payments": {**ini["payments"], "api_key": "pk_live_xxx"}}
        ),
    }
    rotated = {**ini, "payments": {**ini["payments"], "api_key": new}}
    want = {"config/app.ini": _ini(rotated), **_render(rotated)}
    check = _check(
        {"NEW": new, "OLD": old, "WANT": want},
        _grader("rotate"),
        keep={p: t for p, t in files.items() if p not in want},
    )
    request = rng.choice(_REQUESTS["rotate"])
    calls = [
        _call("read", path="secrets/payments_key.new"),
        _call("read", path="docs/runbook.md"),
        _call(
            "edit",
            path="config/app.ini",
            old_string=f"api_key = {old}",
            new_string=f"api_key = {new}",
        ),
        _call("exec", command="python3 scripts/render.py"),
    ]
    return Variant(
        "rotate",
        "payments key rotation",
        "A service's config, its render script and the files it renders.",
        files,
        request,
        calls,
        check,
        "Rotated the key in config/app.ini and re-rendered deploy/.",
        category="operations",
    )


# --------------------------------------------------------------------------- 5. summarise logs


def logs(rng: random.Random, fake: Any) -> Variant:
    """Count ERROR and WARN lines per service over the current logs and write a report."""
    services = rng.sample(
        ["auth", "billing", "search", "gateway", "mailer", "scheduler", "storage"], 4
    )
    messages = {s: [fake.sentence(nb_words=4).rstrip(".") for _ in range(3)] for s in services}
    files: dict[str, str] = {}
    counts: dict[str, Counter] = {s: Counter() for s in services}
    top: Counter = Counter()
    days = rng.randint(2, 3)
    for d in range(days):
        lines = []
        for n in range(rng.randint(25, 45)):
            s = rng.choice(services)
            level = rng.choices(["INFO", "WARN", "ERROR", "DEBUG"], [6, 2, 2, 1])[0]
            msg = rng.choice(messages[s])
            lines.append(
                f"2026-01-{10 + d:02d}T{rng.randint(0, 23):02d}:"
                f"{rng.randint(0, 59):02d}:{n % 60:02d}Z "
                f"{level} {s} {msg}"
            )
            if level in ("ERROR", "WARN"):
                counts[s][level] += 1
            if level == "ERROR":
                top[f"{s}: {msg}"] += 1
        files[f"logs/app-2026-01-{10 + d:02d}.log"] = "\n".join(sorted(lines)) + "\n"
    files["logs/archive/app-2025-12-31.log"] = (
        "\n".join(
            f"2025-12-31T10:00:{i:02d}Z ERROR {rng.choice(services)} old failure" for i in range(12)
        )
        + "\n"
    )
    files["logs/README.md"] = (
        "Application logs, one file per day. Older files are moved to archive/ and are not "
        "current.\n"
    )
    order = sorted(services, key=lambda s: (-counts[s]["ERROR"], s))
    table = "| service | errors | warnings |\n|---|---|---|\n" + "".join(
        f"| {s} | {counts[s]['ERROR']} | {counts[s]['WARN']} |\n" for s in order
    )
    best = sorted(top.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] if top else "none"
    report = f"# Log summary\n\n{table}\nMost frequent error: {best}\n"
    expected = {s: [counts[s]["ERROR"], counts[s]["WARN"]] for s in services}
    check = _check(
        {"COUNTS": expected, "ORDER": order, "TOP": best},
        _grader("logs"),
        keep=dict(files),
    )
    request = rng.choice(_REQUESTS["logs"])
    calls = [
        _call("list", path="logs"),
        _call("exec", command="cat logs/*.log | awk '{print $2, $3}' | sort | uniq -c"),
        _call("write", path="report.md", content=report),
    ]
    return Variant(
        "logs",
        "log summary",
        "A day-by-day application log folder with an archive.",
        files,
        request,
        calls,
        check,
        "Wrote report.md with the counts per service.",
        category="analysis",
    )


# --------------------------------------------------------------------------- 6. organise downloads


_KINDS = {
    "Documents": ["pdf", "docx", "txt", "csv"],
    "Pictures": ["jpg", "png"],
    "Archives": ["zip", "tar.gz"],
    "Music": ["mp3"],
}


def downloads(rng: random.Random, fake: Any) -> Variant:
    """Sort a downloads folder by file type, drop exact duplicates, leave unfinished downloads
    alone."""
    files: dict[str, str] = {}
    dest: dict[str, str] = {}
    ext_to = {e: d for d, es in _KINDS.items() for e in es}
    names = set()
    for _ in range(rng.randint(8, 12)):
        ext = rng.choice(list(ext_to))
        name = f"{fake.slug()[:20]}.{ext}"
        if name in names:
            continue
        names.add(name)
        files[f"Downloads/{name}"] = f"{ext.upper()} placeholder: {fake.sentence()}\n"
        dest[name] = ext_to[ext]
    dup_of = rng.choice(sorted(names))
    stem, _, ext = dup_of.partition(".")
    dup = f"{stem} (1).{ext}"
    files[f"Downloads/{dup}"] = files[f"Downloads/{dup_of}"]
    part = f"{fake.slug()[:18]}.iso.part"
    files[f"Downloads/{part}"] = "incomplete download\n"
    files["Documents/taxes-2025.pdf"] = (
        "PDF placeholder: last year's taxes\n"  # already sorted: stays
    )
    files["ORGANISE.md"] = (
        "# Downloads policy\n\n"
        + "".join(f"- {', '.join('.' + e for e in es)} -> {d}/\n" for d, es in _KINDS.items())
        + "- a file named like `name (1).ext` with the same content as `name.ext` is a "
        "duplicate: delete it\n"
        + "- `.part` files are downloads in progress: leave them in Downloads/\n"
    )
    moves = " && ".join(f"mv 'Downloads/{n}' {d}/" for n, d in sorted(dest.items()))
    command = f"mkdir -p {' '.join(sorted(set(dest.values())))} && rm 'Downloads/{dup}' && {moves}"
    check = _check(
        {
            "DEST": dest,
            "DUP": dup,
            "PART": part,
            "CONTENT": {n: files[f"Downloads/{n}"] for n in dest},
        },
        _grader("downloads"),
        keep={p: t for p, t in files.items() if not p.startswith("Downloads/") or p.endswith(part)},
    )
    request = rng.choice(_REQUESTS["downloads"])
    calls = [
        _call("read", path="ORGANISE.md"),
        _call("list", path="Downloads"),
        _call("exec", command=command),
    ]
    return Variant(
        "downloads",
        "downloads clean-up",
        "A home folder with a messy Downloads folder and a filing policy.",
        files,
        request,
        calls,
        check,
        f"Sorted {len(dest)} files and removed the duplicate {dup}.",
        category="organisation",
    )


# --------------------------------------------------------------------------- 7. a CRM app (SQLite)
# fed from a CSV export


CRM_APP = '''
# ruff: noqa: F821  (ToolError is injected by the executor)
STATUSES = ("lead", "qualified", "customer", "lost")


def find_contacts(env, query=""):
    """Contacts whose name, email or company contains query (all when empty)."""
    q = "%" + query.lower() + "%"
    return \
env.db.execute("SELECT * FROM contacts WHERE lower(name) LIKE ? OR lower(email) LIKE ? OR \
lower(company) LIKE ? ORDER BY id",
                          (q, q, q)).fetchall()


def update_contact(env, contact_id, status):
    """Set a contact's status."""
    if status not in STATUSES:
        raise ToolError("invalid", f"status must be one of {', '.join(STATUSES)}")
    if env.db.execute("SELECT 1 FROM contacts WHERE id = ?", (contact_id,)).fetchone() is None:
        raise ToolError("not_found", f"no contact {contact_id!r}; use find_contacts to look it up")
    env.db.execute("UPDATE contacts SET status = ? WHERE id = ?", (status, contact_id))
    return env.db.execute("SELECT * FROM contacts WHERE id = ?", (contact_id,)).fetchone()


def add_contact(env, name, email, company):
    """Add a contact with status 'lead'."""
    if env.db.execute("SELECT 1 FROM contacts WHERE lower(email) = lower(?)", (email,)).fetchone():
        raise ToolError("conflict", f"{email} is already a contact; update it instead")
    cid = env.new_id("con")
    env.db.execute("INSERT INTO contacts (id, name, email, company, status) VALUES (?, ?, ?, ?, \
'lead')", (cid, name, email, company))
    return env.db.execute("SELECT * FROM contacts WHERE id = ?", (cid,)).fetchone()
'''

_S = {"type": "string"}
CRM_TOOLS = [
    ToolSpec(
        name="find_contacts",
        description="CRM: contacts whose name, email or company "
        "contains the query (all when empty).",
        parameters={"type": "object", "properties": {"query": _S}, "required": []},
    ),
    ToolSpec(
        name="update_contact",
        description="CRM: set a contact's status (lead, qualified, customer, lost).",
        mutates=True,
        parameters={
            "type": "object",
            "properties": {
                "contact_id": _S,
                "status": {"type": "string", "enum": ["lead", "qualified", "customer", "lost"]},
            },
            "required": ["contact_id", "status"],
        },
    ),
    ToolSpec(
        name="add_contact",
        description="CRM: add a contact (status lead).",
        mutates=True,
        parameters={
            "type": "object",
            "properties": {"name": _S, "email": _S, "company": _S},
            "required": ["name", "email", "company"],
        },
    ),
]


def _sql(v: Any) -> str:
    return "'" + str(v).replace("'", "''") + "'"


_CRM_RULES = (
    "# Trade-show leads\n\nFor every row of exports/tradeshow_leads.csv:\n\n"
    "- already in the CRM (same email) with a budget of at least "
    "{threshold} EUR: set it to `qualified`, "
    "unless it is a `customer` already (never downgrade a customer)\n"
    "- already in the CRM with a smaller budget: leave it\n"
    "- not in the CRM: add it, and list it in followups.md as `- Name "
    "(Company)`, sorted by name\n"
)
"""The CRM task's RULES.md (``{threshold}``: the budget that qualifies a lead)."""

_CRM_SCHEMA = (
    "CREATE TABLE contacts (id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL "
    "UNIQUE, company TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN "
    "('lead', 'qualified', 'customer', 'lost')));\n"
)
"""The CRM app's table."""


def _crm_people(
    rng: random.Random, fake: Any, threshold: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The CRM's contacts, and the trade-show leads (four of them contacts already, the others
    new), shuffled."""
    contacts = []
    for i in range(rng.randint(7, 10)):
        contacts.append(
            {
                "id": f"con_{i + 101:04d}",
                "name": fake.unique.name(),
                "email": fake.unique.company_email(),
                "company": fake.company(),
                "status": rng.choice(["lead", "lead", "customer", "lost"]),
            }
        )
    leads = []
    known = rng.sample(contacts, 4)
    for c in known:
        leads.append(
            {
                "name": c["name"],
                "email": c["email"],
                "company": c["company"],
                "budget": rng.choice([threshold // 2, threshold * 2, threshold + 500]),
            }
        )
    for _ in range(rng.randint(2, 3)):
        leads.append(
            {
                "name": fake.unique.name(),
                "email": fake.unique.company_email(),
                "company": fake.company(),
                "budget": rng.randint(1000, 40000),
            }
        )
    rng.shuffle(leads)
    return contacts, leads


def crm(rng: random.Random, fake: Any) -> Variant:
    """Update a SQLite CRM app from a trade-show lead export, by the rules, and write the
    follow-ups."""
    threshold = rng.choice([5000, 10000, 20000])
    contacts, leads = _crm_people(rng, fake, threshold)
    by_email = {c["email"]: c for c in contacts}
    final = {c["id"]: dict(c) for c in contacts}
    calls = [
        _call("read", path="RULES.md"),
        _call("read", path="exports/tradeshow_leads.csv"),
        _call("find_contacts", query=""),
    ]
    new = []
    for lead in leads:
        c = by_email.get(lead["email"])
        if c is None:
            new.append(lead)
            calls.append(
                _call(
                    "add_contact", name=lead["name"], email=lead["email"], company=lead["company"]
                )
            )
        elif lead["budget"] >= threshold and c["status"] in ("lead", "lost"):
            final[c["id"]]["status"] = "qualified"
            calls.append(_call("update_contact", contact_id=c["id"], status="qualified"))
    followups = "# Follow-ups\n\n" + "".join(
        f"- {lead['name']} ({lead['company']})\n" for lead in sorted(new, key=lambda x: x["name"])
    )
    calls.append(_call("write", path="followups.md", content=followups))
    seed_sql = _CRM_SCHEMA + "".join(
        "INSERT INTO contacts VALUES "
        f"({', '.join(_sql(c[k]) for k in ('id', 'name', 'email', 'company', 'status'))});\n"
        for c in contacts
    )
    files = {
        "exports/tradeshow_leads.csv": _csv(
            [["name", "email", "company", "budget_eur"]]
            + [[x["name"], x["email"], x["company"], x["budget"]] for x in leads]
        ),
        "RULES.md": _CRM_RULES.format(threshold=threshold),
        # distractor
        "exports/newsletter_signups.csv": _csv(
            [["email"]] + [[fake.free_email()] for _ in range(5)]
        ),
        "notes/crm-cleanup.md": f"Ideas for later: {fake.sentence()}\n",
    }
    want = {cid: c["status"] for cid, c in final.items()}
    check = _check(
        {
            "STATUS": want,
            "NEW": {x["email"]: x["name"] for x in new},
            "FOLLOWUPS": followups,
            "ORIG": {c["id"]: [c["name"], c["email"], c["company"]] for c in contacts},
        },
        _grader("crm"),
        keep=dict(files),
    )
    request = rng.choice(_REQUESTS["crm"])
    return Variant(
        "crm",
        "trade-show leads into the CRM",
        "A CRM app (SQLite) with a folder of exports and rules.",
        files,
        request,
        calls,
        check,
        f"Updated the CRM and listed {len(new)} new leads in followups.md.",
        category="crm",
        app_source=CRM_APP,
        app_tools=list(CRM_TOOLS),
        seed_sql=seed_sql,
    )


ARCHETYPES: dict[str, Callable[[random.Random, Any], Variant]] = {
    "ledger": ledger,
    "inbox": inbox,
    "fixtest": fixtest,
    "rotate": rotate,
    "logs": logs,
    "downloads": downloads,
    "crm": crm,
}
"""Archetype name -> template."""


def make_variant(archetype: str, seed: int) -> Variant:
    """The variant of ``archetype`` for ``seed`` (deterministic: Faker and random are seeded)."""
    from faker import Faker

    if archetype not in ARCHETYPES:
        raise ValueError(
            f"unknown workspace archetype {archetype!r}; the archetypes are: "
            f"{', '.join(ARCHETYPES)}"
        )
    fake = Faker("en_US")
    fake.seed_instance(seed)
    return ARCHETYPES[archetype](random.Random(seed), fake)
