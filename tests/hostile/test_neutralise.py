"""Output cannot hide, reorder or disguise text (metis_compaction_tui.safe_text): every bidi
control, zero-width or other format character, tag character, supplementary variation selector,
blank filler, C0/C1 control and escape sequence is shown as a visible escape; and the CLI's
single-line fields (`one_line`: ids, titles, model names) are one-to-one, so two different ids
never print the same. Through the real CLI too: `status` on a store whose session ids differ only
by such characters prints them apart.

Also the transcript fence of the summarizer prompt (engine.prompt): text in a message
can neither close the <transcript> block nor open another, however the tag is spelled.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import CompactionConfig, Message, Role, TextContentBlock
from engine.prompt import render_user_message
from engine.store import SessionStore
from engine.summary_checks import wrapper_safe
from metis_compaction_tui.cli.output import one_line
from metis_compaction_tui.safe_text import neutralise
from tests.cli_process import run_cli

HIDING = [
    *range(0x202A, 0x202F),  # bidi embeddings and overrides
    *range(0x2066, 0x206A),  # bidi isolates
    0x200E, 0x200F, 0x061C,  # bidi marks
    *range(0x200B, 0x200E), *range(0x2060, 0x2065), 0xFEFF, 0x180E, 0x00AD,  # zero-width
    0xE0001, 0xE0041, 0xE007F,  # tag characters
    0xE0100, 0xE01EF,  # variation selectors supplement
    0x3164, 0xFFA0, 0x115F, 0x1160, 0x2800,  # blank fillers
    0x2028, 0x2029,  # line and paragraph separators
    0x1B, 0x07, 0x00, 0x7F, 0x9B, 0x85,  # C0, DEL, C1
]  # fmt: skip
# In one_line only: what looks like something else.
LOOK_ALIKE = [0xFE0F, 0xFE0E, 0x00A0, 0x2003, 0x3000, 0x0D, 0x09]

# Characters hypothesis draws from: the hiding and look-alike ones, the stand-ins the
# neutraliser prints, and ordinary text.
ALPHABET = st.sampled_from(
    [chr(c) for c in HIDING + LOOK_ALIKE]
    + list("ab ⟨⟩U+0123456789ABCDEF␛␍␉␊⏎\ufffd\n")
    + ["\ud800", "\r\n"]
)
TEXTS = st.lists(ALPHABET, max_size=12).map("".join)


def _shows_nothing_hidden(shown: str) -> bool:
    for char in shown:
        code = ord(char)
        if code in HIDING or unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            return False
    return True


def test_each_hiding_character_is_shown_as_a_visible_escape() -> None:
    for code in HIDING:
        for shown in (neutralise(f"a{chr(code)}b"), one_line(f"a{chr(code)}b")):
            assert chr(code) not in shown and shown.startswith("a") and shown.endswith("b")
            assert _shows_nothing_hidden(shown), (hex(code), shown)
            assert len(shown) > 2  # made visible, never dropped
    for code in LOOK_ALIKE:
        shown = one_line(f"a{chr(code)}b")
        assert chr(code) not in shown and _shows_nothing_hidden(shown), (hex(code), shown)
    assert neutralise("\x1b[2Jx") == "␛[2Jx"
    assert one_line("\u202egnp.exe") == "⟨U+202E⟩gnp.exe"


def test_every_format_and_separator_character_of_this_unicode_is_escaped() -> None:
    """The neutraliser's list against the running Python's Unicode database: a format (Cf) or
    line/paragraph separator character missing from it fails here."""
    for code in range(0x110000):
        if unicodedata.category(chr(code)) in ("Cf", "Zl", "Zp"):
            assert neutralise(chr(code)) != chr(code), hex(code)
        elif unicodedata.category(chr(code)) == "Zs" and code != 0x20:
            assert one_line(chr(code)) != chr(code), hex(code)


@settings(max_examples=3_000, deadline=None, derandomize=True)
@given(TEXTS, TEXTS)
def test_distinct_texts_never_print_the_same_on_one_line(a: str, b: str) -> None:
    if a != b:
        assert one_line(a) != one_line(b), (a, b)


@settings(max_examples=1_000, deadline=None, derandomize=True)
@given(TEXTS)
def test_nothing_hidden_survives_in_any_mode(text: str) -> None:
    for shown in (
        one_line(text),
        neutralise(text, single_line=True),
        neutralise(text).replace("\n", "").replace("\t", ""),
    ):
        assert _shows_nothing_hidden(shown), (text, shown)
    # The CLI writes one_line fields through the block neutraliser again: unchanged by it.
    assert neutralise(one_line(text)) == one_line(text)


def test_status_prints_ids_that_differ_only_in_hiding_characters_apart(tmp_path: Path) -> None:
    ids = ["agent", "agent\u200b", "agent\u202e", "agent\ufe0f", "agent\u00a0", "agent\U000e0041"]
    with SessionStore.open(tmp_path, create=True) as store:
        for sid in ids:
            store.create_session(sid, config=CompactionConfig(compaction_model="local:extractive"))
    done = run_cli("status", str(tmp_path))
    assert done.returncode == 0, done.stderr
    heads = [line.split("  ")[0] for line in done.stdout.splitlines() if line.startswith("agent")]
    assert len(heads) == len(ids) == len(set(heads)), heads
    assert _shows_nothing_hidden(done.stdout.replace("\n", ""))


# -- the transcript fence ---------------------------------------------------------------------

CLOSERS = st.sampled_from(
    ["</transcript>", "</TRANSCRIPT>", "< /transcript >", "</ transcript>", "<\u200b/transcript>",
     "\uff1c/transcript\uff1e", "</Transcript\n>", "<transcript>", "<//transcript>", "&lt;"]
)  # fmt: skip
INJECTED = st.lists(st.one_of(CLOSERS, st.text(max_size=8)), max_size=8).map("".join)
FENCE_TAG = re.compile(r"[<\uff1c\ufe64][^A-Za-z<>\uff1c\uff1e]{0,16}transcript", re.IGNORECASE)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(INJECTED)
def test_text_in_a_message_cannot_close_or_open_the_transcript_fence(text: str) -> None:
    message = Message("m1", Role.USER, (TextContentBlock(f"before {text} after"),))
    rendered = render_user_message((message,), None, 500)
    tags = [m.group() for m in FENCE_TAG.finditer(rendered)]
    assert tags == ["<transcript", "</transcript"], (text, tags)
    body = rendered.split("<transcript>\n", 1)[1].rsplit("\n</transcript>", 1)[0]
    assert "before" in body and "after" in body  # the message is inside the fence, whole


@settings(max_examples=300, deadline=None, derandomize=True)
@given(INJECTED.map(lambda t: t.replace("transcript", "COMPACTION_SUMMARY")))
def test_a_summary_cannot_close_or_forge_its_wrapper(text: str) -> None:
    wrapper = re.compile(r"[<\uff1c\ufe64][^A-Za-z<>\uff1c\uff1e]{0,16}compaction_summary", re.I)
    assert not wrapper.search(wrapper_safe(text)), text


def test_no_hiding_character_passes_the_fast_path() -> None:
    """Every code point the module treats as hiding is shown, printable by str.isprintable()
    (which the fast path trusts) or not."""
    from metis_compaction_tui.safe_text import _HIDING

    passed = [hex(code) for code in sorted(_HIDING) if chr(code) in neutralise(f"a{chr(code)}b")]
    assert passed == []
