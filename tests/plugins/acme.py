"""A provider adapter as metis dev or a team would write one: any object with `name`,
`summarize`, `estimate_cost` and `aclose` is a Summarizer (engine.summarizers.base). This one
"calls" a provider that bills a flat fee per call and answers with the span's user asks."""

from __future__ import annotations

from decimal import Decimal

from engine.summarizers.base import SummaryRequest, SummaryResult
from engine.tokens import estimate_text_tokens

CALLS: list[str] = []  # every model name a made summarizer was asked to summarize for


class AcmeSummarizer:
    def __init__(self, model: str, fee_usd: str = "0.001") -> None:
        self.name = model  # served under whatever name the config gives it
        self.fee = Decimal(fee_usd)

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        CALLS.append(self.name)
        asks = [m.text() for m in request.span if m.role.value == "user" and m.text()]
        text = "ACME SUMMARY\n" + "\n".join(f"- {ask[:80]}" for ask in asks[:10])
        return SummaryResult(
            text=text,
            model=self.name,
            tokens_in=sum(estimate_text_tokens(m.text()) for m in request.span),
            tokens_out=estimate_text_tokens(text),
            cost_usd=self.fee,
            latency_ms=1,
        )

    def estimate_cost(self, tokens_in: int, max_tokens: int) -> Decimal:
        return self.fee

    async def aclose(self) -> None:
        return None


def make(model: str, **options: str) -> AcmeSummarizer:
    """The factory an import path names: `summarizer: {import: "tests.plugins.acme:make"}`."""
    return AcmeSummarizer(model, **options)


def broken(model: str) -> object:
    raise RuntimeError("acme is down for maintenance")


def not_a_summarizer(model: str) -> object:
    return object()


def wrong_name(model: str) -> AcmeSummarizer:
    return AcmeSummarizer("acme:other")
