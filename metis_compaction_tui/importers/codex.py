"""Codex CLI rollouts (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl).

Each line is {"timestamp", "type", "payload"}: session_meta, turn_context, response_item (the
model-visible history), event_msg (UI events: token_count, and user_message / agent_message,
which repeat the response items' messages when both are written and are the only record of the
conversation in rollouts that wrote no message items) and compacted (the agent's compaction; with
`replacement_history`, the history the model had from then on). A rollout is linear, so unlike
Claude Code there is no branch to choose. Older rollouts wrote response items bare, without the
payload wrapper, after a bare {id, timestamp, instructions} header and between
{"record_type": "state"} lines.
"""

from __future__ import annotations

from typing import Any

import msgspec

from engine import (
    ContentBlock,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
)
from metis_compaction_tui.importers.bounds import too_deep
from metis_compaction_tui.importers.model import (
    ImportedTranscript,
    LogImporter,
    RecordedUsage,
    decode_line,
    timestamp_ms,
)

RECORD_TYPES = frozenset(
    {
        "session_meta",
        "turn_context",
        "response_item",
        "event_msg",
        "compacted",
        # Not conversation: AGENTS.md and the like as a baseline, and messages between a
        # session and the sub-agents it spawned (their own rollouts hold their conversations).
        "world_state",
        "inter_agent_communication",
        "inter_agent_communication_metadata",
    }
)
ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
    }
)
# Harness-injected user messages (AGENTS.md, environment, mode and skill preambles): Codex
# re-sends them every session and after compaction, so they are setup, not conversation.
CONTEXT_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions for ",
    "<collaboration_mode>",
    "<skill",
    "<permissions instructions>",
)

EVENT_MESSAGES = {"user_message": "user", "agent_message": "assistant"}
_RECENT = 8  # messages remembered to pair an event_msg with its response_item twin

_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder()


def parse_arguments(arguments: object) -> dict[str, object]:
    """function_call arguments are a JSON string; anything but an object is kept raw."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        parsed = None
        encoded = arguments.encode()
        if not too_deep(encoded):  # a string may hold JSON nested to any depth (bounds.py)
            try:
                parsed = msgspec.json.decode(encoded)
            except (msgspec.DecodeError, RecursionError):
                pass
        if isinstance(parsed, dict):
            return parsed
        return {"raw": arguments}
    return {"raw": msgspec.json.encode(arguments).decode()}


def _output_text(output: object) -> tuple[str, bool]:
    """A tool output is a string, a list of input_text/input_image items, or (older rollouts)
    {"content", "success"}. Returns (text, is_error)."""
    if isinstance(output, str):
        return output, False
    if isinstance(output, list):
        parts = []
        for item in output:
            if isinstance(item, dict):
                text = item.get("text")
                if isinstance(text, str):
                    parts.append(text)
                else:
                    kind = item.get("type")
                    parts.append("[image]" if kind == "input_image" else f"[{kind}]")
        return "\n".join(parts), False
    if isinstance(output, dict):
        text, _ = _output_text(output.get("content", ""))
        return text, output.get("success") is False
    return ("" if output is None else msgspec.json.encode(output).decode()), False


def _message_blocks(content: object) -> list[ContentBlock]:
    blocks: list[ContentBlock] = []
    if isinstance(content, str):
        return [TextContentBlock(content)] if content else []
    if not isinstance(content, list):
        return blocks
    for item in content:
        if not isinstance(item, dict):
            continue
        text = item.get("text")
        if isinstance(text, str):
            if text:
                blocks.append(TextContentBlock(text))
        elif item.get("type") == "refusal" and isinstance(item.get("refusal"), str):
            blocks.append(TextContentBlock(item["refusal"]))
        elif item.get("type") == "input_image":
            blocks.append(TextContentBlock("[image]"))
        else:
            blocks.append(TextContentBlock(f"[{item.get('type')}]"))
    return blocks


def _twin_text(item: dict[str, Any]) -> str:
    """A message item's text as its event_msg twin carries it."""
    content = item.get("content")
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    parts = [c.get("text") for c in content if isinstance(c, dict)]
    return "\n".join(p for p in parts if isinstance(p, str)).strip()


def _is_context(blocks: list[ContentBlock]) -> bool:
    return bool(blocks) and all(
        isinstance(b, TextContentBlock) and b.text.lstrip().startswith(CONTEXT_PREFIXES)
        for b in blocks
    )


def _int(mapping: dict[str, Any], key: str) -> int:
    value = mapping.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


_LABEL_CHARS = 60


def subagent_label(payload: dict[str, Any]) -> str | None:
    """What spawned a sub-agent's rollout, from its session_meta: `source` is
    {"subagent": "review"}, {"subagent": {"thread_spawn": {..., "agent_nickname": ...}}} or
    {"subagent": {"other": "guardian"}}; a main session's is a string ("cli", "exec")."""
    source = payload.get("source")
    if not isinstance(source, dict) or "subagent" not in source:
        return None
    spawned = source["subagent"]
    label: object = spawned
    if isinstance(spawned, dict) and spawned:
        kind, detail = next(iter(spawned.items()))
        label = detail if isinstance(detail, str) else kind
        if isinstance(detail, dict):
            label = detail.get("agent_nickname") or detail.get("agent_role") or kind
    label = payload.get("agent_nickname") or label
    return str(label)[:_LABEL_CHARS] if isinstance(label, str) and label else "sub-agent"


class CodexImporter(LogImporter):
    format = "codex"

    def __init__(self, path: str) -> None:
        super().__init__(path)  # `generation` stays 0: a rollout only grows, never rebuilt
        self._last_info: tuple[object, object] | None = None  # (total, last) of the latest
        self._last_context: int | None = None
        # Codex's own count of the history after it rewound (or, in older versions, just before
        # the compacted record), while no response has been measured since; and whether the
        # newest compaction has had no response since, so a recount written after it is its own.
        self._recount: int | None = None
        self._after_compaction = False
        # Messages taken but not yet paired with their twin from the other record kind:
        # (kind, role, text), kind "item" or "event".
        self._unpaired: list[tuple[str, str, str]] = []
        # Where each user turn began (HistoryBuilder.mark()), for a rollback to cut at.
        self._turns: list[tuple[int, int]] = []
        self._window: int | None = None  # the model's context window, once a count says it

    def settle(self) -> None:
        """Nothing deferred: each record extends the history as it is read."""

    def feed(self, lines: list[tuple[int, bytes]]) -> None:
        for line_number, raw in lines:
            record = decode_line(_decoder, raw, line_number, self.skipped_lines)
            if not isinstance(record, dict):
                if record is not None:
                    self.skipped_lines.append((line_number, "not a JSON object"))
                self.skipped["invalid"] += 1
                continue
            self._record(line_number, record)

    def _record(self, line: int, record: dict[str, Any]) -> None:
        kind = record.get("type")
        payload = record.get("payload")
        ts = timestamp_ms(record.get("timestamp"))
        if kind in ITEM_TYPES and payload is None:
            kind, payload = "response_item", record  # pre-wrapper rollout
        if not isinstance(payload, dict):
            if kind is None and isinstance(record.get("id"), str):
                self.session_id = self.session_id or record["id"]  # pre-wrapper session header
            else:
                name = str(kind or record.get("record_type") or "untyped")
                self.skipped[name] += 1
                if kind is not None and kind not in RECORD_TYPES and kind not in ITEM_TYPES:
                    self.skipped_lines.append((line, f"unknown record type {name!r}"))
            return
        if kind == "session_meta":
            if self.session_id is None and isinstance(payload.get("id"), str):
                self.session_id = payload["id"]
            self.subagent = self.subagent or subagent_label(payload)
        elif kind == "response_item":
            self._item(line, payload, ts)
        elif kind == "compacted":
            self._compacted(line, payload, ts)
        elif kind == "event_msg":
            event = payload.get("type")
            if event == "token_count":
                self._token_count(payload)
            elif event == "thread_rolled_back":
                self._roll_back(payload)
            elif event in EVENT_MESSAGES:
                self._event_message(line, str(event), payload, ts)
            else:
                self.skipped[f"event_msg.{event}"] += 1
        else:
            self.skipped[str(kind)] += 1  # turn_context, or a record type we do not know
            if kind not in RECORD_TYPES:
                self.skipped_lines.append((line, f"unknown record type {str(kind)!r}"))

    def _is_twin(self, kind: str, role: str, text: str) -> bool:
        """Codex writes a message twice (response_item and event_msg), in either order, or
        only once: take the first of a pair, and each message that has no twin."""
        for position, (other_kind, other_role, other_text) in enumerate(self._unpaired):
            if other_kind != kind and other_role == role and other_text == text:
                del self._unpaired[position]
                return True
        self._unpaired.append((kind, role, text))
        del self._unpaired[:-_RECENT]
        return False

    def _event_message(
        self, line: int, event: str, payload: dict[str, Any], ts: int | None
    ) -> None:
        role = EVENT_MESSAGES[event]
        message = payload.get("message")
        text = message.strip() if isinstance(message, str) else ""
        if not text or self._is_twin("event", role, text):
            self.skipped[f"event_msg.{event}"] += 1
            return
        target = Role.USER if role == "user" else Role.ASSISTANT
        if target is Role.USER:
            self._turns.append(self.builder.mark())
        self.builder.add(target, TextContentBlock(text), msg_id=f"line-{line}", ts=ts)
        images = payload.get("images")
        if role == "user" and isinstance(images, list) and images:
            for _ in images:
                self.builder.add(target, TextContentBlock("[image]"), msg_id=f"line-{line}", ts=ts)

    def _item(
        self, line: int, item: dict[str, Any], ts: int | None, *, replacement: bool = False
    ) -> None:
        kind = item.get("type")
        msg_id = f"line-{line}"
        builder = self.builder

        def add(role: Role, block: ContentBlock, *, msg_id: str, ts: int | None) -> None:
            builder.add(role, block, msg_id=msg_id, ts=ts, synthetic=replacement)

        if kind == "message":
            role = item.get("role")
            blocks = _message_blocks(item.get("content"))
            text = "\n".join(b.text for b in blocks if isinstance(b, TextContentBlock)).strip()
            if role not in ("user", "assistant"):
                self.skipped[f"message.{role}"] += 1  # developer / system instructions
            elif role == "user" and _is_context(blocks):
                self.skipped["message.user_context"] += 1
            elif not replacement and self._is_twin("item", str(role), _twin_text(item)):
                self.skipped[f"message.{role}_repeated"] += 1
            elif text or blocks:
                target = Role.USER if role == "user" else Role.ASSISTANT
                if target is Role.USER:
                    self._turns.append(builder.mark())
                for block in blocks:
                    add(target, block, msg_id=msg_id, ts=ts)
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            call_id = item.get("call_id") or item.get("id")
            if kind == "function_call":
                name, tool_input = item.get("name"), parse_arguments(item.get("arguments"))
            elif kind == "custom_tool_call":
                name, tool_input = item.get("name"), {"input": item.get("input")}
            else:
                action = item.get("action")
                name = "local_shell"
                tool_input = action if isinstance(action, dict) else {"action": action}
            block = ToolUseContentBlock(str(call_id), str(name), tool_input)
            add(Role.ASSISTANT, block, msg_id=msg_id, ts=ts)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            text, is_error = _output_text(item.get("output"))
            result = ToolResultContentBlock(str(item.get("call_id")), text, is_error)
            add(Role.USER, result, msg_id=msg_id, ts=ts)
        else:
            # reasoning (encrypted_content is never shown), web_search_call, ghost_snapshot, ...
            self.skipped[str(kind)] += 1

    def _compacted(self, line: int, payload: dict[str, Any], ts: int | None) -> None:
        message = payload.get("message")
        trigger = payload.get("trigger")
        # Codex counts the history it just built: before this record in some versions, after
        # it in others (then `_token_count` fills it in).
        self.builder.begin_compaction(
            trigger if isinstance(trigger, str) else None,
            self._last_context,
            line,
            post_tokens=self._recount,
        )
        # A recount written after the record is this compaction's own and overrides one taken
        # from before it (which may have been a rewind's); each is taken once.
        self._after_compaction = True
        self._recount = None
        self._last_info = None  # the same figures again after this are a new recount
        self._unpaired.clear()  # nothing before the compaction pairs with what follows
        replacement = payload.get("replacement_history")
        if isinstance(replacement, list) and replacement:
            # What the model had from here on: kept user messages and the summary.
            for item in replacement:
                if isinstance(item, dict):
                    self._item(line, item, ts, replacement=True)
        if self.builder.pending_compaction is None:
            return  # the replacement history held the summary
        text = message if isinstance(message, str) and message else "(summary not recorded)"
        # Codex hands the summary to the model as a user message; so do we, marked synthetic.
        block = TextContentBlock(text)
        self.builder.add(Role.USER, block, msg_id=f"line-{line}", ts=ts, synthetic=True)

    def _roll_back(self, payload: dict[str, Any]) -> None:
        """The user undid the last `num_turns` turns: Codex drops the history from the start of
        the num_turns-th user message from the end (all of them when there are fewer, keeping
        what came before the first)."""
        count = _int(payload, "num_turns")
        if count <= 0 or not self._turns:
            return
        cut = self._turns[-min(count, len(self._turns))]
        del self._turns[-min(count, len(self._turns)) :]
        self.builder.truncate(cut)
        self.generation += 1  # delivered messages were taken back: consumers start over
        self._unpaired.clear()
        self._recount, self._after_compaction, self._last_info = None, False, None

    def _within_window(self, tokens: int, total: object) -> int | None:
        """A context size read from a count, or None where it cannot be one: above the model's
        window, or the session's running total read in its place."""
        if tokens <= 0 or (self._window is not None and tokens > self._window):
            return None
        if isinstance(total, dict) and tokens == _int(total, "total_tokens"):
            return None  # the cumulative figure, not a size
        return tokens

    def _token_count(self, payload: dict[str, Any]) -> None:
        info = payload.get("info")
        if not isinstance(info, dict):
            return  # rate-limit-only update
        window = _int(info, "model_context_window")
        if window > 0:
            self._window = window
        total, last = info.get("total_token_usage"), info.get("last_token_usage")
        if total is not None and (total, last) == self._last_info:
            return  # Codex repeats the event when only rate limits changed
        self._last_info = (total, last)
        if not isinstance(last, dict):
            return
        if _int(last, "input_tokens") == 0 and _int(last, "output_tokens") == 0:
            # No response: Codex's estimate of the history it now holds (after compacting or
            # rewinding), with the session totals unchanged.
            tokens = self._within_window(_int(last, "total_tokens"), total)
            if tokens is not None and self._after_compaction:
                self.builder.set_post_tokens(tokens)
            elif tokens is not None:
                self._recount = tokens
            return
        self._recount, self._after_compaction = None, False
        cached = _int(last, "cached_input_tokens")
        # OpenAI counts cached tokens inside input_tokens; RecordedUsage keeps them apart.
        usage = RecordedUsage(
            message_index=len(self.builder) - 1,
            input_tokens=max(_int(last, "input_tokens") - cached, 0),
            output_tokens=_int(last, "output_tokens"),
            cache_read_tokens=cached,
        )
        context = _int(last, "input_tokens") + usage.output_tokens
        self._last_context = context if self._window is None or context <= self._window else None
        self.builder.record_usage(None, usage)

    def transcript(self, line_count: int) -> ImportedTranscript:
        skipped = self.skipped + self.builder.skipped
        messages = list(self.builder.messages())
        empty_reason = None
        if not messages:
            kinds = ", ".join(f"{n:,} {kind}" for kind, n in skipped.most_common(3))
            empty_reason = f"no user or assistant messages ({kinds or 'nothing readable'})"
        return self.imported(line_count, messages, skipped, empty_reason)
