"""The path a live append takes to the screen (issue 20, commit-to-screen): the message list
scrolls a new row in at once, draws again only the rows an append changed, and forgets rows a
recording rewrote; the bars are drawn one span per run of cells; the feed reads a waiting commit
before it refreshes the session list."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult

import metis_compaction_tui
import metis_compaction_tui.app as app_module
from engine import Message
from engine.store import SessionStore
from metis_compaction_tui.sources.session_data import Zone, ZoneRange
from metis_compaction_tui.widgets.fit import append_cells
from metis_compaction_tui.widgets.message_list import MessageList
from tests.app.app_helpers import assistant_text, loaded, make_app, user_text, wait_until

SIZE = (70, 12)
APP_CSS = Path(metis_compaction_tui.__file__).parent / "app.tcss"


class CountingList(MessageList):
    """A MessageList that notes which rows it renders (a cached strip is not rendered)."""

    def __init__(self) -> None:
        super().__init__(id="messages")
        self.rendered: list[int] = []

    def render_row(self, row: int, width: int) -> Text:
        self.rendered.append(row)
        return super().render_row(row, width)


class ListApp(App[None]):
    CSS_PATH = APP_CSS  # the zone colours

    def compose(self) -> ComposeResult:
        yield CountingList()


def chat(count: int, start: int = 0) -> list[Message]:
    return [
        user_text(f"m{i}", f"question {i}")
        if i % 2 == 0
        else assistant_text(f"m{i}", f"answer {i}")
        for i in range(start, start + count)
    ]


def zones(count: int, tail: int) -> list[ZoneRange]:
    """Everything in the span but the last `tail` messages (the preserved tail)."""
    return [ZoneRange(Zone.SPAN, 0, count - tail, 0), ZoneRange(Zone.TAIL, count - tail, count, 0)]


def bar_colour(rows: CountingList, row: int) -> object:
    """The colour of the zone bar, the first cell of a row's line."""
    first, *_ = rows.render_line(row)
    return first.style.color if first.style else None


def visible_rows(rows: CountingList) -> range:
    top = rows.scroll_offset.y
    return range(top, min(rows.row_count(), top + rows.scrollable_content_region.height))


def draw(rows: CountingList) -> None:
    """What a frame does with the list: every line on screen."""
    for y in range(rows.scrollable_content_region.height):
        rows.render_line(y)


async def test_an_append_scrolls_the_new_row_in_before_the_next_frame() -> None:
    """Follow mode puts the new end on screen when the rows are appended: the next frame draws
    it (scroll_end waited for a refresh, so the new row came one frame later)."""
    app = ListApp()
    async with app.run_test(size=SIZE) as pilot:
        rows = app.query_one(CountingList)
        messages = chat(40)
        rows.show(messages, [10] * 40, zones(40, 4))
        await pilot.pause()
        assert rows.scroll_offset.y == rows.max_scroll_y > 0
        messages.extend(chat(3, start=40))
        rows.tokens = [10] * 43
        rows.appended(zones(43, 4))
        # No pause: nothing has been laid out or drawn since the append.
        assert rows.cursor == 42
        assert 42 in visible_rows(rows)
        assert rows.scroll_offset.y == rows.max_scroll_y
        await pilot.pause()
        assert 42 in visible_rows(rows)


async def test_an_append_draws_only_new_rows_and_rows_it_changed() -> None:
    app = ListApp()
    async with app.run_test(size=SIZE) as pilot:
        rows = app.query_one(CountingList)
        messages = chat(40)
        rows.show(messages, [10] * 40, zones(40, 4))
        await pilot.pause()
        draw(rows)
        before = set(visible_rows(rows))
        rows.rendered.clear()
        messages.extend(chat(2, start=40))
        rows.tokens = [10] * 42
        rows.appended(zones(42, 4))  # rows 36 and 37 leave the tail for the span
        draw(rows)
        new_rows, left_the_tail, old_cursor = {40, 41}, {36, 37}, {39}
        assert set(rows.rendered) == new_rows | left_the_tail | old_cursor
        kept = (before & set(visible_rows(rows))) - left_the_tail - old_cursor
        assert kept and not kept & set(rows.rendered), "unchanged rows come from the cache"


async def test_a_row_whose_zone_changed_is_drawn_in_its_new_zone() -> None:
    app = ListApp()
    async with app.run_test(size=SIZE) as pilot:
        rows = app.query_one(CountingList)
        messages = chat(40)
        rows.show(messages, [10] * 40, zones(40, 4))
        await pilot.pause()
        span = rows.get_component_rich_style("messagelist--span")
        tail = rows.get_component_rich_style("messagelist--tail")
        row = 37 - rows.scroll_offset.y
        assert bar_colour(rows, row) == tail.color
        messages.extend(chat(2, start=40))
        rows.tokens = [10] * 42
        rows.appended(zones(42, 4))
        row = 37 - rows.scroll_offset.y
        assert bar_colour(rows, row) == span.color != tail.color


async def test_rows_a_recording_rewrote_are_drawn_again() -> None:
    """A transcript whose newest message changed (rewrite_from) keeps its row index: the cached
    strip must go, or the old text would stay on screen."""
    app = ListApp()
    async with app.run_test(size=SIZE) as pilot:
        rows = app.query_one(CountingList)
        messages = chat(30)
        rows.show(messages, [10] * 30, zones(30, 4))
        await pilot.pause()
        last = 29 - rows.scroll_offset.y
        assert "answer 29" in rows.render_line(last).text
        messages[29] = assistant_text("m29", "answer 29, now with a tool call")
        messages.append(user_text("m30", "question 30"))
        rows.tokens = [10] * 31
        rows.appended(zones(31, 4), changed_from=29)
        row = 29 - rows.scroll_offset.y
        assert "now with a tool call" in rows.render_line(row).text


def test_append_cells_draws_one_span_per_run_and_the_same_cells() -> None:
    red, blue = Style(color="red"), Style(color="blue")
    cells: Sequence[tuple[str, Style]] = [("█", red)] * 5 + [("│", blue)] + [("░", red)] * 3
    merged, one_by_one = Text(), Text()
    append_cells(merged, cells)
    for char, style in cells:
        one_by_one.append(char, style)
    assert merged.plain == one_by_one.plain == "█████│░░░"
    assert len(merged.spans) == 3 < len(one_by_one.spans) == 9
    for cell in range(len(cells)):
        assert merged.get_style_at_offset(_console(), cell) == one_by_one.get_style_at_offset(
            _console(), cell
        )


def _console():  # type: ignore[no-untyped-def]
    from rich.console import Console

    return Console()


async def test_the_feed_reads_a_waiting_commit_before_it_refreshes_the_session_list(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refreshing the list plans every session; done before the poll it held a commit that was
    already waiting for as long (about 50 ms a refresh on 10,000 messages, once a second)."""
    monkeypatch.setattr(app_module, "LIST_REFRESH_S", 0.0)  # a refresh on every round
    app = make_app(workspace)
    calls: list[str] = []
    source = app.source
    for name in ("sessions", "poll", "wait"):
        method = getattr(source, name)

        def logged(*args: object, _method: Any = method, _name: str = name) -> Any:
            calls.append(_name)
            return _method(*args)

        setattr(source, name, logged)
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot, app, "ledger")
        calls.clear()
        with SessionStore.open(workspace) as store:
            for turn in range(3):
                store.append_message("ledger", user_text(f"live-u{turn}", "more"), 5)
                store.append_message("ledger", assistant_text(f"live-a{turn}", "done"), 5)
                count = store.session_info("ledger").message_count
                await wait_until(pilot, lambda c=count: app.data.message_count == c)  # type: ignore[union-attr]
        await wait_until(pilot, lambda: calls.count("sessions") >= 3, what="list refreshes")
    refreshes = [i for i, name in enumerate(calls) if name == "sessions"]
    assert all(calls[i - 1] == "poll" for i in refreshes if i > 0), calls
