"""One set of model-server settings (``envkernel_kit.chat.ChatSettings``) behind the four components
that call a model: the ``llm`` synthesizer, the ``llm-user`` user, the ``openai`` policy and the
``judge``. Each keeps its setting names, defaults and environment variables, so users' config files
and ``--set COMPONENT.KEY=VALUE`` flags mean what they meant; the shared part (fallbacks, the error
for a missing URL or model, the client factory, the request body) is checked once here, and a real
call to a scripted OpenAI-compatible server shows the settings reach the wire."""

from __future__ import annotations

import asyncio

import pytest

from envkernel.config import settings_for
from envkernel.errors import ConfigError
from envkernel_judge import JudgeSettings
from envkernel_kit.chat import ChatSettings
from envkernel_kit.scripted import ScriptedServer, completion
from envkernel_llm import LLMSettings
from envkernel_openai import OpenAISettings
from envkernel_schemas import Outcome, Task
from envkernel_users import LLMUser, LLMUserSettings

SHARED = ("base_url", "api_key", "model", "request_timeout", "max_retries", "concurrency")
"""Every one of the four has these (the users' config files name them)."""

COMPONENTS = {
    # component: (settings, its defaults of the shared settings and its own sampling ones, before
    # and after the merge)
    "llm": (
        LLMSettings,
        {
            "request_timeout": 180.0,
            "connect_timeout": 10.0,
            "max_retries": 2,
            "concurrency": 4,
            "temperature": 0.2,
            "max_tokens": 4096,
        },
    ),
    "llm-user": (
        LLMUserSettings,
        {"request_timeout": 60.0, "max_retries": 3, "temperature": 0.7, "max_tokens": 200},
    ),
    "openai": (
        OpenAISettings,
        {
            "request_timeout": 60.0,
            "connect_timeout": 10.0,
            "max_retries": 3,
            "backoff": 0.5,
            "backoff_max": 8.0,
            "concurrency": 64,
            "temperature": 1.0,
            "max_tokens": 1024,
        },
    ),
    "judge": (
        JudgeSettings,
        {
            "request_timeout": 60.0,
            "connect_timeout": 10.0,
            "max_retries": 3,
            "backoff": 0.5,
            "backoff_max": 8.0,
            "concurrency": 16,
            "temperature": 0.0,
            "max_tokens": 512,
        },
    ),
}
ENV = {
    "llm": "ENVKERNEL_LLM_MODEL",
    "llm-user": "OPENAI_MODEL",
    "openai": "OPENAI_MODEL",
    "judge": "ENVKERNEL_JUDGE_MODEL",
}
"""The variable each one reads its model from first (the kernel's ``__env__``)."""


@pytest.mark.parametrize("component", sorted(COMPONENTS))
def test_each_keeps_its_names_defaults_and_variables_on_the_one_base(component: str) -> None:
    cls, defaults = COMPONENTS[component]
    assert issubclass(cls, ChatSettings) and set(SHARED) <= set(cls.__struct_fields__)
    s = cls()
    assert {k: getattr(s, k) for k in defaults} == defaults
    assert s.base_url == s.api_key == s.model == "" and cls.__env__["model"] == ENV[component]


@pytest.mark.parametrize("component", sorted(COMPONENTS))
def test_file_environment_and_set_flags_decode_as_before(component: str) -> None:
    cls, _ = COMPONENTS[component]
    raw = {"base_url": "http://127.0.0.1:9/v1", "request_timeout": 7, "model": "from-file"}
    s = settings_for(
        component,
        cls,
        raw,
        environ={ENV[component]: "from-env"},
        flags={"concurrency": "3", "max_retries": 0},
    )
    assert (s.base_url, s.request_timeout, s.model, s.concurrency, s.max_retries) == (
        "http://127.0.0.1:9/v1",
        7.0,
        "from-env",
        3,
        0,
    )
    with pytest.raises(
        ConfigError, match=r"unknown field `temprature`.*valid settings: .*request_timeout"
    ):
        settings_for(component, cls, {"temprature": 1}, environ={})
    with pytest.raises(ConfigError, match="concurrency must be at least 1"):
        settings_for(component, cls, {}, environ={}, flags={"concurrency": 0})
    with pytest.raises(ConfigError, match="request_timeout and connect_timeout must be positive"):
        settings_for(component, cls, {"request_timeout": 0}, environ={})


def test_empty_url_model_and_key_fall_back_to_openai_variables_and_a_gap_says_where_to_fill_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in ("OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(
        ConfigError,
        match=r"the judge has no base URL: set ENVKERNEL_JUDGE_BASE_URL or OPENAI_BASE_URL, "
        r"\[judge\] base_url, or --set judge.base_url=",
    ):
        JudgeSettings().target()
    with pytest.raises(
        ConfigError,
        match=r"the llm synthesizer has no model: set ENVKERNEL_LLM_MODEL or OPENAI_MODEL, "
        r"\[llm\] model",
    ):
        LLMSettings(base_url="http://127.0.0.1:9/v1").target()
    with pytest.raises(
        ConfigError,
        match=r"the openai policy has no model: set OPENAI_MODEL, \[openai\] model, or --set "
        r"openai.model=",
    ):
        OpenAISettings(base_url="http://127.0.0.1:9/v1").target()
    assert LLMUserSettings(base_url="http://127.0.0.1:9/v1").target(need_model=False) == (
        "http://127.0.0.1:9/v1",
        "",
    )
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8/v1")
    monkeypatch.setenv("OPENAI_MODEL", "shared-model")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert JudgeSettings(model="judge-model").target() == ("http://127.0.0.1:8/v1", "judge-model")
    assert (
        JudgeSettings(api_key="<redacted>").resolved("api_key") == "sk-env"
    )  # a redacted key is never sent
    client = JudgeSettings(
        api_key="sk-secret", request_timeout=5, max_retries=1, backoff=0.1, concurrency=2
    ).client()
    assert (
        client.base_url,
        client.request_timeout,
        client.max_retries,
        client.backoff,
        client.concurrency,
    ) == ("http://127.0.0.1:8/v1", 5, 1, 0.1, 2)
    assert "sk-secret" not in repr(client) and client.scrub("key sk-secret") == "key <redacted>"


def test_the_body_leaves_out_what_is_unset_and_carries_extra_body() -> None:
    s = LLMSettings(max_tokens=None, extra_body={"top_k": 5})
    body = s.body(
        "m",
        [{"role": "user", "content": "hi"}],
        temperature=s.temperature,
        max_tokens=s.max_tokens,
        stop=["\n"],
    )
    assert body == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.2,
        "stop": ["\n"],
        "extra_body": {"top_k": 5},
    }


def test_settings_given_to_the_llm_user_reach_the_server() -> None:
    """The user had no ``extra_body`` before the merge; now every one of the four sends it."""
    task = Task(
        id="t",
        env_id="e",
        request="Cancel my orders.",
        calls=[],
        hidden=["Only the ones over 100."],
        outcome=Outcome(mutates=True),
    )
    with ScriptedServer([completion("Only the ones over 100.")]) as server:
        raw = {"base_url": server.base_url, "model": "user-model", "max_retries": 0}
        u = LLMUser(
            settings_for(
                "llm-user",
                LLMUserSettings,
                raw,
                environ={},
                flags={"extra_body": {"top_k": 3}, "max_tokens": 50},
            )
        )

        async def go() -> str | None:
            try:
                return await u.reply(
                    task,
                    [
                        {"role": "user", "content": task.request},
                        {"role": "assistant", "content": "Which ones?"},
                    ],
                    None,
                )
            finally:
                await u.aclose()

        assert asyncio.run(go()) == "Only the ones over 100."
        sent = server.requests[0]
    assert (
        sent["model"] == "user-model"
        and sent["max_tokens"] == 50
        and sent["top_k"] == 3
        and "extra_body" not in sent
    )
