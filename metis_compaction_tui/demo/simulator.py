"""A simulated metis dev: a real SessionManager over the store, fed a scripted coding session.

Each turn appends the user's ask, runs `await manager.before_turn()` (§3.1: at the start of the
turn, before the LLM call it stands for), then appends the tool cycles and the reply at a chosen
pace. With the demo knobs the session crosses the soft threshold within seconds, then the budget
runs out, soft compactions are skipped (§3.1 step 3) until the hard cap forces one (§3.1 step 2);
a rerun of the same script in a second session then hits the cache (§5.3) for the spans both
runs share.

The budget and `local:extractive`: the local summarizer costs nothing, so its budget can never run
out. With `notional_pricing` the demo charges each local summary what claude-haiku-4-5 would have
charged for the same token counts (§4 pricing), says so in the session title and the log, and
bills nothing: the budget lifecycle is real, the money is not. With a named Anthropic model and a
key the costs are the provider's own and notional pricing is off.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec

from engine import (
    CompactionConfig,
    CompactionOutcome,
    ExtractiveSummarizer,
    Summarizer,
    SummaryRequest,
    SummaryResult,
)
from engine.store import SessionStore
from engine.summarizers.pricing import cost_of, price_for
from engine.summarizers.settings import SummarizerSettings
from metis_compaction_tui.defaults import DEMO_PACE, DEMO_TURNS, LOCAL_MODEL
from metis_compaction_tui.demo.workload import scripted_session

NOTIONAL_PRICE_MODEL = "claude-haiku-4-5"
# Knobs that make everything happen within a minute at the default pace (a turn adds ~1k tokens).
DEMO_KNOBS: dict[str, Any] = {
    "compaction_threshold_tokens": 6_000,
    "compaction_hard_cap_tokens": 14_000,
    "compaction_preserve_recent_turns": 6,
    "compaction_max_summary_tokens": 600,
    # The demo shows a spent budget: its notional price would otherwise shorten each summary to
    # what pays back (engine.policy.summary_budget) and leave the budget unspent in a minute.
    "compaction_summary_payback_turns": 0,
    "compaction_max_cost_per_session_usd": Decimal("0.02"),
}

Log = Callable[[str], None]


class NotionalPricedSummarizer:
    """local:extractive, charging what NOTIONAL_PRICE_MODEL would for the same tokens (nothing
    is billed: see the module docstring)."""

    name = LOCAL_MODEL

    def __init__(self, priced_as: str = NOTIONAL_PRICE_MODEL) -> None:
        # The same overhead an Anthropic call counts for its system prompt and fence.
        from engine.summarizers.anthropic_summarizer import PROMPT_OVERHEAD_TOKENS

        self._inner = ExtractiveSummarizer()
        self._price = price_for(priced_as)
        self._overhead = PROMPT_OVERHEAD_TOKENS
        self.priced_as = priced_as

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        result = await self._inner.summarize(request)
        cost = cost_of(self._price, result.tokens_in + self._overhead, result.tokens_out)
        return msgspec.structs.replace(result, cost_usd=cost)

    def estimate_cost(self, tokens_in: int, max_tokens: int) -> Decimal:
        return cost_of(self._price, tokens_in + self._overhead, max_tokens)

    async def aclose(self) -> None:
        return None


class SimulationReport(msgspec.Struct):
    workspace: str
    sessions: list[str] = []
    turns: int = 0
    messages: int = 0
    outcomes: dict[str, int] = {}  # CompactionOutcome.status -> count
    compactions: int = 0
    soft: int = 0
    forced: int = 0
    cache_hits: int = 0
    truncations: int = 0
    budget_skips: int = 0  # §3.1 step 3: threshold reached with the budget spent
    budget_exhausted_forced: int = 0
    spent_usd: dict[str, str] = {}  # session -> Decimal text


class Simulator:
    """Runs `1 + reruns` sessions of the same script one after another in `workspace`."""

    def __init__(
        self,
        workspace: Path,
        *,
        pace: float = DEMO_PACE,
        turns: int = DEMO_TURNS,
        seed: int = 0,
        model: str = LOCAL_MODEL,
        reruns: int = 1,
        knobs: dict[str, Any] | None = None,
        notional_pricing: bool | None = None,
        session_prefix: str = "sim",
        log: Log | None = None,
        summarizer_settings: SummarizerSettings | None = None,
    ) -> None:
        self.workspace = Path(workspace)
        self.pace = pace
        self.turns = turns
        self.seed = seed
        self.model = model
        self.reruns = reruns
        knobs = {**DEMO_KNOBS, **(knobs or {})}
        self.config = CompactionConfig(compaction_model=model, **knobs)
        # Notional pricing only stands in where the real price is zero.
        self.notional_pricing = (
            (model == LOCAL_MODEL)
            if notional_pricing is None
            else (notional_pricing and model == LOCAL_MODEL)
        )
        self.session_prefix = session_prefix
        # The workspace's summarizer settings (an imported factory, an endpoint, a stated price).
        self.summarizer_settings = summarizer_settings
        self._log = log or (lambda line: None)
        self.report = SimulationReport(workspace=str(self.workspace))

    def _summarizer(self) -> Summarizer | None:
        return NotionalPricedSummarizer() if self.notional_pricing else None

    def _title(self, run: int) -> str:
        kind = "run" if run == 0 else f"rerun {run}"
        spend = (
            f"spend notional (priced as {NOTIONAL_PRICE_MODEL}; nothing billed)"
            if self.notional_pricing
            else "spend as billed"
        )
        return f"simulated metis dev, seed {self.seed} {kind} · {self.model}, {spend}"

    async def run(self, stop: asyncio.Event | None = None) -> SimulationReport:
        stop = stop or asyncio.Event()
        store = SessionStore.open(self.workspace, create=True)
        try:
            for run in range(1 + self.reruns):
                if stop.is_set():
                    break
                await self._run_session(store, run, stop)
        finally:
            store.close()
        return self.report

    async def _run_session(self, store: SessionStore, run: int, stop: asyncio.Event) -> None:
        session_id = f"{self.session_prefix}-{self.seed}-{run + 1}-{uuid.uuid4().hex[:6]}"
        store.create_session(session_id, config=self.config, title=self._title(run))
        self.report.sessions.append(session_id)
        self._log(f"session {session_id}: {self._title(run)}")
        manager = store.manager(
            session_id,
            summarizer=self._summarizer(),
            summarizer_settings=self.summarizer_settings,
        )
        try:
            for number, turn in enumerate(scripted_session(self.seed, self.turns), start=1):
                if stop.is_set():
                    return
                manager.append(turn[0])
                await self._pause(stop)
                outcome = await manager.before_turn(f"{session_id}-turn-{number}")
                self._note(session_id, number, outcome)
                for message in turn[1:]:
                    if stop.is_set():
                        return
                    manager.append(message)
                    self.report.messages += 1
                    await self._pause(stop)
                self.report.messages += 1
                self.report.turns += 1
        finally:
            self.report.spent_usd[session_id] = str(manager.spent_usd)
            await manager.aclose()

    async def _pause(self, stop: asyncio.Event) -> None:
        if self.pace <= 0:
            await asyncio.sleep(0)
            return
        try:
            await asyncio.wait_for(stop.wait(), 1 / self.pace)
        except TimeoutError:
            pass

    def _note(self, session_id: str, number: int, outcome: CompactionOutcome) -> None:
        report = self.report
        report.outcomes[outcome.status] = report.outcomes.get(outcome.status, 0) + 1
        decision = outcome.plan.decision if outcome.plan else None
        reason = decision.reason.value if decision else ""
        if reason == "budget_exhausted_skip":
            report.budget_skips += 1
        if outcome.status == "skipped" and reason != "budget_exhausted_skip":
            return
        record = outcome.record
        if outcome.status == "compacted" and record is not None:
            report.compactions += 1
            report.cache_hits += record.cache_hit
            forced = record.trigger == "hard_cap"
            report.forced += forced
            report.soft += not forced
            report.budget_exhausted_forced += reason == "budget_exhausted_forced"
            cost = f"${record.cost_usd:.4f}" + (" notional" if self.notional_pricing else "")
            detail = (
                f"{'forced' if forced else 'soft'} compaction of messages "
                f"{record.watermark_before}..{record.watermark_after}: "
                f"{record.span_token_count_in:,} -> {record.span_token_count_out:,} tokens, "
                f"cache {'hit' if record.cache_hit else 'miss'}, {cost}"
            )
        elif outcome.status == "truncated":
            report.truncations += 1
            detail = (
                f"truncated {outcome.truncated_message_count} messages ({outcome.failure_mode})"
            )
        elif outcome.status == "failed":
            detail = f"compaction failed: {outcome.failure_mode}"
        else:
            detail = decision.explain() if decision else "skipped"
        self._log(f"{session_id} turn {number}: {detail}")
