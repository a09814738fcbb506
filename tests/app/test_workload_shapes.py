"""The scripted workload's shapes (demo.workload_shapes): valid, deterministic, as named."""

from __future__ import annotations

import pytest

from engine.messages import Message, ToolResultContentBlock, validate_history
from engine.tokens import estimate_message_tokens
from metis_compaction_tui.demo.workload import planted_facts, scripted_session
from metis_compaction_tui.demo.workload_shapes import SHAPES


def session(shape: str, turns: int = 80) -> list[Message]:
    return [m for turn in scripted_session(5, turns, shape) for m in turn]


def tool_share(messages: list[Message]) -> float:
    tool = sum(
        len(block.content)
        for m in messages
        for block in m.content
        if isinstance(block, ToolResultContentBlock)
    )
    return tool / sum(len(m.text()) for m in messages)


@pytest.mark.parametrize("shape", SHAPES)
def test_every_shape_is_a_valid_deterministic_history_stating_every_fact(shape: str) -> None:
    messages = session(shape)
    validate_history(messages, allow_pending_tool_use=False)
    assert [m.id for m in messages] == [m.id for m in session(shape)]
    assert messages == session(shape)
    text = "\n".join(m.text() for m in messages)
    assert all(fact.statement in text for fact in planted_facts(5, 80))


def test_the_shapes_differ_as_named() -> None:
    mixed, long, chatty = (session(shape) for shape in ("mixed", "long_outputs", "chatty"))
    size = {
        name: sum(map(estimate_message_tokens, m))
        for name, m in (("mixed", mixed), ("long", long), ("chatty", chatty))
    }
    assert size["long"] > 2.5 * size["mixed"]
    assert tool_share(long) > 0.85 > tool_share(mixed) > 0.6 > 0.35 > tool_share(chatty)
    assert sum(bool(m.tool_result_ids()) for m in chatty) < 0.4 * 80  # turns with a tool


def test_an_unknown_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown workload shape"):
        next(scripted_session(0, 3, "bursty"))
