"""engine/layout.py is the one module that spells out the `.metis/` folder and its files."""

from __future__ import annotations

import re
from pathlib import Path

from engine import layout

ROOT = Path(__file__).resolve().parents[2]
# A path literal: ".metis" as a string, or a file name of the folder written out in code.
LITERAL = re.compile(r"""["']\.metis["'/]|["'](sessions|compaction-cache)\.sqlite["']""")


def test_paths_hang_off_one_folder(tmp_path: Path) -> None:
    folder = layout.metis_dir(tmp_path)
    assert folder == tmp_path / layout.METIS_DIR
    for path in (
        layout.store_path(tmp_path),
        layout.cache_path(tmp_path),
        layout.config_path(tmp_path),
        layout.simulator_log_path(tmp_path),
    ):
        assert path.parent == folder
    assert not layout.is_workspace(tmp_path)
    folder.mkdir()
    assert layout.is_workspace(tmp_path)


def test_file_identity_changes_when_a_file_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "f"
    assert layout.file_identity(path) is None
    path.write_text("a")
    before = layout.file_identity(path)
    staged = tmp_path / "g"
    staged.write_text("b")
    staged.replace(path)
    assert layout.file_identity(path) not in (None, before)


# The status line's fast half and the help pages write their paths out (importing the engine
# costs more than their whole call); tests/statusline and tests/cli check them against
# engine.layout's.
ALLOWED = (
    ROOT / "engine" / "layout.py",
    Path(__file__),
    ROOT / "metis_compaction_tui" / "statusline" / "workspace.py",
    ROOT / "tests" / "statusline" / "test_statusline.py",
    ROOT / "metis_compaction_tui" / "cli" / "help_pages.py",
)


def test_no_other_module_spells_out_the_layout() -> None:
    offenders = []
    for package in ("engine", "metis_compaction_tui", "tests"):
        for path in (ROOT / package).rglob("*.py"):
            if path in ALLOWED:
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if LITERAL.search(line.split("#")[0]):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []
