"""Untrusted text (message bodies, tool output, summaries, error strings) → rich `Text`, safely.

The one rule every view follows: text from the store is never parsed as markup, and nothing in it
can reach the terminal as a control sequence. `safe_text()` builds a `Text` directly (no markup
parse) from a string in which:

- escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL|ST`, DCS/SOS/PM/APC `ESC P|X|^|_ … ST`)
  and every other C0/C1 control character are shown as visible symbols (`ESC` → `␛`, `BEL` → `␇`,
  C1 → `⟨9B⟩`), so `\\x1b[2J` reads `␛[2J` and clears nothing;
- bidi overrides, isolates and marks (U+202A–U+202E, U+2066–U+2069, U+200E/F, U+061C), zero-width
  and other invisible characters (U+200B–U+200D, U+2060–U+2064, U+FEFF, every other format
  character), tag characters (U+E0000–U+E007F), supplementary variation selectors and blank
  fillers (Hangul U+3164, U+FFA0, U+115F, U+1160; Braille U+2800) are shown as `⟨U+202E⟩`, so they
  cannot hide, reorder or disguise what a reader sees;
- `exact` mode (ids and names: the CLI's `one_line`) also escapes look-alike spaces, the emoji
  variation selectors and the stand-ins above when they are in the text, and keeps a CR visible:
  two different ids never print the same;
- lone surrogates become U+FFFD; CRLF is one line break, a lone CR shows as `␍`;
- newline and tab survive in block mode; in single-line mode (list rows) they become `⏎` and a
  space, and the line is cut at `max_chars` with an ellipsis.
"""

from __future__ import annotations

import functools
import re

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

# Every code point that can hide, reorder or disguise text, shown as ⟨U+XXXX⟩ wherever text is
# shown: bidi embeddings, overrides, isolates and marks; zero-width and invisible characters;
# tag characters; the supplementary variation selectors; Hangul and Braille fillers, which print
# as blanks; and every other format character (Unicode Cf: tests/hostile/test_neutralise.py
# checks this list against the running Python's Unicode database).
_BIDI = frozenset(range(0x202A, 0x202F)) | frozenset(range(0x2066, 0x206A))
_HIDING = (
    _BIDI
    | frozenset(range(0x200B, 0x2010))  # zero-width space, non-joiner, joiner; LRM, RLM
    | frozenset(range(0x2060, 0x2065))  # word joiner, invisible operators
    | frozenset(range(0x206A, 0x2070))  # deprecated format characters
    | frozenset((0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, 0x2028, 0x2029))
    | frozenset((0x2800, 0x3164, 0xFEFF, 0xFFA0))
    | frozenset(range(0x180B, 0x1810))  # Mongolian variation selectors and vowel separator
    | frozenset(range(0xFFF9, 0xFFFC))  # interlinear annotation
    | frozenset(range(0xE0000, 0xE0080))  # tag characters
    | frozenset((0x06DD, 0x070F, 0x08E2, 0x110BD, 0x110CD))  # other format characters
    | frozenset(range(0x0600, 0x0606))
    | frozenset(range(0x0890, 0x0892))
    | frozenset(range(0x13430, 0x13440))
    | frozenset(range(0x1BCA0, 0x1BCA4))
    | frozenset(range(0x1D173, 0x1D17B))
    | frozenset(range(0xE0100, 0xE01F0))  # variation selectors supplement
)


def _char_class(codes: list[int]) -> str:
    """A regex character class of `codes` (sorted), each run of consecutive ones as a range:
    a class of 250 single characters takes `re` milliseconds to compile, one of 9 runs does not."""
    runs: list[list[int]] = []
    for code in codes:
        if runs and runs[-1][1] == code - 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return (
        "["
        + "".join(
            re.escape(chr(low)) + (f"-{re.escape(chr(high))}" if high > low else "")
            for low, high in runs
        )
        + "]"
    )


# Printable by str.isprintable() and still hiding: the fast path must look for these too.
# Built from _HIDING with this interpreter's Unicode data, so no code point can slip between.
_PRINTABLE_HIDING = _char_class([code for code in sorted(_HIDING) if chr(code).isprintable()])
# `exact` output (ids, titles: one_line in the CLI) must also tell apart what looks alike: the
# emoji variation selectors, every space but U+0020, and the stand-ins this module prints, when
# they are in the text itself. Together that makes `exact` output one-to-one (distinct inputs
# never print the same): "⟨" always opens an escape, a control picture or "⏎" always stands for
# a control.
_VARIATION = frozenset(range(0xFE00, 0xFE10))
_STAND_INS = (
    frozenset(range(0x2400, 0x2440))  # Control Pictures (␛, ␍, ␉...)
    | frozenset((0x27E8, 0x23CE, 0xFFFD))  # ⟨, ⏎, the replacement character
)
_LOOK_ALIKE_SPACES = (0x00A0, 0x1680, *range(0x2000, 0x200B), 0x202F, 0x205F, 0x3000)
_EXACT_EXTRA = (
    "[\ufe00-\ufe0f\u2400-\u243f\u27e8\u23ce\ufffd\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]"
)


@functools.cache
def _pattern(source: str) -> re.Pattern[str]:
    """_PRINTABLE_HIDING or _EXACT_EXTRA, compiled when the first non-ASCII text is met: every
    code point in them is above U+007F, and most text shown (the CLI's lines, the status line's)
    is ASCII."""
    return re.compile(source)


def _visible(code: int, *, exact: bool = False) -> str:
    """The visible stand-in for one control, bidi or hiding code point."""
    if code < 0x20:
        return chr(0x2400 + code)  # U+2400 Control Pictures: ␀ … ␟ (ESC is ␛)
    if code == 0x7F:
        return "␡"
    if 0x80 <= code <= 0x9F:
        return f"⟨{code:02X}⟩"
    if 0xD800 <= code <= 0xDFFF and not exact:
        return "\ufffd"
    return f"⟨U+{code:04X}⟩"


def _build_table(keep_layout: bool, exact: bool = False) -> dict[int, str]:
    table = {code: _visible(code) for code in range(0x20)}
    table[0x7F] = _visible(0x7F)
    table.update({code: _visible(code) for code in range(0x80, 0xA0)})
    table.update({code: _visible(code) for code in _HIDING})
    table.update(dict.fromkeys(range(0xD800, 0xE000), "\ufffd"))  # lone surrogates
    if exact:
        table.update({code: _visible(code, exact=True) for code in range(0xD800, 0xE000)})
        table.update({code: _visible(code, exact=True) for code in _VARIATION | _STAND_INS})
        table.update({code: _visible(code) for code in _LOOK_ALIKE_SPACES})
    if keep_layout:
        table[0x0A] = "\n"
        table[0x09] = "\t"
    else:
        table[0x0A] = NEWLINE_MARK
        table[0x09] = _visible(0x09) if exact else " "
    return table


# Built on first use, not at import: the status line imports this module on every call and
# almost never meets a control character.
_TABLES: dict[tuple[bool, bool], dict[int, str]] = {}


def neutralise(text: str, *, single_line: bool = False, exact: bool = False) -> str:
    """The character-level transform alone: every control, C1, bidi and hiding code point made
    visible. `exact` (single-line fields that identify something: ids, titles, model names):
    also every look-alike space and variation selector, a CR on its own, and the stand-ins
    themselves when they are in `text`, so that two different texts never print the same."""
    # Nearly all text is printable and hides nothing: returned after two C scans (ASCII text,
    # printable, can hold none of the code points the patterns look for). A block keeps its
    # newlines and tabs as they are, so they alone do not send it through the table.
    probe = text if single_line or exact else text.replace("\n", "").replace("\t", "")
    if probe.isprintable() and (
        probe.isascii()
        or (
            not _pattern(_PRINTABLE_HIDING).search(probe)
            and not (exact and _pattern(_EXACT_EXTRA).search(probe))
        )
    ):
        return text
    key = (single_line or exact, exact)
    table = _TABLES.get(key)
    if table is None:
        table = _TABLES[key] = _build_table(keep_layout=not key[0], exact=exact)
    if not exact:
        text = text.replace("\r\n", "\n")  # CRLF is one line break
    return text.translate(table)


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
