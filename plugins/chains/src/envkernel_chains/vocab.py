"""Entity names in the user's words, from the spec's own summaries.

A real spec's resource names are often fragments of operation ids (``chat_get_mentioned_messages``,
``dm_set_topic``): said as they are, a request reads "How many chat get mentioned messages are
there?". The summary of the operation that returns such rows names them the way the spec's authors
would say them ("Get Mentioned Messages", "List DM Members", "Set DM Topic"). :func:`user_noun`
takes the noun phrase of that summary (its leading verb and any trailing ``of``/``for``/... phrase
left out) when it keeps the name's head noun and only drops words of the name: "chat get mentioned
message" -> "mentioned message", "dm member" -> "DM member". A name with no operation word in it
(``booking``, ``dm history``) is kept, except for the case of its acronyms.

A create whose verb comes out odd from its operation id is said with its summary too:
:func:`create_summary` gives the whole summary as the goal ("elevate a client session", not "add a
new elevate"), :func:`summary_verb` only its verb ("create a NL search model", not "create
nlsearch a nl search model").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from envkernel_kit.naming import human, singular

OP_WORDS = frozenset(
    {
        "get",
        "set",
        "list",
        "sync",
        "post",
        "put",
        "patch",
        "create",
        "update",
        "delete",
        "remove",
        "search",
        "fetch",
        "retrieve",
        "read",
        "find",
        "query",
    }
)
"""Words that mark a name as a fragment of an operation id when they come before its last word."""
LEAD_WORDS = OP_WORDS | {
    "gets",
    "lists",
    "retrieves",
    "returns",
    "return",
    "show",
    "view",
    "obtain",
    "add",
    "new",
    "all",
    "the",
    "a",
    "an",
    "your",
    "my",
}
"""Words a summary may start with before its noun phrase ("Get all the ...", "List DM ...")."""
STOP_WORDS = frozenset(
    {"of", "for", "in", "from", "by", "with", "on", "to", "within", "about", "that", "which", "and"}
)
"""Words that end a summary's noun phrase ("Discussions of a room" -> "Discussions")."""
MAX_WORDS = 4
"""The longest noun phrase taken from a summary."""
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def summary_of(description: str) -> str:
    """A tool description's summary: its first line up to the first full stop."""
    line = description.strip().split("\n", 1)[0]
    return line.split(". ", 1)[0].rstrip(".").strip()


def summary_noun(description: str) -> list[str]:
    """The noun phrase of a description's summary, as its words (acronyms kept in capitals,
    other words in lower case): ``Get Mentioned Messages.`` -> ``["mentioned", "messages"]``;
    empty when there is none of at most :data:`MAX_WORDS` words."""
    ws = _WORD.findall(summary_of(description))
    while ws and ws[0].lower() in LEAD_WORDS:
        ws = ws[1:]
    cut = next((i for i, w in enumerate(ws) if w.lower() in STOP_WORDS), len(ws))
    ws = ws[:cut]
    if not ws or len(ws) > MAX_WORDS:
        return []
    return [w if _acronym(w) else w.lower() for w in ws]


def _acronym(w: str) -> bool:
    """True for an acronym, singular or plural (``DM``, ``DMs``, ``URL``)."""
    return (len(w) >= 2 and w.isupper()) or (len(w) >= 3 and w[-1] == "s" and w[:-1].isupper())


def _singular(w: str) -> str:
    """A word in the singular, an acronym's case kept (``DMs`` -> ``DM``)."""
    if _acronym(w):
        return w[:-1] if w[-1] == "s" else w
    return singular(w)


def is_fragment(label: str) -> bool:
    """True when a name (in words) holds an operation word before its last word
    (``chat get mentioned message``)."""
    ws = label.lower().split(" ")
    return any(w in OP_WORDS for w in ws[:-1])


def user_noun(label: str, description: str) -> str | None:
    """The name of ``label``'s rows in the summary's words (singular), or None when the summary
    does not name them better: its noun phrase must end in the same head noun and use only words
    of the name."""
    cand = summary_noun(description)
    ws = label.lower().split(" ")
    if not cand or not ws:
        return None
    low = [singular(w.lower()) for w in cand]
    if low[-1] != singular(ws[-1]) or not set(low) <= {singular(w) for w in ws}:
        return None
    if not is_fragment(label) and len(cand) != len(ws):
        return None  # a plain name is kept whole (only its acronyms' case from the summary)
    cand[-1] = _singular(cand[-1])
    said = " ".join(cand)
    return said if said != label else None


def vocab_key(noun: str) -> str:
    """A name's key in a vocabulary: its words, the last one singular (``chat_get_messages`` ->
    ``chat get message``)."""
    ws = human(noun).split(" ")
    ws[-1] = singular(ws[-1])
    return " ".join(ws)


def nouns_of(infos: Iterable[Any]) -> dict[str, str]:
    """Names (by :func:`vocab_key`) -> the user's words, from the tools' summaries (the first
    tool whose summary names the rows better wins)."""
    out: dict[str, str] = {}
    for info in infos:
        label = vocab_key(info.noun)
        if label in out:
            continue
        said = user_noun(label, info.spec.description or "")
        if said is not None:
            out[label] = said
    return out


MAKE_WORDS = frozenset(
    {"create", "add", "new", "make", "insert", "register", "post", "submit", "upload", "open"}
    | {"start", "book", "send", "schedule", "invite", "issue", "generate", "write", "build"}
)
"""A summary's first words that say the operation makes a row (its usual wording fits)."""
MAX_SUMMARY_WORDS = 8
"""The longest summary said as a request's goal."""


def create_summary(description: str, verb: str, noun: str, name: str = "") -> str | None:
    """A create said in its summary's words, when its verb and noun (from the operation id) do
    not say what it does: the verb is not in the summary (``local_login``: "Authenticate via
    basic auth and create a session"), is another kind's (``update_current_user``: "Update the
    password of the current user") or is the noun itself (``elevate_client``: "Elevate a client
    session"), or is not in the tool's ``name`` either (``post_api_v1_im_set_topic``: "Set DM
    Topic"). None when the summary says it makes a row, or is long, or the verb is a usual one
    for a new row."""
    ws = summary_of(description).split(" ")
    if not ws or not ws[0].isalpha() or len(ws) > MAX_SUMMARY_WORDS:
        return None
    if ws[0].lower() in MAKE_WORDS:
        return None
    first = verb.split(" ")[0].lower() if verb else ""
    said = {w.lower().strip(",.") for w in ws}
    odd = (
        (first in OP_WORDS and first not in MAKE_WORDS)  # another kind's verb: "update current"
        or singular(first) == singular(noun.lower().split(" ")[-1])  # "a new elevate"
        # "local a new login"; "add a dm set topic" (a verb the tool's name does not say)
        or (first not in said and (first not in MAKE_WORDS or first not in name.split("_")))
    )
    if not odd:
        return None
    return " ".join(w if _acronym(w) else w.lower() for w in ws)


def summary_verb(description: str, verb: str, name: str) -> str | None:
    """The verb of a create's summary when the summary says it makes a row and the tool's own
    verb has a word neither in the summary nor a usual one for a new row (``create nlsearch``:
    "Create a NL search model" -> ``create``; ``create app``: "Create an application."); else
    None."""
    ws = summary_of(description).split(" ")
    first = ws[0].lower() if ws and ws[0].isalpha() else ""
    mine = verb.lower().split(" ") if verb else []
    said = {w.lower().strip(",.") for w in ws}
    if first not in MAKE_WORDS or all(w in said or w in MAKE_WORDS for w in mine):
        return None
    return first
