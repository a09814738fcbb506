"""`local:extractive`: a deterministic offline summarizer. No model, no key, no cost: it keeps the
lines a continuing agent needs most (the last ask, decisions, facts, file paths, errors, tool runs)
and drops the rest. The embedded default for the demo; never substituted for a named model."""

from __future__ import annotations

import re
import time
from decimal import Decimal

from engine.messages import Role, TextContentBlock, ToolResultContentBlock, ToolUseContentBlock
from engine.summarizers.base import SummaryRequest, SummaryResult
from engine.tokens import estimate_text_tokens

NAME = "local:extractive"

_PATH = re.compile(
    r"(?<![\w/.-])(?:[\w.-]+/)+[\w.-]+\.\w+|(?<![\w/.-])[\w-]+\.(?:py|ts|js|md|toml|json|yaml|yml|sql|txt|cfg|ini|rs|go)\b"
)
_DECISION = re.compile(
    r"(?i)\b(decid\w*|we will|we'll|let's|chose|choose|going with|agreed|plan is|instead of)\b"
)
_FACT = re.compile(
    r"(?i)\b(remember|note that|always|never|must|is set to|defaults? to|requires?|port|version|"
    r"deadline|owner|uses|lives in|located|password policy|convention)\b"
)
# A statement carrying something concrete that is not just a file being worked on: a number,
# a multi-part identifier (ledger-prod-eu-west-1), a path without a file suffix or a test id
# (secret/payments/sandbox, /import, a.py::test_x), or a capitalised name past the first word.
# Such sentences hold the facts an agent would otherwise lose (ports, limits, owners, dates),
# whatever verb they use. Questions, requests and running narration are not statements.
_SPECIFIC = re.compile(
    r"(?<![\w./-])\d[\d.,:]*(?:\s?(?:ms|s|seconds|minutes|entries|%|MB|GB))?\b(?![\w.]*\.py)"
    r"|\b[a-z]+(?:-[a-z0-9]+){2,}\b"
    r"|(?<![\w.])/?[a-z]+(?:/[a-z_]+)+\b(?!\.\w)|::\w+"
    r"|(?<=\s)(?!I\b)[A-Z][a-z]+\b"
)
_NOT_A_STATEMENT = re.compile(
    r"^(?:can you|could you|please|let me|let's|now|next|reading|running|applying|searching|"
    r"here is|done|before we|double-check|i changed|i'd like|go ahead)\b",
    re.IGNORECASE,
)
_ERROR = re.compile(r"(?i)(error|exception|traceback|failed|failure|FAILED|assert)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def _add(bucket: list[str], seen: set[str], line: str, limit: int = 300) -> None:
    line = line if len(line) <= limit else line[: limit - 1] + "…"
    if line not in seen:
        seen.add(line)
        bucket.append(line)


class ExtractiveSummarizer:
    name = NAME

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        started = time.perf_counter()
        text = self.summarize_now(request)
        tokens_in = sum(estimate_text_tokens(m.text()) for m in request.span)
        return SummaryResult(
            text=text,
            model=NAME,
            tokens_in=tokens_in,
            tokens_out=estimate_text_tokens(text),
            cost_usd=Decimal(0),
            latency_ms=round((time.perf_counter() - started) * 1000),
        )

    def estimate_cost(self, tokens_in: int, max_tokens: int) -> Decimal:
        return Decimal(0)

    async def aclose(self) -> None:
        return None

    def summarize_now(self, request: SummaryRequest) -> str:
        asks: list[str] = []
        decisions: list[str] = []
        facts: list[str] = []
        paths: list[str] = []
        errors: list[str] = []
        tools: list[str] = []
        seen: set[str] = set()
        for message in request.span:
            for block in message.content:
                if isinstance(block, TextContentBlock):
                    if message.role is Role.USER and not message.synthetic:
                        asks.append(block.text.strip())
                    for sentence in _sentences(block.text):
                        if _DECISION.search(sentence):
                            _add(decisions, seen, sentence)
                        elif sentence.endswith("?") or _NOT_A_STATEMENT.match(sentence):
                            continue
                        elif _FACT.search(sentence) or _SPECIFIC.search(sentence):
                            _add(facts, seen, sentence)
                        elif _ERROR.search(sentence):
                            _add(errors, seen, sentence)
                    body = block.text
                elif isinstance(block, ToolUseContentBlock):
                    args = ", ".join(f"{k}={v}" for k, v in sorted(block.input.items()))
                    _add(tools, seen, f"{block.name}({args})", 160)
                    body = " ".join(str(v) for v in block.input.values())
                else:
                    assert isinstance(block, ToolResultContentBlock)
                    for line in block.content.splitlines():
                        if _ERROR.search(line):
                            _add(errors, seen, line.strip())
                    body = block.content
                for path in _PATH.findall(body):
                    _add(paths, seen, path)
        sections = [
            ("Last user request", asks[-1:]),
            ("Earlier user requests", asks[-4:-1]),
            ("Decisions", decisions),
            ("Facts that may warrant memory_add", facts),
            ("Files and paths", paths),
            ("Errors and failures", errors),
            ("Tool calls", tools[-20:]),
        ]
        if request.instructions:
            sections.insert(0, ("Kept at the user's request", [request.instructions.strip()]))
        return _render(sections, budget_chars=request.max_tokens * 3, span_size=len(request.span))


def _render(sections: list[tuple[str, list[str]]], *, budget_chars: int, span_size: int) -> str:
    """Sections in priority order; lines past the output budget are counted, not silently lost."""
    out: list[str] = [f"Summary of {span_size} earlier messages (extractive, offline)."]
    used = len(out[0])
    for title, lines in sections:
        if not lines:
            continue
        header = f"\n{title}:"
        if used + len(header) > budget_chars:
            break
        out.append(header)
        used += len(header)
        for index, line in enumerate(lines):
            entry = f"- {line}"
            if used + len(entry) + 1 > budget_chars:
                out.append(f"- (+{len(lines) - index} more not kept)")
                break
            out.append(entry)
            used += len(entry) + 1
    return "\n".join(out)
