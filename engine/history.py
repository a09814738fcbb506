"""The active history with its token ledger: per-message counts computed once, prefix sums kept
incrementally, so planning a turn costs O(new messages), not O(history) (§3.1)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from itertools import accumulate

from engine.message_list import MessageList, synthetic_at
from engine.messages import Message, MessageMetadata, Role, TextContentBlock
from engine.tokens import TokenCounter, estimate_message_tokens

_encode_canonical: Callable[[Message], bytes] | None = None


def _canonical(message: Message) -> bytes:
    """engine.cache_key's canonical bytes, imported on first use: a history that only plans
    (status, the session list) never loads msgpack and hashlib."""
    global _encode_canonical
    if _encode_canonical is None:
        from engine.cache_key import canonical_message_bytes

        _encode_canonical = canonical_message_bytes
    return _encode_canonical(message)


def floor_of(stable_prefix_end: int, message_count: int, last_synthetic: int | None) -> int:
    """§3.2 the floor: just past the last synthetic message (a summary is never re-compacted in
    v1), never below the stable prefix, which counts only messages that exist. The one
    definition: History keeps it as it changes, the store as its rows change (sql.refresh_floor)."""
    past_synthetic = last_synthetic + 1 if last_synthetic is not None else 0
    return max(min(stable_prefix_end, message_count), past_synthetic)


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
        self.messages: list[Message] | MessageList = []
        self.tokens: list[int] = []
        self._cumulative: list[int] = [0]
        # §5.1 canonical bytes of messages[:encoded], back to back in one buffer, message i at
        # _offsets[i]:_offsets[i + 1]: a cache key over a long span is then a sha256 over a slice
        # of it, with no re-encoding and no copy (within 1.5x of the bare sha256).
        self._blob = bytearray()
        self._offsets: list[int] = [0]
        # The manager's history encodes as messages arrive (`eager_canonical`), so the first key
        # over a span, the one a compaction waits for, encodes nothing; others encode on first use.
        self.eager_canonical = eager_canonical
        self.floor = stable_prefix_end
        given = list(tokens) if tokens is not None else None
        if given is not None and len(given) != len(messages):
            raise ValueError("tokens must give one count per message")
        if isinstance(messages, MessageList) and given is not None:
            self._take_stored(messages, given)
            return
        for index, message in enumerate(messages):
            self.append(message, given[index] if given is not None else None)

    def _take_stored(self, messages: MessageList, tokens: list[int]) -> None:
        """Messages read from a store with their stored counts: kept as they are (bodies decoded
        on first read), the sums in one pass, the floor from the synthetic column; canonical
        bytes wait for the first key over them (canonical_view)."""
        self.messages = messages.copy()
        self.tokens = tokens
        self._cumulative = list(accumulate(tokens, initial=0))
        self.floor = floor_of(self.stable_prefix_end, len(tokens), messages.last_synthetic())

    def __len__(self) -> int:
        return len(self.messages)

    def append(self, message: Message, tokens: int | None = None) -> int:
        count = self.counter(message) if tokens is None else tokens
        self.messages.append(message)
        self.tokens.append(count)
        self._cumulative.append(self._cumulative[-1] + count)
        if self.eager_canonical and len(self._offsets) == len(self.messages):
            self._blob += _canonical(message)
            self._offsets.append(len(self._blob))
        if message.synthetic:  # now the last synthetic message
            self.floor = floor_of(
                self.stable_prefix_end, len(self.messages), len(self.messages) - 1
            )
        return count

    def range_tokens(self, start: int, end: int) -> int:
        return self._cumulative[end] - self._cumulative[start]

    @contextmanager
    def canonical_view(self, start: int, end: int) -> Iterator[memoryview]:
        """The canonical cache-key bytes of messages[start:end] back to back (see cache_key), as a
        view into the history's buffer, valid inside the `with` block only (the buffer cannot
        grow while a view of it is held)."""
        for message in self.messages[len(self._offsets) - 1 : end]:
            self._blob += _canonical(message)
            self._offsets.append(len(self._blob))
        with memoryview(self._blob)[self._offsets[start] : self._offsets[end]] as view:
            yield view

    @property
    def total_tokens(self) -> int:
        return self._cumulative[-1]

    def replace(
        self, start: int, end: int, replacement: Sequence[Message], tokens: Sequence[int]
    ) -> None:
        """Put `replacement` in place of messages[start:end]; O(len - start) for the sums."""
        self.messages[start:end] = replacement
        self.tokens[start:end] = tokens
        self._replace_canonical(start, end, replacement)
        del self._cumulative[start + 1 :]
        for count in self.tokens[start:]:
            self._cumulative.append(self._cumulative[-1] + count)
        self.floor = floor_of(
            self.stable_prefix_end,
            len(self.messages),
            self._last_synthetic(start, end, replacement),
        )

    def _replace_canonical(self, start: int, end: int, replacement: Sequence[Message]) -> None:
        encoded = len(self._offsets) - 1  # before the messages changed
        if encoded < end or not self.eager_canonical:
            # The range is not all encoded (or encoding waits for first use): drop from `start`
            # on; canonical_view encodes again from there when asked.
            keep = min(start, encoded)
            del self._blob[self._offsets[keep] :]
            del self._offsets[keep + 1 :]
            return
        new = [_canonical(m) for m in replacement]
        old_start, old_end = self._offsets[start], self._offsets[end]
        self._blob[old_start:old_end] = b"".join(new)
        shift = sum(map(len, new)) - (old_end - old_start)
        offsets = self._offsets[: start + 1]
        for chunk in new:
            offsets.append(offsets[-1] + len(chunk))
        offsets.extend(offset + shift for offset in self._offsets[end + 1 :])
        self._offsets = offsets

    def _last_synthetic(self, start: int, end: int, replacement: Sequence[Message]) -> int | None:
        """After messages[start:end] became `replacement` (the floor not yet updated): where the
        last synthetic message now is. O(1) but when the range took the last one away."""
        delta = len(replacement) - (end - start)
        if self.floor > end:  # it lay after the range: shifted with it
            return self.floor - 1 + delta
        for offset in range(len(replacement) - 1, -1, -1):
            if replacement[offset].synthetic:
                return start + offset
        if self.floor <= start:  # it lay before the range (or there is none): unchanged
            return self.floor - 1 if self.floor > 0 else None
        for index in range(start - 1, -1, -1):  # the range held it: look further back
            if synthetic_at(self.messages, index):
                return index
        return None

    def copy(self) -> History:
        clone = History.__new__(History)
        clone.counter = self.counter
        clone.stable_prefix_end = self.stable_prefix_end
        clone.messages = self.messages.copy()
        clone.tokens = list(self.tokens)
        clone._cumulative = list(self._cumulative)
        clone._blob = bytearray(self._blob)
        clone._offsets = list(self._offsets)
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
