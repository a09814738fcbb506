"""Untrusted text: message and summary text holding Textual/Rich markup, ANSI CSI and OSC
sequences (clear screen, OSC 52 clipboard, title change), C0/C1 controls, bidi overrides and a
100,000-character line is shown literally and harmlessly: through safe_text, and through the real
app (App.run_test) on a real store holding such messages, in the list and in the detail view."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from engine import CompactionConfig, Message, Role, TextContentBlock
from engine.store import SessionStore
from metis_compaction_tui.safe_text import safe_text
from metis_compaction_tui.screens.message_detail import MessageDetailScreen
from tests.app.app_helpers import make_app, wait_until

PROFILE = settings.get_profile("hostile")
MARKUP = ["[b]x[/b]", "[@click=app.quit]quit[/]", "[link=https://e.invalid]x[/link]", "[red]r"]
SEQUENCES = [
    "\x1b[2J",  # CSI: clear screen
    "\x1b[H\x1b[31m",  # cursor home, red
    "\x1b]52;c;aGk=\x07",  # OSC 52: write the clipboard
    "\x1b]0;pwned\x07",  # OSC 0: set the window title
    "\x1b]8;;https://e.invalid\x1b\\link\x1b]8;;\x1b\\",  # OSC 8 hyperlink, ST-terminated
    "\x1bP1$r\x1b\\",  # DCS
    "\x9b2J",  # C1 CSI
    "\x00\x07\x08\x7f\x85",  # NUL, BEL, BS, DEL, NEL
]
BIDI = "\u202eevil\u202c \u2066iso\u2069"
LONG = "L" * 100_000
HOSTILE = MARKUP + SEQUENCES + [BIDI, LONG]
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def rendered(text: str, *, single_line: bool) -> str:
    """What reaches a terminal: the Text rendered by a real Console, ANSI codes and all."""
    console = Console(file=None, force_terminal=True, width=120, color_system="truecolor")
    with console.capture() as capture:
        console.print(safe_text(text, single_line=single_line))
    return capture.get()


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
@pytest.mark.parametrize("single_line", [True, False])
def test_safe_text_leaves_no_control_character_and_no_markup(text: str, single_line: bool) -> None:
    shown = safe_text(text, single_line=single_line)
    assert not FORBIDDEN.search(shown.plain), repr(shown.plain[:80])
    assert not shown.spans, "untrusted text was given styles (parsed as markup)"
    if text in MARKUP:
        assert shown.plain == text  # brackets shown literally
    out = rendered(text, single_line=single_line)
    # The console adds its own SGR codes; nothing else may start with ESC, and no OSC/BEL at all.
    without_sgr = re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert "\x1b" not in without_sgr and "\x07" not in out and "\x9b" not in out


@settings(PROFILE)
@given(st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x2100)))
def test_no_input_gets_a_control_character_through(text: str) -> None:
    for single_line in (True, False):
        assert not FORBIDDEN.search(safe_text(text, single_line=single_line).plain)


def test_a_100k_line_is_cut_and_says_so() -> None:
    row = safe_text(LONG, single_line=True)
    block = safe_text(LONG)
    assert len(row.plain) <= 400 and row.plain.endswith("…")
    assert len(block.plain) < 5_000 and "chars)" in block.plain


# -- the real app ------------------------------------------------------------------------------

SESSION = "hostile"


def hostile_store(workspace: Path) -> list[str]:
    texts = [
        "see [b]x[/b] and [@click=app.quit]click me[/] and [link=https://e.invalid]x[/link]",
        "clear\x1b[2J clip\x1b]52;c;aGk=\x07 title\x1b]0;pwned\x07 c1\x9b2J nul\x00 bell\x07",
        f"bidi {BIDI} end",
        LONG,
    ]
    with SessionStore.open(workspace, create=True) as store:
        store.create_session(
            SESSION,
            config=CompactionConfig(compaction_model="local:extractive"),
            title="[b]title[/b]\x1b]0;pwned\x07",
        )
        manager = store.manager(SESSION, cache=None)
        for index, text in enumerate(texts * 2):
            role = Role.USER if index % 2 == 0 else Role.ASSISTANT
            manager.append(Message(f"m{index}", role, (TextContentBlock(text),)))
    return texts


def screen_text(app: object) -> str:
    compositor = app.screen._compositor  # type: ignore[attr-defined]
    return "\n".join("".join(s.text for s in strip) for strip in compositor.render_strips())


async def test_the_app_shows_hostile_messages_literally_and_keeps_running(
    tmp_path: Path,
) -> None:
    hostile_store(tmp_path)
    app = make_app(tmp_path, session_id=SESSION)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(pilot, lambda: app.data is not None, what="the session loaded")
        await pilot.pause()
        text = screen_text(app)
        assert "[b]x[/b]" in text and "[@click=app.quit]" in text
        assert "[link=https://e.invalid]x[/link]" in text
        assert "␛[2J" in text and "␛]52;c;aGk=␇" in text and "␛]0;pwned␇" in text
        assert "⟨U+202E⟩" in text
        assert not FORBIDDEN.search(text)
        # Click where the [@click=app.quit] "link" is drawn: it is text, so nothing happens.
        await pilot.click(offset=(10, 10))
        for index in range(4):  # each message's detail view, the 100k line included
            assert app.data is not None
            message = app.data.history.messages[index]
            await app.push_screen(MessageDetailScreen(index, message, 1))
            await pilot.pause()
            detail = screen_text(app)
            assert not FORBIDDEN.search(detail)
            if index == 0:
                assert "[@click=app.quit]click me[/]" in detail
            app.pop_screen()
            await pilot.pause()
        svg = app.export_screenshot()
        assert "\x1b" not in svg and "pwned\x07" not in svg
        assert app.is_running and app.return_code is None  # nothing quit it
