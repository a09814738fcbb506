"""The summarizer interface (§4): one call that turns a span into summary text, with its usage."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Protocol, TypeVar, runtime_checkable

import msgspec

from engine.messages import Message
from engine.record import CallUsage

# The offline summarizer's compaction_model name (engine.summarizers.extractive).
EXTRACTIVE_MODEL = "local:extractive"


class ErrorClass(enum.StrEnum):
    """provider-adapter-contract §6 classes, as the compaction call sees them."""

    NETWORK = "network"  # refused, reset, DNS, timeout
    AUTH = "auth"  # 401 / 403
    RATE_LIMIT = "rate_limit"  # 429 after retries
    OVERLOADED = "overloaded"  # 529 / 5xx after retries
    CAPABILITY = "capability"  # 400 / 404 / 413: the request cannot be served by this model
    BAD_RESPONSE = "bad_response"  # a body we cannot parse, or no usable text


def status_error_class(code: int) -> ErrorClass:
    """The class of an HTTP error status after the SDK's own retries (provider-adapter-contract
    §6): 402 is billing, which the account must act on like a bad key."""
    if code in (401, 402, 403):
        return ErrorClass.AUTH
    if code == 408:
        return ErrorClass.NETWORK
    if code == 429:
        return ErrorClass.RATE_LIMIT
    return ErrorClass.OVERLOADED if code >= 500 else ErrorClass.CAPABILITY


class SummarizerError(Exception):
    """A failed compaction call; `billed_cost_usd` is what the provider charged anyway."""

    def __init__(
        self, error_class: ErrorClass, message: str, *, billed_cost_usd: Decimal = Decimal(0)
    ) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.billed_cost_usd = billed_cost_usd


class SummaryRequest(msgspec.Struct, frozen=True):
    span: tuple[Message, ...]
    prompt_version: str
    max_tokens: int
    instructions: str | None = None  # the user's words for a manual compaction
    # The whole active history and where the span sits in it: what a summarizer needs to send the
    # call on the session's own cached prefix (engine.summarizers.request). Others ignore it.
    history: tuple[Message, ...] = ()
    span_start: int = 0


class SummaryResult(msgspec.Struct, frozen=True):
    text: str
    model: str  # the full "provider:model" name
    tokens_in: int
    tokens_out: int
    cost_usd: Decimal
    latency_ms: int
    usage: CallUsage | None = None  # the provider's own counts, when it reported them


@runtime_checkable
class Summarizer(Protocol):
    """`name` is the compaction_model string this summarizer serves, e.g. "local:extractive"."""

    name: str

    async def summarize(self, request: SummaryRequest) -> SummaryResult: ...

    def estimate_cost(self, tokens_in: int, max_tokens: int) -> Decimal:
        """Upper bound of what one call would cost: the preview shows it, the budget checks it."""
        ...

    async def aclose(self) -> None: ...


_T = TypeVar("_T")


async def within_deadline(
    call: Awaitable[_T], timeout_s: float, failure: Callable[[ErrorClass, str], SummarizerError]
) -> _T:
    """`call` bounded as a whole by timeout_s: an SDK's timeout is per read (a server that
    trickles a byte at a time never trips it) and its retries each get a new one. On the
    deadline the call is cancelled, which closes its connection."""
    import asyncio  # only a summary call pays for it (the status line loads this module)

    try:
        return await asyncio.wait_for(call, timeout_s)
    except TimeoutError:
        raise failure(
            ErrorClass.NETWORK,
            f"timeout: no complete answer within {timeout_s}s (the whole call, retries "
            "included; summarizer.timeout_s)",
        ) from None
