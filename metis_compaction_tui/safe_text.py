"""Untrusted text (message bodies, tool output, summaries, error strings) → rich `Text`, safely.

The one rule every view follows: text from the store is never parsed as markup, and nothing in it
can reach the terminal as a control sequence. `safe_text()` builds a `Text` directly (no markup
parse) from a string in which:

- escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL|ST`, DCS/SOS/PM/APC `ESC P|X|^|_ … ST`)
  and every other C0/C1 control character are shown as visible symbols (`ESC` → `␛`, `BEL` → `␇`,
  C1 → `⟨9B⟩`), so `\\x1b[2J` reads `␛[2J` and clears nothing;
- bidi overrides and isolates (U+202A–U+202E, U+2066–U+2069) are shown as `⟨U+202E⟩`, so they cannot
  reorder what a reader sees;
- lone surrogates become U+FFFD; CRLF is one line break, a lone CR shows as `␍`;
- newline and tab survive in block mode; in single-line mode (list rows) they become `⏎` and a
  space, and the line is cut at `max_chars` with an ellipsis.
"""

from __future__ import annotations

# typing.TYPE_CHECKING without importing typing (milliseconds on the status line's path).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from rich.style import Style, StyleType
    from rich.text import Text

# rich is imported by the functions that build a Text: `neutralise` alone (the CLI's output, the
# status line) must not pay tens of milliseconds for it.

ELLIPSIS = "…"
NEWLINE_MARK = " ⏎ "
LIST_LINE_CHARS = 400  # a list row never needs more: wider than any terminal
BLOCK_LINE_CHARS = 4_000  # one line in a detail view; past this it is cut and says so
BLOCK_TOTAL_CHARS = 200_000  # a whole detail view; a 5 MB tool result must not freeze the UI

_BIDI = frozenset(range(0x202A, 0x202F)) | frozenset(range(0x2066, 0x206A))


def _visible(code: int) -> str:
    """The visible stand-in for one control or bidi code point."""
    if code < 0x20:
        return chr(0x2400 + code)  # U+2400 Control Pictures: ␀ … ␟ (ESC is ␛)
    if code == 0x7F:
        return "␡"
    if 0x80 <= code <= 0x9F:
        return f"⟨{code:02X}⟩"
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    return f"⟨U+{code:04X}⟩"


def _build_table(keep_layout: bool) -> dict[int, str]:
    table = {code: _visible(code) for code in range(0x20)}
    table[0x7F] = _visible(0x7F)
    table.update({code: _visible(code) for code in range(0x80, 0xA0)})
    table.update({code: _visible(code) for code in _BIDI})
    table.update(dict.fromkeys(range(0xD800, 0xE000), "\ufffd"))  # lone surrogates
    if keep_layout:
        table[0x0A] = "\n"
        table[0x09] = "\t"
    else:
        table[0x0A] = NEWLINE_MARK
        table[0x09] = " "
    return table


# Built on first use, not at import: the status line imports this module on every call and
# almost never meets a control character.
_TABLES: dict[bool, dict[int, str]] = {}


def neutralise(text: str, *, single_line: bool = False) -> str:
    """The character-level transform alone: every control, C1 and bidi code point made visible."""
    # Every code point the tables change is unprintable (Unicode Cc, Cf or Cs), so printable
    # text, nearly all of it, is returned after one C scan.
    if text.isprintable():
        return text
    table = _TABLES.get(single_line)
    if table is None:
        table = _TABLES[single_line] = _build_table(keep_layout=not single_line)
    return text.replace("\r\n", "\n").translate(table)  # CRLF is one line break


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)] + ELLIPSIS


def _cut_block(text: str) -> str:
    """Cut each very long line, then the whole, saying how much was left out."""
    dropped = 0
    if len(text) > BLOCK_TOTAL_CHARS:
        dropped = len(text) - BLOCK_TOTAL_CHARS
        text = text[:BLOCK_TOTAL_CHARS]
    if any(len(line) > BLOCK_LINE_CHARS for line in text.split("\n")):
        text = "\n".join(
            line
            if len(line) <= BLOCK_LINE_CHARS
            else f"{line[:BLOCK_LINE_CHARS]}{ELLIPSIS} (+{len(line) - BLOCK_LINE_CHARS:,} chars)"
            for line in text.split("\n")
        )
    if dropped:
        text += f"\n{ELLIPSIS} ({dropped:,} more characters not shown)"
    return text


def safe_text(
    text: str,
    style: StyleType = "",
    *,
    single_line: bool = False,
    max_chars: int | None = None,
) -> Text:
    """Untrusted `text` as a `Text` that shows it literally. `single_line` for list rows (cut at
    `max_chars`, default LIST_LINE_CHARS); otherwise a block for detail views, long lines cut."""
    from rich.text import Text

    if single_line:
        limit = LIST_LINE_CHARS if max_chars is None else max_chars
        # Cut before the transform too: a 5 MB line costs nothing to show as a row.
        shown = _cut(neutralise(text[: limit * 2 + 16], single_line=True), limit)
        return Text(shown, style=style, no_wrap=True, overflow="ellipsis", end="")
    shown = _cut_block(neutralise(text))
    if max_chars is not None:
        shown = _cut(shown, max_chars)
    return Text(shown, style=style, end="")


def append_safe(
    target: Text,
    text: str,
    style: str | Style = "",
    *,
    single_line: bool = False,
    max_chars: int | None = None,
) -> Text:
    """Append untrusted `text` to a Text being built from trusted pieces; returns `target`."""
    target.append_text(safe_text(text, style, single_line=single_line, max_chars=max_chars))
    return target
