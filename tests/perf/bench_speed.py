"""Speed figures, each a ratio measured side by side in one run:

- planning a turn (engine.plan_turn over a History) on 1,000 / 10,000 / 100,000-message histories
  against langchain_core.messages.trim_messages on the same history and token budget;
- incremental planning after one new message (History.append + plan_turn) against planning from
  scratch (History built from the list, then plan_turn);
- the cache key (engine.compute_cache_key) against a bare sha256 of its canonical bytes;
- a cache hit against a miss served by the local Messages-API test server (127.0.0.1 only);
- LRU eviction (CompactionCache.put past max_rows) at 1,000 and 100,000 rows.

    python tests/perf/bench_speed.py            # full (about a minute)
    python tests/perf/bench_speed.py --quick    # smaller sizes, shorter timings (seconds)

langchain-core comes with the `bench` extra: pip install -e '.[bench]'.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib.metadata
import math
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
from _util import fmt_seconds, side_by_side, table

from engine import (
    CompactionCache,
    CompactionConfig,
    History,
    Message,
    SessionManager,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
    canonical_bytes,
    compute_cache_key,
    plan_span,
    plan_turn,
)
from engine.cache import INDEX_DDL, SQL_PUT, TABLE_DDL, CacheRow
from engine.layout import cache_path
from metis_compaction_tui.demo.workload import scripted_session

ROOT = Path(__file__).resolve().parents[2]
MODEL = "claude-haiku-4-5"
CONFIG = CompactionConfig(compaction_model=f"anthropic:{MODEL}")  # the §11 defaults
BUDGET = CONFIG.compaction_threshold_tokens  # trim_messages gets the same token budget
KEY_ARGS: dict[str, Any] = dict(
    summarization_model=CONFIG.compaction_model,
    summarization_prompt_version=CONFIG.compaction_summary_prompt_version,
    summarization_max_tokens=CONFIG.compaction_max_summary_tokens,
)


class Row(msgspec.Struct, frozen=True):
    benchmark: str
    size: str
    ours: float  # seconds per operation
    other: float | None  # the peer or baseline, seconds per operation (None: not measured)
    other_name: str
    target: str = "—"
    status: str = "—"
    reason: str = ""  # why a target was missed

    def cells(self) -> list[str]:
        ratio = "—"
        if self.other is not None and self.ours > 0:
            if self.other >= self.ours:
                ratio = f"{_times(self.other / self.ours)} faster"
            else:
                ratio = f"{_times(self.ours / self.other)} the time"
        other = f"{fmt_seconds(self.other)} ({self.other_name})" if self.other else self.other_name
        return [
            self.benchmark,
            self.size,
            fmt_seconds(self.ours),
            other,
            ratio,
            self.target,
            self.status,
        ]


def _times(ratio: float) -> str:
    return f"{ratio:,.0f}x" if ratio >= 100 else f"{ratio:.1f}x"


# -- inputs ---------------------------------------------------------------------------------------


def workload_messages(count: int, seed: int = 0) -> list[Message]:
    """`count` messages of the scripted session (turns continue past the 60 of §10)."""
    messages: list[Message] = []
    for turn in scripted_session(seed, turns=count // 3 + 10):
        messages.extend(turn)
        if len(messages) >= count:
            break
    return messages[:count]


def to_langchain(messages: Sequence[Message]) -> list[Any]:
    """The same history as LangChain messages: a tool_result becomes a ToolMessage each."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    out: list[Any] = []
    for m in messages:
        texts = [b.text for b in m.content if isinstance(b, TextContentBlock)]
        if m.role.value == "assistant":
            calls = [
                {"name": b.name, "args": dict(b.input), "id": b.id, "type": "tool_call"}
                for b in m.content
                if isinstance(b, ToolUseContentBlock)
            ]
            out.append(AIMessage(content="\n".join(texts), tool_calls=calls))
            continue
        results = [b for b in m.content if isinstance(b, ToolResultContentBlock)]
        out.extend(ToolMessage(content=b.content, tool_call_id=b.tool_use_id) for b in results)
        if texts:
            out.append(HumanMessage(content="\n".join(texts)))
    return out


def langchain_counter() -> Callable[[list[Any]], int]:
    """The engine's estimator (len(text) / 3 per message, tool calls as name + JSON), over the
    LangChain messages: both sides count the same tokens."""
    encode = msgspec.json.encode

    def count(messages: list[Any]) -> int:
        total = 0
        for m in messages:
            parts = [m.content]
            for call in getattr(m, "tool_calls", ()):
                parts += [call["name"], encode(call["args"]).decode()]
            total += math.ceil(len("\n".join(parts)) / 3)
        return total

    return count


# -- timing helpers -------------------------------------------------------------------------------


def per_op(samples: list[float]) -> float:
    """The median of single-operation timings: robust to the odd GC pause or context switch."""
    return statistics.median(samples)


async def async_samples(
    op: Callable[[], Awaitable[object]], reset: Callable[[], object], count: int
) -> list[float]:
    samples = []
    for _ in range(count):
        reset()
        started = time.perf_counter()
        await op()
        samples.append(time.perf_counter() - started)
    return samples


# -- the benchmarks -------------------------------------------------------------------------------


def bench_planning(sizes: Sequence[int], min_time: float, repeat: int) -> list[Row]:
    try:
        from langchain_core.messages import trim_messages

        peer = f"langchain-core {importlib.metadata.version('langchain-core')}"
    except ImportError:
        trim_messages, peer = None, "langchain-core not installed: column skipped"
    everything = workload_messages(max(sizes))
    rows: list[Row] = []
    count = langchain_counter()
    spent = Decimal(0)
    for n in sizes:
        messages = everything[:n]
        history = History(messages)
        fns: list[Callable[[], object]] = [
            lambda h=history: plan_turn(h, CONFIG, spent),
            lambda m=messages: plan_turn(History(m), CONFIG, spent),
        ]
        if trim_messages is not None:
            lc = to_langchain(messages)

            def trim(lc: list[Any] = lc) -> object:
                return trim_messages(
                    lc, max_tokens=BUDGET, token_counter=count, strategy="last", start_on="human"
                )

            fns.append(trim)
        times = side_by_side(fns, min_time=min_time, repeat=repeat)
        plan, scratch = times[0], times[1]
        trim_time = times[2] if trim_messages is not None else None
        size = f"{n:,} msgs"
        target = status = "—"
        if n == 100_000:
            target = "≥ 10x faster"
            if trim_time is None:
                status = "not measured"
            else:
                status = "MET" if trim_time / plan >= 10 else "MISSED"
        rows.append(
            Row(
                "plan a turn (ledger kept) vs trim_messages",
                size,
                plan,
                trim_time,
                "trim_messages" if trim_time else peer,
                target,
                status,
            )
        )
        rows.append(
            Row(
                "plan from scratch (History built) vs trim_messages",
                size,
                scratch,
                trim_time,
                "trim_messages" if trim_time else peer,
            )
        )
        inc = incremental_samples(history, everything, n)
        ok = inc < 1e-3
        rows.append(
            Row(
                "incremental: append 1 msg + plan vs from scratch",
                size,
                inc,
                scratch,
                "from scratch",
                "< 1 ms",
                "MET" if ok else "MISSED",
            )
        )
    return rows


def incremental_samples(history: History, pool: list[Message], n: int) -> float:
    """Append one message and plan, timed one at a time; the message is taken out again after
    each sample (untimed), so the history stays at n messages."""
    samples = []
    extra = pool[n % len(pool)] if n < len(pool) else pool[0]
    for _ in range(2_000):
        started = time.perf_counter()
        history.append(extra)
        plan_turn(history, CONFIG, Decimal(0))
        samples.append(time.perf_counter() - started)
        history.replace(len(history) - 1, len(history), [], [])
    assert len(history) == n
    return per_op(samples)


def bench_cache_key(min_time: float, repeat: int, big: int) -> list[Row]:
    rows = []
    history = History(workload_messages(big))
    first = first_span(min(len(history), 400))
    for label, span in (
        (f"§7 span ({len(first)} msgs, ~30k tokens)", first),
        (f"{big:,}-msg span", history.messages),
    ):
        data = canonical_bytes(span, **KEY_ARGS)
        # As a session computes it: the manager's History encodes each message's canonical bytes
        # into one buffer as it is appended (eager_canonical), so even the first key over a fresh
        # span, the one a compaction waits for, is a sha256 over a slice of it. The encoding,
        # paid per append, is below.
        session = History(span, eager_canonical=True)

        def session_key(h: History = session) -> str:
            with h.canonical_view(0, len(h)) as span_bytes:
                return compute_cache_key(h.messages, **KEY_ARGS, span_bytes=span_bytes)

        key_time, sha_time, bytes_time = side_by_side(
            [
                session_key,
                lambda d=data: hashlib.sha256(d).hexdigest(),
                lambda s=span: canonical_bytes(s, **KEY_ARGS),
            ],
            min_time=min_time,
            repeat=repeat,
        )
        ratio = key_time / sha_time
        ok = ratio <= 1.5
        reason = (
            f"the key's own work costs {fmt_seconds(key_time - sha_time)} "
            f"beside sha256's {fmt_seconds(sha_time)}"
        )
        rows.append(
            Row(
                "cache key vs bare sha256 of its bytes",
                f"{label}, {len(data) / 1e3:,.0f} kB",
                key_time,
                sha_time,
                "sha256 only",
                "≤ 1.5x the time",
                "MET" if ok else "MISSED",
                "" if ok else reason,
            )
        )
        rows.append(
            Row(
                "cache key from bare messages (encodes every message)",
                f"{label}: {fmt_seconds(bytes_time / len(span))} a message, paid at append",
                bytes_time,
                sha_time,
                "sha256 only",
                "(no target: the manager pays it per append)",
                "info",
                "",
            )
        )
    return rows


def first_span(count: int) -> list[Message]:
    """The span the first compaction of the §7 scenario takes (threshold 30k, 5 kept)."""
    history = History()
    for turn in scripted_session(0, 60):
        for m in turn:
            history.append(m)
        if plan_turn(history, CONFIG, Decimal(0)).decision.fires:
            break
    span = plan_span(history, CONFIG.compaction_preserve_recent_turns)
    assert span is not None
    return history.messages[span.start : span.compaction_watermark][:count]


def bench_hit_miss(samples: int) -> list[Row]:
    """prepare() for the §7 span: a hit reads the cache; a miss (key evicted first) calls the
    local Messages-API server through the real anthropic SDK, then stores the row."""
    sys.path.insert(0, str(ROOT))
    from engine.summarizers.anthropic_summarizer import AnthropicSummarizer
    from tests.messages_api_server import MessagesAPIServer, ok

    async def run(base_url: str, workspace: Path) -> tuple[float, float]:
        history = [m for turn in scripted_session(0, 34) for m in turn]
        summarizer = AnthropicSummarizer(
            MODEL, api_key="sk-test-dummy", base_url=base_url, max_retries=0
        )
        cache = CompactionCache(cache_path(workspace))
        manager = SessionManager(
            history=history,
            compaction_model=CONFIG.compaction_model,
            summarizer=summarizer,
            cache=cache,
        )
        try:
            preview = manager.preview()
            assert preview is not None
            await manager.prepare()  # warm the SDK's connection pool
            miss = await async_samples(
                manager.prepare, lambda: cache.evict(preview.cache_key), samples
            )
            hit = await async_samples(manager.prepare, lambda: None, samples * 5)
            assert (await manager.prepare()).cache_hit
        finally:
            await manager.aclose()
            cache.close()
        return per_op(hit), per_op(miss)

    body = "Summary of the span: " + "decisions, files, errors. " * 60
    with (
        MessagesAPIServer(default=ok(body, 31_000, 450)) as server,
        tempfile.TemporaryDirectory(prefix="bench-hit-") as scratch,
    ):
        hit, miss = asyncio.run(run(server.base_url, Path(scratch)))
    return [
        Row("cache hit vs miss (local server)", "§7 span", hit, miss, "miss via 127.0.0.1 server")
    ]


def bench_eviction(sizes: Sequence[int], samples: int) -> list[Row]:
    """put() into full caches of each size, each put evicting the least recently read row; the
    sizes take turns, one put each, so the disk's moods (the commit's fsync) hit them alike."""
    with tempfile.TemporaryDirectory(prefix="bench-lru-") as scratch:
        caches = {}
        for n in sizes:
            path = Path(scratch) / f"cache-{n}.sqlite"
            fill(path, n)
            caches[n] = CompactionCache(path, max_rows=n)
            assert caches[n].count() == n
        timings: dict[int, list[float]] = {n: [] for n in sizes}
        for index in range(samples):
            for n, cache in caches.items():
                row = cache_row(f"new-{index}", 1_800_000_000_000 + index)
                started = time.perf_counter()
                evicted = cache.put(row)
                timings[n].append(time.perf_counter() - started)
                assert evicted == 1
        for cache in caches.values():
            assert cache.count() == cache.max_rows
            cache.close()
    small = min(sizes)
    rows = []
    for n in sizes:
        other = per_op(timings[small]) if n != small else None
        rows.append(
            Row(
                "LRU: put past max_rows (evicts 1)",
                f"{n:,} rows",
                per_op(timings[n]),
                other,
                f"at {small:,} rows" if other else "—",
            )
        )
    return rows


def cache_row(key: str, stamp: int) -> CacheRow:
    return CacheRow(
        cache_key=hashlib.sha256(key.encode()).hexdigest(),
        summary_text="Summary of 171 earlier messages. " * 12,
        summarization_model=CONFIG.compaction_model,
        summarization_prompt_version="1.0.0",
        span_message_count=171,
        span_token_count_in=31_319,
        span_token_count_out=2_016,
        created_at_ms=stamp,
        last_read_at_ms=stamp,
    )


def fill(path: Path, n: int) -> None:
    """Bulk-load n rows with the engine's own DDL and INSERT (put() one by one would take long)."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(TABLE_DDL)
    conn.execute(INDEX_DDL)
    stamp = 1_700_000_000_000
    with conn:
        conn.executemany(
            SQL_PUT,
            (msgspec.structs.astuple(cache_row(f"old-{i}", stamp + i)) for i in range(n)),
        )
    conn.close()


# -- main -----------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, shorter timings")
    args = parser.parse_args(argv)
    quick = args.quick
    min_time, repeat = (0.02, 2) if quick else (0.2, 5)
    plan_sizes = (1_000, 10_000) if quick else (1_000, 10_000, 100_000)
    lru_sizes = (1_000, 10_000) if quick else (1_000, 100_000)

    print("# Speed: side-by-side ratios\n")
    print(
        f"Python {platform.python_version()} on {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs; msgspec {importlib.metadata.version('msgspec')}; "
        f"{'--quick' if quick else 'full'} run. Times are per operation (best of {repeat} "
        "interleaved runs, or the median of single timings). Token budget for planning and "
        f"trim_messages: {BUDGET:,} (the §11 threshold); messages from the demo workload.\n"
    )
    started = time.perf_counter()
    rows = bench_planning(plan_sizes, min_time, repeat)
    rows += bench_cache_key(min_time, repeat, big=10_000)
    rows += bench_hit_miss(samples=10 if quick else 40)
    rows += bench_eviction(lru_sizes, samples=50 if quick else 500)
    headers = ["benchmark", "size", "ours", "compared with", "ratio", "target", "status"]
    print(table(headers, [r.cells() for r in rows]))
    missed = [r for r in rows if r.status.startswith("MISSED")]
    if missed:
        print("\nMissed targets, and why:\n")
        for r in missed:
            print(f"- {r.benchmark}, {r.size}: {r.reason or 'see the figures above'}.")
    print(f"\nTook {time.perf_counter() - started:.1f} s. ", end="")
    print("All targets met." if not missed else f"{len(missed)} target(s) missed.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
