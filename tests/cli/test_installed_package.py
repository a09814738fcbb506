"""The package as pip installs it from the checkout (a built wheel, not the editable checkout):
its console script runs, names its version, and carries the app's stylesheets.

The new venv gets this checkout's dependencies from the running interpreter's site-packages
(one path line in a .pth file), so nothing but the build backend comes from a package index.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.cli_process import ROOT

pytestmark = pytest.mark.slow

# What a wheel is built from: the project file, the files it names, the two packages.
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "engine", "metis_compaction_tui")


def _run(*command: str | Path, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done.stdout


def _env() -> dict[str, str]:
    """The environment without what would point the new venv back at the checkout."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the package installed from a copy of the checkout; its bin folder."""
    base = tmp_path_factory.mktemp("installed")
    source = base / "source"
    source.mkdir()
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        copy(ROOT / name, source / name)
    for cache in source.rglob("__pycache__"):
        shutil.rmtree(cache)
    venv = base / "venv"
    env = _env()
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=base, env=env)
    python = venv / "bin" / "python"
    purelib = _run(
        python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=base, env=env
    )
    # Appended after the venv's own site-packages: the installed wheel wins over any checkout.
    Path(purelib.strip(), "deps-from-the-test-run.pth").write_text(
        "\n".join(site.getsitepackages()) + "\n", encoding="utf-8"
    )
    _run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "-q",
        "--no-deps",
        source,
        cwd=base,
        env=env,
    )
    return venv / "bin"


def test_the_console_script_names_the_declared_version(installed: Path, tmp_path: Path) -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    printed = _run(installed / "metis-compaction-tui", "--version", cwd=tmp_path, env=_env())
    assert printed.strip() == f"metis-compaction-tui {declared['project']['version']}"


def test_the_installed_copy_is_what_runs_and_holds_the_stylesheets(
    installed: Path, tmp_path: Path
) -> None:
    where = _run(
        installed / "python",
        "-c",
        "import metis_compaction_tui, engine; "
        "print(metis_compaction_tui.__file__); print(engine.__file__)",
        cwd=tmp_path,
        env=_env(),
    ).split()
    venv = installed.parent
    assert all(Path(path).is_relative_to(venv) for path in where), where
    package = Path(where[0]).parent
    assert (package / "app.tcss").is_file()
    assert sorted(p.name for p in package.rglob("*.tcss")) == sorted(
        p.name for p in (ROOT / "metis_compaction_tui").rglob("*.tcss")
    )


def test_the_console_script_runs_a_subcommand_and_the_status_line(
    installed: Path, tmp_path: Path
) -> None:
    script = installed / "metis-compaction-tui"
    usage = _run(script, "status", "--help", cwd=tmp_path, env=_env())
    assert usage.startswith("usage: metis-compaction-tui status")
    statusline = _run(script, "statusline", "--help", cwd=tmp_path, env=_env())
    assert "usage: metis-compaction-tui statusline" in statusline
    missing = subprocess.run(
        [str(script), "status", str(tmp_path / "nowhere")],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert missing.returncode == 2
    assert "Traceback" not in missing.stderr and "nowhere" in missing.stderr


def test_the_printed_status_line_block_runs_from_the_installed_script(
    installed: Path, tmp_path: Path
) -> None:
    """What the README tells a user to paste into Claude Code's settings.json: the block names
    the installed script by its absolute path, and that command, run as Claude Code runs it
    (through the shell, the statusLine JSON on stdin), prints one line."""
    import json
    import shlex

    script = installed / "metis-compaction-tui"
    block = json.loads(_run(script, "statusline", "--settings", cwd=tmp_path, env=_env()))
    command = block["statusLine"]["command"]
    assert block["statusLine"]["type"] == "command"
    assert shlex.split(command)[0] == str(script)
    stdin = json.dumps(
        {
            "session_id": "0b5e7c1d",
            "transcript_path": str(tmp_path / "missing.jsonl"),
            "cwd": str(tmp_path),
            "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"},
            "context_window": {
                "context_window_size": 200_000,
                "current_usage": {
                    "input_tokens": 1_200,
                    "cache_read_input_tokens": 118_000,
                    "cache_creation_input_tokens": 3_800,
                    "output_tokens": 450,
                },
            },
        }
    )
    env = {**_env(), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"}  # the agent's PATH: no venv
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        input=stdin,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith("ctx 123k/200k") and "auto-compact at 167k" in line, line
