"""The `anthropic:<model>` summarizer (§4): one Messages API call through the real `anthropic` SDK.

The SDK owns the transport: ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL when none are passed, retries
of 408/409/429/5xx and connection errors (honouring retry-after), timeouts. This module owns what
the compaction call needs on top: the prompt, the usage and cost, and sorting every failure into
one ErrorClass (provider-adapter-contract §6) so §3.4 can decide whether to fall back to truncation.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Mapping
from decimal import Decimal
from typing import Any, TypeVar

import anthropic
import httpx2
from anthropic.types import Message as APIMessage

from engine.policy.summary_budget import SummaryCallPrice
from engine.redaction import redact, register_secret
from engine.summarizers.base import (
    ErrorClass,
    SummarizerError,
    SummaryRequest,
    SummaryResult,
    within_deadline,
)
from engine.summarizers.keyless import KEY_HEADERS, sends_no_key
from engine.summarizers.pricing import CallUsage, ModelPrice, cost_of, price_for, usage_cost
from engine.summarizers.request import (
    TRIM_TOOL_OUTPUT_TOKENS,
    MessagesRequest,
    SessionPrefix,
    build_request,
    projected_input,
    usage_of,
)
from engine.summarizers.sdk_logs import redact_logs_of
from engine.summarizers.settings import BASE_URL_VARIABLE, check_base_url

redact_logs_of("anthropic", "anthropic._base_client")

_T = TypeVar("_T")

# The system prompt and the transcript's fence cost tokens the span's own count does not include.
PROMPT_OVERHEAD_TOKENS = 600


# §4: the status decides the class; the SDK's finer subclasses (spend limits...) keep their status.
_STATUS_CLASSES: Mapping[int, ErrorClass] = {
    401: ErrorClass.AUTH,
    402: ErrorClass.AUTH,  # billing: the account must act, like a bad key
    403: ErrorClass.AUTH,
    408: ErrorClass.NETWORK,
    429: ErrorClass.RATE_LIMIT,
}


class AnthropicSummarizer:
    """Summarizes a span with one `messages.create` call; see the Summarizer protocol."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        trim_tool_output_tokens: int = TRIM_TOOL_OUTPUT_TOKENS,
        session_prefix: SessionPrefix | None = None,
        price: ModelPrice | None = None,
        no_key: bool = False,
    ) -> None:
        self.model = model
        self.name = f"anthropic:{model}"
        # engine.summarizers.request: the cheaper call (trimmed outputs, the cached prefix).
        self.trim_tool_output_tokens = trim_tool_output_tokens
        self.session_prefix = session_prefix
        # An unpriced model fails here, before any call is billed without a cost to report;
        # `price` is one the user stated for a model the table does not list (a compatible
        # endpoint, a local model at 0).
        self._price: ModelPrice = price if price is not None else price_for(model)
        self._timeout_s = timeout_s
        self._max_retries = max_retries
        # A key passed in code is a secret like the environment's (engine.redaction).
        register_secret(api_key)
        # The endpoint, checked before the SDK sees it: a bad one is a ConfigError naming where
        # it came from, never a traceback from deep in the HTTP client, never echoed whole.
        if base_url is not None:
            check_base_url(base_url, "summarizer.base_url")
        elif os.environ.get(BASE_URL_VARIABLE):
            check_base_url(os.environ[BASE_URL_VARIABLE], BASE_URL_VARIABLE)
        # The SDK's own resolution for api_key=None: whether any key would be sent.
        secret = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY") or None
        # engine.summarizers.keyless: a local model server gets no key. The SDK is given an
        # empty one, so it reads no other source, and told to omit the headers it would fill.
        keyless = sends_no_key(
            base_url or os.environ.get("ANTHROPIC_BASE_URL"),
            secret or os.environ.get("ANTHROPIC_AUTH_TOKEN"),
            no_key=no_key,
        )
        omit: Any = dict.fromkeys(KEY_HEADERS, anthropic.Omit()) if keyless else None
        self._client = anthropic.AsyncAnthropic(
            # None: the SDK reads ANTHROPIC_API_KEY (then its other sources)
            api_key="" if keyless else api_key,
            base_url=base_url,  # None: the SDK reads ANTHROPIC_BASE_URL
            timeout=timeout_s,
            max_retries=max_retries,
            default_headers=omit,
        )
        # Counting is a best-effort hint with an offline fallback: fail fast instead of backing off.
        self._counting_client = self._client.with_options(max_retries=0)

    def __repr__(self) -> str:
        return (
            f"AnthropicSummarizer(model={self.model!r}, base_url={str(self._client.base_url)!r}, "
            f"timeout_s={self._timeout_s}, max_retries={self._max_retries})"
        )

    @property
    def request_variant(self) -> str | None:
        """How this summarizer's request differs from the plain one: part of the cache key."""
        parts = []
        if self.trim_tool_output_tokens > 0:
            parts.append(f"trim:{self.trim_tool_output_tokens}")
        if self.session_prefix is not None and self.session_prefix.model == self.name:
            parts.append("cached-prefix")
        return "+".join(parts) or None

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        body = build_request(
            request,
            self.name,
            trim_tokens=self.trim_tool_output_tokens,
            session_prefix=self.session_prefix,
        )
        started = time.perf_counter()
        response = await self._within_deadline(self._create(body, request.max_tokens))
        latency_ms = round((time.perf_counter() - started) * 1000)
        return self._result(response, latency_ms)

    def estimate_cost(self, tokens_in: int, max_tokens: int) -> Decimal:
        return cost_of(self._price, tokens_in + PROMPT_OVERHEAD_TOKENS, max_tokens)

    def call_price(self, request: SummaryRequest) -> SummaryCallPrice:
        """What the call for `request` is projected to cost (the request it would really send:
        on the cached prefix, or standalone and trimmed), and the cache rates the session's next
        turns pay for their transcript (the primary model's when the prefix names a priced one,
        else this model's): engine.policy.summary_budget's inputs."""
        body = build_request(
            request,
            self.name,
            trim_tokens=self.trim_tool_output_tokens,
            session_prefix=self.session_prefix,
        )
        fresh, read, written = projected_input(body)
        per = Decimal(1_000_000)
        primary = self._price
        # The session's own model is this one: its rates are this summarizer's, a price the
        # user stated included; another primary model's come from the price table.
        if self.session_prefix is not None and self.session_prefix.model != self.name:
            try:
                primary = price_for(self.session_prefix.model)
            except KeyError:
                pass  # an unpriced primary: this model's rates stand in
        return SummaryCallPrice(
            input_usd=cost_of(
                self._price, fresh, 0, cache_write_tokens=written, cache_read_tokens=read
            ),
            output_per_token=self._price.output_per_mtok / per,
            cache_write_per_token=primary.cache_write_per_mtok / per,
            cache_read_per_token=primary.cache_read_per_mtok / per,
        )

    async def count_tokens(self, text: str) -> int | None:
        """The API's count for `text` as one user message, or None: callers fall back to len/3."""
        try:
            counted = await self._within_deadline(
                self._counting_client.messages.count_tokens(
                    model=self.model, messages=[{"role": "user", "content": text}]
                )
            )
            tokens = counted.input_tokens
        except Exception:
            return None
        return tokens if isinstance(tokens, int) and tokens >= 0 else None

    async def aclose(self) -> None:
        await self._client.close()

    async def _within_deadline(self, call: Awaitable[_T]) -> _T:
        return await within_deadline(call, self._timeout_s, self._failure)

    async def _create(self, body: MessagesRequest, max_tokens: int) -> object:
        extra: dict[str, Any] = {"tools": body.tools} if body.tools else {}
        try:
            return await self._client.messages.create(
                model=self.model,
                max_tokens=max_tokens,
                system=body.system,  # type: ignore[arg-type]
                messages=body.messages,  # type: ignore[arg-type]
                **extra,
            )
        except Exception as exc:
            raise self._error(exc) from exc

    def _result(self, response: object, latency_ms: int) -> SummaryResult:
        # Without strict validation the SDK returns a str for a non-JSON body and a hollow Message
        # (fields None) for JSON of the wrong shape, so the shape is checked here.
        if not isinstance(response, APIMessage):
            raise self._bad_response("response body is not a JSON message")
        # The counts as reported: engine.summary_checks judges them against the request (a
        # count that is missing, negative or absurd is charged at the request's bound).
        reported = _reported_usage(response.usage)
        usage = usage_of(response.usage)
        cost = usage_cost(self._price, usage) if usage is not None else Decimal(0)  # §12.5
        content: Any = response.content
        if not isinstance(content, list):
            raise self._bad_response("response has no content list", billed_cost_usd=cost)
        texts = [
            block.text
            for block in content
            if getattr(block, "type", None) == "text"
            and isinstance(getattr(block, "text", None), str)
        ]
        # An empty text is returned, not raised: the provider billed it, and the manager judges
        # a summary unusable as `validation_failed` (§6), whichever summarizer wrote it.
        text = "".join(texts)
        return SummaryResult(
            text=text,
            model=self.name,
            tokens_in=usage.prompt_tokens if usage is not None else reported.input_tokens,
            tokens_out=reported.output_tokens,
            cost_usd=cost,
            latency_ms=latency_ms,
            usage=reported,
        )

    def _error(self, exc: Exception) -> SummarizerError:
        return self._failure(*classify_exception(exc, timeout_s=self._timeout_s))

    def _bad_response(
        self, message: str, *, billed_cost_usd: Decimal = Decimal(0)
    ) -> SummarizerError:
        return self._failure(ErrorClass.BAD_RESPONSE, message, billed_cost_usd=billed_cost_usd)

    def _failure(
        self, error_class: ErrorClass, message: str, *, billed_cost_usd: Decimal = Decimal(0)
    ) -> SummarizerError:
        # A server may echo what it got: the key, the token, the custom headers' values.
        return SummarizerError(
            error_class, redact(f"{self.name}: {message}"), billed_cost_usd=billed_cost_usd
        )


def _reported_usage(usage: object) -> CallUsage:
    """The response's usage counts exactly as sent (unchecked: any value, None when absent;
    the cache counts 0 when absent, as a response without caching omits them)."""
    return CallUsage(
        input_tokens=getattr(usage, "input_tokens", None),  # type: ignore[arg-type]
        output_tokens=getattr(usage, "output_tokens", None),  # type: ignore[arg-type]
        cache_write_tokens=_or_zero(getattr(usage, "cache_creation_input_tokens", None)),
        cache_read_tokens=_or_zero(getattr(usage, "cache_read_input_tokens", None)),
    )


def _or_zero(value: Any) -> Any:
    return 0 if value is None else value


def classify_exception(exc: BaseException, *, timeout_s: float) -> tuple[ErrorClass, str]:
    """The ErrorClass of one failed call, and a message that names the cause (never a credential).

    An exception that is no provider failure (a bug in the caller or here) is raised again as is.
    """
    if isinstance(exc, anthropic.APIStatusError):
        code = exc.status_code
        error_class = _STATUS_CLASSES.get(code) or (
            ErrorClass.OVERLOADED if code >= 500 else ErrorClass.CAPABILITY
        )
        detail = _api_message(exc) or exc.response.reason_phrase
        return error_class, f"HTTP {code} {exc.type or 'error'}: {detail}"
    if isinstance(exc, anthropic.APITimeoutError):
        return ErrorClass.NETWORK, f"timeout: no answer within {timeout_s}s"
    if isinstance(exc, anthropic.APIConnectionError):
        cause = _transport_error(exc)
        # The body ended before its Content-Length: the server answered, but unusably.
        if isinstance(cause, httpx2.RemoteProtocolError) and "message body" in str(cause):
            return ErrorClass.BAD_RESPONSE, f"response body truncated: {cause}"
        if isinstance(cause, httpx2.DecodingError):
            return ErrorClass.BAD_RESPONSE, f"response body undecodable: {cause}"
        return ErrorClass.NETWORK, f"connection failed: {_describe_connection_failure(exc)}"
    if isinstance(exc, anthropic.APIResponseValidationError | json.JSONDecodeError):
        return ErrorClass.BAD_RESPONSE, f"response body is not a valid message: {exc}"
    if isinstance(exc, anthropic.CredentialsError):
        return ErrorClass.AUTH, f"credentials unavailable: {type(exc).__name__}"
    if isinstance(exc, TypeError) and "authentication method" in str(exc):
        # The SDK raises TypeError before sending when no key, token or profile is configured.
        return ErrorClass.AUTH, "no credentials: set ANTHROPIC_API_KEY or pass api_key"
    if isinstance(exc, anthropic.AnthropicError):
        return ErrorClass.BAD_RESPONSE, f"{type(exc).__name__}: {exc}"
    raise exc  # not a provider failure: a bug, which must not pass for an outage


def _api_message(exc: anthropic.APIStatusError) -> str:
    message = exc.api_message
    return message if isinstance(message, str) else ""


def _transport_error(exc: BaseException) -> BaseException:
    """The httpx2 error under an SDK connection error (else the deepest cause)."""
    seen: set[int] = set()
    current = exc
    while current.__cause__ is not None and id(current.__cause__) not in seen:
        seen.add(id(current))
        current = current.__cause__
        if isinstance(current, httpx2.HTTPError):
            return current  # below it is httpcore detail saying the same
    return current


def _describe_connection_failure(exc: BaseException) -> str:
    """httpx2 says "All connection attempts failed"; the errno deep under it says "refused"."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno:
            return f"{os.strerror(current.errno).lower()} ({current})"
        current = current.__cause__ or current.__context__
    return str(_transport_error(exc)) or type(exc).__name__
