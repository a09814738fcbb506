"""Lines that fit: every widget picks the longest wording that fits its width, never a cut word."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rich.style import Style
from rich.text import Text


def fit(line: Text, width: int) -> Text:
    """One line cropped to `width` cells, with an ellipsis if anything was cut."""
    line = line.copy()
    line.no_wrap = True
    if line.cell_len > width:
        line.truncate(max(1, width), overflow="ellipsis")
    return line


def first_fitting(candidates: Iterable[Callable[[], Text]], width: int) -> Text:
    """The first candidate that fits; the last one, cropped, if none does."""
    last = Text("")
    for make in candidates:
        last = make()
        if last.cell_len <= width:
            return last
    return fit(last, width)


def lines(*rows: Text) -> Text:
    """Rows joined by newlines, as one Text for a widget's render()."""
    joined = Text(no_wrap=True, end="")
    for number, row in enumerate(rows):
        if number:
            joined.append("\n")
        joined.append_text(row)
    return joined


def append_cells(text: Text, cells: Iterable[tuple[str, Style]]) -> None:
    """Append cells one span per run of equal style: an 80-cell bar in four colours is four
    spans, not 80 (each span costs Textual's renderer on every frame that draws the line)."""
    run: list[str] = []
    run_style: Style | None = None
    for char, style in cells:
        if run and style != run_style:
            text.append("".join(run), run_style)
            run = []
        run_style = style
        run.append(char)
    if run:
        text.append("".join(run), run_style)
