"""The status line's cost per call, against a bare interpreter start in the same run.

Claude Code runs `metis-compaction-tui statusline` on every update (debounced to 300 ms) and
cancels a run still in flight, so what matters is the wall time of one call, which starts a
Python process. Each call here is a real process, fed the statusLine JSON on stdin, on a transcript
that grows by one turn before each call (as Claude Code's does). The line itself reads only the
saved figures; the refresher that brings them up to date runs detached (timed apart: in its own
process with --sync, and in-process without the interpreter start and imports).

Calls run with a bytecode cache, as an installed package does (pip compiles it at install): in a
temporary PYTHONPYCACHEPREFIX, warmed once, so a session that sets PYTHONDONTWRITEBYTECODE does not
time the compiling of our modules on every call. `--no-bytecode` times that case instead.
`--baseline DIR` runs another checkout (e.g. `git worktree add /tmp/base main`) interleaved with
this one, call for call, so both see the same machine load.

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

from tests.transcript_writer import ClaudeCodeWriter  # noqa: E402

TARGET_P95_MS = 50.0
TARGET_RATIO = 2.0
TARGET_FIRST_S = 2.0
FIRST_READS = 3  # first reads with --sync per checkout (each a fresh state folder)
# What the console script runs (metis-compaction-tui's entry point), from the checkout on
# PYTHONPATH.
ENTRY = "import sys; from metis_compaction_tui.cli import main; sys.exit(main())"
# The console script pip wrote beside this interpreter (it adds `import re` to ENTRY).
SCRIPT = Path(sys.executable).with_name("metis-compaction-tui")


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
    # Run from the checkout under test: `python -c` and `-m` put the working folder first on
    # sys.path, ahead of PYTHONPATH, so a call made from another checkout would import that one.
    cwd = env.get("PYTHONPATH")
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, cwd=cwd, check=False)
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


def saved_size(state: str, path: Path) -> object:
    """The size the saved figures for `path` describe, found by content: a baseline checkout may
    name its state files otherwise."""
    try:
        names = [n for n in os.listdir(state) if n.endswith(".line.json")]
    except OSError:
        return None
    for name in names:
        try:
            data = json.loads(Path(state, name).read_bytes())
        except (OSError, ValueError):
            continue  # being replaced right now
        if isinstance(data, dict) and data.get("path") == str(path):
            return data.get("size")
    return None


def wait_for_refresh(state: str, path: Path, limit_s: float = 60.0) -> float:
    """Seconds until the saved figures describe the file as it is now."""
    started = time.perf_counter()
    deadline = time.monotonic() + limit_s
    size = path.stat().st_size
    while time.monotonic() < deadline:
        if saved_size(state, path) == size:
            return time.perf_counter() - started
        time.sleep(0.005)
    raise SystemExit(f"the refresher did not catch up with {path.name} in {limit_s:.0f} s")


class Tree:
    """One checkout under test: its environment (bytecode cache, state folder) per transcript."""

    def __init__(self, name: str, root: Path, scratch: Path, bytecode: bool) -> None:
        self.name, self.root = name, root
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NO_COLOR")}
        if bytecode:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(scratch / f"pyc-{name}")
        else:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            env.pop("PYTHONPYCACHEPREFIX", None)
        env["PYTHONPATH"] = str(root)
        self.env = env
        self.scratch = scratch
        if bytecode:  # write the cache once: what the line and the refresher import
            warm = "import metis_compaction_tui.cli, metis_compaction_tui.statusline.refresh"
            subprocess.run([sys.executable, "-c", warm], env=env, check=True)
            subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)

    def state(self, label: str, suffix: str = "") -> str:
        return str(self.scratch / f"state-{self.name}-{label}{suffix}")

    def env_for(self, label: str, suffix: str = "") -> dict[str, str]:
        return {**self.env, "METIS_STATUSLINE_STATE_DIR": self.state(label, suffix)}


def measure(
    label: str, size: int, calls: int, scratch: Path, trees: list[Tree], rows: list[list[str]]
) -> dict[str, dict[str, float]]:
    path = scratch / f"{label}.jsonl"
    writer = write_log(path, size)
    line = [sys.executable, "-c", ENTRY, "statusline"]
    raw = stdin_for(path)
    results: dict[str, dict[str, float]] = {}
    for tree in trees:  # one at a time: a first read of 100 MB takes a core for seconds
        env = tree.env_for(label)
        first_line = timed(line, raw, env)  # no saved figures: prints what stdin says, spawns
        ready = first_line + wait_for_refresh(tree.state(label), path, 600)
        # The same first read inline (--sync), each in a fresh state folder: the process's wall
        # time, median of FIRST_READS (one read is at the mercy of a noisy neighbour).
        syncs = [
            timed([*line, "--sync"], raw, tree.env_for(label, f"-sync{n}"))
            for n in range(FIRST_READS)
        ]
        results[tree.name] = {
            "first_line": first_line,
            "ready": ready,
            "first_sync": pct(syncs, 0.5),
            "first_sync_max": max(syncs),
        }
    names = ["pass"] + [f"{t.name}: {kind}" for t in trees for kind in ("line", "same", "sync")]
    entry_kinds = [("python -m metis_compaction_tui.cli", "-m")]
    if SCRIPT.exists():
        entry_kinds.insert(0, ("console script `metis-compaction-tui`", "script"))
    names += [f"{trees[0].name}: {kind}" for _, kind in entry_kinds]
    figures: dict[str, list[float]] = {name: [] for name in names}
    base_env = trees[0].env
    for _ in range(calls):
        figures["pass"].append(timed([sys.executable, "-c", "pass"], b"", base_env))
        with path.open("a") as out:
            out.writelines(writer.turn())
        for tree in trees:
            figures[f"{tree.name}: line"].append(timed(line, raw, tree.env_for(label)))
            # before the next tree's call: its refresher must not run beside that call
            wait_for_refresh(tree.state(label), path)
        for tree in trees:
            figures[f"{tree.name}: same"].append(timed(line, raw, tree.env_for(label)))
        env = trees[0].env_for(label)
        for _, kind in entry_kinds:
            argv = (
                [str(SCRIPT), "statusline"]
                if kind == "script"
                else [sys.executable, "-m", "metis_compaction_tui.cli", "statusline"]
            )
            figures[f"{trees[0].name}: {kind}"].append(timed(argv, raw, env))
        with path.open("a") as out:
            out.writelines(writer.turn())
        for tree in trees:
            figures[f"{tree.name}: sync"].append(timed([*line, "--sync"], raw, tree.env_for(label)))
    # The refresher alone, in this process (no interpreter start, imports done): per append.
    from metis_compaction_tui.statusline.refresh import refresh

    in_process: list[float] = []
    for _ in range(calls):
        with path.open("a") as out:
            out.writelines(writer.turn())
        started = time.perf_counter()
        refresh(str(path), trees[0].state(label), "claude-sonnet-4-5", wait=True)
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
    for tree in trees:
        row(f"{tree.name}: statusline, one turn appended", figures[f"{tree.name}: line"])
        row(f"{tree.name}: statusline, nothing new", figures[f"{tree.name}: same"])
        row(f"{tree.name}: statusline --sync, one turn appended", figures[f"{tree.name}: sync"])
        results[tree.name]["p95_ms"] = pct(figures[f"{tree.name}: line"], 0.95) * 1000
        results[tree.name]["p50_ms"] = pct(figures[f"{tree.name}: line"], 0.5) * 1000
        results[tree.name]["ratio95"] = pct(figures[f"{tree.name}: line"], 0.95) / base95
    for what, kind in entry_kinds:
        row(f"{trees[0].name}: nothing new, via {what}", figures[f"{trees[0].name}: {kind}"])
    row(f"{trees[0].name}: refresher alone, in-process, one turn appended", in_process)
    results[trees[0].name]["refresh50"] = pct(in_process, 0.5)
    results[trees[0].name]["mb"] = mb
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--baseline", type=Path, help="another checkout, run interleaved")
    parser.add_argument("--no-bytecode", action="store_true", help="compile on every call")
    parser.add_argument("--calls", type=int, help="calls per row (30; 8 with --quick)")
    args = parser.parse_args()
    sizes = [("1mb", 1_000_000), ("big", 10_000_000 if args.quick else 100_000_000)]
    calls = args.calls or (8 if args.quick else 30)
    rows: list[list[str]] = []
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        trees = [Tree("this", ROOT, scratch, not args.no_bytecode)]
        if args.baseline is not None:
            trees.append(Tree("baseline", args.baseline.resolve(), scratch, not args.no_bytecode))
        for label, size in sizes:
            results.append(measure(label, size, calls, scratch, trees, rows))
    cache = "no bytecode cache (compiled per call)" if args.no_bytecode else "bytecode cached"
    print("## statusline: one call against a bare interpreter start\n")
    print(f"{calls} calls per row, each a real process; {os.cpu_count()} CPUs; {cache}.\n")
    print("| call | p50 ms | p95 ms | p50 vs pass | p95 vs pass |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    small, big = results
    mb_small, mb_big = small["this"]["mb"], big["this"]["mb"]
    print("\n### Against the targets\n")
    print("| target | " + " | ".join(small) + " | met (this) |")
    print("|---|" + "---|" * (len(small) + 1))

    def target(what: str, key: str, res: dict[str, dict[str, float]], fmt: str, ok: bool) -> None:
        cells = " | ".join(fmt.format(res[name][key]) for name in res)
        print(f"| {what} | {cells} | {'yes' if ok else 'no'} |")

    for res, mb in ((small, mb_small), (big, mb_big)):
        this = res["this"]
        target(
            f"warm p95 < {TARGET_P95_MS:.0f} ms ({mb:.0f} MB)",
            "p95_ms",
            res,
            "{:.1f} ms",
            this["p95_ms"] < TARGET_P95_MS,
        )
        target(f"warm p50 ({mb:.0f} MB)", "p50_ms", res, "{:.1f} ms", True)
        target(
            f"warm p95 < {TARGET_RATIO:.0f}x interpreter start ({mb:.0f} MB)",
            "ratio95",
            res,
            "{:.2f}x",
            this["ratio95"] < TARGET_RATIO,
        )
    this = big["this"]
    target(
        f"first call on {mb_big:.0f} MB < {TARGET_FIRST_S:.0f} s (the line)",
        "first_line",
        big,
        "{:.3f} s",
        this["first_line"] < TARGET_FIRST_S,
    )
    target(
        f"first call on {mb_big:.0f} MB: figures ready (detached refresher)",
        "ready",
        big,
        "{:.2f} s",
        this["ready"] < TARGET_FIRST_S,
    )
    target(
        f"first call on {mb_big:.0f} MB with --sync (process wall time, median of {FIRST_READS})",
        "first_sync",
        big,
        "{:.2f} s",
        this["first_sync"] < TARGET_FIRST_S,
    )
    target(
        f"first call on {mb_big:.0f} MB with --sync: slowest of {FIRST_READS}",
        "first_sync_max",
        big,
        "{:.2f} s",
        this["first_sync_max"] < TARGET_FIRST_S,
    )
    ratio = big["this"]["refresh50"] / small["this"]["refresh50"]
    print(
        f"| refresher per append, {mb_big:.0f} MB vs {mb_small:.0f} MB (in-process p50) | "
        f"{ratio:.2f}x |" + " |" * (len(small) - 1) + f" {'yes' if ratio < 2 else 'no'} |"
    )


if __name__ == "__main__":
    main()
