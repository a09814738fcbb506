"""The `openai:<model>` summarizer (§4): one chat completions call through the official `openai`
SDK, for any OpenAI-compatible endpoint (vLLM, llama.cpp's server, Ollama, LM Studio, OpenAI).

The SDK is an optional extra (`pip install 'metis-compaction-tui[openai]'`); make_summarizer says
so in one line when it is missing. No price table lists these models: the price is the one stated
in `summarizer.price` (0 for a local model). The endpoint is `summarizer.base_url`, else the SDK's
OPENAI_BASE_URL; the key is OPENAI_API_KEY, and a local endpoint gets none
(engine.summarizers.keyless).

The request is the standalone one (engine.summarizers.request): the versioned prompt as the system
message, the (trimmed) span as one user message of labelled text. Failures are sorted into the
same ErrorClass as the Anthropic summarizer's, so §3.4's fallback decides alike.
"""

from __future__ import annotations

import json
import os
import time
from decimal import Decimal
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from engine.policy.summary_budget import SummaryCallPrice
from engine.redaction import redact, register_secret
from engine.summarizers.base import (
    ErrorClass,
    SummarizerError,
    SummaryRequest,
    SummaryResult,
    status_error_class,
    within_deadline,
)
from engine.summarizers.keyless import KEY_HEADERS, sends_no_key
from engine.summarizers.pricing import CallUsage, ModelPrice, cost_of, usage_cost
from engine.summarizers.request import TRIM_TOOL_OUTPUT_TOKENS, standalone_request
from engine.summarizers.sdk_logs import redact_logs_of
from engine.tokens import estimate_text_tokens

OPENAI_PREFIX = "openai:"
# The system prompt and the transcript's fence cost tokens the span's own count does not include.
PROMPT_OVERHEAD_TOKENS = 600
# The SDK will not build a client without some key. A keyless call omits the Authorization
# header on every request, so this placeholder never leaves the process.
_NO_KEY_PLACEHOLDER = "no-key-sent"
_OMIT_KEY = dict.fromkeys(KEY_HEADERS, openai.Omit())

redact_logs_of("openai", "openai._base_client")


class OpenAISummarizer:
    """Summarizes a span with one `chat.completions.create` call; see the Summarizer protocol."""

    def __init__(
        self,
        model: str,
        *,
        price: ModelPrice,
        api_key: str | None = None,
        base_url: str | None = None,
        no_key: bool = False,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        trim_tool_output_tokens: int = TRIM_TOOL_OUTPUT_TOKENS,
    ) -> None:
        self.model = model
        self.name = f"{OPENAI_PREFIX}{model}"
        self.trim_tool_output_tokens = trim_tool_output_tokens
        self._price = price
        self._timeout_s = timeout_s
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY") or None
        keyless = sends_no_key(base_url or os.environ.get("OPENAI_BASE_URL"), key, no_key=no_key)
        register_secret(key)  # a key passed in code is a secret like the environment's
        self._extra_headers: dict[str, Any] | None = _OMIT_KEY if keyless else None
        self._client: openai.AsyncOpenAI | None = None
        if keyless or key:
            self._client = openai.AsyncOpenAI(
                api_key=_NO_KEY_PLACEHOLDER if keyless else key,
                base_url=base_url,  # None: the SDK reads OPENAI_BASE_URL
                timeout=timeout_s,
                max_retries=max_retries,
            )

    def __repr__(self) -> str:
        where = "unset" if self._client is None else str(self._client.base_url)
        return f"OpenAISummarizer(model={self.model!r}, base_url={where!r})"

    @property
    def request_variant(self) -> str | None:
        """How this summarizer's request differs from the plain one: part of the cache key."""
        trim = self.trim_tool_output_tokens
        return f"trim:{trim}" if trim > 0 else None

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        body = standalone_request(request, self.trim_tool_output_tokens)
        messages = [
            {"role": "system", "content": body.system},
            *({"role": m["role"], "content": m["content"]} for m in body.messages),
        ]
        started = time.perf_counter()
        create = self._create(messages, request.max_tokens)
        response = await within_deadline(create, self._timeout_s, self._failure)
        latency_ms = round((time.perf_counter() - started) * 1000)
        return self._result(response, latency_ms)

    def estimate_cost(self, tokens_in: int, max_tokens: int) -> Decimal:
        return cost_of(self._price, tokens_in + PROMPT_OVERHEAD_TOKENS, max_tokens)

    def call_price(self, request: SummaryRequest) -> SummaryCallPrice:
        """The call's projected input cost (the trimmed standalone request) and this model's
        rates: engine.policy.summary_budget's inputs."""
        body = standalone_request(request, self.trim_tool_output_tokens)
        text = str(body.system) + "".join(str(m["content"]) for m in body.messages)
        per = Decimal(1_000_000)
        return SummaryCallPrice(
            input_usd=cost_of(self._price, estimate_text_tokens(text), 0),
            output_per_token=self._price.output_per_mtok / per,
            cache_write_per_token=self._price.cache_write_per_mtok / per,
            cache_read_per_token=self._price.cache_read_per_mtok / per,
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()

    async def _create(self, messages: list[dict[str, Any]], max_tokens: int) -> object:
        if self._client is None:
            raise self._failure(
                ErrorClass.AUTH,
                "no credentials: set OPENAI_API_KEY, or point summarizer.base_url at a local "
                "server (one on this machine needs no key)",
            )
        try:
            return await self._client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                # `max_tokens`, not `max_completion_tokens`: the one every compatible server reads.
                max_tokens=max_tokens,
                extra_headers=self._extra_headers,
            )
        except Exception as exc:
            raise self._failure(*classify_exception(exc, timeout_s=self._timeout_s)) from exc

    def _result(self, response: object, latency_ms: int) -> SummaryResult:
        # Without strict validation the SDK returns what it could parse: the shape is checked.
        if not isinstance(response, ChatCompletion):
            raise self._failure(ErrorClass.BAD_RESPONSE, "response body is not a chat completion")
        usage = usage_of(response.usage)
        if usage is None:
            raise self._failure(ErrorClass.BAD_RESPONSE, "response has no usable usage counts")
        cost = usage_cost(self._price, usage)
        choices: Any = response.choices
        if not isinstance(choices, list) or not choices:
            raise self._failure(
                ErrorClass.BAD_RESPONSE, "response has no choices", billed_cost_usd=cost
            )
        content = getattr(getattr(choices[0], "message", None), "content", None)
        # An empty text is returned, not raised: it was billed, and the manager judges a summary
        # unusable as `validation_failed` (§6), whichever summarizer wrote it.
        text = content if isinstance(content, str) else ""
        return SummaryResult(
            text=text,
            model=self.name,
            tokens_in=usage.prompt_tokens,
            tokens_out=usage.output_tokens,
            cost_usd=cost,
            latency_ms=latency_ms,
            usage=usage,
        )

    def _failure(
        self, error_class: ErrorClass, message: str, *, billed_cost_usd: Decimal = Decimal(0)
    ) -> SummarizerError:
        # A server may echo what it got: the key, and any other credential (engine.redaction).
        return SummarizerError(
            error_class, redact(f"{self.name}: {message}"), billed_cost_usd=billed_cost_usd
        )


def usage_of(usage: object) -> CallUsage | None:
    """A chat completion's usage as the four kinds priced apart (§12.5): `prompt_tokens` counts
    the cached part too, which `prompt_tokens_details.cached_tokens` gives (absent: none)."""
    prompt = getattr(usage, "prompt_tokens", None)
    output = getattr(usage, "completion_tokens", None)
    cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", None) or 0
    counts = (prompt, output, cached)
    if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
        return None
    assert isinstance(prompt, int) and isinstance(output, int) and isinstance(cached, int)
    if cached > prompt:
        return None
    return CallUsage(input_tokens=prompt - cached, cache_read_tokens=cached, output_tokens=output)


def classify_exception(exc: BaseException, *, timeout_s: float) -> tuple[ErrorClass, str]:
    """The ErrorClass of one failed call and a message naming the cause (never a credential).
    An exception that is no provider failure (a bug) is raised again as is."""
    if isinstance(exc, openai.APIStatusError):
        detail = exc.message if isinstance(exc.message, str) else ""
        return status_error_class(exc.status_code), f"HTTP {exc.status_code}: {detail}"
    if isinstance(exc, openai.APITimeoutError):
        return ErrorClass.NETWORK, f"timeout: no answer within {timeout_s}s"
    if isinstance(exc, openai.APIConnectionError):
        return ErrorClass.NETWORK, f"connection failed: {_deepest(exc)}"
    if isinstance(exc, openai.APIResponseValidationError | json.JSONDecodeError):
        return ErrorClass.BAD_RESPONSE, f"response body is not a valid completion: {exc}"
    if isinstance(exc, openai.OpenAIError):
        return ErrorClass.BAD_RESPONSE, f"{type(exc).__name__}: {exc}"
    raise exc


def _deepest(exc: BaseException) -> str:
    """The innermost cause's words ("Connection refused"), else the SDK's own."""
    seen: set[int] = set()
    current: BaseException = exc
    while current.__cause__ is not None and id(current.__cause__) not in seen:
        seen.add(id(current))
        current = current.__cause__
    return str(current) or str(exc) or type(exc).__name__
