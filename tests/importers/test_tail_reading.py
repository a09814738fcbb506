"""TranscriptTail's reading: in chunks (bounded memory), and an unfinished last line is not read
and parsed again on every poll. Real files written by tests/transcript_writer.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from metis_compaction_tui.importers import TranscriptTail, load_transcript
from metis_compaction_tui.importers import tail as tail_module
from tests.transcript_writer import ClaudeCodeWriter


def write_log(path: Path, turns: int, seed: int = 3) -> ClaudeCodeWriter:
    writer = ClaudeCodeWriter(seed, compact_every=6)
    with path.open("w") as out:
        for _ in range(turns):
            out.writelines(writer.turn())
    return writer


@pytest.mark.parametrize("chunk", [1, 97, 4096])
def test_reading_in_chunks_gives_what_one_read_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    log = tmp_path / "s.jsonl"
    write_log(log, 20)
    whole = load_transcript(log)
    monkeypatch.setattr(tail_module, "_CHUNK_BYTES", chunk)
    chunked = load_transcript(log)
    assert chunked.messages == whole.messages
    assert chunked.agent_compactions == whole.agent_compactions
    assert chunked.recorded_usage == whole.recorded_usage
    assert chunked.line_count == whole.line_count


def test_an_unfinished_last_line_is_not_parsed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "s.jsonl"
    writer = write_log(log, 10)
    next_turn = writer.turn()
    calls: list[int] = []
    real = tail_module._split_lines

    def counting(data: bytes, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        calls.append(len(data))
        return real(data, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tail_module, "_split_lines", counting)
    tail = TranscriptTail(log)
    first = tail.poll()
    line = next_turn[0]
    with log.open("a") as out:
        out.write(line[:30])  # the agent is writing a record
    tail.poll()
    calls.clear()
    for _ in range(3):
        assert not tail.poll().changed
    assert calls == []  # nothing appended: nothing read or parsed
    with log.open("a") as out:
        out.write(line[30:-20])  # more of the same line, still no newline
    assert not tail.poll().changed
    assert calls == []  # only the new bytes were looked at, for a newline
    with log.open("a") as out:
        out.write(line[-20:])  # finished (with its newline)
    update = tail.poll()
    assert calls and update.changed
    assert len(tail.transcript().messages) == len(first.messages) + 1
    assert tail.transcript().messages == load_transcript(log).messages
