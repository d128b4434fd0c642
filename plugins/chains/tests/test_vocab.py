"""Entity names in the user's words on a real spec whose resource names are operation-id
fragments (Rocket.Chat's ``chat_get_mentioned_messages``, ``dm_set_topic``), and no create said
without what the new row holds."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from envkernel_chains import Chains, ChainsSettings
from envkernel_chains.vocab import (
    create_summary,
    is_fragment,
    summary_noun,
    summary_verb,
    user_noun,
    vocab_key,
)
from envkernel_kit.testing import RunnerContext
from envkernel_openapi import synthesize_file
from envkernel_process import ProcessRunner

REAL2 = Path(__file__).resolve().parents[3] / "plugins" / "openapi" / "corpus-real-2"


def test_summary_nouns_from_real_summaries() -> None:
    """Rocket.Chat's and Gotify's summaries, as their spec words them."""
    assert summary_noun("Get Mentioned Messages. Get the messages in which you are mentioned") == [
        "mentioned",
        "messages",
    ]
    assert summary_noun("Get Discussions of A Room. Gets the discussions") == ["discussions"]
    assert summary_noun("List DM Members. List all the members of a DM.") == ["DM", "members"]
    assert summary_noun("Return all applications.") == ["applications"]
    assert summary_noun("") == []
    assert vocab_key("chat_get_mentioned_messages") == "chat get mentioned message"
    assert is_fragment("chat get mentioned message") and not is_fragment("dm history")
    assert user_noun("chat get mentioned message", "Get Mentioned Messages.") == "mentioned message"
    assert user_noun("dm member", "List DM Members.") == "DM member"
    assert user_noun("dm", "List DMs. List all the DMs of the authenticated user.") == "DM"
    assert user_noun("dm set topic", "Set DM Topic. Set the topic of a DM.") == "DM topic"
    assert create_summary("Elevate a client session.", "elevate", "elevate") == (
        "elevate a client session"
    )
    assert create_summary(
        "Set DM Topic. Set the topic of a DM.", "create", "dm set topic", "post_api_v1_im_set_topic"
    ) == ("set DM topic")
    assert create_summary(
        "Authenticate via basic auth and create a session.", "local", "login", "local_login"
    ) == ("authenticate via basic auth and create a session")
    assert create_summary("Create a client.", "create", "client", "create_client") is None
    assert summary_verb("Create a NL search model.", "create nlsearch", "create_nl") == "create"
    assert summary_verb("Create an application.", "create app", "create_app") == "create"
    assert summary_verb("Create an application.", "create", "create_app") is None
    assert create_summary("Share a file with someone.", "share", "file", "share_file") is None
    assert create_summary("Save a new payee.", "add", "payee", "add_payee") is None
    assert (
        create_summary("Place an order for a customer.", "create", "order", "create_order") is None
    )
    # a summary that names other rows, or adds words of its own, is not taken
    assert user_noun("chat get threads list", "List Threads.") is None
    assert user_noun("booking", "List the bookings of a hotel guest.") is None
    assert user_noun("order", "Get recent orders.") is None


@pytest.fixture(scope="module")
def rocketchat_requests(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Requests sampled by ``chains`` over Rocket.Chat's messaging spec."""
    out: Path = tmp_path_factory.mktemp("vocab-real")

    async def go() -> list[str]:
        runner = ProcessRunner()
        try:
            env = synthesize_file(REAL2 / "rocketchat-messaging.yaml")[0]
            ctx = RunnerContext(runner, component="chains", out_dir=out)
            return [
                t.request async for t in Chains(ChainsSettings(tasks_per_env=25)).sample(env, ctx)
            ]
        finally:
            await runner.aclose()

    return asyncio.run(go())


def test_rocketchat_rows_are_named_as_its_summaries_name_them(
    rocketchat_requests: list[str],
) -> None:
    """No operation word inside an entity name the summaries name better ("chat get mentioned
    messages", "dm set topic"), the summaries' names said ("mentioned messages", "DM ..."), and no
    create without fields. ("dm list everyone", whose summary names other rows, "List All DMs",
    is still said as it is.)"""
    assert len(rocketchat_requests) >= 10
    fragments = [
        r
        for r in rocketchat_requests
        if re.search(r"\b(?:chat (?:get|sync)|dm set|autotranslate get)\b", r, re.I)
    ]
    assert not fragments, fragments[:3]
    assert any(
        re.search(r"\b(?:DM|pinned|starred|mentioned|thread|deleted)\b", r)
        for r in rocketchat_requests
    )
    bare = [
        r
        for r in rocketchat_requests
        if re.search(
            r"\b(?:create|add|set up|make) (?:a|an) (?:new )?[\w ]+?(?:, please)?[.?!]$", r
        )
    ]
    assert not bare, bare[:3]
