"""docs/architecture.md names every module: its Layout block is a tree (a folder is a line
`name/`, its modules are the `name.py` on the lines indented under it, or on its own line; a
package is named by its folder), and each module under engine/ and metis_compaction_tui/ must
appear in it, at its place."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("engine", "metis_compaction_tui")
_FOLDER = re.compile(r"^([\w.]+)/(?=\s|$)")
_MODULE = re.compile(r"(?<![\w/.])([\w]+\.py)\b")


def layout_block(text: str) -> list[str]:
    """The first fenced block after the `## Layout` heading."""
    after = text.split("## Layout", 1)[1]
    return after.split("```", 2)[1].splitlines()[1:]


def documented_modules(lines: list[str]) -> set[str]:
    """Paths ("engine/cache/rows.py") the layout tree names."""
    found: set[str] = set()
    folders: list[tuple[int, str]] = []  # (indent, name) of the folders open above this line
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        first = line.lstrip()
        opened = _FOLDER.match(first)
        # A continuation line sits in the description column, right of every folder: it pops
        # none, so what it names belongs to the folder above it.
        while folders and folders[-1][0] >= indent:
            folders.pop()
        if opened:
            folders.append((indent, opened.group(1)))
        where = "/".join(name for _, name in folders)
        if opened:
            found.add(f"{where}/__init__.py")  # a package is named by its folder
        for module in _MODULE.findall(line):
            found.add(f"{where}/{module}" if where else module)
    return found


def source_modules() -> set[str]:
    return {
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
    }


def test_the_layout_tree_reads_folders_and_their_modules() -> None:
    tree = [
        "engine/        the library",
        "  manager.py   the manager",
        "  cache/       the cache: schema.py",
        "    rows.py    rows",
        "  store/",
        "    sql.py tail.py   statements, following",
        "               (continued: sql.py is named above)",
        "  history.py",
    ]
    assert documented_modules(tree) == {
        "engine/__init__.py",
        "engine/cache/__init__.py",
        "engine/store/__init__.py",
        "engine/manager.py",
        "engine/cache/schema.py",
        "engine/cache/rows.py",
        "engine/store/sql.py",
        "engine/store/tail.py",
        "engine/history.py",
    }


def test_every_module_is_named_in_the_architecture_layout() -> None:
    documented = documented_modules(layout_block(DOC.read_text(encoding="utf-8")))
    missing = sorted(source_modules() - documented)
    assert missing == [], "docs/architecture.md does not name: " + ", ".join(missing)
