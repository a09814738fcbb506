"""Start-up of the `metis-compaction-tui` command against a bare interpreter, in the same run.

Every call is a real process running the console script's entry (`metis_compaction_tui.cli:main`)
from this checkout. A subcommand should pay only for what it uses: `--help` for argparse,
`status WS` for the store, `statusline` for the standard library.

    python tests/perf/bench_cli.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

ENTRY = "import sys; from metis_compaction_tui.cli import main; sys.exit(main())"


def timed(argv: list[str], env: dict[str, str], stdin: bytes = b"") -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    return elapsed


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    calls = 7 if args.quick else 25
    from metis_compaction_tui.demo.simulator import Simulator

    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        asyncio.run(Simulator(workspace, pace=0, turns=12, reruns=0).run())
        env = {**os.environ, "PYTHONPATH": str(ROOT), "METIS_STATUSLINE_STATE_DIR": tmp}
        cases = {
            "bare `python -c pass`": [sys.executable, "-c", "pass"],
            "`--help`": [sys.executable, "-c", ENTRY, "--help"],
            "`status --help`": [sys.executable, "-c", ENTRY, "status", "--help"],
            "`status WS`": [sys.executable, "-c", ENTRY, "status", str(workspace)],
            "`status WS --json`": [sys.executable, "-c", ENTRY, "status", str(workspace), "--json"],
            "`cache list WS`": [sys.executable, "-c", ENTRY, "cache", "list", str(workspace)],
            "`statusline` (garbage stdin)": [sys.executable, "-c", ENTRY, "statusline"],
            "`statusline WS`": [sys.executable, "-c", ENTRY, "statusline", str(workspace)],
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(calls):  # interleaved, so load on the machine hits every case alike
            for name, argv in cases.items():
                times[name].append(timed(argv, env, b"x" if "statusline" in name else b""))
    base50 = pct(times["bare `python -c pass`"], 0.5)
    print("## CLI start-up against a bare interpreter\n")
    print(f"{calls} runs of each, interleaved; {os.cpu_count()} CPUs.\n")
    print("| command | p50 ms | p95 ms | p50 vs `python -c pass` |")
    print("|---|---|---|---|")
    for name, values in times.items():
        p50 = pct(values, 0.5)
        print(
            f"| {name} | {p50 * 1000:.1f} | {pct(values, 0.95) * 1000:.1f} | {p50 / base50:.2f}x |"
        )


if __name__ == "__main__":
    main()
