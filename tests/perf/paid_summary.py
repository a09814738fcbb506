"""A paid summarizer for the benchmarks, with no network: the real `anthropic` SDK against the local
127.0.0.1 Messages API server (tests/messages_api_server.py) in its `realistic` mode.

What is real: the SDK and its request, the request body our summarizer builds (trimmed outputs, or
the session's cached prefix), and the usage the server reports for that body, counted with the
engine's estimator through an emulated prompt cache, priced by the engine's own pricing path at
claude-haiku-4-5 rates, or at the model and price the caller names (a stated one included). What
stands in for the model: the summary text. The server answers with the offline extractive summary
of exactly what the request carried (the transcript parsed back from the request, so a trimmed
output is summarized trimmed), at the request's max_tokens. Its quality is the extractive
summarizer's, not Haiku's; its length and its billing are a paid call's.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.messages import (
    ContentBlock,
    Message,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
)
from engine.summarizers.anthropic_summarizer import AnthropicSummarizer
from engine.summarizers.base import SummaryRequest
from engine.summarizers.extractive import ExtractiveSummarizer
from engine.summarizers.pricing import ModelPrice
from engine.summarizers.request import SessionPrefix
from tests.messages_api_server import MessagesAPIServer, realistic

MODEL = "claude-haiku-4-5"
NAME = f"anthropic:{MODEL}"
LOCAL_KEY = "sk-ant-local-benchmark-not-a-key"

_ROLE_LINE = re.compile(r"^\[(USER|ASSISTANT)\]$")
_CALL_LINE = re.compile(r"^\(tool call (\S+) id=(\S+)\) (.*)$")
_RESULT_LINE = re.compile(r"^\(tool result id=(\S+) (ok|error)\)$")
_SPAN_RANGE = re.compile(r"Summarize messages (\d+) to (\d+) of the (\d+) above")


def parse_transcript(text: str) -> tuple[Message, ...]:
    """engine.prompt.render_transcript read back into messages (tool calls and
    results as blocks again), so the stand-in summarizer sees what the model would have seen."""
    body = text.split("<transcript>\n", 1)[-1].rsplit("\n</transcript>", 1)[0]
    messages: list[Message] = []
    role: Role | None = None
    blocks: list[ContentBlock] = []
    lines: list[str] = []
    result: tuple[str, bool] | None = None

    def flush_text() -> None:
        nonlocal lines, result
        joined = "\n".join(lines).strip("\n")
        if result is not None:
            blocks.append(ToolResultContentBlock(result[0], joined, result[1]))
        elif joined.strip():
            blocks.append(TextContentBlock(joined))
        lines, result = [], None

    def flush_message() -> None:
        nonlocal blocks
        flush_text()
        if role is not None and blocks:
            messages.append(Message(id=f"p{len(messages)}", role=role, content=tuple(blocks)))
        blocks = []

    for line in body.split("\n"):
        if match := _ROLE_LINE.match(line):
            flush_message()
            role = Role.USER if match.group(1) == "USER" else Role.ASSISTANT
        elif match := _CALL_LINE.match(line):
            flush_text()
            blocks.append(
                ToolUseContentBlock(match.group(2), match.group(1), {"args": match.group(3)})
            )
        elif match := _RESULT_LINE.match(line):
            flush_text()
            result = (match.group(1), match.group(2) == "error")
        else:
            lines.append(line)
    flush_message()
    return tuple(messages)


def from_api(message: dict[str, Any], index: int) -> Message:
    blocks: list[ContentBlock] = []
    for block in message.get("content") or []:
        kind = block.get("type")
        if kind == "text":
            blocks.append(TextContentBlock(block["text"]))
        elif kind == "tool_use":
            blocks.append(ToolUseContentBlock(block["id"], block["name"], block.get("input", {})))
        elif kind == "tool_result":
            blocks.append(
                ToolResultContentBlock(
                    block["tool_use_id"], block.get("content", ""), block.get("is_error", False)
                )
            )
    return Message(id=f"a{index}", role=Role(message["role"]), content=tuple(blocks))


def span_of(body: dict[str, Any]) -> tuple[Message, ...]:
    """The messages a compaction request asks to be summarized."""
    messages = body.get("messages") or []
    first = messages[0]["content"] if messages else ""
    if isinstance(first, str):  # standalone: one user message holding the rendered transcript
        return parse_transcript(first)
    instruction = messages[-1]["content"][-1].get("text", "")
    found = _SPAN_RANGE.search(instruction)
    history = [from_api(m, i) for i, m in enumerate(messages)]
    if found is None:
        return tuple(history)
    start, end = int(found.group(1)) - 1, int(found.group(2))
    return tuple(history[start:end])


_extractive = ExtractiveSummarizer()


def respond(body: dict[str, Any]) -> str:
    """The server's answer to a compaction request: the extractive summary of its span."""
    request = SummaryRequest(
        span=span_of(body), prompt_version="1.0.0", max_tokens=int(body.get("max_tokens", 2_000))
    )
    return _extractive.summarize_now(request)


def paid_server() -> MessagesAPIServer:
    """A started server answering every call `realistic`-ally; close it when done."""
    return MessagesAPIServer(default=realistic(), responder=respond).start()


def paid_summarizer(
    server: MessagesAPIServer,
    *,
    session_prefix: SessionPrefix | None = None,
    trim: bool = True,
    model: str = MODEL,
    price: ModelPrice | None = None,
) -> AnthropicSummarizer:
    """`price`: the model's rates (engine.summarizers.model_price's, a stated one included);
    None: the price table's for `model`."""
    options: dict[str, Any] = {} if trim else {"trim_tool_output_tokens": 0}
    return AnthropicSummarizer(
        model,
        api_key=LOCAL_KEY,
        base_url=server.base_url,
        max_retries=0,
        session_prefix=session_prefix,
        price=price,
        **options,
    )
