"""The session inspector: one screen a user reads at a glance, beside their agent, all day.

The app talks only to a `SessionSource` (the live store, or sessions in memory). A feed thread
owns the reading: it connects, loads the session being inspected, tails it and posts messages;
the UI thread only draws (toolong's split). Actions are declared once in `actions.py` and feed
the footer, the command palette and the help screen.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer, OptionList
from textual.worker import get_current_worker

from engine import CompactionConfig, CompactionOutcome
from metis_compaction_tui.actions import Scope, bindings_for, palette_entries
from metis_compaction_tui.error_text import error_line, source_workspace
from metis_compaction_tui.safe_text import safe_text
from metis_compaction_tui.screens.cache_browser import CacheBrowserScreen
from metis_compaction_tui.screens.compact_now import CompactNowScreen
from metis_compaction_tui.screens.confirm import ConfirmScreen
from metis_compaction_tui.screens.help import HelpScreen
from metis_compaction_tui.screens.knobs import KnobsScreen
from metis_compaction_tui.screens.message_detail import MessageDetailScreen
from metis_compaction_tui.screens.settings import SettingsScreen
from metis_compaction_tui.screens.summary_detail import SummaryDetailScreen
from metis_compaction_tui.signals import install_exit_signals
from metis_compaction_tui.sources.base import (
    ActionRefused,
    SessionRow,
    SessionSource,
    SourceUnavailable,
    StoreMissing,
)
from metis_compaction_tui.sources.session_data import SessionData
from metis_compaction_tui.ui_messages import (
    SessionGrew,
    SessionLoaded,
    SessionsListed,
    SourceProblem,
    SourceProgress,
    SourceRecovered,
)
from metis_compaction_tui.widgets.dashboard import Dashboard
from metis_compaction_tui.widgets.message_list import MessageList, kind_of
from metis_compaction_tui.widgets.no_store import NoStorePanel
from metis_compaction_tui.widgets.row_list import RowList
from metis_compaction_tui.widgets.session_list import SessionList
from metis_compaction_tui.widgets.status_bar import StatusBar
from metis_compaction_tui.widgets.store_banner import StoreBanner
from metis_compaction_tui.widgets.zone_legend import ZoneLegend

DARK, LIGHT = "textual-dark", "textual-light"
LIST_REFRESH_S = 1.0  # the session list's live pressure is redrawn at most this often
SCREEN_SCOPES: dict[type[Screen[object]], Scope] = {
    CacheBrowserScreen: "cache",
    SummaryDetailScreen: "summary",
    CompactNowScreen: "compact",
    KnobsScreen: "knobs",
}


class MetisInspector(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "metis compaction"
    BINDINGS: ClassVar[list[BindingType]] = bindings_for("app")

    def __init__(
        self,
        source: SessionSource,
        *,
        session_id: str | None = None,
        poll_interval_s: float = 0.25,
        theme: str = DARK,
    ) -> None:
        super().__init__()
        self.source = source
        self.data: SessionData | None = None
        self.rows: list[SessionRow] = []
        self.problem: str | None = None
        self._noted: set[tuple[str, str]] = set()  # (session, note) already shown
        self.poll_interval_s = poll_interval_s
        self._initial_theme = theme
        self._wanted = session_id
        self._wake = threading.Event()
        self._reload = threading.Event()
        self._stopping = False
        source.progress = lambda text: self.post_message(SourceProgress(text))

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        banner = StoreBanner(id="banner")
        banner.display = False
        yield banner
        with Horizontal(id="main"):
            with Vertical(id="side"):
                yield SessionList(id="sessions")
                yield ZoneLegend(id="legend")
            yield Dashboard(id="dashboard")
            no_store = NoStorePanel(id="no-store")
            no_store.display = False
            yield no_store
        yield Footer()

    def on_mount(self) -> None:
        # SIGTERM/SIGHUP quit through the exit path, which restores the terminal.
        self._uninstall_signals = install_exit_signals(self._exit_on_signal)
        self.theme = self._initial_theme
        self.query_one(SessionList).border_title = "Sessions"
        self.query_one("#messages", MessageList).focus()
        self._feed()

    def watch_theme(self, theme: str) -> None:
        if self.is_mounted and self.screen.query("SessionList"):
            self.query_one(SessionList).restyle()

    # -- the feed (a thread: all reading happens here) ----------------------------------------

    @work(thread=True, exclusive=True, group="feed", exit_on_error=False, name="feed")
    def _feed(self) -> None:
        worker = get_current_worker()
        source = self.source
        connected = troubled = False
        loaded: str | None = None
        listed_at, relist = 0.0, False
        backoff = 0.25

        def list_sessions() -> None:
            nonlocal relist, listed_at
            self.rows = source.sessions()
            self.post_message(SessionsListed(self.rows))
            relist, listed_at = False, time.monotonic()

        while not worker.is_cancelled and not self._stopping:
            self._wake.clear()
            try:
                if not connected:
                    source.open()
                    connected, backoff, loaded = True, 0.25, None
                    relist, listed_at = True, 0.0
                due = relist and time.monotonic() - listed_at >= LIST_REFRESH_S
                if due and loaded is None:  # nothing shown yet: the list picks the session
                    list_sessions()
                wanted = self._wanted or _first_readable(self.rows)
                if wanted is not None and (wanted != loaded or self._reload.is_set()):
                    self._reload.clear()
                    self.post_message(SessionLoaded(source.load(wanted)))
                    # Its row's figures changed with it (a transcript read the first time, a
                    # what-if undone): the list is read again.
                    loaded, relist = wanted, True
                for change in source.poll():
                    relist = relist or bool(
                        change.sessions_changed or change.new_messages or change.compacted
                    )
                    if change.session_id != loaded:
                        continue
                    if change.compacted:
                        self.post_message(SessionLoaded(source.load(loaded)))
                    elif (
                        change.new_messages
                        or change.new_events
                        or change.spent_usd is not None
                        or change.agent is not None
                    ):
                        self.post_message(SessionGrew(change))
                # After the poll: a commit that is waiting is read and posted before the list
                # (every session planned) is refreshed.
                if relist and time.monotonic() - listed_at >= LIST_REFRESH_S:
                    list_sessions()
                if troubled:
                    # "Back" is said once a full round has worked, not on opening (a transcript
                    # opens even while reading it fails), and from this thread's own record of
                    # the failure, so it comes after the problem it answers.
                    troubled = False
                    self.post_message(SourceRecovered())
            except SourceUnavailable as error:
                connected, troubled = False, True
                source.close()
                missing = error.path if isinstance(error, StoreMissing) else None
                self.post_message(SourceProblem(error_line(error, "reading"), missing))
                self._wake.wait(backoff)
                backoff = min(backoff * 2, 2.0)
                continue
            except Exception as error:  # a bug or a surprise: shown, and the feed carries on
                connected, troubled = False, True
                source.close()
                problem = error_line(error, "reading", workspace=source_workspace(source))
                self.post_message(SourceProblem(problem))
                self._wake.wait(2.0)
                continue
            # A file event ends the wait early in both cases: a due relist only shortens it.
            source.wait(
                min(self.poll_interval_s, LIST_REFRESH_S) if relist else self.poll_interval_s,
                self._wake,
            )
        source.close()

    def _poke_feed(self, *, reload: bool = False) -> None:
        if reload:
            self._reload.set()
        self._wake.set()

    def on_unmount(self) -> None:
        self._stopping = True
        self._wake.set()
        gc.unfreeze()  # in a longer-lived process (the tests) nothing of this app stays frozen
        uninstall = getattr(self, "_uninstall_signals", None)
        if uninstall is not None:
            uninstall()

    # -- what the feed posts ------------------------------------------------------------------

    def on_sessions_listed(self, message: SessionsListed) -> None:
        current = self.data.session_id if self.data else self._wanted
        try:
            sessions = self.query_one(SessionList)
        except NoMatches:  # the app is closing (see on_session_loaded)
            return
        sessions.show(message.rows, current)

    def on_session_loaded(self, message: SessionLoaded) -> None:
        data = message.data
        wanted = self._wanted or data.session_id
        if data.session_id != wanted:
            return  # the user picked another session while this one was read
        self.data = data
        self._note_once(data)
        try:
            self.query_one(StatusBar).busy = ""
            self.query_one(Dashboard).show(data)
            self._update_status()
            sessions = self.query_one(SessionList)
        except NoMatches:  # the app is closing: the feed thread posted what it read meanwhile
            return
        if sessions.current != data.session_id and sessions.rows:
            sessions.show(sessions.rows, data.session_id)
        self.call_after_refresh(self._settle_heap)

    @staticmethod
    def _settle_heap() -> None:
        """After a session is shown (so not before its first frame): what was loaded lives
        until the next load, so it is frozen out of the cyclic GC's full passes. Each of those
        walked every object of the session, stalling the screen and the feed mid-stream: 82 ms
        on 10,000 messages here, 250 ms on a loaded machine (the p95 of bench_app.py). What the
        previous load left in cycles is collected first, so a reload frees it."""
        gc.unfreeze()
        gc.collect()
        gc.freeze()

    def on_session_grew(self, message: SessionGrew) -> None:
        data, change = self.data, message.change
        if data is None or data.session_id != change.session_id:
            return
        added, events = data.grow(change)
        if change.agent is not None:
            self._note_once(data)
        if added or events or change.spent_usd is not None or change.agent is not None:
            try:
                rewritten = change.rewrite_from if added else None
                more = bool(events or change.spent_usd is not None or change.agent is not None)
                self.query_one(Dashboard).grew(added, events, rewritten, panels_now=more)
                self._update_status()
            except NoMatches:  # the app is closing (see on_session_loaded)
                return

    def on_source_progress(self, message: SourceProgress) -> None:
        try:
            self.query_one(StatusBar).busy = message.text
        except NoMatches:  # the app is closing (see on_session_loaded)
            return

    def on_source_problem(self, message: SourceProblem) -> None:
        self.problem = message.problem
        try:
            self.query_one(StatusBar).busy = ""
            if message.missing_store is not None and self.data is None:
                # Nothing was ever read: no figures of no session, but how a store comes about.
                self.query_one(Dashboard).display = False
                self.query_one(NoStorePanel).show_missing(message.missing_store)
            else:
                self.query_one(StoreBanner).show_problem(message.problem, self._noun)
        except NoMatches:  # the app is closing (see on_session_loaded)
            return

    def on_source_recovered(self, _: SourceRecovered) -> None:
        if self.problem is None:
            return
        self.problem = None
        try:
            self.query_one(StoreBanner).clear_problem()
            self.query_one(NoStorePanel).display = False
            self.query_one(Dashboard).display = True
        except NoMatches:  # the app is closing (see on_session_loaded)
            return
        self.notify(f"the {self._noun} is readable again; reloaded", timeout=3)

    @property
    def _noun(self) -> str:
        """What the source is, in the user's words: a store, or a transcript file (where a
        what-if is made): worded here from the source's data, not by the source."""
        return "file" if self.source.compaction_lands == "what_if" else "store"

    def _note_once(self, data: SessionData | None) -> None:
        """A transcript's import warnings (lines skipped, why it is empty) as one notice each,
        the first time they are seen, never again on a later poll."""
        agent = data.agent if data is not None else None
        if agent is None:
            return
        for note in agent.notes:
            key = (data.session_id, note)  # type: ignore[union-attr]
            if key not in self._noted:
                self._noted.add(key)
                text = safe_text(note, single_line=True, max_chars=300).plain
                self.notify(text, title=self._noun, severity="warning", timeout=8, markup=False)

    def _update_status(self) -> None:
        data = self.data
        status = self.query_one(StatusBar)
        if data is None:
            status.set_session(self.source.label, "", "")
            return
        detail = f"{data.message_count:,} msgs · rev {data.revision}"
        if data.read_only:
            detail += " · read-only"
        if data.trust_note:  # engine.workspace_trust: gated settings withheld (settings: s)
            detail += f" · {data.trust_note}"
        status.set_session(self.source.label, data.title, detail)

    # -- widgets talking up -------------------------------------------------------------------

    @on(RowList.FollowChanged, "#messages")
    def _follow_changed(self, event: RowList.FollowChanged) -> None:
        self.query_one(StatusBar).follow = event.follow

    @on(OptionList.OptionSelected, "#sessions")
    def _session_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.select_session(event.option.id)

    def select_session(self, session_id: str) -> None:
        if self.data is not None and self.data.session_id == session_id:
            return
        self._wanted = session_id
        sessions = self.query_one(SessionList)
        sessions.show(sessions.rows, session_id)
        self._poke_feed()

    def on_message_list_open(self, event: MessageList.Open) -> None:
        data = self.data
        if data is None:
            return
        message = event.message
        if kind_of(message) in ("summary", "truncation") and event.control.id == "messages":
            info = data.compaction_for(message)
            self.push_screen(
                SummaryDetailScreen(self.source, message, event.index, info, data.summarizer)
            )
            return
        tokens = data.history.tokens[event.index] if event.index < len(data.history) else 0
        self.push_screen(MessageDetailScreen(event.index, message, tokens))

    # -- actions (declared in actions.py) -----------------------------------------------------

    def _writable_session(self) -> SessionData | None:
        if self.data is None:
            self.notify("no session loaded yet", severity="warning")
            return None
        if self.data.read_only or "compact" not in self.source.actions:
            self.notify(f"{self.source.label} is read-only", severity="warning", markup=False)
            return None
        return self.data

    def action_compact_now(self) -> None:
        data = self._writable_session()
        if data is None:
            return
        self.push_screen(
            CompactNowScreen(self.source, data.session_id, data.title), self._compact_closed
        )

    def _compact_closed(self, outcome: CompactionOutcome | None) -> None:
        if outcome is not None and outcome.status == "compacted":
            self._poke_feed(reload=True)

    def action_undo_compaction(self) -> None:
        data = self._writable_session()
        if data is None:
            return
        latest = data.latest_compaction()
        if latest is None:
            self.notify("this session has no compaction to undo", severity="warning")
            return
        record = latest.record
        body = Text(
            f"Undo the latest compaction ({record.kind}) of messages {record.watermark_before}–"
            f"{record.watermark_after - 1}? The {record.span_message_count:,} archived originals "
            f"({record.span_token_count_in:,} tokens) go back in place of its "
            f"{record.replacement_count} message(s); pending tokens rise again."
        )
        self.push_screen(
            ConfirmScreen("Undo compaction", body, yes="Undo"),
            lambda yes: self._undo(data.session_id) if yes else None,
        )

    @work(thread=True, exclusive=True, group="undo", exit_on_error=False)
    def _undo(self, session_id: str) -> None:
        try:
            undone = self.source.undo_latest(session_id)
        except Exception as error:  # a refusal, the store, or a bug: one plain line either way
            verb = "refused" if isinstance(error, ActionRefused) else "failed"
            self._notify_error(f"undo {verb}", error, "undoing")
            return
        record = undone.record
        self.call_from_thread(
            self.notify,
            f"undone: messages {record.watermark_before}–{record.watermark_after - 1} are back",
        )
        self._poke_feed(reload=True)

    def _notify_error(self, what: str, error: BaseException, doing: str) -> None:
        """From a worker thread: `error` as one plain toast line (never markup, no key)."""
        line = error_line(error, doing, workspace=source_workspace(self.source))
        self.call_from_thread(
            self.notify, f"{what}: {line}", severity="error", timeout=8, markup=False
        )

    def action_cache_browser(self) -> None:
        self.push_screen(CacheBrowserScreen(self.source))

    def action_what_if(self) -> None:
        data = self.data
        if data is None:
            self.notify("no session loaded yet", severity="warning")
            return
        if "tune" not in self.source.actions:
            self.notify(
                "a metis store's knobs belong to metis dev; `inspect` a transcript for a what-if",
                severity="warning",
            )
            return
        session_id = data.session_id
        self.push_screen(
            KnobsScreen(data.config, data.title),
            lambda config: self._retune(session_id, config) if config is not None else None,
        )

    @work(thread=True, exclusive=True, group="knobs", exit_on_error=False)
    def _retune(self, session_id: str, config: CompactionConfig) -> None:
        try:
            self.source.set_config(session_id, config)
        except Exception as error:  # a refusal, the store, or a bug: one plain line either way
            self._notify_error("knobs not changed", error, "re-planning")
            return
        self.call_from_thread(
            self.notify,
            f"re-planned: threshold {config.compaction_threshold_tokens:,}, hard cap "
            f"{config.compaction_hard_cap_tokens:,}, preserve "
            f"{config.compaction_preserve_recent_turns}",
        )
        self._poke_feed()

    def action_toggle_follow(self) -> None:
        messages = self.query_one("#messages", MessageList)
        messages.follow = not messages.follow

    def action_open_selected(self) -> None:
        self.query_one("#messages", MessageList).action_open()

    def _step_session(self, step: int) -> None:
        rows = self.query_one(SessionList).rows
        if not rows:
            return
        ids = [row.session_id for row in rows]
        current = self.data.session_id if self.data else ids[0]
        index = ids.index(current) if current in ids else 0
        self.select_session(ids[(index + step) % len(ids)])

    def action_next_session(self) -> None:
        self._step_session(1)

    def action_previous_session(self) -> None:
        self._step_session(-1)

    def action_toggle_theme(self) -> None:
        self.theme = LIGHT if self.current_theme.dark else DARK

    def action_reload(self) -> None:
        self._poke_feed(reload=True)

    def action_settings(self) -> None:
        if self.data is None:
            self.notify("no session loaded yet", severity="warning")
            return
        self.push_screen(SettingsScreen(self.data))

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    async def action_quit(self) -> None:
        self._stopping = True
        self._wake.set()
        self.exit(0)

    def _exit_on_signal(self, code: int) -> None:
        self._stopping = True
        self._wake.set()
        self.exit(code)

    # -- the command palette: every action in the registry ------------------------------------

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """Ours (the actions of this screen and the app's), then Textual's own (theme picker,
        keys panel, maximize...) where ours has none of the same title."""
        scope = SCREEN_SCOPES.get(type(screen))
        scopes: list[Scope] = [scope, "app"] if scope else ["app"]
        ours: list[SystemCommand] = []
        for spec in palette_entries(scopes):
            target = screen if spec.scope != "app" else self
            help_text = f"{spec.shown_key} · {spec.description}" if spec.keys else spec.description
            ours.append(
                SystemCommand(spec.title, help_text, partial(target.run_action, spec.action))
            )
        ours.append(
            SystemCommand(
                "Screenshot", "Save an SVG of this screen", lambda: self.deliver_screenshot()
            )
        )
        titles = {command.title.casefold() for command in ours}
        yield from ours
        for command in super().get_system_commands(screen):
            if command.title.casefold() not in titles:
                yield command


def run_app(where: Path | SessionSource) -> int:
    """The `metis-compaction-tui` entry point (cli.py calls it): a workspace's store, or any
    source (`inspect` passes a TranscriptSource)."""
    from metis_compaction_tui.sources.store import StoreSource

    source = StoreSource(Path(where)) if isinstance(where, Path) else where
    result = MetisInspector(source).run()
    return 0 if result is None else int(result)


def _first_readable(rows: list[SessionRow]) -> str | None:
    """The session shown when none was asked for: the first one that is not known unreadable."""
    for row in rows:
        if row.problem is None:
            return row.session_id
    return rows[0].session_id if rows else None
