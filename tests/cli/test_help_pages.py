"""`inspect --help` is written without argparse (cli.help_pages): it must be argparse's own page
for the inspect parser, byte for byte, at any width."""

from __future__ import annotations

import subprocess
import sys

import pytest

from engine.layout import CONFIG_FILE, METIS_DIR
from metis_compaction_tui.cli import dispatch as cli
from metis_compaction_tui.cli import main as entry
from metis_compaction_tui.cli.help_pages import WORKSPACE_CONFIG


def argparse_page(capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as done:
        cli.build_parser(only="inspect").parse_args(["inspect", "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("columns", ["1", "22", "30", "41", "50", "64", "80", "100", "123", "250"])
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_the_inspect_help_page_is_argparses_page(
    columns: str, flag: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    assert entry(["inspect", flag]) == 0
    fast = capsys.readouterr().out
    assert fast == argparse_page(capsys)
    assert "--scratch" in fast and "-w PATH" in fast


@pytest.mark.parametrize("columns", ["", "0", "wide", "-5"])
def test_a_columns_value_that_is_no_width_is_read_as_argparse_reads_it(
    columns: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    assert entry(["inspect", "--help"]) == 0
    assert capsys.readouterr().out == argparse_page(capsys)


def test_the_page_names_the_config_file_where_the_engine_keeps_it() -> None:
    assert f"{METIS_DIR}/{CONFIG_FILE}" == WORKSPACE_CONFIG


def test_the_inspect_help_page_loads_neither_argparse_nor_the_engine() -> None:
    code = (
        "import sys\n"
        "from metis_compaction_tui.cli import main\n"
        "main(['inspect', '--help'])\n"
        "print(sorted(m for m in ('argparse', 'engine', 'typing') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "[]"
