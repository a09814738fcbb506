"""In the app: a custom summarizer named by .metis/config.yaml compacts through the
compact-now screen, and the settings screen says where each value came from."""

from __future__ import annotations

from pathlib import Path

from engine.config import CompactionConfig
from engine.layout import config_path
from engine.store import SessionStore
from engine.workspace_config import trust_workspace
from metis_compaction_tui.screens.compact_now import CompactNowScreen, preview_facts
from metis_compaction_tui.screens.settings import SettingsScreen, settings_text
from metis_compaction_tui.widgets.status_bar import StatusBar
from metis_compaction_tui.widgets.store_banner import StoreBanner
from metis_compaction_tui.widgets.trigger_panel import TriggerPanel
from tests.app.app_helpers import SIZE, loaded, make_app, wait_until, wait_workers
from tests.history_builders import tool_session
from tests.plugins import acme

CONFIG = """\
# the team's own summarizer, by import path
compaction_model: "acme:small"
compaction_hard_cap_tokens: 2000
compaction_threshold_tokens: 300
summarizer:
  import: "tests.plugins.acme:make"
  options:
    fee_usd: "0.005"
"""


def row(key: str, value: str, origin: str) -> str:
    """A settings row as the screen lays it out (keys padded to the longest one's width)."""
    return f"{key:<37}  {value}  ({origin})"


def acme_workspace(tmp_path: Path, *, trusted: bool = True) -> Path:
    """The team's workspace: its config names an import path, which applies once the user has
    trusted the file (engine.workspace_trust)."""
    knobs = {"compaction_threshold_tokens": 300, "compaction_preserve_recent_turns": 2}
    with SessionStore.open(tmp_path, create=True) as store:
        store.create_session(
            "s1",
            title="acme session",
            config=CompactionConfig(
                compaction_model="acme:small", compaction_hard_cap_tokens=1_500, **knobs
            ),
        )
        for message in tool_session(6, size=300):
            store.append_message("s1", message, 100)
    config_path(tmp_path).write_text(CONFIG)
    if trusted:
        trust_workspace(tmp_path)
    return tmp_path


async def test_the_settings_screen_and_compact_now_use_the_workspace_config(
    tmp_path: Path,
) -> None:
    workspace = acme_workspace(tmp_path)
    config_file = config_path(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(160, 48)) as pilot:
        await loaded(pilot, app, "s1")
        data = app.data
        assert data is not None
        assert data.config.compaction_hard_cap_tokens == 2_000  # the file over the stored 1,500
        assert data.price_origin == "the summarizer's own"
        assert "acme:small (the summarizer's own)" in app.query_one(TriggerPanel).render().plain
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, SettingsScreen)
        shown = settings_text(app.screen.data).plain
        assert row("compaction_hard_cap_tokens", "2000", f"file {config_file}:3") in shown
        assert row("compaction_preserve_recent_turns", "2", "session") in shown
        assert row("summarizer.import", "tests.plugins.acme:make", f"file {config_file}:6") in shown
        assert row("compaction_cache_max_rows", "1000", "session") in shown
        assert "price        the summarizer's own" in shown
        await pilot.press("escape")
        await pilot.pause()

        before = len(acme.CALLS)
        await pilot.press("c")
        screen = app.screen
        assert isinstance(screen, CompactNowScreen)
        await wait_workers(app)
        await pilot.pause()
        assert screen.state == "ready", screen.state
        assert screen.preview is not None and screen.preview.model == "acme:small"
        assert screen.price_origin == "the summarizer's own"
        assert "(the summarizer's own)" in preview_facts(screen.preview, screen.price_origin).plain
        assert (
            screen.preview.endpoint
            == "imported summarizer tests.plugins.acme:make (its own endpoint)"
        )
        shown = app.screen.query_one("#cn-preview").render()
        assert "endpoint  imported summarizer tests.plugins.acme:make" in str(shown)
        await pilot.press("enter")
        await wait_workers(app)
        await pilot.pause()
        assert screen.state == "review"
        await pilot.press("a")
        await wait_workers(app)
        await pilot.pause()
        assert screen.state == "done"
    assert acme.CALLS[before:] == ["acme:small"]
    with SessionStore.open(workspace, create=False) as store:
        first = store.snapshot("s1").messages[0].text()
        assert "ACME SUMMARY" in first
        assert str(store.session_info("s1").spent_usd) == "0.005"


async def test_a_bad_config_file_is_shown_with_its_file_line_and_key(tmp_path: Path) -> None:
    workspace = acme_workspace(tmp_path)
    config_file = config_path(workspace)
    config_file.write_text("compaction_threshold_tokens: 400\ncompaction_colour: red\n")
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:

        def banner_shown() -> bool:
            banners = app.query(StoreBanner)  # empty until the dashboard is composed
            return app.problem is not None and bool(banners) and banners.first().display

        await wait_until(pilot, banner_shown, what="the problem shown in the banner")
        assert app.problem is not None
        assert app.problem.startswith(f"{config_file}:2: compaction_colour: unknown key")


async def test_an_untrusted_workspace_is_shown_as_such_and_compact_now_refuses(
    tmp_path: Path,
) -> None:
    """The dashboard works on the rest of the file and says the config is untrusted; compact
    now names the key, the file and the command to trust it, and the import is never called."""
    workspace = acme_workspace(tmp_path, trusted=False)
    config_file = config_path(workspace)
    before = len(acme.CALLS)
    app = make_app(workspace)
    async with app.run_test(size=(160, 48)) as pilot:
        await loaded(pilot, app, "s1")
        data = app.data
        assert data is not None
        assert data.config.compaction_hard_cap_tokens == 2_000  # ungated knobs still apply
        assert "untrusted config" in app.query_one(StatusBar).render().plain
        assert "untrusted" in settings_text(data).plain
        await pilot.press("c")
        screen = app.screen
        assert isinstance(screen, CompactNowScreen)
        await wait_workers(app)
        await pilot.pause()
        assert screen.state == "failed"
        shown = screen.query_one("#cn-result").render()
        text = getattr(shown, "plain", str(shown))
        assert f"{config_file}:6: summarizer.import" in text
        assert f"metis-compaction-tui trust {workspace.resolve()}" in text
        assert acme.CALLS[before:] == []
        # Trusted from another terminal: the app picks it up without the file changing.
        trust_workspace(workspace)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("c")
        screen = app.screen
        assert isinstance(screen, CompactNowScreen)
        await wait_workers(app)
        await pilot.pause()
        assert screen.state == "ready", screen.state
        assert screen.preview is not None
        assert screen.preview.endpoint.startswith("imported summarizer tests.plugins.acme:make")


def test_the_app_reads_the_settings_again_when_the_users_file_changes(tmp_path: Path) -> None:
    """The user's own config file, kept elsewhere and linked in as dotfile managers do: a change
    to the file the link leads to is seen, with the user file's origin."""
    from engine.layout import user_config_path
    from metis_compaction_tui.sources.store import StoreSource

    (tmp_path / "ws").mkdir()
    workspace = acme_workspace(tmp_path / "ws")
    dotfile = tmp_path / "dotfiles" / "metis.yaml"
    dotfile.parent.mkdir()
    dotfile.write_text("compaction_cache_max_rows: 11\n")
    user = user_config_path()
    user.parent.mkdir(parents=True, exist_ok=True)  # trust records may be there already
    user.symlink_to(dotfile)
    source = StoreSource(workspace)
    first = source.settings()
    assert first.config.compaction_cache_max_rows == 11
    assert str(first.origins["compaction_cache_max_rows"]) == f"user file {user}:1"
    assert source.settings() is first  # unchanged: not read again
    dotfile.write_text("# now\ncompaction_cache_max_rows: 12345\n")
    again = source.settings()
    assert again.config.compaction_cache_max_rows == 12_345
    assert str(again.origins["compaction_cache_max_rows"]) == f"user file {user}:2"
