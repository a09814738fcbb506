"""Compaction strategies measured against each other (workload_cost.py's strategy matrix).

Every strategy of engine.policy.strategies runs the scripted workload in each of its shapes for 200
turns, with the paid summarizer of paid_summary.py (the real SDK, a local server that bills like
the API; claude-haiku-4-5 rates, or those workload_cost's --price states), standalone with long
outputs trimmed ("haiku") or on the session's own cached prefix ("haiku-cached"); the turns are
billed as workload_cost.py bills them, and each compaction call as the server's usage for it
says. Against the same workload uncompacted:

- break-even: the first turn at which the cumulative cost (input plus compaction calls) is at
  most the uncompacted one, counted in turns after the first compaction;
- billed input at turns 40, 100 and 200, as a share of the uncompacted turn's;
- total cost over the run, compaction calls included, as a share of the uncompacted total;
- compactions, by kind, and the calls' usage by kind;
- fact recovery: set B of tests/perf/quality (held out), scored by its `score`, each
  strategy compacting each session twice (half way, then at the end) with its own summarizer;
  and the workload's planted facts asked after each compaction (workload_cost's measure);
- billed input against its floor (floor_usd) through the compaction cycle: its spread over the
  turns after the first compaction, and turn 40's at lower thresholds (the first 40 turns
  replayed), with where turn 40 falls in the cycle.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.history import History
from engine.manager import SessionManager
from engine.messages import Message
from engine.policy.span import is_tool_cycle_boundary
from engine.summarizers.base import Summarizer
from engine.summarizers.pricing import CallUsage
from engine.summarizers.request import SessionPrefix, primary_request
from tests.messages_api_server import MessagesAPIServer, PromptCache
from tests.perf import paid_summary
from tests.perf.quality.bench import score

TARGET_BREAK_EVEN_TURNS = 3
TARGET_TOTAL = 0.5
# Turn 40's billed input against the floor (floor_usd): 0.30x of uncompacted sat below what any
# compaction can reach on these workloads (the prefix and the new turn alone bill 0.33-0.36x).
TARGET_TURN_40_VS_FLOOR = 1.25
TURN_40 = 40
CHECKPOINTS = (TURN_40, 100, 200)
# §7's stable prefix (tools + system) as the session's primary call sends it: 3,000 tokens.
SYSTEM_TEXT = (
    "You are the coding agent of the ledger project. Follow the repository rules. " * 120
)[:9_000]
CYCLE_EXPLANATION = (
    "Between compactions the history grows back from summary + tail to the threshold, so billed "
    "input against the floor cycles (min to max below); one turn's ratio is where that turn "
    "falls in the cycle, and before the first compaction it is the uncompacted ratio: a lower "
    "threshold moves turn 40 into the cycle."
)


def session_prefix(model: str) -> SessionPrefix:
    """The session's primary prefix, naming `model` (anthropic:<name>) as its primary model:
    the compaction model is the session's own, so its call can go on the cached prefix."""
    return SessionPrefix(model=model, system=SYSTEM_TEXT)


PREFIX = session_prefix(paid_summary.NAME)


class Variant(msgspec.Struct, frozen=True):
    strategy: str
    summarizer: str  # "haiku", "haiku-cached" or "none" (a mask makes no call)

    @property
    def label(self) -> str:
        return (
            self.strategy if self.summarizer == "none" else f"{self.strategy} ({self.summarizer})"
        )


VARIANTS = (
    Variant("summarize", "haiku"),
    Variant("summarize", "haiku-cached"),
    Variant("mask", "none"),
    Variant("hybrid", "haiku"),
    Variant("hybrid", "haiku-cached"),
    Variant("recompact", "haiku"),
    Variant("recompact", "haiku-cached"),
)


def summarizer_for(variant: Variant, server: MessagesAPIServer, pricing: Any) -> Summarizer:
    """`pricing`: _pricing.Pricing, the model the summarizer serves and its rates."""
    prefix = session_prefix(pricing.name) if variant.summarizer == "haiku-cached" else None
    return paid_summary.paid_summarizer(
        server, session_prefix=prefix, model=pricing.model, price=pricing.price
    )


def warm_cache(server: MessagesAPIServer, prefix: SessionPrefix = PREFIX) -> Callable[..., None]:
    """What the session's primary calls leave in the provider's cache at the end of each turn: the
    prefix and the history up to the last request's breakpoint (before the final reply)."""

    def after_turn(history: list[Message]) -> None:
        sent = history[:-1] if history and history[-1].role == "assistant" else history
        system, tools, messages = primary_request(prefix, sent)
        server.prompt_cache.bill({"system": system, "tools": tools, "messages": messages})

    return after_turn


# -- fact recovery on the held-out set -----------------------------------------------------------


def _midpoint(messages: tuple[Message, ...]) -> int:
    history = History(messages)
    middle = len(messages) // 2
    return next(
        (i for i in range(middle, len(messages)) if is_tool_cycle_boundary(history, i)),
        len(messages),
    )


async def _compact(manager: SessionManager) -> None:
    try:
        prepared = await manager.prepare()
    except ValueError:
        return  # nothing this strategy can do with the span
    manager.commit(prepared)


def strategy_fn(variant: Variant, server: MessagesAPIServer, pricing: Any) -> Callable[..., Any]:
    """A `score` summarize_fn: the session compacted by `variant` half way and again at the end
    (one message kept), returning what the agent is left with: the active history's text."""

    async def summarize(messages: tuple[Message, ...], max_tokens: int) -> str:
        summarizer = summarizer_for(
            variant if variant.summarizer != "none" else Variant(variant.strategy, "haiku"),
            server,
            pricing,
        )
        middle = _midpoint(messages)
        manager = SessionManager(
            history=messages[:middle],
            compaction_model=pricing.name,
            summarizer=summarizer,
            compaction_strategy=variant.strategy,
            # hybrid: masking is enough when it leaves no more than the summary budget.
            compaction_threshold_tokens=2 * max_tokens,
            compaction_hard_cap_tokens=10**9,
            compaction_preserve_recent_turns=1,
            compaction_max_summary_tokens=max_tokens,
        )
        try:
            await _compact(manager)
            for message in messages[middle:]:
                manager.append(message)
            await _compact(manager)
        finally:
            await manager.aclose()
        return "\n".join(m.text() for m in manager.messages)

    return summarize


def set_b_recovery(variant: Variant, server: MessagesAPIServer, pricing: Any) -> dict[str, Any]:
    figures = score(strategy_fn(variant, server, pricing), sets=("B",))["B"]
    return {
        "kept": figures["kept"],
        "facts": figures["facts"],
        "rate": figures["rate"],
        "by_kind": figures["by_kind"],
        "tokens_left_mean": figures["summary_tokens_mean"],
    }


# -- the matrix ----------------------------------------------------------------------------------


def usage_total(run: Any) -> CallUsage:
    totals = [0, 0, 0, 0]
    for c in run.compactions:
        if c.usage is not None and not c.cache_hit:
            totals[0] += c.usage.input_tokens
            totals[1] += c.usage.cache_read_tokens
            totals[2] += c.usage.cache_write_tokens
            totals[3] += c.usage.output_tokens
    return CallUsage(
        input_tokens=totals[0],
        cache_read_tokens=totals[1],
        cache_write_tokens=totals[2],
        output_tokens=totals[3],
    )


def floor_usd(wc: Any, without: Any, turn: int, preserve: int) -> Decimal:
    """What no compaction can bring `turn` under: the stable prefix and the preserved tail read
    from the cache, and the new turn at the input rate. The tail is what §3.2 never compacts, the
    last `preserve` messages before the turn (the watermark may slide back to a tool-cycle
    boundary, §3.3, which only keeps more), counted as the engine counts them."""
    start = without.start_counts[turn - 1]  # uncompacted: its final history is every message
    tail = sum(without.final_tokens[max(0, start - preserve) : start])
    return wc.bill(tail, "read", without.turns[turn - 1].new_tokens, without.price)


def vs_floor(wc: Any, run: Any, without: Any, turn: int, preserve: int) -> float:
    return float(run.turns[turn - 1].input_usd / floor_usd(wc, without, turn, preserve))


def cycle_spread(wc: Any, with_: Any, without: Any, preserve: int) -> dict[str, Any] | None:
    """Billed input against the floor over every turn after the first compaction (later
    compactions' turns included): how far one turn's ratio moves with where it falls in the
    cycle, and its mean on the turns that mark the cycle's phases. None: nothing was compacted."""
    first = wc.first_compaction(with_)
    n = len(with_.turns)
    if first is None or first >= n:
        return None
    window = range(first + 1, n + 1)
    ratio = {t: vs_floor(wc, with_, without, t, preserve) for t in window}
    compacted = {c.turn for c in with_.compactions}

    def mean_of(turns: list[int]) -> float | None:
        picked = [ratio[t] for t in turns if t in ratio]
        return round(statistics.fmean(picked), 3) if picked else None

    values = list(ratio.values())
    return {
        "from_turn": first + 1,
        "turns": len(values),
        "min": round(min(values), 3),
        "median": round(statistics.median(values), 3),
        "mean": round(statistics.fmean(values), 3),
        "max": round(max(values), 3),
        "by_phase_mean": {
            # The turn after a compaction reads summary + tail from the cache: the cycle's low.
            "turn_after_compaction": mean_of([c + 1 for c in compacted]),
            # The turn before the next one reads the history grown back to the threshold.
            "turn_before_compaction": mean_of([c - 1 for c in compacted if c - 1 > first]),
            # A compaction's own turn writes its new transcript to the cache (1.25x input).
            "compaction_turn": mean_of(sorted(compacted)),
        },
    }


def turn_40_position(wc: Any, run: Any, without: Any, preserve: int) -> dict[str, Any]:
    """Turn 40's billed input against its floor, and where turn 40 falls in `run`'s cycle."""
    done = [c.turn for c in run.compactions if c.turn <= TURN_40]
    return {
        "vs_floor": round(vs_floor(wc, run, without, TURN_40, preserve), 3),
        "compactions_by_then": len(done),
        # None: turn 40 comes before the first compaction (the uncompacted history).
        "turns_since_compaction": TURN_40 - done[-1] if done else None,
    }


def run_figures(wc: Any, with_: Any, without: Any, preserve: int = 5) -> dict[str, Any]:
    """One run's figures against the uncompacted run (wc: the workload_cost module) and against
    the floor (floor_usd)."""
    first = wc.first_compaction(with_)
    even = wc.break_even(with_, without)
    n = len(with_.turns)
    at: dict[str, float] = {}
    to_floor: dict[str, float] = {}
    floor: dict[str, dict[str, object]] = {}
    for turn in CHECKPOINTS:
        if turn <= n:
            a, b = with_.turns[turn - 1], without.turns[turn - 1]
            at[str(turn)] = round(float(a.input_usd / b.input_usd), 3)
            lowest = floor_usd(wc, without, turn, preserve)
            to_floor[str(turn)] = round(float(a.input_usd / lowest), 3)
            floor[str(turn)] = {
                "usd": str(lowest),
                "vs_uncompacted": round(float(lowest / b.input_usd), 3),
            }
    kinds: dict[str, int] = {}
    for c in with_.compactions:
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    got, asked = wc.recovery(with_)
    return {
        "first_compaction_turn": first,
        "break_even_turn": even,
        "break_even_after_turns": even - first if even is not None and first is not None else None,
        "billed_input_vs_uncompacted": at,
        "floor": floor,
        "billed_input_vs_floor": to_floor,
        "input_usd": str(with_.total - with_.spend),  # every turn's billed input
        "total_usd": str(with_.total),
        "uncompacted_total_usd": str(without.total),
        "total_vs_uncompacted": round(float(with_.total / without.total), 3),
        "compaction_spend_usd": str(with_.spend),
        "compactions": len(with_.compactions),
        "compactions_by_kind": kinds,
        "summarizer_calls": with_.calls,
        "call_usage": msgspec.to_builtins(usage_total(with_)),
        "history_tokens_at_end": sum(History(with_.final_messages).tokens),
        "workload_facts": {"recovered": got, "asked": asked},
        "billed_input_vs_floor_after_first_compaction": cycle_spread(wc, with_, without, preserve),
    }


def targets(figures: dict[str, Any], summarize_rate: float | None) -> dict[str, bool | None]:
    after = figures["break_even_after_turns"]
    at40 = figures["billed_input_vs_floor"].get("40")
    rate = (figures.get("fact_recovery_set_b") or {}).get("rate")
    return {
        "break_even_within_3_turns": after is not None and after <= TARGET_BREAK_EVEN_TURNS,
        "total_at_most_0.5x": figures["total_vs_uncompacted"] <= TARGET_TOTAL,
        "turn_40_within_1.25x_floor": at40 is not None and at40 <= TARGET_TURN_40_VS_FLOOR,
        "fact_recovery_no_worse_than_summarize": None
        if rate is None or summarize_rate is None
        else rate >= summarize_rate,
    }


async def measure(
    wc: Any,
    *,
    shapes: list[str],
    variants: list[Variant],
    seed: int,
    turns: int,
    threshold: int,
    quality: bool,
    summary_tokens: int = 2_000,
    payback_turns: int = 3,
    preserve: int = 5,
    pricing: Any = None,
    turn_40_thresholds: tuple[int, ...] = (),
    progress: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Every (shape, variant) run and its figures, as the one JSON object `--json` prints.
    `pricing`: a _pricing.Pricing (default wc.PRICING, claude-haiku-4-5's table price), for the
    turns and the summarizer's calls alike. `turn_40_thresholds`: thresholds the first 40 turns
    of each run are replayed at, besides `threshold`, for turn 40 against its floor."""
    pricing = pricing or wc.PRICING
    prefix = session_prefix(pricing.name)
    server = paid_summary.paid_server()

    async def replay(variant: Variant, shape: str, length: int, at: int) -> Any:
        server.prompt_cache = PromptCache()  # a new session: nothing cached yet
        cached = variant.summarizer == "haiku-cached"
        return await wc.run_session(
            pricing.name,
            None,
            seed=seed,
            turns=length,
            threshold=at,
            strategy=variant.strategy,
            shape=shape,
            summarizer=summarizer_for(variant, server, pricing),
            after_turn=warm_cache(server, prefix) if cached else None,
            summary_tokens=summary_tokens,
            payback_turns=payback_turns,
            preserve=preserve,
            pricing=pricing,
        )

    results: list[dict[str, Any]] = []
    uncompacted: dict[str, Any] = {}
    recovery: dict[str, dict[str, Any]] = {}
    try:
        if quality:
            for variant in variants:
                progress(f"set B: {variant.label}")
                recovery[variant.label] = await asyncio.to_thread(
                    set_b_recovery, variant, server, pricing
                )
        for shape in shapes:
            progress(f"{shape}: uncompacted")
            without = await wc.run_session(
                pricing.name,
                None,
                seed=seed,
                turns=turns,
                threshold=None,
                shape=shape,
                pricing=pricing,
            )
            uncompacted[shape] = {
                "total_usd": str(without.total),
                "input_usd_at": {
                    str(t): str(without.turns[t - 1].input_usd) for t in CHECKPOINTS if t <= turns
                },
                "history_tokens_at_end": sum(History(without.final_messages).tokens),
            }
            for variant in variants:
                progress(f"{shape}: {variant.label}")
                with_ = await replay(variant, shape, turns, threshold)
                figures = run_figures(wc, with_, without, preserve)
                figures["fact_recovery_set_b"] = recovery.get(variant.label)
                if turns >= TURN_40:
                    # A shorter session is a prefix of a longer one: 40 turns replayed at another
                    # threshold are that run's first 40.
                    at_40 = {str(threshold): turn_40_position(wc, with_, without, preserve)}
                    for other in turn_40_thresholds:
                        if str(other) not in at_40:
                            progress(f"{shape}: {variant.label}, turn 40 at threshold {other:,}")
                            short = await replay(variant, shape, TURN_40, other)
                            at_40[str(other)] = turn_40_position(wc, short, without, preserve)
                    figures["turn_40_vs_floor_by_threshold"] = at_40
                results.append(
                    {
                        "workload": shape,
                        "strategy": variant.strategy,
                        "summarizer": variant.summarizer,
                        **figures,
                        "_run": with_,
                        "_without": without,
                    }
                )
    finally:
        server.close()
    for result in results:
        base = recovery.get(Variant("summarize", result["summarizer"]).label) or recovery.get(
            Variant("summarize", "haiku").label
        )
        result["targets"] = targets(result, base["rate"] if base else None)
    return {
        "shape_version": 1,
        "turns": turns,
        "seed": seed,
        "threshold_tokens": threshold,
        "max_summary_tokens": summary_tokens,
        "summary_payback_turns": payback_turns,
        "preserve_recent_turns": preserve,
        "pricing": pricing.to_json(),
        "summary_text": "extractive stand-in served by the local server (see paid_summary.py)",
        "fact_recovery_set": "tests/perf/quality set B (held out), score() from bench.py",
        "targets": {
            "break_even_after_turns_at_most": TARGET_BREAK_EVEN_TURNS,
            "total_vs_uncompacted_at_most": TARGET_TOTAL,
            "turn_40_vs_floor_at_most": TARGET_TURN_40_VS_FLOOR,
            "fact_recovery": "no worse than summarize (same summarizer)",
        },
        "uncompacted": uncompacted,
        "results": results,
    }


def public(report: dict[str, Any]) -> dict[str, Any]:
    """The report without the runs kept for the tables and the chart."""
    return {
        **report,
        "results": [
            {k: v for k, v in r.items() if not k.startswith("_")} for r in report["results"]
        ],
    }


# -- tables and the chart ------------------------------------------------------------------------


def _mark(ok: bool | None) -> str:
    return "—" if ok is None else ("✓" if ok else "✗")


def matrix_table(report: dict[str, Any], table: Callable[..., str]) -> str:
    rows = []
    for r in report["results"]:
        at = r["billed_input_vs_uncompacted"]
        floor = r["billed_input_vs_floor"]
        t = r["targets"]
        b = r.get("fact_recovery_set_b")
        after = r["break_even_after_turns"]
        rows.append(
            [
                r["workload"],
                Variant(r["strategy"], r["summarizer"]).label,
                r["compactions"],
                "never" if after is None else f"+{after} {_mark(t['break_even_within_3_turns'])}",
                (
                    f"{at['40']:.2f}x, {floor['40']:.2f}x floor "
                    + _mark(t["turn_40_within_1.25x_floor"])
                )
                if "40" in at
                else "—",
                *(
                    f"{at[c]:.2f}x, {floor[c]:.2f}x floor" if c in at else "—"
                    for c in ("100", "200")
                ),
                f"{r['total_vs_uncompacted']:.2f}x {_mark(t['total_at_most_0.5x'])}",
                f"${Decimal(r['compaction_spend_usd']):.4f}",
                "—"
                if b is None
                else f"{b['rate']:.2f} {_mark(t['fact_recovery_no_worse_than_summarize'])}",
                "—" if b is None else f"{b['tokens_left_mean']:,}",
            ]
        )
    headers = ["workload", "strategy (summarizer)", "compactions", "break-even"]
    headers += ["turn 40", "turn 100", "turn 200", "total", "compaction spend"]
    headers += ["set B facts", "tokens left"]
    return table(headers, rows)


_LEVELS = " ▁▂▃▄▅▆▇█"


def text_chart(
    report: dict[str, Any], shapes: tuple[str, ...] = ("mixed",), width: int = 50
) -> str:
    """Cumulative cost (input + compaction calls) over the run, one sparkline per strategy, all
    on the uncompacted run's scale, per workload shape."""
    out: list[str] = []
    for shape in shapes:
        picked = [r for r in report["results"] if r["workload"] == shape]
        if not picked:
            continue
        without = picked[0]["_without"]
        turns = len(without.turns)
        step = max(1, math.ceil(turns / width))

        def curve(run: Any, step: int = step, turns: int = turns) -> list[float]:
            total, points = Decimal(0), []
            for t in run.turns:
                total += t.total_usd
                points.append(float(total))
            return points[step - 1 :: step] + ([] if turns % step == 0 else [points[-1]])

        peak = curve(without)[-1]
        rows = [("uncompacted", without)] + [
            (Variant(r["strategy"], r["summarizer"]).label, r["_run"]) for r in picked
        ]
        label_width = max(len(name) for name, _ in rows)
        out.append(
            f"{shape}: cumulative cost over turns 1-{turns} (a column is {step} turns; "
            f"█ = ${peak:.2f}, the uncompacted total)"
        )
        for name, run in rows:
            points = curve(run)
            line = "".join(_LEVELS[min(8, max(1, round(v / peak * 8)))] for v in points)
            out.append(f"{name.ljust(label_width)}  {line}  ${points[-1]:.3f}")
        out.append("")
    return "\n".join(out).rstrip()


def cycle_table(report: dict[str, Any], table: Callable[..., str]) -> str:
    """Billed input against the floor after the first compaction (min / median / mean / max),
    and turn 40's at each threshold with where it falls in the cycle."""
    thresholds: list[str] = []
    for r in report["results"]:
        for key in r.get("turn_40_vs_floor_by_threshold") or {}:
            if key not in thresholds:
                thresholds.append(key)
    thresholds.sort(key=int, reverse=True)
    rows = []
    for r in report["results"]:
        spread = r["billed_input_vs_floor_after_first_compaction"]
        at_40 = r.get("turn_40_vs_floor_by_threshold") or {}
        rows.append(
            [
                r["workload"],
                Variant(r["strategy"], r["summarizer"]).label,
                r["first_compaction_turn"] or "—",
                "—" if spread is None else _ratios(spread[k] for k in SPREAD),
                "—" if spread is None else _ratios(spread["by_phase_mean"].values()),
                *(_position(at_40.get(t)) for t in thresholds),
            ]
        )
    headers = ["workload", "strategy (summarizer)", "1st compaction"]
    headers += ["after it: min / median / mean / max", "turn after / before / of a compaction"]
    headers += [f"turn 40 at {int(t):,}" for t in thresholds]
    return table(headers, rows)


SPREAD = ("min", "median", "mean", "max")


def _ratios(values: Any) -> str:
    return " / ".join("—" if v is None else f"{v:.2f}x" for v in values)


def _position(at: dict[str, Any] | None) -> str:
    if at is None:
        return "—"
    since = at["turns_since_compaction"]
    where = {None: "before the 1st", 0: "a compaction's turn", 1: "1 turn after one"}.get(
        since, f"{since} turns after one"
    )
    return f"{at['vs_floor']:.2f}x ({where})"
