"""The inspector app's figures: opening a 100,000-message session, and keeping up with a writer.

- time to first frame and memory, on a session of 100,000 messages (10,000 with --quick):
  * headless (`App.run_test()`, 100 x 30, in a fresh process): from constructing the app to the
    first frame. "First frame" = the first screen update the compositor hands the driver (App.
    _display) after the message list has drawn the session's last message (MessageList.
    render_row of the last index, which follow mode puts on screen). Imports are not counted.
    Memory: the process's peak RSS (ru_maxrss: interpreter, imports and the app), with the part
    reached before the app was made, and, in a separate run (it slows Python down), the Python
    heap tracemalloc sees allocated by the app: the peak while loading, and what is still held
    at the first frame;
  * the real process (`metis-compaction-tui WORKSPACE` on a pseudo-terminal, 100 x 30): from
    the spawn (interpreter start and imports included) until the terminal output, escape
    sequences removed, shows the last message's row; then `q`, and the process's peak RSS
    from wait4;
- live updates: the app (headless, its default poll interval, the real StoreSource with
  watchfiles) on the session while another process appends messages at 200 a second (the
  bench_store.py writer; both sides read CLOCK_MONOTONIC). An update is one SessionGrew the feed
  thread posts; per update: the feed thread's read (StoreSource.poll), the UI thread applying it
  (MetisInspector.on_session_grew), the UI thread drawing the next frame (Screen._on_timer_update:
  layout + compositor), and per message the latency from its commit to the end of that frame.
  Run on a small session and the large one: the ratio says whether an update costs O(new
  messages) or O(history).

    python tests/perf/bench_app.py            # full: 100,000 messages; 2,000 appended at 200/s
    python tests/perf/bench_app.py --quick    # 10,000 messages; 300 appended (seconds)

Each store is built once per run in a temporary folder (bench_store.build_store: one
transaction) and copied for the runs that write to it. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import platform
import re
import resource
import select
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path
from typing import Any

from _util import fmt_seconds, table
from bench_store import SID, build_store

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SIZE = (100, 30)
RESULT = "RESULT "
ANSI = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


# -- child roles (each in a fresh process, so its RSS is its own) ---------------------------


def _instrument_first_frame(last_index: int) -> tuple[dict[str, int], asyncio.Event]:
    """Patch the app's classes (this process only) to note when the last row is drawn and the
    frame after it is handed to the driver; the event is set then (on the app's loop, so the
    waiting coroutine does not poll and take the GIL from the feed thread meanwhile)."""
    from metis_compaction_tui.app import MetisInspector
    from metis_compaction_tui.widgets.message_list import MessageList

    marks: dict[str, int] = {}
    shown = asyncio.Event()
    render_row = MessageList.render_row
    display = MetisInspector._display

    def timed_render_row(self: MessageList, row: int, width: int) -> Any:
        if self.id == "messages" and row + self.first_index == last_index:
            marks.setdefault("last_row", time.perf_counter_ns())
        return render_row(self, row, width)

    def timed_display(self: MetisInspector, screen: Any, renderable: Any) -> None:
        display(self, screen, renderable)
        if renderable is not None and "last_row" in marks:
            marks.setdefault("frame", time.perf_counter_ns())
            shown.set()

    MessageList.render_row = timed_render_row  # type: ignore[method-assign]
    MetisInspector._display = timed_display  # type: ignore[method-assign]
    return marks, shown


def role_first_frame(workspace: Path, last_index: int, trace: bool) -> dict[str, Any]:
    import tracemalloc

    from metis_compaction_tui.app import MetisInspector
    from metis_compaction_tui.sources.store import StoreSource

    marks, first_frame = _instrument_first_frame(last_index)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    held = peak = 0

    async def run() -> int:
        nonlocal held, peak
        if trace:
            tracemalloc.start()
        started = time.perf_counter_ns()
        app = MetisInspector(StoreSource(workspace))
        async with app.run_test(size=SIZE) as pilot:
            try:
                await asyncio.wait_for(first_frame.wait(), 300)
            except TimeoutError:
                raise SystemExit("no first frame within 300 s") from None
            if trace:
                held, peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
            assert app.data is not None and app.data.message_count == last_index + 1
            await pilot.press("q")
        return started

    started = asyncio.run(run())
    return {
        "first_frame_s": (marks["frame"] - started) / 1e9,
        "last_row_s": (marks["last_row"] - started) / 1e9,
        "rss_peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "rss_before_app": rss_before,
        "traced_peak": peak,
        "traced_held": held,
    }


def role_live(workspace: Path, count: int, pace: float) -> dict[str, Any]:
    """Per message: commit (the writer's clock) -> the feed thread wakes (StoreSource.wait
    returns) -> its read ends (StoreSource.poll) -> the UI thread has applied it
    (on_session_grew) -> the first frame after that ends -> the first frame that drew its row,
    or a later one, in the message list ends ("visible": a message that scrolls past inside one
    update counts as shown when a later row is drawn)."""
    from textual.screen import Screen

    from metis_compaction_tui.app import MetisInspector
    from metis_compaction_tui.sources.store import StoreSource
    from metis_compaction_tui.ui_messages import SessionGrew
    from metis_compaction_tui.widgets.message_list import MessageList

    with _store(workspace) as store:
        last_index = store.session_info(SID).message_count - 1
    marks, first_frame = _instrument_first_frame(last_index)
    stuck = [False]  # the list opened at its top and End had to be pressed
    now = time.monotonic_ns
    polls: list[tuple[int, int]] = []  # (ns, new messages) of each poll that found some
    applies: list[tuple[int, int]] = []  # (ns, messages) of each SessionGrew
    frames: list[int] = []  # ns of each frame drawn after at least one update
    woke = [0]  # when the feed thread's last wait ended
    read: dict[str, tuple[int, int]] = {}  # message id -> (wait ended, read ended)
    applied: dict[str, int] = {}  # message id -> ns its update was applied (frame pending)
    applied_at: dict[str, int] = {}
    index_of: dict[str, int] = {}  # message id -> its row in the list
    drawn = [-1]  # the highest message-list row drawn in the current frame
    waiting: dict[str, int] = {}  # applied, row not drawn yet
    shown: dict[str, int] = {}  # message id -> ns the frame after its update ended
    visible: dict[str, int] = {}  # message id -> ns the frame that drew its row ended

    grew = MetisInspector.on_session_grew
    timer_update = Screen._on_timer_update
    render_row = MessageList.render_row

    def timed_grew(self: MetisInspector, message: SessionGrew) -> None:
        start = now()
        grew(self, message)
        end = now()
        applies.append((end - start, len(message.change.new_messages)))
        messages = self.data.history.messages if self.data is not None else []
        fresh = {m.id for _, m, _ in message.change.new_messages}
        for index in range(len(messages) - 1, max(-1, len(messages) - 1 - len(fresh) - 2), -1):
            if messages[index].id in fresh:
                index_of.setdefault(messages[index].id, index)
        for key in fresh:
            applied.setdefault(key, end)
            applied_at.setdefault(key, end)
            waiting.setdefault(key, end)

    def timed_render_row(self: MessageList, row: int, width: int) -> Any:
        if self.id == "messages":
            drawn[0] = max(drawn[0], row + self.first_index)
        return render_row(self, row, width)

    def timed_timer_update(self: Screen[Any]) -> None:
        drawn[0] = -1
        start = now()
        timer_update(self)
        end = now()
        if not self.is_current:
            return
        if applied:
            frames.append(end - start)
            for key in applied:
                shown.setdefault(key, end)
            applied.clear()
        if waiting and drawn[0] >= 0:
            for key in [k for k in waiting if index_of.get(k, 1 << 62) <= drawn[0]]:
                visible[key] = end
                del waiting[key]

    MetisInspector.on_session_grew = timed_grew  # type: ignore[method-assign]
    Screen._on_timer_update = timed_timer_update  # type: ignore[method-assign]
    MessageList.render_row = timed_render_row  # type: ignore[method-assign]

    source = StoreSource(workspace)
    poll, wait = source.poll, source.wait

    def timed_wait(timeout_s: float, wake: Any) -> None:
        wait(timeout_s, wake)
        woke[0] = now()

    def timed_poll() -> Any:
        start = now()
        changes = poll()
        end = now()
        new = sum(len(c.new_messages) for c in changes)
        if new:
            polls.append((end - start, new))
            for change in changes:
                for _, m, _ in change.new_messages:
                    read.setdefault(m.id, (woke[0] or start, end))
        return changes

    source.poll = timed_poll  # type: ignore[method-assign]
    source.wait = timed_wait  # type: ignore[method-assign]

    async def run() -> dict[str, int]:
        app = MetisInspector(source)
        async with app.run_test(size=SIZE) as pilot:
            try:
                await asyncio.wait_for(first_frame.wait(), 15)
            except TimeoutError:
                # A session may open at row 0 with follow on (a scroll_end Textual refuses
                # before the scrollbar's layout): End goes there.
                stuck[0] = True
                await pilot.press("end")
            try:
                await asyncio.wait_for(first_frame.wait(), 60)
            except TimeoutError:
                rows = app.query_one("#messages", MessageList)
                raise SystemExit(
                    f"no first frame: marks {marks}, data "
                    f"{app.data.message_count if app.data else None}, rows {rows.row_count()}, "
                    f"scroll {rows.scroll_offset} of {rows.max_scroll_y}, size {rows.size}, "
                    f"problem {app.problem}"
                ) from None
            await asyncio.sleep(0.5)  # the first session list and tailer look are done
            polls.clear()
            applies.clear()
            frames.clear()
            writer = await asyncio.create_subprocess_exec(
                sys.executable, str(HERE / "bench_store.py"), "--writer", str(workspace),
                str(count), str(pace), stdout=subprocess.PIPE,
            )  # fmt: skip
            out, _ = await writer.communicate()
            assert writer.returncode == 0, "the writer failed"
            commits = dict(json.loads(line) for line in out.decode().splitlines())
            deadline = time.monotonic() + 60
            while not (set(commits) <= set(shown) and set(commits) <= set(visible)):
                if time.monotonic() > deadline:
                    missing = len(set(commits) - set(visible))
                    raise SystemExit(f"{missing} messages never reached the screen")
                await asyncio.sleep(0.02)
            assert app.data is not None and app.data.message_count == last_index + 1 + count
            await pilot.press("q")
        return commits

    commits = asyncio.run(run())

    def stage(end: dict[str, int], begin: dict[str, int]) -> list[int]:
        return sorted(end[key] - begin[key] for key in commits)

    woke_at = {key: read[key][0] for key in commits}
    read_at = {key: read[key][1] for key in commits}
    return {
        "history": last_index + 1,
        "opened_at_top": stuck[0],
        "polls_ns": [duration for duration, _ in polls],
        "apply_ns": [duration for duration, _ in applies],
        "per_update": [messages for _, messages in applies],
        "frames": frames,
        "latencies": stage(shown, commits),
        "visible": stage(visible, commits),
        "stages": {
            "commit -> feed thread wakes": stage(woke_at, commits),
            "wake -> read done": stage(read_at, woke_at),
            "read -> applied (queue + apply)": stage(applied_at, read_at),
            "applied -> end of the next frame": stage(shown, applied_at),
            "that frame -> the frame drawing the row": stage(visible, shown),
        },
    }


def _store(workspace: Path) -> Any:
    from engine.store import SessionStore

    return SessionStore.open(workspace)


# -- the real process on a pseudo-terminal --------------------------------------------------


def real_process(workspace: Path, last_index: int) -> dict[str, Any]:
    """Spawn the command on a 100 x 30 pty; the first frame is when its output shows the last
    message's row ("<index> <role>" once escape sequences are removed)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
    row = re.compile(rf"\b{last_index} ?(asst|user|tool)".encode())
    env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor"}
    env.pop("TEXTUAL", None)
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "metis_compaction_tui.cli", str(workspace)],
        stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, env=env, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    seen = b""
    first_frame: float | None = None
    quit_sent = False
    deadline = started + 300
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(master, 1 << 16)
                except OSError:  # the child closed the terminal: it has exited
                    break
                if not chunk:
                    break
                if first_frame is None:
                    seen = (seen + chunk)[-(1 << 20) :]
                    if row.search(ANSI.sub(b"", seen)):
                        first_frame = time.monotonic() - started
            if first_frame is not None and not quit_sent:
                os.write(master, b"q")
                quit_sent = True
            if process.poll() is not None:
                break
        else:
            process.kill()
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    finally:
        os.close(master)
    if first_frame is None:
        raise SystemExit(f"the real app never showed row {last_index} (exit {process.returncode})")
    return {
        "first_frame_s": first_frame,
        "rss_peak": usage.ru_maxrss * 1024,
        "returncode": process.returncode,
    }


# -- the parent: build, run the roles, print ------------------------------------------------


def run_role(*args: str, tree: Path = ROOT) -> dict[str, Any]:
    """One role in a fresh process importing the app from `tree` (this checkout unless an A/B
    run names another)."""
    path = os.pathsep.join(p for p in (str(tree), os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, __file__, "--role", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "PYTHONPATH": path},
    )
    for line in done.stdout.splitlines():
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT) :])
    raise SystemExit(
        f"role {args[0]} ({tree}) failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    )


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def mib(size: float) -> str:
    return f"{size / 2**20:.0f} MiB"


def spread(values_ns: list[int]) -> list[str]:
    """median · p95 · max of nanosecond figures, in ms."""
    if not values_ns:
        return ["—", "—", "—"]
    seconds = [v / 1e9 for v in values_ns]
    return [ms(statistics.median(seconds)), ms(percentile(seconds, 0.95)), ms(max(seconds))]


def pooled(runs: list[dict[str, Any]], key: str) -> list[int]:
    return [value for run in runs for value in run[key]]


def compare(base: Path, sizes: tuple[int, ...], count: int, pace: float, rounds: int) -> int:
    """Live updates only, this checkout (B) against `base` (A), alternating A, B, B, A, ... on
    copies of the same stores, so both meet the same machine load."""
    results: dict[tuple[str, int], list[dict[str, Any]]] = {}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-app-ab-") as folder:
        stores: dict[int, Path] = {}
        for size in sizes:
            stores[size] = Path(folder) / f"store-{size}"
            stores[size].mkdir()
            build_store(stores[size], size).close()
        for turn in range(rounds):
            order = [("A", base), ("B", ROOT)]
            for label, tree in order if turn % 2 == 0 else order[::-1]:
                for size in sizes:
                    copy = Path(folder) / f"live-{label}-{size}"
                    shutil.copytree(stores[size], copy)
                    result = run_role("live", str(copy), str(count), str(pace), tree=tree)
                    results.setdefault((label, size), []).append(result)
                    shutil.rmtree(copy)
    print("## Commit to screen, A/B\n")
    print(
        f"A = {base}, B = {ROOT}; {rounds} rounds alternating, {count} messages appended at "
        f"{pace:g}/s per run; {os.cpu_count()} CPUs, 1-minute load {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after. Per message, all runs of a cell pooled.\n"
    )
    rows = []
    for size in sizes:
        for label in ("A", "B"):
            runs = results[(label, size)]
            history = f"{runs[0]['history']:,}"
            rows.append(
                [label, history, "commit -> its row drawn", *spread(pooled(runs, "visible"))]
            )
            rows.append(
                [label, history, "commit -> frame after apply", *spread(pooled(runs, "latencies"))]
            )
            for name in runs[0]["stages"]:
                values = [v for r in runs for v in r["stages"][name]]
                rows.append([label, history, f"  {name}", *spread(values)])
            rows.append(
                [label, history, "  frame after an update", *spread(pooled(runs, "frames"))]
            )
            rows.append(
                [label, history, "  apply (on_session_grew)", *spread(pooled(runs, "apply_ns"))]
            )
            per_run = " · ".join(ms(statistics.median(r["visible"]) / 1e9) for r in runs)
            rows.append([label, history, "median per run (commit -> row drawn)", per_run, "", ""])
            top = sum(1 for r in runs if r.get("opened_at_top"))
            rows.append(
                [label, history, "runs that opened at row 0 (End pressed)", str(top), "", ""]
            )
    print(table(["tree", "session", "per message", "median", "p95", "max"], rows))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, shorter timings")
    parser.add_argument("--role", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument(
        "--against",
        type=Path,
        metavar="TREE",
        help="live updates only, A/B: this checkout against another source tree (e.g. an "
        "export of main), the two alternating on the same stores",
    )
    parser.add_argument("--rounds", type=int, default=2, help="A/B rounds (with --against)")
    args = parser.parse_args(argv)
    if args.role:
        name, *rest = args.role
        if name == "first-frame":
            result = role_first_frame(Path(rest[0]), int(rest[1]), rest[2] == "trace")
        elif name == "live":
            result = role_live(Path(rest[0]), int(rest[1]), float(rest[2]))
        else:
            raise SystemExit(f"unknown role {name}")
        print(RESULT + json.dumps(result), flush=True)
        return 0

    quick = args.quick
    large = 10_000 if quick else 100_000
    small = 1_000
    live_count, pace = (300, 200.0) if quick else (2_000, 200.0)
    repeats = 1 if quick else 3
    if args.against is not None:
        return compare(args.against.resolve(), (small, large), live_count, pace, args.rounds)

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-app-") as folder:
        stores: dict[int, Path] = {}
        for count in (small, large):
            stores[count] = Path(folder) / f"store-{count}"
            stores[count].mkdir()
            build_store(stores[count], count).close()
        with _store(stores[large]) as store:
            last_index = store.session_info(SID).message_count - 1

        headless = [
            run_role("first-frame", str(stores[large]), str(last_index), "time")
            for _ in range(repeats)
        ]
        traced = run_role("first-frame", str(stores[large]), str(last_index), "trace")
        real = [real_process(stores[large], last_index) for _ in range(repeats)]

        live: dict[int, dict[str, Any]] = {}
        for count in (small, large):
            copy = Path(folder) / f"live-{count}"
            shutil.copytree(stores[count], copy)
            live[count] = run_role("live", str(copy), str(live_count), str(pace))
            shutil.rmtree(copy)

    messages = last_index + 1
    print("## The app: first frame, memory, live updates\n")
    print(
        f"{'--quick' if quick else 'full'} run on {platform.python_implementation()} "
        f"{platform.python_version()}, {platform.system()}, {os.cpu_count()} CPUs (1-minute "
        f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after); a "
        f"{messages:,}-message session (the §10 script tiled, bench_store.build_store), "
        f"terminal {SIZE[0]} x {SIZE[1]}. "
        + (
            f"Times: best and median of {repeats} fresh processes (each run in brackets)."
            if repeats > 1
            else "Times: one fresh process each."
        )
        + "\n"
    )

    def best_median(values: list[float]) -> str:
        if len(values) == 1:
            return fmt_seconds(values[0])
        runs = " · ".join(fmt_seconds(v) for v in values)
        median = fmt_seconds(statistics.median(values))
        return f"{fmt_seconds(min(values))}, median {median} ({runs})"

    rows = [
        [
            "headless first frame (run_test; imports not counted)",
            best_median([r["first_frame_s"] for r in headless]),
        ],
        [
            "real process: spawn -> last row on the terminal",
            best_median([r["first_frame_s"] for r in real]),
        ],
        [
            "headless RSS peak (ru_maxrss, whole process)",
            mib(max(r["rss_peak"] for r in headless)),
        ],
        [
            "  of which before the app was made (interpreter + imports)",
            mib(max(r["rss_before_app"] for r in headless)),
        ],
        ["real process RSS peak (wait4 ru_maxrss)", mib(max(r["rss_peak"] for r in real))],
        ["Python heap peak while loading (tracemalloc)", mib(traced["traced_peak"])],
        ["Python heap held at the first frame (tracemalloc)", mib(traced["traced_held"])],
    ]
    print(f"### Opening a {messages:,}-message session\n")
    print(table(["measure", "measured"], rows))
    exits = sorted({r["returncode"] for r in real})
    print(f"\nThe real process exited {', '.join(map(str, exits))} after `q`.\n")

    print(f"### Live updates: {live_count:,} messages appended by another process at {pace:g}/s\n")
    rows = []
    for count in (small, large):
        r = live[count]
        per_update = r["per_update"]
        rows += [
            [f"{r['history']:,}", "feed thread: StoreSource.poll", *spread(r["polls_ns"])],
            [f"{r['history']:,}", "UI thread: apply (on_session_grew)", *spread(r["apply_ns"])],
            [f"{r['history']:,}", "UI thread: the frame after it", *spread(r["frames"])],
            [f"{r['history']:,}", "commit -> end of that frame", *spread(r["latencies"])],
            [f"{r['history']:,}", "commit -> its row drawn (on screen)", *spread(r["visible"])],
            *[[f"{r['history']:,}", f"  {name}", *spread(v)] for name, v in r["stages"].items()],
            [
                f"{r['history']:,}",
                "messages per update (median · mean · max)",
                f"{statistics.median(per_update):g}",
                f"{statistics.mean(per_update):.1f}",
                f"{max(per_update)}",
            ],
            [f"{r['history']:,}", "updates", str(len(per_update)), "", ""],
        ]
    print(table(["session", "per update", "median", "p95", "max"], rows))
    sizes = f"{live[large]['history']:,}-message session / {live[small]['history']:,}"
    small_apply = statistics.median(live[small]["apply_ns"])
    large_apply = statistics.median(live[large]["apply_ns"])
    small_frame = statistics.median(live[small]["frames"])
    large_frame = statistics.median(live[large]["frames"])
    print(
        f"\nRatios, {sizes}: median apply {large_apply / small_apply:.2f}, median frame "
        f"{large_frame / small_frame:.2f}."
    )
    if quick:
        print("\n(--quick: the 100,000-message figures need a full run.)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
