"""The active history with its token ledger: per-message counts computed once, prefix sums kept
incrementally, so planning a turn costs O(new messages), not O(history) (§3.1)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.cache_key import canonical_message_bytes
from engine.messages import Message, MessageMetadata, Role, TextContentBlock
from engine.tokens import TokenCounter, estimate_message_tokens


class History:
    """Messages in order, with `tokens[i]` and running sums `_cumulative[i] = sum(tokens[:i])`.

    `stable_prefix_end` counts the leading messages that belong to the cached stable prefix
    (§7 breakpoints 1-2); compaction never touches them. `floor` is the first index compaction may
    take: just past the last synthetic summary (§3.2: a summary is never re-compacted in v1).
    """

    def __init__(
        self,
        messages: Sequence[Message] = (),
        *,
        stable_prefix_end: int = 0,
        counter: TokenCounter = estimate_message_tokens,
        tokens: Sequence[int] | None = None,
        eager_canonical: bool = False,
    ) -> None:
        if not 0 <= stable_prefix_end <= len(messages):
            raise ValueError(
                f"stable_prefix_end {stable_prefix_end} is outside the history of {len(messages)}"
            )
        self.counter = counter
        self.stable_prefix_end = stable_prefix_end
        self.messages: list[Message] = []
        self.tokens: list[int] = []
        self._cumulative: list[int] = [0]
        # §5.1 canonical bytes per message, encoded on first use and kept: a cache key over a
        # long span then costs a join and a sha256, not a re-encoding of every message.
        self._canonical: list[bytes | None] = []
        # The manager's history encodes them as messages arrive (`eager_canonical`): the first key
        # over a span, the one a compaction waits for, is then a join and a sha256 (§5.1).
        self.eager_canonical = eager_canonical
        self.floor = stable_prefix_end
        given = list(tokens) if tokens is not None else None
        if given is not None and len(given) != len(messages):
            raise ValueError("tokens must give one count per message")
        for index, message in enumerate(messages):
            self.append(message, given[index] if given is not None else None)

    def __len__(self) -> int:
        return len(self.messages)

    def append(self, message: Message, tokens: int | None = None) -> int:
        count = self.counter(message) if tokens is None else tokens
        self.messages.append(message)
        self.tokens.append(count)
        self._cumulative.append(self._cumulative[-1] + count)
        self._canonical.append(canonical_message_bytes(message) if self.eager_canonical else None)
        if message.synthetic and len(self.messages) - 1 >= self.floor:
            self.floor = len(self.messages)
        return count

    def range_tokens(self, start: int, end: int) -> int:
        return self._cumulative[end] - self._cumulative[start]

    def canonical_bytes(self, start: int, end: int) -> list[bytes]:
        """Each message's canonical cache-key bytes for messages[start:end] (see cache_key)."""
        cached = self._canonical
        for index in range(start, end):
            if cached[index] is None:
                cached[index] = canonical_message_bytes(self.messages[index])
        return cached[start:end]  # type: ignore[return-value]

    @property
    def total_tokens(self) -> int:
        return self._cumulative[-1]

    def replace(
        self, start: int, end: int, replacement: Sequence[Message], tokens: Sequence[int]
    ) -> None:
        """Put `replacement` in place of messages[start:end]; O(len - start) for the sums."""
        self.messages[start:end] = replacement
        self.tokens[start:end] = tokens
        self._canonical[start:end] = (
            [canonical_message_bytes(m) for m in replacement]
            if self.eager_canonical
            else [None] * len(replacement)
        )
        del self._cumulative[start + 1 :]
        for count in self.tokens[start:]:
            self._cumulative.append(self._cumulative[-1] + count)
        # The floor follows the last synthetic message: shifted when it lay after the range,
        # otherwise just past the last synthetic message the replacement brings.
        if self.floor > end:
            self.floor += len(replacement) - (end - start)
        else:
            self.floor = max(self.stable_prefix_end, min(self.floor, start))
            for offset, message in enumerate(replacement):
                if message.synthetic:
                    self.floor = start + offset + 1

    def copy(self) -> History:
        clone = History.__new__(History)
        clone.counter = self.counter
        clone.stable_prefix_end = self.stable_prefix_end
        clone.messages = list(self.messages)
        clone.tokens = list(self.tokens)
        clone._cumulative = list(self._cumulative)
        clone._canonical = list(self._canonical)
        clone.eager_canonical = self.eager_canonical
        clone.floor = self.floor
        return clone

    def role_before(self, index: int) -> Role | None:
        return self.messages[index - 1].role if index > 0 else None

    def role_at(self, index: int) -> Role | None:
        return self.messages[index].role if index < len(self.messages) else None


def text_message(message_id: str, role: Role, text: str, **metadata: object) -> Message:
    """A one-text-block message: what summaries, fillers and scripted sessions are made of."""
    return Message(
        id=message_id,
        role=role,
        content=(TextContentBlock(text),),
        metadata=MessageMetadata(**metadata),  # type: ignore[arg-type]
    )
