"""Print a pip constraints file pinning every runtime dependency of pyproject.toml to its floor.

CI installs the package with these constraints in a separate venv, so a floor that no longer
works (an import or an API the code needs appeared later) fails CI instead of a user's install.
Usage: python .ci/lowest_constraints.py [EXTRA ...] > constraints.txt
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

_FLOOR = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*>=\s*([^,;\s]+)")


def floors(pyproject: Path, extras: list[str]) -> list[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    pins = []
    for requirement in requirements:
        match = _FLOOR.match(requirement)
        if match is None:
            raise SystemExit(f"{pyproject}: {requirement!r} states no floor (name>=version)")
        pins.append(f"{match[1]}=={match[2]}")
    return pins


if __name__ == "__main__":
    root = Path(__file__).resolve().parent.parent
    print("\n".join(floors(root / "pyproject.toml", sys.argv[1:])))
