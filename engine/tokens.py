"""Token counting (§3.1): the adapter's counter where it has one, else len(text) / 3."""

from __future__ import annotations

import math
from collections.abc import Callable

from engine.messages import Message

TokenCounter = Callable[[Message], int]


CHARS_PER_TOKEN = 3


def estimate_text_tokens(text: str) -> int:
    """The documented fallback: len(text) / 3, rounded up so a non-empty text never counts 0."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def estimate_message_tokens(message: Message) -> int:
    return estimate_text_tokens(message.text())
