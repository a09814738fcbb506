"""The status line's slow half: read what a transcript gained since the last call and save the
figures the line shows. Runs in its own process (spawned by the line, detached) or inline
(`statusline --sync`), never both at once for one transcript (a lock file).

Incremental: parsing resumes at a *seam*, the first line of the newest assistant message that is
complete (a message can still gain blocks until the next one starts, and a user message's tool
results need the assistant call before it). Messages before the seam have been fed, once, to our
engine's Projection, which is saved (engine.policy.projection.ProjectionState); the seam's bytes
and what was appended after them are read again with a fresh importer (the project's own,
metis_compaction_tui.importers). So a call reads O(bytes since the seam), not the session.
"""

from __future__ import annotations

import fcntl
import gc
import json
import os
import sys
from bisect import bisect_right
from collections.abc import Iterator
from decimal import Decimal

import msgspec

from engine import (
    CompactionConfig,
    Message,
    Projection,
    ProjectionState,
    Role,
    estimate_message_tokens,
    plan_turn,
    reads_tool_output,
)
from metis_compaction_tui.importers import TranscriptError, TranscriptTail
from metis_compaction_tui.importers.model import RecordedUsage, as_ordinary
from metis_compaction_tui.importers.tail import gc_paused
from metis_compaction_tui.statusline.state import (
    STATE_VERSION,
    FileIdentity,
    identify,
    prune_states,
    state_key,
    trigger_word,
    write_atomic,
)

PARSE_VERSION = 1


class SeenCompaction(msgspec.Struct, frozen=True):
    """One of the agent's own compactions, by its index in the whole recording."""

    message_index: int
    trigger: str | None
    pre_tokens: int | None
    post_tokens: int | None


class ParseState(msgspec.Struct):
    version: int
    path: str
    dev: int
    ino: int
    head: str  # hex of the first bytes when first read
    format: str
    seam_offset: int  # byte offset where the next read starts
    seam_line: int  # lines before it
    base: int  # messages of the recording before the seam (all fed to the projection)
    projection: ProjectionState
    compactions: list[SeenCompaction]
    cache_read: int  # usage before the seam, summed
    cache_total: int
    last_usage_index: int  # message index of the newest usage before the seam (-1: none)
    last_usage_context: int
    # Records from the seam on that name a parent before it: the next read resumes there, and a
    # record naming any other parent before the seam is a rewind (read again from the start).
    # None: not known (a Codex log, whose records name no parents).
    seam_parents: list[str] | None = None


_parse_decoder = msgspec.msgpack.Decoder(ParseState)
# What the last read built (the messages, the projection), kept until the next read or the
# process's end: freeing a first read of 100 MB object by object takes a tenth of the read, and
# the detached refresher ends without it (os._exit, its files written). The importer's index is
# let go of earlier, so that the projection reuses its memory.
_parked: list[object] = []
CONFIG = CompactionConfig(compaction_model="local:extractive")  # the spec's default knobs


def _with_tokens(messages: list[Message], tokens: list[int]) -> Iterator[tuple[Message, int]]:
    """What the projection is fed: our view of each message and its token estimate (made as
    it is fed, not held as a list: a first read of 100 MB feeds 110,000)."""
    for message, count in zip(messages, tokens, strict=True):
        yield (as_ordinary(message) if message.metadata.synthetic else message), count


def _light() -> bool:
    """Read without message text (TranscriptTail(light=True)) when planning under CONFIG reads
    only roles, tool_use ids, synthetic flags and token counts: a first read of 100 MB then
    holds a few bytes a record instead of its text."""
    return not reads_tool_output(CONFIG.compaction_strategy)


def _load_parse(path: str, directory: str, now: FileIdentity) -> ParseState | None:
    try:
        with open(os.path.join(directory, state_key(path) + ".parse.msgpack"), "rb") as f:
            state = _parse_decoder.decode(f.read())
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None  # absent or corrupt: read from the start
    same = (
        state.version == PARSE_VERSION
        and state.path == os.path.abspath(path)
        and (state.dev, state.ino) == (now.dev, now.ino)
        and now.size >= state.seam_offset
        and now.head.startswith(state.head)
        and state.format in ("claude-code", "codex")
    )
    return state if same else None


def _line_start(path: str, offset: int, first_line: int, line: int) -> int:
    """Byte offset of line `line`, counting from `offset`, the start of line `first_line + 1`.
    Whole blocks are skipped by counting their newlines (in C), so a first read of 100 MB costs
    one pass over the bytes, not a Python step per line."""
    wanted = line - 1 - first_line  # newlines to pass
    position = offset
    with open(path, "rb") as f:
        f.seek(offset)
        while wanted > 0:
            block = f.read(1 << 20)
            if not block:
                raise ValueError(f"line {line} is past the end of {path}")
            count = block.count(b"\n")
            if count < wanted:
                wanted -= count
                position += len(block)
                continue
            at = -1
            for _ in range(wanted):
                at = block.index(b"\n", at + 1)
            return position + at + 1
    return position


def _line_start_before(path: str, end: int, last_line: int, line: int) -> int:
    """Byte offset of line `line`, counting back from `end`, the end of line `last_line` (just
    after its newline, or the end of the file when the last line was taken without one). A
    first read's seam is near the end of the file: this reads its last lines, not all of it."""
    if line <= 1:
        return 0
    with open(path, "rb") as f:
        f.seek(end - 1)
        ends_with_newline = end > 0 and f.read(1) == b"\n"
        # newlines from the start of `line` to `end`, plus the one that ends line - 1
        wanted = last_line - line + (1 if ends_with_newline else 0) + 1
        position = end
        while position > 0:
            start = max(0, position - (1 << 20))
            f.seek(start)
            block = f.read(position - start)
            count = block.count(b"\n")
            if count < wanted:
                wanted -= count
                position = start
                continue
            at = len(block)
            for _ in range(wanted):
                at = block.rindex(b"\n", 0, at)
            return start + at + 1
    raise ValueError(f"line {line} is before the start of {path}")


def _price_usd(model: str, pre: int, post: int) -> Decimal | None:
    from engine import cost_of, price_for

    try:
        price = price_for(model)
    except KeyError:
        return None
    return cost_of(price, pre, post)


def refresh(
    path: str, directory: str, model: str = "", *, wait: bool = False, ending: bool = False
) -> bool:
    """Bring the saved figures for `path` up to date. False when another refresh holds the lock
    (and `wait` is off) or the file cannot be read. `ending`: the process ends after this (the
    detached refresher, the command with --sync)."""
    # A refresh builds objects that live until it ends (the projection too, not only the read).
    with gc_paused():
        done = _refresh(path, directory, model, wait)
        if ending:
            # What the read built is parked until the process ends: the collector must not
            # walk it once it is back on (its first pass would scan all of it, 0.1-0.2 s after
            # a first read of 100 MB). Frozen objects are still freed when unreferenced.
            gc.freeze()
    try:
        prune_states(directory)  # once a day at most: one stat otherwise
    except OSError:
        pass  # a folder we cannot tidy is still one we can use
    return done


def _refresh(path: str, directory: str, model: str, wait: bool) -> bool:
    path = os.path.abspath(path)
    key = state_key(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    with open(os.path.join(directory, key + ".lock"), "a+b") as lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        now = identify(path)
        if now is None:
            return False
        parse = _load_parse(path, directory, now)
        try:
            line, parse = _read(path, now, parse, model)
        except TranscriptError as exc:
            why = exc.detail.removeprefix("not a transcript: ")  # said once on the line
            line = _error_line(path, now, f"not a transcript: {why[:80]}")
            parse = None
        except Exception as exc:
            line = _error_line(path, now, f"cannot read it ({type(exc).__name__})")
            parse = None
        parse_file = os.path.join(directory, key + ".parse.msgpack")
        if parse is not None:
            # Written in place, not renamed: only a refresher holding the lock reads it, and a
            # torn file (a crash mid-write) fails to decode and is read again from the start.
            # 0600: it holds transcript text (which may quote a key the user pasted).
            fd = os.open(parse_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(msgspec.msgpack.encode(parse))
        elif os.path.exists(parse_file):
            os.unlink(parse_file)
        write_atomic(os.path.join(directory, key + ".line.json"), json.dumps(line).encode())
    return True


def _error_line(path: str, now: FileIdentity, error: str) -> dict[str, object]:
    return {
        "version": STATE_VERSION,
        "path": path,
        "dev": now.dev,
        "ino": now.ino,
        "size": now.size,
        "seen": now.size,
        "head": now.head,
        "format": "",
        "messages": 0,
        "agent_compactions": 0,
        "our_compactions": 0,
        "pending": 0,
        "threshold": CONFIG.compaction_threshold_tokens,
        "hard_cap": CONFIG.compaction_hard_cap_tokens,
        "cache_read": 0,
        "cache_total": 0,
        "last_before": None,
        "last_after": None,
        "last_context": None,
        "soft_in": None,
        "trigger": "",
        "explain": "",
        "compaction_usd": None,
        "last_trigger": None,
        "error": error,
        "stale_usage": False,
    }


def _read(
    path: str, now: FileIdentity, parse: ParseState | None, model: str
) -> tuple[dict[str, object], ParseState | None]:
    if parse is None:
        tail = TranscriptTail(path, light=_light(), once=True)
        projection = Projection(CONFIG)
        base, seam_offset, seam_line = 0, 0, 0
        compactions: list[SeenCompaction] = []
        cache_read = cache_total = 0
        last_usage_index, last_usage_context = -1, 0
        head = now.head
    else:
        tail = TranscriptTail.resume(
            path,
            parse.seam_offset,
            parse.seam_line,
            parse.format,  # type: ignore[arg-type]
            light=_light(),
            once=True,
        )
        projection = Projection.restore(CONFIG, parse.projection)
        base, seam_offset, seam_line = parse.base, parse.seam_offset, parse.seam_line
        compactions = list(parse.compactions)
        cache_read, cache_total = parse.cache_read, parse.cache_total
        last_usage_index, last_usage_context = parse.last_usage_index, parse.last_usage_context
        head = parse.head
    update = tail.poll()
    if parse is not None and parse.seam_parents is not None:
        before = tail.parents_before(parse.seam_line + 1)
        if before is not None and not before <= set(parse.seam_parents):
            # A record hangs on one before the seam that nothing after the seam did: the agent
            # went back (/rewind, an edited prompt). Only a read from the start sees the branch.
            return _read(path, now, None, model)
    fmt = tail.format
    if fmt is None:
        # No record has said which agent wrote it yet: a file that never will (binary, notes
        # in JSON) is refused as the app refuses it, not shown as an empty session.
        tail.refuse_undecided()
    messages = update.messages
    # A light read has the estimates already (a Codex rollout is read in full).
    tokens = update.tokens
    if tokens is None:
        tokens = [estimate_message_tokens(m) for m in messages]
    # The seam: the newest assistant message with a later message after it.
    seam_index = None
    for index in range(len(messages) - 2, -1, -1):
        if messages[index].role is Role.ASSISTANT:
            seam_index = index
            break
    new_seam_offset, new_seam_line = seam_offset, seam_line
    if seam_index is not None:
        first = tail.first_line_of(messages[seam_index])
        if first is not None and first > seam_line:
            new_seam_line = first - 1
            if tail.line_count - first < first - seam_line:  # nearer the end: count back
                new_seam_offset = _line_start_before(path, tail.offset, tail.line_count, first)
            else:
                new_seam_offset = _line_start(path, seam_offset, seam_line, first)
        else:
            seam_index = 0  # cannot place it: hold the whole window back, read it again
    else:
        seam_index = 0
    done, pending = messages[:seam_index], messages[seam_index:]
    seam_parents = _seam_parents(tail, new_seam_line + 1)
    size = tail.offset
    # What the importer indexed (a node a record) is not needed past this point: let go of it
    # before the projection is built, which then reuses its memory (the first read's peak).
    del tail
    projection.feed(_with_tokens(done, tokens[:seam_index]))
    usage_done = [u for u in update.recorded_usage if 0 <= u.message_index < seam_index]
    for usage in usage_done:
        cache_read += usage.cache_read_tokens
        cache_total += usage.context_tokens
    if usage_done:
        last_usage_index = base + usage_done[-1].message_index
        last_usage_context = usage_done[-1].context_tokens
    context_after = _ContextAfter(base, update.recorded_usage)
    seen = [
        SeenCompaction(
            base + c.message_index,
            c.trigger,
            c.pre_tokens,
            getattr(c, "post_tokens", None)  # the importers record it when the log has it
            or context_after(base + c.message_index),
        )
        for c in update.agent_compactions
    ]
    saved = None
    if fmt is not None:
        saved = ParseState(
            version=PARSE_VERSION,
            path=path,
            dev=now.dev,
            ino=now.ino,
            head=head,
            format=fmt,
            seam_offset=new_seam_offset,
            seam_line=new_seam_line,
            base=base + seam_index,
            projection=projection.snapshot(),
            compactions=compactions + [c for c in seen if c.message_index < base + seam_index],
            cache_read=cache_read,
            cache_total=cache_total,
            last_usage_index=last_usage_index,
            last_usage_context=last_usage_context,
            seam_parents=seam_parents,
        )
    # What the line shows also counts the messages still held back.
    projection.feed(_with_tokens(pending, tokens[seam_index:]))
    all_usage = [u for u in update.recorded_usage if u.message_index >= 0]
    for usage in all_usage[len(usage_done) :]:
        cache_read += usage.cache_read_tokens
        cache_total += usage.context_tokens
    if len(all_usage) > len(usage_done):
        last_usage_index = base + all_usage[-1].message_index
        last_usage_context = all_usage[-1].context_tokens
    every = compactions + seen  # the window starts at the old seam: nothing in it was saved
    last = every[-1] if every else None
    last_after = None
    if last is not None:
        last_after = last.post_tokens or context_after(last.message_index)
    plan = plan_turn(projection.history, CONFIG, Decimal(0))
    decision = plan.decision
    soft_in = decision.tokens_to_threshold
    trigger = trigger_word(decision.action.value)
    spend: Decimal | None = Decimal(0)
    for c in every:
        if c.pre_tokens is None or spend is None:
            continue
        cost = _price_usd(model, c.pre_tokens, c.post_tokens or 0) if model else None
        spend = None if cost is None else spend + cost
    line: dict[str, object] = {
        **_error_line(path, now, ""),
        "error": None,
        "size": size,
        "seen": now.size,  # the file's size when read (an unfinished last line is not in `size`)
        "head": head,
        "format": fmt or "",
        "messages": base + len(messages),
        "agent_compactions": len(every),
        "our_compactions": projection.fire_count,
        "pending": decision.pending_history_tokens,
        "threshold": decision.threshold_tokens,
        "hard_cap": decision.hard_cap_tokens,
        "cache_read": cache_read,
        "cache_total": cache_total,
        "last_before": last.pre_tokens if last else None,
        "last_after": last_after,
        # The context the agent measured on its latest response (older Claude Code sends none).
        "last_context": last_usage_context if last_usage_index >= 0 else None,
        "last_trigger": last.trigger if last else None,
        "soft_in": soft_in,
        "trigger": trigger,
        "explain": decision.explain(),
        "compaction_usd": None if spend is None or not every else f"{spend:.2f}",
        # The newest thing is the agent's compaction, with no response measured after it yet.
        "stale_usage": last is not None and last.message_index > last_usage_index,
    }
    _parked[:] = [update, projection, tokens]
    return line, saved


def _seam_parents(tail: TranscriptTail, line: int) -> list[str] | None:
    parents = tail.parents_before(line)
    return sorted(parents) if parents is not None else None


class _ContextAfter:
    """The context the agent measured on its first response (in the list's order) after a
    message, in O(log n) a question: a first read of 100 MB asks once per compaction over
    130,000 responses."""

    def __init__(self, base: int, usage: list[RecordedUsage]) -> None:
        self.usage = usage
        self.base = base
        self._reach: list[int] | None = None

    def __call__(self, index: int) -> int | None:
        if self._reach is None:
            # Running maximum of the message indexes: the first response past `index` is the
            # first place this maximum passes it (the list is nearly always in order already).
            reach, top = [], -(1 << 62)
            for usage in self.usage:
                top = max(top, self.base + usage.message_index)
                reach.append(top)
            self._reach = reach
        position = bisect_right(self._reach, index)
        return self.usage[position].context_tokens if position < len(self.usage) else None


def main(argv: list[str]) -> int:
    """`python -m metis_compaction_tui.statusline.refresh DIR PATH [MODEL]` (the detached half)."""
    try:
        refresh(argv[1], argv[0], argv[2] if len(argv) > 2 else "", ending=True)
    except Exception:
        return 1
    return 0


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))  # nothing buffered is left: no teardown (see _parked)
