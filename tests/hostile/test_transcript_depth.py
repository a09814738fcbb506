"""Transcript lines no agent writes: nested 100,000 deep, a tool input nested 5,000 deep, a 50 MB
line, an unfinished last line, invalid UTF-8. Each is skipped and counted with its line number by
the real CLI (`status FILE`, `status FILE --json`, `compact FILE --dry-run`), the lines around it
are read, and nothing ends in a traceback."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import pytest

from engine.messages import ToolUseContentBlock
from metis_compaction_tui.importers import TranscriptTail, load_transcript
from metis_compaction_tui.importers.bounds import MAX_DEPTH, MAX_LINE_BYTES, too_deep
from tests.cli_process import run_cli

SESSION = "5e55a0de-0000-4000-8000-00000000beef"


def _record(kind: str, uuid: str, parent: str | None, message: dict[str, object]) -> bytes:
    record = {
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": SESSION,
        "type": kind,
        "uuid": uuid,
        "timestamp": "2026-01-05T10:00:00.000Z",
        "message": message,
    }
    return json.dumps(record).encode()


def _question(uuid: str, parent: str | None, text: str) -> bytes:
    return _record("user", uuid, parent, {"role": "user", "content": text})


def _answer(uuid: str, parent: str, text: str) -> bytes:
    content = [{"type": "text", "text": text}]
    message = {"id": f"msg_{uuid}", "role": "assistant", "content": content}
    return _record("assistant", uuid, parent, message)


def _deep_record(depth: int) -> bytes:
    """A user record whose `extra` field nests `depth` arrays."""
    head = _question("deep", "a1", "deep")[:-1]
    return head + b', "extra": ' + b"[" * depth + b"]" * depth + b"}"


def _deep_tool_input(depth: int) -> bytes:
    """An assistant tool call whose input nests `depth` arrays below its one key."""
    nested = "[" * depth + "]" * depth
    return (
        b'{"parentUuid": "a1", "isSidechain": false, "type": "assistant", "uuid": "tool",'
        b' "sessionId": "' + SESSION.encode() + b'", "message": {"id": "msg_tool",'
        b' "role": "assistant", "content": [{"type": "tool_use", "id": "toolu_deep",'
        b' "name": "Bash", "input": {"x": ' + nested.encode() + b"}}]}}"
    )


class BigLine:
    """A user record whose text is `size` bytes, written in pieces (never held whole here)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def write(self, out: BinaryIO) -> None:
        head, tail = _question("big", "a1", "@").split(b"@")
        out.write(head)
        piece = b"x" * (8 << 20)
        for start in range(0, self.size, len(piece)):
            out.write(piece[: self.size - start])
        out.write(tail)


# Each case: the hostile line, written as line 3 between good records, and the kind it counts as.
# The record after it names the line before it as parent, so the chain goes on past the gap.
CASES: dict[str, tuple[Callable[[], bytes | BigLine], str]] = {
    "record_100k_deep": (lambda: _deep_record(100_000), "too_deep"),
    "tool_input_5k_deep": (lambda: _deep_tool_input(5_000), "too_deep"),
    "line_50_mb": (lambda: BigLine(50 << 20), "too_long"),
    "invalid_utf8": (lambda: _question("bad", "a1", "ok")[:-3] + b'\xff\xfe"}}', "invalid"),
}


def _write(path: Path, hostile: bytes | BigLine, *, unfinished: bytes = b"") -> None:
    with path.open("wb") as out:
        out.write(_question("q1", None, "first question") + b"\n")
        out.write(_answer("a1", "q1", "first answer") + b"\n")
        if isinstance(hostile, BigLine):
            hostile.write(out)
        else:
            out.write(hostile)
        out.write(b"\n")
        out.write(_question("q2", "a1", "second question") + b"\n")
        out.write(_answer("a2", "q2", "second answer") + b"\n")
        out.write(unfinished)


def _check_cli(path: Path, kind: str, line: int) -> None:
    done = run_cli("status", str(path))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert f"1 {kind}" in done.stdout  # `skipped    1 too_deep, ...`
    assert f"1 line skipped (line {line}: " in done.stdout
    # The preview is the one of the file without that line (here: nothing to compact, exit 1).
    clean = path.with_name(f"clean-{path.name}")
    with path.open("rb") as source, clean.open("wb") as out:
        out.writelines(kept for n, kept in enumerate(source, 1) if n != line)
    done, expected = (run_cli("compact", str(p), "--dry-run") for p in (path, clean))
    assert (done.returncode, done.stdout) == (expected.returncode, expected.stdout)
    assert "Traceback" not in done.stderr + done.stdout
    assert f"1 line skipped (line {line}: " in done.stderr  # stdout is the preview
    done = run_cli("status", str(path), "--json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    (session,) = json.loads(done.stdout)["sessions"]
    transcript = session["transcript"]
    assert transcript["skipped"][kind] == 1
    assert [entry["line"] for entry in transcript["skipped_lines"]] == [line]
    assert session["message_count"] == 4  # both turns on either side of the line


@pytest.mark.parametrize("case", CASES)
def test_a_hostile_line_is_skipped_and_counted_by_the_cli(case: str, tmp_path: Path) -> None:
    make, kind = CASES[case]
    path = tmp_path / f"{case}.jsonl"
    _write(path, make())
    _check_cli(path, kind, 3)


def test_an_unfinished_last_line_is_skipped_and_counted_by_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "unfinished.jsonl"
    _write(path, _answer("a0", "q1", "fine"), unfinished=b'{"type": "user", "uuid": "q3", "me')
    _check_cli(path, "incomplete", 6)


def test_the_depth_check_agrees_with_a_real_nesting_count() -> None:
    """too_deep counts brackets outside strings only; at the limit a line is still read."""
    at_limit = b'{"a": ' + b"[" * (MAX_DEPTH - 1) + b"]" * (MAX_DEPTH - 1) + b"}"
    over = b'{"a": ' + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH + b"}"
    assert not too_deep(at_limit)
    assert too_deep(over)
    # Brackets inside strings (escaped quotes too) are text, not nesting.
    in_text = json.dumps({"a": "[" * 5000 + '\\"{' * 500, "b": [[1], {"c": [2]}]}).encode()
    assert not too_deep(in_text)
    # Many shallow values side by side are wide, not deep.
    wide = json.dumps({"a": [[{"b": [1]}] for _ in range(10_000)]}).encode()
    assert not too_deep(wide)


def test_a_long_line_is_passed_over_without_holding_it(tmp_path: Path) -> None:
    """A line four times the limit costs about twice the limit in memory, not the line."""
    path = tmp_path / "long.jsonl"
    _write(path, BigLine(4 * MAX_LINE_BYTES))
    tracemalloc.start()
    try:
        transcript = load_transcript(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert transcript.skipped["too_long"] == 1
    assert [n for n, _ in transcript.skipped_lines] == [3]
    assert len(transcript.messages) == 4
    assert peak < 2.5 * MAX_LINE_BYTES  # the line is 4x the limit


def test_a_long_line_still_being_written_is_counted_once_when_it_ends(tmp_path: Path) -> None:
    """Tailed while it grows: the line is not read again from its start on each poll, the
    offset stays at its start (where a resumed read would begin), and it is counted once."""
    path = tmp_path / "growing.jsonl"
    path.write_bytes(_question("q1", None, "first") + b"\n" + _answer("a1", "q1", "one") + b"\n")
    tail = TranscriptTail(path)
    tail.poll()
    start = tail.offset
    piece = b'{"type": "user", "message": {"content": "' + b"y" * (MAX_LINE_BYTES // 2)
    with path.open("ab") as out:
        for _ in range(3):
            out.write(piece)
            out.flush()
            tail.poll()
            assert tail.offset == start and tail.line_count == 2
            assert tail.skipped_line_count == 0  # not finished: not yet counted
        out.write(b'"}}\n' + _question("q2", "a1", "after") + b"\n")
    tail.poll()
    tail.poll()
    transcript = tail.transcript()
    assert transcript.skipped_lines[0][0] == 3
    assert transcript.skipped["too_long"] == 1
    assert [m.id for m in transcript.messages] == ["q1", "a1", "q2"]
    assert tail.line_count == 4


def test_codex_arguments_nested_too_deep_are_kept_as_text(tmp_path: Path) -> None:
    """A function_call's arguments are a JSON string: decoded only within the same depth bound,
    else kept raw (the call and its output stay paired)."""
    nested = "[" * 5_000 + "]" * 5_000
    records = [
        {"type": "session_meta", "payload": {"id": "c0dex"}},
        {
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": "run it"},
        },
        {
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command": ' + nested + "}",
                "call_id": "call_1",
            },
        },
        {
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
        },
    ]
    path = tmp_path / "rollout-deep.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    transcript = load_transcript(path)
    call = transcript.messages[1].content[0]
    assert isinstance(call, ToolUseContentBlock) and set(call.input) == {"raw"}
    assert transcript.messages[2].content[0].content == "ok"
    assert not transcript.skipped_lines
