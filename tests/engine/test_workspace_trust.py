"""engine.workspace_trust and engine.safe_files in-process: which keys are gated, how a record is
read back (untrusted when in doubt), and the safe-open rule on real links, FIFOs and folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.layout import config_path, metis_dir
from engine.safe_files import FileRefused, read_regular, sqlite_files_problem
from engine.workspace_config import ConfigFileError, resolve_config, trust_workspace
from engine.workspace_trust import (
    NO_FILE,
    NOT_NEEDED,
    TRUSTED,
    UNTRUSTED,
    TrustError,
    is_gated,
    record_path,
    untrust_workspace,
)


def write(workspace: Path, text: str) -> Path:
    path = config_path(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("key", "value", "gated"),
    [
        ("summarizer.import", "os:system", True),
        ("summarizer.options", {"url": "x"}, True),
        ("summarizer.base_url", "http://127.0.0.1:1", True),
        ("compaction_model", "x:$(touch MARKER)", True),
        ("summarizer.model", "acme:small", True),
        ("compaction_model", "anthropic:claude-haiku-4-5", False),
        ("compaction_model", "local:extractive", False),
        ("summarizer.timeout_s", 5.0, False),
        ("summarizer.price.input_per_mtok", 0, False),
        ("compaction_max_cost_per_session_usd", 100, False),
    ],
)
def test_which_settings_need_trust(key: str, value: object, gated: bool) -> None:
    assert is_gated(key, value) is gated


def test_states_from_no_file_to_trusted(tmp_path: Path) -> None:
    assert resolve_config(tmp_path, environ={}).trust.state == NO_FILE
    write(tmp_path, "compaction_threshold_tokens: 40000\n")
    assert resolve_config(tmp_path, environ={}).trust.state == NOT_NEEDED
    write(tmp_path, 'summarizer:\n  base_url: "http://127.0.0.1:1"\n')
    untrusted = resolve_config(tmp_path, environ={})
    assert untrusted.trust.state == UNTRUSTED and untrusted.summarizer.base_url is None
    trust_workspace(tmp_path)
    trusted = resolve_config(tmp_path, environ={})
    assert trusted.trust.state == TRUSTED
    assert trusted.summarizer.base_url == "http://127.0.0.1:1"
    assert untrust_workspace(tmp_path) is True
    assert untrust_workspace(tmp_path) is False
    assert resolve_config(tmp_path, environ={}).trust.state == UNTRUSTED


def test_a_value_from_the_environment_is_in_force_and_withholds_nothing(tmp_path: Path) -> None:
    write(tmp_path, 'summarizer:\n  base_url: "http://127.0.0.1:1"\n')
    resolved = resolve_config(tmp_path, environ={"METIS_SUMMARIZER_BASE_URL": "http://127.0.0.1:2"})
    assert resolved.trust.state == UNTRUSTED and resolved.trust.withheld == ()
    assert resolved.summarizer.base_url == "http://127.0.0.1:2"
    resolved.require_trust("compact")  # nothing of the file's is in force: no refusal


def test_a_bad_gated_value_is_named_even_untrusted(tmp_path: Path) -> None:
    write(tmp_path, 'summarizer:\n  import: "not a path"\n')
    with pytest.raises(ConfigFileError, match=r"summarizer\.import"):
        resolve_config(tmp_path, environ={})


@pytest.mark.parametrize(
    "record", [b"", b"garbage", b'{"workspace": "/elsewhere", "config_file": "x", "sha256": "y"}']
)
def test_a_record_that_is_not_ours_trusts_nothing(tmp_path: Path, record: bytes) -> None:
    write(tmp_path, 'summarizer:\n  base_url: "http://127.0.0.1:1"\n')
    trust_workspace(tmp_path)
    record_path(tmp_path).write_bytes(record)
    assert resolve_config(tmp_path, environ={}).trust.state == UNTRUSTED


def test_a_record_that_is_a_link_or_fifo_trusts_nothing(tmp_path: Path) -> None:
    write(tmp_path, 'summarizer:\n  base_url: "http://127.0.0.1:1"\n')
    trust_workspace(tmp_path)
    path = record_path(tmp_path)
    real = path.with_name("real.json")
    path.rename(real)
    path.symlink_to(real)
    assert resolve_config(tmp_path, environ={}).trust.state == UNTRUSTED
    path.unlink()
    os.mkfifo(path)
    assert resolve_config(tmp_path, environ={}).trust.state == UNTRUSTED  # and did not block


def test_a_file_that_does_not_parse_is_not_trusted(tmp_path: Path) -> None:
    write(tmp_path, "summarizer: [unclosed\n")
    with pytest.raises(ConfigFileError, match="YAML syntax"):
        trust_workspace(tmp_path)
    assert not record_path(tmp_path).exists()
    with pytest.raises(TrustError, match="does not exist or is not a folder"):
        trust_workspace(tmp_path / "empty")  # not a folder
    (tmp_path / "empty").mkdir()
    with pytest.raises(TrustError, match="nothing to trust"):
        trust_workspace(tmp_path / "empty")


# -- engine.safe_files --------------------------------------------------------------------------


def test_read_regular_refuses_what_is_not_a_bounded_regular_file(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_bytes(b"12345")
    assert read_regular(plain, 5) == b"12345"
    with pytest.raises(FileRefused, match="5 bytes; a file here is at most 4"):
        read_regular(plain, 4)
    link = tmp_path / "link"
    link.symlink_to(plain)
    with pytest.raises(FileRefused, match="symbolic link"):
        read_regular(link, 100)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(FileRefused, match="named pipe"):
        read_regular(fifo, 100)
    with pytest.raises(FileRefused, match="folder"):
        read_regular(tmp_path, 100)
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "missing", 100)
    inner = metis_dir(tmp_path / "ws")
    inner.parent.mkdir()
    inner.symlink_to(tmp_path)  # a .metis that links out of its workspace
    with pytest.raises(FileRefused, match="outside the workspace"):
        read_regular(inner / "plain", 100, workspace=tmp_path / "ws")


def test_sqlite_files_problem_names_each_kind(tmp_path: Path) -> None:
    db = tmp_path / "x.sqlite"
    assert sqlite_files_problem(db) is None  # none yet: SQLite creates it
    db.write_bytes(b"")
    assert sqlite_files_problem(db) is None
    Path(f"{db}-wal").symlink_to(tmp_path / "elsewhere")
    assert sqlite_files_problem(db) == (
        "has a side file x.sqlite-wal that is a symbolic link; SQLite would write through it: "
        "not opened"
    )
    Path(f"{db}-wal").unlink()
    os.link(db, tmp_path / "second-name")
    assert "2 hard links" in (sqlite_files_problem(db) or "")
    os.unlink(tmp_path / "second-name")
    db.unlink()
    os.mkfifo(db)
    assert sqlite_files_problem(db) == "is a named pipe (FIFO), not a regular file: not opened"


def test_trust_shows_what_it_allows_but_no_credential_option(tmp_path: Path) -> None:
    write(
        tmp_path,
        'summarizer:\n  import: "tests.plugins.acme:make"\n'
        '  options: {auth_token: "gw-secret-0123456789", region: eu}\n'
        'compaction_model: "acme:small"\n',
    )
    _, allowed = trust_workspace(tmp_path)
    assert allowed["summarizer.options"] == {"auth_token": "[redacted]", "region": "eu"}
    assert allowed["summarizer.import"] == "tests.plugins.acme:make"
