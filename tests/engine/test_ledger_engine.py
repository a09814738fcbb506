"""The work ledger through the engine: a compaction whose summarizer writes lossy prose still
keeps the span's commands and errors, a re-compaction keeps the earlier ledger, the summary stays
within its budget, and the cache key follows the ledger's inputs."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import engine.ledger.extraction as extraction
from engine.ledger import split
from engine.manager import SessionManager
from engine.messages import (
    Message,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
)
from engine.policy.splice import summary_body, summary_text
from engine.summarizers.extractive import ExtractiveSummarizer
from tests.history_builders import LOCAL, RecordingSummarizer

KNOBS = {
    "compaction_threshold_tokens": 300,
    "compaction_hard_cap_tokens": 20_000,
    "compaction_preserve_recent_turns": 1,
    "compaction_max_summary_tokens": 400,
    "compaction_summary_payback_turns": 0,
}
PROSE = "The agent worked on the build and made progress on the failing tests."


def turn(index: int, command: str, output: str, *, error: bool = False) -> list[Message]:
    call = f"call{index}"
    return [
        Message(
            f"u{index}", Role.USER, (TextContentBlock(f"step {index}: keep going " + "x" * 200),)
        ),
        Message(
            f"a{index}",
            Role.ASSISTANT,
            (
                TextContentBlock("Running it."),
                ToolUseContentBlock(call, "Bash", {"command": command}),
            ),
        ),
        Message(f"r{index}", Role.USER, (ToolResultContentBlock(call, output, error),)),
        Message(
            f"d{index}", Role.ASSISTANT, (TextContentBlock("Done with this step. " + "y" * 200),)
        ),
    ]


def history(error_line: str = "E   KeyError: 'tenant_id'") -> list[Message]:
    return [
        *turn(
            0,
            "pytest tests/test_tenants.py -q",
            f"{error_line}\n1 failed, 9 passed in 0.31s",
            error=True,
        ),
        *turn(1, "git log -1 --oneline", "4be0c1d Pin psycopg to 3.1.18"),
        *turn(2, "echo last", "last"),
    ]


def manager(
    messages: list[Message], workspace: Path, summarizer: object, **knobs: object
) -> SessionManager:
    return SessionManager(
        session_id="s",
        history=messages,
        compaction_model=LOCAL,
        workspace=workspace,
        summarizer=summarizer,
        **{**KNOBS, **knobs},  # type: ignore[arg-type]
    )


def tokens(session: SessionManager, text: str) -> int:
    probe = summary_text(LOCAL, 0, text)
    return session.history.counter(Message("p", Role.USER, (TextContentBlock(probe),)))


async def test_lossy_prose_keeps_the_commands_and_errors_within_the_budget(tmp_path: Path) -> None:
    summarizer = RecordingSummarizer(PROSE)
    session = manager(history(), tmp_path, summarizer, compaction_max_summary_tokens=2_000)
    prepared = await session.prepare()
    section = split(prepared.summary)
    assert section.prose == PROSE
    texts = [e.text for e in section.entries]
    assert "pytest tests/test_tenants.py -q → 1 failed, 9 passed" in texts
    assert "E KeyError: 'tenant_id'" in texts
    assert "git log -1 --oneline → 4be0c1d Pin psycopg to 3.1.18" in texts
    assert tokens(session, prepared.summary) <= 2_000
    # The work entries' room was left out of what the summarizer was asked for.
    assert summarizer.requests[0].max_tokens < 2_000


async def test_a_small_budget_reserves_nothing_and_the_ledger_takes_what_is_left(
    tmp_path: Path,
) -> None:
    summarizer = RecordingSummarizer(PROSE)
    session = manager(history(), tmp_path, summarizer)
    prepared = await session.prepare()
    assert summarizer.requests[0].max_tokens == KNOBS["compaction_max_summary_tokens"]
    assert split(prepared.summary).entries
    assert tokens(session, prepared.summary) <= KNOBS["compaction_max_summary_tokens"]


async def test_a_recompaction_keeps_the_earlier_ledger(tmp_path: Path) -> None:
    # recompact (§12.4): the next span starts at the prefix, so the earlier summary is folded in.
    session = manager(
        history(), tmp_path, RecordingSummarizer(PROSE), compaction_strategy="recompact"
    )
    session.commit(await session.prepare())
    first = next(m for m in session.messages if m.synthetic and "Work ledger:" in m.text())
    assert "pytest tests/test_tenants.py -q" in first.text()
    for message in [*turn(3, "make lint", "ruff: 0 errors"), *turn(4, "echo again", "again")]:
        session.append(message)
    prepared = await session.prepare()
    assert prepared.span.start <= session.messages.index(first)  # the fold takes the summary in
    body = summary_body(prepared.summary)
    assert "pytest tests/test_tenants.py -q → 1 failed, 9 passed" in body  # carried over
    assert "make lint" in body  # and the new work


async def test_the_cache_key_follows_what_the_ledger_is_made_of(tmp_path: Path) -> None:
    one = manager(history(), tmp_path / "a", RecordingSummarizer(PROSE)).preview()
    same = manager(history(), tmp_path / "b", RecordingSummarizer(PROSE)).preview()
    other = manager(history("E   KeyError: 'org_id'"), tmp_path / "c", RecordingSummarizer(PROSE))
    assert one is not None and same is not None
    assert one.cache_key == same.cache_key
    assert other.preview().cache_key != one.cache_key  # type: ignore[union-attr]


async def test_a_cache_hit_brings_the_ledger_back(tmp_path: Path) -> None:
    first = manager(history(), tmp_path, RecordingSummarizer(PROSE))
    made = await first.prepare()
    again = manager(history(), tmp_path, RecordingSummarizer("other prose entirely"))
    hit = await again.prepare()
    assert hit.cache_hit and hit.summary == made.summary
    assert split(hit.summary).entries


async def test_the_ledger_and_the_offline_prose_are_made_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both read every line of the span's outputs (a second on megabytes of logs): a caller's
    # event loop must go on serving its other tasks meanwhile.
    threads: dict[str, set[int]] = {"ledger": set(), "prose": set()}
    extract, summarize_now = extraction._extract, ExtractiveSummarizer.summarize_now

    def spy_extract(span: tuple[Message, ...]) -> list:
        threads["ledger"].add(threading.get_ident())
        return extract(span)

    def spy_summarize(self: ExtractiveSummarizer, request: object) -> str:
        threads["prose"].add(threading.get_ident())
        return summarize_now(self, request)  # type: ignore[arg-type]

    monkeypatch.setattr(extraction, "_extract", spy_extract)
    monkeypatch.setattr(ExtractiveSummarizer, "summarize_now", spy_summarize)
    session = manager(history(), tmp_path, ExtractiveSummarizer())
    prepared = await session.prepare()
    assert "pytest tests/test_tenants.py -q" in prepared.summary
    assert threads["ledger"] and threads["prose"]
    assert threading.get_ident() not in threads["ledger"] | threads["prose"]
