"""The rows of compaction-cache.sqlite (§5.2), through engine.AsyncCompactionCache.

Sorted in SQL by any §5.2 column (s cycles, a header click picks, v reverses), filtered by key,
model or summary text; evict a row, trim to N, clear, each confirmed. The "backs" column says
which sessions' live summaries came from a row (their record's cache_key), read in a thread.
Evicting never touches a session: its summary lives in the store; only a re-run pays again.
"""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Input, Static

from engine import CacheRow, ledger_counts
from metis_compaction_tui.actions import bindings_for
from metis_compaction_tui.error_text import error_line, source_workspace
from metis_compaction_tui.safe_text import safe_text
from metis_compaction_tui.screens.confirm import ConfirmScreen
from metis_compaction_tui.screens.trim import TrimScreen
from metis_compaction_tui.sources.base import SessionSource

# (column key, header, §5.2 column it sorts by or None for a local sort, width)
COLUMNS: tuple[tuple[str, str, str | None, int], ...] = (
    ("key", "key", "cache_key", 12),  # the first 12 hex digits; the detail pane has all 64
    ("model", "model", "summarization_model", 16),
    ("prompt", "prompt", "summarization_prompt_version", 6),
    ("msgs", "msgs", "span_message_count", 5),
    ("in", "tok in", "span_token_count_in", 7),
    ("out", "tok out", "span_token_count_out", 7),
    ("created", "created", "created_at_ms", 7),
    ("read", "last read", "last_read_at_ms", 9),
    ("uses", "uses", "use_count", 5),
    ("backs", "backs", None, 5),
)
SORTABLE = [c for c in COLUMNS if c[2] is not None]


def age(ms: int, now_ms: int | None = None) -> str:
    """How long ago, in one short word: now · 42s · 5m · 3h · 12d."""
    if ms <= 0:
        return "—"
    seconds = max(0, ((now_ms if now_ms is not None else time.time() * 1000) - ms) / 1000)
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return "now"


class CacheBrowserScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = bindings_for("cache")

    def __init__(self, source: SessionSource) -> None:
        super().__init__()
        self.source = source
        self.cache = source.open_cache()
        self.rows: list[CacheRow] = []
        self.backers: dict[str, list[tuple[str, str]]] = {}
        self.order_by = "last_read_at_ms"
        self.descending = True
        self.filter_text = ""
        self.problem: str | None = None
        self._filter_timer: Timer | None = None
        self._total = 0  # rows in the whole cache, not just the filtered ones

    def compose(self) -> ComposeResult:
        with Vertical(id="cache"):
            yield Static("", id="cache-status")
            filter_input = Input(
                placeholder="/ filter: key, model or summary text", id="cache-filter", compact=True
            )
            filter_input.cursor_blink = False
            yield filter_input
            table: DataTable[Text] = DataTable(
                id="cache-table", cursor_type="row", zebra_stripes=True
            )
            yield table
            yield Static("", id="cache-detail")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, header, _, width in COLUMNS:
            table.add_column(Text(header), key=key, width=width)
        table.border_title = "Compaction cache"
        table.focus()
        self.action_refresh()
        self._load_backers()

    # -- reading ------------------------------------------------------------------------------

    def action_refresh(self) -> None:
        self._load_rows()

    @work(exclusive=True, group="cache-rows", exit_on_error=False)
    async def _load_rows(self) -> None:
        if self.cache is None:
            self._show_problem("this source has no compaction cache (a transcript or a test)")
            return
        try:
            rows = await self.cache.list_rows(
                order_by=self.order_by,
                descending=self.descending,
                filter_text=self.filter_text or None,
            )
            total = await self.cache.count()
        except Exception as error:  # CacheUnavailable, or a bug: one plain line either way
            self._show_problem(self._problem(error, "reading the cache"))
            return
        self.problem = None
        self.rows = rows
        self._fill(total)

    @work(thread=True, exclusive=True, group="cache-backers", exit_on_error=False)
    def _load_backers(self) -> None:
        try:
            backers = self.source.cache_backers()
        except Exception as error:  # SourceUnavailable, or a bug: one plain line either way
            problem = self._problem(error, "reading the cache's sessions")
            self.app.call_from_thread(self.notify, problem, severity="warning", markup=False)
            return
        self.app.call_from_thread(self._set_backers, backers)

    def _set_backers(self, backers: dict[str, list[tuple[str, str]]]) -> None:
        self.backers = backers
        if self.is_attached:
            self._fill(None)

    def _backs(self, key: str) -> Text:
        sessions = self.backers.get(key, [])
        return Text(str(len(sessions)) if sessions else "—", justify="right")

    def _fill(self, total: int | None) -> None:
        table = self.query_one(DataTable)
        keep = table.cursor_row
        table.clear()
        for row in self.rows:
            table.add_row(
                Text(row.cache_key[:12]),
                safe_text(row.summarization_model, single_line=True, max_chars=16),
                safe_text(row.summarization_prompt_version, single_line=True, max_chars=10),
                Text(f"{row.span_message_count:,}", justify="right"),
                Text(f"{row.span_token_count_in:,}", justify="right"),
                Text(f"{row.span_token_count_out:,}", justify="right"),
                Text(age(row.created_at_ms), justify="right"),
                Text(age(row.last_read_at_ms), justify="right"),
                Text(f"{row.use_count:,}", justify="right"),
                self._backs(row.cache_key),
                key=row.cache_key,
            )
        if self.rows:
            table.move_cursor(row=min(max(keep, 0), len(self.rows) - 1))
        self._status(total)
        self._detail()

    def _status(self, total: int | None) -> None:
        if total is not None:
            self._total = total
        total = self._total
        arrow = "↓" if self.descending else "↑"
        text = Text(
            f" {len(self.rows):,} of {total:,} rows · sorted by {self.order_by} {arrow}", end=""
        )
        if self.filter_text:
            text.append(" · filter ")
            text.append_text(safe_text(self.filter_text, "bold", single_line=True, max_chars=40))
        if self.cache is not None:
            text.append(f" · {self.cache.path}", style="dim")
        self.query_one("#cache-status", Static).update(text)

    def _problem(self, error: BaseException, doing: str) -> str:
        return error_line(error, doing, workspace=source_workspace(self.source))

    def _show_problem(self, problem: str) -> None:
        self.problem = problem
        text = Text("⚠ ", style="bold", end="")
        text.append_text(safe_text(problem))
        status = self.query_one("#cache-status", Static)
        status.update(text)
        status.add_class("error")

    def selected_row(self) -> CacheRow | None:
        table = self.query_one(DataTable)
        if not self.rows or table.cursor_row < 0 or table.cursor_row >= len(self.rows):
            return None
        return self.rows[table.cursor_row]

    @on(DataTable.RowHighlighted)
    def _highlighted(self) -> None:
        self._detail()

    def _detail(self) -> None:
        row = self.selected_row()
        detail = self.query_one("#cache-detail", Static)
        if row is None:
            detail.update(Text("no row selected", style="italic"))
            return
        text = Text(end="")
        text.append("key ", style="bold")
        text.append(row.cache_key)
        sessions = self.backers.get(row.cache_key, [])
        text.append("\nbacks ", style="bold")
        if sessions:
            for number, (session_id, title) in enumerate(sessions):
                text.append(", " if number else "")
                text.append_text(safe_text(title or session_id, single_line=True, max_chars=40))
        else:
            text.append("no live summary in this workspace's sessions", style="italic")
        ledger = ledger_counts(row.summary_text)
        text.append("\nledger ", style="bold")
        text.append(f"{ledger.restored} restored, {ledger.dropped} left out")
        text.append("\nsummary ", style="bold")
        text.append_text(safe_text(row.summary_text, single_line=True, max_chars=400))
        detail.update(text)

    # -- sorting and filtering ----------------------------------------------------------------

    @on(DataTable.HeaderSelected)
    def _header(self, event: DataTable.HeaderSelected) -> None:
        column = COLUMNS[event.column_index]
        if column[2] is None:
            self.rows.sort(key=lambda r: len(self.backers.get(r.cache_key, [])), reverse=True)
            self._fill(None)
            return
        if column[2] == self.order_by:
            self.descending = not self.descending
        else:
            self.order_by, self.descending = column[2], True
        self._load_rows()

    def action_sort_next(self) -> None:
        names = [c[2] for c in SORTABLE]
        self.order_by = names[(names.index(self.order_by) + 1) % len(names)]
        self._load_rows()

    def action_sort_reverse(self) -> None:
        self.descending = not self.descending
        self._load_rows()

    def action_filter(self) -> None:
        self.query_one("#cache-filter", Input).focus()

    @on(Input.Changed, "#cache-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        if self._filter_timer is not None:
            self._filter_timer.stop()
        self._filter_timer = self.set_timer(0.2, self._load_rows)

    @on(Input.Submitted, "#cache-filter")
    def _filter_submitted(self) -> None:
        self.query_one(DataTable).focus()

    # -- evict, trim, clear -------------------------------------------------------------------

    def action_evict(self) -> None:
        row = self.selected_row()
        if row is None or self.cache is None:
            self.notify("no cache row selected", severity="warning")
            return
        body = Text(end="")
        body.append(f"Delete cache row {row.cache_key[:16]}… ")
        body.append_text(
            safe_text(
                f"({row.summarization_model}, {row.span_message_count:,} msgs)", single_line=True
            )
        )
        sessions = len(self.backers.get(row.cache_key, []))
        body.append(
            f"?\nIt backs {sessions} live summar{'y' if sessions == 1 else 'ies'}; they stay in "
            "their sessions. Compacting the same span again would call the model again."
        )
        key = row.cache_key
        self.app.push_screen(
            ConfirmScreen("Evict cache row", body, yes="Evict"),
            lambda yes: self._evict(key) if yes else None,
        )

    @work(exclusive=True, group="cache-write", exit_on_error=False)
    async def _evict(self, key: str) -> None:
        assert self.cache is not None
        try:
            evicted = await self.cache.evict(key)
        except Exception as error:  # CacheUnavailable, or a bug: one plain line either way
            self._show_problem(self._problem(error, "reading the cache"))
            return
        self.notify("row evicted" if evicted else "that row was already gone")
        await self._load_rows().wait()

    def action_trim(self) -> None:
        if self.cache is None:
            return
        self.app.push_screen(TrimScreen(self._total), self._trim_to)

    def _trim_to(self, keep: int | None) -> None:
        if keep is None:
            return
        total = self._total
        body = Text(
            f"Keep the {keep:,} most recently read rows and evict {max(0, total - keep):,} "
            f"of {total:,}? Sessions keep their summaries."
        )
        self.app.push_screen(
            ConfirmScreen("Trim the cache", body, yes="Trim"),
            lambda yes: self._trim(keep) if yes else None,
        )

    @work(exclusive=True, group="cache-write", exit_on_error=False)
    async def _trim(self, keep: int) -> None:
        assert self.cache is not None
        try:
            evicted = await self.cache.trim(keep)
        except Exception as error:  # CacheUnavailable, or a bug: one plain line either way
            self._show_problem(self._problem(error, "reading the cache"))
            return
        self.notify(f"trimmed: {evicted:,} rows evicted")
        await self._load_rows().wait()

    def action_clear(self) -> None:
        if self.cache is None:
            return
        total = self._total
        body = Text(
            f"Delete all {total:,} cache rows? Sessions keep their summaries; every "
            "future compaction is a miss until the cache fills again."
        )
        self.app.push_screen(
            ConfirmScreen("Clear the cache", body, yes="Clear"),
            lambda yes: self._clear() if yes else None,
        )

    @work(exclusive=True, group="cache-write", exit_on_error=False)
    async def _clear(self) -> None:
        assert self.cache is not None
        try:
            evicted = await self.cache.clear()
        except Exception as error:  # CacheUnavailable, or a bug: one plain line either way
            self._show_problem(self._problem(error, "reading the cache"))
            return
        self.notify(f"cache cleared: {evicted:,} rows evicted")
        await self._load_rows().wait()

    async def action_close(self) -> None:
        self.dismiss(None)

    async def on_unmount(self) -> None:
        # aiosqlite runs a (non-daemon) thread per connection: left open, it would keep the
        # process alive after the app quits.
        if self.cache is not None:
            await self.cache.close()
