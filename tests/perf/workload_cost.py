"""The §7 cost curve and the §10 quality check, measured on the scripted workload.

Replays the demo workload (scripted_session) through a real SessionManager twice: compaction on (the
spec's defaults; local:extractive, and anthropic:claude-haiku-4-5 too when ANTHROPIC_API_KEY is
set) and compaction off (a threshold it never reaches). Each turn is billed as the §7 table bills
it, one request per turn at claude-haiku-4-5 rates (engine/summarizers/pricing.py), or at the
rates `--price` states or `--price-model` names (_pricing.py):

- the stable prefix (tools + system, a constant 3,000 tokens) at the cache-read rate;
- the transcript up to the rolling breakpoint at the cache-read rate when it is exactly what the
  previous request sent, at the cache-write rate when a compaction changed it;
- the turn's new messages at the full input rate;
- plus what the compaction calls cost, and how many were made.

After each compaction the planted facts that fell inside the span are asked for: a fact is
recovered when all its answer keywords appear (case-insensitive) in the summary plus the tail.
A rerun over the same workspace must serve every compaction from the cache.

Then the strategy matrix (strategy_cost.py): every compaction strategy on every workload shape with
a paid summarizer (the real SDK against a local server that bills like the API), against the same
workload uncompacted: break-even, billed input at turns 40/100/200, total cost, compactions, fact
recovery on the held-out quality set; and billed input against its floor through the compaction
cycle (its spread over the turns after the first compaction, turn 40 at lower thresholds).

    python tests/perf/workload_cost.py            # full: 200 turns, sweep, SVG chart, matrix
    python tests/perf/workload_cost.py --quick    # 40 turns, no sweep, matrix on one shape
    python tests/perf/workload_cost.py --json     # the matrix only, as one JSON object
    python tests/perf/workload_cost.py --price 0.8,4          # at your prices (USD per Mtok)
    python tests/perf/workload_cost.py --price-model claude-sonnet-4-5   # at a listed model's
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable
from decimal import Decimal
from html import escape
from pathlib import Path
from typing import Literal

import _pricing
import msgspec
import strategy_cost
from _pricing import Pricing, rate
from _util import fmt_usd, table

from engine import Message, SessionManager, Summarizer, SummaryRequest, SummaryResult
from engine.summarizers import make_summarizer
from engine.summarizers.anthropic_summarizer import PROMPT_OVERHEAD_TOKENS
from engine.summarizers.pricing import CallUsage, ModelPrice, cost_of
from metis_compaction_tui.demo.workload import PlantedFact, planted_facts, scripted_session
from metis_compaction_tui.demo.workload_shapes import SHAPES

ROOT = Path(__file__).resolve().parents[2]
PRICING = _pricing.DEFAULT  # claude-haiku-4-5 from the price table, as in §7
PRICE = PRICING.price  # the session's own model rates
PREFIX_TOKENS = 3_000  # §7: the stable prefix (tools + system), cache-warm on every turn
HAIKU = "anthropic:claude-haiku-4-5"
OFFLINE = "local:extractive"
NEVER = 10**15  # a threshold the workload never reaches: compaction disabled
TURN_40 = 40
RECOVERY_TARGET = 0.9
# Lower thresholds turn 40 is also replayed at (knob_sweep.py's grid): where turn 40 falls in the
# compaction cycle moves with the threshold; the spec's default (§12) stays the run's own.
TURN_40_THRESHOLDS = (20_000, 12_000, 8_000)
Rate = Literal["none", "read", "write"]


class TurnCost(msgspec.Struct, frozen=True):
    turn: int
    prefix_tokens: int
    transcript_tokens: int
    transcript_rate: Rate  # how the transcript up to the rolling breakpoint was billed
    new_tokens: int
    input_usd: Decimal
    compaction_usd: Decimal
    llm_calls: int
    compacted: bool

    @property
    def billed_tokens(self) -> int:
        return self.prefix_tokens + self.transcript_tokens + self.new_tokens

    @property
    def total_usd(self) -> Decimal:
        return self.input_usd + self.compaction_usd


class CompactionResult(msgspec.Struct, frozen=True):
    turn: int
    kind: str  # "summary" or "mask" (engine.policy.strategies)
    span_messages: int
    span_tokens: int
    summary_tokens: int
    cache_hit: bool
    cost_usd: Decimal
    transcript_before: int
    transcript_after: int
    asked: tuple[str, ...]  # fact ids inside the span
    recovered: tuple[str, ...]
    usage: CallUsage | None = None  # the call's usage as the provider reported it


class Run(msgspec.Struct, frozen=True):
    model: str
    strategy: str
    shape: str
    compaction: bool
    threshold: int
    turns: list[TurnCost]
    compactions: list[CompactionResult]
    seed: int
    start_counts: list[int]  # messages in the history at the start of each turn
    final_messages: list[Message]  # the active history after the last turn
    final_tokens: list[int]  # the engine's count of each of them
    price: ModelPrice = PRICE  # the rates its turns were billed at

    @property
    def calls(self) -> int:
        return sum(t.llm_calls for t in self.turns)

    @property
    def spend(self) -> Decimal:
        return sum((t.compaction_usd for t in self.turns), Decimal(0))

    @property
    def total(self) -> Decimal:
        return sum((t.total_usd for t in self.turns), Decimal(0))


class CountingSummarizer:
    """Counts the summarizer calls the manager makes (a cache hit makes none)."""

    def __init__(self, inner: Summarizer) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        return await self.inner.summarize(request)

    def estimate_cost(self, tokens_in: int, max_tokens: int) -> Decimal:
        return self.inner.estimate_cost(tokens_in, max_tokens)

    def __getattr__(self, name: str) -> object:
        # What else the inner one offers (call_price, request_variant): the engine asks for it.
        return getattr(self.inner, name)

    async def aclose(self) -> None:
        await self.inner.aclose()


def recovered(fact: PlantedFact, text: str) -> bool:
    lowered = text.lower()
    return all(keyword.lower() in lowered for keyword in fact.answer_keywords)


def text_of(messages: list[Message]) -> str:
    return "\n".join(m.text() for m in messages)


def bill(transcript: int, rate: Rate, new: int, price: ModelPrice = PRICE) -> Decimal:
    write = transcript if rate == "write" else 0
    read = PREFIX_TOKENS + (transcript if rate == "read" else 0)
    return cost_of(price, new, 0, cache_write_tokens=write, cache_read_tokens=read)


async def run_session(
    model: str,
    workspace: Path | None,
    *,
    seed: int,
    turns: int,
    threshold: int | None,
    strategy: str = "summarize",
    shape: str = "mixed",
    summarizer: Summarizer | None = None,
    after_turn: Callable[[list[Message]], None] | None = None,
    summary_tokens: int = 2_000,
    payback_turns: int = 3,
    preserve: int = 5,
    pricing: Pricing = PRICING,
) -> Run:
    """One replay. `threshold` None: compaction disabled. `summarizer`: instead of the one
    `model` names. `after_turn(history)`: called with the history at the end of each turn (the
    paid runs keep the local server's prompt cache where the session's primary calls left it).
    `pricing`: the turns' rates, and the summarizer settings (a stated price) `model` is made
    and checked with."""
    counting = CountingSummarizer(summarizer or make_summarizer(model, pricing.settings))
    summarizer = counting
    on = threshold is not None
    manager = SessionManager(
        session_id=f"workload-{seed}",
        compaction_model=model,
        summarizer=summarizer,
        workspace=workspace if on else None,
        compaction_threshold_tokens=threshold if on else NEVER,
        compaction_hard_cap_tokens=max(80_000, threshold + 1) if on else NEVER + 1,
        compaction_strategy=strategy,
        compaction_max_summary_tokens=summary_tokens,
        compaction_summary_payback_turns=payback_turns,
        compaction_preserve_recent_turns=preserve,
        summarizer_settings=pricing.settings,
    )
    facts = planted_facts(seed, turns)
    costs: list[TurnCost] = []
    compactions: list[CompactionResult] = []
    start_counts: list[int] = []
    sent: tuple[str, ...] = ()  # message ids of the previous request: what the cache holds
    try:
        for number, new_messages in enumerate(scripted_session(seed, turns, shape), start=1):
            before = list(manager.messages)
            calls, spent = counting.calls, manager.spent_usd
            outcome = await manager.before_turn(turn_id=f"turn-{number}")
            transcript = tuple(m.id for m in manager.messages)
            rate: Rate = "none" if not transcript else "read" if transcript == sent else "write"
            transcript_tokens = manager.history.total_tokens
            start_counts.append(len(manager.messages))
            new_tokens = sum(manager.append(m) for m in new_messages)
            sent = tuple(m.id for m in manager.messages)
            if after_turn is not None:
                after_turn(manager.messages)
            record = outcome.record if outcome.status == "compacted" else None
            costs.append(
                TurnCost(
                    turn=number,
                    prefix_tokens=PREFIX_TOKENS,
                    transcript_tokens=transcript_tokens,
                    transcript_rate=rate,
                    new_tokens=new_tokens,
                    input_usd=bill(transcript_tokens, rate, new_tokens, pricing.price),
                    compaction_usd=manager.spent_usd - spent,
                    llm_calls=counting.calls - calls,
                    compacted=record is not None,
                )
            )
            if record is None:
                continue
            span = text_of(before[record.watermark_before : record.watermark_after])
            kept = text_of(manager.messages[record.watermark_before : start_counts[-1]])
            asked = [f for f in facts if f.statement in span]
            compactions.append(
                CompactionResult(
                    turn=number,
                    kind=record.kind,
                    span_messages=record.span_message_count,
                    span_tokens=record.span_token_count_in,
                    summary_tokens=record.span_token_count_out,
                    cache_hit=record.cache_hit,
                    cost_usd=record.cost_usd,
                    transcript_before=sum(manager.history.counter(m) for m in before),
                    transcript_after=transcript_tokens,
                    asked=tuple(f.fact_id for f in asked),
                    recovered=tuple(f.fact_id for f in asked if recovered(f, kept)),
                    usage=record.usage,
                )
            )
    finally:
        await manager.aclose()
    return Run(
        model=model,
        strategy=strategy,
        shape=shape,
        compaction=on,
        threshold=threshold or NEVER,
        turns=costs,
        compactions=compactions,
        seed=seed,
        start_counts=start_counts,
        final_messages=list(manager.messages),
        final_tokens=list(manager.history.tokens),
        price=pricing.price,
    )


# -- analysis -------------------------------------------------------------------------------------


def first_compaction(run: Run) -> int | None:
    return next((c.turn for c in run.compactions), None)


def break_even(with_: Run, without: Run, spend: list[Decimal] | None = None) -> int | None:
    """The first turn from the first compaction on at which the cumulative cost with compaction
    (input + compaction spend, or `spend` per turn instead) is at most the cost without."""
    first = first_compaction(with_)
    if first is None:
        return None
    cum_with = cum_without = Decimal(0)
    for index, (a, b) in enumerate(zip(with_.turns, without.turns, strict=True)):
        cum_with += a.input_usd + (spend[index] if spend is not None else a.compaction_usd)
        cum_without += b.total_usd
        if a.turn >= first and cum_with <= cum_without:
            return a.turn
    return None


def projected_spend(run: Run) -> list[Decimal]:
    """What each turn's compaction calls would cost at the run's prices (claude-haiku-4-5's by
    default): the span plus the prompt in, the summary length measured here out. A projection,
    not a measurement."""
    misses = {c.turn: c for c in run.compactions if not c.cache_hit}
    spend = []
    for t in run.turns:
        c = misses.get(t.turn)
        tokens_in = c.span_tokens + PROMPT_OVERHEAD_TOKENS if c else 0
        spend.append(cost_of(run.price, tokens_in, c.summary_tokens) if c else Decimal(0))
    return spend


def input_ratio(with_: Run, without: Run, turns: range) -> tuple[float, float] | None:
    """Billed input with / without over `turns` (1-based): (in USD, in tokens)."""
    picked = [
        (with_.turns[t - 1], without.turns[t - 1]) for t in turns if 1 <= t <= len(with_.turns)
    ]
    if not picked:
        return None
    usd = sum(a.input_usd for a, _ in picked) / sum(b.input_usd for _, b in picked)
    tokens = sum(a.billed_tokens for a, _ in picked) / sum(b.billed_tokens for _, b in picked)
    return float(usd), tokens


def recovery(run: Run) -> tuple[int, int]:
    asked = sum(len(c.asked) for c in run.compactions)
    return sum(len(c.recovered) for c in run.compactions), asked


def baseline_recovery(with_: Run, without: Run, facts: list[PlantedFact]) -> tuple[int, int]:
    """The same questions put to the uncompacted run's history at the same turns (it never
    changes its history, so its first start_counts[turn] messages are that history)."""
    by_id = {f.fact_id: f for f in facts}
    got = asked = 0
    for c in with_.compactions:
        history = text_of(without.final_messages[: without.start_counts[c.turn - 1]])
        for fact_id in c.asked:
            asked += 1
            got += recovered(by_id[fact_id], history)
    return got, asked


def verdict(ok: bool) -> str:
    return "MET" if ok else "MISSED"


def _nth(k: int) -> str:
    if k == 0:
        return "the compaction turn itself"
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(k if k < 20 else k % 10, "th")
    return f"the {k}{suffix} post-compaction turn"


def phase_table(with_: Run, without: Run) -> str:
    first = first_compaction(with_)
    rows: list[list[object]] = []
    if first is not None:
        for name, turn, spec in (
            ("pre-compaction", first - 1, "3k read + ~30k read + ~1k full"),
            ("compaction", first, "3k read + ~5k write + ~1k full"),
            ("steady state", first + 1, "3k read + ~5k read + ~1k full"),
            (f"turn {TURN_40}", TURN_40, "—"),
        ):
            if not 1 <= turn <= len(with_.turns):
                continue
            a, b = with_.turns[turn - 1], without.turns[turn - 1]
            rows.append(
                [
                    name,
                    turn,
                    f"{a.prefix_tokens:,} read",
                    f"{a.transcript_tokens:,} {a.transcript_rate}",
                    f"{a.new_tokens:,} full",
                    f"{a.billed_tokens:,}",
                    fmt_usd(a.input_usd),
                    f"{b.billed_tokens:,} / {fmt_usd(b.input_usd)}",
                    spec,
                ]
            )
    headers = ["phase", "turn", "stable prefix", "transcript", "new turn", "billed tokens"]
    headers += ["billed input", "without compaction", "§7 expects"]
    return table(headers, rows)


def compaction_table(run: Run) -> str:
    rows = [
        [
            c.turn,
            c.span_messages,
            f"{c.span_tokens:,}",
            f"{c.summary_tokens:,}",
            f"{c.transcript_before:,} → {c.transcript_after:,}",
            "hit" if c.cache_hit else "miss",
            fmt_usd(c.cost_usd),
            f"{len(c.recovered)}/{len(c.asked)}",
            ", ".join(sorted(set(c.asked) - set(c.recovered))) or "—",
        ]
        for c in run.compactions
    ]
    headers = ["turn", "span msgs", "span tokens", "summary tokens", "history before → after"]
    headers += ["cache", "spend", "facts recovered", "facts lost"]
    return table(headers, rows)


def report(with_: Run, without: Run, rerun: Run, facts: list[PlantedFact]) -> tuple[str, bool]:
    """The tables for one model, and whether every target was met."""
    n = len(with_.turns)
    first = first_compaction(with_)
    rows: list[list[object]] = []
    checks: list[bool] = []

    even = break_even(with_, without)
    ok = first is not None and even is not None and even - first <= 2
    checks.append(ok)
    shown = f"turn {even} ({_nth(even - first)})" if first and even else "never"
    rows.append(["break-even turn", shown, "—", "≤ 2nd post-compaction turn", verdict(ok)])

    at40 = input_ratio(with_, without, range(TURN_40, TURN_40 + 1))
    if at40 is not None:
        a, b = with_.turns[TURN_40 - 1], without.turns[TURN_40 - 1]
        ok = at40[0] <= 0.25
        checks.append(ok)
        rows.append(
            [
                f"billed input at turn {TURN_40}",
                f"{fmt_usd(a.input_usd)} ({a.billed_tokens:,} tokens)",
                f"{fmt_usd(b.input_usd)} ({b.billed_tokens:,} tokens)",
                "≤ 1/4 of without",
                f"{verdict(ok)}: {at40[0]:.2f}x in USD, {at40[1]:.2f}x in tokens",
            ]
        )
    if first is not None:
        steady = input_ratio(with_, without, range(first + 1, n + 1))
        if steady is not None:
            rows.append(
                [
                    f"billed input, mean of turns {first + 1}-{n}",
                    f"{steady[0]:.2f}x in USD, {steady[1]:.2f}x in tokens",
                    "1.00x",
                    "—",
                    "—",
                ]
            )
    ratio = float(with_.total / without.total)
    rows.append(
        [
            f"total cost, {n} turns",
            fmt_usd(with_.total),
            fmt_usd(without.total),
            "—",
            f"{ratio:.2f}x",
        ]
    )
    rows.append(["compaction spend", fmt_usd(with_.spend), fmt_usd(without.spend), "—", "—"])
    rows.append(["summarizer calls", with_.calls, without.calls, "—", "—"])

    got, asked = recovery(with_)
    base_got, base_asked = baseline_recovery(with_, without, facts)
    share = got / asked if asked else 1.0
    base = base_got / base_asked if base_asked else 1.0
    relative = share / base if base else 0.0
    ok = bool(asked) and relative >= RECOVERY_TARGET
    checks.append(ok)
    rows.append(
        [
            "facts recovered after each compaction",
            f"{got}/{asked} = {share:.2f}",
            f"{base_got}/{base_asked} = {base:.2f} (by construction)",
            f"≥ {RECOVERY_TARGET} of without",
            f"{verdict(ok)}: {relative:.2f}" if asked else "MISSED: no fact was compacted",
        ]
    )
    planted = [f for f in facts if f.turn <= n]
    kept = sum(recovered(f, text_of(with_.final_messages)) for f in planted)
    rows.append(
        [
            "facts recoverable at session end",
            f"{kept}/{len(planted)}",
            f"{len(planted)}/{len(planted)} (by construction)",
            "—",
            "—",
        ]
    )
    hits = sum(c.cache_hit for c in rerun.compactions)
    ok = bool(rerun.compactions) and hits == len(rerun.compactions) and rerun.calls == 0
    ok = ok and rerun.spend == 0
    checks.append(ok)
    rows.append(
        [
            "rerun, same workspace",
            f"{hits}/{len(rerun.compactions)} cache hits, {rerun.calls} calls, "
            f"{fmt_usd(rerun.spend)} spent",
            "—",
            "all hits, 0 calls, $0",
            verdict(ok),
        ]
    )

    out = [
        f"## {with_.model}: the §7 table, measured ({n} turns, seed {with_.seed})\n",
        phase_table(with_, without),
        "\n### Compactions\n",
        compaction_table(with_),
        "\n### Results against the targets\n",
        table(["metric", "with compaction", "without", "target", "status"], rows),
        "",
    ]
    if with_.model == OFFLINE and first is not None:
        projected = projected_spend(with_)
        p_even = break_even(with_, without, projected)
        spend = sum(projected, Decimal(0))
        total = sum((t.input_usd for t in with_.turns), Decimal(0)) + spend
        when = f"at turn {p_even} ({_nth(p_even - first)})" if p_even else f"not within {n} turns"
        out.append(
            f"Projection, not measured: the same spans summarized by {with_.price.model} would "
            f"cost {fmt_usd(spend)} in compaction calls (span + {PROMPT_OVERHEAD_TOKENS}-token "
            "prompt in at the full input rate, the summary lengths above out): total "
            f"{fmt_usd(total)} vs {fmt_usd(without.total)} without; break-even {when}.\n"
        )
    return "\n".join(out), all(checks)


def sweep_table(rows: list[tuple[int, Run, Run]]) -> str:
    body = []
    for threshold, with_, without in rows:
        first = first_compaction(with_)
        even = break_even(with_, without)
        got, asked = recovery(with_)
        at40 = input_ratio(with_, without, range(TURN_40, TURN_40 + 1))
        steady = input_ratio(with_, without, range((first or 0) + 1, len(with_.turns) + 1))
        body.append(
            [
                f"{threshold:,}",
                len(with_.compactions),
                first or "—",
                f"{even} (+{even - first})" if even and first else "never",
                f"{at40[0]:.2f}x" if at40 else "—",
                f"{steady[0]:.2f}x" if steady and first else "—",
                f"{float(with_.total / without.total):.2f}x",
                f"{got}/{asked}",
            ]
        )
    headers = ["threshold", "compactions", "first at turn", "break-even turn"]
    headers += [f"turn-{TURN_40} input", "mean input after 1st", "total cost", "facts recovered"]
    return table(headers, body)


# -- the chart ------------------------------------------------------------------------------------


def _nice_step(peak: float) -> float:
    """A 1-2-5 tick step giving four to eight ticks up to `peak`."""
    raw = peak / 5 or 1.0
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)


def svg_chart(with_: Run, without: Run, preserve: int = 5) -> str:
    """Three panels, by hand: tokens billed per turn, input cost per turn (with its floor, what
    no compaction can go below: strategy_cost.floor_usd), cumulative cost."""
    width, left, right, top, panel_h, gap = 860, 80, 20, 60, 150, 60
    n = len(with_.turns)

    def cumulative(run: Run) -> list[float]:
        total, out = 0.0, []
        for t in run.turns:
            total += float(t.total_usd)
            out.append(total)
        return out

    floor = [
        float(strategy_cost.floor_usd(sys.modules[__name__], without, turn, preserve))
        for turn in range(1, n + 1)
    ]
    panels: list[tuple[str, str, list[float], list[float], list[float] | None]] = [
        (
            "Input tokens billed per turn (prefix + transcript + new turn)",
            "{:,.0f}",
            [t.billed_tokens for t in without.turns],
            [t.billed_tokens for t in with_.turns],
            None,
        ),
        (
            f"Input cost per turn (USD at {with_.price.model} rates, cache-read / write / full), "
            "and its floor",
            "${:.3f}",
            [float(t.input_usd) for t in without.turns],
            [float(t.input_usd) for t in with_.turns],
            floor,
        ),
        (
            "Cumulative cost (USD: input + compaction calls)",
            "${:.2f}",
            cumulative(without),
            cumulative(with_),
            None,
        ),
    ]
    height = top + len(panels) * (panel_h + gap) - gap + 56
    plot_w = width - left - right

    def x_of(turn: int) -> float:
        return left + (turn - 1) * plot_w / max(1, n - 1)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="#ffffff"/>',
        f'<text x="{left}" y="22" font-size="15" font-weight="bold">Session compaction on the '
        f"{n}-turn scripted workload (summarizer {escape(with_.model)})</text>",
        f'<line x1="{left}" y1="38" x2="{left + 28}" y2="38" stroke="#c33" stroke-width="2"/>',
        f'<text x="{left + 34}" y="42">without compaction</text>',
        f'<line x1="{left + 180}" y1="38" x2="{left + 208}" y2="38" stroke="#36c" '
        'stroke-width="2"/>',
        f'<text x="{left + 214}" y="42">with compaction (threshold {with_.threshold:,} tokens)'
        "</text>",
        f'<line x1="{left + 500}" y1="38" x2="{left + 528}" y2="38" stroke="#2a7" '
        'stroke-dasharray="4 3"/>',
        f'<text x="{left + 534}" y="42">a compaction</text>',
        f'<line x1="{left + 630}" y1="38" x2="{left + 658}" y2="38" stroke="#888" '
        'stroke-width="2" stroke-dasharray="2 2"/>',
        f'<text x="{left + 664}" y="42">floor (prefix + tail)</text>',
    ]
    for index, (title, label, off, on, lowest) in enumerate(panels):
        y0 = top + index * (panel_h + gap) + 16
        step = _nice_step(max(*off, *on))
        ticks = math.ceil(max(*off, *on) / step)
        peak = step * ticks

        def y_of(value: float, y0: float = y0, peak: float = peak) -> float:
            return y0 + panel_h - value / peak * panel_h

        parts.append(f'<text x="{left}" y="{y0 - 8}" font-weight="bold">{escape(title)}</text>')
        for tick in range(ticks + 1):
            y = y_of(step * tick)
            parts.append(
                f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" '
                'stroke="#e6e6e6"/>'
            )
            parts.append(
                f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">'
                f"{label.format(step * tick)}</text>"
            )
        for turn in [1, *range(10, n + 1, 10)]:
            parts.append(
                f'<text x="{x_of(turn):.1f}" y="{y0 + panel_h + 15}" text-anchor="middle">'
                f"{turn}</text>"
            )
        for c in with_.compactions:
            x = x_of(c.turn)
            parts.append(
                f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y0 + panel_h}" '
                'stroke="#2a7" stroke-dasharray="4 3"/>'
            )
        parts.append(
            f'<rect x="{left}" y="{y0}" width="{plot_w}" height="{panel_h}" fill="none" '
            'stroke="#999"/>'
        )
        series = [(off, "#c33", ""), (on, "#36c", "")]
        if lowest is not None:
            series.append((lowest, "#888", ' stroke-dasharray="2 2"'))
        for values, colour, dash in series:
            points = " ".join(f"{x_of(i + 1):.1f},{y_of(v):.1f}" for i, v in enumerate(values))
            parts.append(
                f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"'
                f"{dash}/>"
            )
    parts.append(
        f'<text x="{left + plot_w / 2:.0f}" y="{height - 6}" text-anchor="middle">turn</text>'
    )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


# -- main -----------------------------------------------------------------------------------------


async def measure(model: str, args: argparse.Namespace) -> tuple[Run, Run, Run]:
    with tempfile.TemporaryDirectory(prefix="workload-cost-") as scratch:
        workspace = Path(args.workspace) if args.workspace else Path(scratch)
        kwargs = dict(seed=args.seed, turns=args.turns, pricing=args.pricing)
        with_ = await run_session(model, workspace, threshold=args.threshold, **kwargs)
        without = await run_session(model, None, threshold=None, **kwargs)
        rerun = await run_session(model, workspace, threshold=args.threshold, **kwargs)
    return with_, without, rerun


async def strategies(args: argparse.Namespace) -> dict[str, object]:
    variants = [
        v for v in strategy_cost.VARIANTS if not args.strategy or v.strategy in args.strategy
    ]
    return await strategy_cost.measure(
        sys.modules[__name__],
        shapes=args.workload,
        variants=variants,
        seed=args.seed,
        turns=args.turns,
        threshold=args.threshold,
        quality=args.quality,
        summary_tokens=args.max_summary_tokens,
        payback_turns=args.payback_turns,
        preserve=args.preserve,
        pricing=args.pricing,
        turn_40_thresholds=args.turn_40_thresholds,
        progress=(lambda line: print(line, file=sys.stderr)) if args.progress else lambda _: None,
    )


async def main_async(args: argparse.Namespace) -> int:
    if args.json:
        matrix = await strategies(args)
        print(json.dumps(strategy_cost.public(matrix), indent=2))
        return 0
    facts = planted_facts(args.seed, args.turns)
    models = args.model or [OFFLINE]
    if not args.model and not args.offline and os.environ.get("ANTHROPIC_API_KEY"):
        models.append(HAIKU)
    print("# Workload cost: the §7 cost curve and §10 fact recovery\n")
    pricing: Pricing = args.pricing
    price = pricing.price
    print(
        f"Workload: demo.workload.scripted_session(seed={args.seed}, turns={args.turns}), "
        f"{len(facts)} planted facts. Billing: one request per turn at {pricing.model} rates "
        f"({_pricing.ORIGIN_WORDS[pricing.origin]}: input ${rate(price.input_per_mtok)}/Mtok, "
        f"output ${rate(price.output_per_mtok)}, cache write "
        f"${rate(price.cache_write_per_mtok)}, cache read ${rate(price.cache_read_per_mtok)}); "
        f"stable prefix {PREFIX_TOKENS:,} tokens. "
        "Compaction off = a threshold the session never reaches.\n"
    )
    if HAIKU not in models:
        print(f"({HAIKU} not run: set ANTHROPIC_API_KEY, or pass --model {HAIKU}.)\n")
    all_met = True
    chart: tuple[Run, Run] | None = None
    for model in models:
        with_, without, rerun = await measure(model, args)
        text, met = report(with_, without, rerun, facts)
        print(text)
        all_met &= met
        if chart is None:
            chart = (with_, without)
    if args.sweep:
        rows = []
        for threshold in (10_000, 15_000, 20_000, 30_000, 45_000):
            with tempfile.TemporaryDirectory(prefix="workload-sweep-") as scratch:
                with_ = await run_session(
                    OFFLINE,
                    Path(scratch),
                    seed=args.seed,
                    turns=args.turns,
                    threshold=threshold,
                    pricing=pricing,
                )
            without = await run_session(
                OFFLINE, None, seed=args.seed, turns=args.turns, threshold=None, pricing=pricing
            )
            rows.append((threshold, with_, without))
        print(f"## Threshold sweep ({OFFLINE}, seed {args.seed}, {args.turns} turns)\n")
        print(sweep_table(rows))
        print()
    if args.svg and chart is not None:
        path = Path(args.svg)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(svg_chart(*chart), encoding="utf-8")  # its runs keep 5
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        print(f"Chart written to {shown}.")
    print(f"\nTargets: {'all met' if all_met else 'some missed (see the status columns)'}.")
    if args.strategies:
        matrix = await strategies(args)
        print(
            f"\n## Strategies with a paid summarizer ({args.turns} turns, seed {args.seed}, "
            f"threshold {args.threshold:,})\n"
        )
        print(
            f"{pricing.model} ({_pricing.ORIGIN_WORDS[pricing.origin]}) through the real SDK "
            "against a local server that bills each call from its request "
            "(tests/perf/paid_summary.py); the summary text is an extractive stand-in. Ratios are "
            "against the same workload uncompacted; ✓/✗ against the targets (break-even within 3 "
            "turns, total ≤ 0.5x, turn 40 ≤ 1.25x the floor: the prefix, the preserved tail and "
            "the new turn; set B facts ≥ summarize's).\n"
        )
        print(strategy_cost.matrix_table(matrix, table))
        print("\n```text\n" + strategy_cost.text_chart(matrix, tuple(args.workload)) + "\n```")
        print("\n### Billed input against the floor, through the compaction cycle\n")
        print(strategy_cost.CYCLE_EXPLANATION + "\n")
        print(strategy_cost.cycle_table(matrix, table))
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="40 turns, no sweep, no chart")
    parser.add_argument("--turns", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threshold", type=int, default=30_000)
    parser.add_argument(
        "--model", action="append", help=f"compaction model (repeatable; default {OFFLINE})"
    )
    parser.add_argument("--offline", action="store_true", help=f"only {OFFLINE}, even with a key")
    parser.add_argument("--workspace", help="reuse this workspace's cache (default: a temp dir)")
    parser.add_argument(
        "--svg", help="chart path (default docs/perf/cost-curve.svg unless --quick)"
    )
    parser.add_argument("--no-sweep", dest="sweep", action="store_false", default=None)
    parser.add_argument(
        "--json", action="store_true", help="the strategy matrix as one JSON object"
    )
    parser.add_argument(
        "--strategy", action="append", help="strategies in the matrix (repeatable; default all)"
    )
    parser.add_argument(
        "--workload",
        action="append",
        choices=SHAPES,
        help="workload shapes in the matrix (repeatable; default all, --quick: mixed)",
    )
    parser.add_argument("--no-strategies", dest="strategies", action="store_false")
    parser.add_argument(
        "--no-quality", dest="quality", action="store_false", help="skip set B fact recovery"
    )
    parser.add_argument("--progress", action="store_true", help="name each run on stderr")
    parser.add_argument(
        "--max-summary-tokens",
        type=int,
        default=2_000,
        help="compaction_max_summary_tokens, the summary budget's ceiling (default 2000)",
    )
    parser.add_argument(
        "--payback-turns",
        type=int,
        default=3,
        help="compaction_summary_payback_turns in the matrix (default 3; 0: every summary gets "
        "the ceiling, without the pay-back budget)",
    )
    parser.add_argument(
        "--preserve",
        type=int,
        default=5,
        help="compaction_preserve_recent_turns in the matrix (default 5, the spec's)",
    )
    parser.add_argument(
        "--price",
        metavar=_pricing.PRICE_USAGE,
        type=_price_arg,
        help="bill the turns and the paid summarizer's calls at these rates, USD per million "
        "tokens (an empty or missing cache rate: 1.25x / 0.1x the input rate); the model is "
        f"--price-model's, else {_pricing.STATED_MODEL!r}",
    )
    parser.add_argument(
        "--price-model",
        metavar="NAME",
        help=f"the model whose rates bill them: the price table's unless --price is given "
        f"(default {_pricing.DEFAULT_MODEL})",
    )
    parser.add_argument(
        "--turn-40-thresholds",
        metavar="N[,N...]",
        type=_thresholds_arg,
        default=TURN_40_THRESHOLDS,
        help="also replay the first 40 turns of each run at these thresholds, for turn 40's "
        "billed input against its floor (default "
        f"{','.join(map(str, TURN_40_THRESHOLDS))}; '' for none)",
    )
    args = parser.parse_args(argv)
    try:
        args.pricing = _pricing.pricing(args.price_model, args.price)
    except ValueError as error:
        parser.error(f"argument --price-model: {error}")
    if args.workload is None:
        args.workload = ["mixed"] if args.quick else list(SHAPES)
    if args.turns is None:
        args.turns = 40 if args.quick else 200
    if args.sweep is None:
        args.sweep = not args.quick
    if args.svg is None and not args.quick and args.pricing == PRICING:
        # The committed chart is at the reference prices; another price's goes where --svg says.
        args.svg = str(ROOT / "docs" / "perf" / "cost-curve.svg")
    return args


def _price_arg(text: str) -> object:
    try:
        return _pricing.parse_price(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _thresholds_arg(text: str) -> tuple[int, ...]:
    parts = [part.strip().replace("_", "") for part in text.split(",") if part.strip()]
    if not all(part.isdigit() and int(part) > 0 for part in parts):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected comma-separated token counts above 0 (e.g. 20000,12000)"
        )
    return tuple(int(part) for part in parts)


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(main_async(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
