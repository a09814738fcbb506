"""A local model server (Ollama, llama.cpp's server, vLLM, LM Studio) behind `summarizer.base_url`
is called without a key: the real `anthropic` SDK against a real server on 127.0.0.1, with no key
anywhere in the environment. A key the user has is never sent where the settings say none goes."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.manager import SessionManager
from engine.summarizers import StatedPrice, SummarizerSettings, missing_key
from engine.summarizers.anthropic_summarizer import AnthropicSummarizer
from engine.summarizers.base import ErrorClass, SummarizerError
from engine.summarizers.keyless import is_loopback, sends_no_key
from tests.engine.test_anthropic_summarizer import REQUEST
from tests.history_builders import tool_session
from tests.messages_api_server import MessagesAPIServer, ok

ENV_KEY = "sk-ant-test-local-endpoint-SECRET-9"
LOCAL_MODEL = "anthropic:qwen2.5-coder:7b"
ZERO = StatedPrice(input_per_mtok=Decimal(0), output_per_mtok=Decimal(0))
# Where the SDK looks for credentials besides its arguments.
CREDENTIAL_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_PROFILE",
    "ANTHROPIC_CONFIG_DIR",
    "ANTHROPIC_FEDERATION_RULE_ID",
    "ANTHROPIC_IDENTITY_TOKEN",
    "ANTHROPIC_IDENTITY_TOKEN_FILE",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
)


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no on-disk profile for the SDK to discover
    yield


def key_headers(server: MessagesAPIServer) -> list[dict[str, str]]:
    return [
        {k: v for k, v in r.headers.items() if k in ("authorization", "x-api-key")}
        for r in server.requests
    ]


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:11434", True),
        ("http://127.8.9.10:8080/v1", True),
        ("http://localhost:1234", True),
        ("http://[::1]:8000", True),
        ("http://[::ffff:127.0.0.1]:8000", True),
        ("https://localhost.example.com", False),
        ("http://127.0.0.1.example.com:80", False),
        ("http://10.0.0.7:11434", False),
        ("http://192.168.1.20:8000", False),
        ("https://api.example.com", False),
        ("http://[::1", False),  # malformed: not local, and no crash
        (None, False),
        ("", False),
    ],
)
def test_only_this_machine_counts_as_local(url: str | None, local: bool) -> None:
    assert is_loopback(url) is local


def test_the_rule_a_key_or_an_explicit_setting_decides() -> None:
    assert sends_no_key("http://127.0.0.1:1", None)
    assert not sends_no_key("http://127.0.0.1:1", "a-key")  # the user gave one: it is used
    assert not sends_no_key("http://10.0.0.7:1", None)  # a LAN host must say so
    assert sends_no_key("http://10.0.0.7:1", "a-key", no_key=True)


async def test_a_loopback_endpoint_without_any_key_is_called_with_none(
    no_credentials: None,
) -> None:
    with MessagesAPIServer(default=ok("LOCAL SUMMARY", 900, 80)) as server:
        summarizer = AnthropicSummarizer(
            "claude-haiku-4-5", base_url=server.base_url, max_retries=0, timeout_s=5.0
        )
        result = await summarizer.summarize(REQUEST)
        counted = await summarizer.count_tokens("how many tokens is this")
        await summarizer.aclose()
    assert result.text == "LOCAL SUMMARY" and result.tokens_in == 900
    assert counted == 900  # count_tokens goes keyless too
    assert [r.path for r in server.requests] == ["/v1/messages", "/v1/messages/count_tokens"]
    assert key_headers(server) == [{}, {}]


async def test_a_remote_endpoint_without_any_key_is_refused_before_sending(
    no_credentials: None,
) -> None:
    # TEST-NET-1 (RFC 5737): nothing there; the SDK refuses before it would connect.
    summarizer = AnthropicSummarizer(
        "claude-haiku-4-5", base_url="http://192.0.2.1:9", max_retries=0
    )
    with pytest.raises(SummarizerError) as raised:
        await summarizer.summarize(REQUEST)
    await summarizer.aclose()
    assert raised.value.error_class is ErrorClass.AUTH


async def test_a_key_in_the_environment_still_goes_to_a_loopback_endpoint(
    no_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local gateway (a proxy with its own keys) gets the key the user configured."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", ENV_KEY)
    with MessagesAPIServer() as server:
        summarizer = AnthropicSummarizer("claude-haiku-4-5", base_url=server.base_url)
        await summarizer.summarize(REQUEST)
        await summarizer.aclose()
    (sent,) = key_headers(server)
    assert ENV_KEY in " ".join(sent.values())


async def test_no_key_setting_keeps_the_environments_key_from_the_endpoint(
    no_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`no_key`: a model server elsewhere on the LAN never sees the user's real key."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", ENV_KEY)
    with MessagesAPIServer(default=ok("LAN SUMMARY", 3_000, 200)) as server:
        settings = SummarizerSettings(
            model=LOCAL_MODEL, base_url=server.base_url, no_key=True, price=ZERO, timeout_s=5.0
        )
        manager = SessionManager(
            history=tool_session(6, size=300),
            compaction_model=LOCAL_MODEL,
            summarizer_settings=settings,
            compaction_threshold_tokens=300,
            compaction_hard_cap_tokens=5_000,
            compaction_preserve_recent_turns=2,
        )
        outcome = await manager.before_turn("t1")
        await manager.aclose()
    assert outcome.status == "compacted" and manager.spent_usd == 0
    assert key_headers(server) == [{}]
    assert all(ENV_KEY not in r.raw_body.decode() for r in server.requests)


def test_no_key_must_be_a_boolean() -> None:
    with pytest.raises(ConfigError, match=r"summarizer\.no_key"):
        SummarizerSettings(no_key="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("model", "base_url", "wanted"),
    [
        ("anthropic:claude-haiku-4-5", None, "ANTHROPIC_API_KEY"),
        ("anthropic:qwen2.5-coder:7b", "http://127.0.0.1:11434", None),
        ("anthropic:qwen2.5-coder:7b", "http://10.0.0.7:11434", "ANTHROPIC_API_KEY"),
        ("openai:gpt-4.1-mini", None, "OPENAI_API_KEY"),
        ("openai:llama3.2", "http://localhost:11434/v1", None),
        ("local:extractive", None, None),
    ],
)
def test_which_key_a_run_lacks(
    no_credentials: None, model: str, base_url: str | None, wanted: str | None
) -> None:
    settings = SummarizerSettings(model=model, base_url=base_url)
    assert missing_key(model, settings) == wanted
