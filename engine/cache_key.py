"""The compaction cache key (§5.1): sha256 of the msgpack-encoded canonical span and knobs.

The canonical form is a stability contract: byte-identical content gives the identical key, and
message ids, timestamps, cost stamps (all of `MessageMetadata`) never change it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
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


class _Canonical(msgspec.Struct):
    """canonicalize()'s map as a struct: encoded as {"role": ..., "content": [...]} in this field
    order, with tool-input dict keys sorted (order="deterministic"), in one encoder call."""

    role: str
    content: tuple[Any, ...]


_msgpack_encoder = msgspec.msgpack.Encoder(order="deterministic")
_msgpack_encoder_unsorted = msgspec.msgpack.Encoder()
_PACK = msgpack.Packer().pack
_MESSAGE_HEAD = msgpack.Packer().pack_map_header(2) + _PACK("role")
_CONTENT_KEY = _PACK("content")


def canonical_message_bytes(message: Message) -> bytes:
    """One message's canonical form, msgpack-encoded: byte-identical to what `msgpack.dumps` emits
    for `canonicalize(message)` inside the span, so these can be computed once per message (the
    History keeps them) and joined, instead of re-encoding the whole span for every key."""
    # The outer map keeps canonicalize()'s key order (role, content), as msgpack.dumps does; the
    # blocks go through the sorting encoder, which orders tool-input keys like to_builtins.
    try:
        return _msgpack_encoder.encode(_Canonical(message.role.value, message.content))
    except TypeError:
        content = _msgpack_encoder_unsorted.encode(message.content)
        return b"".join((_MESSAGE_HEAD, _PACK(message.role.value), _CONTENT_KEY, content))


Buffer = bytes | bytearray | memoryview


def _pieces(
    messages: Iterable[Message],
    *,
    summarization_model: str,
    summarization_prompt_version: str,
    summarization_max_tokens: int,
    instructions: str | None = None,
    span_bytes: Buffer | None = None,
    request_variant: str | None = None,
) -> tuple[bytes, Buffer, bytes]:
    """§5.1's `msgpack.dumps({...})` in three pieces: the bytes before the span's messages, the
    messages' canonical bytes back to back, the bytes after. Any iterable is read once."""
    if isinstance(summarization_max_tokens, bool) or not isinstance(summarization_max_tokens, int):
        # a bool or float would encode differently from the int it resembles: a silent miss
        raise TypeError("summarization_max_tokens must be an int")
    rest: dict[str, Any] = {
        "summarization_model": summarization_model,
        "summarization_prompt_version": summarization_prompt_version,
        "summarization_max_tokens": summarization_max_tokens,
    }
    if instructions:
        # A manual compaction's instructions change the summary, so they must change the key;
        # absent, the payload is exactly the spec's.
        rest["summarization_instructions"] = instructions
    if request_variant:
        # A request that differs from the plain one (engine.summarizers.request: trimmed tool
        # outputs, the session's cached prefix) may summarize differently; absent, the spec's.
        rest["summarization_request"] = request_variant
    if span_bytes is None:
        encoded = [canonical_message_bytes(m) for m in messages]
        count, span_bytes = len(encoded), b"".join(encoded)
    else:
        count = len(messages if isinstance(messages, Sequence) else list(messages))
    packer = msgpack.Packer()
    head = packer.pack_map_header(len(rest) + 1) + packer.pack("messages")
    head += packer.pack_array_header(count)
    tail = b"".join(packer.pack(key) + packer.pack(value) for key, value in rest.items())
    return head, span_bytes, tail


def canonical_bytes(messages: Iterable[Message], **knobs: Any) -> bytes:
    """The exact bytes of §5.1's `msgpack.dumps({...})`, which compute_cache_key hashes; takes
    its keywords. The span array is the messages' canonical bytes back to back (`span_bytes` when
    the caller already has them: History.canonical_view)."""
    return b"".join(_pieces(messages, **knobs))


def compute_cache_key(
    messages: Iterable[Message],
    *,
    summarization_model: str,
    summarization_prompt_version: str,
    summarization_max_tokens: int,
    instructions: str | None = None,
    span_bytes: Buffer | None = None,
    request_variant: str | None = None,
) -> str:
    """§5.1: sha256 hex of `canonical_bytes`, hashed piece by piece so a long span's bytes are
    never copied into one buffer."""
    digest = hashlib.sha256()
    for piece in _pieces(
        messages,
        summarization_model=summarization_model,
        summarization_prompt_version=summarization_prompt_version,
        summarization_max_tokens=summarization_max_tokens,
        instructions=instructions,
        span_bytes=span_bytes,
        request_variant=request_variant,
    ):
        digest.update(piece)
    return digest.hexdigest()
