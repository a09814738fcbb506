"""The session store's writes, as functions over a connection inside the caller's transaction.

SessionStore owns the transactions (one `BEGIN IMMEDIATE` each) and the spend bookkeeping; this
module is what each transaction does to the tables, so the rules of the active history (positions
0..n-1, the UNIQUE index, the floor) live in one place.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

import msgspec

from engine.history import History, floor_of
from engine.message_list import MessageList, RowCodec
from engine.messages import (
    HistoryError,
    Message,
    MessageShape,
    Role,
    check_shapes,
    encode_message,
    opens_turn,
    shell_message,
    validate_history,
)
from engine.outcomes import CompactionRecord, SessionSnapshot, SpanChanged
from engine.policy.span import check_span_unchanged
from engine.store.rows import (
    COMPACTION_COLUMNS,
    SESSION_COLUMNS,
    SessionInfo,
    UndoRefused,
    UnknownSession,
    WriteLog,
    body_message,
    checked_int,
    encode_ids,
    encode_record,
    session_info,
)
from engine.store.schema import StoreError

Hook = Callable[[str], None]

_SQL_INSERT = (
    "INSERT INTO messages (session_id, position, role, tokens, tool_use_ids, tool_result_ids, "
    "synthetic, message_id, body, introduced_by, created_at_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
)
_SQL_COUNTS = (
    "UPDATE sessions SET message_count = message_count + ?, total_tokens = total_tokens + ?, "
    "revision = revision + ?, updated_at_ms = ? WHERE session_id = ?"
)
_SQL_TOKENS = "SELECT count(*), coalesce(sum(tokens), 0) FROM messages WHERE "


def session_row(conn: sqlite3.Connection, path: Path, session_id: str) -> SessionInfo:
    row = conn.execute(
        f"SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.session_id = ?", (session_id,)
    ).fetchone()
    if row is None:
        known = [r[0] for r in conn.execute("SELECT session_id FROM sessions LIMIT 6")]
        listed = ", ".join(known[:5]) + (", …" if len(known) > 5 else "")
        raise UnknownSession(f"no session {session_id!r} in {path} (known: {listed or 'none'})")
    return session_info(row)


def read_snapshot(
    conn: sqlite3.Connection, info: SessionInfo, *, validate: bool = False
) -> SessionSnapshot:
    """The active history. With `validate`, HistoryError if it breaks a canonical-message rule
    (a store written by another program): checked on the stored columns, O(n) without
    re-deriving tool ids from every message, and only a suspect history goes to the full
    validate_history, which names the message and the rule."""
    sid = info.session_id
    rows = conn.execute(
        "SELECT seq, body, tokens, role, tool_use_ids, tool_result_ids, position, message_id "
        "FROM messages "
        "WHERE session_id = ? AND position IS NOT NULL ORDER BY position",
        (sid,),
    ).fetchall()
    positions = [checked_int(sid, row[0], "position", row[6]) for row in rows]
    for index, row in enumerate(rows):  # positions 0..n-1, or the order read is not the history
        if positions[index] != index:
            raise StoreError(
                f"session {sid!r}: message seq {row[0]} has position {row[6]} where {index} "
                "belongs (a gap or a duplicate in the position column): restore the store"
            )
    messages = [body_message(row[0], row[1], sid) for row in rows]
    for row, message in zip(rows, messages, strict=True):
        # A compaction finds its span by this column and the manager by the bodies: if they
        # disagree every compaction is refused as "another process compacted".
        if row[7] != message.id:
            raise StoreError(_id_mismatch(sid, row[0], row[7], message.id))
    tokens = [checked_int(sid, row[0], "tokens", row[2]) for row in rows]
    if validate and not _columns_valid(rows, messages):
        validate_history(messages)  # raises, naming the first message that breaks a rule
    return SessionSnapshot(
        session_id=sid,
        messages=messages,
        tokens=tokens,
        # A prefix declared before its messages arrived counts only what exists.
        stable_prefix_end=min(info.stable_prefix_end, len(rows)),
        spent_usd=info.spent_usd,
        revision=info.revision,
    )


_NO_IDS = "[]"

# The active rows as read_stored_snapshot keeps them, one tuple each (MessageList's stored rows):
# what a body is checked against when it is decoded, and no body: a turn reads a few of them, so
# the rest are read when first needed (read_bodies). The role as an index into _ROLE_OF (NULL for
# any other text, which fails the checks), tool ids NULL for none: ints and None cost Python
# nothing to build, 100,000 strings do. A summary's or a filler's body and id come with its row:
# an undo in another process deletes those rows, while an original's row is only ever moved.
_SQL_STORED = (
    "SELECT seq, tokens, position, synthetic, "
    "CASE role WHEN 'user' THEN 0 WHEN 'assistant' THEN 1 END, "
    "nullif(tool_use_ids, '[]'), nullif(tool_result_ids, '[]'), "
    "CASE WHEN introduced_by IS NOT NULL THEN body END, "
    "CASE WHEN introduced_by IS NOT NULL THEN message_id END FROM messages "
    "WHERE session_id = ? AND position IS NOT NULL ORDER BY position"
)
_SYNTHETIC = 3
_ROLE_OF = (Role.USER, Role.ASSISTANT)
_INT = {int}

_json_ints = msgspec.json.Encoder()

# (session, seqs) -> {seq: (body, message_id)} of the session's rows asked for; a row no longer
# there (or no longer the session's) is absent.
BodyReader = Callable[[str, Sequence[int]], dict[int, tuple[Any, Any]]]


def read_bodies(
    conn: sqlite3.Connection, session_id: str, seqs: Sequence[int]
) -> dict[int, tuple[Any, Any]]:
    """The body and message_id of each of the session's rows in `seqs` (by seq: a row keeps it
    while positions move), in one statement whatever their number."""
    rows = conn.execute(
        "SELECT seq, body, message_id FROM messages "
        "WHERE session_id = ? AND seq IN (SELECT value FROM json_each(?))",
        (session_id, _json_ints.encode(list(seqs)).decode()),
    )
    return {seq: (body, message_id) for seq, body, message_id in rows}


def read_stored_snapshot(
    conn: sqlite3.Connection, info: SessionInfo, bodies: BodyReader
) -> SessionSnapshot | None:
    """read_snapshot(validate=True) for a resumed manager, reading no body: the columns are
    checked in bulk (positions 0..n-1, integer token counts, the history rules on the role and
    tool-id columns) and each body is read through `bodies` and decoded when it is first needed,
    then checked against the columns the history was validated by (_stored_decoder). The
    snapshot's messages are a MessageList. None when anything looks unusual: the caller then
    reads with read_snapshot, which names the row and the rule."""
    rows = conn.execute(_SQL_STORED, (info.session_id,)).fetchall()
    if not rows:
        return None
    tokens, positions, synthetic, roles, uses, results = (
        list(map(itemgetter(column), rows)) for column in range(1, 7)
    )
    count = len(rows)
    if not (
        positions == list(range(count))
        and set(map(type, positions)) == _INT
        and set(map(type, tokens)) == _INT
        and min(tokens) >= 0
        and set(synthetic) <= {0, 1}
        and _shapes_valid(roles, uses, results)
    ):
        return None
    return SessionSnapshot(
        session_id=info.session_id,
        messages=MessageList(
            rows,
            RowCodec(_stored_decoder(info.session_id, bodies), _SYNTHETIC),
            last_synthetic=count - 1 - synthetic[::-1].index(1) if 1 in synthetic else None,
        ),
        tokens=tokens,
        stable_prefix_end=min(info.stable_prefix_end, count),
        spent_usd=info.spent_usd,
        revision=info.revision,
    )


def _shapes_valid(roles: Sequence[Any], uses: Sequence[Any], results: Sequence[Any]) -> bool:
    """check_shapes' rules on whole columns at once, for the usual history only: roles strictly
    alternating, each message's tool_result ids written exactly as the message before wrote its
    tool_use ids, tool blocks only where their role allows them, no id twice in a message (a
    message's content is checked as its body is decoded). False is not a verdict, only "look
    closer": check_shapes, message by message, names what is wrong."""
    first = roles[0]
    if first not in (0, 1) or set(roles[0::2]) != {first} or set(roles[1::2]) - {1 - first}:
        return False
    user_at = first  # user messages are roles[user_at::2] (role 0 is the user)
    if set(uses[user_at::2]) - {None} or set(results[1 - user_at :: 2]) - {None}:
        return False
    if results[0] is not None or results[1:] != uses[:-1]:
        return False
    try:
        for text in set(uses) - {None}:
            ids = _column_ids(text)
            if not ids or len(set(ids)) != len(ids):
                return False
    except (msgspec.MsgspecError, TypeError):
        return False
    return True


def _stored_decoder(
    session_id: str, bodies: BodyReader
) -> Callable[[Sequence[tuple[Any, ...]]], list[Message | Exception]]:
    """Decodes read_stored_snapshot's rows (RowCodec.decode): a body that does not decode, or
    says other than the columns the history was validated by, is a located StoreError, raised by
    whoever reads that message."""

    def decode(rows: Sequence[tuple[Any, ...]]) -> list[Message | Exception]:
        unread = [row[0] for row in rows if row[7] is None]
        read = bodies(session_id, unread) if unread else {}
        return [_stored_message(session_id, row, read) for row in rows]

    return decode


def _stored_message(
    session_id: str, row: tuple[Any, ...], read: dict[int, tuple[Any, Any]]
) -> Message | StoreError:
    seq, position = row[0], row[2]
    if row[7] is not None:
        body, message_id = row[7], row[8]
    elif seq in read:
        body, message_id = read[seq]
    else:
        return StoreError(
            f"session {session_id!r}: message seq {seq} (position {position}) is no longer in "
            "the store (deleted by something other than this engine): restore the store"
        )
    try:
        message = body_message(seq, body, session_id)
    except StoreError as error:
        return error
    if message.id != message_id:
        return StoreError(_id_mismatch(session_id, seq, message_id, message.id))
    differs = _disagreement(message, row)
    if differs is not None:
        return StoreError(
            f"session {session_id!r}: message seq {seq} (position {position}): its body "
            f"disagrees with the {differs}: written by something other than this engine; "
            "restore the store"
        )
    return message


def _disagreement(message: Message, row: tuple[Any, ...]) -> str | None:
    """What of a stored row's columns its decoded body contradicts, if anything."""
    _, _, _, synthetic, role, uses, results, _, _ = row
    if message.role is not _ROLE_OF[role]:
        return "role column"
    if message.synthetic != bool(synthetic):
        return "synthetic column"
    if message.tool_use_ids() != _column_ids(uses or _NO_IDS):
        return "tool_use_ids column"
    if message.tool_result_ids() != _column_ids(results or _NO_IDS):
        return "tool_result_ids column"
    if not message.content:
        return "rule empty_content: it has no content block"
    return None


def _id_mismatch(session_id: str, seq: int, column: object, body_id: str) -> str:
    return (
        f"session {session_id!r}: messages.message_id of seq {seq} is {str(column)[:40]!r} "
        f"but its body's id is {body_id[:40]!r}: restore the store"
    )


def read_plan_history(
    conn: sqlite3.Connection, info: SessionInfo, known: History | None = None
) -> History:
    """The active history as plan_turn reads it, from the light columns alone (no body decoded):
    each message stands in as a shell with its id, role, synthetic flag and tool_use ids (what
    the floor and the tool-cycle boundary read), beside its stored token count. Enough for the
    strategies that do not read tool output (strategies.reads_tool_output); the session list
    plans every session on each refresh, so this is what keeps it cheap. `known`: this session's
    plan history from an earlier read that is still its start (the caller checks the revision):
    only the rows past it are read, and appended to it (O(new rows), not O(history))."""
    sid = info.session_id
    start = len(known) if known is not None else 0
    rows = conn.execute(
        "SELECT seq, tokens, role, tool_use_ids, synthetic, message_id, position FROM messages "
        "WHERE session_id = ? AND position >= ? ORDER BY position",
        (sid, start),
    ).fetchall()
    shells, tokens = [], []
    for index, (seq, count, role, uses, synthetic, message_id, position) in enumerate(rows, start):
        if position != index:
            raise StoreError(
                f"session {sid!r}: message seq {seq} has position {position} where {index} "
                "belongs (a gap or a duplicate in the position column): restore the store"
            )
        tokens.append(checked_int(sid, seq, "tokens", count))
        try:
            shells.append(shell_message(str(message_id), role, _column_ids(uses), bool(synthetic)))
        except (KeyError, ValueError, msgspec.MsgspecError, TypeError) as error:
            raise StoreError(
                f"session {sid!r}: message seq {seq}: unreadable columns ({error})"
            ) from None
    if known is not None:  # every row read and checked first: a bad row leaves `known` as it was
        for shell, count in zip(shells, tokens, strict=True):
            known.append(shell, count)
        return known
    prefix_end = min(info.stable_prefix_end, len(rows))
    return History(shells, stable_prefix_end=prefix_end, tokens=tokens)


def write_log(conn: sqlite3.Connection, session_id: str) -> WriteLog:
    """The session's WriteLog from the columns alone: decoding every body ever written, after
    each compaction, made the app's memory grow with the session. A turn opens at a user
    message that is neither synthetic nor a tool result: messages.opens_turn, applied to the
    columns written from each message."""
    rows = conn.execute(
        "SELECT tokens, role, synthetic, tool_result_ids, "
        "CASE WHEN introduced_by IS NOT NULL THEN message_id END "
        "FROM messages WHERE session_id = ? ORDER BY seq",
        (session_id,),
    )
    log = WriteLog()
    for tokens, role, synthetic, results, replacement in rows:
        log.add(tokens, opens_turn(role, bool(synthetic), results != _NO_IDS), replacement)
    return log


_ids_decoder = msgspec.json.Decoder(list[str])


def _column_ids(text: str) -> tuple[str, ...]:
    return () if text == _NO_IDS else tuple(_ids_decoder.decode(text))


_ROLE_TEXT = {role: role.value for role in Role}


def _columns_valid(rows: list[Any], messages: list[Message]) -> bool:
    """validate_history's rules (messages.check_shapes, the same code) on the role and tool-id
    columns written beside each body, the bodies only for their role and emptiness. False: look
    closer (validate_history on the bodies names the message and the rule)."""
    role_text = _ROLE_TEXT  # Enum.value is a descriptor call: a dict is 100k of them faster
    try:  # the id columns are a shortcut: unreadable ones send us to the bodies
        shapes = []
        for row, message in zip(rows, messages, strict=True):
            if row[3] != role_text[message.role]:
                return False
            uses, results = _column_ids(row[4]), _column_ids(row[5])
            shapes.append(MessageShape(row[3], uses, results, bool(message.content)))
        check_shapes(shapes)
    except (msgspec.MsgspecError, TypeError, HistoryError):
        return False
    return True


def message_at(conn: sqlite3.Connection, session_id: str, position: int) -> Message | None:
    if position < 0:
        return None
    row = conn.execute(
        "SELECT seq, body FROM messages WHERE session_id = ? AND position = ?",
        (session_id, position),
    ).fetchone()
    return body_message(row[0], row[1]) if row else None


def insert_message(
    conn: sqlite3.Connection,
    session_id: str,
    position: int,
    message: Message,
    tokens: int,
    introduced_by: int | None,
    now: int,
) -> None:
    # Text is untrusted: it goes verbatim into the msgpack body and is never interpreted.
    values = (
        session_id, position, message.role.value, tokens, encode_ids(message.tool_use_ids()),
        encode_ids(message.tool_result_ids()), int(message.synthetic), message.id,
        encode_message(message), introduced_by, now,
    )  # fmt: skip
    conn.execute(_SQL_INSERT, values)


def shift_positions(
    conn: sqlite3.Connection, session_id: str, from_position: int, delta: int
) -> None:
    """Move active positions >= from_position by delta. SQLite checks the UNIQUE index row by
    row, in no set order, so the rows pass through negative positions (never taken) first."""
    if delta == 0:
        return
    conn.execute(
        "UPDATE messages SET position = -1 - (position + ?) WHERE session_id = ? AND position >= ?",
        (delta, session_id, from_position),
    )
    conn.execute(
        "UPDATE messages SET position = -1 - position WHERE session_id = ? AND position < 0",
        (session_id,),
    )


def refresh_floor(conn: sqlite3.Connection, session_id: str) -> None:
    """History.floor, stored (history.floor_of, the one rule), from the last synthetic
    position: O(log n) through messages_synthetic."""
    prefix_end, count, last_synthetic = conn.execute(
        "SELECT stable_prefix_end, message_count, (SELECT max(position) FROM messages "
        "WHERE session_id = ?1 AND synthetic = 1 AND position IS NOT NULL) "
        "FROM sessions WHERE session_id = ?1",
        (session_id,),
    ).fetchone()
    conn.execute(
        "UPDATE sessions SET floor = ? WHERE session_id = ?",
        (floor_of(prefix_end, count, last_synthetic), session_id),
    )


def real_counts(conn: sqlite3.Connection, session_id: str) -> tuple[int, int]:
    """The active history's length and tokens, from the rows themselves."""
    count, tokens = conn.execute(
        _SQL_TOKENS + "session_id = ? AND position IS NOT NULL", (session_id,)
    ).fetchone()
    return int(count), int(tokens)


def repair_counts(
    conn: sqlite3.Connection, info: SessionInfo, *, cheap: bool = False
) -> SessionInfo:
    """sessions.message_count and total_tokens are derived from the active rows; a wrong one
    (hand-edited, or an older writer's) would put the next message past a gap or skew every
    total. Inside a write transaction: checked and, when wrong, rewritten from the rows and
    logged. `cheap`: only the O(log n) check of the count against the last position."""
    sid = info.session_id
    if cheap:
        top = conn.execute(
            "SELECT max(position) FROM messages WHERE session_id = ? AND position IS NOT NULL",
            (sid,),
        ).fetchone()[0]
        if (0 if top is None else int(top) + 1) == info.message_count:
            return info
    count, tokens = real_counts(conn, sid)
    if (count, tokens) == (info.message_count, info.total_tokens):
        return info
    import logging  # a repair is rare: readers never load logging

    logging.getLogger(__name__).warning(
        "session %r: sessions.message_count/total_tokens said %d/%d, the rows say %d/%d: repaired",
        sid, info.message_count, info.total_tokens, count, tokens,
    )  # fmt: skip
    conn.execute(
        "UPDATE sessions SET message_count = ?, total_tokens = ? WHERE session_id = ?",
        (count, tokens, sid),
    )
    return msgspec.structs.replace(info, message_count=count, total_tokens=tokens)


def append(
    conn: sqlite3.Connection, info: SessionInfo, message: Message, tokens: int, now: int
) -> None:
    info = repair_counts(conn, info, cheap=True)
    position = info.message_count
    previous = message_at(conn, info.session_id, position - 1)
    try:  # the manager checked this against its copy; the store checks against the truth
        validate_history([message], previous=previous, first_index=position)
    except HistoryError as error:
        raise StoreError(f"session {info.session_id!r}: not appended: {error}") from None
    insert_message(conn, info.session_id, position, message, tokens, None, now)
    conn.execute(_SQL_COUNTS, (1, tokens, 0, now, info.session_id))
    refresh_floor(conn, info.session_id)


def check_revision(info: SessionInfo, expected: int | None) -> None:
    """Compare-and-set, inside the write transaction: a writer planned on an older revision
    re-reads and re-plans (SpanChanged) instead of writing over another process's undo."""
    if expected is not None and info.revision != expected:
        raise SpanChanged(
            f"session {info.session_id!r}: the span changed since it was summarized (the "
            f"session is at revision {info.revision}, not {expected} as planned: another "
            "process compacted or undid first)"
        )


def replace_span(
    conn: sqlite3.Connection,
    info: SessionInfo,
    start: int,
    span_ids: Sequence[str],
    replacement: Sequence[Message],
    replacement_tokens: Sequence[int],
    record: CompactionRecord,
    now: int,
    hook: Hook,
) -> int:
    """The body of a compaction's transaction. Returns the new revision."""
    info = repair_counts(conn, info)
    session_id, end = info.session_id, start + len(span_ids)
    current = [
        row[0]
        for row in conn.execute(
            "SELECT message_id FROM messages WHERE session_id = ? AND position >= ? "
            "AND position < ? ORDER BY position",
            (session_id, start, end),
        )
    ]
    check_span_unchanged(
        current,
        start,
        span_ids,
        context=f"session {session_id!r}: ",
        cause=" (another process compacted or undid first)",
    )
    before, after = message_at(conn, session_id, start - 1), message_at(conn, session_id, end)
    try:  # §4.4: the result must still validate between the span's neighbours
        validate_history([*replacement, *([after] if after else [])], previous=before)
    except HistoryError as error:
        raise SpanChanged(
            f"session {session_id!r}: the span's neighbours changed: {error}"
        ) from None
    revision = info.revision + 1
    cursor = conn.execute(
        "INSERT INTO compactions (session_id, revision, kind, start_position, span_count, "
        "replacement_count, record, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            session_id, revision, record.kind, start, len(span_ids), len(replacement),
            encode_record(record), now,
        ),
    )  # fmt: skip
    compaction_id = int(cursor.lastrowid or 0)
    where = "session_id = ? AND position >= ? AND position < ?"
    _, archived_tokens = conn.execute(_SQL_TOKENS + where, (session_id, start, end)).fetchone()
    conn.execute(
        "UPDATE messages SET archived_position = position, position = NULL, compaction_id = ? "
        f"WHERE {where}",
        (compaction_id, session_id, start, end),
    )
    hook("archived")
    # Later messages (the preserved tail, and any appended meanwhile) only change position.
    shift_positions(conn, session_id, end, len(replacement) - len(span_ids))
    hook("shifted")
    for offset, message in enumerate(replacement):
        tokens = replacement_tokens[offset]
        insert_message(conn, session_id, start + offset, message, tokens, compaction_id, now)
    hook("inserted")
    delta_tokens = sum(replacement_tokens) - archived_tokens
    conn.execute(_SQL_COUNTS, (len(replacement) - len(span_ids), delta_tokens, 1, now, session_id))
    refresh_floor(conn, session_id)
    return revision


def undo(
    conn: sqlite3.Connection, info: SessionInfo, compaction_id: int | None, now: int
) -> tuple[Any, ...]:
    """The body of an undo's transaction: the archived originals back in place of the summary,
    later positions moved back, the floor with them. Returns the compaction's row."""
    info = repair_counts(conn, info)
    session_id = info.session_id
    live = conn.execute(
        "SELECT compaction_id, kind, start_position, span_count, replacement_count "
        "FROM compactions WHERE session_id = ? AND undone = 0 ORDER BY compaction_id DESC",
        (session_id,),
    ).fetchall()
    if not live:
        raise UndoRefused(f"session {session_id!r} has no compaction to undo")
    target = (
        live[0] if compaction_id is None else next((r for r in live if r[0] == compaction_id), None)
    )
    if target is None:
        raise UndoRefused(f"session {session_id!r} has no compaction {compaction_id} in effect")
    cid, _, start, span_count, replacement_count = target
    _refuse_if_needed_later(conn, cid, [row for row in live if row[0] > cid])
    positions = [
        row[0]
        for row in conn.execute(
            "SELECT position FROM messages WHERE introduced_by = ? ORDER BY position", (cid,)
        )
    ]
    originals, original_tokens = conn.execute(_SQL_TOKENS + "compaction_id = ?", (cid,)).fetchone()
    if positions != list(range(start, start + replacement_count)) or originals != span_count:
        raise UndoRefused(
            f"compaction {cid}'s summary or originals are not where it left them "
            "(the store was changed outside the engine)"
        )
    _, replacement_tokens = conn.execute(_SQL_TOKENS + "introduced_by = ?", (cid,)).fetchone()
    conn.execute("DELETE FROM messages WHERE introduced_by = ?", (cid,))
    shift_positions(conn, session_id, start + replacement_count, span_count - replacement_count)
    conn.execute(
        "UPDATE messages SET position = archived_position, archived_position = NULL, "
        "compaction_id = NULL WHERE compaction_id = ?",
        (cid,),
    )
    conn.execute(
        "UPDATE compactions SET undone = 1, undone_revision = ? WHERE compaction_id = ?",
        (info.revision + 1, cid),
    )
    delta_tokens = original_tokens - replacement_tokens
    conn.execute(_SQL_COUNTS, (span_count - replacement_count, delta_tokens, 1, now, session_id))
    refresh_floor(conn, session_id)
    return conn.execute(
        f"SELECT {COMPACTION_COLUMNS} FROM compactions WHERE compaction_id = ?", (cid,)
    ).fetchone()


def _refuse_if_needed_later(
    conn: sqlite3.Connection, compaction_id: int, later: list[tuple[Any, ...]]
) -> None:
    """A later compaction still in effect was made on top of this one: say which, and how."""
    if not later:
        return
    swallowed = conn.execute(
        "SELECT compaction_id FROM messages WHERE introduced_by = ? AND compaction_id IS NOT NULL "
        "ORDER BY compaction_id LIMIT 1",
        (compaction_id,),
    ).fetchone()
    if swallowed is not None:
        kind = next((row[1] for row in later if row[0] == swallowed[0]), "compaction")
        raise UndoRefused(
            f"compaction {swallowed[0]} ({kind}) took compaction {compaction_id}'s summary into "
            f"its span: undo {swallowed[0]} first"
        )
    newest_id, newest_kind = later[0][0], later[0][1]
    raise UndoRefused(
        f"compaction {newest_id} ({newest_kind}) came after compaction {compaction_id} and is "
        "still in effect: undo it first (the latest is undone first)"
    )
