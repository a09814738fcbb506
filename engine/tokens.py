"""Token counting (§3.1): the adapter's counter where it has one, else len(text) / 3."""

from __future__ import annotations

from collections.abc import Callable

from engine.messages import Message, TextContentBlock

TokenCounter = Callable[[Message], int]


CHARS_PER_TOKEN = 3


def estimate_text_tokens(text: str) -> int:
    """The documented fallback: len(text) / 3, rounded up so a non-empty text never counts 0."""
    return -(-len(text) // CHARS_PER_TOKEN)  # math.ceil(len / 3) in integers


def estimate_message_tokens(message: Message) -> int:
    content = message.content
    # One text block (most messages): its length, without joining. A first read of a long
    # transcript estimates every message.
    if len(content) == 1 and type(content[0]) is TextContentBlock:
        return -(-len(content[0].text) // CHARS_PER_TOKEN)
    return estimate_text_tokens(message.text())
