"""The user's own config file ($XDG_CONFIG_HOME/metis-compaction-tui/config.yaml): below the
workspace file in precedence, shown with its origin, and the user's own, so its endpoint and
import path apply without trust; a workspace file setting the same gated key still needs trust,
as its value would win. The user's file is read within the same bounds: a FIFO or a link to
/dev/zero there is refused in one line, never waited on.

The real CLI as its own process (a hang fails at the subprocess timeout), with a fake key and
token in its environment and its own HOME and XDG_CONFIG_HOME."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.layout import config_path
from engine.store import SessionStore
from tests.hostile.workspace_files import (
    KEY,
    SESSION,
    cli,
    grown_workspace,
    make_dev_zero_link,
    make_fifo,
    make_folder,
    no_secret_in,
    no_secret_stored,
    one_line_refusal,
    user_env,
)
from tests.messages_api_server import MessagesAPIServer, ok

MODEL = "anthropic:claude-haiku-4-5"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def user_file(home: Path) -> Path:
    """Where the user's file is for user_env(home): XDG_CONFIG_HOME is home/.config."""
    path = home / ".config" / "metis-compaction-tui" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def messages_calls(server: MessagesAPIServer) -> list[object]:
    return [r for r in server.requests if r.path.endswith("/messages")]


def revision(workspace: Path) -> int:
    with SessionStore.open(workspace) as store:
        return store.session_info(SESSION).revision


def test_status_shows_the_users_values_below_the_workspace_file_with_their_origin(
    tmp_path: Path, home: Path
) -> None:
    workspace = grown_workspace(tmp_path / "repo")
    user = user_file(home)
    user.write_text(
        "# mine, everywhere\n"
        "compaction_preserve_recent_turns: 6\n"
        "compaction_cache_max_rows: 9\n"
        "compaction_max_summary_tokens: 1200\n"
    )
    workspace_file = config_path(workspace)
    workspace_file.write_text("compaction_cache_max_rows: 7\ncompaction_max_summary_tokens: 900\n")
    env = user_env(home, METIS_COMPACTION_MAX_SUMMARY_TOKENS="1000")
    text = cli(env, "status", str(workspace), "--set", "cache_max_rows=5")
    assert text.code == 0, text.err
    assert f"user config {user}\n" in text.out
    assert f"  compaction_preserve_recent_turns = 6  (user file {user}:2)\n" in text.out
    assert "  compaction_cache_max_rows = 5  (flag --set compaction_cache_max_rows)\n" in text.out
    assert (
        "  compaction_max_summary_tokens = 1000  (environment METIS_COMPACTION_MAX_SUMMARY_TOKENS)"
        in text.out
    )
    shown = json.loads(cli(env, "status", str(workspace), "--json").out)
    assert shown["user_config_file"] == str(user) and shown["user_config_file_found"] is True
    config = shown["config"]
    assert config["compaction_preserve_recent_turns"] == {
        "value": "6",
        "origin": "user_file",
        "where": f"{user}:2",
    }
    assert config["compaction_cache_max_rows"] == {
        "value": "7",
        "origin": "file",
        "where": f"{workspace_file}:1",
    }
    (session,) = shown["sessions"]
    assert session["preserve_recent_turns"] == 6  # over the session's own knob
    assert session["config"]["compaction_preserve_recent_turns"]["origin"] == "user_file"
    # Without the user's file: nothing of it is left, and status says no user config.
    user.unlink()
    bare = json.loads(cli(env, "status", str(workspace), "--json").out)
    assert bare["user_config_file_found"] is False
    assert bare["config"]["compaction_preserve_recent_turns"]["origin"] == "default"


def test_the_users_endpoint_gets_the_call_without_trust(tmp_path: Path, home: Path) -> None:
    workspace = grown_workspace(tmp_path / "repo")
    env = user_env(home)
    with MessagesAPIServer(default=ok("SUMMARY FROM THE USERS ENDPOINT", 3_000, 100)) as server:
        user_file(home).write_text(
            f'compaction_model: "{MODEL}"\nsummarizer:\n  base_url: "{server.base_url}"\n'
        )
        done = cli(env, "compact", SESSION, str(workspace))
        assert done.code == 0, done.err
        assert f"endpoint   {server.base_url}" in done.out
        (call,) = messages_calls(server)
        assert any(KEY in value for value in call.headers.values())  # type: ignore[attr-defined]
    assert revision(workspace) == 1
    no_secret_in(done.out, done.err)
    no_secret_stored(workspace, home)


def test_a_workspace_endpoint_over_the_users_still_needs_trust(tmp_path: Path, home: Path) -> None:
    """The user's file names their endpoint; a cloned repository's file names another, which
    would win: refused until trusted, and neither endpoint is called meanwhile."""
    workspace = grown_workspace(tmp_path / "repo")
    env = user_env(home)
    with (
        MessagesAPIServer(default=ok("USERS", 3_000, 100)) as users,
        MessagesAPIServer(default=ok("REPOS", 3_000, 100)) as repos,
    ):
        user = user_file(home)
        user.write_text(
            f'compaction_model: "{MODEL}"\nsummarizer:\n  base_url: "{users.base_url}"\n'
        )
        config = config_path(workspace)
        config.write_text(f'summarizer:\n  base_url: "{repos.base_url}"\n')
        for argv in (("compact", SESSION, "--dry-run"), ("compact", SESSION)):
            done = cli(env, *argv, str(workspace))
            one_line_refusal(done, f"{config}:2: summarizer.base_url", "metis-compaction-tui trust")
            no_secret_in(done.out, done.err)
        assert messages_calls(users) == [] and messages_calls(repos) == []
        assert revision(workspace) == 0
        # Reading commands show what applies meanwhile: the user's endpoint, and the trust note.
        status = cli(env, "status", str(workspace))
        assert status.code == 0, status.err
        assert f"  summarizer.base_url = {users.base_url}  (user file {user}:3)" in status.out
        assert "workspace config untrusted: summarizer.base_url not applied" in status.out
        assert cli(env, "trust", str(workspace)).code == 0
        done = cli(env, "compact", SESSION, str(workspace))
        assert done.code == 0, done.err
        assert f"endpoint   {repos.base_url}" in done.out
        assert len(messages_calls(repos)) == 1 and messages_calls(users) == []
    no_secret_in(done.out, done.err)
    no_secret_stored(workspace, home)


def test_the_users_import_path_runs_without_trust(tmp_path: Path, home: Path) -> None:
    workspace = grown_workspace(tmp_path / "repo")
    user_file(home).write_text(
        'compaction_model: "acme:small"\n'
        "summarizer:\n"
        '  import: "tests.plugins.acme:make"\n'
        '  options: {fee_usd: "0.004"}\n'
    )
    done = cli(user_env(home), "compact", SESSION, str(workspace), "--json")
    assert done.code == 0, done.err
    result = json.loads(done.out)
    assert result["model"] == "acme:small" and result["cost_usd"] == "0.004"
    with SessionStore.open(workspace) as store:
        assert "ACME SUMMARY" in store.snapshot(SESSION).messages[0].text()


def _too_big(path: Path) -> None:
    path.write_text("# padding\n" * 40_000)  # 400,000 bytes


USER_FILE_ATTACKS = {
    "fifo": (make_fifo, "is a named pipe (FIFO), not a regular file"),
    "dev_zero_link": (make_dev_zero_link, "is a symbolic link to a device, not a regular file"),
    "folder": (make_folder, "is a folder, not a regular file"),
    "too_big": (_too_big, "a config file is at most 262,144"),
}


@pytest.mark.parametrize("attack", USER_FILE_ATTACKS)
@pytest.mark.parametrize("argv", [("status",), ("compact", SESSION)])
def test_a_user_file_that_is_not_a_regular_file_is_refused_promptly(
    tmp_path: Path, home: Path, attack: str, argv: tuple[str, ...]
) -> None:
    workspace = grown_workspace(tmp_path / "repo")
    make, words = USER_FILE_ATTACKS[attack]
    user = user_file(home)
    make(user)
    done = cli(user_env(home), *argv, str(workspace))  # a FIFO that blocked would time out here
    one_line_refusal(done, f"{user}: (file): ", words)
    assert revision(workspace) == 0
    no_secret_in(done.out, done.err)
