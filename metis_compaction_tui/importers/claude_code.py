"""Claude Code session logs (~/.claude/projects/<project>/<session>.jsonl).

Records form a tree through uuid/parentUuid: a rewind starts a new branch from an older record, and
a compaction starts a new root whose `logicalParentUuid` points back across the boundary. The
active branch is the chain that ends at the last user/assistant record in the file; that chain is
all we import. Every record with a uuid is a node of the tree, whatever its type, because the
chain runs through system and progress records too.
"""

from __future__ import annotations

import os
from collections import Counter

import msgspec

from engine.messages import (
    ContentBlock,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
)
from metis_compaction_tui.importers.model import (
    HistoryBuilder,
    ImportedTranscript,
    RecordedUsage,
    decode_line,
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


class _Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class _ApiMessage(msgspec.Struct):
    id: str | None = None
    # A string or a list of block objects, decoded only when the record joins the active chain:
    # abandoned branches are never decoded, and raw bytes are cheap to keep for a rebuild.
    content: msgspec.Raw = msgspec.Raw(b"null")
    usage: _Usage | None = None


class _CompactMetadata(msgspec.Struct, rename="camel"):
    trigger: str | None = None
    pre_tokens: int | None = None


class _Record(msgspec.Struct, rename="camel"):
    """Only the fields we use: msgspec skips the rest (toolUseResult copies, snapshots) unparsed."""

    type: str = ""
    uuid: str | None = None
    parent_uuid: str | None = None
    logical_parent_uuid: str | None = None
    is_sidechain: bool | None = None
    is_compact_summary: bool | None = None
    subtype: str | None = None
    compact_metadata: _CompactMetadata | None = None
    timestamp: str | None = None
    session_id: str | None = None
    message: _ApiMessage | None = None


_decoder = msgspec.json.Decoder(_Record)


class _Node:
    __slots__ = ("line", "parent", "record")

    def __init__(self, record: _Record, line: int, parent: str | None) -> None:
        self.record = record
        self.line = line
        self.parent = parent


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


class ClaudeCodeImporter:
    format = "claude-code"

    def __init__(self, path: str) -> None:
        self.path = path
        self.session_id: str | None = None
        self.nodes: dict[str, _Node] = {}
        self.skipped: Counter[str] = Counter()  # counted per file line, whatever the branch
        self.warnings: list[str] = []
        self.builder = HistoryBuilder()
        self.generation = 0  # bumped whenever the history is rebuilt rather than extended
        self._linked = False  # has any record named a parent? (old logs link nothing)
        self._previous: str | None = None  # the last node in file order
        self._message_records = 0
        self._chain: list[str] = []
        self._chain_pos: dict[str, int] = {}
        self._chain_messages = 0

    def feed(self, lines: list[tuple[int, bytes]]) -> None:
        leaf: str | None = None
        for line_number, raw in lines:
            uuid = self._index(line_number, raw)
            if uuid is not None:
                leaf = uuid
        if leaf is not None:
            self._advance(leaf)

    def _index(self, line_number: int, raw: bytes) -> str | None:
        """Record one line; returns its uuid if it is a user/assistant node (a leaf candidate)."""
        record = decode_line(_decoder, raw, self.path, line_number, self.warnings)
        if record is None:
            self.skipped["invalid"] += 1
            return None
        assert isinstance(record, _Record)
        if record.is_sidechain:
            self.skipped["sidechain"] += 1  # sub-agent turns, not the main conversation
            return None
        if record.message is not None:
            record.message.content = record.message.content.copy()  # keep the content, not the line
        kind = record.type
        if kind not in MESSAGE_TYPES:
            if kind == "system":
                if record.subtype != "compact_boundary":
                    self.skipped[f"system.{record.subtype}"] += 1
            else:
                self.skipped[kind or "untyped"] += 1
        if record.session_id and self.session_id is None:
            self.session_id = record.session_id
        uuid = record.uuid
        if uuid is None:
            if kind not in MESSAGE_TYPES:
                return None
            uuid = f"line-{line_number}"
        if uuid in self.nodes:
            self.warnings.append(f"line {line_number}: uuid {uuid!r} repeated; kept the first")
            return None
        parent = record.parent_uuid or record.logical_parent_uuid
        if record.parent_uuid:
            self._linked = True
        elif parent is None and not self._linked:
            parent = self._previous  # no links anywhere so far: file order is the only order
        self.nodes[uuid] = _Node(record, line_number, parent)
        self._previous = uuid
        if kind in MESSAGE_TYPES:
            self._message_records += 1
            return uuid
        return None

    def _advance(self, leaf: str) -> None:
        """Extend the imported chain to `leaf`, or rebuild it when `leaf` is on another branch."""
        path: list[str] = []
        seen: set[str] = set()
        current: str | None = leaf
        while current is not None and current not in self._chain_pos and current not in seen:
            node = self.nodes.get(current)
            if node is None:
                break  # a parent outside this file (resumed session): the chain starts here
            seen.add(current)
            path.append(current)
            current = node.parent
        if self._chain and current != self._chain[-1]:
            self._rebuild(leaf)  # joins the chain further back (a rewind), or not at all
            return
        for uuid in reversed(path):
            self._append(uuid)

    def _rebuild(self, leaf: str) -> None:
        self.builder = HistoryBuilder()
        self.generation += 1
        self._chain, self._chain_pos, self._chain_messages = [], {}, 0
        path: list[str] = []
        seen: set[str] = set()
        current: str | None = leaf
        while current is not None and current in self.nodes and current not in seen:
            seen.add(current)
            path.append(current)
            current = self.nodes[current].parent
        for uuid in reversed(path):
            self._append(uuid)

    def _append(self, uuid: str) -> None:
        self._chain_pos[uuid] = len(self._chain)
        self._chain.append(uuid)
        node = self.nodes[uuid]
        record = node.record
        if record.type == "system" and record.subtype == "compact_boundary":
            meta = record.compact_metadata or _CompactMetadata()
            self.builder.begin_compaction(meta.trigger, meta.pre_tokens, node.line)
        elif record.type in MESSAGE_TYPES:
            self._chain_messages += 1
            self._apply(uuid, node)

    def _apply(self, uuid: str, node: _Node) -> None:
        record, builder = node.record, self.builder
        message = record.message or _ApiMessage()
        role = Role.USER if record.type == "user" else Role.ASSISTANT
        ts = timestamp_ms(record.timestamp)
        synthetic = bool(record.is_compact_summary)
        index: int | None = None
        for block in self._blocks(role, msgspec.json.decode(message.content)):
            index = builder.add(role, block, msg_id=uuid, ts=ts, synthetic=synthetic)
        if role is Role.ASSISTANT and message.usage is not None:
            usage = message.usage
            if index is None:
                index = len(builder) - 1 if builder.last_role() is Role.ASSISTANT else -1
            recorded = RecordedUsage(
                message_index=index,
                input_tokens=usage.input_tokens or 0,
                output_tokens=usage.output_tokens or 0,
                cache_read_tokens=usage.cache_read_input_tokens or 0,
                cache_creation_tokens=usage.cache_creation_input_tokens or 0,
            )
            builder.record_usage(message.id or uuid, recorded)

    def _blocks(self, role: Role, content: object) -> list[ContentBlock]:
        if isinstance(content, str):
            return [TextContentBlock(content)] if content else []
        if not isinstance(content, list):
            return []
        blocks: list[ContentBlock] = []
        for item in content:
            if not isinstance(item, dict):
                continue
            kind = item.get("type")
            if kind == "text":
                text = item.get("text")
                if isinstance(text, str) and text:
                    blocks.append(TextContentBlock(text))
            elif kind in ("thinking", "redacted_thinking"):
                self.builder.skipped["thinking"] += 1  # never shown
            elif kind == "tool_use" and role is Role.ASSISTANT:
                raw_input = item.get("input")
                tool_input = raw_input if isinstance(raw_input, dict) else {"value": raw_input}
                blocks.append(
                    ToolUseContentBlock(str(item.get("id")), str(item.get("name")), tool_input)
                )
            elif kind == "tool_result" and role is Role.USER:
                blocks.append(
                    ToolResultContentBlock(
                        tool_use_id=str(item.get("tool_use_id")),
                        content=_result_text(item.get("content")),
                        is_error=item.get("is_error") is True,
                    )
                )
            elif kind == "server_tool_use":
                # Run by the API, answered inside the same assistant message: not a client call.
                encoded = msgspec.json.encode(item.get("input")).decode()
                blocks.append(TextContentBlock(f"[{item.get('name')}] {encoded}"))
            else:
                blocks.append(TextContentBlock(f"[{kind}]"))  # image, document, search results
        return blocks

    def transcript(self, line_count: int) -> ImportedTranscript:
        skipped = self.skipped + self.builder.skipped
        inactive = self._message_records - self._chain_messages
        if inactive:
            skipped["inactive_branch"] = inactive
        stem = os.path.splitext(os.path.basename(self.path))[0]
        return ImportedTranscript(
            path=self.path,
            format="claude-code",
            session_id=self.session_id or stem,
            messages=list(self.builder.messages()),
            agent_compactions=list(self.builder.compactions),
            recorded_usage=list(self.builder.usage),
            skipped=dict(skipped),
            line_count=line_count,
            warnings=self.warnings + self.builder.snapshot_warnings(),
        )
