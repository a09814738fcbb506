"""safe_text: untrusted text is shown literally, never parsed as markup, never reaching the
terminal as a control sequence."""

from __future__ import annotations

from metis_compaction_tui.safe_text import LIST_LINE_CHARS, neutralise, safe_text


def test_markup_is_plain_text() -> None:
    for raw in ("[b]x[/b]", "[@click=app.quit]q[/]", "[link=http://x]y[/link]"):
        text = safe_text(raw)
        assert text.plain == raw
        assert not text.spans


def test_escape_sequences_are_made_visible() -> None:
    shown = neutralise("a\x1b[2Jb\x1b]52;c;SGVsbG8=\x07c\x1bP1$r\x1b\\d\x9b31m")
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown
    assert shown == "a␛[2Jb␛]52;c;SGVsbG8=␇c␛P1$r␛\\d⟨9B⟩31m"


def test_bidi_overrides_and_isolates_are_named_not_applied() -> None:
    for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A)):
        assert neutralise(f"x{chr(code)}y") == f"x⟨U+{code:04X}⟩y"


def test_block_keeps_newlines_and_tabs_single_line_folds_them() -> None:
    assert safe_text("a\r\nb\tc").plain == "a\nb\tc"
    assert safe_text("a\nb\tc", single_line=True).plain == "a ⏎ b c"
    assert safe_text("lone\rcr").plain == "lone␍cr"


def test_long_lines_are_cut_for_lists_and_blocks() -> None:
    row = safe_text("x" * 1_000_000, single_line=True)
    assert len(row.plain) == LIST_LINE_CHARS and row.plain.endswith("…")
    block = safe_text("y" * 10_000)
    assert "chars)" in block.plain and len(block.plain) < 5_000


def test_surrogates_become_replacement_characters() -> None:
    assert neutralise("a\ud800b") == "a\ufffdb"
