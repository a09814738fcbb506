"""§5.3 with a guard: whether a cache row may stand in for this span's summary."""

from __future__ import annotations

from collections.abc import Callable

from engine.cache.rows import CacheRow
from engine.policy.span import SpanPlan


def summary_limit(max_summary_tokens: int) -> int:
    """Counts are estimates (a summarizer may overshoot a little): room for that, no more."""
    return 2 * max_summary_tokens + 64


def cache_row_problem(
    row: CacheRow, span: SpanPlan, max_summary_tokens: int, count_summary: Callable[[str], int]
) -> str | None:
    """None when the row fits this span and its summary (counted by `count_summary`, only when
    the cheap checks pass) is within the summary budget; otherwise what is wrong (a hand-edited
    3 MB summary would leave a session ten times over its hard cap)."""
    limit, budget = summary_limit(max_summary_tokens), max_summary_tokens
    if row.span_message_count != span.span_message_count:
        return (
            f"span_message_count {row.span_message_count}, the span has {span.span_message_count}"
        )
    if row.span_token_count_out > limit:
        return f"span_token_count_out {row.span_token_count_out} over the budget {budget}"
    if count_summary(row.summary_text) > limit:
        return f"a summary of {len(row.summary_text)} chars, over the budget {budget}"
    return None
