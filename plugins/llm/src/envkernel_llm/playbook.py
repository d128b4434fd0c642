"""A scripted environment-writing model, for tests and benchmarks: a *script* for
:class:`envkernel_kit.scripted.ScriptedServer`.

It is a test double: it stands in for a model (no model that can write environments runs on this
machine). Everything between the synthesizer and it is real: the ``openai`` client, HTTP, the
retries, the sandbox the code runs in. Only the answers are scripted, and they are answered the
way models answer: fenced files in prose, stage by stage, in one conversation (the stage is the
number of assistant messages already in the request, so concurrent environments each follow it).

Which behaviour a conversation gets is chosen by the first rule whose word its brief contains
(``Playbook({"bank": "bug_then_fix", "library": "clean"})``); the code comes from the plugin's own
archetype templates (the nearest one to the brief). Behaviours:

- ``clean``: realistic code that passes its scenarios on the first round;
- ``bug_then_fix``: code with a bug the scenarios catch (a change that forgets half of its
  update), then the fixed code when shown the failures;
- ``network_then_fix`` / ``files_then_fix``: a tool that calls ``http://127.0.0.1:PORT`` (give
  ``port``) or reads a host file (``host_file``); the sandbox blocks it; then the clean code;
- ``malformed_then_fix``: prose with no code block where the code should be, then the code;
- ``truncated_then_fix``: code cut off mid-block with ``finish_reason: length``, then the code;
- ``always_buggy``: the buggy code every round (the environment is rejected);
- ``benchmark_names``: clean code whose tools are renamed after a benchmark's (BFCL's trading bot).
"""

from __future__ import annotations

import json
import re
from typing import Any

from envkernel_kit.scripted import completion

from .templates import Template, nearest

__all__ = ["BEHAVIOURS", "Playbook"]

BEHAVIOURS = (
    "clean",
    "bug_then_fix",
    "network_then_fix",
    "files_then_fix",
    "malformed_then_fix",
    "truncated_then_fix",
    "always_buggy",
    "benchmark_names",
)
"""Every behaviour a conversation can get."""

_BUGS = {  # template -> (a line the buggy version drops, what it replaces it with)
    "ledger": (
        '    env.db.execute("UPDATE accounts SET balance_cents = balance_cents + ? WHERE id '
        '= ?", (amount_cents, to_account))\n',
        "",
    ),
    "library": (
        '    env.db.execute("UPDATE books SET available = available + 1 WHERE id = ?", '
        '(loan["book_id"],))\n',
        "",
    ),
    "booking": (
        "        \"SELECT id FROM reservations WHERE room_id = ? AND status = 'confirmed' "
        'AND starts_at < ? AND ends_at > ?",\n',
        "        \"SELECT id FROM reservations WHERE room_id = ? AND status = 'cancelled' "
        'AND starts_at < ? AND ends_at > ?",\n',
    ),
}
_RENAMES = {
    "get_balance": "get_account_info",
    "list_transfers": "get_transaction_history",
    "transfer": "fund_account",
}


def _fence(lang: str, name: str, body: str) -> str:
    return f"```{lang} {name}\n{body.rstrip()}\n```"


def _user_text(request: dict[str, Any]) -> str:
    for m in request.get("messages", []):
        if m.get("role") == "user":
            return str(m.get("content") or "")
    return ""


def _brief(text: str) -> str:
    """The source part of the first user message (the examples after it are not the brief)."""
    return text.split("Example environment", 1)[0]


class Playbook:
    """A ScriptedServer script that writes environments (see the module docstring)."""

    def __init__(
        self,
        rules: dict[str, str] | None = None,
        *,
        default: str = "clean",
        port: int = 9,
        host_file: str = "/etc/hostname",
    ) -> None:
        for b in [default, *(rules or {}).values()]:
            if b not in BEHAVIOURS:
                raise ValueError(f"unknown behaviour {b!r}; one of {', '.join(BEHAVIOURS)}")
        self.rules = dict(rules or {})
        self.default = default
        self.port = port
        self.host_file = host_file

    def behaviour(self, brief: str) -> str:
        """The behaviour a conversation with this brief gets."""
        low = brief.lower()
        for word, b in self.rules.items():
            if word.lower() in low:
                return b
        return self.default

    def _files(self, t: Template, behaviour: str) -> dict[str, str]:
        files = dict(t.files)
        if behaviour == "benchmark_names" and t.name == "ledger":
            for old, new in _RENAMES.items():
                for f in files:
                    files[f] = re.sub(rf"\b{old}\b", new, files[f])
        return files

    def _code(self, t: Template, behaviour: str, stage: int) -> str:
        clean = self._files(t, behaviour)["env.py"]
        first = stage == 1
        if behaviour == "always_buggy" or (behaviour == "bug_then_fix" and first):
            old, new = _BUGS[t.name]
            assert old in clean, f"the bug of {t.name} no longer applies"
            return clean.replace(old, new)
        if behaviour == "network_then_fix" and first:
            return (
                (
                    "import urllib.request\n\n"
                    + clean.replace(
                        "\ndef ",
                        "\ndef _notify(what):\n"
                        f"    urllib.request.urlopen('http://127.0.0.1:{self.port}/notify?' "
                        "+ what, timeout=2).read()\n\n\ndef ",
                        1,
                    )
                )
                .replace("    return _", "    _notify('change')\n    return _", 1)
                .replace("    return env.db", "    _notify('change')\n    return env.db", 1)
            )
        if behaviour == "files_then_fix" and first:
            return (
                clean.replace(
                    "\ndef ",
                    f"\ndef _audit():\n    return open({self.host_file!r}).read()\n\n\ndef ",
                    1,
                )
                .replace("    return _", "    _audit()\n    return _", 1)
                .replace("    return env.db", "    _audit()\n    return env.db", 1)
            )
        return clean

    def __call__(self, request: dict[str, Any], n: int) -> Any:
        """The reply to one chat request."""
        brief = _brief(_user_text(request))
        behaviour = self.behaviour(brief)
        t = nearest(brief, 1)[0]
        files = self._files(t, behaviour)
        stage = sum(1 for m in request.get("messages", []) if m.get("role") == "assistant")
        if stage == 0:
            meta = json.loads(files["tools.json"])
            meta.setdefault("name", t.description.split(":")[0])
            meta.setdefault("description", t.description)
            return completion(
                "Here is the state and the tool interface.\n\n"
                + _fence("sql", "seed.sql", files["seed.sql"])
                + "\n\n"
                + _fence("json", "tools.json", json.dumps(meta, indent=1))
            )
        if stage == 1:
            if behaviour == "malformed_then_fix":
                return completion(
                    "Sure! The environment would have functions for each tool that read and "
                    "write the tables. Let me know if you want me to write them."
                )
            code = self._code(t, behaviour, stage)
            if behaviour == "truncated_then_fix":
                return completion(
                    "```python env.py\n" + code[: len(code) // 2], finish_reason="length"
                )
            return completion("Here is env.py.\n\n" + _fence("python", "env.py", code))
        if stage == 2:
            return completion(
                "These scenarios cover every tool.\n\n"
                + _fence("json", "scenarios.json", files["scenarios.json"])
            )
        code = self._code(t, behaviour, stage)
        return completion(
            "You are right; here is the corrected file.\n\n" + _fence("python", "env.py", code)
        )
