"""The README's engine example runs exactly as written, in a fresh interpreter."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _engine_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Use the engine", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the README's 'Use the engine' section has no python block"
    return match.group(1)


def test_the_readme_engine_example_runs_and_compacts(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(_engine_example(), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        # The example's temporary workspace stays under tmp_path, which pytest removes.
        env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "compacted" in run.stdout, run.stdout
    # The last line is the trigger's explanation of the turn after the loop.
    assert run.stdout.strip().splitlines()[-1].startswith(("skip", "soft", "forced")), run.stdout
