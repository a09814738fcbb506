"""`simulate` when `.metis` is a file crashed with a traceback; negative or
NaN arguments were accepted and ran (0 turns, a NaN deadline). Now: one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.layout import metis_dir
from metis_compaction_tui.cli import main


def test_simulate_where_metis_is_a_file_is_a_clear_error(tmp_path: Path, capsys) -> None:
    metis_dir(tmp_path).write_text("not a folder")
    assert main(["simulate", str(tmp_path), "--seconds", "0.5", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert ".metis is a file" in err and "Traceback" not in err
    assert metis_dir(tmp_path).read_text() == "not a folder"


BAD = [
    ["--seconds", "nan"], ["--seconds", "-1"], ["--seconds", "inf"],
    ["--pace", "-2"], ["--pace", "nan"], ["--turns", "-3"], ["--turns", "0"],
    ["--reruns", "-1"], ["--seed", "-5"], ["--turns", "many"],
]  # fmt: skip


@pytest.mark.parametrize("flags", BAD, ids=lambda f: "".join(f))
def test_simulate_refuses_negative_and_nan_arguments(tmp_path: Path, capsys, flags) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["simulate", str(tmp_path), *flags])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert flags[0] in err and "Traceback" not in err
    assert not metis_dir(tmp_path).exists()  # nothing ran, nothing written


@pytest.mark.parametrize("limit", ["-1", "0", "nan"])
def test_status_limit_must_be_positive(tmp_path: Path, capsys, limit: str) -> None:
    """`status --limit -1` is refused."""
    with pytest.raises(SystemExit) as exited:
        main(["status", "--limit", limit, str(tmp_path)])
    assert exited.value.code == 2 and "--limit" in capsys.readouterr().err
