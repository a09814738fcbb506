"""A synthetic Claude Code session log, written the way Claude Code writes one: each content block
of an assistant response in its own record (same message id), tool results as user records, a
uuid/parentUuid chain, usage on every assistant record, and now and then a compact_boundary
followed by an isCompactSummary user record. For tests that tail a growing file and for the
100 MB benchmark."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

SESSION = "7d1c0b7e-0000-4000-8000-000000000001"


class ClaudeCodeWriter:
    def __init__(self, seed: int = 0, *, compact_every: int = 0, text_size: int = 400) -> None:
        self.rng = random.Random(seed)
        self.parent: str | None = None
        self.count = 0
        self.turns = 0
        self.compact_every = compact_every  # turns between the agent's own compactions; 0: never
        self.text_size = text_size
        self.context = 0  # a made-up context size for usage and preTokens

    def _record(self, kind: str, body: dict[str, object]) -> str:
        self.count += 1
        uuid = f"u{self.count:08d}"
        record = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/tmp/proj",
            "sessionId": SESSION,
            "version": "1.0.80",
            "type": kind,
            "uuid": uuid,
            "timestamp": "2025-08-01T10:00:00.000Z",
            **body,
        }
        self.parent = uuid
        return json.dumps(record) + "\n"

    def _text(self) -> str:
        words = ("alpha", "beta", "gamma", "delta", "config", "parser", "retry", "cache", "token")
        out: list[str] = []
        size = 0
        while size < self.text_size:
            word = self.rng.choice(words)
            out.append(word)
            size += len(word) + 1
        return " ".join(out)

    def _assistant(self, message_id: str, block: dict[str, object]) -> str:
        self.context += self.text_size // 4
        usage = {
            "input_tokens": 3,
            "output_tokens": 120,
            "cache_read_input_tokens": self.context,
            "cache_creation_input_tokens": 200,
        }
        message = {"id": message_id, "type": "message", "role": "assistant", "content": [block]}
        return self._record("assistant", {"message": {**message, "usage": usage}})

    def turn(self) -> list[str]:
        """One turn: a prompt, text plus a tool call (two records, one message), the result,
        a closing answer. Some turns end in the agent compacting."""
        self.turns += 1
        n = self.turns
        lines = [self._record("user", {"message": {"role": "user", "content": self._text()}})]
        call = f"toolu_{n:07d}"
        lines.append(self._assistant(f"msg_{n}a", {"type": "text", "text": self._text()}))
        tool_use = {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": "ls"}}
        lines.append(self._assistant(f"msg_{n}a", tool_use))
        result = {"type": "tool_result", "tool_use_id": call, "content": self._text()}
        lines.append(self._record("user", {"message": {"role": "user", "content": [result]}}))
        lines.append(self._assistant(f"msg_{n}b", {"type": "text", "text": self._text()}))
        if self.compact_every and n % self.compact_every == 0:
            boundary = {
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "compactMetadata": {"trigger": "auto", "preTokens": self.context},
                "parentUuid": None,
                "logicalParentUuid": self.parent,
            }
            self.parent = None
            lines.append(self._record("system", boundary))
            summary = {
                "role": "user",
                "content": "This session is being continued: " + self._text(),
            }
            lines.append(self._record("user", {"isCompactSummary": True, "message": summary}))
            self.context = 2_000
        return lines

    def turns_until(self, size_bytes: int) -> Iterator[str]:
        written = 0
        while written < size_bytes:
            for line in self.turn():
                written += len(line)
                yield line
