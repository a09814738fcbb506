"""The quick/full switch: `HOSTILE_FULL=1` runs the full trial counts, otherwise the quick ones."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.processes import spawn_worker

FULL = os.environ.get("HOSTILE_FULL") == "1"
ROOT = Path(__file__).resolve().parents[2]
WORKERS = Path(__file__).with_name("workers.py")

settings.register_profile(
    "hostile",
    max_examples=2_000 if FULL else 150,
    deadline=None,
    derandomize=True,  # seeded: the same examples every run
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def trials(quick: int, full: int) -> int:
    """How many times an attack is tried in this mode."""
    return full if FULL else quick


def rng(seed: int) -> random.Random:
    return random.Random(seed)


def spawn(*args: object) -> subprocess.Popen[str]:
    """A real second process running a role of tests/hostile/workers.py (killed, with its
    group, after the test if it is still running)."""
    return spawn_worker(WORKERS, *args)


def can_mount() -> bool:
    return sys.platform == "linux" and os.geteuid() == 0 and shutil.which("mount") is not None


@contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A tiny tmpfs at `path` (root on Linux only): a disk that really fills up."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def remount(path: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(path)], check=True)
