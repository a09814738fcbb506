"""The first full read of a Claude Code transcript against its floor: a typed msgspec decode of
every line of the same file (what any reader must at least pay), for 1, 10 and 100 MB.

Each figure is measured in its own subprocess, so its peak memory (ru_maxrss, less the
interpreter's own once the modules are imported) is that step's alone:

- floor: every line decoded into a msgspec Struct of the record's envelope and message;
- import: `load_transcript` (the tail reading every line and the importer building the history);
- status --json: what `status FILE --json` does (a light import keeping no message text under
  the default strategy, our token counts and projection, the JSON written);
- statusline --sync: the status line's first read of the file with no saved state
  (statusline.refresh.refresh, what `statusline --sync` and the detached refresher run: a light
  read keeping no message text, the projection, the state files written).

Times are the process's CPU time (the best of --repeat runs): on a machine shared with other
work the wall time (shown too) varies with the load, the CPU time much less. Targets: each step
within 2x the floor; the status line's peak under 100 MB on 100 MB.

    python tests/perf/bench_import_floor.py                 # 1, 10, 100 MB
    python tests/perf/bench_import_floor.py --quick         # 1, 10 MB
    python tests/perf/bench_import_floor.py --repeat 3      # best of 3 runs of each step
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from _util import table  # noqa: E402

# Run in a child: prints {"seconds": cpu s, "wall": s, "peak_mb": m}.
CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[3])
kind, path = sys.argv[1], sys.argv[2]
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
import msgspec
from metis_compaction_tui.importers import load_transcript
from metis_compaction_tui.sources.recording import read_recording
from metis_compaction_tui.cli.transcripts import transcript_status
from metis_compaction_tui.statusline.refresh import refresh
from engine import CompactionConfig

class Block(msgspec.Struct):
    type: str = ""
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: object = None
    tool_use_id: str | None = None
    content: object = None

class Usage(msgspec.Struct):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

class Api(msgspec.Struct):
    id: str | None = None
    content: str | list[Block] | None = None
    usage: Usage | None = None

class Record(msgspec.Struct, rename="camel"):
    type: str = ""
    uuid: str | None = None
    parent_uuid: str | None = None
    is_sidechain: bool | None = None
    timestamp: str | None = None
    message: Api | None = None

base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started, cpu = time.perf_counter(), time.process_time()
if kind == "floor":
    decoder = msgspec.json.Decoder(Record)
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                decoder.decode(line)
elif kind == "import":
    load_transcript(path)
elif kind == "status":
    from pathlib import Path
    # as `status FILE --json` reads it: without message text under the default strategy
    status = transcript_status(read_recording(Path(path), CompactionConfig(), light=True))
    json.dumps(status)
else:
    refresh(path, sys.argv[4], "claude-sonnet-4-5", wait=True, ending=True)
wall, seconds = time.perf_counter() - started, time.process_time() - cpu
peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
print(json.dumps({"seconds": seconds, "wall": wall, "peak_mb": peak}))
"""


STEPS = {
    "floor": "floor (typed decode)",
    "import": "import",
    "status": "status --json",
    "statusline": "statusline --sync",
}


def measure(kind: str, path: Path, repeat: int) -> dict[str, float]:
    """The best time of `repeat` runs (each in a fresh process, the status line with no saved
    state) and the highest peak."""
    best: dict[str, float] = {"seconds": float("inf"), "wall": float("inf"), "peak_mb": 0.0}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as state:
            done = subprocess.run(
                [sys.executable, "-c", CHILD, kind, str(path), str(ROOT), state],
                capture_output=True,
                text=True,
                check=True,
            )
        got = json.loads(done.stdout.strip().splitlines()[-1])
        best["seconds"] = min(best["seconds"], got["seconds"])
        best["wall"] = min(best["wall"], got["wall"])
        best["peak_mb"] = max(best["peak_mb"], got["peak_mb"])
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 and 10 MB only")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each step (best time)")
    args = parser.parse_args()
    from tests.transcript_writer import ClaudeCodeWriter

    sizes = [1, 10] if args.quick else [1, 10, 100]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for megabytes in sizes:
            path = Path(folder) / f"log-{megabytes}mb.jsonl"
            writer = ClaudeCodeWriter(1, compact_every=400)
            with path.open("w") as out:
                out.writelines(writer.turns_until(megabytes << 20))
            floor = measure("floor", path, args.repeat)
            for kind, label in STEPS.items():
                got = floor if kind == "floor" else measure(kind, path, args.repeat)
                rows.append(
                    [
                        f"{megabytes} MB",
                        label,
                        f"{got['seconds']:.3f}",
                        f"{got['seconds'] / floor['seconds']:.2f}x",
                        f"{got['wall']:.3f}",
                        f"{got['peak_mb']:.0f}",
                    ]
                )
    headers = ["file", "step", "CPU s", "vs floor", "wall s", "peak MB (over start)"]
    print(table(headers, rows))
    print("targets: each step within 2.00x the floor; statusline --sync under 100 MB on 100 MB")


if __name__ == "__main__":
    main()
