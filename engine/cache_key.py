"""The compaction cache key (§5.1): sha256 of the msgpack-encoded canonical span and knobs.

The canonical form is a stability contract: byte-identical content gives the identical key, and
message ids, timestamps, cost stamps (all of `MessageMetadata`) never change it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import msgpack
import msgspec

from engine.messages import Message


def _blocks_to_builtins(content: object) -> Any:
    # Blocks in their msgspec-encoded form, tag field "type" included (§5.1). Dicts (tool inputs)
    # are key-sorted so {"a", "b"} and {"b", "a"} are the same content; an input whose keys cannot
    # be sorted (mixed key types) keeps its insertion order.
    try:
        return msgspec.to_builtins(content, order="deterministic")
    except TypeError:
        return msgspec.to_builtins(content)


def canonicalize(message: Message) -> dict[str, Any]:
    """§5.1 `_canonicalize`: role and content blocks; the id and all metadata are dropped."""
    return {"role": message.role.value, "content": _blocks_to_builtins(message.content)}


def _canonical_span(messages: Iterable[Message]) -> list[dict[str, Any]]:
    # One to_builtins call for the whole span (a 10,000-message span costs one pass), with the
    # same result as canonicalize() per message; the per-message path only for unsortable inputs.
    span = messages if isinstance(messages, (list, tuple)) else list(messages)
    try:
        contents = msgspec.to_builtins([m.content for m in span], order="deterministic")
    except TypeError:
        return [canonicalize(m) for m in span]
    return [{"role": m.role.value, "content": c} for m, c in zip(span, contents, strict=True)]


def canonical_bytes(
    messages: Iterable[Message],
    *,
    summarization_model: str,
    summarization_prompt_version: str,
    summarization_max_tokens: int,
    instructions: str | None = None,
) -> bytes:
    """The exact bytes `compute_cache_key` hashes (one pass over the span)."""
    if isinstance(summarization_max_tokens, bool) or not isinstance(summarization_max_tokens, int):
        # a bool or float would encode differently from the int it resembles: a silent miss
        raise TypeError("summarization_max_tokens must be an int")
    payload: dict[str, Any] = {
        "messages": _canonical_span(messages),
        "summarization_model": summarization_model,
        "summarization_prompt_version": summarization_prompt_version,
        "summarization_max_tokens": summarization_max_tokens,
    }
    if instructions:
        # A manual compaction's instructions change the summary, so they must change the key;
        # absent, the payload is exactly the spec's.
        payload["summarization_instructions"] = instructions
    return msgpack.dumps(payload)


def compute_cache_key(
    messages: Iterable[Message],
    *,
    summarization_model: str,
    summarization_prompt_version: str,
    summarization_max_tokens: int,
    instructions: str | None = None,
) -> str:
    """§5.1: sha256 hex of `canonical_bytes`."""
    data = canonical_bytes(
        messages,
        summarization_model=summarization_model,
        summarization_prompt_version=summarization_prompt_version,
        summarization_max_tokens=summarization_max_tokens,
        instructions=instructions,
    )
    return hashlib.sha256(data).hexdigest()
