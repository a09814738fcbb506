"""Start-up figures in one run, each beside the floor measured in the same run (a bare
interpreter, `python -c pass`), every call a real process:

- `statusline WS` on metis stores of 1k, 10k and 100k messages (p50/p95): unchanged since the
  last refresh, and grown by one message before each call (the line then shows the saved figures
  with the row's fresh context and starts a detached refresher);
- SessionStore.open + manager() on the 100k-message store (in this process, imports done), and
  from the open to its first plan and its first preview;
- the CLI's start per command on a small store: `--help`, `inspect --help`, `status WS`,
  `status FILE` (a 64 KiB transcript), `cache list WS`, `statusline WS`, `statusline` (garbage
  stdin), beside the imports a command reading the store's rows cannot do without (argparse,
  pathlib, re, sqlite3, msgspec).

Targets (printed beside the figures): `statusline WS` p95 < 50 ms and < 2x the floor; store open +
manager < 0.3 s; data commands < 3x the floor, `--help` < 2x.

    python tests/perf/startup_bench.py                 # this checkout, on PYTHONPATH
    python tests/perf/startup_bench.py --plain         # a plain (non-editable) install
    python tests/perf/startup_bench.py --quick         # 1k and 10k stores, fewer calls

`--plain` runs `pip install --no-deps <checkout>` into a temporary venv (setuptools comes from
the package index pip is configured with), and points a .pth file in it at this interpreter's
site-packages for the dependencies; the console script pip writes is what is timed, as a user's
would be. Without it, `python -c <the console script's entry>` runs this checkout with
PYTHONPATH (an editable install's finder, loaded at every start, is not counted either way).
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import table  # noqa: E402
from bench_store import SID, build_store, messages  # noqa: E402

ENTRY = "import sys; from metis_compaction_tui.cli import main; sys.exit(main())"
REQUIRED = "argparse, sqlite3, msgspec alone"
REQUIRED_CODE = (
    "from metis_compaction_tui.lean_msgspec import import_msgspec; import_msgspec(); "
    "import argparse, pathlib, re, sqlite3"
)
TARGETS = {"line_p95_s": 0.050, "line_ratio": 2.0, "open_s": 0.3, "data": 3.0, "help": 2.0}


class Runner:
    """How the command is started: a plain install's console script, or this checkout."""

    def __init__(self, python: str, command: list[str], env: dict[str, str]) -> None:
        self.python, self.command, self.env = python, command, env

    def call(self, args: list[str], stdin: bytes = b"") -> float:
        return timed([*self.command, *args], self.env, stdin)

    def floor(self, code: str = "pass") -> float:
        return timed([self.python, "-c", code], self.env, b"")


CPU: list[float] = []  # the CPU seconds (user + system) of each call timed, in order


def timed(argv: list[str], env: dict[str, str], stdin: bytes) -> float:
    """Wall seconds of one process; its CPU seconds go to CPU (on a loaded machine the wall
    time waits for a core, the CPU time does not)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{argv} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    return elapsed


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def plain_install(folder: Path) -> Runner:
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", str(ROOT)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # The dependencies from this interpreter's environment, not a second download.
    Path(site, "zz_bench_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return Runner(python, [str(venv / "bin" / "metis-compaction-tui")], env)


def checkout_runner() -> Runner:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return Runner(sys.executable, [sys.executable, "-c", ENTRY], env)


def line_figures(
    runner: Runner, workspace: Path, calls: int, grow: bool, pause: float
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Wall seconds of the line's calls and of the floor's, interleaved call for call, then
    their CPU seconds."""
    from engine.store import SessionStore
    from engine.tokens import estimate_message_tokens

    runner.call(["statusline", str(workspace), "--sync"])  # the saved figures exist
    extra = messages(calls + 2, f"g{time.monotonic_ns()}") if grow else []
    line, floor, line_cpu, floor_cpu = [], [], [], []
    store = SessionStore.open(workspace) if grow else None
    try:
        for index in range(calls):
            if store is not None:
                message = extra[index]
                store.append_message(SID, message, estimate_message_tokens(message))
                time.sleep(pause)  # Claude Code's debounce between updates
            line.append(runner.call(["statusline", str(workspace)]))
            line_cpu.append(CPU[-1])
            floor.append(runner.floor())
            floor_cpu.append(CPU[-1])
    finally:
        if store is not None:
            store.close()
    return line, floor, line_cpu, floor_cpu


def open_manager_seconds(workspace: Path, repeats: int) -> dict[str, list[float]]:
    """Seconds from SessionStore.open to each step of a resumed session's first turn: the
    manager made (the columns checked, no body decoded), its first plan (a few bodies near the
    end read), its first preview (the span's bodies read and encoded for the cache key)."""
    from engine.store import SessionStore

    times: dict[str, list[float]] = {"manager": [], "plan": [], "preview": []}
    for _ in range(repeats):
        gc.collect()  # each round starts on a heap holding nothing of the last, as a new process
        started = time.perf_counter()
        with SessionStore.open(workspace) as store:
            manager = store.manager(SID, cache=None)
            times["manager"].append(time.perf_counter() - started)
            manager.plan()
            times["plan"].append(time.perf_counter() - started)
            manager.preview()
            times["preview"].append(time.perf_counter() - started)
            del manager
    return times


def cli_figures(
    runner: Runner, workspace: Path, calls: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    ws = str(workspace)
    from tests.transcript_writer import ClaudeCodeWriter

    transcript = workspace.parent / "session.jsonl"  # a short Claude Code log (64 KiB)
    transcript.write_text("".join(ClaudeCodeWriter(1).turns_until(64 << 10)))
    cases: dict[str, tuple[list[str], bytes]] = {
        "bare `python -c pass`": ([], b""),
        # What a command reading a store's rows loads before a line of ours: the rows decode
        # into msgspec Structs, the store is SQLite, the CLI argparse. The floor under `status`
        # (msgspec imported as the commands do, without typing_extensions: lean_msgspec).
        REQUIRED: ([], b""),
        "`--help`": (["--help"], b""),
        "`inspect --help`": (["inspect", "--help"], b""),
        "`status WS`": (["status", ws], b""),
        "`status FILE` (64 KiB transcript)": (["status", str(transcript)], b""),
        "`cache list WS`": (["cache", "list", ws], b""),
        "`statusline WS`": (["statusline", ws], b""),
        "`statusline` (garbage stdin)": (["statusline"], b"x"),
    }
    runner.call(["statusline", ws, "--sync"])
    times: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(calls):  # interleaved: load on the machine hits every case alike
        for name, (args, stdin) in cases.items():
            if args:
                times[name].append(runner.call(args, stdin))
            else:
                times[name].append(runner.floor(REQUIRED_CODE if name == REQUIRED else "pass"))
            cpu[name].append(CPU[-1])
    return times, cpu


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1k and 10k stores, fewer calls")
    parser.add_argument("--plain", action="store_true", help="time a plain (non-editable) install")
    parser.add_argument("--calls", type=int, default=None, help="calls per figure")
    args = parser.parse_args(argv)
    calls = args.calls or (8 if args.quick else 25)
    sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        runner = plain_install(tmp) if args.plain else checkout_runner()
        runner.env["METIS_STATUSLINE_STATE_DIR"] = str(tmp / "state")
        where = "a plain install" if args.plain else "this checkout"
        print(f"## Start-up against a bare interpreter ({where})\n")
        print(f"{os.cpu_count()} CPUs; {calls} calls per figure, interleaved with floor calls.")
        print("Wall: what the agent waits for; CPU (user + system): what the call itself costs,")
        print("which a loaded machine does not inflate. Ratios are p50 over the floor's p50.\n")
        rows = []
        stores = {}
        for size in sizes:
            workspace = tmp / f"ws{size}"
            workspace.mkdir()
            build_store(workspace, size).close()
            stores[size] = workspace
            for grow in (False, True):
                line, floor, line_cpu, floor_cpu = line_figures(
                    runner, workspace, calls, grow, 0.3 if grow else 0.0
                )
                p50, p95, f50 = pct(line, 0.5), pct(line, 0.95), pct(floor, 0.5)
                c50, fc50 = pct(line_cpu, 0.5), pct(floor_cpu, 0.5)
                met = p95 < TARGETS["line_p95_s"] and p50 / f50 < TARGETS["line_ratio"]
                rows.append(
                    [
                        f"{size:,} messages, "
                        + ("one appended before each call" if grow else "unchanged"),
                        ms(p50),
                        ms(p95),
                        ms(f50),
                        f"{p50 / f50:.2f}x",
                        f"{ms(c50)} / {ms(fc50)} = {c50 / max(fc50, 1e-9):.2f}x",
                        "yes" if met else "NO",
                    ]
                )
        print("`statusline WS`:\n")
        headers = ["store", "p50 ms", "p95 ms", "floor p50 ms", "wall / floor"]
        headers += ["CPU ms / floor", "p95 < 50 ms, < 2x"]
        print(table(headers, rows))
        biggest = max(sizes)
        steps = open_manager_seconds(stores[biggest], 3)
        opened = steps["manager"]
        verdict = "yes" if min(opened) < TARGETS["open_s"] else "NO"
        print(
            f"\nSessionStore.open + manager() at {biggest:,} messages, in process: best "
            f"{min(opened):.3f} s, median {pct(opened, 0.5):.3f} s "
            f"(target < {TARGETS['open_s']} s: {verdict}); then its first plan at "
            f"{min(steps['plan']):.3f} s and first preview (the span's bodies read and "
            f"encoded for the cache key) at {min(steps['preview']):.3f} s from the open\n"
        )
        small = tmp / "small"
        small.mkdir()
        build_store(small, 200).close()
        times, cpu = cli_figures(runner, small, calls)
        base = pct(times["bare `python -c pass`"], 0.5)
        base_cpu = pct(cpu["bare `python -c pass`"], 0.5)
        rows = []
        for name, values in times.items():
            p50, c50 = pct(values, 0.5), pct(cpu[name], 0.5)
            target = TARGETS["help"] if "help" in name else TARGETS["data"]
            floor_row = name.startswith("bare") or name == REQUIRED
            verdict = "" if floor_row else ("yes" if p50 / base < target else "NO")
            rows.append(
                [
                    name,
                    ms(p50),
                    ms(pct(values, 0.95)),
                    f"{p50 / base:.2f}x",
                    ms(c50),
                    f"{c50 / max(base_cpu, 1e-9):.2f}x",
                    f"< {target}x",
                    verdict,
                ]
            )
        print("CLI start per command (a 200-message store):\n")
        headers = ["command", "p50 ms", "p95 ms", "wall / floor", "CPU p50 ms", "CPU / floor"]
        print(table([*headers, "target", "met (wall)"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
