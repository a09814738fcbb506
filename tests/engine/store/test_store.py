"""engine.store on real SQLite files: the file, the schema, appends, compaction commits, undo,
spend, and what a reader gets back (DESIGN "The session store", docs/store-api.md)."""

from __future__ import annotations

import os
import sqlite3
import stat
from decimal import Decimal
from pathlib import Path

import msgspec
import pytest

from engine import (
    CompactionConfig,
    CompactionRecord,
    CompactionStarted,
    History,
    Message,
    Role,
    SpanChanged,
    TextContentBlock,
    plan_turn,
    validate_history,
)
from engine.layout import metis_dir, store_path
from engine.store import SessionStore, StoreError, UndoRefused, UnknownSession
from engine.store.rows import encode_config
from engine.store.schema import SCHEMA_VERSION
from metis_compaction_tui.demo.workload import scripted_session
from tests.history_builders import (
    SID,
    SMALL_CONFIG,
    FailingSummarizer,
    RecordingSummarizer,
    assistant,
    chat,
    fill,
    ids,
    tool_call,
    tool_result,
    user,
)

SMALL = SMALL_CONFIG


def assert_matches(store: SessionStore, manager: object) -> None:
    """The store and a manager over it agree on everything a turn plan reads."""
    snapshot = store.snapshot(SID)
    info = store.session_info(SID)
    assert ids(snapshot.messages) == ids(manager.messages)  # type: ignore[attr-defined]
    assert snapshot.tokens == manager.history.tokens  # type: ignore[attr-defined]
    assert info.floor == manager.history.floor  # type: ignore[attr-defined]
    assert info.total_tokens == manager.history.total_tokens  # type: ignore[attr-defined]
    assert info.message_count == len(snapshot.messages)
    validate_history(snapshot.messages)


# -- the file ------------------------------------------------------------------------------------


def test_the_store_is_created_owner_only_in_wal_mode(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path, create=True)
    assert store.path == store_path(tmp_path)
    assert stat.S_IMODE(os.stat(metis_dir(tmp_path)).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    conn = sqlite3.connect(store.path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()


def test_opening_without_create_never_makes_anything(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"sessions\.sqlite does not exist"):
        SessionStore.open(tmp_path)
    assert not metis_dir(tmp_path).exists()
    with pytest.raises(StoreError, match=r"workspace .* does not exist"):
        SessionStore.open(tmp_path / "nowhere", create=True)


def test_a_newer_schema_is_refused_and_never_rewritten(tmp_path: Path) -> None:
    SessionStore.open(tmp_path, create=True).close()
    path = store_path(tmp_path)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 7")
    conn.close()
    before = path.read_bytes()
    for create in (False, True):
        with pytest.raises(StoreError) as raised:
            SessionStore.open(tmp_path, create=create)
        assert str(raised.value) == (
            f"{path} is schema version 7; this metis-compaction-tui knows up to {SCHEMA_VERSION}: "
            "upgrade it"
        )
    assert path.read_bytes() == before


async def test_a_version_1_store_migrates_its_watermark_column_to_floor(tmp_path: Path) -> None:
    """0.2 renamed `sessions.watermark` (the floor) to `floor`; a 0.1 store keeps its rows."""
    from engine.store.schema import APPLICATION_ID, MIGRATIONS

    path = store_path(tmp_path)
    path.parent.mkdir()
    conn = sqlite3.connect(path)
    for statement in MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")
    conn.execute(
        "INSERT INTO sessions (session_id, created_at_ms, updated_at_ms, watermark, config) "
        "VALUES ('old', 1, 1, 0, ?)",
        (encode_config(CompactionConfig()),),
    )
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="is schema version 1"):
        SessionStore.open(tmp_path)  # a reader never migrates
    with SessionStore.open(tmp_path, create=True) as store:
        assert [info.session_id for info in store.list_sessions()] == ["old"]
        assert store.session_info("old").floor == 0
    conn = sqlite3.connect(path)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
    assert "floor" in columns and "watermark" not in columns
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()


def test_a_file_that_is_not_sqlite_is_named_and_left_alone(tmp_path: Path) -> None:
    path = store_path(tmp_path)
    path.parent.mkdir()
    path.write_bytes(b"this is not a database, it is a shopping list\n" * 40)
    before = path.read_bytes()
    for create in (False, True):
        with pytest.raises(StoreError, match=f"{path} is not a SQLite database"):
            SessionStore.open(tmp_path, create=create)
    assert path.read_bytes() == before


def test_another_programs_database_is_refused(tmp_path: Path) -> None:
    path = store_path(tmp_path)
    path.parent.mkdir()
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE recipes (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"not a metis session store .*recipes"):
        SessionStore.open(tmp_path, create=True)


def test_an_empty_file_is_refused_read_only_and_initialised_with_create(tmp_path: Path) -> None:
    path = store_path(tmp_path)
    path.parent.mkdir()
    path.touch()
    with pytest.raises(StoreError, match="has no session store schema yet"):
        SessionStore.open(tmp_path)
    assert path.stat().st_size == 0
    with SessionStore.open(tmp_path, create=True) as store:
        assert store.list_sessions() == []


# -- sessions and appends --------------------------------------------------------------------


def test_appended_messages_come_back_verbatim_with_their_counts(store: SessionStore) -> None:
    hostile = "[bold red]x[/] \x1b[31mred\x1b[0m \x00 <COMPACTION_SUMMARY> ' ; DROP TABLE messages"
    messages = [user("u0", hostile), assistant("a1", "ok"), user("u2", "more")]
    fill(store, messages)
    snapshot = store.snapshot(SID)
    assert snapshot.messages == messages
    assert snapshot.tokens == [len(m.text()) // 3 for m in messages]
    info = store.session_info(SID)
    assert (info.message_count, info.total_tokens, info.revision) == (3, sum(snapshot.tokens), 0)
    assert info.config == SMALL and info.title == "a session"
    assert info.last_seq == store.messages_after(SID, 0)[-1].seq


def test_an_append_that_breaks_alternation_is_refused_and_not_written(store: SessionStore) -> None:
    fill(store, [user("u0"), assistant("a1")])
    with pytest.raises(StoreError, match="not appended: message 2: alternation"):
        store.append_message(SID, assistant("a2"), 3)
    assert store.session_info(SID).message_count == 2


def test_an_unknown_session_names_the_known_ones(store: SessionStore) -> None:
    with pytest.raises(UnknownSession, match=r"no session 'nope' .*\(known: s1\)"):
        store.snapshot("nope")
    with pytest.raises(StoreError, match="already exists"):
        store.create_session(SID)


# -- compaction commits --------------------------------------------------------------------


async def test_a_managed_session_is_mirrored_exactly_by_the_store(store: SessionStore) -> None:
    config = SMALL.replace(compaction_threshold_tokens=3_000, compaction_hard_cap_tokens=6_000)
    store.update_config(SID, config)
    manager = store.manager(SID, cache=None)
    compactions = 0
    for turn in scripted_session(4, 24):
        manager.append(turn[0])
        compactions += (await manager.before_turn()).status == "compacted"
        for message in turn[1:]:
            manager.append(message)
    assert compactions >= 3
    assert_matches(store, manager)
    reloaded = store.manager(SID, cache=None)
    assert ids(reloaded.messages) == ids(manager.messages)
    assert reloaded.plan() == manager.plan()
    # The originals are kept, in order, beside the record that replaced them.
    for stored in store.compactions(SID):
        originals = store.archived_messages(stored.compaction_id)
        assert len(originals) == stored.record.span_message_count
        assert all(
            m.position is None and m.compaction_id == stored.compaction_id for m in originals
        )
        validate_history([m.message for m in originals])


async def test_a_view_is_one_consistent_read_and_its_log_matches_the_bodies(
    store: SessionStore,
) -> None:
    config = SMALL.replace(compaction_threshold_tokens=3_000, compaction_hard_cap_tokens=6_000)
    store.update_config(SID, config)
    manager = store.manager(SID, cache=None)
    for turn in scripted_session(4, 24):
        manager.append(turn[0])
        await manager.before_turn()
        for message in turn[1:]:
            manager.append(message)
    store.undo_latest_compaction(SID)
    view = store.view(SID)
    written = store.messages_after(SID, 0, include_replacements=True)
    # The log is read from the columns; the bodies say what it must be.
    assert list(view.log) == [
        (m.tokens, m.message.opens_turn, m.message.id if m.introduced_by else None) for m in written
    ]
    users = [m.message for m in written if m.message.role == Role.USER]
    assert any(m.tool_result_ids() for m in users) and any(m.synthetic for m in users)
    assert view.snapshot == store.snapshot(SID)
    assert view.compactions == store.compactions(SID)
    assert len(view.compactions) >= 3 and view.compactions[-1].undone
    assert view.info.last_seq == written[-1].seq


async def test_a_changed_span_raises_span_changed_and_writes_nothing(store: SessionStore) -> None:
    fill(store, chat(4, size=300))
    first = store.manager(SID, summarizer=RecordingSummarizer(), cache=None)
    second = store.manager(SID, summarizer=RecordingSummarizer(), cache=None)
    prepared_first, prepared_second = await first.prepare(), await second.prepare()
    first.commit(prepared_first)
    before = (store.snapshot(SID), store.session_info(SID), store.compactions(SID))
    with pytest.raises(SpanChanged):
        second.commit(prepared_second)
    assert (store.snapshot(SID), store.session_info(SID), store.compactions(SID)) == before
    # The loser has already taken the winner's result: nothing is left to sync.
    assert ids(second.messages) == ids(first.messages)
    assert second.revision == first.revision
    assert not second.sync()


async def test_messages_appended_while_summarizing_are_kept(
    store: SessionStore, tmp_path: Path
) -> None:
    fill(store, chat(4, size=300))
    manager = store.manager(SID, summarizer=RecordingSummarizer(), cache=None)
    prepared = await manager.prepare()
    with SessionStore.open(tmp_path) as writer:  # metis dev, appending meanwhile
        fill(writer, [user("late-u", "late"), assistant("late-a", "later")])
    manager.commit(prepared)
    active = ids(store.snapshot(SID).messages)
    assert active[-2:] == ["late-u", "late-a"]
    assert active[-4:-2] == ["m6", "m7"]  # the preserved tail, moved up, untouched
    manager.sync()
    validate_history(manager.messages)


def test_a_replacement_longer_than_its_span_shifts_past_the_unique_index(
    store: SessionStore,
) -> None:
    """A one-message span replaced by filler + summary + filler: later positions move *up*,
    which a naive UPDATE trips the UNIQUE (session_id, position) index on."""
    messages = chat(5)
    fill(store, messages)
    summary = user("S", "summary", synthetic=True)
    fillers = [assistant("F1", "ok", synthetic=True), assistant("F2", "ok", synthetic=True)]
    record = CompactionRecord(
        kind="summary", turn_id="t", watermark_before=1, watermark_after=2, span_message_count=1,
        span_token_count_in=10, span_token_count_out=3, replacement_count=3,
    )  # fmt: skip
    revision = store.commit_replacement(
        SID, 1, ["m1"], [fillers[0], summary, fillers[1]], [1, 2, 1], record, Decimal(0)
    )
    assert revision == 1
    active = store.active_messages(SID)
    assert ids([m.message for m in active]) == ["m0", "F1", "S", "F2", *ids(messages[2:])]
    assert [m.position for m in active] == list(range(len(messages) + 2))
    assert store.session_info(SID).floor == 4  # just past the last synthetic message
    store.undo_latest_compaction(SID)
    assert ids(store.snapshot(SID).messages) == ids(messages)


# -- undo ---------------------------------------------------------------------------------------


async def test_undo_restores_the_originals_and_moves_the_watermark_back(
    store: SessionStore,
) -> None:
    original = chat(4, size=300)
    fill(store, original)
    before = store.snapshot(SID)
    manager = store.manager(SID, summarizer=RecordingSummarizer(), cache=None)
    manager.commit(await manager.prepare())
    fill(store, [user("after-u"), assistant("after-a")])
    compacted = store.session_info(SID)
    undone = store.undo_latest_compaction(SID)
    assert undone.undone and undone.compaction_id == 1
    after = store.snapshot(SID)
    assert after.messages == [*before.messages, user("after-u"), assistant("after-a")]
    assert after.tokens[: len(before.tokens)] == before.tokens
    info = store.session_info(SID)
    assert info.floor == 0 < compacted.floor
    assert info.revision == compacted.revision + 1
    assert store.archived_messages(1) == []
    assert manager.sync() and ids(manager.messages) == ids(after.messages)
    assert_matches(store, manager)
    with pytest.raises(UndoRefused) as refused:
        store.undo_latest_compaction(SID)
    assert refused.value.reason == "session 's1' has no compaction to undo"


async def test_a_cache_row_is_backed_by_the_compactions_in_effect(store: SessionStore) -> None:
    fill(store, chat(4, size=300))
    manager = store.manager(SID, summarizer=RecordingSummarizer(), cache=None)
    committed = manager.commit(await manager.prepare())
    key = committed.record.cache_key
    assert key and store.cache_backers() == {key: [(SID, "a session")]}
    store.undo_latest_compaction(SID)
    assert store.cache_backers() == {}


async def test_undo_is_refused_while_a_later_compaction_stands_on_it(store: SessionStore) -> None:
    fill(store, chat(3, size=300))
    manager = store.manager(SID, summarizer=RecordingSummarizer(), cache=None)
    assert (await manager.before_turn()).status == "compacted"
    fill(store, chat(6, size=300, prefix="n"))
    # At the hard cap with a failing summarizer: §3.4 truncation from the prefix end, which
    # takes the first summary with it.
    failing = store.manager(SID, summarizer=FailingSummarizer(), cache=None)
    outcome = await failing.before_turn()
    assert outcome.status == "truncated"
    with pytest.raises(
        UndoRefused, match="compaction 2 \\(truncation\\) took compaction 1's summary"
    ):
        store.undo_compaction(SID, 1)
    assert store.undo_latest_compaction(SID).compaction_id == 2
    assert store.undo_latest_compaction(SID).compaction_id == 1
    assert ids(store.snapshot(SID).messages) == ids([*chat(3, size=300), *chat(6, prefix="n")])


async def test_undo_of_an_earlier_compaction_names_the_later_one(store: SessionStore) -> None:
    fill(store, chat(3, size=300))
    manager = store.manager(SID, summarizer=RecordingSummarizer(), cache=None)
    manager.commit(await manager.prepare())
    for message in chat(3, size=300, prefix="n"):
        manager.append(message)
    manager.commit(await manager.prepare())
    with pytest.raises(UndoRefused, match="compaction 2 \\(summary\\) came after compaction 1"):
        store.undo_compaction(SID, 1)
    with pytest.raises(UndoRefused, match="no compaction 9 in effect"):
        store.undo_compaction(SID, 9)


# -- spend and sync ------------------------------------------------------------------------


async def test_two_processes_charging_one_session_add_up(
    store: SessionStore, tmp_path: Path
) -> None:
    fill(store, chat(4, size=300))
    here = store.manager(SID, summarizer=RecordingSummarizer(cost=Decimal("0.01")), cache=None)
    with SessionStore.open(tmp_path) as other_store:
        there = other_store.manager(
            SID, summarizer=RecordingSummarizer(cost=Decimal("0.02")), cache=None
        )
        await here.prepare()  # charged, not committed
        await there.prepare()
    assert store.session_info(SID).spent_usd == Decimal("0.03")
    assert here.sync()  # the other's spend changed the total: the next turn sees it
    assert here.spent_usd == Decimal("0.03")


def test_snapshot_if_changed_is_none_until_something_changes(store: SessionStore) -> None:
    fill(store, chat(2))
    manager = store.manager(SID, cache=None)
    assert store.snapshot_if_changed(SID, manager.revision) is None
    assert not manager.sync()


# -- reading -------------------------------------------------------------------------------


async def test_readers_return_rows_in_order_and_only_those_asked(store: SessionStore) -> None:
    fill(store, chat(4, size=300))
    manager = store.manager(SID, summarizer=RecordingSummarizer(), cache=None)
    outcome = await manager.before_turn("turn-1")
    assert outcome.status == "compacted"
    appended = store.messages_after(SID, 0)
    assert ids([m.message for m in appended]) == ids(chat(4))
    everything = store.messages_after(SID, 0, include_replacements=True)
    assert len(everything) == len(appended) + outcome.record.replacement_count  # type: ignore[union-attr]
    assert [m.seq for m in everything] == sorted(m.seq for m in everything)
    last = appended[3].seq
    assert store.messages_after(SID, last, limit=2) == appended[4:6]
    window = store.active_messages(SID, 1, 3)
    assert [m.position for m in window] == [1, 2]
    events = store.events(SID)
    assert [e.event_type for e in events] == [
        "session.compaction_started",
        "session.compaction_completed",
    ]
    assert isinstance(events[0].event, CompactionStarted) and events[0].event.turn_id == "turn-1"
    assert store.events(SID, after_id=events[0].event_id) == events[1:]
    assert store.events("other") == []
    assert store.data_version() == store.data_version()


def test_a_message_body_that_will_not_decode_is_a_store_error(store: SessionStore) -> None:
    fill(store, [user("u0")])
    conn = sqlite3.connect(store.path)
    conn.execute("UPDATE messages SET body = x'c1c1'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="undecodable body"):
        store.snapshot(SID)


def test_text_blocks_keep_their_exact_bytes(store: SessionStore) -> None:
    text = "tab\tnewline\n\u202eRTL override\u202c emoji \U0001f600 and \\x1b literal"
    message = Message(id="u0", role=Role.USER, content=(TextContentBlock(text),))
    store.append_message(SID, message, 1)
    assert store.snapshot(SID).messages[0].content[0] == TextContentBlock(text)


# -- loading a history another program wrote -------------------------------------------------


def write_raw(store: SessionStore, messages: list[Message]) -> None:
    """Rows as another writer might leave them: no validation on the way in."""
    from engine.store.sql import insert_message

    with store._write() as conn:
        for position, message in enumerate(messages):
            insert_message(conn, SID, position, message, 1, None, 0)
        conn.execute(
            "UPDATE sessions SET message_count = ?, total_tokens = ? WHERE session_id = ?",
            (len(messages), len(messages), SID),
        )


@pytest.mark.parametrize(
    ("broken", "rule"),
    [
        ([user("u0"), user("u1")], "alternation"),
        ([user("u0"), tool_call("a1", "c1"), user("u2")], "unanswered_tool_use"),
        ([user("u0"), assistant("a1"), tool_result("u2", "c9")], "orphan_tool_result"),
        ([user("u0"), tool_call("a1", "c1", "c2"), tool_result("u2", "c1")], "unanswered_tool_use"),
        (
            [user("u0"), tool_call("a1", "c1"), tool_result("u2", "c1", "c1")],
            "duplicate_tool_result",
        ),
        ([Message(id="e", role=Role.USER, content=())], "empty_content"),
    ],
)
def test_manager_refuses_a_stored_history_that_breaks_a_rule(
    store: SessionStore, broken: list[Message], rule: str
) -> None:
    write_raw(store, broken)
    with pytest.raises(StoreError, match=rule):
        # The column rules are checked as the manager is made; a body's own (its content) as it
        # is first read: every message is read here.
        list(store.manager(SID, cache=None).messages)
    store.snapshot(SID)  # plain reading is still possible: the app can show what is there


def test_manager_accepts_every_valid_history_the_column_check_sees(store: SessionStore) -> None:
    history = [m for turn in scripted_session(2, 20) for m in turn]
    tail = [user("ask"), tool_call("pending", "p1")]  # a tool call still running is fine
    write_raw(store, [*history, *tail])
    assert ids(store.manager(SID, cache=None).messages) == [*ids(history), *ids(tail)]


# -- the light plan (the session list) ---------------------------------------------------------


def _full_plan(store: SessionStore, session_id: str) -> object:
    snap = store.snapshot(session_id)
    info = store.session_info(session_id)
    history = History(snap.messages, stable_prefix_end=snap.stable_prefix_end, tokens=snap.tokens)
    return plan_turn(history, info.config, info.spent_usd)


@pytest.mark.parametrize("strategy", ["summarize", "recompact", "mask", "hybrid"])
def test_the_plan_from_the_light_columns_equals_the_plan_from_every_body(
    demo_workspace: Path, strategy: str
) -> None:
    with SessionStore.open(demo_workspace) as store:
        sessions = store.list_sessions()
        assert len(sessions) >= 3
        for info in sessions:
            knobs = msgspec.structs.replace(info.config, compaction_strategy=strategy)
            store.update_config(info.session_id, knobs)
            assert store.plan(info.session_id) == _full_plan(store, info.session_id)


async def test_the_light_plan_follows_compactions_and_tool_cycles(store: SessionStore) -> None:
    fill(store, chat(6, size=300))
    manager = store.manager(SID, summarizer=RecordingSummarizer(), cache=None)
    manager.commit(await manager.prepare())
    fill(store, [user("u-t"), tool_call("a-t", "call-9"), tool_result("r-t", "call-9")])
    fill(store, [assistant("a-end")])
    assert store.plan(SID) == _full_plan(store, SID)


async def test_kept_plan_histories_read_only_new_rows_and_agree_with_a_full_read(
    store: SessionStore,
) -> None:
    """The session list refreshes every second: with PlanHistories a session that only grew
    reads the rows appended since (its kept History is extended, not read again); a compaction
    or an undo (a new revision) reads it whole; every plan equals the one from every body."""
    from engine.store import PlanHistories

    kept = PlanHistories()
    fill(store, chat(6, size=300))
    assert store.plan(SID, kept=kept) == _full_plan(store, SID)
    first = kept._kept[SID][1]
    assert len(first) == 12
    fill(store, [user("u-more"), assistant("a-more")])
    assert store.plan(SID, kept=kept) == _full_plan(store, SID)
    assert kept._kept[SID][1] is first and len(first) == 14, "extended, not read again"
    manager = store.manager(SID, summarizer=RecordingSummarizer(), cache=None)
    manager.commit(await manager.prepare())
    assert store.plan(SID, kept=kept) == _full_plan(store, SID)
    compacted = kept._kept[SID][1]
    assert compacted is not first, "a compaction renumbers positions: read again"
    fill(store, [user("u-t"), tool_call("a-t", "call-9"), tool_result("r-t", "call-9")])
    assert store.plan(SID, kept=kept) == _full_plan(store, SID)
    assert kept._kept[SID][1] is compacted
    store.undo_latest_compaction(SID)
    assert store.plan(SID, kept=kept) == _full_plan(store, SID)
    assert kept._kept[SID][1] is not compacted
    kept.retain(set())
    assert not kept._kept


def test_a_kept_plan_history_follows_a_stable_prefix_declared_ahead(tmp_path: Path) -> None:
    """A prefix declared before its messages arrived counts only what exists: as messages
    arrive the prefix grows, so the kept history is read again rather than extended."""
    from engine.store import PlanHistories

    with SessionStore.open(tmp_path, create=True) as store:
        store.create_session(SID, config=SMALL, stable_prefix_end=4)
        kept = PlanHistories()
        fill(store, chat(1, size=50))
        assert store.plan(SID, kept=kept) == _full_plan(store, SID)
        fill(store, chat(3, size=50, prefix="n"))
        assert store.plan(SID, kept=kept) == _full_plan(store, SID)
        assert kept._kept[SID][1].stable_prefix_end == 4
