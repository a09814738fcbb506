"""The summary for a span: its §5.1 cache key, the §5.3 cache lookup, the summarizer call (then
cached), or, for the `mask` strategy, the placeholder copies that need no call. Each step reads
the session from its inputs and returns what it made; the call's cost travels on the
PreparedCompaction (or on the SummarizerError), and SessionManager charges it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from decimal import Decimal

from engine.cache import CacheRow, CompactionCache
from engine.cache_key import compute_cache_key
from engine.compaction.result import StepInputs, Trigger
from engine.events import redact
from engine.history import text_message
from engine.ledger import apply_ledger, ledger_reserve
from engine.messages import Message, Role
from engine.outcomes import PreparedCompaction
from engine.policy.cache_fit import cache_row_problem
from engine.policy.payback import CACHE_READ_FACTOR, CACHE_WRITE_FACTOR
from engine.policy.span import SpanPlan
from engine.policy.splice import summary_text
from engine.policy.strategies import keeps_key_lines, masked_span, summary_ceiling
from engine.policy.summary_budget import FREE, SummaryCallPrice, summary_budget
from engine.summarizers import ErrorClass, Summarizer, SummarizerError, SummaryRequest
from engine.summary_checks import (
    amount,
    check_answer,
    check_failure,
    cut_to_budget,
    summarizer_bounds,
    wrapper_safe,
)


def _probe(text: str) -> Message:
    """A summary as the message it would become, to count its tokens."""
    return text_message("probe", Role.USER, text, synthetic=True)


def _summary_counter(inputs: StepInputs, span: SpanPlan) -> Callable[[str], int]:
    """A summary's tokens as the engine counts the message it becomes (its §4.2 wrapper in)."""
    model, counter = inputs.config.compaction_model, inputs.history.counter
    return lambda text: counter(_probe(summary_text(model, span.start, text)))


def summary_request(
    inputs: StepInputs, span: SpanPlan, instructions: str | None, max_tokens: int
) -> SummaryRequest:
    messages = inputs.history.messages
    return SummaryRequest(
        span=tuple(messages[span.start : span.compaction_watermark]),
        prompt_version=inputs.config.compaction_summary_prompt_version,
        max_tokens=max_tokens,
        instructions=instructions,
        history=tuple(messages),
        span_start=span.start,
    )


def call_price(
    summarizer: Summarizer, request: SummaryRequest, span_tokens: int
) -> SummaryCallPrice:
    """The summarizer's own projection of the call (`call_price`, e.g. the Anthropic one, which
    knows whether it sends the span on the cached prefix), else one read off its estimate_cost:
    the input at no output, the output's per-token price, Anthropic's cache factors on input.
    A summarizer whose price cannot be read (an injected one that raises, or answers with
    something that is not a number of 0 or more) is taken as free: its summary keeps the
    ceiling (no pay-back rule applies to it), and the compaction still runs."""
    try:
        own = getattr(summarizer, "call_price", None)
        if callable(own):
            price = own(request)
            if isinstance(price, SummaryCallPrice) and _sane(price):
                return price
        step = 1_000
        base = amount(summarizer.estimate_cost(span_tokens, 0))
        output = (amount(summarizer.estimate_cost(span_tokens, step)) - base) / step
        per_input = (amount(summarizer.estimate_cost(span_tokens + step, 0)) - base) / step
    except Exception:  # a plugin's pricing bug must not stop the compaction it prices
        return FREE
    if output <= 0 or per_input < 0:
        return FREE
    return SummaryCallPrice(
        input_usd=base,
        output_per_token=output,
        cache_write_per_token=per_input * CACHE_WRITE_FACTOR,
        cache_read_per_token=per_input * CACHE_READ_FACTOR,
    )


def _sane(price: SummaryCallPrice) -> bool:
    amounts = (
        price.input_usd,
        price.output_per_token,
        price.cache_write_per_token,
        price.cache_read_per_token,
    )
    return all(isinstance(a, Decimal) and a.is_finite() and a >= 0 for a in amounts)


def max_summary_tokens(
    inputs: StepInputs, summarizer: Summarizer, span: SpanPlan, instructions: str | None
) -> int:
    """The call's max_tokens: engine.policy.summary_budget's pay-back budget for this span, under
    the compaction_max_summary_tokens ceiling (the ceiling itself for a free summarizer)."""
    config = inputs.config
    # A fold (§12.4) brings the earlier summary's room with it.
    ceiling = summary_ceiling(inputs.history, span, config.compaction_max_summary_tokens)
    if config.compaction_summary_payback_turns <= 0:
        return ceiling
    request = summary_request(inputs, span, instructions, ceiling)
    price = call_price(summarizer, request, span.span_tokens)
    return summary_budget(
        span.span_tokens,
        max(0, inputs.history.total_tokens - span.span_tokens),
        price,
        ceiling=ceiling,
        payback_turns=config.compaction_summary_payback_turns,
    )


def cache_key(
    inputs: StepInputs,
    summarizer: Summarizer,
    span: SpanPlan,
    instructions: str | None,
    max_tokens: int,
) -> str:
    """§5.1 key of the call with `max_tokens` (max_summary_tokens: the budget is in the key)."""
    history, config = inputs.history, inputs.config
    with history.canonical_view(span.start, span.compaction_watermark) as span_bytes:
        return compute_cache_key(
            history.messages[span.start : span.compaction_watermark],
            summarization_model=config.compaction_model,
            summarization_prompt_version=config.compaction_summary_prompt_version,
            summarization_max_tokens=max_tokens,
            instructions=instructions,
            span_bytes=span_bytes,
            # A summarizer whose request differs from the plain one (trimmed tool outputs, the
            # session's cached prefix) may summarize differently: its variant is in the key.
            request_variant=getattr(summarizer, "request_variant", None),
        )


def usable_hit(
    inputs: StepInputs, cache: CompactionCache, key: str, span: SpanPlan
) -> CacheRow | None:
    """A hit only if the row fits this span and its summary is a message within the summary
    budget (§5.3: a row is untrusted; an oversized summary would splice the session over its
    hard cap). Anything else is a miss, reported in `cache.rejected` and evicted."""
    cached = cache.get(key)
    if cached is None:
        return None
    budget = summary_ceiling(inputs.history, span, inputs.config.compaction_max_summary_tokens)
    counter = inputs.history.counter
    problem = cache_row_problem(cached, span, budget, lambda text: counter(_probe(text)))
    if problem is None:
        return cached
    cache.rejected.append(f"compaction_cache row {key}: {problem}")
    cache.evict(key)
    return None


async def prepare_summary(
    inputs: StepInputs,
    span: SpanPlan,
    instructions: str | None,
    trigger: Trigger,
    *,
    summarizer: Summarizer,
    cache: CompactionCache | None,
) -> PreparedCompaction:
    """The span's summary from the cache, or from one summarizer call (then cached). Its cost is
    on the result; a failed call raises SummarizerError carrying what it billed. Neither is
    charged here (SessionManager does)."""
    config = inputs.config
    span_messages = tuple(inputs.history.messages[span.start : span.compaction_watermark])
    max_tokens = max_summary_tokens(inputs, summarizer, span, instructions)
    key = cache_key(inputs, summarizer, span, instructions, max_tokens)
    cached = usable_hit(inputs, cache, key, span) if cache is not None else None
    common = dict(
        session_id=inputs.session_id,
        span=span,
        span_ids=tuple(m.id for m in span_messages),
        prompt_version=config.compaction_summary_prompt_version,
        cache_key=key,
        instructions=instructions,
        trigger=trigger,
        strategy=config.compaction_strategy,
    )
    if cached is not None:
        # §5.3: a hit makes no call and costs nothing. The cache is a workspace file: its text
        # can no more close or forge the §4.2 wrapper than a fresh answer can.
        return PreparedCompaction(
            summary=wrapper_safe(cached.summary_text),
            model=cached.summarization_model,
            cache_hit=True,
            tokens_in=cached.span_token_count_in,
            tokens_out=cached.span_token_count_out,
            cost_usd=Decimal(0),
            latency_ms=0,
            **common,  # type: ignore[arg-type]
        )
    # The work ledger (engine.ledger) is a function of the span, which the key holds; its room
    # is left out of what the summarizer is asked for, and what the prose leaves out goes in it.
    # Reading a span's outputs is CPU work (a second on megabytes of logs): it runs on a worker
    # thread, so the caller's event loop goes on serving its other tasks meanwhile.
    count = _summary_counter(inputs, span)
    reserve = await asyncio.to_thread(ledger_reserve, span_messages, max_tokens, count)
    prose_tokens = max_tokens - reserve
    request = summary_request(inputs, span, instructions, prose_tokens)
    # engine.summary_checks: the answer held to what the request set (length, usage, cost).
    price = call_price(summarizer, request, span.span_tokens)
    bounds = summarizer_bounds(summarizer, request, price, span.span_tokens)
    try:
        result = await summarizer.summarize(request)
    except SummarizerError as error:
        # What it billed, checked like any usage figure; SessionManager charges it.
        raise check_failure(error, bounds) from error.__cause__
    counter = inputs.history.counter
    try:
        result = check_answer(result, bounds, lambda text: counter(_probe(text)))
        # §6: a model may repeat a key or token pasted in the span: neither the cache file nor
        # the spliced summary keeps it.
        ledgered = await asyncio.to_thread(
            apply_ledger, redact(result.text), span_messages, None, max_tokens, count
        )
        summary = ledgered.text
        # The spliced message, §4.2 wrapper included, within max_tokens whatever came before.
        summary, _ = cut_to_budget(summary, max_tokens, count)
    except Exception as error:  # the call was paid for: the manager charges the request's bound
        raise SummarizerError(
            ErrorClass.BAD_RESPONSE,
            f"the answer could not be used ({type(error).__name__}); charged at the request's "
            f"bound ${bounds.bound_cost_usd}",
            billed_cost_usd=bounds.bound_cost_usd,
        ) from error
    # Cached before the manager writes the spend: if the store refuses then, a retry pays nothing.
    if summary.strip() and cache is not None:
        cache.put(
            CacheRow(
                cache_key=key,
                summary_text=summary,
                summarization_model=config.compaction_model,
                summarization_prompt_version=config.compaction_summary_prompt_version,
                span_message_count=span.span_message_count,
                span_token_count_in=span.span_tokens,
                span_token_count_out=result.tokens_out,
            )
        )
    # The call's own figures (tokens, cost, latency, usage) travel with the summary.
    return PreparedCompaction(
        summary=summary, model=config.compaction_model, cache_hit=False,
        tokens_in=result.tokens_in, tokens_out=result.tokens_out, cost_usd=result.cost_usd,
        latency_ms=result.latency_ms, usage=result.usage, notes=result.notes,
        **common,  # type: ignore[arg-type]
    )  # fmt: skip


def prepare_mask(inputs: StepInputs, span: SpanPlan, trigger: Trigger) -> PreparedCompaction:
    """engine.policy.strategies `mask`: the span's tool results as placeholders, no call."""
    history, config = inputs.history, inputs.config
    keys = keeps_key_lines(config.compaction_strategy)
    replacement = tuple(masked_span(history, span.start, span.compaction_watermark, keys=keys))
    return PreparedCompaction(
        session_id=inputs.session_id,
        span=span,
        span_ids=tuple(m.id for m in history.messages[span.start : span.compaction_watermark]),
        summary="",
        model=config.compaction_model,
        prompt_version=config.compaction_summary_prompt_version,
        cache_key="",
        cache_hit=False,
        tokens_in=span.span_tokens,
        tokens_out=0,
        cost_usd=Decimal(0),
        latency_ms=0,
        instructions=None,
        trigger=trigger,
        strategy=config.compaction_strategy,
        action="mask",
        replacement=replacement,
    )
