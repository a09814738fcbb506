"""What the workspace-trust and file-type attacks share: a workspace as a cloned repository would
bring it (a real store with a session that has a span to compact), the real CLI run as its own
process with a fake key and token in its environment, and the checks every attack ends with."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import msgspec

from engine.store import SessionStore
from metis_compaction_tui.demo.workload import scripted_session
from tests.history_builders import QUIET_CONFIG

ROOT = Path(__file__).resolve().parents[2]
SESSION = "s"
KEY = "sk-ant-api03-TRUSTTESTKEY0123456789abcdef"
TOKEN = "trust-test-auth-token-0123456789"
SECRETS = (KEY, TOKEN, "TRUSTTESTKEY", "trust-test-auth-token")
GUARD_S = 60  # a hang would hit this; a clean refusal takes well under it


def grown_workspace(path: Path, model: str = "local:extractive", turns: int = 20) -> Path:
    """A store with one session of `model` and a compactable span (the offline model builds it)."""
    path.mkdir(parents=True, exist_ok=True)
    with SessionStore.open(path, create=True) as store:
        store.create_session(
            SESSION, config=msgspec.structs.replace(QUIET_CONFIG, compaction_model=model)
        )
        manager = store.manager(SESSION, summarizer_settings=None)
        script = scripted_session(11, 60)
        for turn in (next(script) for _ in range(turns)):
            for message in turn:
                manager.append(message)
        if manager.cache is not None:
            manager.cache.close()
    return path


@dataclass
class Run:
    code: int
    out: str
    err: str


def user_env(home: Path, **extra: str) -> dict[str, str]:
    """The user's environment: a key and a token set, their own config folder, nothing that
    points the SDK or the settings anywhere."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("METIS_", "ANTHROPIC_")) and k != "XDG_CONFIG_HOME"
    }
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        ANTHROPIC_API_KEY=KEY,
        ANTHROPIC_AUTH_TOKEN=TOKEN,
        **extra,
    )
    return env


def cli(env: dict[str, str], *argv: str, cwd: Path = ROOT, stdin: str = "") -> Run:
    """The real CLI as its own process; a hang fails the test at GUARD_S, it does not stall it."""
    done = subprocess.run(
        [sys.executable, "-m", "metis_compaction_tui.cli", *argv],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=GUARD_S,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def no_secret_in(*texts: str) -> None:
    for text in texts:
        found = [s for s in SECRETS if s in text]
        assert not found, f"credential in output: {found}"


def no_secret_stored(*folders: Path) -> None:
    """No credential in any file under `folders` (the store, the cache, the trust records)."""
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                found = [s for s in SECRETS if s.encode() in data]
                assert not found, f"credential stored in {path}: {found}"


def one_line_refusal(run: Run, *words: str) -> None:
    """Exit 2 (a config or store error), one line on stderr holding `words`, no traceback."""
    assert run.code == 2, (run.code, run.out, run.err)
    assert run.err.count("\n") == 1, run.err
    assert "Traceback" not in run.err
    for word in words:
        assert word in run.err, (word, run.err)


# -- files that are not what a config file should be (each makes one at `path`) ------------------


def make_fifo(path: Path) -> None:
    os.mkfifo(path)


def make_dev_zero_link(path: Path) -> None:
    path.symlink_to("/dev/zero")


def make_folder(path: Path) -> None:
    path.mkdir()
