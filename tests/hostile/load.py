"""Load: a writer appending 200 messages/s for N minutes while the real app tails the store and a
compactor runs every 30 s. Prints every message accounted for (written vs seen by a StoreTailer
process vs active+archived in the store), the app's RSS over time with a flat/growing verdict,
and whether the app's screen at the end shows what the store holds.

    python tests/hostile/load.py [--minutes 10] [--rate 200] [--compact-every 30]
    python tests/hostile/load.py --quick      # 20 s, a compaction every 5 s (a CI smoke)

The app is `python -m metis_compaction_tui.cli open WORKSPACE`, run in a detached tmux session
on a private socket (100x30), so its screen can be read with capture-pane. Without tmux (or with
--pty) it runs under a pseudo-terminal instead: the memory figures still hold, the screen check
is skipped and says so. Its RSS is VmRSS from /proc/<pid>/status, sampled every few seconds.

Memory verdict: "flat" when the least-squares slope of the app's RSS after warm-up is below
FLAT_MB_PER_MIN. At 200 msg/s, an app that kept anything per message written (a Message object
is several hundred bytes in Python) would grow by at least 200 * 60 * 100 B = 1.2 MB a minute;
noise (the garbage collector, the history growing between compactions and dropping after each)
averages out over a 9-minute fit.

Exit status 0 only when every message is accounted for exactly once, the app was running to the
end and (with tmux) its screen caught up with the store; after a full run (not --quick, whose 15
post-warm-up seconds are too short for a slope) also only when the memory verdict is "flat".
Not collected by pytest (tests/hostile/test_load_smoke.py runs --quick).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pty
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine import (  # noqa: E402
    CompactionConfig,
    Message,
    Role,
    SpanChanged,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
)
from engine.store import SessionStore  # noqa: E402
from engine.store.tail import StoreTailer  # noqa: E402

SESSION = "load"
CONFIG = CompactionConfig(
    compaction_model="local:extractive",
    compaction_threshold_tokens=10**12,
    compaction_hard_cap_tokens=2 * 10**12,
    compaction_preserve_recent_turns=5,
)
COLUMNS, LINES = 100, 30
FLAT_MB_PER_MIN = 1.0
CATCH_UP_S = 60.0  # how long the app may take, after the writer stops, to show the final state


def rss_kb(pid: int | str = "self") -> int | None:
    """VmRSS of a process in kB; None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def process_state(pid: int | None) -> str:
    """What a process is doing, from /proc: its state and each thread's (name, state, what it
    waits in), e.g. "S; MainThread S do_epoll_wait, feed R -": why a screen stopped changing
    (a stopped process, a thread stuck in a lock or a write)."""
    if pid is None:
        return "no pid"
    try:
        state = next(
            line.split(":", 1)[1].strip()
            for line in Path(f"/proc/{pid}/status").read_text().splitlines()
            if line.startswith("State:")
        )
        threads = []
        for task in sorted(Path(f"/proc/{pid}/task").iterdir()):
            name = (task / "comm").read_text().strip()
            stat = (task / "stat").read_text()
            thread_state = stat[stat.rindex(")") + 2]
            wchan = (task / "wchan").read_text().strip() or "-"
            threads.append(f"{name} {thread_state} {wchan}")
    except (OSError, StopIteration, ValueError):
        return "gone"
    return f"{state}; " + ", ".join(threads)


def turn(number: int) -> list[Message]:
    call = f"call{number}"
    return [
        Message(f"u{number}", Role.USER, (TextContentBlock(f"step {number}: go on " * 4),)),
        Message(
            f"c{number}",
            Role.ASSISTANT,
            (TextContentBlock("running"), ToolUseContentBlock(call, "bash", {"n": number})),
        ),
        Message(f"r{number}", Role.USER, (ToolResultContentBlock(call, f"output {number} " * 8),)),
        Message(f"a{number}", Role.ASSISTANT, (TextContentBlock(f"done {number}"),)),
    ]


# -- the roles (each its own process) ---------------------------------------------------------


def writer(workspace: Path, seconds: float, rate: float) -> None:
    store = SessionStore.open(workspace)
    manager = store.manager(SESSION, cache=None)
    written, number = 0, 0
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        manager.sync()
        for message in turn(number):
            manager.append(message)
            written += 1
            lag = start + written / rate - time.monotonic()
            if lag > 0:
                time.sleep(lag)
        number += 1
    store.close()
    print(json.dumps({"written": written, "turns": number}), flush=True)


async def tailer(workspace: Path, stop_file: Path) -> None:
    """The ground truth for "every message seen once": the app's reader, StoreTailer, alone."""
    tail = StoreTailer(workspace, start="beginning", poll_interval_s=0.1)
    state = {"seen": 0, "last_seq": 0, "duplicates": 0}
    samples: list[tuple[float, int | None]] = []
    started = time.monotonic()

    async def follow() -> None:
        async for batch in tail.updates():
            for update in batch:
                for stored in update.new_messages:
                    if stored.seq <= state["last_seq"]:
                        state["duplicates"] += 1
                    state["last_seq"] = max(state["last_seq"], stored.seq)
                    state["seen"] += 1

    task = asyncio.create_task(follow())
    while True:  # until the writer is done and everything is seen
        samples.append((round(time.monotonic() - started, 1), rss_kb()))
        if stop_file.exists() and state["seen"] >= int(stop_file.read_text() or 0):
            break
        if task.done():
            task.result()
            break
        await asyncio.sleep(1.0)
    await tail.aclose()
    task.cancel()
    print(json.dumps({**state, "rss": samples}), flush=True)


async def compactor(workspace: Path, seconds: float, every: float) -> int:
    store = SessionStore.open(workspace)
    done, start = 0, time.monotonic()
    while time.monotonic() - start < seconds:
        await asyncio.sleep(min(every, max(0.0, seconds - (time.monotonic() - start))))
        manager = store.manager(SESSION, cache=None)
        try:
            manager.commit(await manager.prepare())
            done += 1
        except (ValueError, SpanChanged):
            pass
    store.close()
    return done


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True)


# -- the app, in tmux or under a pty ------------------------------------------------------------


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            return [int(p) for p in children.read().split()]
    except OSError:
        return []


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def find_app(root: int, timeout_s: float = 15.0) -> int | None:
    """The python process running the app: `root` itself, or a descendant (a shell between)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        todo = [root]
        while todo:
            pid = todo.pop()
            if "metis_compaction_tui.cli" in _cmdline(pid):
                return pid
            todo.extend(_children(pid))
        time.sleep(0.1)
    return None


class App:
    """The real inspector app on the workspace; `pid` is its python process."""

    how = ""
    pid: int | None = None

    def screen(self) -> str | None:
        return None

    def stop(self) -> None:
        raise NotImplementedError


class TmuxApp(App):
    def __init__(self, command: list[str]) -> None:
        self.socket = self.name = f"load-{os.getpid()}"
        self.how = f"tmux ({COLUMNS}x{LINES}, socket -L {self.socket})"
        shell = "exec " + shlex.join(command)
        size = ["-x", str(COLUMNS), "-y", str(LINES)]
        # remain-on-exit: a crashed app's last screen stays readable
        self._tmux(
            "new-session", "-d", "-s", self.name, "-c", str(ROOT), *size, shell,
            ";", "set-option", "-w", "-t", self.name, "remain-on-exit", "on",
        )  # fmt: skip
        pane, self.socket_path = self._tmux(
            "display-message", "-p", "-t", self.name, "#{pane_pid} #{socket_path}"
        ).split(maxsplit=1)
        self.socket_path = self.socket_path.strip()
        self.pid = find_app(int(pane))

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            # -f /dev/null: no user config (a default-size, a hook) changes the app's terminal.
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0 and args[0] != "kill-server":
            raise RuntimeError(f"tmux {args[0]}: {done.stderr.strip()}")
        return done.stdout

    def screen(self) -> str | None:
        try:
            return self._tmux("capture-pane", "-p", "-t", self.name)
        except RuntimeError:
            return None

    def stop(self) -> None:
        try:
            self._tmux("send-keys", "-t", self.name, "q")
            _wait_gone(self.pid, 10.0)
        except RuntimeError:
            pass
        self._tmux("kill-server")  # our private server only (-L): the app, if still there
        Path(self.socket_path).unlink(missing_ok=True)  # tmux leaves the socket file behind


class PtyApp(App):
    """No tmux: the app under a pseudo-terminal, its output drained and thrown away."""

    def __init__(self, command: list[str]) -> None:
        import fcntl
        import struct
        import termios

        self.how = f"a pty ({COLUMNS}x{LINES}; no tmux, so no screen check)"
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
        env = {**os.environ, "TERM": os.environ.get("TERM", "xterm-256color")}
        if env["TERM"] in ("", "dumb"):
            env["TERM"] = "xterm-256color"
        self.proc = subprocess.Popen(
            command,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=ROOT,
            start_new_session=True,
        )
        os.close(slave)
        self.master = master
        self.pid = self.proc.pid
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        while True:
            try:
                if not os.read(self.master, 65536):
                    return
            except OSError:
                return

    def stop(self) -> None:
        try:
            os.write(self.master, b"q")
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        os.close(self.master)


def _wait_gone(pid: int | None, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while pid is not None and rss_kb(pid) is not None and time.monotonic() < deadline:
        time.sleep(0.2)


def start_app(workspace: Path, force_pty: bool) -> App:
    command = [sys.executable, "-m", "metis_compaction_tui.cli", "open", str(workspace)]
    if force_pty:
        return PtyApp(command)
    if not shutil.which("tmux"):
        print("load: tmux is not installed: the app runs under a pty, screen not checked")
        return PtyApp(command)
    try:
        return TmuxApp(command)
    except (RuntimeError, ValueError) as error:
        print(f"load: tmux failed ({error}): the app runs under a pty, screen not checked")
        subprocess.run(["tmux", "-L", f"load-{os.getpid()}", "kill-server"], check=False)
        return PtyApp(command)


@dataclass
class Sampler:
    """The app's RSS every `every` seconds, in a thread; `gone_at` if the app exited early."""

    pid: int
    every: float
    started: float = field(default_factory=time.monotonic)
    samples: list[tuple[float, int]] = field(default_factory=list)
    gone_at: float | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic() - self.started
            kb = rss_kb(self.pid)
            if kb is None:
                self.gone_at = now
                return
            self.samples.append((round(now, 1), kb))
            self._stop.wait(self.every)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def memory_report(
    samples: list[tuple[float, int]], warmup_s: float, load_end_s: float
) -> dict[str, object]:
    """RSS figures over the load: from the end of warm-up to `load_end_s` (the writer's and the
    compactor's end, plus 10 s for the last reload); the idle catch-up after it is left out."""

    def at(t: float) -> tuple[float, int]:
        return min(samples, key=lambda s: abs(s[0] - t))

    after = [s for s in samples if warmup_s <= s[0] <= load_end_s] or samples[-1:]
    warm, last = after[0], after[-1]
    middle = at((warm[0] + last[0]) / 2)
    n = len(after)
    mean_t = sum(t for t, _ in after) / n
    mean_kb = sum(kb for _, kb in after) / n
    var = sum((t - mean_t) ** 2 for t, _ in after)
    slope_kb_s = sum((t - mean_t) * (kb - mean_kb) for t, kb in after) / var if var > 0 else 0.0
    return {
        "first": samples[0],
        "after_warmup": warm,
        "middle": middle,
        "last": last,
        "max_after_warmup": max(after, key=lambda s: s[1]),
        "min_after_warmup": min(after, key=lambda s: s[1]),
        "growth_mb": round((last[1] - warm[1]) / 1024, 1),
        "slope_mb_per_min": round(slope_kb_s * 60 / 1024, 2),
        "at_exit": samples[-1],
        "samples": len(samples),
        "samples_fitted": n,
    }


def _clock(t: float) -> str:
    return f"{int(t) // 60}:{int(t) % 60:02d}"


def _mb(sample: tuple[float, int]) -> str:
    return f"{sample[1] / 1024:.1f} MB at {_clock(sample[0])}"


def expected_screen(store_info: object, compactions: int, turns: int) -> list[tuple[str, str]]:
    """What the app's screen must show once it caught up: (what, regex)."""
    count = store_info.message_count  # type: ignore[attr-defined]
    revision = store_info.revision  # type: ignore[attr-defined]
    return [
        (f"status bar '{count:,} msgs · rev {revision}'", rf"\b{count:,} msgs · rev {revision}\b"),
        (f"list title 'Messages · {count:,}'", rf"Messages · {count:,} · "),
        (f"events title '{compactions} compactions'", rf"\b{compactions} compactions\b"),
        (
            f"last row '{count - 1} asst … done {turns - 1}'",
            rf"\b{count - 1} asst\s+\S+\s+done {turns - 1}\b",
        ),
    ]


def check_screen(app: App, wanted: list[tuple[str, str]], timeout_s: float) -> dict[str, object]:
    """Capture the app's screen until it shows everything wanted (or time runs out)."""
    started = time.monotonic()
    screen = app.screen()
    if screen is None:
        return {"checked": False, "why": f"the app runs under {app.how}"}
    while True:
        missing = [what for what, pattern in wanted if not re.search(pattern, screen)]
        waited = time.monotonic() - started
        if not missing or waited > timeout_s:
            return {
                "checked": True,
                "caught_up": not missing,
                "seconds_after_writer_stopped": round(waited, 1),
                "missing": missing,
                "screen": screen,
            }
        time.sleep(0.5)
        screen = app.screen() or ""


# -- the run ------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=200.0, help="messages per second")
    parser.add_argument("--compact-every", type=float, default=30.0, help="seconds")
    parser.add_argument("--quick", action="store_true", help="20 s, compacting every 5 s")
    parser.add_argument("--pty", action="store_true", help="run the app under a pty, not tmux")
    parser.add_argument("--keep", action="store_true", help="keep the workspace after the run")
    parser.add_argument("--role", choices=["writer", "tailer"], help=argparse.SUPPRESS)
    parser.add_argument("--workspace", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--stop-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    seconds = 20.0 if args.quick else args.minutes * 60
    every = 5.0 if args.quick else args.compact_every
    warmup = 5.0 if args.quick else min(60.0, seconds / 5)
    sample_every = 1.0 if args.quick else 2.0
    if args.role == "writer":
        writer(args.workspace, seconds, args.rate)
        return 0
    if args.role == "tailer":
        asyncio.run(tailer(args.workspace, args.stop_file))
        return 0

    # The workspace goes with the run unless --keep (the store and app-rss.csv, to look at).
    workspace = Path(tempfile.mkdtemp(prefix="metis-load-"))
    try:
        return load_run(args, workspace, seconds, every, warmup, sample_every)
    finally:
        if args.keep:
            print(f"kept {workspace}: its store, and app-rss.csv (the app's RSS samples)")
        else:
            shutil.rmtree(workspace, ignore_errors=True)


def load_run(
    args: argparse.Namespace,
    workspace: Path,
    seconds: float,
    every: float,
    warmup: float,
    sample_every: float,
) -> int:
    with SessionStore.open(workspace, create=True) as store:
        store.create_session(SESSION, config=CONFIG)
    stop = workspace / "stop"
    common = ["--workspace", str(workspace), "--minutes", str(seconds / 60)]
    app = start_app(workspace, args.pty)
    try:
        if app.pid is None:
            print(f"FAILED: the app did not start under {app.how}", flush=True)
            print(app.screen() or "", flush=True)
            return 1
        sampler = Sampler(app.pid, sample_every)
        sampler.start()
        print(
            f"load: {args.rate:g} msg/s for {seconds:g} s, compacting every {every:g} s, in "
            f"{workspace}\napp: metis-compaction-tui open (pid {app.pid}) under {app.how}; "
            f"RSS sampled every {sample_every:g} s, warm-up {warmup:g} s",
            flush=True,
        )
        tail_proc = spawn("--role", "tailer", *common, "--stop-file", str(stop))
        write_proc = spawn("--role", "writer", *common, "--rate", str(args.rate))
        compactions = asyncio.run(compactor(workspace, seconds, every))
        write_out, _ = write_proc.communicate(timeout=120)
        load_end = time.monotonic() - sampler.started + 10.0
        writer_report = json.loads(write_out.splitlines()[-1])
        written, turns = writer_report["written"], writer_report["turns"]
        stop.write_text(str(written))

        with SessionStore.open(workspace) as store:
            info = store.session_info(SESSION)
            active = [m for m in store.active_messages(SESSION) if m.introduced_by is None]
            archived = sum(
                len(store.archived_messages(c.compaction_id))
                for c in store.compactions(SESSION)
                if not c.undone
            )
            originals = store.messages_after(SESSION, 0, limit=10**9)
            ids = [m.message.id for m in originals]
        screen = check_screen(app, expected_screen(info, compactions, turns), CATCH_UP_S)
        if screen.get("checked") and not screen.get("caught_up"):
            screen["app_state"] = process_state(app.pid)  # while it still runs
        tail_out, _ = tail_proc.communicate(timeout=300)
        tail = json.loads(tail_out.splitlines()[-1])
        sampler.stop()
    finally:
        app.stop()

    memory = memory_report(sampler.samples, warmup, load_end)
    rss_csv = workspace / "app-rss.csv"
    rss_csv.write_text("seconds,rss_kb\n" + "".join(f"{t},{kb}\n" for t, kb in sampler.samples))
    flat = float(memory["slope_mb_per_min"]) < FLAT_MB_PER_MIN  # type: ignore[arg-type]
    tail_rss = [kb for _, kb in tail["rss"] if kb is not None]
    report = {
        "written": written,
        "tailer_seen": tail["seen"],
        "tailer_duplicates": tail["duplicates"],
        "store_active_originals": len(active),
        "store_archived": archived,
        "store_originals_unique": len(set(ids)),
        "compactions": compactions,
        "store_active_messages": info.message_count,
        "store_revision": info.revision,
        "app": {
            "under": app.how,
            "running_to_the_end": sampler.gone_at is None,
            "rss_kb": memory,
            "flat": flat,
            "screen": {k: v for k, v in screen.items() if k != "screen"},
        },
        "tailer_rss_kb": {"first": tail_rss[0], "last": tail_rss[-1], "max": max(tail_rss)},
    }
    timeline = sampler.samples[:: max(1, round((5.0 if args.quick else 60.0) / sample_every))]
    print("app RSS: " + ", ".join(f"{_clock(t)} {kb / 1024:.1f}" for t, kb in timeline) + " MB")
    print("report: " + json.dumps(report, indent=2))
    if screen.get("screen"):
        print("the app's screen at the end:")
        print("\n".join("    " + line for line in str(screen["screen"]).rstrip().splitlines()))

    accounted = (
        written == tail["seen"] == len(active) + archived == len(ids) == len(set(ids))
        and tail["duplicates"] == 0
        and compactions > 0
    )
    print(
        f"every message accounted for: {written:,} written = {tail['seen']:,} seen by the "
        f"tailer = {len(active):,} active + {archived:,} archived, 0 duplicates, "
        f"{compactions} compactions"
        if accounted
        else "MISMATCH: messages lost or duplicated"
    )
    alive = sampler.gone_at is None
    if not alive:
        print(f"FAILED: the app exited at {_clock(sampler.gone_at or 0)}, before the run ended")
    if not screen["checked"]:
        print(f"app screen not checked: {screen['why']}")
    elif screen["caught_up"]:
        print(
            f"app kept up: {screen['seconds_after_writer_stopped']} s after the writer stopped "
            f"its screen showed {info.message_count:,} msgs · rev {info.revision}, "
            f"{compactions} compactions, last row 'done {turns - 1}' (= the store)"
        )
    else:
        print(
            f"FAILED: the app did not keep up: {screen['seconds_after_writer_stopped']} s after "
            f"the writer stopped, its screen still lacked {'; '.join(screen['missing'])}"  # type: ignore[arg-type]
            f" (= the store); the app then: {screen.get('app_state')}"
        )
    verdict = (
        "not judged (quick: too short for a slope)"
        if args.quick
        else ("flat" if flat else "GROWING")
    )
    print(
        f"app memory: {verdict} (bound: slope < {FLAT_MB_PER_MIN:g} MB/min after warm-up): "
        f"{_mb(memory['after_warmup'])}, {_mb(memory['middle'])}, {_mb(memory['last'])}; "  # type: ignore[arg-type]
        f"max {_mb(memory['max_after_warmup'])}; slope {memory['slope_mb_per_min']} MB/min, "  # type: ignore[arg-type]
        f"{memory['growth_mb']:+} MB warm-up to end; {memory['samples_fitted']} samples fitted "
        f"(all {memory['samples']} in {rss_csv.name})"
    )
    kept_up = not screen["checked"] or bool(screen["caught_up"])
    ok = accounted and alive and kept_up and (flat or args.quick)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
