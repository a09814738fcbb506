"""The small language the quality sets are written in: scripted coding sessions with planted facts.

A session is a list of steps. `U(text)` is the user speaking; `A(text, *calls)` is the assistant,
and each `Call` it makes is answered by one tool result (the next user message), as a real agent's
history holds them. A `Fact` names what a continuing agent must still know after the whole session
is compacted: it is recovered when every one of its needles appears (case-insensitive) in the
summary. Noise (test logs, listings, file bodies) makes the sessions long enough that a summary
must choose.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.messages import (
    Message,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
    validate_history,
)

# conclusion: what a reply concluded; person: someone named with their role (set C on).
KINDS = ("tool_output", "decision", "constraint", "path", "number", "conclusion", "person")


@dataclass(frozen=True)
class Call:
    name: str
    args: dict[str, object]
    output: str
    error: bool = False


@dataclass(frozen=True)
class U:
    text: str


@dataclass(frozen=True)
class A:
    text: str
    calls: tuple[Call, ...] = ()

    def __init__(self, text: str, *calls: Call) -> None:
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "calls", calls)


@dataclass(frozen=True)
class Fact:
    kind: str  # one of KINDS
    needles: tuple[str, ...]
    note: str = ""

    def __post_init__(self) -> None:
        assert self.kind in KINDS, self.kind


@dataclass(frozen=True)
class Session:
    name: str
    steps: Sequence[U | A]
    facts: Sequence[Fact]
    messages: tuple[Message, ...] = field(default=(), compare=False)

    def build(self) -> tuple[Message, ...]:
        messages: list[Message] = []
        for step_index, step in enumerate(self.steps):
            prefix = f"{self.name}-{step_index}"
            if isinstance(step, U):
                messages.append(_message(prefix, Role.USER, (TextContentBlock(step.text),)))
                continue
            uses = tuple(
                ToolUseContentBlock(id=f"{prefix}-t{i}", name=c.name, input=c.args)
                for i, c in enumerate(step.calls)
            )
            messages.append(_message(prefix, Role.ASSISTANT, (TextContentBlock(step.text), *uses)))
            if step.calls:
                results = tuple(
                    ToolResultContentBlock(
                        tool_use_id=f"{prefix}-t{i}", content=c.output, is_error=c.error
                    )
                    for i, c in enumerate(step.calls)
                )
                messages.append(_message(f"{prefix}r", Role.USER, results))
        merged = _merge_same_role(messages)
        validate_history(merged)
        return tuple(merged)


def _merge_same_role(messages: list[Message]) -> list[Message]:
    """Two steps in a row from one side become one message (a user speaking beside a tool result,
    an assistant's words before its next call), as agents record them."""
    out: list[Message] = []
    for message in messages:
        if out and out[-1].role is message.role:
            previous = out.pop()
            content = (*previous.content, *message.content)
            if message.role is Role.USER:  # tool results first, as the API requires
                content = tuple(sorted(content, key=lambda b: isinstance(b, TextContentBlock)))
            message = Message(id=previous.id, role=message.role, content=content)
        out.append(message)
    return out


def _message(message_id: str, role: Role, content: tuple[object, ...]) -> Message:
    return Message(id=message_id, role=role, content=content)  # type: ignore[arg-type]


# -- noise: what fills a real session between the facts ---------------------------------------


def passing_tests(seed: int, count: int, module: str = "tests/test_core.py") -> str:
    rng = random.Random(seed)
    words = ["parse", "load", "save", "merge", "split", "render", "retry", "cache", "index"]
    lines = [f"============================= test session starts ({count} items) =="]
    for i in range(count):
        name = f"test_{rng.choice(words)}_{rng.choice(words)}_{i}"
        lines.append(f"{module}::{name} PASSED{' ' * 10}[{100 * (i + 1) // count:3d}%]")
    lines.append(f"============================= {count} passed in {rng.uniform(1, 9):.2f}s ====")
    return "\n".join(lines)


def listing(seed: int, count: int, root: str = "src/app") -> str:
    rng = random.Random(seed)
    stems = ["util", "models", "views", "handlers", "schema", "client", "worker", "helpers"]
    return "\n".join(
        f"-rw-r--r--  1 dev dev {rng.randint(200, 9000):5d} Mar {rng.randint(1, 28):2d} "
        f"{root}/{rng.choice(stems)}_{i}.py"
        for i in range(count)
    )


def source(seed: int, count: int) -> str:
    rng = random.Random(seed)
    names = ["items", "rows", "payload", "record", "batch", "entry", "config", "result"]
    lines: list[str] = []
    for i in range(count):
        a, b = rng.choice(names), rng.choice(names)
        lines.append(f"def handle_{a}_{i}({b}):")
        lines.append(f"    {a} = normalize({b})")
        lines.append(f"    return [x for x in {a} if x is not None]")
        lines.append("")
    return "\n".join(lines)


def log(seed: int, count: int, service: str = "api") -> str:
    rng = random.Random(seed)
    paths = ["/health", "/v1/items", "/v1/users", "/v1/orders", "/metrics"]
    return "\n".join(
        f"2024-05-{rng.randint(1, 28):02d}T10:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z "
        f"INFO {service} GET {rng.choice(paths)} 200 {rng.randint(2, 80)}ms"
        for _ in range(count)
    )


def chatter(seed: int) -> str:
    """An assistant's running narration: words, no facts."""
    rng = random.Random(seed)
    return rng.choice(
        [
            "Let me look at how this is wired before changing anything.",
            "I'll read the surrounding code first to see what depends on it.",
            "Checking the rest of the module for other callers.",
            "Looking at the test file to see what it expects.",
            "Now let me run the tests again to see where we stand.",
        ]
    )


# -- tool-output shapes the long sets share ------------------------------------------------------


def bury(lines: list[str], planted: dict[float, str]) -> str:
    """The lines, with each planted text placed at its fraction of the way through."""
    out = list(lines)
    for where, text in sorted(planted.items(), reverse=True):
        out.insert(int(len(lines) * where), text)
    return "\n".join(out)


def short_hash(rng: random.Random, n: int = 7) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def numbered(text: str, start: int = 1) -> str:
    """A file as Claude Code's Read shows it: right-aligned line numbers, a tab, the line."""
    return "\n".join(f"{i:6d}\t{line}" for i, line in enumerate(text.splitlines(), start))


def edited(path: str, snippet: str, start: int) -> str:
    """Claude Code's answer to an Edit: the snippet around the change, numbered."""
    return (
        f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet "
        f"of the edited file:\n{numbered(snippet, start)}"
    )


def written(path: str) -> str:
    """Claude Code's answer to a Write."""
    return f"File created successfully at: {path}"


def codex_json(output: str, code: int = 0, seconds: float = 1.4) -> str:
    """A Codex shell call's output in its JSON envelope."""
    return json.dumps(
        {"output": output, "metadata": {"exit_code": code, "duration_seconds": seconds}}
    )


def codex_text(output: str, code: int = 0, seconds: float = 1.4) -> str:
    """A Codex shell call's output in its text envelope."""
    return f"Exit code: {code}\nWall time: {seconds} seconds\nOutput:\n{output}"


def codex_shell(command: str, workdir: str) -> dict[str, object]:
    return {"command": ["bash", "-lc", command], "workdir": workdir}


def codex_patch(path: str, old: str, new: str, context: str = "") -> dict[str, object]:
    """An apply_patch call replacing `old` with `new` in one file."""
    body = f"*** Begin Patch\n*** Update File: {path}\n@@ {context}\n"
    body += "".join(f"-{line}\n" for line in old.splitlines())
    body += "".join(f"+{line}\n" for line in new.splitlines())
    return {"input": body + "*** End Patch"}


def codex_patched(*paths: str) -> str:
    return "Success. Updated the following files:\n" + "\n".join(f"M {p}" for p in paths)
