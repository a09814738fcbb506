"""AnthropicSummarizer against a real local HTTP server, through the real `anthropic` SDK.

Retries stay cheap: every retried failure carries a tiny retry-after, which the SDK honours instead
of its 0.5 s exponential backoff, or the summarizer runs with max_retries=0.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from decimal import Decimal
from pathlib import Path

import pytest

from engine.manager import SessionManager
from engine.messages import Message, Role, TextContentBlock
from engine.prompt import SYSTEM_PROMPT
from engine.summarizers.anthropic_summarizer import PROMPT_OVERHEAD_TOKENS, AnthropicSummarizer
from engine.summarizers.base import ErrorClass, Summarizer, SummarizerError, SummaryRequest
from engine.summarizers.pricing import cost_of, price_for
from tests.messages_api_server import (
    Behaviour,
    EmptyText,
    MessagesAPIServer,
    delay,
    empty_text,
    malformed_json,
    ok,
    raw,
    refused_base_url,
    status,
    truncated,
)

API_KEY = "sk-ant-test-0123456789-SECRET"
MODEL = "claude-haiku-4-5"
QUICK_RETRY = {"retry-after": "0.01"}  # seconds; the SDK accepts a float here

SPAN = (
    Message(
        id="m1", role=Role.USER, content=(TextContentBlock("Rename foo() to bar() in app.py"),)
    ),
    Message(id="m2", role=Role.ASSISTANT, content=(TextContentBlock("Renamed; tests pass."),)),
)
REQUEST = SummaryRequest(span=SPAN, prompt_version="1.0.0", max_tokens=512)


@asynccontextmanager
async def summarizer_for(
    base_url: str,
    *,
    api_key: str | None = API_KEY,
    max_retries: int = 0,
    timeout_s: float = 5.0,
) -> AsyncIterator[AnthropicSummarizer]:
    summarizer = AnthropicSummarizer(
        MODEL, api_key=api_key, base_url=base_url, timeout_s=timeout_s, max_retries=max_retries
    )
    try:
        yield summarizer
    finally:
        await summarizer.aclose()


async def failure_of(summarizer: AnthropicSummarizer) -> SummarizerError:
    with pytest.raises(SummarizerError) as raised:
        await summarizer.summarize(REQUEST)
    return raised.value


# --- success -------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_success_returns_text_usage_and_exact_cost(server: MessagesAPIServer) -> None:
    server.script(ok("## Goals\n- rename foo", input_tokens=1200, output_tokens=300))
    async with summarizer_for(server.base_url) as summarizer:
        result = await summarizer.summarize(REQUEST)

    assert result.text == "## Goals\n- rename foo"
    assert result.model == "anthropic:claude-haiku-4-5"
    assert (result.tokens_in, result.tokens_out) == (1200, 300)
    # haiku-4-5: $1/M in, $5/M out.
    assert result.cost_usd == Decimal("0.0027")
    assert isinstance(result.cost_usd, Decimal)
    assert result.latency_ms >= 0


@pytest.mark.asyncio
async def test_request_carries_the_versioned_prompt_and_the_fenced_transcript(
    server: MessagesAPIServer,
) -> None:
    async with summarizer_for(server.base_url) as summarizer:
        await summarizer.summarize(REQUEST)

    (sent,) = server.requests
    assert sent.path == "/v1/messages"
    body = sent.body
    assert isinstance(body, dict)
    assert body["model"] == MODEL
    assert body["max_tokens"] == 512
    assert "temperature" not in body  # no sampling override: the SDK's request as it is
    assert body["system"] == SYSTEM_PROMPT
    assert "memory_add" in body["system"]
    (user_message,) = body["messages"]
    assert user_message["role"] == "user"
    transcript = user_message["content"]
    assert transcript.startswith("<transcript>\n")
    assert "</transcript>" in transcript
    assert "Rename foo() to bar() in app.py" in transcript
    assert transcript.index("Rename foo()") < transcript.index("</transcript>")


@pytest.mark.asyncio
async def test_manual_instructions_follow_the_transcript(server: MessagesAPIServer) -> None:
    request = SummaryRequest(
        span=SPAN, prompt_version="1.0.0", max_tokens=100, instructions="keep the file list"
    )
    async with summarizer_for(server.base_url) as summarizer:
        await summarizer.summarize(request)
    body = server.requests[0].body
    assert isinstance(body, dict)
    content = body["messages"][0]["content"]
    assert content.index("</transcript>") < content.index("keep the file list")


def sent_credential(headers: dict[str, str]) -> str | None:
    """The key a request carried, in whichever credential header the SDK chose to send it."""
    if "x-api-key" in headers:
        return headers["x-api-key"]
    authorization = headers.get("authorization", "")
    return authorization.removeprefix("Bearer ") if authorization.startswith("Bearer ") else None


@pytest.mark.asyncio
async def test_api_key_is_sent_once_in_the_sdks_own_credential_header(
    server: MessagesAPIServer,
) -> None:
    # No header overrides (we trust the SDK): the key travels the way the SDK sends it.
    async with summarizer_for(server.base_url) as summarizer:
        await summarizer.summarize(REQUEST)
    headers = server.requests[0].headers
    assert sent_credential(headers) == API_KEY
    carrying = [name for name, value in headers.items() if API_KEY in value]
    assert len(carrying) == 1
    assert carrying[0] in {"x-api-key", "authorization"}
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", headers["anthropic-version"])


@pytest.mark.asyncio
async def test_key_and_base_url_default_to_the_environment(
    server: MessagesAPIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    summarizer = AnthropicSummarizer(MODEL, max_retries=0)
    try:
        result = await summarizer.summarize(REQUEST)
    finally:
        await summarizer.aclose()
    assert result.text == "summary"
    assert sent_credential(server.requests[0].headers) == "sk-ant-from-env"


@pytest.mark.asyncio
async def test_summarizer_satisfies_the_protocol(server: MessagesAPIServer) -> None:
    async with summarizer_for(server.base_url) as summarizer:
        assert isinstance(summarizer, Summarizer)
        assert summarizer.name == "anthropic:claude-haiku-4-5"


def test_unpriced_model_is_refused_before_any_call() -> None:
    with pytest.raises(KeyError, match="claude-unknown-9"):
        AnthropicSummarizer("claude-unknown-9", api_key=API_KEY, base_url=refused_base_url())


@pytest.mark.asyncio
async def test_estimate_cost_adds_prompt_overhead_to_input_and_charges_all_of_max_tokens() -> None:
    async with summarizer_for(refused_base_url()) as summarizer:
        estimate = summarizer.estimate_cost(10_000, 2_000)
    assert estimate == cost_of(price_for(MODEL), 10_000 + PROMPT_OVERHEAD_TOKENS, 2_000)
    assert estimate == Decimal("0.0206")


# --- retries -------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_429_with_retry_after_is_retried_then_succeeds(server: MessagesAPIServer) -> None:
    server.script(status(429, headers=QUICK_RETRY), ok("after the retry"))
    async with summarizer_for(server.base_url, max_retries=2) as summarizer:
        result = await summarizer.summarize(REQUEST)
    assert result.text == "after the retry"
    assert len(server.requests) == 2
    assert [r.headers["x-stainless-retry-count"] for r in server.requests] == ["0", "1"]


@pytest.mark.asyncio
async def test_persistent_429_is_rate_limit_after_the_retries(server: MessagesAPIServer) -> None:
    server.script(*[status(429, headers=QUICK_RETRY)] * 3)
    async with summarizer_for(server.base_url, max_retries=2) as summarizer:
        error = await failure_of(summarizer)
    assert error.error_class is ErrorClass.RATE_LIMIT
    assert "429" in str(error)
    assert error.billed_cost_usd == 0
    assert len(server.requests) == 3


# --- classification ------------------------------------------------------------------------------

# HTTP status -> error class, and whether the SDK retries it before giving up.
STATUS_CLASSES = [
    *((code, ErrorClass.OVERLOADED, True) for code in (500, 502, 503, 529)),
    *((code, ErrorClass.AUTH, False) for code in (401, 403)),
    *((code, ErrorClass.CAPABILITY, False) for code in (400, 404, 413)),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(("code", "error_class", "retried"), STATUS_CLASSES)
async def test_each_error_status_has_its_class_and_only_5xx_and_529_are_retried(
    server: MessagesAPIServer, code: int, error_class: ErrorClass, retried: bool
) -> None:
    server.script(*[status(code, headers=QUICK_RETRY)] * 2)
    async with summarizer_for(server.base_url, max_retries=1) as summarizer:
        error = await failure_of(summarizer)
    assert error.error_class is error_class
    assert str(code) in str(error)
    assert len(server.requests) == (2 if retried else 1)
    if error_class is ErrorClass.CAPABILITY:
        assert f"scripted {code}" in str(error)  # the API's own message is kept


@pytest.mark.asyncio
async def test_answer_slower_than_the_timeout_is_network_timeout(server: MessagesAPIServer) -> None:
    server.script(delay(5.0))
    async with summarizer_for(server.base_url, timeout_s=0.2) as summarizer:
        error = await failure_of(summarizer)
    assert error.error_class is ErrorClass.NETWORK
    assert "timeout" in str(error)


@pytest.mark.asyncio
async def test_refused_connection_is_network() -> None:
    async with summarizer_for(refused_base_url()) as summarizer:
        error = await failure_of(summarizer)
    assert error.error_class is ErrorClass.NETWORK
    assert "refused" in str(error)


@pytest.mark.asyncio
async def test_truncated_body_is_bad_response(server: MessagesAPIServer) -> None:
    server.script(truncated())
    async with summarizer_for(server.base_url) as summarizer:
        error = await failure_of(summarizer)
    assert error.error_class is ErrorClass.BAD_RESPONSE
    assert "truncated" in str(error)


@pytest.mark.asyncio
async def test_truncated_body_is_retried_by_the_sdk(server: MessagesAPIServer) -> None:
    # The SDK sees a body cut short as a connection error and retries it (after ~0.5 s backoff).
    server.script(truncated(), ok("whole"))
    async with summarizer_for(server.base_url, max_retries=1) as summarizer:
        result = await summarizer.summarize(REQUEST)
    assert result.text == "whole"
    assert len(server.requests) == 2


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "behaviour",
    [
        malformed_json(),
        raw(b'{"unexpected": "shape"}'),
        raw(b"<html>gateway</html>", content_type="text/html"),
    ],
    ids=["malformed-json", "wrong-shape", "not-json"],
)
async def test_unparsable_or_malformed_body_is_bad_response(
    server: MessagesAPIServer, behaviour: Behaviour
) -> None:
    server.script(behaviour)
    async with summarizer_for(server.base_url, max_retries=2) as summarizer:
        error = await failure_of(summarizer)
    assert error.error_class is ErrorClass.BAD_RESPONSE
    assert error.billed_cost_usd == 0
    assert len(server.requests) == 1  # a 200 is never retried


@pytest.mark.asyncio
@pytest.mark.parametrize("text", ["", "  \n\t "])
async def test_empty_summary_is_returned_with_its_billed_cost(
    server: MessagesAPIServer, text: str
) -> None:
    # Returned, not raised: the manager judges it (validation_failed), whoever wrote it.
    server.script(empty_text(text, input_tokens=4000, output_tokens=2))
    async with summarizer_for(server.base_url) as summarizer:
        result = await summarizer.summarize(REQUEST)
    assert result.text == text
    assert (result.tokens_in, result.tokens_out) == (4000, 2)
    assert result.cost_usd > 0
    assert result.cost_usd == cost_of(price_for(MODEL), 4000, 2)


REFUSAL = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": MODEL,
    "content": [],
    "stop_reason": "refusal",
    "usage": {"input_tokens": 50, "output_tokens": 3},
}


@pytest.mark.asyncio
async def test_message_without_text_blocks_is_an_empty_summary_with_its_billed_cost(
    server: MessagesAPIServer,
) -> None:
    server.script(raw(json.dumps(REFUSAL).encode()))
    async with summarizer_for(server.base_url) as summarizer:
        result = await summarizer.summarize(REQUEST)
    assert result.text == ""
    assert result.cost_usd == cost_of(price_for(MODEL), 50, 3)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "behaviour",
    [empty_text("", input_tokens=4000, output_tokens=2), raw(json.dumps(REFUSAL).encode())],
    ids=["empty-text", "no-text-blocks"],
)
async def test_session_manager_reports_an_empty_summary_as_validation_failed_and_charges_it(
    server: MessagesAPIServer, tmp_path: Path, behaviour: Behaviour
) -> None:
    server.script(behaviour)
    history = [
        Message(
            id=f"m{i}",
            role=Role.USER if i % 2 == 0 else Role.ASSISTANT,
            content=(TextContentBlock("x" * 300),),
        )
        for i in range(8)
    ]
    async with summarizer_for(server.base_url) as summarizer:
        manager = SessionManager(
            history=history,
            compaction_threshold_tokens=300,
            compaction_hard_cap_tokens=10_000,
            compaction_preserve_recent_turns=2,
            compaction_model=f"anthropic:{MODEL}",
            summarizer=summarizer,
            workspace=tmp_path,
        )
        outcome = await manager.before_turn()
    assert outcome.status == "failed"
    assert outcome.failure_mode == "validation_failed"
    assert manager.messages == history
    billed = (4000, 2) if isinstance(behaviour, EmptyText) else (50, 3)
    assert manager.spent_usd == cost_of(price_for(MODEL), *billed)
    assert manager.spent_usd > 0
    assert len(server.requests) == 1


@pytest.mark.asyncio
async def test_a_400_is_capability_and_is_not_retried_with_another_request(
    server: MessagesAPIServer,
) -> None:
    rejection = json.dumps(
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "max_tokens: too large"},
        }
    ).encode()
    server.script(status(400, rejection), ok("never asked for"))
    async with summarizer_for(server.base_url, max_retries=2) as summarizer:
        error = await failure_of(summarizer)
    assert error.error_class is ErrorClass.CAPABILITY
    assert "max_tokens: too large" in str(error)
    assert len(server.requests) == 1
    body = server.requests[0].body
    assert isinstance(body, dict)
    assert "temperature" not in body


# --- the key never leaks -------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "behaviour",
    [status(401), status(500), truncated(), malformed_json(), delay(5.0)],
    ids=["401", "500", "truncated", "malformed", "timeout"],
)
async def test_api_key_never_appears_in_errors_or_repr(
    server: MessagesAPIServer, behaviour: Behaviour
) -> None:
    server.script(behaviour)
    # 1 s: long enough for the request to go out on a loaded machine before the timeout.
    async with summarizer_for(server.base_url, timeout_s=1.0) as summarizer:
        error = await failure_of(summarizer)
        assert API_KEY not in repr(summarizer)
        assert "AnthropicSummarizer(model='claude-haiku-4-5'" in repr(summarizer)
    assert API_KEY not in str(error)
    assert API_KEY not in repr(error)
    sent = server.wait_for_requests(1)[0]
    assert sent_credential(sent.headers) == API_KEY  # sent, just never shown


@pytest.mark.asyncio
async def test_api_key_never_appears_in_an_empty_result_or_repr(server: MessagesAPIServer) -> None:
    server.script(empty_text())
    async with summarizer_for(server.base_url) as summarizer:
        result = await summarizer.summarize(REQUEST)
        assert API_KEY not in repr(summarizer)
    assert API_KEY not in repr(result)
    assert sent_credential(server.requests[0].headers) == API_KEY


@pytest.mark.asyncio
async def test_a_key_echoed_back_by_the_server_is_redacted(server: MessagesAPIServer) -> None:
    echo = json.dumps(
        {"type": "error", "error": {"type": "authentication_error", "message": f"bad {API_KEY}"}}
    ).encode()
    server.script(status(401, echo))
    async with summarizer_for(server.base_url) as summarizer:
        error = await failure_of(summarizer)
    assert API_KEY not in str(error)
    assert "[redacted]" in str(error)


# --- count_tokens --------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_count_tokens_asks_the_count_tokens_endpoint(server: MessagesAPIServer) -> None:
    server.script(ok(input_tokens=42))
    async with summarizer_for(server.base_url) as summarizer:
        assert await summarizer.count_tokens("hello there") == 42
    (sent,) = server.requests
    assert sent.path == "/v1/messages/count_tokens"
    assert isinstance(sent.body, dict)
    assert sent.body["model"] == MODEL
    assert sent.body["messages"] == [{"role": "user", "content": "hello there"}]


@pytest.mark.asyncio
async def test_count_tokens_is_none_when_the_server_is_down() -> None:
    async with summarizer_for(refused_base_url(), max_retries=2) as summarizer:
        assert await summarizer.count_tokens("hello") is None


@pytest.mark.asyncio
async def test_count_tokens_is_none_on_an_error_status_without_retrying(
    server: MessagesAPIServer,
) -> None:
    server.script(status(500, headers=QUICK_RETRY))
    async with summarizer_for(server.base_url, max_retries=2) as summarizer:
        assert await summarizer.count_tokens("hello") is None
    assert len(server.requests) == 1
