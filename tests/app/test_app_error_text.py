"""Every error that reaches the screen is
one clean line: a typed error's own message, or for a bug a plain sentence naming the log that
holds its traceback; never markup, never a control sequence, never an API key. Real store files,
real Textual pilot; the failures are raised where the app meets them (the summarizer, a source
action, the feed's poll)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

from engine import (
    AsyncCompactionCache,
    ConfigError,
    ExtractiveSummarizer,
    SummaryRequest,
    SummaryResult,
)
from engine.events import redact as scrub_secrets  # the engine's §6 rule, used by the app
from engine.layout import app_error_log_path, metis_dir
from engine.summarizers.base import ErrorClass, SummarizerError
from metis_compaction_tui.error_text import LINE_CHARS, error_line
from metis_compaction_tui.screens import knobs
from metis_compaction_tui.screens.cache_browser import CacheBrowserScreen
from metis_compaction_tui.sources.base import ActionRefused, SourceUnavailable
from metis_compaction_tui.sources.store import StoreSource
from metis_compaction_tui.widgets.message_list import MessageList
from metis_compaction_tui.widgets.store_banner import StoreBanner
from tests.app.app_helpers import (
    SIZE,
    first_toast,
    loaded,
    make_app,
    open_latest_summary,
    wait_until,
    wait_workers,
)
from tests.app.test_app_compact import open_compact_now

KEY = "sk-ant-api03-Zx9_SECRETSECRETSECRET-abc"
# Markup, a screen clear, an OSC 52 clipboard write, a key, and a header carrying it.
HOSTILE = f"[bold red]boom[/] \x1b[2J\x1b]52;c;ZXZpbA==\x07 key {KEY} x-api-key: {KEY}"


def assert_clean(shown: str) -> None:
    assert KEY not in shown and "SECRETSECRET" not in shown, shown
    assert "\x1b" not in shown and "\x07" not in shown, shown
    assert "\n" not in shown.strip(), shown


def assert_logged(workspace: Path, type_name: str) -> str:
    log = app_error_log_path(workspace).read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in log and type_name in log
    assert KEY not in log and "SECRETSECRET" not in log and "\x1b" not in log
    return log


def test_error_line_gives_a_typed_errors_own_words_and_a_bugs_plain_sentence(
    tmp_path: Path,
) -> None:
    metis_dir(tmp_path).mkdir()
    typed = error_line(SourceUnavailable(HOSTILE), "reading", workspace=tmp_path)
    assert typed.startswith("[bold red]boom[/] ␛[2J␛]52;c;ZXZpbA==␇ key [redacted]")
    assert_clean(typed)
    failed = error_line(SummarizerError(ErrorClass.AUTH, HOSTILE), "summarizing")
    assert failed.startswith("the compaction call failed (auth): [bold red]boom")
    assert_clean(failed)
    try:
        raise RuntimeError(HOSTILE)
    except RuntimeError as error:
        bug = error_line(error, "compacting", workspace=tmp_path)
    log = app_error_log_path(tmp_path)
    assert bug == f"unexpected error while compacting: RuntimeError; details in {log}"
    assert_logged(tmp_path, "RuntimeError")
    assert len(error_line(SourceUnavailable("x" * 10_000), "reading")) == LINE_CHARS


def test_scrub_secrets_covers_keys_and_credential_headers() -> None:
    text = scrub_secrets(
        f"{{'x-api-key': '{KEY}', 'authorization': 'Bearer tok_123'}} Authorization: Basic abc "
        f"api_key={KEY}"
    )
    assert "tok_123" not in text and "abc" not in text and KEY not in text
    assert text.count("[redacted]") == 4


def hostile_summarizer(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    async def fail(self: ExtractiveSummarizer, request: SummaryRequest) -> SummaryResult:
        raise error

    monkeypatch.setattr(ExtractiveSummarizer, "summarize", fail)


async def summarize_and_read_result(workspace: Path) -> str:
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_compact_now(pilot, app)
        await pilot.press("enter")
        await wait_workers(app)
        await pilot.pause()
        assert screen.state == "failed"
        return str(screen.query_one("#cn-result").render())


async def test_a_summarizer_error_with_markup_escapes_and_a_key_shows_one_clean_line(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Failed before: the key was shown as it came.
    hostile_summarizer(monkeypatch, SummarizerError(ErrorClass.AUTH, f"HTTP 401: {HOSTILE}"))
    shown = await summarize_and_read_result(workspace)
    first = shown.splitlines()[0]
    assert first.startswith("✗ the compaction call failed (auth): HTTP 401: [bold red]boom[/]")
    assert "[redacted]" in first
    assert_clean(first)


async def test_an_unexpected_summarizer_bug_shows_a_plain_sentence_and_logs_the_traceback(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Failed before: "RuntimeError: [bold red]boom[/] ... sk-ant-..." was the result line.
    hostile_summarizer(monkeypatch, RuntimeError(HOSTILE))
    shown = await summarize_and_read_result(workspace)
    log = app_error_log_path(workspace)
    assert shown.splitlines()[0] == (
        f"✗ unexpected error while summarizing: RuntimeError; details in {log}"
    )
    assert "boom" not in shown
    assert "boom" in assert_logged(workspace, "RuntimeError")


async def test_a_bug_in_the_undo_action_is_a_plain_toast_and_a_logged_traceback(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Failed before: the worker died silently (no toast at all) and nothing was logged.
    def broken(self: StoreSource, session_id: str) -> object:
        raise RuntimeError(HOSTILE)

    monkeypatch.setattr(StoreSource, "undo_latest", broken)
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, "ledger")
        toast: Any = await first_toast(pilot, app, "u", "y")
        log = app_error_log_path(workspace)
        assert toast.message == (
            f"undo failed: unexpected error while undoing: RuntimeError; details in {log}"
        )
        assert not toast.markup
    assert_logged(workspace, "RuntimeError")


async def test_a_refusal_with_markup_and_a_key_is_shown_literally_without_the_key(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Failed before: the reason was rendered as markup (a toast's default) with the key in it.
    def refuse(self: StoreSource, session_id: str) -> object:
        raise ActionRefused(HOSTILE)

    monkeypatch.setattr(StoreSource, "undo_latest", refuse)
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, "ledger")
        toast: Any = await first_toast(pilot, app, "u", "y")
        assert toast.message.startswith("undo refused: [bold red]boom[/] ␛[2J")
        assert not toast.markup
        assert_clean(toast.message)


async def test_a_bug_in_the_feed_shows_a_plain_banner_and_logs_the_traceback(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Failed before: the banner read "RuntimeError: [bold red]boom[/] ... sk-ant-...".
    def broken_poll(self: StoreSource) -> list[object]:
        raise RuntimeError(HOSTILE)

    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, "ledger")
        monkeypatch.setattr(StoreSource, "poll", broken_poll)
        await wait_until(pilot, lambda: app.problem is not None, what="the banner")
        banner = str(app.query_one(StoreBanner).render())
        log = app_error_log_path(workspace)
        assert f"unexpected error while reading: RuntimeError; details in {log}" in banner
        assert "boom" not in banner
        assert_clean(banner)
    assert_logged(workspace, "RuntimeError")


async def test_the_cache_browser_shows_source_and_cache_failures_as_clean_lines(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Failed before: the backers' problem was a markup toast with a raw ESC and the key, and a
    # bug reading the cache died silently (the browser said nothing).
    def refuse(self: StoreSource) -> object:
        raise SourceUnavailable(HOSTILE)

    async def broken(self: AsyncCompactionCache, **_: object) -> object:
        raise RuntimeError(HOSTILE)

    monkeypatch.setattr(StoreSource, "cache_backers", refuse)
    monkeypatch.setattr(AsyncCompactionCache, "list_rows", broken)
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        await pilot.press("b")
        screen = app.screen
        assert isinstance(screen, CacheBrowserScreen)
        await wait_until(pilot, lambda: screen.problem is not None, what="the cache problem")
        await wait_until(pilot, lambda: len(app._notifications) > 0, what="a toast")
        (toast,) = list(app._notifications)
        assert toast.message.startswith("[bold red]boom[/] ␛[2J") and not toast.markup
        assert_clean(toast.message)
        status = str(screen.query_one("#cache-status").render())
        log = app_error_log_path(workspace)
        assert f"unexpected error while reading the cache: RuntimeError; details in {log}" in (
            status
        )
        assert_clean(status)
    assert_logged(workspace, "RuntimeError")


async def test_unreadable_originals_are_named_in_one_clean_line(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Failed before: the problem went raw into the originals list's empty text (a Segment, no
    # neutralising): ESC reached the terminal and the key was shown.
    def refuse(self: StoreSource, info: object) -> object:
        raise SourceUnavailable(HOSTILE)

    monkeypatch.setattr(StoreSource, "originals", refuse)
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, "ledger")
        await open_latest_summary(pilot, app)
        screen = app.screen
        empty = screen.query_one("#originals", MessageList).empty_text
        assert empty.startswith("[bold red]boom[/] ␛[2J")
        assert_clean(empty)


async def test_a_knob_error_is_shown_as_one_clean_line(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Failed before: the error was shown as str(error): raw ESC and the key.
    def refuse(config: object, values: object) -> object:
        raise ConfigError("compaction_threshold_tokens", HOSTILE)

    monkeypatch.setattr(knobs, "config_with_text", refuse)
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, "ledger")
        assert app.data is not None
        app.push_screen(knobs.KnobsScreen(app.data.config, app.data.title))
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, knobs.KnobsScreen)
        shown = str(app.screen.query_one("#knobs-error").render())
        assert shown.startswith("compaction_threshold_tokens: [bold red]boom[/] ␛[2J")
        assert_clean(shown)


def test_a_folder_without_metis_is_not_made_a_workspace_by_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    folder = tmp_path / "not-a-workspace"
    folder.mkdir()
    try:
        raise RuntimeError(HOSTILE)
    except RuntimeError as error:
        line = error_line(error, "reading", workspace=folder)
    assert not metis_dir(folder).exists()
    (log,) = (tmp_path / "tmp").iterdir()
    assert line.endswith(f"details in {log}")
    assert log.stat().st_mode & 0o777 == 0o600
    assert KEY not in log.read_text(encoding="utf-8")
