"""Summary quality: how many planted facts survive when a whole scripted session is compacted.

Sets of scripted coding sessions: set_a.py, set_d.py, set_f.py, set_h.py, set_j.py, set_k.py
and set_m.py to tune on; set_b.py, set_c.py, set_e.py, set_g.py, set_i.py and set_l.py held out
(written and committed before they were measured; only their totals are read).
Each session is summarized whole with an output budget of MAX_TOKENS (counted with the engine's
estimator), and a fact counts as kept when all its needles appear in the summary.
Two baselines bound the figures: the first sentence of every message, and truncation (the newest
messages that fit, what §3.4's fallback keeps).

    python tests/perf/quality/bench.py            # the table: sets A and B, by kind of fact, sizes
    python tests/perf/quality/bench.py --json     # the same figures as JSON
    python tests/perf/quality/bench.py --sets ABE # other sets (any of A-M)
    python tests/perf/quality/bench.py --misses A # facts set A lost (tuning sets only)

It also times `local:extractive` on one big span (set A repeated, the default 2,000-token budget).

Other code calls `score(summarize_fn)`: summarize_fn(messages, max_tokens) -> text (or an
awaitable of it); the result is a dict of figures per set.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import re
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from engine.messages import Message, TextContentBlock, ToolResultContentBlock, ToolUseContentBlock
from engine.prompt import COMPACTION_SUMMARY_PROMPT_VERSION
from engine.summarizers.base import Summarizer, SummaryRequest
from engine.summarizers.extractive import ExtractiveSummarizer
from engine.tokens import estimate_text_tokens
from tests.perf._util import table
from tests.perf.quality import (
    set_a,
    set_b,
    set_c,
    set_d,
    set_e,
    set_f,
    set_g,
    set_h,
    set_i,
    set_j,
    set_k,
    set_l,
    set_m,
)
from tests.perf.quality.script import KINDS, Session

MAX_TOKENS = 300
SETS: dict[str, list[Session]] = {
    "A": set_a.SESSIONS,
    "B": set_b.SESSIONS,
    "C": set_c.SESSIONS,
    "D": set_d.SESSIONS,
    "E": set_e.SESSIONS,
    "F": set_f.SESSIONS,
    "G": set_g.SESSIONS,
    "H": set_h.SESSIONS,
    "I": set_i.SESSIONS,
    "J": set_j.SESSIONS,
    "K": set_k.SESSIONS,
    "L": set_l.SESSIONS,
    "M": set_m.SESSIONS,
}
# Held out: only their totals are reported, never which facts they lost.
HELD_OUT = frozenset("BCEGIL")

SummarizeFn = Callable[[tuple[Message, ...], int], "str | Awaitable[str]"]


def kept(text: str, needles: Sequence[str]) -> bool:
    lowered = text.lower()
    return all(needle.lower() in lowered for needle in needles)


def score(
    summarize_fn: SummarizeFn, *, sets: Sequence[str] = ("A", "B"), max_tokens: int = MAX_TOKENS
) -> dict[str, dict[str, object]]:
    """Per set: facts kept / total, rate, by kind, summary sizes, over-budget count, per session."""
    return asyncio.run(_score(summarize_fn, sets, max_tokens))


async def _score(
    summarize_fn: SummarizeFn, sets: Sequence[str], max_tokens: int
) -> dict[str, dict[str, object]]:
    figures: dict[str, dict[str, object]] = {}
    for set_name in sets:
        by_kind = {kind: [0, 0] for kind in KINDS}
        sizes: list[int] = []
        input_sizes: list[int] = []
        sessions: list[dict[str, object]] = []
        for session in SETS[set_name]:
            messages = session.build()
            text = summarize_fn(messages, max_tokens)
            if inspect.isawaitable(text):
                text = await text
            assert isinstance(text, str)
            sizes.append(estimate_text_tokens(text))
            input_sizes.append(sum(estimate_text_tokens(m.text()) for m in messages))
            missed: list[str] = []
            for fact in session.facts:
                by_kind[fact.kind][1] += 1
                if kept(text, fact.needles):
                    by_kind[fact.kind][0] += 1
                else:
                    missed.append(f"{fact.kind}: {fact.note} {fact.needles}")
            sessions.append({"name": session.name, "facts": len(session.facts), "missed": missed})
        kept_total = sum(k for k, _ in by_kind.values())
        total = sum(n for _, n in by_kind.values())
        figures[set_name] = {
            "kept": kept_total,
            "facts": total,
            "rate": round(kept_total / total, 3),
            "by_kind": {kind: {"kept": k, "facts": n} for kind, (k, n) in by_kind.items()},
            "summary_tokens_mean": round(sum(sizes) / len(sizes)),
            "summary_tokens_max": max(sizes),
            "over_budget": sum(size > max_tokens for size in sizes),
            "session_tokens_mean": round(sum(input_sizes) / len(input_sizes)),
            "sessions": sessions,
        }
    return figures


def summarizer_fn(summarizer: Summarizer) -> SummarizeFn:
    """Any Summarizer object as a summarize_fn."""

    async def summarize(messages: tuple[Message, ...], max_tokens: int) -> str:
        request = SummaryRequest(
            span=messages, prompt_version=COMPACTION_SUMMARY_PROMPT_VERSION, max_tokens=max_tokens
        )
        return (await summarizer.summarize(request)).text

    return summarize


# -- baselines ---------------------------------------------------------------------------------


def _block_texts(message: Message) -> list[str]:
    texts: list[str] = []
    for block in message.content:
        if isinstance(block, TextContentBlock):
            texts.append(block.text)
        elif isinstance(block, ToolUseContentBlock):
            texts.append(f"{block.name} {json.dumps(block.input)}")
        elif isinstance(block, ToolResultContentBlock):
            texts.append(block.content)
    return texts


def _fit(lines: list[str], max_tokens: int) -> str:
    out: list[str] = []
    for line in lines:
        if estimate_text_tokens("\n".join([*out, line])) > max_tokens:
            break
        out.append(line)
    return "\n".join(out)


def first_sentence(messages: tuple[Message, ...], max_tokens: int) -> str:
    """The first sentence (or line) of every block, oldest first, while it fits."""
    lines = [
        re.split(r"(?<=[.!?])\s|\n", text.strip(), maxsplit=1)[0]
        for message in messages
        for text in _block_texts(message)
        if text.strip()
    ]
    return _fit(lines, max_tokens)


def truncation(messages: tuple[Message, ...], max_tokens: int) -> str:
    """The newest lines that fit: what dropping the oldest messages leaves."""
    lines = [line for m in messages for text in _block_texts(m) for line in text.splitlines()]
    return "\n".join(reversed(_fit(list(reversed(lines)), max_tokens).splitlines()))


def speed(repeats: int = 15, max_tokens: int = 2_000, runs: int = 3) -> dict[str, float]:
    """Milliseconds per `local:extractive` summary of one big span (set A, `repeats` times)."""
    span = tuple(m for _ in range(repeats) for session in set_a.SESSIONS for m in session.build())
    request = SummaryRequest(
        span=span, prompt_version=COMPACTION_SUMMARY_PROMPT_VERSION, max_tokens=max_tokens
    )
    summarizer = ExtractiveSummarizer()
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        summarizer.summarize_now(request)
        timings.append(time.perf_counter() - started)
    best = min(timings)
    span_tokens = sum(estimate_text_tokens(m.text()) for m in span)
    return {
        "span_messages": len(span),
        "span_tokens": span_tokens,
        "max_tokens": max_tokens,
        "ms_per_summary": round(best * 1000, 1),
        "span_tokens_per_ms": round(span_tokens / (best * 1000)),
    }


def methods() -> dict[str, SummarizeFn]:
    return {
        "local:extractive": summarizer_fn(ExtractiveSummarizer()),
        "first sentence": first_sentence,
        "truncation": truncation,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="figures as JSON")
    parser.add_argument("--sets", default="AB", help="which sets (any of ABCDEFGHIJKLM)")
    parser.add_argument("--misses", metavar="SET", help="list the facts lost on a tuning set")
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS)
    args = parser.parse_args(argv)
    if args.misses and args.misses.upper() in HELD_OUT:
        parser.error(f"set {args.misses.upper()} is held out: only its totals are reported")
    sets = [s for s in args.sets.upper() if s in SETS]
    results = {
        name: score(fn, sets=sets, max_tokens=args.max_tokens) for name, fn in methods().items()
    }
    if args.json:
        for by_set in results.values():
            for figures in by_set.values():
                figures.pop("sessions")
        figures_out = {"max_tokens": args.max_tokens, "results": results, "speed": speed()}
        print(json.dumps(figures_out, indent=2))
        return 0
    if args.misses:
        for session in results["local:extractive"][args.misses.upper()]["sessions"]:
            for miss in session["missed"]:  # type: ignore[union-attr]
                print(f"{session['name']}: {miss}")
        return 0
    headers = ["method", "set", "kept", *KINDS, "summary tokens (mean/max)", "over budget"]
    rows = []
    for name, by_set in results.items():
        for set_name, f in by_set.items():
            kinds = f["by_kind"]
            rows.append(
                [
                    name,
                    set_name,
                    f"{f['rate']:.2f} ({f['kept']}/{f['facts']})",
                    *(f"{kinds[k]['kept']}/{kinds[k]['facts']}" for k in KINDS),  # type: ignore[index]
                    f"{f['summary_tokens_mean']}/{f['summary_tokens_max']}",
                    f["over_budget"],
                ]
            )
    sizes = {s: results["truncation"][s]["session_tokens_mean"] for s in sets}
    print(f"Budget {args.max_tokens} tokens per summary; mean session size {sizes} tokens.\n")
    print(table(headers, rows))
    timing = speed()
    print(
        f"\nlocal:extractive on one span of {timing['span_messages']} messages, "
        f"{timing['span_tokens']:,} tokens (max_tokens {timing['max_tokens']}): "
        f"{timing['ms_per_summary']} ms per summary, "
        f"{timing['span_tokens_per_ms']:,} span tokens/ms."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
