"""A history's messages, some of them still stored rows that are decoded when first read.

Resuming a long session (SessionStore.manager) reads every active row's columns, but a turn plans
from the token columns and reads the bodies of a few messages near its end; a compaction reads
its span. So a body is read and decoded (and checked against the columns it was validated by)
only when someone asks for its message, then kept; a slice or a walk reads its rows together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, MutableSequence, Sequence
from typing import Any, overload

from engine.messages import Message


class RowCodec:
    """How a MessageList reads its stored rows: `decode(rows)` returns, for each row in order,
    its message or the error reading it (a located StoreError: the store's rows), and raises
    when it cannot read at all (the store closed); `row[synthetic_index]` is a row's synthetic
    column, read without decoding (the history's floor)."""

    __slots__ = ("decode", "synthetic_index")

    def __init__(
        self, decode: Callable[[Sequence[Any]], list[Message | Exception]], synthetic_index: int
    ) -> None:
        self.decode = decode
        self.synthetic_index = synthetic_index


_UNKNOWN = -1  # MessageList's last synthetic index, when it has to be looked for
# Rows read together: a walk over the list reads _BATCH at a time, and one entry read alone
# brings the others of its aligned _BLOCK (loops over indices, forwards or backwards, then cost
# one read of the store per block, not one per message).
_BATCH = 512
_BLOCK = 32


class MessageList(MutableSequence[Message]):
    """A list of messages where an entry is a Message or a stored row (a tuple) not yet decoded.
    Reading an entry decodes it once; slices come back as plain lists of messages."""

    __slots__ = ("_codec", "_items", "_last_synthetic")

    def __init__(
        self,
        rows: Iterable[Any] = (),
        codec: RowCodec | None = None,
        *,
        last_synthetic: int | None = _UNKNOWN,
    ) -> None:
        """`last_synthetic`: what last_synthetic() returns, when the reader of the rows knows it
        (the store, from the whole column at once); until the list first changes."""
        self._items: list[Any] = list(rows)
        if codec is None and any(type(item) is tuple for item in self._items):
            raise ValueError("stored rows need a RowCodec to decode them")
        self._codec = codec
        self._last_synthetic = last_synthetic

    def _at(self, index: int) -> Message:
        item = self._items[index]
        if type(item) is tuple:
            at = range(len(self._items))[index]  # a negative index counts from the end
            start = at - at % _BLOCK
            self._decode(range(start, min(start + _BLOCK, len(self._items))), range(at, at + 1))
            item = self._items[at]
        return item  # type: ignore[no-any-return]

    def _decode(self, indices: range, wanted: range | None = None) -> None:
        """Decode the rows among items[indices] in one call (one read of their bodies) and keep
        each message read; raise the first error among the `wanted` indices (all by default):
        a bad row stays a row, and fails every read that needs it, none that does not."""
        items = self._items
        pending = [index for index in indices if type(items[index]) is tuple]
        if not pending:
            return
        assert self._codec is not None
        failed: Exception | None = None
        for index, message in zip(
            pending, self._codec.decode([items[index] for index in pending]), strict=True
        ):
            if not isinstance(message, Exception):
                items[index] = message
            elif failed is None and (wanted is None or index in wanted):
                failed = message
        if failed is not None:
            raise failed

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            indices = range(*index.indices(len(self._items)))
            self._decode(indices)
            return [self._items[i] for i in indices]
        return self._at(index)

    @overload
    def __setitem__(self, index: int, value: Message) -> None: ...

    @overload
    def __setitem__(self, index: slice, value: Iterable[Message]) -> None: ...

    def __setitem__(self, index: int | slice, value: Any) -> None:
        self._last_synthetic = _UNKNOWN
        self._items[index] = value

    def __delitem__(self, index: int | slice) -> None:
        self._last_synthetic = _UNKNOWN
        del self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Message]:
        for index in range(len(self._items)):
            if index % _BATCH == 0:  # read ahead; a bad row raises when the walk reaches it
                self._decode(range(index, min(index + _BATCH, len(self._items))), range(0))
            yield self._at(index)

    def insert(self, index: int, value: Message) -> None:
        self._last_synthetic = _UNKNOWN
        self._items.insert(index, value)

    def append(self, value: Message) -> None:
        self._last_synthetic = _UNKNOWN
        self._items.append(value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageList | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        stored = sum(type(item) is tuple for item in self._items)
        return f"MessageList({len(self._items)} messages, {stored} not yet decoded)"

    def copy(self) -> MessageList:
        """A copy that shares the decoded messages and the rows not yet decoded (O(n) refs)."""
        clone = MessageList.__new__(MessageList)
        clone._items = list(self._items)
        clone._codec = self._codec
        clone._last_synthetic = self._last_synthetic
        return clone

    def is_synthetic(self, index: int) -> bool:
        """messages[index].synthetic, from the stored column when the body is not decoded yet."""
        item = self._items[index]
        if type(item) is tuple:
            assert self._codec is not None
            return bool(item[self._codec.synthetic_index])
        return bool(item.synthetic)

    def last_synthetic(self) -> int | None:
        """The index of the last synthetic message (None: there is none), decoding nothing."""
        if self._last_synthetic != _UNKNOWN:
            return self._last_synthetic
        column = self._codec.synthetic_index if self._codec is not None else 0
        items = self._items
        for index in range(len(items) - 1, -1, -1):
            item = items[index]
            if item[column] if type(item) is tuple else item.synthetic:
                return index
        return None

    def decoded(self) -> int:
        """How many entries are messages already (the rest are rows not yet read)."""
        return sum(type(item) is not tuple for item in self._items)


def synthetic_at(messages: Sequence[Message], index: int) -> bool:
    """messages[index].synthetic without decoding a stored row."""
    if isinstance(messages, MessageList):
        return messages.is_synthetic(index)
    return messages[index].synthetic
