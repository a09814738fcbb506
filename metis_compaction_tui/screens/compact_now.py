"""Compact now: preview → optional instructions → summarize (in a worker) → accept or reject.

Nothing is spliced until the user accepts the summary they have read. Each step runs in its own
thread worker with a fresh SessionManager over the store as it is at that moment, so the UI never
waits on a model call or a SQLite lock, and a commit is checked against the span as stored now:
if metis dev compacted or rewrote it meanwhile, the engine raises SpanChanged, nothing is
written, and the screen says so and offers a fresh preview.
"""

from __future__ import annotations

import asyncio
import time
from typing import ClassVar, Literal

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Button, Footer, Input, LoadingIndicator, Static

from engine import (
    OFFLINE,
    CompactionOutcome,
    CompactionPreview,
    PreparedCompaction,
    SessionManager,
    SpanChanged,
    SpanPlan,
    ToolResultContentBlock,
    is_masked,
    is_offline,
    named_price_origin,
    no_span_reason,
)
from metis_compaction_tui.actions import bindings_for
from metis_compaction_tui.error_text import error_line, source_workspace
from metis_compaction_tui.safe_text import safe_text
from metis_compaction_tui.sources.base import SessionSource
from metis_compaction_tui.sources.session_data import money

State = Literal[
    "previewing", "ready", "nothing", "summarizing", "review", "committing", "done", "failed"
]
# Where a committed compaction goes from here, by SessionSource.compaction_lands.
AFTER_COMPACTION = {
    "store": "metis dev picks the change up at its next turn.",
    "memory": "The session is held in memory only.",
    "what_if": "A what-if: the transcript is unchanged; new lines still tail in.",
}


TITLE_CHARS = 200  # a session title's bound (untrusted text); the dialog's width cuts it first


def preview_facts(preview: CompactionPreview, price_origin: str | None = None) -> Text:
    """The preview as facts; `price_origin` defaults to the preview's own."""
    span = preview.span
    text = Text(end="")

    def fact(name: str, value: str, style: str = "") -> None:
        text.append(f"{name:>14}  ", style="bold")
        text.append(value + "\n", style=style)

    fact(
        "span",
        f"messages {span.start}–{span.compaction_watermark - 1} ({span.span_message_count:,} msgs)",
    )
    if span.slid_back_by:
        fact(
            "watermark",
            f"{span.compaction_watermark}, slid back {span.slid_back_by} for a tool cycle",
        )
    fact("tokens in", f"{span.span_tokens:,} of {span.pending_history_tokens:,} pending")
    fact(
        "model",
        preview.model + (f" ({OFFLINE}, no cost)" if is_offline(preview.model) else ""),
    )
    if preview.endpoint:  # where the session (and the key) would go
        fact("endpoint", preview.endpoint)
    saves = preview.expected_saved_tokens
    fact(
        "strategy",
        f"{preview.strategy}: {preview.action}"
        + (f", about {saves:,} tokens fewer" if saves is not None else ""),
    )
    if preview.action == "mask":
        fact("call", "none: long tool results become placeholders, cost $0", "bold")
        fact("budget", f"{money(preview.spent_usd)} of {money(preview.budget_usd)} spent")
        return text
    if preview.cache_hit:
        fact("cache", "HIT: the summary is already cached, no call, cost $0", "bold")
    else:
        fact("cache", "miss: the model will be called")
    named = named_price_origin(preview.price_origin if price_origin is None else price_origin)
    fact(
        "estimated cost",
        f"≤ {money(preview.estimated_cost_usd)}" + (f" ({named})" if named else ""),
    )
    fact("budget", f"{money(preview.spent_usd)} of {money(preview.budget_usd)} spent")
    text.append(f"{'cache key':>14}  ", style="bold")
    text.append(preview.cache_key, style="dim")
    return text


def _span_range(span: SpanPlan) -> str:
    return f"{span.start}–{span.compaction_watermark - 1}"


def prepared_line(prepared: PreparedCompaction, preview: CompactionPreview | None) -> Text:
    """The span the summary stands for. A session that moved on between the preview and the
    call (an agent writing, another compaction) was planned again: the line says so rather
    than showing the preview's span beside a summary of another one."""
    span = prepared.span
    text = Text(
        f"span {_span_range(span)} · {span.span_message_count:,} msgs · "
        f"{span.span_tokens:,} tokens · {prepared.model}",
        end="",
    )
    if preview is not None and (preview.span.start, preview.span.compaction_watermark) != (
        span.start,
        span.compaction_watermark,
    ):
        text.append(
            f" · the session moved on: the preview showed {_span_range(preview.span)}",
            style="italic",
        )
    return text


def review_text(prepared: PreparedCompaction) -> str:
    """What the user reads before accepting: the summary, or each placeholder a mask puts in."""
    if prepared.action != "mask":
        return prepared.summary
    placeholders = [
        block.content
        for message in prepared.replacement
        for block in message.content
        if isinstance(block, ToolResultContentBlock) and is_masked(block.content)
    ]
    return "\n".join(placeholders) or "(nothing to mask)"


def prepared_facts(prepared: PreparedCompaction) -> Text:
    text = Text(end="")
    if prepared.action == "mask":
        text.append("Mask ready · no call · ", style="bold")
        text.append(f"{prepared.tokens_in:,} tokens in · {prepared.strategy}")
        text.append(
            "\nThe placeholders are below. Accept (a) puts them in place of the tool results; "
            "reject (r) changes nothing.",
            style="italic",
        )
        return text
    text.append("Summary ready · ", style="bold")
    text.append("cache HIT, no call · " if prepared.cache_hit else "model called · ")
    text.append(
        f"{prepared.tokens_in:,} → {prepared.tokens_out:,} tokens · {money(prepared.cost_usd)} · "
        f"{prepared.latency_ms:,} ms · {prepared.model}"
    )
    text.append(
        "\nRead it below. Accept (a) splices it in place of the span; reject (r) changes nothing.",
        style="italic",
    )
    return text


class CompactNowScreen(ModalScreen[CompactionOutcome | None]):
    BINDINGS: ClassVar[list[BindingType]] = bindings_for("compact")

    def __init__(self, source: SessionSource, session_id: str, title: str) -> None:
        super().__init__()
        self.source, self.session_id, self.session_title = source, session_id, title
        self.state: State = "previewing"
        self.preview: CompactionPreview | None = None
        self.no_span = ""  # why there is no span, when the preview finds none
        self.prepared: PreparedCompaction | None = None
        self.outcome: CompactionOutcome | None = None
        self.price_origin = ""  # where the model's price comes from, once previewed
        self._started = 0.0
        self._ticker: Timer | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="compact", classes="dialog"):
            heading = Text("Compact now · ", style="bold", end="")
            # Cut by the dialog's width as laid out (a wide terminal shows it whole), not here.
            heading.append_text(
                safe_text(self.session_title, "bold", single_line=True, max_chars=TITLE_CHARS)
            )
            yield Static(heading, classes="dialog-title")
            yield Static(Text("reading the span…", style="italic"), id="cn-preview")
            yield Input(
                placeholder="optional instructions for the summarizer · Enter to summarize",
                id="cn-instructions",
            )
            with Horizontal(id="cn-progress"):
                yield LoadingIndicator()
                yield Static("", id="cn-elapsed")
            with VerticalScroll(id="cn-summary"):
                yield Static("", id="cn-summary-text")
            yield Static("", id="cn-result")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Summarize ^r", id="summarize", variant="primary")
                yield Button("Accept (a)", id="accept", variant="success")
                yield Button("Reject (r)", id="reject", variant="error")
                yield Button("Close Esc", id="close")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#cn-instructions", Input).cursor_blink = False
        self._set_state("previewing")
        self._run_preview()

    # -- state --------------------------------------------------------------------------------

    def _set_state(self, state: State) -> None:
        self.state = state
        show = {
            "#cn-instructions": state in ("ready", "failed"),
            "#cn-progress": state in ("summarizing", "committing"),
            "#cn-summary": state in ("review", "committing")
            or (state == "done" and self.prepared is not None),
        }
        for selector, visible in show.items():
            self.query_one(selector).display = visible
        buttons = {
            "summarize": state in ("ready", "failed"),
            "accept": state == "review",
            "reject": state == "review",
        }
        for button_id, visible in buttons.items():
            self.query_one(f"#{button_id}", Button).display = visible
        self.refresh_bindings()
        if state in ("ready", "failed"):
            self.query_one("#cn-instructions", Input).focus()
        elif state == "review":
            self.query_one("#accept", Button).focus()
        elif state in ("done", "nothing"):
            self.query_one("#close", Button).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "summarize":
            return self.state in ("ready", "failed")
        if action in ("accept", "reject"):
            return self.state == "review"
        return True

    def _result(self, text: Text, kind: str = "") -> None:
        result = self.query_one("#cn-result", Static)
        result.update(text)
        result.set_classes(kind)
        result.display = bool(text.plain)

    # -- preview ------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="compact-now", exit_on_error=False)
    def _run_preview(self) -> None:
        try:
            with self.source.managing(self.session_id) as manager:
                preview = manager.preview(None)
                if preview is None:
                    self.no_span = no_span_reason(
                        len(manager.history),
                        manager.config.compaction_preserve_recent_turns,
                        manager.plan().floor,
                    )
        except Exception as error:  # e.g. a summarizer that cannot be made (no key, bad model)
            self.app.call_from_thread(self._failed, self._problem(error, "previewing"))
            return
        self.app.call_from_thread(self._previewed, preview)

    def _previewed(self, preview: CompactionPreview | None) -> None:
        if not self.is_attached:
            return
        self.preview = preview
        if preview is None:
            self.query_one("#cn-preview", Static).update(
                Text(f"Nothing to compact: {self.no_span} (§3.2-§3.3). Nothing was changed.")
            )
            self._set_state("nothing")
            return
        self.price_origin = preview.price_origin
        self.query_one("#cn-preview", Static).update(preview_facts(preview))
        self._result(Text(""))
        self._set_state("ready")

    # -- summarize ----------------------------------------------------------------------------

    @on(Input.Submitted, "#cn-instructions")
    def _submitted(self) -> None:
        self.action_summarize()

    def action_summarize(self) -> None:
        if self.state not in ("ready", "failed"):
            return
        instructions = self.query_one("#cn-instructions", Input).value.strip() or None
        self._set_state("summarizing")
        self._started = time.monotonic()
        self._ticker = self.set_interval(0.1, self._tick)
        self._tick()
        self._result(Text(""))
        self._run_prepare(instructions)

    def _tick(self) -> None:
        elapsed = time.monotonic() - self._started
        span = self.preview.span if self.preview else None
        what = f"{span.span_message_count:,} msgs, {span.span_tokens:,} tokens" if span else ""
        verb = "committing" if self.state == "committing" else "summarizing"
        self.query_one("#cn-elapsed", Static).update(
            Text(
                f" {verb} {what} · {elapsed:.1f} s · the app stays usable; Esc closes",
                style="italic",
            )
        )

    def _stop_ticker(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None

    @work(thread=True, exclusive=True, group="compact-now", exit_on_error=False)
    def _run_prepare(self, instructions: str | None) -> None:
        async def prepare(manager: SessionManager) -> PreparedCompaction:
            try:
                return await manager.prepare(instructions)
            finally:
                await manager.aclose()

        try:
            with self.source.managing(self.session_id) as manager:
                prepared = asyncio.run(prepare(manager))
        except Exception as error:  # a failed call, nothing to compact any more, or a bug
            self.app.call_from_thread(self._failed, self._problem(error, "summarizing"))
            return
        self.app.call_from_thread(self._prepared, prepared)

    def _problem(self, error: BaseException, doing: str) -> str:
        """A failed step as one plain line; a bug's traceback goes to the workspace's log."""
        return error_line(error, doing, workspace=source_workspace(self.source))

    def _prepared(self, prepared: PreparedCompaction) -> None:
        self._stop_ticker()
        if not self.is_attached:
            return
        self.prepared = prepared
        # Room for the summary: the preview shrinks to one line, of the span summarized.
        self.query_one("#cn-preview", Static).update(prepared_line(prepared, self.preview))
        self.query_one("#cn-summary-text", Static).update(safe_text(review_text(prepared)))
        self._result(prepared_facts(prepared))
        self._set_state("review")

    def _failed(self, problem: str) -> None:
        self._stop_ticker()
        if not self.is_attached:
            return
        text = Text("✗ ", style="bold", end="")
        text.append_text(safe_text(problem))
        text.append(
            "\nNothing was changed. Edit the instructions and press Enter to try again.",
            style="italic",
        )
        self._result(text, "error")
        if self.preview is None:
            self.query_one("#cn-preview", Static).update(Text("no preview", style="italic"))
        self._set_state("failed")

    # -- accept / reject ----------------------------------------------------------------------

    def action_accept(self) -> None:
        if self.state != "review" or self.prepared is None:
            return
        self._set_state("committing")
        self._started = time.monotonic()
        self._ticker = self.set_interval(0.1, self._tick)
        self._run_commit(self.prepared)

    @work(thread=True, exclusive=True, group="compact-now", exit_on_error=False)
    def _run_commit(self, prepared: PreparedCompaction) -> None:
        try:
            with self.source.managing(self.session_id) as manager:
                outcome = manager.commit(prepared)
        except SpanChanged as error:
            self.app.call_from_thread(self._span_changed, self._problem(error, "committing"))
            return
        except Exception as error:
            self.app.call_from_thread(self._failed, self._problem(error, "committing"))
            return
        self.app.call_from_thread(self._committed, outcome)

    def _committed(self, outcome: CompactionOutcome) -> None:
        self._stop_ticker()
        if not self.is_attached:
            return
        self.outcome = outcome
        if outcome.status != "compacted" or outcome.record is None:
            detail = outcome.error_message or outcome.failure_mode or outcome.status
            self._failed(f"the summary was refused ({outcome.failure_mode}): {detail}")
            return
        record = outcome.record
        text = Text("✓ Compacted. ", style="bold", end="")
        now = (
            f"masked copies of {record.span_token_count_out:,} tokens"
            if record.kind == "mask"
            else f"one summary of {record.span_token_count_out:,} tokens"
        )
        text.append(
            f"Messages {record.watermark_before}–{record.watermark_after - 1} "
            f"({record.span_message_count:,}, {record.span_token_count_in:,} tokens) are now "
            f"{now}; the originals are archived (u undoes). "
            f"{AFTER_COMPACTION[self.source.compaction_lands]}"
        )
        self._result(text, "success")
        self._set_state("done")

    def _span_changed(self, detail: str) -> None:
        self._stop_ticker()
        if not self.is_attached:
            return
        text = Text("The session changed before the summary could be spliced: ", "bold", end="")
        text.append_text(safe_text(detail))
        text.append(
            ". Another process (metis dev's own compaction, an undo) rewrote those messages "
            "first. Nothing was written; the summary stays in the cache. Here is a fresh preview."
        )
        self._result(text, "warning")
        self.prepared = None
        self._set_state("previewing")
        self._run_preview()

    def action_reject(self) -> None:
        if self.state != "review":
            return
        self.prepared = None
        self._result(
            Text(
                "Rejected: nothing was changed. Edit the instructions to try again, or close.",
                style="italic",
            )
        )
        self._set_state("ready")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        actions = {
            "summarize": self.action_summarize,
            "accept": self.action_accept,
            "reject": self.action_reject,
            "close": self.action_close,
        }
        if event.button.id in actions:
            actions[event.button.id]()

    def action_close(self) -> None:
        self._stop_ticker()
        self.dismiss(self.outcome)
