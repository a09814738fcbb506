"""A recorded transcript beside our engine: the agent's own compactions, where ours would fire,
and the token usage the log records against our estimate. Shown only for transcripts."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.widget import Widget

from metis_compaction_tui.safe_text import neutralise
from metis_compaction_tui.sources.session_data import AgentView, short_tokens
from metis_compaction_tui.widgets.fit import first_fitting, lines

AGENT = "Agent     "
OURS = "Ours      "
USAGE = "Usage     "


def agent_lines(view: AgentView) -> list[list[str]]:
    """Three rows, each as wordings from the longest to the shortest."""
    compactions = view.compactions
    if compactions:
        parts = []
        for c in compactions[-3:]:
            pre = f"pre {short_tokens(c.pre_tokens)}" if c.pre_tokens is not None else "pre ?"
            trigger = neutralise(c.trigger or "compact", single_line=True)[:12]  # from the log
            estimate = short_tokens(c.estimate_tokens)
            parts.append(f"{trigger} @{c.message_index} ({pre}, est {estimate})")
        more = f"{len(compactions) - 3} earlier · " if len(compactions) > 3 else ""
        agent = [
            f"{len(compactions)} compaction(s) of its own: {more}{' · '.join(parts)}",
            f"{len(compactions)} of its own, last {parts[-1]}",
            f"{len(compactions)} of its own",
        ]
    else:
        agent = [
            f"no compaction of its own in {view.line_count:,} lines ({view.format})",
            "no compaction of its own",
        ]
    if view.notes:  # what the import skipped or why it is empty: kept in sight after the notice
        note = neutralise(view.notes[0], single_line=True)
        count = f"{len(view.notes)} notes: " if len(view.notes) > 1 else ""
        agent = (
            [f"⚠ {count}{note} · {w}" for w in agent[:1]]
            + [f"⚠ {note}" for _ in agent[:1]]
            + [f"⚠ {len(view.notes)} note(s) · {w}" for w in agent]
            + agent
        )
    fires = view.projected  # the first and the most recent few; projected_count has them all
    forced = view.projected_forced
    if fires and forced is not None:
        # Why ours fires on every turn (engine.policy.projection says when): kept in sight.
        count = max(view.projected_count, len(fires))
        since = f"every turn forced from turn {forced.turn:,}"
        kept, cap = short_tokens(forced.kept_tokens), short_tokens(forced.hard_cap_tokens)
        noun = forced.kept.removeprefix("stand-in ")
        over = f"{forced.kept} {kept} > hard cap {cap}"
        ours = [
            f"{count:,} compaction(s) under these knobs, first before msg {fires[0].before_index}; "
            f"{since}: {over} (never compacted again, §3.2) · w: what-if",
            f"{count:,}; {since}: {over} (§3.2) · w: what-if",
            f"{count:,} fires; {since}: {forced.kept} {kept} > cap {cap} (§3.2)",
            f"{count:,}; {since}: {noun} {kept} > cap {cap} (§3.2)",
            f"{count:,}; every turn from {forced.turn:,} forced: {noun} {kept} > cap {cap}",
            f"{count:,}; forced from turn {forced.turn:,}: {noun} {kept} > cap {cap}",
            f"{count:,}; {since}",
        ]
    elif fires:
        first = fires[0]
        last = fires[-1]
        count = max(view.projected_count, len(fires))
        ours = [
            f"{count} compaction(s) under these knobs: first {first.action} before msg "
            f"{first.before_index} (turn {first.turn}, {short_tokens(first.pending_tokens)} "
            f"pending), last before msg {last.before_index} · w: what-if",
            f"{count} under these knobs: first {first.action} before msg "
            f"{first.before_index} · w: what-if",
            f"{count}, first before msg {first.before_index}",
        ]
    else:
        ours = [
            "would not compact this recording under these knobs · w: what-if",
            "would not compact it · w: what-if",
        ]
    if view.usage_count and view.last_recorded_tokens is not None:
        recorded, estimate = view.last_recorded_tokens, view.last_estimate_tokens or 0
        ratio = view.estimate_total / view.recorded_total if view.recorded_total else 0.0
        usage = [
            f"recorded {short_tokens(recorded)} context, our estimate of its messages "
            f"{short_tokens(estimate)} (system prompt and tools are not in the log) · "
            f"{ratio:.2f}× over {view.usage_count:,} responses",
            f"recorded {short_tokens(recorded)}, our estimate {short_tokens(estimate)} · "
            f"{ratio:.2f}× over {view.usage_count:,}",
            f"{short_tokens(recorded)} recorded, {short_tokens(estimate)} est.",
        ]
    else:
        usage = ["the log records no token usage", "no usage recorded"]
    return [agent, ours, usage]


class AgentPanel(Widget):
    COMPONENT_CLASSES: ClassVar[set[str]] = {"agent--label", "agent--text"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view: AgentView | None = None

    def set_view(self, view: AgentView | None) -> None:
        self.view = view
        self.display = view is not None
        self.refresh()

    def render(self) -> Text:
        if self.view is None:
            return Text("")
        style = self.get_component_rich_style
        width = max(10, self.size.width)
        rows = []
        for label, wordings in zip((AGENT, OURS, USAGE), agent_lines(self.view), strict=True):
            head = Text(label, style("agent--label"), no_wrap=True, end="")
            body = first_fitting(
                (
                    (lambda w=w: Text(w, style("agent--text"), no_wrap=True, end=""))
                    for w in wordings
                ),
                width - head.cell_len,
            )
            rows.append(head + body)
        return lines(*rows)
