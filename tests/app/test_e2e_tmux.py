"""End to end: the real `metis-compaction-tui demo` in a real terminal (tmux), driven by keys.

The demo makes its workspace under $TMPDIR (set here to the test's tmp_path, so the store and
the cache can be opened beside the app), starts the simulated metis dev in its own process and
opens the app. The test reads the screen with `capture-pane` and checks it against the store:
live messages, compact now (preview, summary, accept), the compaction on the dashboard and in
sessions.sqlite, a cache row evicted after confirmation (gone on screen and from
compaction-cache.sqlite), then `q`, a clean exit and the tmux session gone. Every wait polls
the screen against a deadline; nothing sleeps for a fixed time.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.layout import simulator_log_path
from engine.store import SessionStore
from tests.app.app_helpers import cache_keys

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

ROOT = Path(__file__).resolve().parents[2]
WIDTH, HEIGHT = 100, 30
# The demo writer: 12 turns of the seed-0 script (62 messages, one soft compaction at turn 8,
# a compactable span left at the end) at 5 messages a second: ~12 s of live appends, so the
# app shows some even when it is slow to start on a busy machine; one session, no rerun.
# --keep: the workspace outlives the demo, for the checks after `q`.
DEMO_FLAGS = ("--pace", "5", "--turns", "12", "--reruns", "0", "--seed", "0", "--keep")
INSTRUCTIONS = "keep the e2e marker"
STATUS = re.compile(r"([\d,]+) msgs · rev (\d+)")
POLL_S = 0.2


def demo_command() -> list[str]:
    script = Path(sys.executable).parent / "metis-compaction-tui"
    if script.exists():
        return [str(script), "demo", *DEMO_FLAGS]
    return [sys.executable, "-m", "metis_compaction_tui.cli", "demo", *DEMO_FLAGS]


class Tmux:
    """One detached session on a private tmux server (its own socket, no user config)."""

    def __init__(self, name: str) -> None:
        self.socket = name
        self.name = name
        self.last_screen = ""
        self.socket_path: Path | None = None

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "TMUX"}
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            timeout=15,
            check=check,
            env=env,
        )

    def start(self, shell_command: str) -> None:
        self.tmux(
            "new-session", "-d", "-s", self.name, "-x", str(WIDTH), "-y", str(HEIGHT),
            shell_command,
        )  # fmt: skip
        where = self.tmux("display-message", "-p", "-t", self.name, "#{socket_path}", check=False)
        self.socket_path = Path(where.stdout.strip()) if where.returncode == 0 else None

    def alive(self) -> bool:
        return self.tmux("has-session", "-t", self.name, check=False).returncode == 0

    def screen(self) -> str:
        done = self.tmux("capture-pane", "-p", "-t", self.name, check=False)
        if done.returncode == 0:
            self.last_screen = done.stdout
        return self.last_screen

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", self.name, "-l", text)

    def kill(self) -> None:
        self.tmux("kill-server", check=False)
        if self.socket_path is not None:  # tmux leaves the socket file behind
            self.socket_path.unlink(missing_ok=True)


class Run:
    """The demo under test: its terminal, its workspace once made, and the waits."""

    def __init__(self, tmux: Tmux, tmp: Path, rc_file: Path) -> None:
        self.tmux = tmux
        self.tmp = tmp
        self.rc_file = rc_file
        self.workspace: Path | None = None

    def log(self) -> str:
        if self.workspace is None:
            return "(no workspace yet)"
        path = simulator_log_path(self.workspace)
        return path.read_text(encoding="utf-8") if path.exists() else "(no simulator log)"

    def fail(self, what: str) -> AssertionError:
        return AssertionError(
            f"{what}\n--- last screen ---\n{self.tmux.last_screen}\n--- simulator log ---\n"
            f"{self.log()}\n--- exit status file ---\n"
            f"{self.rc_file.read_text() if self.rc_file.exists() else '(none)'}"
        )

    def wait(self, condition: Callable[[str], object], what: str, timeout: float = 30.0) -> str:
        """Poll the screen until `condition(screen)` is true; the screen it was true on."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.tmux.screen()
            if condition(screen):
                return screen
            if time.monotonic() > deadline:
                raise self.fail(f"timed out after {timeout:.0f} s waiting for {what}")
            if not self.tmux.alive():
                raise self.fail(f"the app exited while waiting for {what}")
            time.sleep(POLL_S)

    def wait_for_text(self, *texts: str, timeout: float = 30.0) -> str:
        return self.wait(
            lambda screen: all(t in screen for t in texts), " and ".join(map(repr, texts)), timeout
        )

    def wait_path(self, condition: Callable[[], object], what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                self.tmux.screen()
                raise self.fail(f"timed out after {timeout:.0f} s waiting for {what}")
            time.sleep(POLL_S)


def status(screen: str) -> tuple[int, int] | None:
    """(message count, revision) from the status bar, the screen's first line."""
    match = STATUS.search(screen.splitlines()[0] if screen else "")
    return (int(match[1].replace(",", "")), int(match[2])) if match else None


def on_dashboard(screen: str) -> bool:
    return all(t in screen for t in ("Sessions", "Messages ·", "Events ·", "c Compact", "q Quit"))


def live_compactions(workspace: Path) -> list:  # type: ignore[type-arg]
    with SessionStore.open(workspace) as store:
        (info,) = store.list_sessions()
        return [c for c in store.compactions(info.session_id) if not c.undone]


def test_the_demo_end_to_end_in_tmux(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    rc_file = tmp_path / "exit-status"
    command = " ".join(shlex.quote(part) for part in demo_command())
    shell = (
        f"cd {shlex.quote(str(ROOT))} && env TMPDIR={shlex.quote(str(tmp))} {command}; "
        f"echo $? > {shlex.quote(str(rc_file))}"
    )
    tmux = Tmux(f"e2e-{os.getpid()}-{uuid.uuid4().hex[:6]}")
    run = Run(tmux, tmp, rc_file)
    try:
        tmux.start(shell)

        # -- the dashboard, with messages arriving live from the writer process ----------------
        first = run.wait(
            lambda s: on_dashboard(s) and (status(s) or (0, 0))[0] > 0,
            "the dashboard with a loaded session",
        )
        workspaces = list(tmp.glob("metis-demo-*"))
        assert len(workspaces) == 1, workspaces
        workspace = run.workspace = workspaces[0]
        seen = status(first)
        run.wait(lambda s: status(s) not in (None, seen), "a live message to change the count")

        # The writer finishes its 12 turns; the dashboard then shows the store's final count.
        log = simulator_log_path(workspace)
        run.wait_path(
            lambda: "simulated 12 turns" in log.read_text(encoding="utf-8"),
            "the simulated metis dev to finish",
            timeout=60,
        )
        with SessionStore.open(workspace) as store:
            (info,) = store.list_sessions()
            manager = store.manager(info.session_id)
            expected = manager.preview(None)
            manager.cache.close()  # type: ignore[union-attr]
        assert expected is not None, "the demo session leaves a span to compact"
        before = live_compactions(workspace)
        assert len(before) == 1 and before[0].record.trigger == "threshold"
        run.wait(
            lambda s: on_dashboard(s) and status(s) == (info.message_count, info.revision),
            f"{info.message_count} msgs · rev {info.revision} on the dashboard",
        )
        assert "1 compactions" in tmux.screen()

        # -- compact now: the preview, then a summary with instructions, then accept ----------
        span = expected.span
        tmux.keys("c")
        preview = run.wait_for_text(
            "Compact now ·",
            f"span  messages {span.start}–{span.compaction_watermark - 1} "
            f"({span.span_message_count} msgs)",
            "cache  miss: the model will be called",
            "optional instructions",
        )
        assert "local:extractive (offline, no cost)" in preview
        tmux.type(INSTRUCTIONS)
        run.wait_for_text(INSTRUCTIONS)
        tmux.keys("Enter")
        run.wait_for_text("Summary ready · model called", "Kept at the user's request:", "a Accept")
        assert live_compactions(workspace) == before, "nothing is spliced before acceptance"
        tmux.keys("a")
        run.wait_for_text(f"✓ Compacted. Messages {span.start}–{span.compaction_watermark - 1}")

        after = live_compactions(workspace)
        assert len(after) == 2
        record = after[-1].record
        assert record.trigger == "manual" and record.instructions == INSTRUCTIONS
        assert (record.watermark_before, record.watermark_after) == (
            span.start,
            span.compaction_watermark,
        )
        assert record.cache_key is not None and record.cache_key in cache_keys(workspace)
        with SessionStore.open(workspace) as store:
            compacted = store.session_info(info.session_id)

        # Back on the dashboard: the summary row, the manual event, the new revision.
        tmux.keys("Escape")
        run.wait(
            lambda s: (
                on_dashboard(s)
                and status(s) == (compacted.message_count, compacted.revision)
                and f"Σ {span.start}–{span.compaction_watermark - 1}" in s
                and "2 compactions" in s
                and re.search(r"started\s+manual", s) is not None
            ),
            "the compaction on the dashboard (summary row, events, revision)",
        )
        assert compacted.revision == info.revision + 1

        # -- the cache browser: evict the new row after a confirmation ------------------------
        keys = cache_keys(workspace)
        assert len(keys) == 2
        tmux.keys("b")
        browser = run.wait_for_text(
            "Compaction cache", "2 of 2 rows", *(key[:12] for key in keys), "d Evict row"
        )
        selected = re.search(r"key ([0-9a-f]{64})", browser)
        assert selected is not None and selected[1] == record.cache_key, "newest row first"
        tmux.keys("d")
        run.wait_for_text("Evict cache row", f"Delete cache row {record.cache_key[:16]}", "(y)")
        assert cache_keys(workspace) == keys, "nothing is evicted before the confirmation"
        tmux.keys("y")
        run.wait(
            lambda s: "1 of 1 rows" in s and record.cache_key[:12] not in s and keys[1][:12] in s,
            "the evicted row gone from the browser",
        )
        assert cache_keys(workspace) == [key for key in keys if key != record.cache_key]

        # -- quit: back to the dashboard, q, a clean exit, the tmux session gone ---------------
        tmux.keys("Escape")
        run.wait(on_dashboard, "the dashboard again")
        tmux.keys("q")
        run.wait_path(lambda: not tmux.alive(), "the tmux session to end after q", timeout=20)
        assert rc_file.read_text().strip() == "0", "the demo exits 0"
        assert live_compactions(workspace)[-1].record == record, "the store keeps the compaction"
    finally:
        tmux.kill()
