"""What the dashboard shows for one session, as plain data built from engine objects.

No Textual and no I/O here: a `SessionData` is made from any list of engine `Message`s (a live
store session, an imported transcript, a test fixture) plus the §11 knobs, and every widget
renders from it. Live updates append in O(new messages); the turn plan is the engine's own
`plan_turn`, so the dashboard shows exactly what the next turn would do.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from engine import (
    CompactionConfig,
    CompactionEvent,
    CompactionRecord,
    EveryTurnForced,
    History,
    Message,
    ProjectedCompaction,
    SummarizerSettings,
    TurnPlan,
    plan_turn,
)
from metis_compaction_tui.timeline import Timeline


class Zone(enum.IntEnum):
    """Where a message sits relative to the watermark (§3.2, §3.3, §7)."""

    PREFIX = 0  # the stable prefix: never compacted
    SUMMARY = 1  # earlier summaries and their fillers: never re-compacted in v1
    SPAN = 2  # what a compaction this turn would take
    HELD = 3  # candidate range with no usable boundary, or slid back past for a tool cycle
    TAIL = 4  # the preserved recent turns


ZONE_NAMES = {
    Zone.PREFIX: "stable prefix",
    Zone.SUMMARY: "summaries",
    Zone.SPAN: "compactable span",
    Zone.HELD: "held back",
    Zone.TAIL: "preserved tail",
}


@dataclass(frozen=True)
class ZoneRange:
    zone: Zone
    start: int  # message index, inclusive
    end: int  # exclusive
    tokens: int

    @property
    def count(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class CompactionInfo:
    """A committed compaction as the app shows it; `compaction_id` finds its archived originals."""

    compaction_id: int | None
    record: CompactionRecord
    undone: bool = False
    created_at_ms: int = 0


@dataclass(frozen=True)
class EventRow:
    event_id: int
    event_type: str
    event: CompactionEvent | AgentCompactionView  # ours (§6), or one the agent made itself
    created_at_ms: int


AGENT_COMPACTION = "agent.compaction"  # EventRow.event_type of a transcript's own compaction


def build_timeline(
    log: Iterable[tuple[int, bool, str | None]], compactions: Sequence[CompactionInfo] = ()
) -> Timeline:
    """History tokens over turns from the full message log in write order (archived messages
    included), each entry (tokens, opens a turn, message id). The message that replaced a span
    (its summary, or a truncation notice) takes the span's tokens back out, and the next turn
    carries the compaction mark."""
    removed_at: dict[str, tuple[int, str]] = {
        info.record.summary_message_id: (info.record.span_token_count_in, info.record.kind)
        for info in compactions
        if info.record.summary_message_id and not info.undone
    }
    points = Timeline()
    running = 0
    seen_any = False
    pending_mark: str | None = None
    for tokens, opens_turn, message_id in log:
        if opens_turn and seen_any:
            points.add(running, pending_mark)
            pending_mark = None
        seen_any = True
        running += tokens
        removal = removed_at.get(message_id) if message_id else None
        if removal is not None:
            running = max(0, running - removal[0])
            pending_mark = removal[1]
    points.add(running, pending_mark)
    return points


def message_log(
    messages: Iterable[tuple[Message, int]],
) -> Iterator[tuple[int, bool, str | None]]:
    """Messages with their tokens as build_timeline's log entries."""
    return ((tokens, message.opens_turn, message.id) for message, tokens in messages)


@dataclass(frozen=True)
class AgentCompactionView:
    """A compaction the agent itself made, with our estimate of the context it compacted."""

    message_index: int  # the agent's summary, in the recording
    message_id: str  # the same message, found wherever what-ifs have moved it
    trigger: str | None  # "auto" / "manual" where the log records it
    pre_tokens: int | None  # the context size the agent recorded just before
    estimate_tokens: int  # our estimate of the messages in its context then
    post_tokens: int | None = None  # the context size just after, where the log records it
    duration_ms: int | None = None  # how long the agent took, where the log records it


@dataclass(frozen=True)
class AgentView:
    """A recorded transcript beside our engine: what the agent did, where we would compact, and
    the token usage it recorded against our estimate of the messages sent."""

    path: str
    format: str  # "claude-code" | "codex"
    line_count: int
    compactions: tuple[AgentCompactionView, ...]
    # Ours over the whole recording, bounded: the first and the PROJECTED_SHOWN most recent
    # (a 100 MB log fires some 25,000 times); `projected_count` counts them all.
    projected: tuple[ProjectedCompaction, ...]
    usage_count: int = 0
    last_recorded_tokens: int | None = None  # the latest response's recorded context size
    last_estimate_tokens: int | None = None  # our estimate of the messages in that context
    recorded_total: int = 0  # over every response: for the estimate/recorded ratio
    estimate_total: int = 0
    notes: tuple[str, ...] = ()  # skipped records, warnings: one line each
    projected_count: int = 0  # every fire of ours, `projected` holding a bounded few
    projected_span_tokens: int = 0  # the tokens of every span ours would have compacted
    # When ours ends up firing every turn (engine.policy.projection.EveryTurnForced): from when
    # and why. None when it does not.
    projected_forced: EveryTurnForced | None = None

    @property
    def summary_ids(self) -> frozenset[str]:
        return frozenset(c.message_id for c in self.compactions)


@dataclass
class SourceChange:
    """What changed in one session since the last poll (O(new rows))."""

    session_id: str
    new_messages: list[tuple[int, Message, int]] = field(default_factory=list)  # seq, msg, tokens
    compacted: bool = False  # the history was rewritten (compaction, undo): reload it
    new_events: list[EventRow] = field(default_factory=list)
    sessions_changed: bool = False  # a session was created
    spent_usd: Decimal | None = None  # the session's compaction spend, when it may have moved
    rewrite_from: int | None = None  # new_messages replace the history from this index on
    agent: AgentView | None = None  # a transcript's facts, when they may have moved


@dataclass
class SessionData:
    """One session as the dashboard shows it. `history` is the active history (what the next
    turn sends); `compactions` and `events` come from the store when there is one."""

    session_id: str
    title: str
    history: History
    config: CompactionConfig
    spent_usd: Decimal = Decimal(0)
    revision: int = 0
    compactions: list[CompactionInfo] = field(default_factory=list)
    events: list[EventRow] = field(default_factory=list)
    timeline: Timeline = field(default_factory=Timeline)
    last_seq: int = 0
    source_label: str = ""
    read_only: bool = False  # no compact now, no undo
    agent: AgentView | None = None  # a recorded transcript: the agent's side
    # (key, value, origin) of each knob and summarizer setting (engine.workspace_config), and
    # where the model's price comes from; empty: the source has no workspace settings.
    settings_rows: list[tuple[str, str, str]] = field(default_factory=list)
    settings_file: str = ""
    trust_note: str = ""  # "untrusted config" when the workspace file's gated settings are withheld
    price_origin: str = ""
    # The workspace's summarizer settings for the session's model: a stated price prices what
    # its compactions saved.
    summarizer: SummarizerSettings | None = None
    _plan: TurnPlan | None = field(default=None, init=False, repr=False)

    @classmethod
    def from_messages(
        cls,
        session_id: str,
        messages: Sequence[Message],
        *,
        config: CompactionConfig | None = None,
        tokens: Sequence[int] | None = None,
        stable_prefix_end: int = 0,
        title: str = "",
        **fields: object,
    ) -> SessionData:
        """Any list of engine Messages (a transcript, a fixture) as a dashboard session."""
        history = History(messages, stable_prefix_end=stable_prefix_end, tokens=tokens)
        data = cls(
            session_id=session_id,
            title=title or session_id,
            history=history,
            config=config or CompactionConfig(),
            **fields,  # type: ignore[arg-type]
        )
        if not data.timeline:
            data.timeline = build_timeline(
                message_log(zip(history.messages, history.tokens, strict=True))
            )
        return data

    # -- derived -----------------------------------------------------------------------------

    @property
    def plan(self) -> TurnPlan:
        if self._plan is None:
            self._plan = plan_turn(self.history, self.config, self.spent_usd)
        return self._plan

    @property
    def message_count(self) -> int:
        return len(self.history)

    @property
    def pending_history_tokens(self) -> int:
        return self.plan.decision.pending_history_tokens

    def zones(self) -> list[ZoneRange]:
        """The watermark strip: prefix | summaries | span | held | tail; empty zones left out."""
        history, plan = self.history, self.plan
        count = len(history)
        prefix_end = history.stable_prefix_end
        floor = max(plan.floor, prefix_end)
        nominal = plan.nominal_watermark
        if plan.span is not None:
            cuts = [
                (Zone.PREFIX, 0, prefix_end),
                (Zone.SUMMARY, prefix_end, floor),
                (Zone.SPAN, floor, plan.span.compaction_watermark),
                (Zone.HELD, plan.span.compaction_watermark, plan.span.nominal_watermark),
                (Zone.TAIL, plan.span.nominal_watermark, count),
            ]
        else:
            cuts = [
                (Zone.PREFIX, 0, prefix_end),
                (Zone.SUMMARY, prefix_end, floor),
                (Zone.HELD, floor, nominal),
                (Zone.TAIL, nominal, count),
            ]
        return [
            ZoneRange(zone, start, end, history.range_tokens(start, end))
            for zone, start, end in cuts
            if end > start
        ]

    def zone_of(self, index: int, zones: Sequence[ZoneRange] | None = None) -> Zone:
        for zone_range in zones if zones is not None else self.zones():
            if zone_range.start <= index < zone_range.end:
                return zone_range.zone
        return Zone.TAIL

    def compaction_for(self, message: Message) -> CompactionInfo | None:
        """The committed compaction whose summary (or truncation notice) is `message`."""
        for info in reversed(self.compactions):
            if info.record.summary_message_id == message.id:
                return info
        key = message.metadata.compaction_cache_key
        if key:
            for info in reversed(self.compactions):
                if info.record.cache_key == key and not info.undone:
                    return info
        return None

    def latest_compaction(self) -> CompactionInfo | None:
        for info in reversed(self.compactions):
            if not info.undone:
                return info
        return None

    # -- live updates --------------------------------------------------------------------------

    def append(self, messages: Iterable[tuple[Message, int]], last_seq: int | None = None) -> int:
        """Messages appended by the writer, in order; returns how many were added."""
        # The timeline's last point is "now"; a new turn freezes it as that turn's end.
        timeline = self.timeline
        if not timeline:
            timeline.add(self.history.total_tokens)
        added = 0
        for message, tokens in messages:
            if message.opens_turn and len(self.history):
                timeline.set_now(self.history.total_tokens)
                timeline.add(self.history.total_tokens)
            self.history.append(message, tokens)
            added += 1
        if added:
            self._plan = None
            timeline.set_now(self.history.total_tokens)
        if last_seq is not None:
            self.last_seq = max(self.last_seq, last_seq)
        return added

    def grow(self, change: SourceChange) -> tuple[int, int]:
        """One poll's change to this session (seq, message, tokens); messages already loaded
        (seq <= last_seq) are skipped. Returns (messages added, events added)."""
        new_messages, rewrite_from = change.new_messages, change.rewrite_from
        spent_usd, agent = change.spent_usd, change.agent
        fresh = [(m, t) for seq, m, t in new_messages if seq > self.last_seq]
        if rewrite_from is not None and fresh:
            added = self.rewrite(rewrite_from, fresh)
        else:
            added = self.append(fresh)
        self.last_seq = max([self.last_seq, *(seq for seq, _, _ in new_messages)])
        events = self.add_events(change.new_events)
        if spent_usd is not None:
            self.set_spent(spent_usd)
        if agent is not None:
            self.agent = agent
        return added, events

    def rewrite(self, start: int, messages: Iterable[tuple[Message, int]]) -> int:
        """A recording's newest messages changed: replace the history from `start` on. Each
        turn the removed messages opened takes its timeline point with it."""
        history = self.history
        opened = sum(
            1 for i in range(max(1, start), len(history)) if history.messages[i].opens_turn
        )
        self.timeline.drop(opened)
        history.replace(start, len(history), [], [])
        self._plan = None
        if self.timeline:
            self.timeline.set_now(history.total_tokens)
        return self.append(messages)

    def add_events(self, events: Iterable[EventRow]) -> int:
        """Rows not held yet are appended; a held one sent again with more in it (an agent's
        compaction whose size after came a few lines later) replaces it. Returns how many
        rows were added or replaced."""
        events = list(events)
        if not events:
            return 0  # most polls bring none: no index of the held rows to build
        start = max(0, len(self.events) - 200)
        known = {row.event_id: start + i for i, row in enumerate(self.events[start:])}
        changed = 0
        for row in events:
            at = known.get(row.event_id)
            if at is None:
                known[row.event_id] = len(self.events)
                self.events.append(row)
            elif self.events[at] != row:
                self.events[at] = row
            else:
                continue
            changed += 1
        return changed

    def set_spent(self, spent_usd: Decimal) -> None:
        if spent_usd != self.spent_usd:
            self.spent_usd = spent_usd
            self._plan = None


def short_tokens(count: int) -> str:
    """12 · 980 · 1.2k · 41k · 1.3M · 41M · 1.0B · 1.0T: what fits a narrow column."""
    if count < 1_000:
        return str(count)
    unit, size = next(
        (u, s) for u, s in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("k", 1000)) if count >= s
    )
    return f"{count / size:.1f}{unit}" if count < 10 * size else f"{count // size}{unit}"


def money(value: Decimal) -> str:
    """$0.0123: four places, enough for summaries that cost a fraction of a cent."""
    return f"${value.quantize(Decimal('0.0001'))}"
