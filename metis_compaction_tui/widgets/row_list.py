"""A virtualised one-line-per-row list on Textual's Line API, with a cursor and follow mode.

Only the rows on screen are rendered (`render_line`), each once per change (an LRU of strips), so
100,000 rows cost what 30 do. Follow mode is one reactive (toolong's pattern): new rows scroll in
while it is on; moving the cursor up, paging up or scrolling the wheel up turns it off; End turns
it back on.
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip


class RowList(ScrollView, can_focus=True):
    """Subclasses give `row_count` and `render_row`; rows are plain `Text` built safely."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor_up", "Up", show=False),
        Binding("down,j", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up_rows", "Page up", show=False),
        Binding("pagedown", "page_down_rows", "Page down", show=False),
        Binding("home,g", "cursor_home", "Oldest", show=False),
        Binding("end,G", "cursor_end", "Newest", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "rowlist--cursor",
        "rowlist--cursor-unfocused",
        "rowlist--empty",
    }

    cursor: reactive[int] = reactive(-1, repaint=False)
    follow: reactive[bool] = reactive(True)

    class FollowChanged(Message):
        def __init__(self, row_list: RowList, follow: bool) -> None:
            super().__init__()
            self.row_list = row_list
            self.follow = follow

        @property
        def control(self) -> RowList:
            return self.row_list

    class Highlighted(Message):
        def __init__(self, row_list: RowList, index: int) -> None:
            super().__init__()
            self.row_list = row_list
            self.index = index

        @property
        def control(self) -> RowList:
            return self.row_list

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, RowList.Highlighted) and message.row_list is self.row_list

    empty_text = "nothing yet"

    def __init__(
        self, *, name: str | None = None, id: str | None = None, follow: bool = True
    ) -> None:
        super().__init__(name=name, id=id)
        self.set_reactive(RowList.follow, follow)
        self._strips: LRUCache[tuple[int, bool, bool, int, object], Strip] = LRUCache(maxsize=512)
        self._base_style: Style | None = None  # self.rich_style, kept until the styles change

    # -- what subclasses provide ------------------------------------------------------------

    def row_count(self) -> int:
        raise NotImplementedError

    def render_row(self, index: int, width: int) -> Text:
        raise NotImplementedError

    def row_state(self, index: int) -> object:
        """What besides the index decides how a row looks (part of its cached strip's key), so an
        append redraws only the rows that changed. None: the index alone."""
        return None

    # -- data changes --------------------------------------------------------------------------

    def rows_replaced(self) -> None:
        """Every row may have changed (a compaction renumbers them): drop all cached strips."""
        self._strips.clear()
        self._sync_size()
        if self.follow or self.cursor >= self.row_count():
            self._go_end(now=True)
        self.refresh()

    def rows_changed_from(self, row: int) -> None:
        """Rows from `row` on hold other content now: their cached strips go."""
        cached = list(self._strips.keys())  # an LRUCache is not iterable itself
        for key in cached:
            if key[0] >= row:
                self._strips.discard(key)

    def rows_appended(self) -> None:
        """Rows were added at the end; earlier rows keep their strips (a row whose look depends
        on more than its index says so in `row_state`)."""
        self._sync_size()
        if self.follow:
            self._go_end(now=True)
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()  # a theme change recolours every row
        self._base_style = None

    def _row_base_style(self) -> Style:
        """The widget's own style under each row. Textual works it out from every ancestor on
        each call (tens of µs, once per new row on every append); it changes only with the
        styles (theme, focus), which notify_style_update reports."""
        if self._base_style is None:
            self._base_style = self.rich_style
        return self._base_style

    def _sync_size(self) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, self.row_count())

    def on_resize(self, event: events.Resize) -> None:
        self._strips.clear()
        self._sync_size()
        if self.follow:
            self._go_end()

    def on_mount(self) -> None:
        self._sync_size()

    # -- rendering -----------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        index = self.scroll_offset.y + y
        count = self.row_count()
        if count == 0:
            if y == 0:
                style = self.get_component_rich_style("rowlist--empty")
                strip = Strip([Segment(f" {self.empty_text}"[:width], style)])
                return strip.extend_cell_length(width).apply_style(self._row_base_style())
            return Strip.blank(width, self._row_base_style())
        if index >= count:
            return Strip.blank(width, self._row_base_style())
        selected = index == self.cursor
        key = (index, selected, self.has_focus, width, self.row_state(index))
        strip = self._strips.get(key)
        if strip is None:
            text = self.render_row(index, width)
            text.no_wrap = True
            text.overflow = "ellipsis"
            text.truncate(width, overflow="ellipsis", pad=True)
            if selected:
                name = "rowlist--cursor" if self.has_focus else "rowlist--cursor-unfocused"
                text.stylize(self.get_component_rich_style(name))
            segments = list(text.render(self.app.console))
            strip = Strip(segments).apply_style(self._row_base_style()).adjust_cell_length(width)
            self._strips[key] = strip
        return strip

    def _refresh_row(self, index: int) -> None:
        if index >= 0:
            self.refresh_line(index - self.scroll_offset.y)

    def watch_cursor(self, old: int, new: int) -> None:
        self._refresh_row(old)
        self._refresh_row(new)
        if new >= 0:
            self.post_message(self.Highlighted(self, new))

    def watch_follow(self, follow: bool) -> None:
        self.set_class(follow, "-follow")
        if follow:
            self._go_end()
        self.post_message(self.FollowChanged(self, follow))

    def on_focus(self) -> None:
        self._strips.clear()
        self._base_style = None
        self.refresh()

    def on_blur(self) -> None:
        self._strips.clear()
        self._base_style = None
        self.refresh()

    # -- movement ------------------------------------------------------------------------------

    def _go_end(self, *, now: bool = False) -> None:
        self.cursor = self.row_count() - 1
        if now and self.size.height and self.show_vertical_scrollbar:
            # Rows came or went, the widget kept its size and its scrollbar: the end is known
            # now, so new rows are in the very next frame (scroll_end waits for a refresh and
            # draws one more frame before they show; tests/perf/bench_app.py).
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)
        else:
            # Not laid out yet, or resized: the end is known after the next layout (and when
            # the list first needs a scrollbar, watch_show_vertical_scrollbar goes there).
            self.scroll_end(animate=False, x_axis=False)

    def watch_show_vertical_scrollbar(self, shown: bool) -> None:
        """The list just grew taller than the widget (a session loaded, or enough rows came).
        Until now Textual refused to scroll it, so a scroll_end that ran before this layout did
        nothing and the list stayed at its top: seen in bench_app.py, a session that opened at
        row 0 of 1,004 with follow on. Go to the end now, and put the new scrollbar's thumb
        where the list is."""
        if not shown:
            return
        if self.follow:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)
        self.vertical_scrollbar.position = self.scroll_y

    def _move(self, to: int) -> None:
        count = self.row_count()
        if count == 0:
            return
        to = max(0, min(count - 1, to))
        if to < count - 1 or to < self.cursor:
            self.follow = False  # looking back pauses follow
        self.cursor = to
        self._scroll_cursor_into_view()

    def _scroll_cursor_into_view(self) -> None:
        height = self.scrollable_content_region.height
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False)

    def action_cursor_up(self) -> None:
        self._move(self.cursor - 1)

    def action_cursor_down(self) -> None:
        self._move(self.cursor + 1)

    def action_page_up_rows(self) -> None:
        self._move(self.cursor - max(1, self.scrollable_content_region.height - 1))

    def action_page_down_rows(self) -> None:
        self._move(self.cursor + max(1, self.scrollable_content_region.height - 1))

    def action_cursor_home(self) -> None:
        self._move(0)

    def action_cursor_end(self) -> None:
        self.follow = True
        self._go_end()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self.follow = False  # the wheel up is "I want to read back"; the scroll itself still runs

    def on_click(self, event: events.Click) -> None:
        index = self.scroll_offset.y + event.y
        if 0 <= index < self.row_count():
            self._move(index)
            if event.chain >= 2:
                self.row_activated(index)

    def row_activated(self, index: int) -> None:
        """Enter or a double click on a row; subclasses post their own message."""
