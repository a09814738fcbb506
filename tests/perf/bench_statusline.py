"""The status line's cost per call, against a bare interpreter start in the same run.

Claude Code runs `metis-compaction-tui statusline` on every update (debounced to 300 ms) and
cancels a run still in flight, so what matters is the wall time of one call, which starts a
Python process. Each call here is a real process, fed the statusLine JSON on stdin, on a transcript
that grows by one turn before each call (as Claude Code's does). The line itself reads only the
saved figures; the refresher that brings them up to date runs detached (timed apart: in its own
process with --sync, and in-process without the interpreter start and imports).

    python tests/perf/bench_statusline.py            # 1 MB and 100 MB transcripts
    python tests/perf/bench_statusline.py --quick    # 1 MB and 10 MB
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from metis_compaction_tui.statusline.state import load_line_state  # noqa: E402
from tests.transcript_writer import ClaudeCodeWriter  # noqa: E402

TARGET_P95_MS = 50.0
TARGET_RATIO = 2.0
TARGET_FIRST_S = 2.0
# What the console script runs (metis-compaction-tui's entry point), from this checkout.
ENTRY = "import sys; from metis_compaction_tui.cli import main; sys.exit(main())"


def stdin_for(path: Path) -> bytes:
    usage = {
        "input_tokens": 12,
        "output_tokens": 310,
        "cache_creation_input_tokens": 1800,
        "cache_read_input_tokens": 91000,
    }
    return json.dumps(
        {
            "session_id": "bench",
            "transcript_path": str(path),
            "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"},
            "workspace": {"current_dir": str(path.parent), "project_dir": str(path.parent)},
            "cost": {"total_cost_usd": 1.5},
            "context_window": {
                "context_window_size": 200_000,
                "used_percentage": 46,
                "current_usage": usage,
            },
        }
    ).encode()


def timed(argv: list[str], stdin: bytes, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or (stdin and not done.stdout.strip()):
        raise SystemExit(f"{argv} failed: {done.stderr.decode()[-500:]}")
    return elapsed


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def write_log(path: Path, size: int) -> ClaudeCodeWriter:
    writer = ClaudeCodeWriter(1, compact_every=400)
    with path.open("w") as out:
        out.writelines(writer.turns_until(size))
    return writer


def wait_for_refresh(state: str, path: Path, limit_s: float = 60.0) -> None:
    deadline = time.monotonic() + limit_s
    size = path.stat().st_size
    while time.monotonic() < deadline:
        saved = load_line_state(state, str(path))
        if saved is not None and saved["size"] == size:
            return
        time.sleep(0.01)
    raise SystemExit(f"the refresher did not catch up with {path.name} in {limit_s:.0f} s")


def measure(label: str, size: int, calls: int, scratch: Path, rows: list[list[str]]) -> dict:
    path = scratch / f"{label}.jsonl"
    writer = write_log(path, size)
    state = str(scratch / f"state-{label}")
    env = {**os.environ, "METIS_STATUSLINE_STATE_DIR": state, "PYTHONPATH": str(ROOT)}
    line = [sys.executable, "-c", ENTRY, "statusline"]
    raw = stdin_for(path)
    figures: dict[str, list[float]] = {"pass": [], "line": [], "unchanged": [], "sync": []}
    first_line = timed(line, raw, env)  # no saved figures: prints what stdin says, spawns
    wait_for_refresh(state, path, 600)
    first_full = time.perf_counter()
    timed([*line, "--sync"], raw, {**env, "METIS_STATUSLINE_STATE_DIR": state + "-sync"})
    first_full = time.perf_counter() - first_full
    for _ in range(calls):
        figures["pass"].append(timed([sys.executable, "-c", "pass"], b"", env))
        with path.open("a") as out:
            out.writelines(writer.turn())
        figures["line"].append(timed(line, raw, env))
        wait_for_refresh(state, path)
        figures["unchanged"].append(timed(line, raw, env))
        with path.open("a") as out:
            out.writelines(writer.turn())
        figures["sync"].append(timed([*line, "--sync"], raw, env))
    # The refresher alone, in this process (no interpreter start, imports done): per append.
    from metis_compaction_tui.statusline.refresh import refresh

    in_process: list[float] = []
    for _ in range(calls):
        with path.open("a") as out:
            out.writelines(writer.turn())
        started = time.perf_counter()
        refresh(str(path), state, "claude-sonnet-4-5", wait=True)
        in_process.append(time.perf_counter() - started)
    base50, base95 = pct(figures["pass"], 0.5), pct(figures["pass"], 0.95)
    mb = path.stat().st_size / 1e6

    def row(what: str, values: list[float]) -> None:
        p50, p95 = pct(values, 0.5), pct(values, 0.95)
        rows.append(
            [
                f"{what} ({mb:.0f} MB)",
                f"{p50 * 1000:.1f}",
                f"{p95 * 1000:.1f}",
                f"{p50 / base50:.2f}x",
                f"{p95 / base95:.2f}x",
            ]
        )

    row("bare `python -c pass`", figures["pass"])
    row("statusline, one turn appended", figures["line"])
    row("statusline, nothing new", figures["unchanged"])
    row("statusline --sync (refresh inline), one turn appended", figures["sync"])
    row("refresher alone, in-process, one turn appended", in_process)
    return {
        "mb": mb,
        "first_line": first_line,
        "first_full": first_full,
        "p95_ms": pct(figures["line"], 0.95) * 1000,
        "ratio95": pct(figures["line"], 0.95) / base95,
        "refresh50": pct(in_process, 0.5),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sizes = [("1mb", 1_000_000), ("big", 10_000_000 if args.quick else 100_000_000)]
    calls = 8 if args.quick else 30
    rows: list[list[str]] = []
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, size in sizes:
            results.append(measure(label, size, calls, Path(tmp), rows))
    print("## statusline: one call against a bare interpreter start\n")
    print(f"{calls} calls per row, each a real process; {os.cpu_count()} CPUs.\n")
    print("| call | p50 ms | p95 ms | p50 vs pass | p95 vs pass |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    small, big = results
    print("\n### Against the targets\n")
    print("| target | measured | met |")
    print("|---|---|---|")
    for res in results:
        print(
            f"| warm p95 < {TARGET_P95_MS:.0f} ms ({res['mb']:.0f} MB) | {res['p95_ms']:.1f} ms | "
            f"{'yes' if res['p95_ms'] < TARGET_P95_MS else 'no'} |"
        )
        print(
            f"| warm p95 < {TARGET_RATIO:.0f}x interpreter start ({res['mb']:.0f} MB) | "
            f"{res['ratio95']:.2f}x | {'yes' if res['ratio95'] < TARGET_RATIO else 'no'} |"
        )
    met = "yes" if big["first_line"] < TARGET_FIRST_S else "no"
    print(
        f"| first call on {big['mb']:.0f} MB < {TARGET_FIRST_S:.0f} s (the line) | "
        f"{big['first_line'] * 1000:.0f} ms | {met} |"
    )
    print(
        f"| first full read of {big['mb']:.0f} MB (--sync: figures ready) | "
        f"{big['first_full']:.2f} s | {'yes' if big['first_full'] < TARGET_FIRST_S else 'no'} |"
    )
    ratio = big["refresh50"] / small["refresh50"]
    print(
        f"| refresher per append, {big['mb']:.0f} MB vs {small['mb']:.0f} MB (in-process p50) | "
        f"{ratio:.2f}x | {'yes' if ratio < 2 else 'no'} |"
    )


if __name__ == "__main__":
    main()
