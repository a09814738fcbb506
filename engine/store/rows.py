"""What the session store returns, and the SQL that reads it: shared by SessionStore and the tailer.

Each struct is a row as a reader needs it; the column lists below are the one place their order
is written down, so a SELECT and its decoder can never disagree.
"""

from __future__ import annotations

import functools
import sqlite3
from array import array
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import msgspec

from engine.config import CompactionConfig
from engine.errors import ConfigError, StoreError
from engine.errors import UndoRefused as UndoRefused  # re-exported from its old home
from engine.events import CompactionEvent, decode_event
from engine.messages import Message, decode_message
from engine.outcomes import CompactionRecord, SessionSnapshot
from engine.row_check import BadRow, int_col, text_col, text_or_bytes_col, usd_col


class UnknownSession(StoreError):
    """No session with that id; the message names the known ones (the first few)."""


class SessionInfo(msgspec.Struct, frozen=True):
    session_id: str
    title: str
    created_at_ms: int
    updated_at_ms: int
    stable_prefix_end: int
    message_count: int  # active messages
    total_tokens: int  # their tokens
    spent_usd: Decimal  # compaction spend so far (§4: apart from the session's primary spend)
    revision: int  # compactions and undos committed
    config: CompactionConfig
    last_seq: int  # highest message seq of the session (0: none)
    floor: int = 0  # first compactable index: just past the last summary (History.floor)


class StoredMessage(msgspec.Struct, frozen=True):
    seq: int  # global, monotonic, never reused: the tail cursor
    position: int | None  # index in the active history; None once archived
    message: Message
    tokens: int
    compaction_id: int | None  # the compaction that archived it
    introduced_by: int | None = None  # the compaction that inserted it (a summary, a filler)


class StoredCompaction(msgspec.Struct, frozen=True):
    compaction_id: int
    session_id: str
    revision: int  # the session's revision once this compaction committed
    record: CompactionRecord
    undone: bool
    created_at_ms: int


class WriteLog:
    """Every message of a session in write order, archived ones included, as read from the
    columns: about 9 bytes a message, since the app re-reads it after every compaction of a
    session that may have written hundreds of thousands. Iterates as (tokens, opens a turn,
    the message's id when a compaction inserted it, else None)."""

    __slots__ = ("opens", "replacements", "tokens")

    def __init__(self) -> None:
        self.tokens = array("q")
        self.opens = bytearray()  # 1 where the message opens a turn (Message.opens_turn)
        self.replacements: dict[int, str] = {}  # index -> id of a summary or filler

    def add(self, tokens: int, opens_turn: bool, replacement_id: str | None) -> None:
        if replacement_id is not None:
            self.replacements[len(self.tokens)] = replacement_id
        self.tokens.append(tokens)
        self.opens.append(opens_turn)

    def __len__(self) -> int:
        return len(self.tokens)

    def __iter__(self) -> Iterator[tuple[int, bool, str | None]]:
        replacement = self.replacements.get
        for index, (tokens, opens) in enumerate(zip(self.tokens, self.opens, strict=True)):
            yield tokens, bool(opens), replacement(index)


class SessionView(msgspec.Struct, frozen=True):
    """A session as one read transaction saw it: everything the app needs to draw it."""

    info: SessionInfo
    snapshot: SessionSnapshot
    compactions: list[StoredCompaction]
    log: WriteLog


class StoredEvent(msgspec.Struct, frozen=True):
    event_id: int
    session_id: str
    event_type: str
    event: CompactionEvent
    created_at_ms: int


SESSION_COLUMNS = (
    "s.session_id, s.title, s.created_at_ms, s.updated_at_ms, s.stable_prefix_end, "
    "s.message_count, s.total_tokens, s.spent_usd, s.revision, s.config, "
    "(SELECT coalesce(max(m.seq), 0) FROM messages m WHERE m.session_id = s.session_id), "
    "s.floor"
)
MESSAGE_COLUMNS = "seq, position, body, tokens, compaction_id, introduced_by"
COMPACTION_COLUMNS = "compaction_id, session_id, revision, record, undone, created_at_ms"
EVENT_COLUMNS = "event_id, session_id, event_type, body, created_at_ms"

_config_decoder = msgspec.json.Decoder(CompactionConfig)
_json = msgspec.json.Encoder()


@functools.cache
def _record_decoder() -> msgspec.json.Decoder[CompactionRecord]:
    """Built on first use: a store without compactions never evaluates the record's types."""
    return msgspec.json.Decoder(CompactionRecord)


def encode_config(config: CompactionConfig) -> str:
    return _json.encode(config).decode()


def encode_record(record: CompactionRecord) -> str:
    return _json.encode(record).decode()


def encode_ids(ids: tuple[str, ...]) -> str:
    return _json.encode(ids).decode()


def _store_error(bad: BadRow) -> StoreError:
    return StoreError(f"{bad}: written by something other than this engine; restore the store")


def session_info(row: tuple[Any, ...] | sqlite3.Row) -> SessionInfo:
    """A sessions row, every column checked (a spent_usd of 'abc' or NaN, a text
    revision, a BLOB title crashed `status` or came out as wrong types in --json)."""
    sid = row[0]
    try:
        text_col("sessions", "session_id", sid, sid, non_empty=True)
        config = _config_decoder.decode(text_or_bytes_col("sessions", "config", sid, row[9]))
        ints = [int_col("sessions", _SESSION_INTS[i], sid, row[i]) for i in (2, 3, 4, 5, 6)]
        return SessionInfo(
            sid,
            text_col("sessions", "title", sid, row[1]),
            *ints,
            usd_col("sessions", "spent_usd", sid, row[7]),
            int_col("sessions", "revision", sid, row[8]),
            config,
            int_col("sessions", "last_seq", sid, row[10]),
            int_col("sessions", "watermark", sid, row[11]),
        )
    except BadRow as bad:
        raise _store_error(bad) from None
    except (msgspec.MsgspecError, ConfigError) as exc:
        raise StoreError(f"session {sid!r} has an unreadable config ({exc})") from None


_SESSION_INTS = {
    2: "created_at_ms", 3: "updated_at_ms", 4: "stable_prefix_end", 5: "message_count",
    6: "total_tokens",
}  # fmt: skip


def stored_message(
    row: tuple[Any, ...] | sqlite3.Row, session_id: str | None = None
) -> StoredMessage:
    seq = row[0]
    return StoredMessage(
        seq,
        checked_int(session_id, seq, "position", row[1], nullable=True),
        body_message(seq, row[2], session_id),
        checked_int(session_id, seq, "tokens", row[3]),
        checked_int(session_id, seq, "compaction_id", row[4], nullable=True),
        checked_int(session_id, seq, "introduced_by", row[5], nullable=True),
    )


def _where(session_id: str | None, seq: int) -> str:
    return f"session {session_id!r}: message seq {seq}" if session_id else f"message seq {seq}"


def checked_int(
    session_id: str | None, seq: int, field: str, value: Any, *, nullable: bool = False
) -> Any:
    """A column SQLite let through with the wrong type (its tables are not STRICT): a located
    StoreError, never a wrong history or a TypeError far away."""
    if (value is None and nullable) or (type(value) is int and value >= 0):
        return value
    raise StoreError(
        f"{_where(session_id, seq)} has a bad {field} column ({type(value).__name__} "
        f"{repr(value)[:40]}): written by something other than this engine; restore the store"
    )


def body_message(seq: int, body: bytes, session_id: str | None = None) -> Message:
    if not isinstance(body, bytes):
        raise StoreError(
            f"{_where(session_id, seq)} has an undecodable body (a {type(body).__name__}, "
            "not msgpack bytes)"
        )
    try:
        return decode_message(body)
    except msgspec.MsgspecError as exc:
        raise StoreError(f"{_where(session_id, seq)} has an undecodable body ({exc})") from None


def stored_compaction(row: tuple[Any, ...] | sqlite3.Row) -> StoredCompaction:
    cid = row[0]
    try:
        record = _record_decoder().decode(text_or_bytes_col("compactions", "record", cid, row[3]))
        return StoredCompaction(
            int_col("compactions", "compaction_id", cid, cid),
            text_col("compactions", "session_id", cid, row[1], non_empty=True),
            int_col("compactions", "revision", cid, row[2]),
            record,
            bool(int_col("compactions", "undone", cid, row[4], high=1)),
            int_col("compactions", "created_at_ms", cid, row[5]),
        )
    except BadRow as bad:
        raise _store_error(bad) from None
    except msgspec.MsgspecError as exc:
        raise StoreError(f"compaction {cid!r} has an unreadable record ({exc})") from None


def stored_event(row: tuple[Any, ...] | sqlite3.Row) -> StoredEvent:
    eid = row[0]
    try:
        event = decode_event(text_or_bytes_col("events", "body", eid, row[3]))
        return StoredEvent(
            int_col("events", "event_id", eid, eid),
            text_col("events", "session_id", eid, row[1]),
            text_col("events", "event_type", eid, row[2]),
            event,
            int_col("events", "created_at_ms", eid, row[4]),
        )
    except BadRow as bad:
        raise _store_error(bad) from None
    except msgspec.MsgspecError as exc:
        raise StoreError(f"event {eid!r} has an unreadable body ({exc})") from None
