"""The cheaper compaction call (engine.summarizers.request) through the real SDK and a local server:
long tool outputs trimmed with a note, the call on the session's own cached prefix, and the
provider's usage read back and priced kind by kind (§12.5)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from decimal import Decimal

import pytest

from engine.history import History
from engine.manager import SessionManager
from engine.messages import Message
from engine.summarizers.anthropic_summarizer import AnthropicSummarizer
from engine.summarizers.base import SummaryRequest
from engine.summarizers.pricing import CallUsage, price_for, usage_cost
from engine.summarizers.request import (
    SessionPrefix,
    build_request,
    primary_request,
    trim_output,
    trim_span,
)
from tests.history_builders import assistant, tool_call, tool_result, user
from tests.messages_api_server import MessagesAPIServer, count_tokens, ok, realistic

API_KEY = "sk-ant-test-request-0000"
MODEL = "claude-haiku-4-5"
HAIKU = price_for(MODEL)
LOG_LINES = [f"12:00:{i:02d} INFO step {i} ok" for i in range(300)]
LOG_LINES[150] = "12:02:30 ERROR step 150 failed: connection refused by db:5433"
LOG = "\n".join(LOG_LINES)
PREFIX = SessionPrefix(
    model=f"anthropic:{MODEL}",
    system="You are the coding agent. " * 200,
    tools=({"name": "read_log", "description": "read a log", "input_schema": {"type": "object"}},),
)


def history() -> list[Message]:
    return [
        user("u0", "why does the worker stop?"),
        tool_call("a0", "call-0", name="read_log", text="reading the worker log"),
        tool_result("r0", "call-0", output=LOG),
        assistant("a1", "the database refused the connection at step 150"),
        user("u1", "fix it"),
        tool_call("a2", "call-1", name="read_log", text="reading it again"),
        tool_result("r1", "call-1", output="12:10:00 INFO all ok"),
        assistant("a3", "fixed: the port is 5433 now"),
    ]


@pytest.fixture
def server() -> Iterator[MessagesAPIServer]:
    with MessagesAPIServer(default=realistic(), responder=lambda body: "the summary") as running:
        yield running


def summarize(server: MessagesAPIServer, request: SummaryRequest, **options: object):
    async def call():
        summarizer = AnthropicSummarizer(
            MODEL, api_key=API_KEY, base_url=server.base_url, max_retries=0, **options
        )
        try:
            return await summarizer.summarize(request)
        finally:
            await summarizer.aclose()

    return asyncio.run(call())


def test_a_long_output_keeps_head_tail_and_error_lines_with_a_note_of_what_was_cut() -> None:
    text, saved = trim_output(LOG, 400)
    assert saved > 2_000
    lines = text.splitlines()
    assert lines[:12] == LOG_LINES[:12] and lines[-8:] == LOG_LINES[-8:]
    assert LOG_LINES[150] in lines
    assert "[trimmed for the summary: 279 of 300 lines cut" in text
    assert LOG_LINES[100] not in lines
    assert trim_output("short", 400) == ("short", 0)
    assert trim_output(LOG, 0) == (LOG, 0)  # 0: never trim
    one_line = "x" * 30_000
    cut, removed = trim_output(one_line, 400)
    assert "chars cut from the middle" in cut and removed > 9_000


def test_trimming_touches_only_tool_results() -> None:
    span, trimmed, saved = trim_span(history(), 400)
    assert trimmed == 1 and saved > 2_000
    assert [m.id for m in span] == [m.id for m in history()]
    assert span[2] != history()[2] and span[:2] == tuple(history()[:2])


def test_the_standalone_call_sends_the_trimmed_span_and_prices_the_reported_usage(
    server: MessagesAPIServer,
) -> None:
    request = SummaryRequest(span=tuple(history()), prompt_version="1.0.0", max_tokens=300)
    result = summarize(server, request)
    body = server.requests[-1].body
    assert isinstance(body, dict)
    sent = body["messages"][0]["content"]
    assert "[trimmed for the summary: 279 of 300 lines cut" in sent
    assert LOG_LINES[150] in sent and LOG_LINES[100] not in sent
    usage = result.usage
    assert usage is not None and usage.cache_read_tokens == 0
    untrimmed = summarize(server, request, trim_tool_output_tokens=0).usage
    assert untrimmed is not None and untrimmed.input_tokens > 3 * usage.input_tokens
    assert result.cost_usd == usage_cost(HAIKU, usage)
    assert result.tokens_in == usage.prompt_tokens


def test_every_kind_of_usage_is_priced_at_its_own_rate(server: MessagesAPIServer) -> None:
    server.script(ok("s", 1_000, 200, cache_read=50_000, cache_write=2_000))
    request = SummaryRequest(span=tuple(history()), prompt_version="1.0.0", max_tokens=300)
    result = summarize(server, request)
    assert result.usage == CallUsage(
        input_tokens=1_000, cache_read_tokens=50_000, cache_write_tokens=2_000, output_tokens=200
    )
    # $1 input, $0.10 read, $1.25 write, $5 output per Mtok
    assert result.cost_usd == Decimal("0.001") + Decimal("0.005") + Decimal("0.0025") + Decimal(
        "0.001"
    )


def test_on_the_cached_prefix_the_span_bills_at_the_cache_read_rate(
    server: MessagesAPIServer,
) -> None:
    messages = history()
    # The primary call of the last turn wrote the session's prefix to the cache.
    system, tools, api_messages = primary_request(PREFIX, messages[:-1])
    server.prompt_cache.bill({"system": system, "tools": tools, "messages": api_messages})
    request = SummaryRequest(
        span=tuple(messages[:4]),
        prompt_version="1.0.0",
        max_tokens=300,
        history=tuple(messages),
        span_start=0,
    )
    cached = summarize(server, request, session_prefix=PREFIX)
    body = server.requests[-1].body
    assert isinstance(body, dict)
    # Byte for byte the primary's prefix, then one instruction naming the span.
    assert body["system"] == system and body["tools"] == tools
    assert body["messages"][:-1] == primary_request(PREFIX, messages)[2]
    assert body["messages"][:6] == api_messages[:6]  # the last turn's, up to its breakpoint
    assert "Summarize messages 1 to 4 of the 8 above" in body["messages"][-1]["content"][0]["text"]
    usage = cached.usage
    assert usage is not None
    # Only the closing instruction (the prompt's checklist) is billed at the input rate or
    # written; everything before it, the span included, is read from the cache.
    instruction = body["messages"][-1]["content"][0]["text"]
    assert usage.input_tokens + usage.cache_write_tokens <= count_tokens(instruction) + 16
    assert usage.cache_read_tokens > 5 * (usage.input_tokens + usage.cache_write_tokens)
    # Against the same span sent whole on its own, at the full input rate. (A trimmed standalone
    # call can still be cheaper: the cached call reads the whole prefix and tail too.)
    whole = summarize(server, request, trim_tool_output_tokens=0)
    assert whole.usage is not None and whole.usage.cache_read_tokens == 0
    assert cached.cost_usd < whole.cost_usd


def test_the_cached_prefix_is_only_used_for_the_same_model_and_a_settled_history() -> None:
    messages = history()
    request = SummaryRequest(
        span=tuple(messages[:4]),
        prompt_version="1.0.0",
        max_tokens=300,
        history=tuple(messages),
    )
    other = SessionPrefix(model="anthropic:claude-sonnet-4-5", system="s")
    assert not build_request(request, f"anthropic:{MODEL}", session_prefix=other).on_cached_prefix
    assert build_request(request, f"anthropic:{MODEL}", session_prefix=PREFIX).on_cached_prefix
    running = SummaryRequest(
        span=tuple(messages[:4]),
        prompt_version="1.0.0",
        max_tokens=300,
        history=(*messages, tool_call("a9", "call-9")),
    )
    assert not build_request(running, f"anthropic:{MODEL}", session_prefix=PREFIX).on_cached_prefix
    moved = SummaryRequest(
        span=tuple(messages[1:5]), prompt_version="1.0.0", max_tokens=300, history=tuple(messages)
    )
    assert not build_request(moved, f"anthropic:{MODEL}", session_prefix=PREFIX).on_cached_prefix


def test_the_request_variant_is_in_the_cache_key() -> None:
    messages = [*history(), *history()[:0]]
    keys = set()
    for options in ({}, {"trim_tool_output_tokens": 0}, {"session_prefix": PREFIX}):
        summarizer = AnthropicSummarizer(MODEL, api_key=API_KEY, **options)  # type: ignore[arg-type]
        manager = SessionManager(
            history=messages,
            compaction_threshold_tokens=100,
            compaction_preserve_recent_turns=2,
            summarizer=summarizer,
        )
        preview = manager.preview()
        assert preview is not None
        keys.add(preview.cache_key)
    assert len(keys) == 3
    assert History(messages).total_tokens > 0


def test_the_manager_records_the_calls_usage_on_the_compaction(server: MessagesAPIServer) -> None:
    async def run() -> None:
        summarizer = AnthropicSummarizer(
            MODEL, api_key=API_KEY, base_url=server.base_url, max_retries=0
        )
        manager = SessionManager(
            history=history(),
            compaction_threshold_tokens=100,
            compaction_preserve_recent_turns=2,
            summarizer=summarizer,
        )
        outcome = await manager.before_turn()
        await summarizer.aclose()
        record = outcome.record
        assert record is not None and record.usage is not None
        assert record.cost_usd == usage_cost(HAIKU, record.usage) == manager.spent_usd
        assert record.usage.output_tokens == 4  # "the summary": len 11 / 3, rounded up

    asyncio.run(run())
