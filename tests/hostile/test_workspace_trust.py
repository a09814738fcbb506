"""Workspace trust (engine.workspace_trust): a cloned repository's `.metis/config.yaml` may tune
the knobs, but what runs code (`summarizer.import`) or says where the session and the key go
(`summarizer.base_url`) takes effect only once the user has trusted that exact file.

Each attack runs the real CLI as its own process with a fake key and token in its environment,
and checks: nothing outside the workspace changed (the marker a shell command would create, the
store's revision), no credential in stdout, stderr or any stored file, and the exit code and the
one-line message."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from engine.layout import config_path
from engine.store import SessionStore
from tests.hostile.workspace_files import (
    KEY,
    SESSION,
    cli,
    grown_workspace,
    no_secret_in,
    no_secret_stored,
    one_line_refusal,
    user_env,
)
from tests.messages_api_server import MessagesAPIServer, ok

MODEL = "anthropic:claude-haiku-4-5"


def revision(workspace: Path) -> int:
    with SessionStore.open(workspace) as store:
        return store.session_info(SESSION).revision


def write_config(workspace: Path, text: str) -> Path:
    path = config_path(workspace)
    path.write_text(text)
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The user's home, outside the workspace: their config folder and the attack's marker."""
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def shell_attack(workspace: Path, marker: Path) -> Path:
    """os.system called with the model's name: a shell command substitution in it runs."""
    return write_config(
        workspace,
        "# a helpful team config\n"
        "compaction_preserve_recent_turns: 2\n"
        "summarizer:\n"
        '  import: "os:system"\n'
        f'compaction_model: "x:$(touch${{IFS}}{marker})"\n',
    )


@pytest.mark.parametrize(
    "argv",
    [
        ("compact", SESSION, "--dry-run"),
        ("compact", SESSION),
        ("simulate", "--seconds", "1", "--turns", "2", "--pace", "0"),
    ],
    ids=["compact-dry-run", "compact", "simulate"],
)
def test_an_untrusted_import_path_runs_nothing(tmp_path: Path, home: Path, argv: tuple) -> None:
    workspace = grown_workspace(tmp_path / "repo")
    marker = home / "MARKER"
    config = shell_attack(workspace, marker)
    env = user_env(home)
    done = cli(env, *argv, str(workspace))
    one_line_refusal(
        done,
        f"{config}:4: summarizer.import",
        "not trusted",
        f"`{argv[0]}",
        f"metis-compaction-tui trust {workspace.resolve()}",
    )
    assert not marker.exists()
    assert revision(workspace) == 0
    no_secret_in(done.out, done.err)
    no_secret_stored(workspace, home)


def test_a_script_shipped_in_the_repo_is_not_run(tmp_path: Path, home: Path) -> None:
    """runpy.run_path(model): the model's name is a path to a script the repository ships."""
    workspace = grown_workspace(tmp_path / "repo")
    marker = home / "MARKER"
    (workspace / "x:payload.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    write_config(
        workspace, 'compaction_model: "x:payload.py"\nsummarizer:\n  import: runpy:run_path\n'
    )
    env = user_env(home)
    for argv in (("compact", SESSION, "--dry-run"), ("compact", SESSION)):
        done = cli(env, *argv, str(workspace), cwd=workspace)
        one_line_refusal(done, "summarizer.import", "metis-compaction-tui trust")
    assert not marker.exists()
    assert revision(workspace) == 0


def test_reading_commands_work_on_an_untrusted_workspace_and_say_so(
    tmp_path: Path, home: Path
) -> None:
    workspace = grown_workspace(tmp_path / "repo")
    marker = home / "MARKER"
    shell_attack(workspace, marker)
    env = user_env(home)
    text = cli(env, "status", str(workspace))
    assert text.code == 0, text.err
    assert "untrusted" in text.out and "summarizer.import" in text.out
    assert "compaction_preserve_recent_turns = 2" in text.out  # the rest of the file applies
    as_json = cli(env, "status", str(workspace), "--json")
    assert as_json.code == 0, as_json.err
    report = json.loads(as_json.out)
    trust = report["workspace_trust"]
    assert trust["state"] == "untrusted"
    assert trust["withheld"] == ["summarizer.import", "compaction_model"]
    (session,) = report["sessions"]
    assert session["model"] == "local:extractive"  # the stored model: the file's is withheld
    line = cli(env, "statusline", "--sync", str(workspace))
    assert line.code == 0, line.err
    assert "untrusted config" in line.out
    listed = cli(env, "cache", "list", str(workspace))
    assert listed.code == 0, listed.err
    shown = cli(env, "trust", "--show", str(workspace))
    assert shown.code == 0 and "untrusted" in shown.out
    assert not marker.exists()
    for done in (text, as_json, line, listed, shown):
        no_secret_in(done.out, done.err)
    no_secret_stored(workspace, home)


def test_a_foreign_endpoint_gets_nothing_until_trusted_then_is_named(
    tmp_path: Path, home: Path
) -> None:
    """The measured leak: the key and the session went to a host only the workspace file named,
    and the output never said where. Untrusted: no request at all. Trusted: the request goes
    there and `compact` names it, before (--dry-run) and after."""
    workspace = grown_workspace(tmp_path / "repo")
    env = user_env(home)
    with MessagesAPIServer(default=ok("SUMMARY OF THE SPAN", 3_000, 120)) as server:
        config = write_config(
            workspace,
            f'compaction_model: "{MODEL}"\nsummarizer:\n  base_url: "{server.base_url}"\n',
        )
        for argv in (("compact", SESSION, "--dry-run"), ("compact", SESSION)):
            done = cli(env, *argv, str(workspace))
            one_line_refusal(done, f"{config}:3: summarizer.base_url", "metis-compaction-tui trust")
            no_secret_in(done.out, done.err)
        assert server.requests == []
        assert revision(workspace) == 0

        trusted = cli(env, "trust", str(workspace))
        assert trusted.code == 0, trusted.err
        assert f"summarizer.base_url = {server.base_url}" in trusted.out
        preview = cli(env, "compact", SESSION, str(workspace), "--dry-run")
        assert preview.code == 0, preview.err
        assert f"endpoint   {server.base_url}" in preview.out
        assert [r for r in server.requests if r.path.endswith("/messages")] == []
        as_json = cli(env, "compact", SESSION, str(workspace), "--dry-run", "--json")
        assert json.loads(as_json.out)["endpoint"] == server.base_url
        done = cli(env, "compact", SESSION, str(workspace))
        assert done.code == 0, done.err
        assert f"endpoint   {server.base_url}" in done.out
        calls = [r for r in server.requests if r.path.endswith("/messages")]
        assert len(calls) == 1
        # Trusted, the key goes there: the user's own choice now.
        assert any(KEY in value for value in calls[0].headers.values())
    assert revision(workspace) == 1
    for run in (trusted, preview, done, as_json):
        no_secret_in(run.out, run.err)
    no_secret_stored(workspace, home)


def test_a_changed_file_needs_trusting_again(tmp_path: Path, home: Path) -> None:
    workspace = grown_workspace(tmp_path / "repo")
    env = user_env(home)
    config = write_config(workspace, 'summarizer:\n  base_url: "http://127.0.0.1:9"\n')
    assert cli(env, "trust", str(workspace)).code == 0
    assert json.loads(cli(env, "trust", "--show", str(workspace), "--json").out)["state"] == (
        "trusted"
    )
    config.write_text(config.read_text() + "# one more line\n")  # any change: another digest
    done = cli(env, "compact", SESSION, str(workspace), "--dry-run")
    one_line_refusal(done, "summarizer.base_url", "has changed since you trusted it")
    shown = json.loads(cli(env, "trust", "--show", str(workspace), "--json").out)
    assert shown["state"] == "untrusted" and shown["changed"] is True
    assert cli(env, "trust", str(workspace)).code == 0
    assert cli(env, "untrust", str(workspace)).code == 0
    again = cli(env, "compact", SESSION, str(workspace), "--dry-run")
    one_line_refusal(again, "summarizer.base_url", "not trusted")


def test_trust_is_recorded_in_the_users_config_folder_only(tmp_path: Path, home: Path) -> None:
    workspace = grown_workspace(tmp_path / "repo")
    write_config(workspace, 'summarizer:\n  base_url: "http://127.0.0.1:9"\n')
    before = sorted(p.relative_to(workspace) for p in workspace.rglob("*"))
    env = user_env(home)
    del env["XDG_CONFIG_HOME"]  # then ~/.config, as the XDG spec says
    assert cli(env, "trust", str(workspace)).code == 0
    (record,) = (home / ".config" / "metis-compaction-tui" / "trusted-workspaces").iterdir()
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert json.loads(record.read_bytes())["workspace"] == str(workspace.resolve())
    assert sorted(p.relative_to(workspace) for p in workspace.rglob("*")) == before
    # A workspace reached through a link is the same workspace.
    link = tmp_path / "link-to-repo"
    link.symlink_to(workspace)
    shown = json.loads(cli(env, "trust", "--show", str(link), "--json").out)
    assert shown["state"] == "trusted"


def test_the_same_settings_from_the_environment_or_a_flag_need_no_trust(
    tmp_path: Path, home: Path
) -> None:
    workspace = grown_workspace(tmp_path / "repo")
    with MessagesAPIServer(default=ok("SUMMARY", 3_000, 100)) as server:
        # A file pointing elsewhere is overridden by the flag: nothing of it is in force.
        write_config(
            workspace,
            f'compaction_model: "{MODEL}"\nsummarizer:\n  base_url: "http://127.0.0.1:9"\n',
        )
        env = user_env(home)
        by_flag = cli(
            env,
            "compact", SESSION, str(workspace), "--dry-run",
            "--set", f"summarizer.base_url={server.base_url}",
        )  # fmt: skip
        assert by_flag.code == 0, by_flag.err
        assert f"endpoint   {server.base_url}" in by_flag.out
        config_path(workspace).unlink()
        env_set = user_env(
            home, METIS_SUMMARIZER_BASE_URL=server.base_url, METIS_COMPACTION_MODEL=MODEL
        )
        by_env = cli(env_set, "compact", SESSION, str(workspace))
        assert by_env.code == 0, by_env.err
        assert f"endpoint   {server.base_url}" in by_env.out
        assert len([r for r in server.requests if r.path.endswith("/messages")]) == 1
    for run in (by_flag, by_env):
        no_secret_in(run.out, run.err)
    no_secret_stored(workspace, home)


def test_the_endpoint_is_named_when_nothing_sets_one(tmp_path: Path, home: Path) -> None:
    workspace = grown_workspace(tmp_path / "repo")
    env = user_env(home)
    offline = cli(env, "compact", SESSION, str(workspace), "--dry-run")
    assert offline.code == 0, offline.err
    assert "endpoint   offline" in offline.out
    default = cli(env, "compact", SESSION, str(workspace), "--dry-run", "--set", f"model={MODEL}")
    assert default.code == 0, default.err
    assert "endpoint   Anthropic API default" in default.out


def test_trust_is_what_stands_between_the_file_and_the_shell(tmp_path: Path, home: Path) -> None:
    """The control: once the user trusts that file, its import path does run, so the refusals
    above are trust at work, not an attack that never worked."""
    workspace = grown_workspace(tmp_path / "repo")
    marker = home / "MARKER"
    shell_attack(workspace, marker)
    env = user_env(home)
    assert cli(env, "trust", str(workspace)).code == 0
    cli(env, "compact", SESSION, str(workspace), "--dry-run")
    assert marker.exists()


def test_transcript_commands_in_an_untrusted_folder_run_nothing(tmp_path: Path, home: Path) -> None:
    """`compact T --dry-run` and `inspect` take the current folder's config: in a cloned repo
    they refuse; `status T` works on the rest of the file."""
    from tests.transcript_writer import ClaudeCodeWriter

    repo = tmp_path / "repo"
    repo.mkdir()
    config_path(repo).parent.mkdir()
    marker = home / "MARKER"
    shell_attack(repo, marker)
    transcript = tmp_path / "session.jsonl"
    writer = ClaudeCodeWriter(11, compact_every=10)
    transcript.write_text("".join(line for _ in range(20) for line in writer.turn()))
    env = user_env(home)
    preview = cli(env, "compact", str(transcript), "--dry-run", cwd=repo)
    one_line_refusal(preview, "summarizer.import", "`compact --dry-run`", "trust")
    inspect = cli(env, "inspect", str(transcript), cwd=repo)
    one_line_refusal(inspect, "summarizer.import", "`inspect`", "trust")
    status = cli(env, "status", str(transcript), cwd=repo)
    assert status.code == 0, status.err
    assert not marker.exists()
    for run in (preview, inspect, status):
        no_secret_in(run.out, run.err)


def test_a_provider_named_only_by_the_store_is_refused_until_the_user_names_it(
    tmp_path: Path, home: Path
) -> None:
    """The session store is a workspace file too: a session whose stored model is another
    provider's (openai:) would send the session and OPENAI_API_KEY there with no config file at
    all. Refused in one line until the user names the model; then the dry run goes ahead."""
    import sqlite3

    import msgspec

    from engine import CompactionConfig, store_path

    workspace = grown_workspace(tmp_path / "repo")
    stored = msgspec.json.encode(CompactionConfig(compaction_model="openai:gpt-4o")).decode()
    with sqlite3.connect(store_path(workspace)) as db:
        db.execute("UPDATE sessions SET config = ? WHERE session_id = ?", (stored, SESSION))
    env = user_env(home, OPENAI_API_KEY=KEY)
    refused = cli(env, "compact", SESSION, str(workspace), "--dry-run")
    one_line_refusal(refused, "openai:gpt-4o", "another provider", "--set compaction_model=")
    chosen = cli(
        env,
        "compact",
        SESSION,
        str(workspace),
        "--dry-run",
        "--set",
        "compaction_model=openai:gpt-4o",
        "--set",
        "summarizer.price.input_per_mtok=1",
        "--set",
        "summarizer.price.output_per_mtok=2",
    )
    assert chosen.code == 0, chosen.err
    assert "endpoint   OpenAI API default" in chosen.out, chosen.out
    for done in (refused, chosen):
        no_secret_in(done.out, done.err)
