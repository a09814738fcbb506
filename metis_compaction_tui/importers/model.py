"""What an import produces, and the builder both importers use to keep a history valid.

Agent logs are not canonical histories: roles repeat, tool calls go unanswered when a run is
interrupted, results turn up split over several records. `HistoryBuilder` absorbs that, one content
block at a time, so every snapshot it returns passes `validate_history()`.
"""

from __future__ import annotations

import bisect
import os
from collections import Counter
from datetime import datetime
from typing import Literal

import msgspec

from engine import (
    CHARS_PER_TOKEN,
    ContentBlock,
    Message,
    MessageMetadata,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
)
from metis_compaction_tui.importers.bounds import too_deep_reason

TranscriptFormat = Literal["claude-code", "codex"]

NO_RESULT = "(no result recorded)"


class AgentCompaction(msgspec.Struct, frozen=True):
    """A compaction the agent itself performed; its summary is `messages[message_index]`."""

    message_index: int
    trigger: str | None  # "auto" / "manual" as the agent recorded it; Codex records none
    pre_tokens: int | None  # context size just before compacting, when known
    line_number: int
    post_tokens: int | None = None  # context size just after, when the log has it
    duration_ms: int | None = None  # how long the agent took to compact, when the log has it


class ContextReduction(msgspec.Struct, frozen=True):
    """The agent cleared part of its context without summarizing (Claude Code's microcompact:
    old tool results emptied). `usage_count` is how many responses were recorded before it: a
    response recorded after it measures the context afresh."""

    message_index: int  # the newest message when it happened; -1 if none
    line_number: int
    usage_count: int
    trigger: str | None
    pre_tokens: int | None
    tokens_saved: int | None

    @property
    def post_tokens(self) -> int | None:
        if self.pre_tokens is None or self.tokens_saved is None:
            return None
        return max(self.pre_tokens - self.tokens_saved, 0)


class RecordedUsage(msgspec.Struct, frozen=True):
    """Token usage of one model response, normalised to Anthropic's split: `input_tokens` is the
    uncached input only, so the context size is input + cache_read + cache_creation."""

    message_index: int  # the assistant message the response landed in; -1 if none exists yet
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0

    @property
    def context_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_creation_tokens


class ImportedTranscript(msgspec.Struct):
    path: str
    format: TranscriptFormat
    session_id: str
    messages: list[Message]
    agent_compactions: list[AgentCompaction]
    recorded_usage: list[RecordedUsage]
    skipped: dict[str, int]  # what was not imported as messages, by record kind
    line_count: int
    warnings: list[str]
    # Lines not read at all (broken JSON, unknown record types), as (line number, reason).
    skipped_lines: list[tuple[int, str]] = []
    # Why there are no messages, when there are none ("subagent log: 12 sidechain records ...").
    empty_reason: str | None = None
    context_reductions: list[ContextReduction] = []
    # The session's name where the log gives one (Claude Code's custom-title, else ai-title).
    title: str | None = None
    # A Codex sub-agent's rollout: what spawned it ("review", a worker's nickname), else None.
    subagent: str | None = None


SKIPPED_LINES_SHOWN = 5


def as_ordinary(message: Message) -> Message:
    """The agent's own summary as an ordinary message, for our engine: kept synthetic it would be
    our compaction floor (§3.2) and hide everything before it from our projection and what-ifs;
    our engine never made it."""
    if not message.synthetic:
        return message
    metadata = msgspec.structs.replace(message.metadata, synthetic=False)
    return msgspec.structs.replace(message, metadata=metadata)


def skipped_lines_summary(lines: list[tuple[int, str]]) -> str | None:
    """One sentence for the user: '2 lines skipped (line 1834: invalid JSON; line 2001: ...)'."""
    if not lines:
        return None
    shown = "; ".join(f"line {n}: {reason}" for n, reason in lines[:SKIPPED_LINES_SHOWN])
    more = len(lines) - SKIPPED_LINES_SHOWN
    if more > 0:
        shown += f"; {more:,} more"
    noun = "line" if len(lines) == 1 else "lines"
    return f"{len(lines):,} {noun} skipped ({shown})"


class TranscriptError(ValueError):
    """A file that is not a transcript at all (no transcript record, not a regular file);
    `line_number` is 0 when no line is to blame."""

    def __init__(self, path: str | os.PathLike[str], line_number: int, detail: str) -> None:
        where = os.path.basename(os.fspath(path))
        located = f"{where}:{line_number}" if line_number else where
        super().__init__(f"{located}: {detail}")
        self.path = os.fspath(path)
        self.line_number = line_number
        self.detail = detail

    def located(self) -> str:
        """One line for the user: the full path, the line when there is one, what is wrong."""
        line = f", line {self.line_number}" if self.line_number else ""
        return f"{self.path}{line}: {self.detail}"


def decode_line(
    decoder: msgspec.json.Decoder, raw: bytes, line_number: int, skipped: list[tuple[int, str]]
) -> object | None:
    """One bad line (torn by a crash, cut by a copy, an odd shape) is skipped and noted with its
    line number; the rest of the file is still read."""
    try:
        return decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError) as error:
        note_bad_line(error, line_number, skipped)
        return None


def note_bad_line(
    error: msgspec.DecodeError | RecursionError, line_number: int, skipped: list[tuple[int, str]]
) -> None:
    """Why a line was skipped, as `decode_line` says it. (Lines nested too deep are refused
    before decoding, bounds.py; a RecursionError here is the decoder's own limit, met first.)"""
    if isinstance(error, RecursionError):
        skipped.append((line_number, too_deep_reason()))
    elif isinstance(error, msgspec.ValidationError):
        skipped.append((line_number, f"unexpected record shape ({error})"))
    elif "UTF-8" in str(error):
        skipped.append((line_number, "invalid UTF-8 text"))
    else:
        skipped.append((line_number, "invalid JSON"))


def timestamp_ms(value: object) -> int | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return int(datetime.fromisoformat(value).timestamp() * 1000)
    except ValueError:
        return None


_PLAIN = MessageMetadata()
_SYNTHETIC = MessageMetadata(synthetic=True)
_NO_RESULTS: dict[str, ToolResultContentBlock] = {}

# Enum members read through a module global: `Role.USER` goes through the enum class's attribute
# hook in Python 3.11 (about 70 ns), and a first read of 100 MB asks several times a record.
_USER = Role.USER


class _Draft:
    """A message still open to merges. A user draft keeps the tool results it owes the assistant
    message before it, in call order, with placeholders until the real results arrive."""

    __slots__ = (
        "blocks",
        "chars",
        "id",
        "results",
        "role",
        "synthetic",
        "tool_ids",
        "ts",
    )

    def __init__(self, msg_id: str, role: Role, expected: tuple[str, ...], ts: int | None) -> None:
        self.id = msg_id
        self.role = role
        self.blocks: list[ContentBlock] = []
        # Tuples and a shared empty set, not a list and a set per message: a 100 MB log holds
        # 100,000 drafts, and fewer containers the garbage collector tracks is a faster read.
        self.tool_ids: tuple[str, ...] = ()  # assistant: tool_use ids in order; user: owed
        # The results received for what it owes, by call id: a draft that has none shares one
        # empty dict that is never written (`_add_result` gives it its own). A call still
        # unanswered gets a placeholder when the message is made (`materialize`).
        self.results: dict[str, ToolResultContentBlock] = _NO_RESULTS
        self.synthetic = False
        self.ts = ts
        # A light builder's count of the characters Message.text() would join, separators
        # left out (see `tokens`): blocks and results alike, placeholders until replaced.
        self.chars = 0
        if role is _USER and expected:
            self.chars = len(NO_RESULT) * len(expected)
            self.tool_ids = expected

    def materialize(self) -> Message:
        content: tuple[ContentBlock, ...]
        if self.tool_ids and self.role is _USER:
            results = self.results
            answers = tuple(
                results.get(i) or ToolResultContentBlock(i, NO_RESULT, is_error=True)
                for i in self.tool_ids
            )
            content = answers + tuple(self.blocks)
        else:
            content = tuple(self.blocks)
        if self.ts is None:  # shared: most messages of a light read, frozen
            metadata = _SYNTHETIC if self.synthetic else _PLAIN
        else:
            metadata = MessageMetadata(synthetic=self.synthetic, created_at_ms=self.ts)
        return Message(self.id, self.role, content, metadata)

    def tokens(self) -> int:
        """engine.tokens' estimate of the materialized message, from the sizes counted: its
        parts joined by newlines, a third of a token a character, rounded up."""
        parts = len(self.blocks)
        if self.tool_ids and self.role is _USER:
            parts += len(self.tool_ids)
        return -(-(self.chars + parts - 1) // CHARS_PER_TOKEN) if parts else 0


# Where a finished draft was (HistoryBuilder._finish): never read again.
_FINISHED = _Draft("", _USER, (), None)


class HistoryBuilder:
    """Appends content blocks and keeps `messages()` a valid history at every step.

    Only the newest message is ever changed after it was created, and `changed_from` /
    `usage_changed_from` / `compactions_changed_from` record the lowest index touched since
    `mark_seen()`, so a tail can tell an append from a rewrite.
    """

    def __init__(self, *, light: bool = False, rollback: bool = True) -> None:
        # `light`: blocks come as shells (no text) with their sizes given to `add`, and
        # `message_tokens()` has each message's token estimate (a light Claude Code read).
        # `rollback` False: never truncated (Claude Code logs do not roll back; Codex logs do),
        # so a finished message's draft is let go of as soon as the next message starts.
        self.light = light
        self.rollback = rollback
        self._drafts: list[_Draft] = []
        self._cache: list[Message] = []
        self._tokens: list[int] = []  # a light builder's estimates, beside `_cache`
        self._stale_from = 0  # first cache entry that needs materializing again
        self.changed_from = 0
        self.usage: list[RecordedUsage] = []
        self._usage_keys: dict[str, int] = {}
        self.usage_changed_from = 0
        self.compactions: list[AgentCompaction] = []
        self.compactions_changed_from = 0
        self.reductions: list[ContextReduction] = []
        # The compaction whose summary is still to come: its fields, message_index left at -1.
        self.pending_compaction: AgentCompaction | None = None
        self.skipped: Counter[str] = Counter()
        self.warnings: list[str] = []

    def __len__(self) -> int:
        return len(self._drafts)

    def last_role(self) -> Role | None:
        return self._drafts[-1].role if self._drafts else None

    def _touch(self, index: int) -> None:
        self._stale_from = min(self._stale_from, index)
        self.changed_from = min(self.changed_from, index)

    def add(
        self,
        role: Role,
        block: ContentBlock,
        msg_id: str,
        ts: int | None = None,
        synthetic: bool = False,
        size: int = 0,
    ) -> int:
        """Add one block to the message of `role`, merging into the newest message when the role
        repeats. Returns the index of the message it landed in. `size`: a light builder's count
        of the block's characters as Message.text() gives them."""
        drafts = self._drafts
        if not drafts or drafts[-1].role is not role:
            expected: tuple[str, ...] = ()
            if role is _USER and drafts:
                expected = drafts[-1].tool_ids
            drafts.append(_Draft(msg_id, role, expected, ts))
            if not self.rollback:
                self._finish()
        draft = drafts[-1]
        index = len(drafts) - 1
        if index < self._stale_from or index < self.changed_from:
            self._touch(index)
        if type(block) is TextContentBlock:  # most blocks: one check
            draft.blocks.append(block)
            draft.chars += size
        elif isinstance(block, ToolResultContentBlock):
            self._add_result(draft, block, size)
        elif isinstance(block, ToolUseContentBlock):
            if block.id in draft.tool_ids:
                self.warnings.append(f"tool_use {block.id!r} repeated; kept the first")
            else:
                draft.tool_ids = (*draft.tool_ids, block.id)
                draft.blocks.append(block)
                draft.chars += size
        else:
            draft.blocks.append(block)
            draft.chars += size
        if synthetic:
            draft.synthetic = True
            if self.pending_compaction is not None:
                compaction = msgspec.structs.replace(self.pending_compaction, message_index=index)
                self.compactions.append(compaction)
                self.pending_compaction = None
        return index

    def _finish(self) -> None:
        """Messages before the newest are final (only the newest changes): without rollbacks
        they are materialized now and their drafts let go, so a first read holds one object
        a message, not two."""
        drafts, stale = self._drafts, self._stale_from
        newest = len(drafts) - 1
        if stale >= newest:
            return
        if stale == newest - 1 and len(self._cache) == stale:  # the one before: most calls
            draft = drafts[stale]
            self._cache.append(draft.materialize())
            if self.light:
                self._tokens.append(draft.tokens())
            drafts[stale] = _FINISHED
            self._stale_from = newest
            return
        self._cache[stale:] = [d.materialize() for d in drafts[stale:newest]]
        if self.light:
            self._tokens[stale:] = [d.tokens() for d in drafts[stale:newest]]
        drafts[stale:newest] = [_FINISHED] * (newest - stale)
        self._stale_from = newest

    def _add_result(self, draft: _Draft, block: ToolResultContentBlock, size: int) -> None:
        tool_id = block.tool_use_id
        if tool_id in draft.results:
            self.warnings.append(f"tool_result {tool_id!r} repeated; kept the first")
        elif draft.role is _USER and tool_id in draft.tool_ids:  # owed: its placeholder goes
            if draft.results is _NO_RESULTS:
                draft.results = {}
            draft.results[tool_id] = block
            draft.chars += size - len(NO_RESULT)
        else:
            # No call for it in the message before (e.g. a resumed log's first record): keep the
            # text, since it was context the model saw, but not as a tool_result.
            self.warnings.append(f"tool_result {tool_id!r} answers no tool_use; kept as text")
            text = f"[tool result {tool_id}]\n"
            draft.blocks.append(TextContentBlock(text + block.content))
            draft.chars += len(text) + size

    def begin_compaction(
        self,
        trigger: str | None,
        pre_tokens: int | None,
        line: int,
        post_tokens: int | None = None,
        duration_ms: int | None = None,
    ) -> None:
        """The agent compacted here; the next synthetic block is its summary."""
        if self.pending_compaction is not None:
            self.warnings.append(
                f"line {self.pending_compaction.line_number}: compaction without a summary message"
            )
        self.pending_compaction = AgentCompaction(
            -1, trigger, pre_tokens, line, post_tokens, duration_ms
        )

    def set_post_tokens(self, tokens: int) -> None:
        """The newest compaction's context size just after it, learnt from a later record."""
        if self.pending_compaction is not None:
            self.pending_compaction = msgspec.structs.replace(
                self.pending_compaction, post_tokens=tokens
            )
        elif self.compactions:
            position = len(self.compactions) - 1
            last = self.compactions[position]
            self.compactions[position] = msgspec.structs.replace(last, post_tokens=tokens)
            self.compactions_changed_from = min(self.compactions_changed_from, position)

    def record_usage(self, key: str | None, usage: RecordedUsage) -> None:
        """`key` identifies one model response: a response split over several records reports
        its usage on each, and the latest figure wins."""
        if key is not None and key in self._usage_keys:
            position = self._usage_keys[key]
            self.usage[position] = usage
            self.usage_changed_from = min(self.usage_changed_from, position)
            return
        if key is not None:
            self._usage_keys[key] = len(self.usage)
        self.usage.append(usage)

    def mark(self) -> tuple[int, int]:
        """Where the history ends now: (messages, blocks of the newest), for `truncate`."""
        drafts = self._drafts
        return (len(drafts), len(drafts[-1].blocks)) if drafts else (0, 0)

    def truncate(self, mark: tuple[int, int]) -> None:
        """Take the history back to `mark` (an agent's rollback): later messages, the newest
        kept message's later blocks, and the usage and compactions recorded for what went."""
        if not self.rollback:
            raise ValueError("this history is never taken back (only Codex logs roll back)")
        count, blocks = mark
        drafts = self._drafts
        if count and blocks < len(drafts[count - 1].blocks):
            kept = drafts[count - 1]
            for block in kept.blocks[blocks:]:
                if isinstance(block, ToolUseContentBlock):
                    kept.tool_ids = tuple(i for i in kept.tool_ids if i != block.id)
            del kept.blocks[blocks:]
        del drafts[count:]
        self._touch(max(count - 1, 0))
        self.usage = [u for u in self.usage if u.message_index < count]
        self._usage_keys = {k: p for k, p in self._usage_keys.items() if p < len(self.usage)}
        self.compactions = [c for c in self.compactions if c.message_index < count]
        self.usage_changed_from = min(self.usage_changed_from, len(self.usage))
        self.compactions_changed_from = min(self.compactions_changed_from, len(self.compactions))
        self.reductions = [r for r in self.reductions if r.message_index < count]

    def messages(self) -> list[Message]:
        """The history so far; the builder's own list, so copy it before keeping it."""
        cache, drafts, stale = self._cache, self._drafts, self._stale_from
        del cache[stale:]
        cache.extend(d.materialize() for d in drafts[stale:])
        if self.light:
            del self._tokens[stale:]
            self._tokens.extend(d.tokens() for d in drafts[stale:])
        self._stale_from = len(drafts)
        return cache

    def message_tokens(self) -> list[int]:
        """A light builder's token estimate of each message of `messages()` (call that first);
        the builder's own list, as `messages()`."""
        return self._tokens

    def mark_seen(self) -> None:
        self.changed_from = len(self._drafts)
        self.usage_changed_from = len(self.usage)
        self.compactions_changed_from = len(self.compactions)

    def snapshot_warnings(self) -> list[str]:
        warnings = list(self.warnings)
        if self.pending_compaction is not None:
            line = self.pending_compaction.line_number
            warnings.append(f"line {line}: compaction has no summary message (yet)")
        return warnings


class LogImporter:
    """What both importers keep while reading a log, and how they hand it over as a transcript."""

    format: TranscriptFormat

    def __init__(self, path: str) -> None:
        self.path = path
        self.session_id: str | None = None
        self.skipped: Counter[str] = Counter()  # counted per file line
        self.skipped_lines: list[tuple[int, str]] = []
        self.warnings: list[str] = []
        self.builder = HistoryBuilder()
        self.generation = 0  # bumped whenever the history is rebuilt rather than extended
        self.subagent: str | None = None

    def title(self) -> str | None:
        """The session's own name, where the log gives one."""
        return None

    def reject(self, line_number: int, kind: str, reason: str) -> None:
        """A line refused before it was decoded (bounds.py): skipped and counted as `kind`."""
        self.skipped[kind] += 1
        bisect.insort(self.skipped_lines, (line_number, reason))

    def imported(
        self,
        line_count: int,
        messages: list[Message],
        skipped: Counter[str],
        empty_reason: str | None,
    ) -> ImportedTranscript:
        stem = os.path.splitext(os.path.basename(self.path))[0]
        notes = [skipped_lines_summary(self.skipped_lines), empty_reason]
        return ImportedTranscript(
            path=self.path,
            format=self.format,
            session_id=self.session_id or stem,
            messages=messages,
            agent_compactions=list(self.builder.compactions),
            recorded_usage=list(self.builder.usage),
            skipped=dict(skipped),
            line_count=line_count,
            warnings=[n for n in notes if n] + self.warnings + self.builder.snapshot_warnings(),
            skipped_lines=list(self.skipped_lines),
            empty_reason=empty_reason,
            context_reductions=list(self.builder.reductions),
            title=self.title(),
            subagent=self.subagent,
        )
