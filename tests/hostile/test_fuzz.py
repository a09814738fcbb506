"""Hypothesis fuzz of the message decoder and of the store reader (seeded: derandomized).

decode_message: random bytes, wrong types, missing fields, invalid UTF-8 give a msgspec error
naming what is wrong (never another exception); a 50 MB text message decodes and round-trips.

The store reader: one message row of a real store file corrupted with sqlite3 (random bytes in
its body, wrong-typed columns), then read with SessionStore (snapshot, active_messages,
messages_after, manager) and StoreTailer. Each read either returns exactly the history as it was
(the corruption did not touch what it reads) or raises StoreError naming the session, the seq
and the field; never another exception, never a different history.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Message, Role, TextContentBlock, decode_message, encode_message
from engine.layout import metis_dir, store_path
from engine.store import SessionStore, StoreError
from engine.store.tail import StoreTailer
from metis_compaction_tui.demo.workload import scripted_session
from tests.engine.store.test_store_processes import QUIET
from tests.hostile.conftest import FULL

PROFILE = settings.get_profile("hostile")
SESSION = "s"

# -- decode_message --------------------------------------------------------------------------

json_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats()
    | st.text()
    | st.binary(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


def assert_decodes_or_names_the_problem(data: bytes) -> None:
    try:
        message = decode_message(data)
    except msgspec.MsgspecError as error:
        assert str(error), "an error that says nothing"
        return
    assert isinstance(message, Message)
    assert decode_message(encode_message(message)) == message  # whatever decodes round-trips


@settings(PROFILE)
@given(st.binary(max_size=512))
def test_random_bytes_decode_or_raise_a_msgspec_error(data: bytes) -> None:
    assert_decodes_or_names_the_problem(data)


@settings(PROFILE)
@given(
    id=json_like,
    role=st.sampled_from(["user", "assistant", "system", 3, None]) | json_like,
    content=json_like,
    metadata=json_like,
    drop=st.sets(st.sampled_from(["id", "role", "content", "metadata"])),
)
def test_wrong_types_and_missing_fields_name_the_field(
    id: object, role: object, content: object, metadata: object, drop: set[str]
) -> None:
    fields = {"id": id, "role": role, "content": content, "metadata": metadata}
    for name in drop:
        del fields[name]
    data = msgspec.msgpack.encode(fields)
    try:
        decode_message(data)
    except msgspec.MsgspecError as error:
        text = str(error)
        assert "$." in text or "missing required field" in text or "Expected" in text, text


def test_a_wrong_type_is_located_by_its_path() -> None:
    bad = {"id": "m1", "role": "user", "content": [{"type": "text", "text": 5}]}
    with pytest.raises(msgspec.ValidationError, match=r"\$\.content\[0\]\.text"):
        decode_message(msgspec.msgpack.encode(bad))
    with pytest.raises(msgspec.ValidationError, match="missing required field `role`"):
        decode_message(msgspec.msgpack.encode({"id": "m1", "content": []}))


@settings(PROFILE)
@given(st.binary(min_size=1, max_size=64).filter(lambda b: not _is_utf8(b)))
def test_invalid_utf8_in_a_text_is_a_decode_error(raw: bytes) -> None:
    good = encode_message(Message("m1", Role.USER, (TextContentBlock("x" * len(raw)),)))
    # Swap the text's bytes for invalid UTF-8 of the same length: a str header with a bad body.
    corrupt = good.replace(b"x" * len(raw), raw)
    with pytest.raises(msgspec.MsgspecError):
        decode_message(corrupt)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_a_50_mb_message_decodes_and_round_trips() -> None:
    text = ("0123456789abcdef" * 65_536) * 50  # 50 MiB
    message = Message("big", Role.USER, (TextContentBlock(text),))
    data = encode_message(message)
    assert len(data) > 50 * 1024 * 1024
    decoded = decode_message(data)
    assert decoded == message and decoded.content[0].text == text  # type: ignore[union-attr]


# -- the store reader -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workspace = tmp_path_factory.mktemp("fuzz-template")
    with SessionStore.open(workspace, create=True) as store:
        store.create_session(SESSION, config=QUIET)
        manager = store.manager(SESSION, cache=None)
        for turn in scripted_session(4, 10):
            for message in turn:
                manager.append(message)
    return workspace


def read_all(workspace: Path) -> tuple[list[str], list[int], list[str], list[str]]:
    """Every reader over the store: what each returns, as ids and counts."""
    with SessionStore.open(workspace) as store:
        snapshot = store.snapshot(SESSION)
        active = store.active_messages(SESSION)
        after = store.messages_after(SESSION, 0)
        manager = store.manager(SESSION, cache=None)
        assert [m.id for m in manager.messages] == [m.id for m in snapshot.messages]
        assert manager.history.tokens == snapshot.tokens
    assert [m.message.id for m in active] == [m.id for m in snapshot.messages]
    assert [m.tokens for m in active] == snapshot.tokens
    return (
        [m.id for m in snapshot.messages],
        snapshot.tokens,
        [m.message.id for m in after],
        [m.message.id for m in active],
    )


def tail_all(workspace: Path) -> tuple[list[str], str | None]:
    tailer = StoreTailer(workspace, start="beginning", use_watchfiles=False)
    seen: list[str] = []
    for _ in range(50):
        batch = tailer.read_now()
        if not batch:
            break
        seen += [m.message.id for u in batch for m in u.new_messages]
    return seen, tailer.problem


def located(text: str, seq: int, field: str) -> bool:
    return f"seq {seq}" in text and repr(SESSION) in text and field in text


COLUMN_VALUES: dict[str, Any] = {
    "body": st.binary(max_size=256)
    | st.text(max_size=64)
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(),
    "tokens": st.text(min_size=1, max_size=8) | st.binary(min_size=1, max_size=8) | st.floats(),
    "position": st.text(min_size=1, max_size=8) | st.binary(min_size=1, max_size=8),
    "tool_use_ids": st.text(max_size=16) | st.binary(max_size=16),
    "tool_result_ids": st.text(max_size=16) | st.binary(max_size=16),
}


@settings(PROFILE, max_examples=300 if FULL else 40)
@given(
    column=st.sampled_from(sorted(COLUMN_VALUES)),
    data=st.data(),
    row=st.integers(min_value=0, max_value=10_000),
)
def test_a_corrupt_message_row_is_a_located_error_or_harmless(
    template: Path, tmp_path_factory: pytest.TempPathFactory, column: str, data: Any, row: int
) -> None:
    value = data.draw(COLUMN_VALUES[column], label="value")
    workspace = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(metis_dir(template), metis_dir(workspace))
    expected = read_all(workspace)
    expected_tail, _ = tail_all(workspace)
    conn = sqlite3.connect(store_path(workspace))
    seqs = [r[0] for r in conn.execute("SELECT seq FROM messages ORDER BY seq")]
    seq = seqs[row % len(seqs)]
    try:
        conn.execute(f"UPDATE messages SET {column} = ? WHERE seq = ?", (value, seq))
        conn.commit()
        stored_type = conn.execute(
            f"SELECT typeof({column}) FROM messages WHERE seq = ?", (seq,)
        ).fetchone()[0]
    except sqlite3.IntegrityError:
        return  # the schema refused the corruption itself: nothing to read
    finally:
        conn.close()

    try:
        got = read_all(workspace)
    except StoreError as error:
        assert located(str(error), seq, column if column != "tool_result_ids" else "tool_"), str(
            error
        )
    else:
        if column == "tokens" and stored_type == "integer":
            # Column affinity made it a real count ('7' is stored as 7): a legitimate value.
            assert got[0] == expected[0] and got[2:] == expected[2:]
        else:
            assert got == expected, "a corrupt row gave a different history"

    seen, problem = tail_all(workspace)
    if problem is None:
        assert seen == expected_tail
    else:  # the tailer stays on the row and says where it is
        assert seen == expected_tail[: len(seen)]
        assert f"seq {seq}" in problem, problem
