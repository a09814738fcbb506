"""Each fixture's message count against a second reader written here, deliberately simple and
sharing no code with the importers: the active chain walked back from the last message record,
parallel tool-call siblings stitched in with their results, and the count of role runs (the
importer merges consecutive messages of one role into one message, as the API would).

Where the two disagree one of them is wrong; the pinned figures below say which shapes were
measured (dangling parent 8 messages, not 1; three parallel tool calls kept, ...)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.messages import Message, ToolUseContentBlock
from metis_compaction_tui.importers import load_transcript
from tests.importers.test_importers import ALL_FIXTURES, OURS

# Codex re-sends these as user messages each session: setup, not conversation.
CODEX_SETUP = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions")
CODEX_CALLS = {"function_call", "custom_tool_call", "local_shell_call"}
CODEX_OUTPUTS = {"function_call_output", "custom_tool_call_output"}


def _records(path: Path) -> list[dict[str, Any]]:
    found = []
    for line in path.read_bytes().splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue  # a broken line is skipped, as the importer must
        if isinstance(value, dict):
            found.append(value)
    return found


def _runs(roles: list[str]) -> int:
    return sum(1 for i, role in enumerate(roles) if i == 0 or roles[i - 1] != role)


Count = tuple[int, int]  # (messages, tool calls): a dropped sibling can hide in a role run


# --- Claude Code ----------------------------------------------------------------------------


def _has_content(record: dict[str, Any]) -> bool:
    content = (record.get("message") or {}).get("content")
    if isinstance(content, str):
        return bool(content)
    if not isinstance(content, list):
        return False
    return any(
        isinstance(b, dict) and b.get("type") not in ("thinking", "redacted_thinking", None)
        for b in content
    )


def _blocks(record: dict[str, Any], kind: str, key: str) -> set[str]:
    content = (record.get("message") or {}).get("content")
    if not isinstance(content, list):
        return set()
    return {str(b.get(key)) for b in content if isinstance(b, dict) and b.get("type") == kind}


def claude_count(path: Path) -> Count:
    records = [r for r in _records(path) if r.get("uuid") and not r.get("isSidechain")]
    by_uuid = {r["uuid"]: r for r in records}
    parent: dict[str, str | None] = {}
    linked = any(r.get("parentUuid") for r in records)  # old logs link nothing: file order
    for i, r in enumerate(records):
        p = r.get("parentUuid") or r.get("logicalParentUuid")
        if not linked:
            p = records[i - 1]["uuid"] if i else None
        elif p is not None and p not in by_uuid:
            p = records[i - 1]["uuid"] if i else None  # dangling: go on from the line before
        parent[r["uuid"]] = p
    summary_below = {r.get("parentUuid"): r["uuid"] for r in records if r.get("isCompactSummary")}
    for r in records:  # a preserved segment: the kept messages hang below the summary
        segment = (r.get("compactMetadata") or {}).get("preservedSegment") or {}
        head, anchor = segment.get("headUuid"), segment.get("anchorUuid")
        if head in by_uuid and anchor in by_uuid:
            tail = segment.get("tailUuid")
            parent[r["uuid"]] = parent[head]
            if tail in by_uuid:  # Claude Code's relink: below the anchor means after the tail
                parent[head] = anchor
                for o in records:
                    if o.get("parentUuid") == anchor and o["uuid"] != head:
                        parent[o["uuid"]] = tail
            else:
                parent[head] = summary_below.get(anchor, anchor)
    leaf = next(r["uuid"] for r in reversed(records) if r.get("type") in ("user", "assistant"))
    chain: list[str] = []
    node: str | None = leaf
    while node is not None and node not in chain:
        chain.append(node)
        node = parent[node]
    chain.reverse()
    ordered: list[str] = []
    for uuid in chain:
        if uuid in ordered:
            continue
        r = by_uuid[uuid]
        message_id = (r.get("message") or {}).get("id")
        group = [uuid]
        if r.get("type") == "assistant" and message_id:
            group = [
                o["uuid"]
                for o in records
                if o.get("type") == "assistant"
                and o.get("parentUuid") == r.get("parentUuid")
                and (o.get("message") or {}).get("id") == message_id
            ]
        calls = set().union(*(_blocks(by_uuid[g], "tool_use", "id") for g in group))
        results = [
            o["uuid"]
            for o in records
            if len(group) > 1
            and o.get("type") == "user"
            and _blocks(o, "tool_result", "tool_use_id") & calls
        ]
        ordered += [u for u in group + results if u not in ordered]

    # A response's records the chain missed (a parallel call written below the first) and the
    # tool results below any of them go after its last record on the chain.
    def response(u: str) -> str | None:
        r = by_uuid[u]
        return (r.get("message") or {}).get("id") if r.get("type") == "assistant" else None

    last_of = {response(u): u for u in ordered if response(u)}
    for message_id, anchor_uuid in last_of.items():
        members = [o["uuid"] for o in records if response(o["uuid"]) == message_id]
        lost = [m for m in members if m not in ordered]
        found = [
            o["uuid"]
            for o in records
            if o.get("parentUuid") in members
            and o.get("type") == "user"
            and _blocks(o, "tool_result", "tool_use_id")
            and o["uuid"] not in ordered
        ]
        at = ordered.index(anchor_uuid) + 1
        ordered[at:at] = lost + [u for u in found if u not in lost]
    kept = [
        by_uuid[u]
        for u in ordered
        if by_uuid[u].get("type") in ("user", "assistant") and _has_content(by_uuid[u])
    ]
    calls = sum(len(_blocks(r, "tool_use", "id")) for r in kept if r["type"] == "assistant")
    return _runs([r["type"] for r in kept]), calls


# --- Codex -----------------------------------------------------------------------------------


def _codex_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content.strip()
    parts = [c.get("text") for c in content or [] if isinstance(c, dict)]
    return "\n".join(p for p in parts if isinstance(p, str)).strip()


def _codex_role(item: dict[str, Any]) -> str | None:
    kind = item.get("type")
    if kind == "message" and item.get("role") in ("user", "assistant"):
        text = _codex_text(item)
        if item["role"] == "user" and text.startswith(CODEX_SETUP):
            return None
        return str(item["role"]) if text else None
    if kind in CODEX_CALLS:
        return "assistant"
    if kind in CODEX_OUTPUTS:
        return "user"
    return None


def codex_count(path: Path) -> Count:
    entries: list[tuple[str, dict[str, Any]]] = []
    for record in _records(path):
        kind, payload = record.get("type"), record.get("payload")
        if payload is None and (kind == "message" or kind in CODEX_CALLS | CODEX_OUTPUTS):
            kind, payload = "response_item", record  # an old rollout: items unwrapped
        if not isinstance(payload, dict):
            continue
        if kind == "response_item":
            entries.append(("item", payload))
        elif kind == "event_msg" and payload.get("type") in ("user_message", "agent_message"):
            entries.append(("event", payload))
        elif kind == "event_msg" and payload.get("type") == "thread_rolled_back":
            entries.append(("rollback", payload))
        elif kind == "compacted":
            history = payload.get("replacement_history") or []
            entries += [("item", i) for i in history if isinstance(i, dict)]
            if not any(_codex_role(i) for i in history if isinstance(i, dict)):
                entries.append(("summary", payload))
    # An event_msg message repeats a response item's when both were written: count it only
    # when no message item of its role has the same text.
    said = {
        (str(p.get("role")), _codex_text(p))
        for kind, p in entries
        if kind == "item" and p.get("type") == "message"
    }
    kept: list[tuple[str, bool]] = []  # (role, is a tool call) of each item taken
    turns: list[int] = []  # where each user message began, for a rollback to cut at
    for kind, p in entries:
        if kind == "rollback":  # Codex drops the last num_turns user turns
            n = p.get("num_turns")
            if isinstance(n, int) and n > 0 and turns:
                cut = turns[-min(n, len(turns))]
                del kept[cut:]
                turns = [t for t in turns if t < cut]
            continue
        if kind == "item":
            role = _codex_role(p)
        elif kind == "summary":
            role = "user"
        else:
            role = "user" if p["type"] == "user_message" else "assistant"
            text = str(p.get("message") or "").strip()
            role = None if not text or (role, text) in said else role
        if role is not None:
            if role == "user" and (kind == "event" or p.get("type") == "message"):
                turns.append(len(kept))
            kept.append((role, kind == "item" and p.get("type") in CODEX_CALLS))
    return _runs([role for role, _ in kept]), sum(call for _, call in kept)


def independent_count(path: Path) -> Count:
    first = _records(path)
    codex = any(isinstance(r.get("payload"), dict) for r in first) or path.parent.name == "codex"
    return codex_count(path) if codex else claude_count(path)


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_message_count_matches_an_independent_reader(path: Path) -> None:
    imported = load_transcript(path)
    expected = independent_count(path) if imported.messages else (0, 0)
    assert (len(imported.messages), _tool_calls(imported.messages)) == expected


def _tool_calls(messages: list[Message]) -> int:
    return sum(isinstance(b, ToolUseContentBlock) for m in messages for b in m.content)


# Measured shapes, pinned: each case's first figure is what a miscount would give.
@pytest.mark.parametrize(
    ("name", "messages", "tool_calls"),
    [
        ("claude-code/dangling_parent.jsonl", 8, 2),  # was 1 message
        ("claude-code/parallel_tool_calls.jsonl", 7, 5),  # was 2 tool calls
        ("claude-code/rewind_beside_siblings.jsonl", 6, 2),
        ("claude-code/preserved_segment.jsonl", 8, 0),
        ("claude-code/torn_middle_line.jsonl", 7, 2),
        ("codex/event_msg_only.jsonl", 4, 0),  # was 0 messages
        ("codex/compacted_replacement_history.jsonl", 6, 1),
        ("codex/legacy_rollout.jsonl", 4, 1),
    ],
)
def test_each_shape_keeps_what_the_agent_had(name: str, messages: int, tool_calls: int) -> None:
    imported = load_transcript(OURS / name)
    found = (len(imported.messages), _tool_calls(imported.messages))
    assert found == (messages, tool_calls) == independent_count(OURS / name)


def test_a_regenerated_answer_beside_its_first_is_not_stitched(tmp_path: Path) -> None:
    """Two responses (different API message ids) under one parent are a retry, not parallel
    calls: only the one the chain runs through is kept."""
    source = (OURS / "claude-code" / "parallel_tool_calls.jsonl").read_text()
    path = tmp_path / "regenerated.jsonl"
    path.write_text(source.replace('"id": "msg_p3"', '"id": "msg_p3_first"', 1))  # p12 only
    imported = load_transcript(path)
    assert (len(imported.messages), _tool_calls(imported.messages)) == (7, 4)
    assert independent_count(path) == (7, 4)
    assert imported.skipped["inactive_branch"] == 2  # the first answer and its result
