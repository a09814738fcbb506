"""Compaction strategies (§12.4 and beyond), as pure functions over a History.

A strategy decides what a compaction does once §3.1 fires; every one keeps §3's invariants (the
span is planned by engine.policy.span, so the prefix, the tool cycles and the preserved tail are
never touched; the store archives what was replaced, so each can be undone):

- `summarize`: v1. The span past the last summary becomes one summary message (§3.2, §4).
- `mask`: observation masking, no model call. Each tool result in the span is replaced by a short
  placeholder naming the tool, the size and the first line (Anthropic's context editing does the
  same). The span's messages are put back as synthetic copies, so the floor moves past them and
  they are never masked twice.
- `hybrid`: mask first; when masking alone would leave pending tokens above MASK_ENOUGH_FRACTION of
  the threshold, or would not pay back its re-cache within MASK_PAYBACK_TURNS
  (`mask_payback_turns`), summarize instead, folding everything since the prefix (as `recompact`).
- `recompact` (§12.4): the span starts at the stable prefix, so the previous summary (and any masked
  copies) is folded into the next one and summaries never pile up.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Literal

import msgspec

from engine.history import History
from engine.message_list import synthetic_at
from engine.messages import Message, ToolResultContentBlock, ToolUseContentBlock
from engine.policy.payback import CACHE_READ_FACTOR, CACHE_WRITE_FACTOR, payback_turns
from engine.policy.span import SpanPlan, plan_span
from engine.policy.splice import SUMMARY_OPEN
from engine.tokens import estimate_text_tokens

Strategy = Literal["summarize", "mask", "hybrid", "recompact"]
Action = Literal["summarize", "mask"]

# A result shorter than this is kept: its placeholder would save next to nothing.
MASK_MIN_TOKENS = 80
# hybrid: masking is "enough" when it leaves pending tokens at most this share of the threshold;
# otherwise the next turns would cross it again at once and pay another cache rewrite each time.
MASK_ENOUGH_FRACTION = 0.5
# hybrid: a mask makes no call, but §7's re-cache is not free: the whole transcript after it is
# written once at the cache-write rate (1.25x input) where it was read at 0.1x, and each later turn
# saves only the masked tokens at 0.1x. A mask that removes a third of a transcript pays that back
# in ~20 turns (measured: chatty masks saving 1-5k of 30k never did); past this many turns,
# summarizing (which removes nearly all of it) is the cheaper compaction.
MASK_PAYBACK_TURNS = 3.0
# `mask` alone has no summary to fall back on, so it waits (below the hard cap) only for masks
# that never pay: 10 turns is a mask removing about half of the transcript (11.5 * after / saved
# - 1 at the rates below); the measured chatty masks saving 1-5k of 30k would take 20 to 250.
MASK_ONLY_PAYBACK_TURNS = 10.0
_FIRST_LINE_CHARS = 80


class StrategyPlan(msgspec.Struct, frozen=True):
    """What the configured strategy would do with this turn's history."""

    strategy: str
    action: Action
    span: SpanPlan
    # Tokens the action is expected to remove from the history (a summary's size is a guess:
    # its output budget); what plan_turn compares against the threshold to avoid firing in a loop.
    expected_saved_tokens: int


# engine.policy.tool_output (its many patterns) and hashlib are a mask's, imported when a mask is
# looked for: a plan for a summary, or for nothing (status), never needs them.
def is_masked(content: str) -> bool:
    from engine.policy.tool_output import MASKED_PREFIX

    return content.startswith(MASKED_PREFIX)


def placeholder(
    tool_name: str, content: str, is_error: bool, *, digest: bool = True, keys: bool = False
) -> str:
    """The short text standing for a masked tool result: enough to know what ran and how big it
    was, and a digest to tell two outputs apart; the original stays archived in the store.
    `digest=False`: the same length without hashing (what planning needs to count it).
    `keys`: with the output's key line (see keeps_key_lines)."""
    import hashlib

    from engine.policy.tool_output import MASKED_PREFIX, key_lines

    lines = content.splitlines() or [""]
    first = next((line.strip() for line in lines if line.strip()), "")
    if len(first) > _FIRST_LINE_CHARS:
        first = first[: _FIRST_LINE_CHARS - 1] + "…"
    digest_text = (
        hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        if digest
        else "0" * 8
    )
    status = "error, " if is_error else ""
    kept = " | ".join(key_lines(content)) if keys else ""
    return (
        f"{MASKED_PREFIX}{tool_name}, {status}{len(content):,} chars, {len(lines):,} lines, "
        f"sha256 {digest_text}; first line: {first}" + (f"; key lines: {kept}]" if kept else "]")
    )


def keeps_key_lines(strategy: str) -> bool:
    """Whether `strategy`'s placeholders keep the output's key line (an error, a value, a total;
    tool_output.key_lines). `hybrid` folds its masked copies into a summary later, which
    can then still say what the output said (set A: hybrid 70 -> 77 of 78 facts, with the fold's
    room). `mask` never removes a placeholder: each one's extra ~25 tokens are read on every
    later turn (the mixed workload: 0.63x -> 0.70x of the uncompacted total), so it does not."""
    return strategy == "hybrid"


def _maskable(block: ToolResultContentBlock) -> bool:
    return not is_masked(block.content) and estimate_text_tokens(block.content) >= MASK_MIN_TOKENS


def tool_names(messages: Sequence[Message]) -> dict[str, str]:
    """tool_use id -> tool name, for the placeholders."""
    return {
        block.id: block.name
        for message in messages
        for block in message.content
        if isinstance(block, ToolUseContentBlock)
    }


def mask_message(message: Message, names: Mapping[str, str], *, keys: bool = False) -> Message:
    """A synthetic copy of `message` with its long tool results replaced by placeholders. The id
    is new (the original is archived under its own); tool ids are kept: every pair stays whole."""
    content = tuple(
        ToolResultContentBlock(
            tool_use_id=block.tool_use_id,
            content=placeholder(
                names.get(block.tool_use_id, "tool"), block.content, block.is_error, keys=keys
            ),
            is_error=block.is_error,
        )
        if isinstance(block, ToolResultContentBlock) and _maskable(block)
        else block
        for block in message.content
    )
    metadata = msgspec.structs.replace(message.metadata, synthetic=True)
    return Message(id=f"{message.id}~masked", role=message.role, content=content, metadata=metadata)


def masked_span(history: History, start: int, end: int, *, keys: bool = False) -> list[Message]:
    """messages[start:end] as masked synthetic copies, in order."""
    names = tool_names(history.messages[max(0, start - 1) : end])
    return [mask_message(m, names, keys=keys) for m in history.messages[start:end]]


def mask_savings(history: History, start: int, end: int, *, keys: bool = False) -> int:
    """Tokens masking messages[start:end] would remove (by the estimator; a lower bound when the
    history's own counter is an API's)."""
    names = tool_names(history.messages[max(0, start - 1) : end])
    saved = 0
    for message in history.messages[start:end]:
        for block in message.content:
            if isinstance(block, ToolResultContentBlock) and _maskable(block):
                name = names.get(block.tool_use_id, "tool")
                masked = placeholder(name, block.content, block.is_error, digest=False, keys=keys)
                saved += estimate_text_tokens(block.content) - estimate_text_tokens(masked)
    return max(0, saved)


def mask_payback_turns(transcript_tokens: int, saved_tokens: int) -> float:
    """Turns until masking `saved_tokens` of a `transcript_tokens` history pays back its one-time
    re-cache (§7, engine.policy.payback; a mask makes no call), in multiples of the input price.
    inf when it saves nothing."""
    if saved_tokens <= 0:
        return math.inf
    turns = payback_turns(
        transcript_tokens,
        max(0, transcript_tokens - saved_tokens),
        call_usd=Decimal(0),
        read=CACHE_READ_FACTOR,
        write=CACHE_WRITE_FACTOR,
    )
    return math.inf if turns is None else float(turns)


def mask_pays(strategy: str, transcript_tokens: int, saved_tokens: int) -> bool:
    """Whether a mask of `saved_tokens` is worth its re-cache for `strategy` (see above)."""
    horizon = MASK_PAYBACK_TURNS if strategy == "hybrid" else MASK_ONLY_PAYBACK_TURNS
    return mask_payback_turns(transcript_tokens, saved_tokens) <= horizon


def fold_start(history: History) -> int:
    """§12.4: where a re-compaction's span starts: right after the stable prefix, so the previous
    summary, its fillers and any masked copies are summarized again with the new span."""
    return history.stable_prefix_end


def carried_summary_tokens(history: History, start: int, end: int) -> int:
    """Tokens of earlier summaries inside messages[start:end]: what a fold carries forward.
    A summary is synthetic: the others are passed over on the synthetic flag alone (a stored
    history reads it from its column, decoding nothing)."""
    messages = history.messages
    return sum(
        history.tokens[index]
        for index in range(start, end)
        if synthetic_at(messages, index) and is_summary_message(messages[index])
    )


def is_summary_message(message: Message) -> bool:
    first = message.content[0] if message.content else None
    return message.synthetic and getattr(first, "text", "").startswith(SUMMARY_OPEN)


def summary_ceiling(history: History, span: SpanPlan, ceiling: int) -> int:
    """The most a summary of `span` may take. A fold (§12.4) re-summarizes the earlier summary
    with the new span: under one ceiling the old facts would compete with the new ones for the
    room each had alone, so the earlier summary brings its own room, up to one more ceiling.
    The folded history stays bounded (at most two ceilings of summary, where `summarize` piles
    one up per compaction); a paid summary's pay-back budget still applies below it."""
    carried = carried_summary_tokens(history, span.start, span.compaction_watermark)
    return ceiling + min(carried, ceiling)


def reads_tool_output(strategy: str) -> bool:
    """Whether planning `strategy` reads tool results' text (a mask's savings); the others read
    only roles, tool_use ids, synthetic flags and token counts (store.sql.read_plan_history)."""
    return strategy in ("mask", "hybrid")


def plan_strategy(
    history: History,
    strategy: str,
    preserve_recent_turns: int,
    threshold_tokens: int,
    summary_budget_tokens: int,
) -> StrategyPlan | None:
    """The span and action `strategy` takes this turn; None when it has nothing to work on (no
    span before the preserved tail on a tool-cycle boundary, or, for `mask`, nothing to mask)."""
    if strategy == "summarize":
        span = plan_span(history, preserve_recent_turns)
        return _summary_plan(strategy, span, summary_budget_tokens)
    if strategy == "recompact":
        span = plan_span(history, preserve_recent_turns, start=fold_start(history))
        return _summary_plan(strategy, span, summary_budget_tokens)
    mask_span = plan_span(history, preserve_recent_turns)
    saved = 0
    if mask_span is not None:
        saved = mask_savings(
            history,
            mask_span.start,
            mask_span.compaction_watermark,
            keys=keeps_key_lines(strategy),
        )
    if strategy == "mask":
        return StrategyPlan(strategy, "mask", mask_span, saved) if mask_span and saved else None
    if strategy != "hybrid":
        raise ValueError(f"unknown compaction strategy {strategy!r}")
    if mask_span is not None and saved:
        pending_after = mask_span.pending_history_tokens - saved
        if (
            mask_pays(strategy, history.total_tokens, saved)
            and pending_after <= threshold_tokens * MASK_ENOUGH_FRACTION
        ):
            return StrategyPlan(strategy, "mask", mask_span, saved)
    span = plan_span(history, preserve_recent_turns, start=fold_start(history))
    return _summary_plan(strategy, span, summary_budget_tokens)


def why_nothing_to_do(history: History, strategy: str, preserve_recent_turns: int) -> str:
    """Why plan_strategy returned None, in words (NothingToCompact's reason)."""
    if plan_span(history, preserve_recent_turns) is None:
        return "no complete tool cycle before the preserved tail"
    return f"the {strategy} strategy finds no tool result long enough to mask"


def _summary_plan(strategy: str, span: SpanPlan | None, budget: int) -> StrategyPlan | None:
    # The plain ceiling, also for a fold: planning reads light columns (store.sql), with no text
    # to tell a summary from a masked copy; the call's own budget (summary_call) reads the text.
    if span is None:
        return None
    return StrategyPlan(strategy, "summarize", span, max(0, span.span_tokens - budget))


def __getattr__(name: str) -> object:
    """MASKED_PREFIX, still importable from here, from tool_output when it is asked for."""
    if name == "MASKED_PREFIX":
        from engine.policy.tool_output import MASKED_PREFIX

        return MASKED_PREFIX
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MASK_ENOUGH_FRACTION",
    "MASK_MIN_TOKENS",
    "MASK_ONLY_PAYBACK_TURNS",
    "MASK_PAYBACK_TURNS",
    "StrategyPlan",
    "fold_start",
    "is_masked",
    "is_summary_message",
    "keeps_key_lines",
    "mask_message",
    "mask_payback_turns",
    "mask_pays",
    "mask_savings",
    "masked_span",
    "placeholder",
    "plan_strategy",
    "reads_tool_output",
    "summary_ceiling",
    "tool_names",
    "why_nothing_to_do",
]
