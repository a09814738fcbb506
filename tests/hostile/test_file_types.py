"""Workspace files opened as what they claim to be (engine.safe_files): a config file or a spend
entry that is a link to /dev/zero, a FIFO or a folder is refused promptly and by name, never read
without bound or waited on; a SQLite file that is a link (symbolic or hard) to a file outside the
workspace is refused before SQLite can write through it.

Real files, links and FIFOs; the real CLI as its own process with a subprocess timeout as the
guard against a hang. Each test checks the outside file's bytes are unchanged, no credential is
printed or stored, and the exit code and the one-line message."""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path

import pytest

from engine.layout import cache_path, config_path, metis_dir, spend_journal_dir, store_path
from engine.store import SessionStore
from tests.hostile.workspace_files import (
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

OUTSIDE_BYTES = b"the user's own file, not a database\n" * 8


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file of the user's outside the workspace, which a link in the workspace points at."""
    path = tmp_path / "home-file.txt"
    path.write_bytes(OUTSIDE_BYTES)
    return path


def session_state(workspace: Path) -> tuple[int, Decimal]:
    with SessionStore.open(workspace) as store:
        info = store.session_info(SESSION)
        return info.revision, info.spent_usd


# -- the config file -----------------------------------------------------------------------------


def _link_outside(path: Path) -> None:
    target = path.parents[2] / "elsewhere.yaml"
    target.write_text('summarizer:\n  base_url: "http://127.0.0.1:9"\n')
    path.symlink_to(target)


def _too_big(path: Path) -> None:
    path.write_text("# padding\n" * 40_000)  # 400,000 bytes


CONFIG_ATTACKS = {
    "fifo": (make_fifo, "named pipe"),
    "dev_zero_link": (make_dev_zero_link, "symbolic link"),
    "folder": (make_folder, "folder"),
    "link_outside": (_link_outside, "symbolic link"),
    "too_big": (_too_big, "a config file is at most 262,144"),
}


@pytest.mark.parametrize("attack", CONFIG_ATTACKS)
@pytest.mark.parametrize(
    "argv", [("status",), ("compact", SESSION, "--dry-run"), ("compact", SESSION)]
)
def test_a_config_file_that_is_not_a_regular_file_is_refused_promptly(
    tmp_path: Path, home: Path, attack: str, argv: tuple[str, ...]
) -> None:
    workspace = grown_workspace(tmp_path / "repo")
    make, words = CONFIG_ATTACKS[attack]
    make(config_path(workspace))
    env = user_env(home)
    done = cli(env, *argv, str(workspace))  # a FIFO that blocked would time out here
    one_line_refusal(done, str(config_path(workspace)), words)
    assert session_state(workspace) == (0, Decimal(0))
    no_secret_in(done.out, done.err)


def test_a_metis_folder_linked_out_of_the_workspace_is_not_used(tmp_path: Path, home: Path) -> None:
    """`.metis` itself a link to another folder: its files resolve outside the workspace."""
    real = grown_workspace(tmp_path / "real")
    before = {p.name: p.read_bytes() for p in metis_dir(real).iterdir() if p.is_file()}
    workspace = tmp_path / "repo"
    workspace.mkdir()
    metis_dir(workspace).symlink_to(metis_dir(real))
    env = user_env(home)
    for argv in (("status",), ("compact", SESSION)):
        done = cli(env, *argv, str(workspace))
        one_line_refusal(done, "outside the workspace")
    after = {p.name: p.read_bytes() for p in metis_dir(real).iterdir() if p.is_file()}
    assert after == before


# -- the spend journal ---------------------------------------------------------------------------


SPEND_ATTACKS = {
    "dev_zero_link": lambda p: p.symlink_to("/dev/zero"),
    "fifo": lambda p: os.mkfifo(p),
    "folder": lambda p: p.mkdir(),
    "too_big": lambda p: p.write_bytes(b'{"session_id": "s", "usd": "1"}' + b" " * 10_000),
}


@pytest.mark.parametrize("attack", SPEND_ATTACKS)
def test_a_bad_spend_entry_is_left_in_place_and_the_write_goes_on(
    tmp_path: Path, home: Path, attack: str
) -> None:
    """A write transaction claims the journal's entries: a bad one neither hangs it, nor
    exhausts memory, nor stays renamed aside; a good one beside it is still folded in."""
    workspace = grown_workspace(tmp_path / "repo")
    journal = spend_journal_dir(workspace)
    journal.mkdir()
    bad = journal / "0bad.json"
    SPEND_ATTACKS[attack](bad)
    good = journal / "1good.json"
    good.write_bytes(json.dumps({"session_id": SESSION, "usd": "0.25"}).encode())
    env = user_env(home)
    done = cli(env, "compact", SESSION, str(workspace))
    assert done.code == 0, done.err
    assert "Traceback" not in done.err
    assert sorted(p.name for p in journal.iterdir()) == ["0bad.json"]  # not renamed aside
    assert bad.is_symlink() or bad.is_dir() or bad.exists()
    assert session_state(workspace) == (1, Decimal("0.25"))
    no_secret_in(done.out, done.err)
    no_secret_stored(workspace, home)


def test_a_journal_folder_linked_out_of_the_workspace_is_not_touched(
    tmp_path: Path, home: Path
) -> None:
    workspace = grown_workspace(tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    entry = elsewhere / "x.json"
    entry.write_bytes(json.dumps({"session_id": SESSION, "usd": "5"}).encode())
    spend_journal_dir(workspace).symlink_to(elsewhere)
    done = cli(user_env(home), "compact", SESSION, str(workspace))
    assert done.code == 0, done.err
    assert sorted(p.name for p in elsewhere.iterdir()) == ["x.json"]  # not claimed, not renamed
    assert session_state(workspace) == (1, Decimal(0))


# -- the SQLite files ----------------------------------------------------------------------------


def test_a_session_store_linked_outside_is_refused_and_the_file_kept(
    tmp_path: Path, home: Path, outside: Path
) -> None:
    workspace = tmp_path / "repo"
    metis_dir(workspace).mkdir(parents=True)
    store_path(workspace).symlink_to(outside)
    env = user_env(home)
    for argv in (("status",), ("compact", SESSION), ("simulate", "--seconds", "1", "--pace", "0")):
        done = cli(env, *argv, str(workspace))
        one_line_refusal(done, str(store_path(workspace)), "symbolic link")
        no_secret_in(done.out, done.err)
    assert outside.read_bytes() == OUTSIDE_BYTES
    assert not Path(f"{outside}-wal").exists() and not Path(f"{outside}-shm").exists()


def test_a_session_store_hard_linked_is_refused(tmp_path: Path, home: Path) -> None:
    workspace = grown_workspace(tmp_path / "repo")
    other_name = tmp_path / "other-name.sqlite"
    os.link(store_path(workspace), other_name)
    before = other_name.read_bytes()
    done = cli(user_env(home), "compact", SESSION, str(workspace))
    one_line_refusal(done, str(store_path(workspace)), "hard links")
    assert other_name.read_bytes() == before


@pytest.mark.parametrize("side", ["-wal", "-shm"])
def test_a_store_side_file_linked_outside_is_refused(
    tmp_path: Path, home: Path, outside: Path, side: str
) -> None:
    workspace = grown_workspace(tmp_path / "repo")
    link = Path(f"{store_path(workspace)}{side}")
    link.unlink(missing_ok=True)
    link.symlink_to(outside)
    done = cli(user_env(home), "compact", SESSION, str(workspace))
    one_line_refusal(done, f"sessions.sqlite{side}", "symbolic link")
    assert outside.read_bytes() == OUTSIDE_BYTES


@pytest.mark.parametrize("target", ["existing", "dangling"])
def test_a_cache_linked_outside_is_never_written_through(
    tmp_path: Path, home: Path, outside: Path, target: str
) -> None:
    """The measured attack: the outside file became a SQLite database holding session text. Now
    the cache is refused by name and the compaction goes on uncached; `cache list` refuses."""
    workspace = grown_workspace(tmp_path / "repo")
    cache = cache_path(workspace)
    for path in (cache, *(Path(f"{cache}{s}") for s in ("-wal", "-shm"))):
        path.unlink(missing_ok=True)
    aim = outside if target == "existing" else tmp_path / "not-yet.sqlite"
    cache.symlink_to(aim)
    env = user_env(home)
    done = cli(env, "compact", SESSION, str(workspace))
    assert done.code == 0, done.err
    assert f"compaction cache {cache} is a symbolic link" in done.err
    assert session_state(workspace)[0] == 1
    listed = cli(env, "cache", "list", str(workspace))
    assert listed.code == 2, listed
    assert f"metis-compaction-tui: compaction cache {cache} is a symbolic link" in listed.err
    assert "Traceback" not in listed.err
    if target == "existing":
        assert outside.read_bytes() == OUTSIDE_BYTES
    else:
        assert not aim.exists()
    assert not Path(f"{aim}-wal").exists() and not Path(f"{aim}-shm").exists()
    no_secret_in(done.out, done.err, listed.out, listed.err)


def test_a_claim_that_fails_midway_puts_every_entry_back(tmp_path: Path) -> None:
    """In-process: the transaction fails on the second entry's UPDATE (a trigger aborts it); the
    first entry, already claimed, and the second are both back under their own names."""
    import sqlite3

    from engine.store import spend_journal

    folder = spend_journal_dir(tmp_path)
    metis_dir(tmp_path).mkdir()
    first = spend_journal.write_entry(folder, "a", Decimal("0.1"))
    second = spend_journal.write_entry(folder, "b", Decimal("0.2"))
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE sessions (session_id TEXT, spent_usd TEXT)")
    conn.executemany("INSERT INTO sessions VALUES (?, '0')", [("a",), ("b",)])
    conn.execute(
        "CREATE TRIGGER no_b BEFORE UPDATE ON sessions WHEN NEW.session_id = 'b' "
        "BEGIN SELECT RAISE(ABORT, 'refused'); END"
    )
    with pytest.raises(sqlite3.IntegrityError):
        spend_journal.claim_into(conn, folder)
    assert sorted(p.name for p in folder.iterdir()) == sorted([first.name, second.name])
