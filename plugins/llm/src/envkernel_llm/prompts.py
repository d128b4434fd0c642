"""The prompts of the ``llm`` synthesizer, and their hashes (recorded in every environment's
provenance).

One conversation per environment: the system prompt (the executor's contract and the reply
format), then the source with the retrieved archetype examples and the schema stage, the code
stage, the scenario stage, and one repair message per failed round. The hash of each template
(before it is filled in) names the prompt version; the hash of each filled-in request is recorded
too.
"""

from __future__ import annotations

import hashlib

__all__ = ["CODE", "REPAIR", "SCENARIOS", "SCHEMA", "SYSTEM", "prompt_hashes", "sha256"]

SYSTEM = """\
You write executable tool environments for training tool-using agents. An environment is four files:

1. seed.sql: the state. SQLite CREATE TABLE statements, then INSERT rows: 3 to 8 realistic rows per
   table, text ids with a prefix and four digits (bk_0001), money in integer cents, times as
   ISO 8601 UTC strings.
2. tools.json: {"name": "...", "description": "...", "generated": {"table": \
["columns the tools fill in"]},
   "tools": [{"name", "description", "parameters" (a JSON Schema object), "returns" (JSON Schema),
   "mutates" (true when the tool changes the state)}]}. 4 to 8 tools: lookups, lists with filters,
   and changes that follow the domain's rules.
3. env.py: one plain Python function per tool, def tool_name(env, param, ...), with the parameters \
of
   tools.json. Use only env.db (sqlite3; rows are dicts: env.db.execute(sql, params).fetchone() or
   .fetchall()), env.new_id("prefix") for new ids (it counts from prefix_0001 and does not know
   the \
seed's ids: call it until it gives an id no row has) and env.now() for the time. Return JSON values
   (dicts, lists, numbers, strings). On bad input raise ToolError(code, message) with code
   "invalid", "not_found" or "conflict" and a message that says what to do; ToolError is provided.
   Standard library only; no network, no files, no processes: the code runs in a sandbox that
   blocks them.
4. scenarios.json: test scenarios that run the tools from the seed state:
   [{"name": "...", "steps": [{"call": "tool", "arguments": {...}, "expect": "ok" or "error",
   "error_code": "conflict", "returns": {fields the answer must contain}}],
   "state": [{"table": "t", "count": 3}, {"table": "t", "where": {"id": "x"}, "has": {"col": 1}}]}].
   In arguments, "${1.id}" is the field id of step 1's answer.

Write each file in a fenced block that names it, e.g. ```python env.py ... ```. Write complete
files, never a part of one."""

SCHEMA = """\
{source_intro}

{source}

{examples}

Stage 1 of 3: design the state and the tools for this environment. Reply with ```sql seed.sql```
and ```json tools.json``` only."""

CODE = """\
Stage 2 of 3: write ```python env.py```: one function per tool of tools.json, following the \
rules."""

SCENARIOS = """\
Stage 3 of 3: write ```json scenarios.json```: 3 to 6 scenarios that together call every tool, with
at least one expected error and at least one check of the state after a change."""

REPAIR = """\
Round {round} of {rounds}: the environment was run in the sandbox and these checks failed:
{failures}

Fix the cause. Reply with the complete corrected file(s) in the same fenced format; send a file only
if it must change. Change a scenario only when the scenario itself is wrong, never to hide a bug."""

BRIEF_INTRO = "Write an environment from this brief:"
DOC_INTRO = (
    "Write an environment that behaves like the system this authentic documentation describes: "
    "keep its resource names, fields, operations and error rules, and name the tools after "
    "its operations."
)


def sha256(text: str) -> str:
    """Hex SHA-256 of ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def prompt_hashes() -> dict[str, str]:
    """Hash of every prompt template, by stage."""
    return {
        name: sha256(text)[:16]
        for name, text in (
            ("system", SYSTEM),
            ("schema", SCHEMA),
            ("code", CODE),
            ("scenarios", SCENARIOS),
            ("repair", REPAIR),
            ("brief_intro", BRIEF_INTRO),
            ("doc_intro", DOC_INTRO),
        )
    }
