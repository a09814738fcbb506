"""Claude Code session logs (~/.claude/projects/<project>/<session>.jsonl).

Records form a tree through uuid/parentUuid. We import the conversation the agent had in context:
the chain that ends at the last user/assistant record in the file, read the way Claude Code reads
it back on resume:

- a rewind (the user re-sent or edited an earlier message) starts a new branch from an older
  record; only the branch the last record is on is imported;
- parallel tool calls are written as sibling assistant records (one per tool_use) under one
  parent, each with its tool_result chained below it, and the chain goes on from one of them:
  the siblings and their results are stitched back in, they are not rewound branches;
- a record whose parent is not in the file (it lives in another file, or the file was cut) goes
  on from the record before it in the file: it starts a root of what follows, it does not end
  the chain;
- a compaction starts a new root whose `logicalParentUuid` points back across the boundary; with
  a preserved segment (`compactMetadata.preservedSegment`) the kept messages hang below the
  summary, so what follows the summary is what the agent saw after compacting.

Every record with a uuid is a node of the tree, whatever its type, because the chain runs through
system and progress records too. Lines that cannot be read are skipped and noted with their line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import msgspec

from engine import (
    ContentBlock,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
)
from metis_compaction_tui.importers.model import (
    ContextReduction,
    HistoryBuilder,
    ImportedTranscript,
    LogImporter,
    RecordedUsage,
    note_bad_line,
    timestamp_ms,
)

MESSAGE_TYPES = frozenset({"user", "assistant"})
# Record types only Claude Code writes; format detection keys on them.
RECORD_TYPES = MESSAGE_TYPES | {
    "system",
    "summary",
    "file-history-snapshot",
    "queue-operation",
    "progress",
}
# Records Claude Code writes beside the conversation (session state re-appended when it
# changes, rewind checkpoints, hook context): skipped and counted by kind. A record of a kind not
# listed here is counted the same way; it is a problem only when it carries a message, which
# would then be missing from the conversation.
KNOWN_TYPES = RECORD_TYPES | {
    "attachment",
    "custom-title",
    "ai-title",
    "task-summary",
    "tag",
    "agent-name",
    "agent-color",
    "agent-setting",
    "mode",
    "permission-mode",
    "pr-link",
    "last-prompt",
    "worktree-state",
    "content-replacement",
    "file-history-delta",
    "attribution-snapshot",
    "bridge-session",
    "atis-latch",
    "frame-link",
    "cost-state",
    "saved_hook_context",
    "marble-origami-commit",
    "marble-origami-snapshot",
}
# One string for each known kind: a node keeps its kind, and a decoded one is a new string.
_KINDS = {kind: kind for kind in KNOWN_TYPES}
_NON_MESSAGE_DEPTH = 4  # progress/system records between a tool call and its result


def _no_negatives(record: msgspec.Struct) -> None:
    """A count below zero is not a count: read as unknown (None), like a missing one."""
    for name in record.__struct_fields__:
        value = getattr(record, name)
        if isinstance(value, int) and value < 0:
            setattr(record, name, None)


class _Usage(msgspec.Struct, gc=False):
    """Read where it is used: a count below zero (or missing) counts 0 there (one usage per
    assistant record: no __post_init__ call per record)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class _Block(msgspec.Struct, gc=False):
    """One content block: only the fields we read (a thinking block's text and signature are
    skipped unparsed). Values are untyped here and checked where they are read (_blocks)."""

    type: Any = None
    text: Any = None
    id: Any = None
    name: Any = None
    input: Any = None
    tool_use_id: Any = None
    content: Any = None
    is_error: Any = None


class _ApiMessage(msgspec.Struct, gc=False):
    id: str | None = None
    # Decoded with the record, in the same pass over the line: a content of another shape (an
    # object, a list with a non-object in it) is read by `_lenient` instead.
    content: str | list[_Block] | None = None
    usage: _Usage | None = None


class _PreservedSegment(msgspec.Struct, rename="camel", gc=False):
    head_uuid: str | None = None
    anchor_uuid: str | None = None
    tail_uuid: str | None = None


class _CompactMetadata(msgspec.Struct, rename="camel", gc=False):
    trigger: str | None = None
    pre_tokens: int | None = None
    post_tokens: int | None = None
    duration_ms: int | None = None
    preserved_segment: _PreservedSegment | None = None

    def __post_init__(self) -> None:
        _no_negatives(self)


class _MicrocompactMetadata(msgspec.Struct, rename="camel", gc=False):
    trigger: str | None = None
    pre_tokens: int | None = None
    tokens_saved: int | None = None

    def __post_init__(self) -> None:
        _no_negatives(self)


class _Record(msgspec.Struct, rename="camel", gc=False):
    """Only the fields we use: msgspec skips the rest (toolUseResult copies, snapshots) unparsed."""

    type: str = ""
    uuid: str | None = None
    parent_uuid: str | None = None
    logical_parent_uuid: str | None = None
    is_sidechain: bool | None = None
    is_compact_summary: bool | None = None
    subtype: str | None = None
    compact_metadata: _CompactMetadata | None = None
    microcompact_metadata: _MicrocompactMetadata | None = None
    timestamp: str | None = None
    message: _ApiMessage | None = None
    custom_title: Any = None  # a custom-title record's; checked where it is read
    ai_title: Any = None  # an ai-title record's


class _FirstRecord(_Record, rename="camel", gc=False):
    """A record read while the session id is not known yet: every record repeats it, and
    reading it once saves a string per record (130,000 in a 100 MB log)."""

    session_id: str | None = None


_decoder = msgspec.json.Decoder(_Record)
_first_decoder = msgspec.json.Decoder(_FirstRecord)

# Enum members read through a module global: `Role.USER` goes through the enum class's attribute
# hook in Python 3.11 (about 70 ns), and a first read of 100 MB asks several times a record.
_USER, _ASSISTANT = Role.USER, Role.ASSISTANT


def _lenient(raw: bytes) -> _Record:
    """A record whose content has a shape the typed decoder refused: its other fields are read
    as usual (a ValidationError still means the record is bad), and of its content only a string
    or the list's objects are kept (nothing else is a block)."""
    value = msgspec.json.decode(raw)
    message = value.get("message") if isinstance(value, dict) else None
    if isinstance(message, dict):
        content = message.get("content")
        if isinstance(content, list):
            message["content"] = [item for item in content if isinstance(item, dict)]
        elif not isinstance(content, str):
            message["content"] = None
    return msgspec.convert(value, _FirstRecord)


# _Node.flags
_SUMMARY = 1  # isCompactSummary: the agent's own summary
_CALL = 2  # an assistant record holding a tool_use block
_RESULT = 4  # a user record holding a tool_result block
_ON_CHAIN = 8  # on the imported chain
_THINKING = 16  # thinking blocks passed over in a light read, counted from this bit up


# A light read's text block: its text is not kept (its size is), so all are this one.
_SHELL_TEXT = TextContentBlock("")
_SHELL_TEXTS = (_SHELL_TEXT,)
_NO_INPUT: dict[str, object] = {}  # a light read's tool call keeps no input: shared, never written


class _Node(msgspec.Struct, gc=False):
    """One record of the tree: only what the chain is worked out from, and for the history a
    message's `body`, its content blocks made once when it is read (a compaction boundary's
    `body` is its record; other records keep none), with the `usage` it reports. In a light
    read (`ClaudeCodeImporter(light=True)`) the blocks are shells without text and `sizes`
    holds each block's size in characters, so the message's token estimate is made without
    the text (engine.tokens). Untracked by the GC (no cycles): a 100 MB log has 130,000."""

    kind: str
    uuid: str  # the key it is filed under: a child's `written` is this same string
    line: int
    parent: str | None  # as written (or the logical parent across a boundary)
    prev: str | None  # the node before it in the file: where a dangling parent goes on from
    written: str | None  # parentUuid as written
    message_id: str | None  # an assistant record's API message id
    flags: int
    body: Any
    sizes: int | tuple[int, ...] = 0  # light: one block's size, or one a block
    usage: _Usage | None = None  # the usage an assistant record reports
    stamp: str | None = None  # full: the record's timestamp as written (read where it is kept)
    # Records naming this one their parent: one as itself, several as a list (_kids).
    child: str | list[str] | None = None

    def is_tool_call(self) -> bool:
        return bool(self.flags & _CALL)

    def is_tool_result(self) -> bool:
        return bool(self.flags & _RESULT)


def _kin(table: dict[str, Any], key: str | None) -> tuple[str, ...] | list[str]:
    """The uuids filed under `key` in a table that holds one uuid as itself and several as a
    list (most parents have one child, most responses one record: no list for each)."""
    found = table.get(key) if key is not None else None  # type: ignore[arg-type]
    if found is None:
        return ()
    return (found,) if type(found) is str else found


def _file_under(table: dict[str, Any], key: str, uuid: str) -> None:
    found = table.get(key)
    if found is None:
        table[key] = uuid
    elif type(found) is str:
        table[key] = [found, uuid]
    else:
        found.append(uuid)


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else msgspec.json.encode(content).decode()
    parts: list[str] = []
    for item in content:
        if isinstance(item, dict):
            kind = item.get("type")
            text = item.get("text")
            parts.append(text if kind == "text" and isinstance(text, str) else f"[{kind}]")
        elif isinstance(item, str):
            parts.append(item)
    return "\n".join(parts)


class ClaudeCodeImporter(LogImporter):
    format = "claude-code"

    def __init__(self, path: str, *, light: bool = False, once: bool = False) -> None:
        """`light`: keep no message text, only each block's size (the history's messages are
        shells with their token estimates beside them: HistoryBuilder(light=True)); what the
        status line reads, which needs the figures and not the words. `once`: the chain is
        worked out once (one poll); each record's content is let go of as it goes into the
        history, so it is held once at the read's peak, and a later settle that finds new
        records raises (without their content the history could not be rebuilt)."""
        super().__init__(path)  # `skipped` counts per file line, whatever the branch
        self.light = light
        self.once = once
        self._settled = False
        # Claude Code logs never roll back: the builder lets go of finished drafts.
        self.builder = HistoryBuilder(light=light, rollback=False)
        self.nodes: dict[str, _Node] = {}
        # Children of a parent not read (yet): filed on the parent's node once it is read.
        self._orphans: dict[str, str | list[str]] = {}
        self._linked = False  # has any record named a parent? (old logs link nothing)
        self._previous: str | None = None  # the last node in file order
        self._message_records = 0
        self._chain: list[str] = []
        self._chain_messages = 0
        self._leaf: str | None = None
        # Preserved segments: head -> anchor it hangs below, boundary -> head, anchor -> tail.
        self._relink: dict[str, str] = {}
        self._boundary_head: dict[str, str] = {}
        self._anchor_tail: dict[str, str] = {}
        self._anchor_head: dict[str, str] = {}  # anchor -> the head that hangs below it
        self._preserved: set[str] = set()  # kept records: their usage is from before compacting
        # API message id -> its assistant records, one as itself (_kin)
        self._responses: dict[str, str | list[str]] = {}
        self._microcompacts: set[str] = set()
        self.custom_title: str | None = None
        self.ai_title: str | None = None
        self._summary_of: dict[str, str] = {}  # boundary -> its compact summary record
        # A preserved segment read since the last advance re-parents records that may already be
        # on the chain, so the chain is recomputed rather than extended.
        self._relinked = False
        self._unsettled = False  # a leaf fed that the chain does not reach yet

    def feed(self, lines: list[tuple[int, bytes]]) -> None:
        """Index the lines; the chain follows at the next `settle()`, once per poll rather than
        once per batch (each advance past a parallel call walks the whole chain)."""
        for line_number, raw in lines:
            uuid = self._index(line_number, raw)
            if uuid is not None:
                self._leaf = uuid
                self._unsettled = True

    def settle(self) -> None:
        """Bring the imported chain up to the newest leaf fed."""
        if self._unsettled and self._leaf is not None:
            if self.once and self._settled:
                raise RuntimeError(f"{self.path}: a transcript read once was read again")
            self._unsettled = False
            self._settled = True
            self._advance(self._extend_leaf(self._leaf))

    def _index(self, line_number: int, raw: bytes) -> str | None:
        """Record one line; returns its uuid if it is a user/assistant node (a leaf candidate)."""
        decoder = _first_decoder if self.session_id is None else _decoder
        try:
            try:
                record = decoder.decode(raw)
            except msgspec.ValidationError:
                record = _lenient(raw)  # an odd content shape; raises again for other fields
        except (msgspec.DecodeError, RecursionError) as error:  # the lenient read names the
            # other field of a record refused for its content
            note_bad_line(error, line_number, self.skipped_lines)
            self.skipped["invalid"] += 1
            return None
        if record.is_sidechain:
            self.skipped["sidechain"] += 1  # sub-agent turns, not the main conversation
            return None
        kind = _KINDS.get(record.type, record.type)
        if kind not in MESSAGE_TYPES:
            if kind == "system":
                if record.subtype != "compact_boundary":
                    self.skipped[f"system.{record.subtype}"] += 1
            else:
                self.skipped[kind or "untyped"] += 1
                if kind == "custom-title" and isinstance(record.custom_title, str):
                    self.custom_title = record.custom_title or self.custom_title
                elif kind == "ai-title" and isinstance(record.ai_title, str):
                    self.ai_title = record.ai_title or self.ai_title
                elif kind not in KNOWN_TYPES and (record.message is not None or not kind):
                    reason = f"unknown record type {kind!r}" if kind else "record without a type"
                    self.skipped_lines.append((line_number, reason))
        if type(record) is _FirstRecord and record.session_id and self.session_id is None:
            self.session_id = record.session_id
        uuid = record.uuid
        if uuid is None:
            if kind not in MESSAGE_TYPES:
                return None
            uuid = f"line-{line_number}"
        nodes = self.nodes
        if uuid in nodes:
            self.warnings.append(f"line {line_number}: uuid {uuid!r} repeated; kept the first")
            return None
        written = record.parent_uuid
        if written:
            self._linked = True
            known = nodes.get(written)
            if known is None:
                _file_under(self._orphans, written, uuid)
            else:
                written = known.uuid  # one string for the parent's name, not one a child
                found = known.child
                if found is None:
                    known.child = uuid
                elif type(found) is str:
                    known.child = [found, uuid]
                else:
                    found.append(uuid)
        else:
            written = None
        parent = written or record.logical_parent_uuid
        if parent is None and not self._linked:
            parent = self._previous  # no links anywhere so far: file order is the only order
        message = record.message
        message_id = None
        flags = _SUMMARY if record.is_compact_summary else 0
        body: Any = record
        sizes: int | tuple[int, ...] = 0
        usage = stamp = None
        if kind in MESSAGE_TYPES:
            if kind == "assistant" and message is not None and message.id:
                message_id = message.id
                group = self._responses.get(message_id)
                if group is None:
                    self._responses[message_id] = uuid
                else:  # one response written as several records: one string for its id
                    first = group if type(group) is str else group[0]
                    message_id = nodes[first].message_id
                    _file_under(self._responses, message_id, uuid)  # type: ignore[arg-type]
            if message is None:
                body = None
            else:
                if self.light:
                    body, sizes, more = self._light(kind, message.content)
                else:
                    body, more = self._blocks(kind, message.content)
                    stamp = record.timestamp
                flags |= more
                usage = message.usage
        elif not (
            kind == "system" and record.subtype in ("compact_boundary", "microcompact_boundary")
        ):
            body = None  # only a boundary's record is read again (_append)
        node = _Node(
            kind,
            uuid,
            line_number,
            parent,
            self._previous,
            written,
            message_id,
            flags,
            body,
            sizes,
            usage,
            stamp,
        )
        if self._orphans:
            node.child = self._orphans.pop(uuid, None)
        nodes[uuid] = node
        self._previous = uuid
        if kind == "system":
            if record.subtype == "compact_boundary":
                self._preserved_segment(uuid, record)
            elif record.subtype == "microcompact_boundary":
                self._microcompacts.add(uuid)
        if flags & _SUMMARY and written in nodes:
            self._summary_of.setdefault(written, uuid)  # type: ignore[arg-type]
            self._relinked = True  # a segment anchored on the boundary now hangs below this
        if kind in MESSAGE_TYPES:
            self._message_records += 1
            return uuid
        return None

    def _preserved_segment(self, uuid: str, record: _Record) -> None:
        """A compaction that kept its newest messages (head .. tail, written before it): they
        hang below `anchor` (the summary), and what was written below the anchor goes on from
        the tail, as Claude Code relinks them on resume. A segment whose tail does not lead back
        to its head is left as written, as Claude Code leaves it."""
        segment = (record.compact_metadata or _CompactMetadata()).preserved_segment
        if segment is None or not segment.head_uuid or not segment.anchor_uuid:
            return
        head, anchor, tail = segment.head_uuid, segment.anchor_uuid, segment.tail_uuid
        if tail:
            kept: list[str] = []
            current: str | None = tail
            while current is not None and current != head:
                node = self.nodes.get(current)
                if node is None or current in kept:
                    return  # broken: the tail does not lead back to the head
                kept.append(current)
                current = node.written
            if current is None:
                return
            self._preserved.update(kept)
            self._preserved.add(head)
            self._anchor_tail[anchor] = tail
            self._anchor_head[anchor] = head
        self._relink[head] = anchor
        self._boundary_head[uuid] = head
        self._relinked = True

    def parents_before(self, line: int) -> set[str]:
        """The parents named by records from file line `line` on that lie before it (or were
        never read): what a read resumed at `line` hangs on. A record read later that names a
        parent before `line` outside this set went back (a rewind), which a resumed read cannot
        see. Walks only the records from `line` on (the nodes are in file order)."""
        nodes = self.nodes
        found: set[str] = set()
        for node in reversed(nodes.values()):
            if node.line < line:
                break
            parent = node.written
            if parent and (parent not in nodes or nodes[parent].line < line):
                found.add(parent)
        return found

    # -- the active chain ------------------------------------------------------------------------

    def _parent_of(self, uuid: str) -> str | None:
        """Where the chain goes on from `uuid`, towards the start of the session."""
        node = self.nodes[uuid]
        written = node.written
        if written in self._anchor_tail and self._anchor_head.get(written) != uuid:
            tail = self._anchor_tail[written]
            if tail in self.nodes and tail != uuid:
                return tail  # written below the summary: goes on after the kept messages
        anchor = self._relink.get(uuid)
        if anchor is not None and anchor in self.nodes:
            if anchor in self._anchor_tail:
                return anchor  # what was below the anchor goes on from the tail (above)
            # A preserved segment's head hangs below the summary (the anchor may name the
            # boundary itself, whose summary is its child).
            return self._summary_of.get(anchor, anchor)
        head_uuid = self._boundary_head.get(uuid)
        if head_uuid is not None:
            head = self.nodes.get(head_uuid)
            if head is not None and head.line < node.line:
                # The kept messages were written before the boundary: what was summarized ends
                # where they begin, so the boundary goes on from the head's old parent.
                return self._resolve(head, head.parent)
        return self._resolve(node, node.parent)

    def _kids(self, uuid: str | None) -> tuple[str, ...] | list[str]:
        """The records that name `uuid` their parent, in file order."""
        if uuid is None:
            return ()
        node = self.nodes.get(uuid)
        found = node.child if node is not None else self._orphans.get(uuid)
        if found is None:
            return ()
        return (found,) if type(found) is str else found

    def _resolve(self, node: _Node, parent: str | None) -> str | None:
        if parent is None or parent in self.nodes:
            return parent
        return node.prev  # a parent outside the file: go on from the record before it

    def _extend_leaf(self, leaf: str) -> str:
        """A summary whose preserved segment was written before it: the segment's tail is the
        newest record of the conversation."""
        node = self.nodes[leaf]
        if node.flags & _SUMMARY:
            for anchor in (leaf, node.parent):
                tail = self._anchor_tail.get(anchor) if anchor is not None else None
                if tail is not None and tail in self.nodes and self.nodes[tail].line < node.line:
                    return tail
        return leaf

    def _walk(self, leaf: str) -> list[str]:
        path: list[str] = []
        seen: set[str] = set()
        nodes = self.nodes
        relinked = self._relink.keys() | self._boundary_head.keys()
        for anchor in self._anchor_tail:
            relinked |= set(self._kids(anchor))
        current: str | None = leaf
        while current is not None and current not in seen:
            node = nodes.get(current)
            if node is None:
                break
            seen.add(current)
            path.append(current)
            if current in relinked:
                current = self._parent_of(current)
            else:  # _parent_of's last case, written out: a first read walks every record
                parent = node.parent
                current = parent if parent is None or parent in nodes else node.prev
        path.reverse()
        return path

    def _siblings(self, uuid: str, on_path: set[str]) -> list[str]:
        """Parallel tool calls written beside `uuid`: assistant records under the same parent
        that share its API message id (one response written as several records) or, where
        either has no id, that like it carry a tool call. Two responses with different ids
        under one parent are a regenerated answer, not parallel calls."""
        node = self.nodes[uuid]
        parent = node.written
        if node.kind != "assistant" or parent is None:
            return []
        found = []
        message_id = node.message_id
        for other_uuid in self._kids(parent):
            if other_uuid == uuid or other_uuid in on_path:
                continue
            other = self.nodes[other_uuid]
            if other.kind != "assistant":
                continue  # a user record beside it is a rewind, not a parallel call
            other_id = other.message_id
            if message_id is not None and other_id is not None:
                if other_id == message_id:
                    found.append(other_uuid)
            elif node.is_tool_call() and other.is_tool_call():
                found.append(other_uuid)
        return found

    def _results_below(self, uuid: str) -> list[str]:
        """The tool_result records chained below a tool call (through progress records)."""
        found: list[str] = []
        frontier = [uuid]
        for _ in range(_NON_MESSAGE_DEPTH):
            next_frontier = []
            for parent in frontier:
                for child_uuid in self._kids(parent):
                    child = self.nodes[child_uuid]
                    if child.is_tool_result():
                        found.append(child_uuid)
                    elif child.kind not in MESSAGE_TYPES:
                        next_frontier.append(child_uuid)
            if not next_frontier:
                break
            frontier = next_frontier
        return found

    def _active(self, leaf: str) -> list[str]:
        """The chain ending at `leaf`, with parallel tool-call siblings stitched back in."""
        path = self._walk(leaf)
        on_path = set(path)
        placed: set[str] = set()
        active: list[str] = []
        nodes, orphans = self.nodes, self._orphans
        for uuid in path:
            if uuid in placed:
                continue
            written = nodes[uuid].written
            above = nodes.get(written) if written is not None else None
            kin = above.child if above is not None else orphans.get(written)  # type: ignore[arg-type]
            if kin is None or type(kin) is str:  # an only child has no siblings: most records
                placed.add(uuid)
                active.append(uuid)
                continue
            siblings = self._siblings(uuid, on_path)
            if not siblings:
                placed.add(uuid)
                active.append(uuid)
                continue
            line = self.nodes.__getitem__
            group = sorted([uuid, *siblings], key=lambda u: line(u).line)
            results = sorted(
                {r for g in group for r in self._results_below(g)} - placed,
                key=lambda u: line(u).line,
            )
            for stitched in (*group, *results):
                if stitched not in placed:
                    placed.add(stitched)
                    active.append(stitched)
        return self._recover_responses(active, placed)

    def _recover_responses(self, active: list[str], placed: set[str]) -> list[str]:
        """Records of a response on the chain that the chain does not reach, stitched in after
        its last record on the chain, as Claude Code does on resume: the response's other
        records (parallel tool calls written one below another, or beside each other) and the
        tool results written below any of them. Only responses written as several records are
        looked at: when the chain runs through all of each that it touches (most sessions), that
        is all this costs."""
        nodes, responses = self.nodes, self._responses
        if not any(
            type(group) is list and self._partly_placed(group, placed)
            for group in responses.values()
        ):
            return active
        last_of: dict[str, str] = {}  # message id -> its last record on the chain
        for uuid in active:
            message_id = nodes[uuid].message_id
            if message_id is not None and type(responses[message_id]) is list:
                last_of[message_id] = uuid
        inserts: dict[str, list[str]] = {}
        for message_id, anchor in last_of.items():
            members = _kin(responses, message_id)
            if all(m in placed and all(c in placed for c in self._kids(m)) for m in members):
                continue  # the chain runs through all of it: most responses
            lost = [m for m in members if m not in placed]
            results = [r for m in members for r in self._results_below(m) if r not in placed]
            recovered = sorted(set(lost), key=lambda u: nodes[u].line) + sorted(
                set(results) - set(lost), key=lambda u: nodes[u].line
            )
            if recovered:
                placed.update(recovered)
                inserts[anchor] = recovered
        if not inserts:
            return active
        stitched: list[str] = []
        for uuid in active:
            stitched.append(uuid)
            stitched += inserts.get(uuid, ())
        return stitched

    def _partly_placed(self, group: list[str], placed: set[str]) -> bool:
        """Is some of this response on the chain, and some of it or of the records written
        below it not?"""
        nodes = self.nodes
        touched, whole = False, True
        for uuid in group:
            if uuid not in placed:
                whole = False
                continue
            touched = True
            child = nodes[uuid].child
            if child is not None and not (
                child in placed if type(child) is str else placed.issuperset(child)
            ):
                whole = False
        return touched and not whole

    def _advance(self, leaf: str) -> None:
        """Extend the imported chain to `leaf`, or rebuild it when `leaf` is on another branch."""
        if not self._chain:  # a first read: the chain is all of it, walked once
            self._relinked = False
            self._append(self._active(leaf))
            return
        path: list[str] = []
        seen: set[str] = set()
        current: str | None = leaf
        nodes = self.nodes
        while current is not None and current not in seen:
            node = nodes.get(current)
            if node is None or node.flags & _ON_CHAIN:
                break
            seen.add(current)
            path.append(current)
            current = self._parent_of(current)
        chain_end = self._chain[-1] if self._chain else None
        relinked, self._relinked = self._relinked, False
        simple = (
            not relinked
            and current == chain_end
            and all(len(self._kids(self.nodes[u].written)) <= 1 for u in path)
        )
        if simple:  # the common case, O(new records): a plain append to the chain
            self._append(reversed(path))
            return
        want = self._active(leaf)
        if want[: len(self._chain)] == self._chain:
            self._append(want[len(self._chain) :])
            return
        self._rebuild(want)  # joins the chain further back (a rewind), or not at all

    def _rebuild(self, want: list[str]) -> None:
        self.builder = HistoryBuilder(light=self.light, rollback=False)
        self.generation += 1
        nodes = self.nodes
        for uuid in self._chain:
            nodes[uuid].flags &= ~_ON_CHAIN
        self._chain, self._chain_messages = [], 0
        self._append(want)

    def _append(self, uuids: Iterable[str]) -> None:
        """Extend the imported chain with these records, in order."""
        chain, nodes = self._chain, self.nodes
        apply = self._apply
        for uuid in uuids:
            chain.append(uuid)
            node = nodes[uuid]
            node.flags |= _ON_CHAIN
            kind = node.kind
            if kind == "user" or kind == "assistant":
                self._chain_messages += 1
                apply(uuid, node)
                if self.once:
                    node.body = node.usage = None
                    node.sizes = 0
            elif kind == "system" and node.body is not None:
                record = node.body
                if record.subtype == "compact_boundary":
                    meta = record.compact_metadata or _CompactMetadata()
                    self.builder.begin_compaction(
                        meta.trigger, meta.pre_tokens, node.line, meta.post_tokens, meta.duration_ms
                    )
                elif record.subtype == "microcompact_boundary":
                    micro = record.microcompact_metadata or _MicrocompactMetadata()
                    builder = self.builder
                    builder.reductions.append(
                        ContextReduction(
                            len(builder) - 1,
                            node.line,
                            len(builder.usage),
                            micro.trigger,
                            micro.pre_tokens,
                            micro.tokens_saved,
                        )
                    )

    def _apply(self, uuid: str, node: _Node) -> None:
        """A message record's blocks into the history (a light read's are shells, their sizes
        given beside them), and the usage it reports."""
        blocks: tuple[ContentBlock, ...] | None = node.body
        if blocks is None:
            return
        builder = self.builder
        role = _USER if node.kind == "user" else _ASSISTANT
        synthetic = bool(node.flags & _SUMMARY)
        index: int | None = None
        add = builder.add
        if self.light:
            sizes = node.sizes
            if type(sizes) is int:
                index = add(role, blocks[0], uuid, None, synthetic, sizes)
            else:
                for block, size in zip(blocks, sizes, strict=True):  # type: ignore[arg-type]
                    index = add(role, block, uuid, None, synthetic, size)
        else:
            # Read only where it is kept: a record of the newest message's role merges into it.
            ts = timestamp_ms(node.stamp) if builder.last_role() is not role else None
            for block in blocks:
                index = add(role, block, uuid, ts, synthetic)
        if thinking := node.flags // _THINKING:
            builder.skipped["thinking"] += thinking  # never shown
        if node.usage is not None:
            self._usage(uuid, node, node.usage, index)

    def _usage(self, uuid: str, node: _Node, usage: _Usage | None, index: int | None) -> None:
        """The usage an assistant record reports, on the message its blocks landed in."""
        if usage is None or node.kind != "assistant" or uuid in self._preserved:
            return  # a kept record's usage is from before the compaction
        builder = self.builder
        if index is None:
            index = len(builder) - 1 if builder.last_role() is _ASSISTANT else -1
        # A negative count is not a count: 0, like a missing one.
        recorded = RecordedUsage(
            index,
            n if (n := usage.input_tokens) and n > 0 else 0,
            n if (n := usage.output_tokens) and n > 0 else 0,
            n if (n := usage.cache_read_input_tokens) and n > 0 else 0,
            n if (n := usage.cache_creation_input_tokens) and n > 0 else 0,
        )
        builder.record_usage(node.message_id or uuid, recorded)

    def _light(
        self, kind: str, content: str | list[_Block] | None
    ) -> tuple[tuple[ContentBlock, ...], int | tuple[int, ...], int]:
        """A message record's blocks as shells and their sizes in characters (one block's as an
        int), and its flags (_CALL, _RESULT, thinking blocks passed over from _THINKING up):
        what `_blocks` makes of it, measured as Message.text() joins it, keeping no text."""
        if type(content) is str:
            return (_SHELL_TEXTS, len(content), 0) if content else ((), (), 0)
        blocks: list[ContentBlock] = []
        sizes: list[int] = []
        flags = 0
        for item in content or ():
            block_kind = item.type
            if block_kind == "text":
                text = item.text
                if isinstance(text, str) and text:
                    blocks.append(_SHELL_TEXT)
                    sizes.append(len(text))
            elif block_kind == "tool_result" and kind == "user":
                flags |= _RESULT
                blocks.append(
                    ToolResultContentBlock(str(item.tool_use_id), "", item.is_error is True)
                )
                sizes.append(len(_result_text(item.content)))
            elif block_kind == "tool_use" and kind == "assistant":
                flags |= _CALL
                raw_input = item.input
                tool_input = raw_input if isinstance(raw_input, dict) else {"value": raw_input}
                blocks.append(ToolUseContentBlock(str(item.id), "", _NO_INPUT))
                # Message.text() gives a call as its name and its input's JSON, on two lines
                encoded = msgspec.json.encode(tool_input).decode()
                sizes.append(len(str(item.name)) + 1 + len(encoded))
            elif block_kind in ("thinking", "redacted_thinking"):
                flags += _THINKING
            elif block_kind == "server_tool_use":
                encoded = msgspec.json.encode(item.input).decode()
                blocks.append(_SHELL_TEXT)
                sizes.append(len(f"[{item.name}] {encoded}"))
            else:
                blocks.append(_SHELL_TEXT)
                sizes.append(len(f"[{block_kind}]"))
        if len(sizes) == 1:
            return _SHELL_TEXTS if blocks[0] is _SHELL_TEXT else tuple(blocks), sizes[0], flags
        return tuple(blocks), tuple(sizes), flags

    def _blocks(
        self, kind: str, content: str | list[_Block] | None
    ) -> tuple[tuple[ContentBlock, ...], int]:
        """A message record's content as blocks, and its flags (_CALL, _RESULT, thinking
        blocks passed over from _THINKING up)."""
        if type(content) is str:
            return ((TextContentBlock(content),) if content else ()), 0
        blocks: list[ContentBlock] = []
        flags = 0
        for item in content or ():
            block_kind = item.type
            if block_kind == "text":
                text = item.text
                if isinstance(text, str) and text:
                    blocks.append(TextContentBlock(text))
            elif block_kind == "tool_result" and kind == "user":
                flags |= _RESULT
                blocks.append(
                    ToolResultContentBlock(
                        tool_use_id=str(item.tool_use_id),
                        content=_result_text(item.content),
                        is_error=item.is_error is True,
                    )
                )
            elif block_kind == "tool_use" and kind == "assistant":
                flags |= _CALL
                raw_input = item.input
                tool_input = raw_input if isinstance(raw_input, dict) else {"value": raw_input}
                blocks.append(ToolUseContentBlock(str(item.id), str(item.name), tool_input))
            elif block_kind in ("thinking", "redacted_thinking"):
                flags += _THINKING  # never shown
            elif block_kind == "server_tool_use":
                # Run by the API, answered inside the same assistant message: not a client call.
                encoded = msgspec.json.encode(item.input).decode()
                blocks.append(TextContentBlock(f"[{item.name}] {encoded}"))
            else:
                blocks.append(TextContentBlock(f"[{block_kind}]"))  # image, document, results
        return tuple(blocks), flags

    def title(self) -> str | None:
        """The name the user gave the session, else the one Claude Code generated for it."""
        return self.custom_title or self.ai_title

    def transcript(self, line_count: int) -> ImportedTranscript:
        self.settle()
        skipped = self.skipped + self.builder.skipped
        inactive = self._message_records - self._chain_messages
        if inactive:
            skipped["inactive_branch"] = inactive
        messages = list(self.builder.messages())
        empty_reason = None if messages else self._empty_reason(skipped)
        return self.imported(line_count, messages, skipped, empty_reason)

    def _empty_reason(self, skipped: Counter[str]) -> str:
        sidechain, summaries = skipped.get("sidechain", 0), skipped.get("summary", 0)
        if self._message_records:
            return (
                f"no messages: the {self._message_records:,} user/assistant record(s) on the "
                "active branch hold no text, tool call or tool result"
            )
        if sidechain:
            return f"subagent log: {sidechain:,} sidechain records, no main conversation"
        if summaries:
            return f"summary-only file: {summaries:,} summary records, no conversation"
        kinds = ", ".join(f"{n:,} {kind}" for kind, n in skipped.most_common(3))
        return f"no user or assistant records ({kinds or 'nothing readable'})"
