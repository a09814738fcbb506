"""Summaries that keep the work: facts and artifacts kept with and without the work ledger.

Each scripted session of a set (A, D, F, H, J, K and M: tuned on; B, C, E, G, I and L: held out) is
summarized whole at the spec's default budget (compaction_max_summary_tokens, 2,000), by:

- `local:extractive`, the offline summarizer;
- a lossy model through the real `anthropic` SDK against the local Messages API server
  (tests/messages_api_server.py): one that answers with the first sentence of each message, as
  long as its budget allows (fluent, specific-free prose), and one that answers with a generic
  paraphrase of a coding session.

"with ledger" runs the engine's ledger step exactly as engine.compaction.summary_call does: the
summarizer is asked for the budget less engine.ledger.ledger_reserve, and apply_ledger adds what
its prose left out. Facts are the sets' planted needles; artifacts are read from the session by
this file's own rules (not the ledger's): each distinct command a tool call ran (its first line),
each distinct error line a command's output showed (digits aside; the latest instance) and each
path a call read, wrote or edited. An artifact is kept when its text appears in the summary.

    python tests/perf/quality/ledger_bench.py [--json] [--sets ACE] [--max-tokens 2000]
    python tests/perf/quality/ledger_bench.py --joined --sets ADFH  # each set as one long span
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from engine.ledger import apply_ledger, ledger_reserve
from engine.messages import Message, TextContentBlock, ToolResultContentBlock, ToolUseContentBlock
from engine.policy.splice import summary_text
from engine.prompt import COMPACTION_SUMMARY_PROMPT_VERSION
from engine.summarizers.anthropic_summarizer import AnthropicSummarizer
from engine.summarizers.base import SummaryRequest
from engine.summarizers.extractive import ExtractiveSummarizer
from engine.tokens import estimate_text_tokens
from tests.messages_api_server import MessagesAPIServer, realistic
from tests.perf._util import table
from tests.perf.paid_summary import LOCAL_KEY, MODEL, span_of
from tests.perf.quality.bench import SETS, kept
from tests.perf.quality.script import KINDS, Session

MAX_TOKENS = 2_000
ARTIFACT_KINDS = ("command", "error", "path")

Summarize = Callable[[tuple[Message, ...], int], Awaitable[str]]

# -- artifacts, by this bench's own rules ------------------------------------------------------

_ERROR = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b|\bERROR\b|\bFAILED\b|\bFAILURE\b|\berror:|\bfailed\b|^Killed$"
)
_ZERO = re.compile(r"\b0 (?:failed|errors?)\b")
_PATCH_PATH = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)


def _squash(text: str) -> str:
    return " ".join(text.split())


def _command(inputs: dict[str, Any]) -> str | None:
    value = inputs.get("command", inputs.get("cmd"))
    if isinstance(value, list) and value:
        value = value[-1] if len(value) >= 3 and value[-2] in ("-c", "-lc") else " ".join(value)
    return value if isinstance(value, str) else None


def _output(content: str) -> str:
    if content.lstrip().startswith("{"):
        try:
            decoded = json.loads(content)
        except ValueError:
            return content
        if isinstance(decoded, dict) and isinstance(decoded.get("output"), str):
            return decoded["output"]
    return content.split("\nOutput:\n", 1)[-1]


def artifacts(span: tuple[Message, ...]) -> dict[str, dict[str, str]]:
    """kind -> identity -> the text that must appear in a summary."""
    found: dict[str, dict[str, str]] = {kind: {} for kind in ARTIFACT_KINDS}
    results = {
        b.tool_use_id: b for m in span for b in m.content if isinstance(b, ToolResultContentBlock)
    }
    for message in span:
        for block in message.content:
            if not isinstance(block, ToolUseContentBlock):
                continue
            inputs = block.input
            patch = inputs.get("input") if block.name == "apply_patch" else None
            for path in _PATCH_PATH.findall(patch) if isinstance(patch, str) else []:
                found["path"][path.strip()] = path.strip()
            path = inputs.get("file_path", inputs.get("path"))
            if isinstance(path, str):
                found["path"][path] = path
            command = _command(inputs)
            if command is None:
                continue
            first = _squash(command.strip().split("\n", 1)[0])[:60]
            found["command"][first] = first
            result = results.get(block.id)
            for line in _output(result.content).splitlines() if result else []:
                line = _squash(line)
                if _ERROR.search(line) and not _ZERO.search(line):
                    identity = re.sub(r"\d+", "#", line.lower())
                    found["error"].pop(identity, None)
                    found["error"][identity] = line[:80]
    return found


# -- summarizers -------------------------------------------------------------------------------


def _first_sentences(body: dict[str, Any]) -> str:
    """A fluent, lossy model: the first sentence of each message, while the budget lasts."""
    budget = int(body.get("max_tokens", MAX_TOKENS)) * 3
    lines: list[str] = []
    for message in span_of(body):
        text = " ".join(b.text for b in message.content if isinstance(b, TextContentBlock))
        first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
        if first and len("\n".join([*lines, first])) <= budget:
            lines.append(first)
    return "\n".join(lines) or "The session continued."


_GENERIC = (
    "Goal: the user asked the agent to fix a problem in their project and ship the change. "
    "The agent inspected the relevant configuration and code, ran the project's commands and "
    "tests, found the cause of the failure and changed the affected files. Some errors came up "
    "along the way and were addressed. The user set a few constraints about what not to touch. "
    "Open work: finish the remaining follow-up steps and confirm everything still passes."
)


def _paraphrase(body: dict[str, Any]) -> str:
    return _GENERIC


def _server_summarizer(server: MessagesAPIServer) -> Summarize:
    summarizer = AnthropicSummarizer(
        MODEL, api_key=LOCAL_KEY, base_url=server.base_url, max_retries=0
    )

    async def summarize(span: tuple[Message, ...], max_tokens: int) -> str:
        request = SummaryRequest(span, COMPACTION_SUMMARY_PROMPT_VERSION, max_tokens)
        return (await summarizer.summarize(request)).text

    return summarize


async def _offline(span: tuple[Message, ...], max_tokens: int) -> str:
    request = SummaryRequest(span, COMPACTION_SUMMARY_PROMPT_VERSION, max_tokens)
    return ExtractiveSummarizer().summarize_now(request)


def _count(text: str) -> int:
    """Tokens of the summary as the message it becomes, as summary_call counts it."""
    return estimate_text_tokens(summary_text(MODEL, 0, text))


async def _summary(fn: Summarize, span: tuple[Message, ...], max_tokens: int, ledger: bool) -> str:
    if not ledger:
        return await fn(span, max_tokens)
    prose = await fn(span, max_tokens - ledger_reserve(span, max_tokens, _count))
    return apply_ledger(prose, span, None, max_tokens, _count).text


# -- scoring -----------------------------------------------------------------------------------


def joined(sessions: Sequence[Session], name: str) -> Session:
    """Every session of a set as one long span with all their facts: a span the size of a long
    working day, where the budget binds and lines compete across topics."""
    steps = [step for session in sessions for step in session.steps]
    return Session(name, steps, [fact for session in sessions for fact in session.facts])


async def _score(
    fn: Summarize, set_name: str, max_tokens: int, ledger: bool, *, join: bool = False
) -> dict[str, Any]:
    facts = {kind: [0, 0] for kind in KINDS}
    arts = {kind: [0, 0] for kind in ARTIFACT_KINDS}
    sizes: list[int] = []
    worst = 1.0
    for session in [joined(SETS[set_name], set_name)] if join else SETS[set_name]:
        span = session.build()
        text = await _summary(fn, span, max_tokens, ledger)
        sizes.append(_count(text))
        for fact in session.facts:
            facts[fact.kind][1] += 1
            facts[fact.kind][0] += kept(text, fact.needles)
        got = total = 0
        for kind, items in artifacts(span).items():
            for needle in items.values():
                hit = _squash(needle).lower() in _squash(text).lower()
                arts[kind][0] += hit
                arts[kind][1] += 1
                got, total = got + hit, total + 1
        worst = min(worst, got / total if total else 1.0)
    fact_kept, fact_total = (sum(v[i] for v in facts.values()) for i in (0, 1))
    art_kept, art_total = (sum(v[i] for v in arts.values()) for i in (0, 1))
    return {
        "facts": round(fact_kept / fact_total, 3),
        "facts_kept": f"{fact_kept}/{fact_total}",
        "facts_by_kind": {k: f"{a}/{n}" for k, (a, n) in facts.items() if n},
        "artifacts": round(art_kept / art_total, 3) if art_total else None,
        "artifacts_kept": f"{art_kept}/{art_total}",
        "artifacts_by_kind": {k: f"{a}/{n}" for k, (a, n) in arts.items()},
        "artifacts_worst_session": round(worst, 3),
        "summary_tokens_max": max(sizes),
        "over_budget": sum(size > max_tokens for size in sizes),
    }


def run(sets: Sequence[str], max_tokens: int, *, join: bool = False) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        with (
            MessagesAPIServer(default=realistic(), responder=_first_sentences) as lossy,
            MessagesAPIServer(default=realistic(), responder=_paraphrase) as generic,
        ):
            methods: dict[str, Summarize] = {
                "local:extractive": _offline,
                "first sentences (SDK)": _server_summarizer(lossy),
                "generic paraphrase (SDK)": _server_summarizer(generic),
            }
            for name, fn in methods.items():
                for ledger in (False, True):
                    label = f"{name} {'+ ledger' if ledger else 'alone'}"
                    out[label] = {
                        s: await _score(fn, s, max_tokens, ledger, join=join) for s in sets
                    }
        return out

    return asyncio.run(main())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--sets", default="ACE", help="which sets (any of ABCDEFGHIJKLM)")
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS)
    parser.add_argument("--joined", action="store_true", help="each set's sessions as one span")
    args = parser.parse_args(argv)
    sets = [s for s in args.sets.upper() if s in SETS]
    results = run(sets, args.max_tokens, join=args.joined)
    if args.json:
        print(json.dumps({"max_tokens": args.max_tokens, "results": results}, indent=2))
        return 0
    headers = [
        "summarizer",
        "set",
        "facts",
        "facts by kind",
        "artifacts",
        "by kind",
        "worst",
        "max tok",
    ]
    rows = [
        [
            label, s, f"{f['facts']:.2f} ({f['facts_kept']})",
            " ".join(f"{k[:5]} {v}" for k, v in f["facts_by_kind"].items()),
            f"{f['artifacts']:.2f} ({f['artifacts_kept']})",
            " ".join(f"{k} {v}" for k, v in f["artifacts_by_kind"].items()),
            f["artifacts_worst_session"],
            f"{f['summary_tokens_max']}{'!' if f['over_budget'] else ''}",
        ]
        for label, by_set in results.items()
        for s, f in by_set.items()
    ]  # fmt: skip
    print(f"Budget {args.max_tokens} tokens per summary (the spec default).\n")
    print(table(headers, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
