"""The cost targets over a grid of knobs: does any threshold and tail meet them all?

With the paid summarizer on the session's cached prefix (the cheapest call), every workload shape
is replayed for 200 turns at each (threshold, preserved messages) pair, per strategy, through
strategy_cost.measure, and the three cost targets are checked on each run: break-even within 3
turns of the first compaction, billed input at turn 40 at most 0.30x, total cost at most 0.5x.
The last line counts the runs that meet all three.

    python tests/perf/knob_sweep.py            # summarize and hybrid, 3 shapes, 6 x 3 knobs
    python tests/perf/knob_sweep.py --quick    # mixed only, summarize and hybrid, 3 x 2 knobs
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import strategy_cost
import workload_cost
from _util import table

from metis_compaction_tui.demo.workload_shapes import SHAPES

THRESHOLDS = (3_000, 5_000, 8_000, 12_000, 20_000, 30_000)
PRESERVED = (1, 2, 5)


def meets(result: dict[str, object]) -> tuple[bool, bool, bool]:
    even = result["break_even_after_turns"]
    turn_40 = result["billed_input_vs_uncompacted"].get("40")  # type: ignore[union-attr]
    return (
        even is not None and even <= 3,  # type: ignore[operator]
        turn_40 is not None and turn_40 <= 0.30,
        result["total_vs_uncompacted"] <= 0.5,  # type: ignore[operator]
    )


async def sweep(args: argparse.Namespace) -> list[list[str]]:
    variants = [strategy_cost.Variant(s, "haiku-cached") for s in args.strategy]
    rows = []
    for preserve in args.preserve:
        for threshold in args.threshold:
            print(f"threshold {threshold:,}, {preserve} kept ...", file=sys.stderr, flush=True)
            matrix = await strategy_cost.measure(
                workload_cost,
                shapes=args.workload,
                variants=variants,
                seed=0,
                turns=args.turns,
                threshold=threshold,
                quality=False,
                preserve=preserve,
            )
            for result in matrix["results"]:
                checks = meets(result)
                facts = result["workload_facts"]
                rows.append(
                    [
                        result["workload"],
                        result["strategy"],
                        f"{threshold:,}",
                        str(preserve),
                        f"+{result['break_even_after_turns']}",
                        f"{result['billed_input_vs_uncompacted'].get('40')}x",
                        f"{result['total_vs_uncompacted']}x",
                        str(result["compactions"]),
                        f"{facts['recovered']}/{facts['asked']}",
                        " ".join("✓" if ok else "✗" for ok in checks),
                    ]
                )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="mixed only, a smaller grid")
    args = parser.parse_args(argv)
    args.strategy = ["summarize", "hybrid"]
    args.workload = ["mixed"] if args.quick else list(SHAPES)
    args.threshold = (8_000, 12_000, 30_000) if args.quick else THRESHOLDS
    args.preserve = (2, 5) if args.quick else PRESERVED
    args.turns = 200
    rows = asyncio.run(sweep(args))
    rows.sort(key=lambda row: (row[0], row[1], int(row[2].replace(",", "")), int(row[3])))
    headers = [
        "workload", "strategy", "threshold", "kept", "break-even", "turn 40", "total",
        "compactions", "workload facts", "even ≤3 / t40 ≤0.30 / total ≤0.5",
    ]  # fmt: skip
    print(table(headers, rows))
    all_met = sum(1 for row in rows if "✗" not in row[-1])
    print(f"\n{all_met} of {len(rows)} runs meet all three cost targets.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
