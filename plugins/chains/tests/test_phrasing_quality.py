"""The chains sampler's requests read as a person writes: none of the ungrammatical or redundant
patterns once seen in requests sampled from the shipped corpus (``pull up me``, ``update me so its
email is``, ``with start time on or after X and with the earliest start time``, ``a amount``,
``the fewest quantity``, ``nights 4``, ``the from account``, ``What are the execution date``,
raw codes such as ``checked_in``, ``its`` for a person).

Requests are sampled the fast way (the sampler over real process sandboxes, no bus or gate).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from envkernel_chains import Chains, ChainsSettings
from envkernel_chains.phrasing import attr, enum_words, plural_phrase, role_words
from envkernel_chains.refs import merge_superlative
from envkernel_kit.testing import RunnerContext
from envkernel_openapi import corpus_files, synthesize_file
from envkernel_process import ProcessRunner

PER_ENV = 45

PERSON = r"(?:patient|customer|traveler|user|sender|holder|doctor|attendee|owner|recipient)"
BAD = {
    "object 'me' after a verb that wants a thing": r"\b(?:pull up|let me see|update|change|set up|show) me\b(?! (?:the|that|my|all|a|an|every|each|how|its|their)\b)",
    "'its' after 'me'": r"\b(?:update|change|set) me,? (?:so (?:that )?)?its\b",
    "a superlative repeating its range's field": r"\bwith (?P<f>[a-z ]+?) (?:on or after|on or before|of at least|of at most|above|below|after|before) \S+ and with the (?:earliest|latest|highest|lowest|most|fewest) (?P=f)\b",
    "'a' before a vowel": r"\ba (?!(?:us[aeiu]|uni|uri|eu)\w*)(?:[aeiou]\w*)\b",
    "'most'/'fewest' of an amount": r"\b(?:most|fewest) (?:quantity|stock|amount|price|size|duration)\b",
    "a count said field first": r"\b(?:nights|stars|seats|guests|seats left) \d",
    "'the from/to account'": r"\bthe (?:from|to) [a-z]+\b",
    "a plural verb with a singular field": r"\bWhat are the [a-z]+ (?:date|time|type|rate|address|name|email|status)s? of\b(?<!s of)",
    "a raw snake-case code": r"(?<![@\w.])[a-z]+_[a-z]+(?:_[a-z]+)*(?![\w@.])",
    "'its' for a named person": rf"\b(?:[Ff]ind|[Ll]ook up|check|update|change) the {PERSON} [A-Z][\w-]+ [A-Z][\w-]+ (?:so its|and (?:tell|give) me its)\b",
    "a doubled word": r"\b(?P<w>[a-z]+) (?P=w)\b",
    "'for me' after a list of settings": r": set [^?]* for me\?",
    "a value that reads as the reference's": r"\bwith (?P<k>[a-z]+) [0-9.]+, (?P=k) [0-9.]+",
    "doubled punctuation": r"\.\.|\?\.|\.\?|,,|\s[,.?]",
}
"""What must never appear in a request, by what is wrong with it."""


@pytest.fixture(scope="module")
def requests(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Requests sampled by ``chains`` over every shipped environment."""
    out: Path = tmp_path_factory.mktemp("phrasing")

    async def go() -> list[str]:
        runner = ProcessRunner()
        texts: list[str] = []
        try:
            for f in corpus_files():
                env = synthesize_file(f)[0]
                ctx = RunnerContext(runner, component="chains", out_dir=out)
                texts += [t.request async for t in Chains(ChainsSettings(tasks_per_env=PER_ENV)).sample(env, ctx)]
        finally:
            await runner.aclose()
        return texts

    return asyncio.run(go())


def test_no_request_has_a_bad_pattern(requests: list[str]) -> None:
    assert len(requests) >= 5 * PER_ENV
    found = {why: [r for r in requests if re.search(p, r)] for why, p in BAD.items()}
    bad = {why: rs[:3] for why, rs in found.items() if rs}
    assert not bad, bad


def test_the_patterns_catch_what_they_name() -> None:
    """Each pattern matches the wording it was written against (so the test above can fail)."""
    seen = {
        "object 'me' after a verb that wants a thing": "Please pull up me.",
        "'its' after 'me'": "please update me so its email is a@b.c.",
        "a superlative repeating its range's field": "the event with start time on or after 2026-01-19T13:30:00Z and with the earliest start time?",
        "'a' before a vowel": "cancel all the transfers with a amount over 50",
        "'most'/'fewest' of an amount": "send out my order with the fewest quantity.",
        "a count said field first": "the economy booking with nights 4",
        "'the from/to account'": "unfreeze the from account of the transfer",
        "a plural verb with a singular field": "What are the execution date of the transfers?",
        "a raw snake-case code": "the appointment with status checked_in",
        "'its' for a named person": "Find the patient Donna Alexander and tell me its email.",
        "a doubled word": "show me the the order",
        "'for me' after a list of settings": "Can you update that appointment: set start time to X and duration to 45 minutes for me?",
        "a value that reads as the reference's": "an order with the product of my order with quantity 2, quantity 2 and shipping address X",
        "doubled punctuation": "Please do it..",
    }
    assert set(seen) == set(BAD)
    for why, text in seen.items():
        assert re.search(BAD[why], text), why
    assert not re.search(BAD["a raw snake-case code"], "email a.b_c@x.org")


def test_the_helpers_say_it_right() -> None:
    assert merge_superlative(["with start time on or after X"], "with the earliest start time") == ["with the earliest start time on or after X"]
    assert merge_superlative(["with amount of at least 5"], "with the latest end time") == ["with amount of at least 5", "with the latest end time"]
    assert plural_phrase("execution date") == "execution dates"
    assert plural_phrase("size in bytes") == "sizes in bytes"
    assert plural_phrase("IBAN") == "IBAN"
    assert attr("nights", 4) == "4 nights" and attr("nights", 1) == "1 night"
    assert attr("amount_cents", 5) != "a amount of 5 cents"
    assert role_words("from_account") == "source account" and role_words("to_account") == "destination account"
    assert enum_words("needs_action") == "needs action" and enum_words("Team Offsite") == '"Team Offsite"'
