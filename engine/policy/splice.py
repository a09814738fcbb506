"""§4.2 / §4.4: the synthetic summary message, and splicing it (or a truncation notice) into the
history so the result still passes validate_history()."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from engine.history import History, text_message
from engine.messages import Message, Role, validate_history

ASSISTANT_FILLER_TEXT = "Understood. I will continue from the note above."
TRUNCATION_NOTICE = "[{count} earlier messages were dropped to keep the session under its hard cap]"

# A prefix ("f" filler, ...) -> a fresh message id; engine.ids.next_monotonic_id in a session.
NewId = Callable[[str], str]

SUMMARY_OPEN = "<COMPACTION_SUMMARY"
SUMMARY_CLOSE = "</COMPACTION_SUMMARY>"
_HEADER = re.compile(r"<COMPACTION_SUMMARY model=(\S+) watermark=(\d+)>")


class SummaryWrapper(NamedTuple):
    model: str
    watermark_before: int
    summary: str


def summary_text(model: str, watermark_before: int, summary: str) -> str:
    """The exact §4.2 wrapper (parse_summary_text reads it back)."""
    return f"{SUMMARY_OPEN} model={model} watermark={watermark_before}>\n{summary}\n{SUMMARY_CLOSE}"


def parse_summary_text(text: str) -> SummaryWrapper | None:
    """The §4.2 wrapper read back: None when `text` is not one (read-back text is untrusted, so
    a malformed header is "not a wrapper", never an error)."""
    header, newline, rest = text.partition("\n")
    match = _HEADER.fullmatch(header)
    if match is None or not newline or not rest.endswith(SUMMARY_CLOSE):
        return None
    body = rest.removesuffix(SUMMARY_CLOSE).removesuffix("\n")
    return SummaryWrapper(match.group(1), int(match.group(2)), body)


def summary_body(text: str) -> str:
    """The summary inside a wrapper, or `text` unchanged when it is not one; a header-only or
    unterminated wrapper loses just its wrapper lines (what a reader wants to see)."""
    parsed = parse_summary_text(text)
    if parsed is not None:
        return parsed.summary
    if text.startswith(SUMMARY_OPEN):
        _, _, text = text.partition("\n")
        text = text.removesuffix(SUMMARY_CLOSE).rstrip("\n")
    return text


def summary_message(
    *,
    message_id: str,
    model: str,
    watermark_before: int,
    watermark_after: int,
    summary: str,
    cache_key: str,
) -> Message:
    return text_message(
        message_id,
        Role.USER,
        summary_text(model, watermark_before, summary),
        synthetic=True,
        compaction_span=(watermark_before, watermark_after),
        compaction_cache_key=cache_key,
    )


def truncation_notice(count: int, message_id: str) -> Message:
    return text_message(
        message_id, Role.USER, TRUNCATION_NOTICE.format(count=count), synthetic=True
    )


def truncation_cost(history: History, start: int, end: int, new_id: NewId) -> int:
    """§3.4: the tokens that stand in a cut's place (the notice and the fillers alternation
    needs). They are pending tokens too: left out, a cut could land the session back on the cap."""
    notice = truncation_notice(end - start, new_id("t"))
    bridged = bridge(history.role_before(start), notice, history.role_at(end), new_id)
    return sum(history.counter(message) for message in bridged)


def _filler(new_id: NewId) -> Message:
    return text_message(new_id("f"), Role.ASSISTANT, ASSISTANT_FILLER_TEXT, synthetic=True)


def bridge(before: Role | None, block: Message, after: Role | None, new_id: NewId) -> list[Message]:
    """§4.4: `block` (a USER message) with an assistant filler on each side that alternation needs.
    Only assistant fillers are ever needed, since the block is a user message."""
    assert block.role is Role.USER
    bridged = [block]
    if before is Role.USER:
        bridged.insert(0, _filler(new_id))
    if after is Role.USER:
        bridged.append(_filler(new_id))
    return bridged


def splice(
    history: History,
    start: int,
    end: int,
    block: Message,
    counter_tokens: Sequence[int] | None = None,
    *,
    new_id: NewId,
) -> tuple[History, list[Message]]:
    """A new History with messages[start:end] replaced by `block` and its fillers (ids from
    `new_id`). Raises HistoryError when the result would not validate; the given history is
    never changed."""
    replacement = bridge(history.role_before(start), block, history.role_at(end), new_id)
    tokens = (
        list(counter_tokens)
        if counter_tokens is not None
        else [history.counter(message) for message in replacement]
    )
    spliced = history.copy()
    spliced.replace(start, end, replacement, tokens)
    # Only the seam can break: check the messages around it, not the whole history.
    seam_start = max(0, start - 1)
    seam_end = min(len(spliced), start + len(replacement) + 1)
    validate_history(
        spliced.messages[seam_start:seam_end],
        previous=spliced.messages[seam_start - 1] if seam_start > 0 else None,
        first_index=seam_start,
    )
    return spliced, replacement


def splice_masked(
    history: History, start: int, end: int, replacement: Sequence[Message]
) -> tuple[History, list[Message]]:
    """A new History with messages[start:end] replaced by their masked copies
    (engine.policy.strategies); the seam is validated as a summary's is (§4.4)."""
    spliced = history.copy()
    spliced.replace(start, end, list(replacement), [history.counter(m) for m in replacement])
    seam_start = max(0, start - 1)
    validate_history(
        spliced.messages[seam_start : min(len(spliced), start + len(replacement) + 1)],
        previous=spliced.messages[seam_start - 1] if seam_start > 0 else None,
        first_index=seam_start,
    )
    return spliced, list(replacement)
