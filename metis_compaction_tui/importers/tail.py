"""Incremental reading of a transcript that an agent is still writing.

`TranscriptTail` keeps a byte offset and parses only the complete lines added since the last poll,
so a poll costs O(new bytes). `load_transcript()` is one poll over the whole file, so a tail that
has seen every line and a fresh load always agree.
"""

from __future__ import annotations

import gc
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO, Protocol

import msgspec

from engine import Message
from metis_compaction_tui.importers import claude_code, codex
from metis_compaction_tui.importers.bounds import (
    INCOMPLETE,
    MAX_DEPTH,
    MAX_LINE_BYTES,
    TOO_DEEP,
    TOO_LONG,
    too_deep,
    too_deep_reason,
    too_long_reason,
)
from metis_compaction_tui.importers.model import (
    AgentCompaction,
    ContextReduction,
    HistoryBuilder,
    ImportedTranscript,
    RecordedUsage,
    TranscriptError,
    TranscriptFormat,
)

_DETECT_LINES = 20  # undecided after this many records: not a transcript we know
_HEAD_BYTES = 64  # compared on every poll to notice a file replaced in place
_LEGACY_CODEX_HEADER = frozenset({"id", "timestamp"})  # an old rollout's untyped first line
_FEED_BATCH = 20_000  # lines imported between two progress reports
# Read at a time: memory stays bounded on a 300 MB file (a chunk and its lines are held at
# once; 2 MiB of them is a small part of what a light read of 100 MB keeps).
_CHUNK_BYTES = 2 << 20


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic GC off while a read builds what outlives it (records, the history): a
    collection during the read only scans it again and frees nothing, about half the time of a
    first read of 100 MB. Resumed after, unless it was off already (reads may nest)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


class TailUpdate(msgspec.Struct, frozen=True):
    """What one poll found. With `reset` the lists hold everything, replacing what was delivered
    before (a rewind, a file replaced). Without it, `messages` replace the delivered messages from
    index `rewrite_from` on (an agent adding a block to its newest message rewrites only that
    one, so this is an append or a rewrite of the last message), `recorded_usage` likewise from
    `usage_from`, and `agent_compactions` from `compactions_from` (a compaction whose size
    after is recorded a few lines below it is sent again)."""

    reset: bool
    messages: list[Message]
    agent_compactions: list[AgentCompaction]
    recorded_usage: list[RecordedUsage]
    line_count: int
    rewrite_from: int = 0
    usage_from: int = 0
    compactions_from: int = 0
    # A light tail's token estimate of each of `messages`, which are shells without text
    # (TranscriptTail(light=True)); None otherwise.
    tokens: list[int] | None = None

    @property
    def changed(self) -> bool:
        return self.reset or bool(self.messages or self.agent_compactions or self.recorded_usage)

    def apply(
        self,
        messages: list[Message],
        usage: list[RecordedUsage],
        compactions: list[AgentCompaction],
    ) -> None:
        """Bring a consumer's copies up to date, in place."""
        if self.reset:
            messages.clear()
            usage.clear()
            compactions.clear()
        del messages[self.rewrite_from :]
        messages.extend(self.messages)
        del usage[self.usage_from :]
        usage.extend(self.recorded_usage)
        del compactions[self.compactions_from :]
        compactions.extend(self.agent_compactions)


class _Importer(Protocol):
    format: str
    builder: HistoryBuilder
    generation: int
    skipped_lines: list[tuple[int, str]]
    subagent: str | None

    def title(self) -> str | None: ...

    def feed(self, lines: list[tuple[int, bytes]]) -> None: ...

    def reject(self, line_number: int, kind: str, reason: str) -> None: ...

    def settle(self) -> None: ...

    def transcript(self, line_count: int) -> ImportedTranscript: ...


class _Probe(msgspec.Struct):
    type: object = None
    payload: msgspec.Raw = msgspec.Raw(b"null")  # left unparsed: only its presence matters


_probe = msgspec.json.Decoder(_Probe)


def _guess_format(path: str) -> TranscriptFormat:
    return "codex" if os.path.basename(path).startswith("rollout-") else "claude-code"


def detect_format(lines: list[tuple[int, bytes]]) -> TranscriptFormat | None:
    """Decide from content: Codex wraps every record as {type, payload}; Claude Code's record
    types are its own. None while no line is decisive (broken lines are passed over: the
    importer reports them with their line numbers)."""
    for _, raw in lines:
        try:
            probe = _probe.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            continue
        kind = probe.type
        if not isinstance(kind, str):
            continue
        wrapped = bytes(probe.payload) != b"null"
        if kind in codex.RECORD_TYPES and wrapped:
            return "codex"
        if kind in codex.ITEM_TYPES and not wrapped:
            return "codex"  # a pre-wrapper rollout
        if kind in claude_code.RECORD_TYPES:
            return "claude-code"
    return None


def _fallback_format(path: str, lines: list[tuple[int, bytes]]) -> TranscriptFormat:
    """No record said which agent wrote the file: trust a rollout's name, else refuse the file
    with one line saying what it looks like instead."""
    if os.path.basename(path).startswith("rollout-"):
        return "codex"
    raise TranscriptError(path, lines[0][0], describe_non_transcript(lines))


def describe_non_transcript(lines: list[tuple[int, bytes]]) -> str:
    """What a file with no transcript record looks like, in a few words."""
    if any(b"\0" in raw for _, raw in lines):
        return "not a transcript: binary data (NUL bytes), not lines of JSON"
    objects, others, broken = 0, 0, 0
    keys: Counter[str] = Counter()
    for _, raw in lines:
        try:
            value = msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            broken += 1
            continue
        if isinstance(value, dict):
            objects += 1
            keys.update(k for k in value if isinstance(k, str))
        else:
            others += 1
    total = len(lines)
    noun = "line" if total == 1 else "lines"
    if broken == total:
        return f"not a transcript: none of its {total:,} {noun} is JSON"
    if objects:
        common = ", ".join(repr(safe_key(k)) for k, _ in keys.most_common(4))
        are = "is a JSON object" if objects == 1 else "are JSON objects"
        return (
            f"not a transcript: {objects:,} of {total:,} {noun} {are}, none a Claude Code or "
            f"Codex record (keys {common})"
        )
    return f"not a transcript: {others:,} of {total:,} {noun} are JSON, but not objects"


def _never_a_record(rest: bytes) -> bool:
    """An unterminated start of a file that no amount of appending turns into a JSONL record:
    NUL bytes (a preallocated or zeroed file) or text that does not open a JSON object."""
    return b"\0" in rest or rest.lstrip()[:1] != b"{"


def _none_a_record(lines: list[tuple[int, bytes]]) -> bool:
    """No line so far is even shaped like an agent's record (a JSON object with a string
    `type`, or an old Codex rollout's header): binary data, text, JSON of something else.
    Waiting for more lines would show it as an empty session for ever, so it is refused at
    once. (A typed record of a kind we do not know yet is waited on: the next lines may say
    which agent wrote it.)"""
    for _, raw in lines:
        if b"\0" in raw:
            return True
        try:
            value = msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            continue
        if isinstance(value, dict) and (
            isinstance(value.get("type"), str) or value.keys() >= _LEGACY_CODEX_HEADER
        ):
            return False
    return True


def special_file_problem(path: str, mode: int) -> str | None:
    """Why a path that is not a regular file cannot be read as a transcript (reading a named
    pipe would block until some other program writes to it)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        kind = "a named pipe (FIFO)"
    elif stat.S_ISDIR(mode):
        kind = "a folder"
    elif stat.S_ISSOCK(mode):
        kind = "a socket"
    elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        kind = "a device"
    else:
        kind = "not a regular file"
    return f"{kind}, not a regular file; a transcript is read from a file (copy it into one)"


def safe_key(key: str) -> str:
    """A key from the file, short and printable (it is shown to the user)."""
    cleaned = "".join(c if c.isprintable() else "?" for c in key)
    return cleaned[:24]


def _split_lines(
    data: bytes, first_line: int, line_open: bool, *, at_end: bool = True
) -> tuple[list[tuple[int, bytes]], int, int, bool, bool]:
    """Cut `data` into numbered non-blank lines.

    Returns (lines, bytes consumed, line count after, line left open, incomplete tail seen).
    At the end of the file, an unterminated last line is taken if it already decodes (a complete
    JSON object can only be missing its newline) and left for the next poll otherwise; before
    the end (`at_end` False: a chunk of a longer read) it is left for the next chunk.
    """
    lines: list[tuple[int, bytes]] = []
    position, line_number = 0, first_line
    if line_open and data[:1] == b"\n":
        position = 1  # the newline of a line we already took
    elif line_open and data[:2] == b"\r\n":
        position = 2
    last = data.rfind(b"\n")
    if last >= position:
        # Cut in one call (C), not a find and a slice a line: a first read has 130,000 lines.
        append = lines.append
        for raw in data[position:last].split(b"\n"):
            line_number += 1
            raw = raw.rstrip(b"\r")  # the same bytes object when there is nothing to strip
            if raw.strip():
                append((line_number, raw))
        position = last + 1
    rest = data[position:]
    if not rest.strip():
        return lines, position, line_number, False, False
    if not at_end:
        return lines, position, line_number, False, False
    if not rest.rstrip().endswith(b"}"):
        return lines, position, line_number, False, True  # cannot be a whole object yet
    if not too_deep(rest):  # a line nested too deep is taken, to be skipped and counted
        try:
            msgspec.json.decode(rest)
        except (msgspec.DecodeError, RecursionError):
            return lines, position, line_number, False, True
    lines.append((line_number + 1, rest))
    return lines, len(data), line_number + 1, True, False


_PROBE_BYTES = 64 * 1024


def probe_head(path: str | os.PathLike[str]) -> str | None:
    """Why a file can be told not to be a transcript from its first 64 KiB alone (not a regular
    file, binary, no record-shaped line), or None when it may be one. Cheap: a folder's files
    are probed so that a bad one is listed with its problem before anyone picks it."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            problem = special_file_problem(os.fspath(path), os.fstat(f.fileno()).st_mode)
            if problem is not None:
                return problem
            head = f.read(_PROBE_BYTES)
    except OSError as error:
        return str(error.strerror or error)
    lines, consumed, _, _, _ = _split_lines(head, 0, False)
    if not lines:
        rest = head[consumed:]
        if b"\0" in rest:
            return describe_non_transcript([(1, rest)])
        if rest.strip() and _never_a_record(rest):
            more = "+" if len(head) == _PROBE_BYTES else ""
            return f"not a transcript: {len(rest):,}{more} bytes without a newline, not JSON"
        return None
    if detect_format(lines) is None and _none_a_record(lines):
        return describe_non_transcript(lines)
    return None


class TranscriptTail:
    def __init__(
        self, path: str | os.PathLike[str], *, light: bool = False, once: bool = False
    ) -> None:
        """`light`: a Claude Code log is read keeping no message text (messages are shells,
        each update carries their token estimates): what the status line needs. A Codex
        rollout is read in full either way (its updates carry no estimates). `once`: polled
        once (the status line's refresher); a Claude Code log's records then hold their
        content only until it is in the history, and a later poll that finds more raises
        RuntimeError."""
        self.path = os.fspath(path)
        self.light = light
        self.once = once
        self._restart()

    def _restart(self) -> None:
        self._importer: _Importer | None = None
        self._offset = 0
        self._line_count = 0
        self._line_open = False
        self._head = b""
        self._ident: tuple[int, int] | None = None
        self._size_seen = -1  # the file's size at the last read
        self._scanned = 0  # an unfinished last line holds no newline before this offset
        self._warnings: list[str] = []
        self._generation = 0
        self._sent = (0, 0, 0)  # messages, compactions, usage delivered so far
        # Lines refused before decoding (too long, too deep, unfinished at the end), held until
        # an importer exists to count them; the newest line refused, so none is counted twice.
        self._pending: list[tuple[int, str, str]] = []
        self._rejected_up_to = 0
        # Where the next read starts: `_offset`, except inside an over-long line being passed
        # over, whose number `_skipping` is (0: none) and whose bytes so far `_skip_size` counts.
        self._read_pos = 0
        self._skipping = 0
        self._skip_size = 0

    @classmethod
    def resume(
        cls,
        path: str | os.PathLike[str],
        offset: int,
        line_count: int,
        fmt: TranscriptFormat,
        *,
        light: bool = False,
        once: bool = False,
    ) -> TranscriptTail:
        """A tail that starts reading at byte `offset` (the start of line `line_count + 1`) with
        a fresh importer of `fmt`, for a caller that keeps what came before itself (the status
        line). The importer knows nothing earlier: a record whose parent lies before `offset`
        starts the chain, and a rewind to before it reads as an append. The caller checks that
        the file is still the one it read (same inode, same first bytes)."""
        tail = cls(path, light=light, once=once)
        tail._offset = tail._read_pos = offset
        tail._line_count = tail._rejected_up_to = line_count
        tail._importer = tail._new_importer(fmt)
        try:
            with open(tail.path, "rb") as f:
                tail._head = f.read(_HEAD_BYTES)
                st = os.fstat(f.fileno())
                tail._ident = (st.st_dev, st.st_ino)
        except OSError:
            pass  # the first poll reports a missing file
        return tail

    def _new_importer(self, fmt: TranscriptFormat) -> _Importer:
        if fmt == "codex":
            return codex.CodexImporter(self.path)
        return claude_code.ClaudeCodeImporter(self.path, light=self.light, once=self.once)

    def first_line_of(self, message: Message) -> int | None:
        """The file line where `message` (one of this tail's) began, when the importer can say:
        both name a message by its first record (Claude Code by uuid, else `line-N`)."""
        if message.id.startswith("line-") and message.id[5:].isdigit():
            return int(message.id[5:])
        nodes = getattr(self._importer, "nodes", None)
        node = nodes.get(message.id) if isinstance(nodes, dict) else None
        line = getattr(node, "line", None)
        return line if isinstance(line, int) else None

    def parents_before(self, line: int) -> set[str] | None:
        """The importer's `parents_before(line)`, or None where records name no parents (Codex)."""
        method = getattr(self._importer, "parents_before", None)
        return method(line) if method is not None else None

    @property
    def offset(self) -> int:
        """Bytes read so far: the end of the last complete line taken."""
        return self._offset

    @property
    def line_count(self) -> int:
        """Complete lines read so far."""
        return self._line_count

    @property
    def format(self) -> TranscriptFormat | None:
        if self._importer is None:
            return None
        return "codex" if self._importer.format == "codex" else "claude-code"

    def poll(
        self, *, final: bool = False, progress: Callable[[int, int], None] | None = None
    ) -> TailUpdate:
        """Read what was appended since the last poll. `final` treats the file as finished: an
        incomplete last line is reported instead of waited for, and a file with no transcript
        record at all raises TranscriptError at once (see also `refuse_undecided`).
        `progress(lines done, lines read)` is called as a long read goes."""
        self._refuse_special()
        try:
            with open(self.path, "rb") as f:
                reset = self._check_identity(f)
                size = os.fstat(f.fileno()).st_size
                if not reset and (size == self._offset or size == self._size_seen):
                    # Nothing appended since the last look: in particular an unfinished last
                    # line is not read and parsed again on every poll.
                    return self._update(False)
                if not reset and not final and not self._line_may_end(f, size):
                    return self._update(False)  # that line is still unfinished
                self._size_seen = size
                f.seek(self._read_pos)
                with gc_paused():
                    return self._read(f, reset, final, progress)
        except FileNotFoundError:
            if self._offset == 0:
                return self._update(False)
            self._restart()  # deleted: nothing is left of what was delivered
            return TailUpdate(True, [], [], [], 0)

    def _line_may_end(self, f: BinaryIO, size: int) -> bool:
        """After a poll that stopped inside an unfinished line: has a newline arrived since, or
        does the file now end like a JSON object (taken without its newline)? Reads only the
        bytes appended since (a 300 MB line being written costs its new bytes, not 300 MB)."""
        if self._scanned <= self._read_pos:
            return True
        f.seek(self._scanned)
        while chunk := f.read(_CHUNK_BYTES):
            if b"\n" in chunk:
                return True
        f.seek(max(self._offset, size - 64))
        if f.read(64).rstrip().endswith(b"}"):
            return True
        self._scanned = size
        self._size_seen = size
        return False

    def _read(
        self,
        f: BinaryIO,
        reset: bool,
        final: bool,
        progress: Callable[[int, int], None] | None,
    ) -> TailUpdate:
        """Read from the offset to the end in chunks (memory stays bounded by a chunk and the
        longest line, not the file), feeding each chunk's complete lines to the importer. A line
        longer than MAX_LINE_BYTES is passed over chunk by chunk, never held whole."""
        carry = b""
        done = 0
        while True:
            chunk = f.read(_CHUNK_BYTES)
            at_end = len(chunk) < _CHUNK_BYTES
            if (
                not self._skipping
                and len(carry) + len(chunk) > MAX_LINE_BYTES
                and b"\n" not in chunk
                and b"\n" not in carry
            ):  # an over-long line: passed over from here, not joined up in memory
                self._skipping, self._skip_size = self._line_count + 1, len(carry) + len(chunk)
                self._read_pos = self._offset + self._skip_size
                carry, chunk = b"", b""
            elif self._skipping:
                chunk = self._pass_long_line(chunk)
            if self._skipping:
                if not at_end:
                    continue
                if final:
                    self._reject(self._skipping, TOO_LONG, too_long_reason(self._skip_size, True))
                self._scanned = self._read_pos
                return self._update(reset)
            data = carry + chunk if carry else chunk
            if self._offset == 0:
                self._head = data[:_HEAD_BYTES]
            # The line still open at the end of `data` is left unread once it is over-long.
            whole = len(data)
            if whole - data.rfind(b"\n") - 1 > MAX_LINE_BYTES:
                whole = data.rfind(b"\n") + 1
            lines, consumed, line_count, line_open, incomplete = _split_lines(
                data if whole == len(data) else data[:whole],
                self._line_count,
                self._line_open,
                at_end=at_end and whole == len(data),
            )
            lines = self._screen(lines)
            if incomplete and final:
                self._reject(line_count + 1, INCOMPLETE, "unfinished last line: not read")
            if self._importer is None and lines:
                fmt = detect_format(lines)
                if fmt is None and len(lines) < _DETECT_LINES and whole == len(data):
                    if not at_end:
                        carry = data  # undecided on a few long lines: read on before deciding
                        continue
                    if not final:
                        return self._update(reset)  # wait for a decisive line
                if fmt is None:
                    fmt = _fallback_format(self.path, lines)
                self._importer = self._new_importer(fmt)
                for pending in self._pending:
                    self._importer.reject(*pending)
                self._pending.clear()
            if lines and self._importer is not None:
                try:
                    for start in range(0, len(lines), _FEED_BATCH):
                        self._importer.feed(lines[start : start + _FEED_BATCH])
                        if progress is not None:
                            batch = min(start + _FEED_BATCH, len(lines))
                            progress(done + batch, done + len(lines))
                except TranscriptError:
                    self._restart()  # a later poll re-reads from the start and fails the same way
                    raise
            done += len(lines)
            self._offset += consumed
            self._read_pos = self._offset
            self._line_count = line_count
            self._line_open = line_open
            carry = data[consumed:]
            if whole < len(data):  # pass over the over-long line from here on
                self._skipping, self._skip_size = line_count + 1, len(carry)
                self._read_pos += len(carry)
                carry = b""
                if not at_end:
                    continue
                if final:
                    self._reject(self._skipping, TOO_LONG, too_long_reason(self._skip_size, True))
                self._scanned = self._read_pos
                return self._update(reset)
            if at_end:
                # Where the unfinished line (if any) was looked at up to: the next poll scans
                # only what follows for its newline.
                self._scanned = self._offset + len(carry) if carry.strip() else self._offset
                return self._update(reset)

    def _pass_long_line(self, chunk: bytes) -> bytes:
        """Pass over the over-long line being skipped; the bytes after its end, if it ends here."""
        newline = chunk.find(b"\n")
        if newline < 0:
            self._skip_size += len(chunk)
            self._read_pos += len(chunk)
            return b""
        self._skip_size += newline
        self._reject(self._skipping, TOO_LONG, too_long_reason(self._skip_size, False))
        self._line_count, self._line_open = self._skipping, False
        self._skipping = 0
        self._read_pos += newline + 1
        self._offset = self._read_pos
        return chunk[newline + 1 :]

    def _screen(self, lines: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        """The lines within bounds (bounds.py); each other one is skipped and counted."""
        kept: list[tuple[int, bytes]] = []
        for line in lines:
            number, raw = line
            if len(raw) > MAX_LINE_BYTES:
                self._reject(number, TOO_LONG, too_long_reason(len(raw), False))
            elif raw.count(b"{") + raw.count(b"[") > MAX_DEPTH and too_deep(raw):
                # (too_deep's own first test, written out: it spares a call a line)
                self._reject(number, TOO_DEEP, too_deep_reason())
            else:
                kept.append(line)
        return kept

    def _reject(self, line_number: int, kind: str, reason: str) -> None:
        if line_number <= self._rejected_up_to:
            return  # seen again: lines re-read while the format was undecided
        self._rejected_up_to = line_number
        if self._importer is not None:
            self._importer.reject(line_number, kind, reason)
        else:
            self._pending.append((line_number, kind, reason))

    def _check_identity(self, f: BinaryIO) -> bool:
        """Start over if the file was truncated or replaced since the last poll."""
        st = os.fstat(f.fileno())
        ident = (st.st_dev, st.st_ino)
        replaced = bool(self._offset) and (
            ident != self._ident
            or st.st_size < self._offset
            or f.read(len(self._head)) != self._head
        )
        if replaced:
            self._restart()
        self._ident = ident
        return replaced

    def _update(self, reset: bool) -> TailUpdate:
        importer = self._importer
        if importer is None:
            return TailUpdate(reset, [], [], [], self._line_count)
        importer.settle()
        builder = importer.builder
        changed_from, usage_changed_from = builder.changed_from, builder.usage_changed_from
        messages = builder.messages()
        sent_messages, sent_compactions, sent_usage = self._sent
        if (
            reset
            or importer.generation != self._generation
            or len(builder.compactions) < sent_compactions
        ):
            reset, sent_messages, sent_compactions, sent_usage = True, 0, 0, 0
        rewrite_from = min(sent_messages, changed_from)
        usage_from = min(sent_usage, usage_changed_from)
        compactions_from = min(sent_compactions, builder.compactions_changed_from)
        update = TailUpdate(
            reset,
            messages[rewrite_from:],
            builder.compactions[compactions_from:],
            builder.usage[usage_from:],
            self._line_count,
            rewrite_from,
            usage_from,
            compactions_from,
            builder.message_tokens()[rewrite_from:] if builder.light else None,
        )
        self._sent = (len(messages), len(builder.compactions), len(builder.usage))
        self._generation = importer.generation
        builder.mark_seen()
        return update

    def transcript(self) -> ImportedTranscript:
        """Everything read so far (built on demand: O(messages))."""
        if self._importer is None:
            stem = os.path.splitext(os.path.basename(self.path))[0]
            return ImportedTranscript(
                path=self.path,
                format=_guess_format(self.path),
                session_id=stem,
                messages=[],
                agent_compactions=[],
                recorded_usage=[],
                skipped=dict(Counter(kind for _, kind, _ in self._pending)),
                line_count=self._line_count,
                warnings=[*self._warnings, "empty file: no records yet"],
                skipped_lines=[(n, reason) for n, _, reason in self._pending],
                empty_reason="empty file: no records yet",
            )
        result = self._importer.transcript(self._line_count)
        result.warnings = self._warnings + result.warnings
        return result

    @property
    def title(self) -> str | None:
        """The session's own name, where the log gives one (O(1))."""
        return self._importer.title() if self._importer is not None else None

    @property
    def subagent(self) -> str | None:
        """What spawned this session, for a Codex sub-agent's rollout (O(1))."""
        return self._importer.subagent if self._importer is not None else None

    @property
    def last_reduction(self) -> ContextReduction | None:
        """The agent's newest context reduction without a summary (O(1))."""
        if self._importer is None:
            return None
        reductions = self._importer.builder.reductions
        return reductions[-1] if reductions else None

    @property
    def skipped_line_count(self) -> int:
        """Lines skipped so far (O(1): a consumer polls it to notice new ones)."""
        importer = self._importer
        return len(importer.skipped_lines) if importer is not None else 0

    def _refuse_special(self) -> None:
        """A named pipe (a device, ...) is refused before it is opened: opening a pipe for
        reading would wait for some other program to write to it."""
        try:
            mode = os.stat(self.path).st_mode
        except OSError:
            return  # missing or unreadable: the read says so
        problem = special_file_problem(self.path, mode)
        if problem is not None:
            raise TranscriptError(self.path, 0, problem)

    def refuse_undecided(self, *, final: bool = False) -> None:
        """While no line has said which agent wrote the file, refuse one that never will (NUL
        bytes, text, JSON of something else: waiting would show it as an empty session for
        ever) and, with `final`, one whose only content is an unfinished line. O(1) once the
        format is known; before, a read of at most the first 64 KiB."""
        if self._importer is not None:
            return
        problem = probe_head(self.path)
        if problem is None and final:
            try:
                size = os.stat(self.path).st_size
            except OSError:
                return
            if size and self._line_count == 0:
                problem = f"not a transcript: {size:,} bytes without a newline, not a JSON record"
        if problem is not None:
            raise TranscriptError(self.path, 1, problem)
