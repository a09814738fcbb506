"""A summarizer's answer is untrusted input (§4.4): its text is held to the max_tokens the request
asked for, and its usage and cost to what the request could have cost. Pure functions, applied to
every summarizer's answer alike (anthropic, a plugin, the offline one) by
engine.compaction.summary_call.

- Summary length: counted by the engine's own token counter. A longer summary is CUT to the
  budget (at a line end where one is near), with a last line saying so, and the answer carries
  the note "summary_over_budget: ...". The call was paid for, so the summary is used, but it never
  brings more tokens into the history than the budget the planner counted on.
- Usage and cost: a count that is not a whole number of 0 or more, output over the request's
  max_tokens, input over what the request's bytes could hold (a byte-level tokenizer never makes
  more tokens than bytes), a summary far longer than its reported output could spell, or a cost
  that is not an amount or is over the most the request could cost: the provider's figures are
  not used. The call is charged at the bound the request set (its input as the engine counts it,
  and max_tokens of output, at the model's price) and the answer carries "usage_implausible: ...".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal

import msgspec

from engine.policy.summary_budget import SummaryCallPrice
from engine.summarizers.base import SummarizerError, SummaryRequest, SummaryResult
from engine.summarizers.pricing import CallUsage

SUMMARY_OVER_BUDGET = "summary_over_budget"
USAGE_IMPLAUSIBLE = "usage_implausible"

# No token of any tokenizer in use spells more than this many bytes: a summary longer than this
# per reported output token contradicts its usage. Also the most chars a cut looks at per token.
MAX_BYTES_PER_TOKEN = 64
# Room for what the provider adds around the request (its chat template) beyond the bytes sent.
INPUT_OVERHEAD_TOKENS = 4_096


class CallBounds(msgspec.Struct, frozen=True, kw_only=True):
    """What one request set: the figures an answer is checked against."""

    max_tokens: int  # the request's max_tokens: the summary's budget and the output bound
    input_tokens: int  # the request's input as the engine counts it
    max_input_tokens: int  # the most input tokens the request's bytes could hold
    bound_cost_usd: Decimal  # input_tokens and max_tokens at the model's price
    cost_ceiling_usd: Decimal | None = None  # the most the call could cost (None: unknown)


class CheckedAnswer(msgspec.Struct, frozen=True):
    """An answer after the checks: the figures to record and charge, and what was done."""

    text: str
    tokens_in: int
    tokens_out: int
    cost_usd: Decimal
    usage: CallUsage | None
    latency_ms: int = 0
    notes: tuple[str, ...] = ()


def input_token_bound(request_bytes: int) -> int:
    """The most input tokens a request of `request_bytes` UTF-8 bytes can be billed for."""
    return max(0, request_bytes) + INPUT_OVERHEAD_TOKENS


def request_bounds(
    request: SummaryRequest,
    price: SummaryCallPrice,
    input_tokens: int,
    estimate: Callable[[int, int], object] | None = None,
    extra_bytes: int = 0,
) -> CallBounds:
    """The bounds of one call for `request`: `price` is the summarizer's projection of it
    (engine.compaction.summary_call.call_price), `input_tokens` the engine's count of its input,
    `estimate` the summarizer's estimate_cost (an upper bound of a call's cost by the protocol),
    `extra_bytes` what it sends beyond the request (a session's own system prompt and tools)."""
    max_tokens = request.max_tokens
    max_input = input_token_bound(len(msgspec.json.encode(request)) + extra_bytes)
    bound = price.input_usd + max_tokens * price.output_per_token
    rates = [price.cache_write_per_token, price.cache_read_per_token]
    ceiling: Decimal | None = bound + max_input * max(rates)
    if estimate is not None:
        try:
            at_engine_count = amount(estimate(input_tokens, max_tokens))
            step = 1_000
            base = amount(estimate(input_tokens, 0))
            per_input = (amount(estimate(input_tokens + step, 0)) - base) / step
            bound = max(bound, at_engine_count)
            # Every byte sent billed as a cache write (1.25x input), max_tokens out.
            ceiling = max(
                bound + max_input * max([*rates, per_input * Decimal("1.25")]),
                amount(estimate(max_input, max_tokens)) * Decimal("1.25"),
            )
        except Exception:  # a plugin's estimate that raises or is no amount: no ceiling from it
            ceiling = None
    return CallBounds(
        max_tokens=max_tokens,
        input_tokens=input_tokens,
        max_input_tokens=max_input,
        bound_cost_usd=bound,
        cost_ceiling_usd=ceiling,
    )


def summarizer_bounds(
    summarizer: object, request: SummaryRequest, price: SummaryCallPrice, input_tokens: int
) -> CallBounds:
    """request_bounds for a call by `summarizer` (its estimate_cost, the session prefix it may
    send before the request)."""
    prefix = getattr(summarizer, "session_prefix", None)
    try:
        extra = len(msgspec.json.encode(prefix)) if prefix is not None else 0
    except (TypeError, msgspec.EncodeError):
        extra = 0
    estimate = getattr(summarizer, "estimate_cost", None)
    return request_bounds(
        request, price, input_tokens, estimate if callable(estimate) else None, extra
    )


def amount(value: object) -> Decimal:
    """A figure a summarizer gave as a finite Decimal of 0 or more, or ValueError."""
    if isinstance(value, bool) or not isinstance(value, Decimal | int | float):
        raise ValueError(f"not an amount: {value!r}")
    amount = Decimal(str(value))
    if not amount.is_finite() or amount < 0:
        raise ValueError(f"not an amount: {value!r}")
    return amount


def cut_marker(max_tokens: int) -> str:
    return f"\n[summary cut to {max_tokens:,} tokens]"


def cut_to_budget(text: str, max_tokens: int, count: Callable[[str], int]) -> tuple[str, int]:
    """`text` if `count(text)` is within `max_tokens`, else its longest head that fits with the
    cut marker after it (ending at a line end when one is in the last quarter); and the tokens
    `text` counted (at most the tokens of its first MAX_BYTES_PER_TOKEN chars per token)."""
    window = text[: (max(0, max_tokens) + 1) * MAX_BYTES_PER_TOKEN]
    had = count(window)
    if len(window) == len(text) and had <= max_tokens:
        return text, had
    marker = cut_marker(max_tokens)
    if count(marker) > max_tokens:
        marker = ""
    low, high = 0, len(window)  # count(window[:low] + marker) <= max_tokens holds for low
    while low < high:
        mid = (low + high + 1) // 2
        if count(window[:mid] + marker) <= max_tokens:
            low = mid
        else:
            high = mid - 1
    head = window[:low]
    line_end = head.rfind("\n")
    if line_end >= len(head) * 3 // 4:
        head = head[:line_end]
    return head.rstrip() + marker, max(had, max_tokens + 1)


# Whatever a reader could take for the §4.2 wrapper's tag (engine.policy.splice): "<", then
# anything but letters and angle brackets, then the tag's name, in any case.
_WRAPPER_LIKE = re.compile(
    r"[<\uFF1C\uFE64]([^A-Za-z<>\uFF1C\uFF1E]{0,16}COMPACTION_SUMMARY)", re.I
)


def wrapper_safe(summary: str) -> str:
    """`summary` with every tag-like "<...COMPACTION_SUMMARY" made inert ("&lt;/COMPACTION_..."):
    the summary spliced into the wrapper can neither close it nor forge another."""
    return _WRAPPER_LIKE.sub(r"&lt;\1", summary)


def _is_count(value: object) -> bool:
    return type(value) is int and value >= 0


def usage_problem(
    tokens_in: object,
    tokens_out: object,
    usage: CallUsage | None,
    text: str,
    bounds: CallBounds,
) -> str | None:
    """What makes the reported usage impossible for this request and text, or None."""
    for name, value in (("input_tokens", tokens_in), ("output_tokens", tokens_out)):
        if not _is_count(value):
            return f"{name} {_short(value)} is not a count of 0 or more"
    assert isinstance(tokens_in, int) and isinstance(tokens_out, int)
    if usage is not None:
        for name in CallUsage.__struct_fields__:
            value = getattr(usage, name)
            if not _is_count(value):
                return f"usage.{name} {_short(value)} is not a count of 0 or more"
        tokens_in = max(tokens_in, usage.prompt_tokens)
        tokens_out = max(tokens_out, usage.output_tokens)
    if tokens_out > bounds.max_tokens:
        return f"output_tokens {tokens_out:,} over the request's max_tokens {bounds.max_tokens:,}"
    if tokens_in > bounds.max_input_tokens:
        return (
            f"input_tokens {tokens_in:,} over the {bounds.max_input_tokens:,} the request's "
            "size could hold"
        )
    if usage is not None:
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_BYTES_PER_TOKEN * (tokens_out + 1):
            return f"output_tokens {tokens_out:,} for a summary of {size:,} bytes"
    return None


def cost_problem(cost: object, bounds: CallBounds) -> str | None:
    """What makes the reported cost impossible for this request, or None."""
    if isinstance(cost, bool) or not isinstance(cost, Decimal | int):
        return f"cost {_short(cost)} is not an amount"
    amount = Decimal(cost)
    if not amount.is_finite() or amount < 0:
        return f"cost {_short(cost)} is not an amount of 0 or more"
    ceiling = bounds.cost_ceiling_usd
    if ceiling is not None and amount > ceiling:
        return f"cost ${amount} over the ${ceiling} the request could cost"
    return None


def charged_at_bound(problem: str, bounds: CallBounds) -> str:
    bound = bounds.bound_cost_usd
    return f"{USAGE_IMPLAUSIBLE}: {problem}; charged at the request's bound ${bound}"


def check_answer(
    result: SummaryResult, bounds: CallBounds, count: Callable[[str], int]
) -> CheckedAnswer:
    """`result` held to `bounds`: its text cut to max_tokens, its usage and cost replaced by the
    bound when they cannot be true. `count` is the engine's counter for a summary's text."""
    raw = result.text if isinstance(result.text, str) else ""
    text, had = cut_to_budget(wrapper_safe(raw), bounds.max_tokens, count)
    notes: list[str] = []
    if had > bounds.max_tokens:
        more = "+" if len(raw) > (bounds.max_tokens + 1) * MAX_BYTES_PER_TOKEN else ""
        notes.append(
            f"{SUMMARY_OVER_BUDGET}: summary cut to {bounds.max_tokens:,} tokens "
            f"(it had {had:,}{more})"
        )
    usage = result.usage if isinstance(result.usage, CallUsage) else None
    latency = result.latency_ms if _is_count(result.latency_ms) else 0
    problem = usage_problem(result.tokens_in, result.tokens_out, usage, raw, bounds)
    problem = problem or cost_problem(result.cost_usd, bounds)
    if problem is None:
        assert isinstance(result.tokens_in, int) and isinstance(result.tokens_out, int)
        return CheckedAnswer(
            text,
            result.tokens_in,
            result.tokens_out,
            Decimal(result.cost_usd),
            usage,
            latency,
            tuple(notes),
        )
    notes.append(charged_at_bound(problem, bounds))
    return CheckedAnswer(
        text, bounds.input_tokens, count(text), bounds.bound_cost_usd, None, latency, tuple(notes)
    )


def check_failure(error: SummarizerError, bounds: CallBounds) -> SummarizerError:
    """A failed call's billed cost held to `bounds` like an answer's: charged at the bound, and
    the message saying so, when what it reports cannot be true."""
    problem = cost_problem(error.billed_cost_usd, bounds)
    if problem is None:
        return error
    checked = SummarizerError(
        error.error_class,
        f"{error}; {charged_at_bound(problem, bounds)}",
        billed_cost_usd=bounds.bound_cost_usd,
    )
    checked.__cause__ = error.__cause__
    return checked


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
