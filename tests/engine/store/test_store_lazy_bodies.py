"""A resumed manager (SessionStore.manager) keeps the active rows and decodes a body when it is
first read (engine.message_list): the history it plans from, compacts and appends to is the one
the store holds, and a bad body is still a located StoreError, raised by whoever reads it."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.message_list import MessageList, RowCodec
from engine.messages import (
    HistoryError,
    Message,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
    validate_history,
)
from engine.store import SessionStore, StoreError
from engine.store.sql import _shapes_valid, encode_ids
from tests.history_builders import (
    SID,
    RecordingSummarizer,
    assistant,
    chat,
    fill,
    ids,
    tool_call,
    tool_result,
    tool_session,
    user,
)


def stored_rows(manager: object) -> MessageList:
    messages = manager.history.messages  # type: ignore[attr-defined]
    assert isinstance(messages, MessageList)
    return messages


def edit(store: SessionStore, sql: str, *params: object) -> None:
    conn = sqlite3.connect(store.path)
    try:
        conn.execute("PRAGMA ignore_check_constraints = 1")
        conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()


def test_a_resumed_manager_decodes_only_the_bodies_it_reads(store: SessionStore) -> None:
    fill(store, chat(40) + tool_session(6, prefix="t") + chat(10, prefix="z"))
    manager = store.manager(SID, cache=None)
    rows = stored_rows(manager)
    assert rows.decoded() == 0
    plan = manager.plan()
    assert rows.decoded() < len(rows) // 4  # a plan reads the tail, not the history
    snapshot = store.snapshot(SID)
    assert list(manager.messages) == snapshot.messages
    assert manager.history.tokens == snapshot.tokens
    assert plan == store.plan(SID)


def test_the_floor_comes_from_the_synthetic_column_and_matches_the_bodies(
    store: SessionStore,
) -> None:
    fill(store, [user("u0"), assistant("s1", synthetic=True), *chat(5, prefix="m")])
    manager = store.manager(SID, cache=None)
    assert manager.history.floor == 2 == store.session_info(SID).floor
    assert stored_rows(manager).decoded() == 0


async def test_compacting_a_resumed_manager_commits_what_the_store_holds(
    store: SessionStore,
) -> None:
    fill(store, chat(30))
    manager = store.manager(SID, summarizer=RecordingSummarizer(), cache=None)
    prepared = await manager.prepare()
    outcome = manager.commit(prepared)
    assert outcome.status == "compacted"
    snapshot = store.snapshot(SID)
    assert ids(manager.messages) == ids(snapshot.messages)
    assert manager.history.floor == store.session_info(SID).floor
    # A second manager over the compacted store reads the summary's row like any other.
    again = store.manager(SID, cache=None)
    assert list(again.messages) == snapshot.messages
    assert again.history.floor == manager.history.floor


def test_a_body_that_does_not_decode_is_a_located_error_when_read(store: SessionStore) -> None:
    fill(store, chat(10))
    seq = store.active_messages(SID, 3, 4)[0].seq
    edit(store, "UPDATE messages SET body = ? WHERE seq = ?", b"\x93not a message", seq)
    manager = store.manager(SID, cache=None)  # the columns are sound: it loads
    assert manager.messages[4].id == "m4"  # the others read as before
    with pytest.raises(StoreError, match=rf"session 's1': message seq {seq} has an undecodable"):
        manager.messages[3]
    with pytest.raises(StoreError, match=rf"message seq {seq}"):
        list(manager.messages)  # and again on the next read: nothing half-decoded is kept
    with pytest.raises(StoreError, match=rf"message seq {seq}"):
        store.verify(SID)  # what a command checks before it writes


@pytest.mark.parametrize(
    ("sql", "column"),
    [
        ("UPDATE messages SET synthetic = 1 WHERE position = 2", "synthetic column"),
        (
            "UPDATE messages SET tool_use_ids = '[\"zz\"]' WHERE position = 5",
            "tool_use_ids column",
        ),
    ],
)
def test_a_body_that_contradicts_its_columns_is_named_when_read(
    store: SessionStore, sql: str, column: str
) -> None:
    fill(store, [user("u0"), *[m for i in range(3) for m in (tool_call(f"c{i}", f"k{i}"),
                                                             tool_result(f"r{i}", f"k{i}"))],
                 assistant("a9")])  # fmt: skip
    edit(store, sql)
    if "tool_use_ids" in sql:  # keep the columns valid: the answer names the same id
        edit(store, "UPDATE messages SET tool_result_ids = '[\"zz\"]' WHERE position = 6")
    manager = store.manager(SID, cache=None)
    with pytest.raises(StoreError, match=column) as caught:
        list(manager.messages)
    assert "message seq" in str(caught.value) and "restore the store" in str(caught.value)


def test_a_history_the_bulk_check_does_not_recognise_is_read_the_careful_way(
    store: SessionStore,
) -> None:
    """Tool results written in another order than their calls: valid, but not what the bulk
    check matches, so the manager is loaded as before (every body decoded and validated)."""
    fill(store, [user("u0"), tool_call("a1", "c1", "c2"), tool_result("u2", "c2", "c1"),
                 assistant("a3")])  # fmt: skip
    manager = store.manager(SID, cache=None)
    assert not isinstance(manager.history.messages, MessageList)
    assert ids(manager.messages) == ["u0", "a1", "u2", "a3"]


async def test_bodies_are_read_by_seq_so_another_process_moving_rows_changes_nothing(
    store: SessionStore,
) -> None:
    """A resumed manager reads an original's body when it first needs it: a compaction in
    another process since (the rows archived, the positions moved) leaves it reading the history
    it loaded. A summary's row, which an undo deletes, came with the history."""
    fill(store, chat(30))
    before = store.snapshot(SID).messages
    stale = store.manager(SID, cache=None)
    with SessionStore.open(store.workspace) as other:
        compactor = other.manager(SID, summarizer=RecordingSummarizer(), cache=None)
        compactor.commit(await compactor.prepare())
        compacted = other.snapshot(SID).messages
        holding_summary = store.manager(SID, cache=None)
        assert stored_rows(holding_summary).decoded() == 0
        other.undo_latest_compaction(SID)
    assert len(compacted) < len(before)
    assert list(stale.messages) == before
    assert list(holding_summary.messages) == compacted  # the summary read as it was loaded
    assert holding_summary.sync() and list(holding_summary.messages) == before


def test_a_row_taken_from_the_session_after_it_loaded_is_a_located_error_when_read(
    store: SessionStore,
) -> None:
    """Bodies are read by seq within the session: a row another writer deleted, or moved to
    another session, is named as missing, never read as the session's message."""
    fill(store, chat(10))
    store.create_session("s2")
    rows = store.active_messages(SID, 2, 4)
    manager = store.manager(SID, cache=None)
    edit(store, "UPDATE messages SET session_id = 's2' WHERE seq = ?", rows[0].seq)
    edit(store, "DELETE FROM messages WHERE seq = ?", rows[1].seq)
    for index, seq in ((2, rows[0].seq), (3, rows[1].seq)):
        with pytest.raises(StoreError, match=rf"message seq {seq} .*no longer in the store"):
            manager.messages[index]
    assert manager.messages[4].id == "m4"  # the others read as before


def test_a_body_first_needed_after_the_store_is_closed_is_a_store_error(
    tmp_path: Path,
) -> None:
    store = SessionStore.open(tmp_path, create=True)
    store.create_session(SID)
    fill(store, chat(80))
    manager = store.manager(SID, cache=None)
    assert manager.messages[0].id == "m0"
    store.close()
    assert manager.messages[1].id == "m1"  # read with the first one, in one read of the store
    assert len(manager.messages) == 160 and manager.history.total_tokens > 0
    with pytest.raises(StoreError, match="closed"):
        manager.messages[100]


def test_a_loop_over_indices_reads_the_store_once_per_block_not_once_per_message() -> None:
    messages = chat(500)
    reads: list[int] = []

    def decode(rows: Sequence[tuple[int, int]]) -> list[Message | Exception]:
        reads.append(len(rows))
        return [messages[row[0]] if row[0] != 13 else StoreError("row 13") for row in rows]

    listed = MessageList([(i, 0) for i in range(len(messages))], RowCodec(decode, 1))
    backwards = [listed[i].id for i in range(len(listed) - 1, 13, -1)]
    assert backwards == [m.id for m in messages[:13:-1]]
    assert len(reads) == -(-len(messages) // 32)  # one read per block of 32
    assert listed[12].id == "m12"  # its block held row 13, which does not read
    with pytest.raises(StoreError, match="row 13"):
        listed[13]
    with pytest.raises(StoreError, match="row 13"):
        listed[:20]
    walked: list[str] = []
    with pytest.raises(StoreError, match="row 13"):
        walked.extend(message.id for message in listed)
    assert walked == [m.id for m in messages[:13]]  # a walk yields up to the bad row
    assert listed.decoded() == len(messages) - 1


# -- the bulk check says "valid" only where validate_history does -------------------------------

IDS = st.sampled_from(["t1", "t2", "t3"])
BLOCKS = st.one_of(
    st.builds(TextContentBlock, st.sampled_from(["x", "hello"])),
    st.builds(ToolUseContentBlock, IDS, st.just("bash"), st.just({})),
    st.builds(ToolResultContentBlock, IDS, st.sampled_from(["", "ok"]), st.booleans()),
)
MESSAGES = st.builds(
    Message,
    st.sampled_from(["m1", "m2"]),
    st.sampled_from(list(Role)),
    st.lists(BLOCKS, min_size=1, max_size=3).map(tuple),
)


def _columns(messages: list[Message]) -> tuple[tuple[object, ...], ...]:
    """The role and tool-id columns as read_stored_snapshot reads them."""
    none = encode_ids(())

    def nulled(text: str) -> str | None:
        return None if text == none else text

    return (
        tuple(0 if m.role is Role.USER else 1 for m in messages),
        tuple(nulled(encode_ids(m.tool_use_ids())) for m in messages),
        tuple(nulled(encode_ids(m.tool_result_ids())) for m in messages),
    )


@settings(max_examples=600, deadline=None)
@given(st.lists(MESSAGES, min_size=1, max_size=6))
def test_what_the_bulk_check_accepts_validate_history_accepts(messages: list[Message]) -> None:
    # The bodies agree with their columns and have content (what each is checked for when it
    # is decoded): then the columns passing means the history passes.
    if _shapes_valid(*_columns(messages)):
        validate_history(messages)


def test_the_bulk_check_accepts_the_usual_history() -> None:
    messages = [user("u0"), tool_call("a1", "c1", "c2"), tool_result("u2", "c1", "c2"),
                assistant("a3"), user("u4")]  # fmt: skip
    validate_history(messages)
    assert _shapes_valid(*_columns(messages))
    broken = [user("u0"), tool_call("a1", "c1"), user("u2")]
    with pytest.raises(HistoryError):
        validate_history(broken)
    assert not _shapes_valid(*_columns(broken))
