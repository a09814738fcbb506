"""The strategy matrix of workload_cost.py (strategy_cost.py), on a short run: one JSON object whose
figures agree with each other and with the engine's pricing of what the local server billed."""

from __future__ import annotations

import asyncio
import json
import sys
from decimal import Decimal
from pathlib import Path

import pytest

PERF = Path(__file__).resolve().parent
sys.path.insert(0, str(PERF))  # the scripts import their siblings by bare name

import workload_cost  # noqa: E402

from engine.summarizers.pricing import CallUsage, price_for, usage_cost  # noqa: E402


@pytest.fixture(scope="module")
def report() -> dict[str, object]:
    argv = [
        "--json",
        "--turns",
        "45",
        "--workload",
        "mixed",
        "--no-quality",
        "--threshold",
        "20000",
        "--turn-40-thresholds",
        "12000",
    ]
    args = workload_cost.parse_args(argv)

    return workload_cost.strategy_cost.public(asyncio.run(workload_cost.strategies(args)))


def test_json_holds_one_result_per_strategy_and_summarizer(report: dict[str, object]) -> None:
    json.dumps(report)  # plain JSON all the way down
    results = report["results"]
    assert isinstance(results, list)
    assert {(r["strategy"], r["summarizer"]) for r in results} == {
        (v.strategy, v.summarizer) for v in workload_cost.strategy_cost.VARIANTS
    }
    for r in results:
        assert r["workload"] == "mixed" and r["compactions"] >= 1
        assert set(r["billed_input_vs_uncompacted"]) == {"40"}
        assert set(r["billed_input_vs_floor"]) == {"40"}
        floor = r["floor"]["40"]
        # The floor is below the uncompacted bill and no compacted run bills under it.
        assert 0 < floor["vs_uncompacted"] < 1
        assert r["billed_input_vs_floor"]["40"] >= 1
        assert set(r["targets"]) == {
            "break_even_within_3_turns",
            "total_at_most_0.5x",
            "turn_40_within_1.25x_floor",
            "fact_recovery_no_worse_than_summarize",
        }


def test_the_spend_is_the_servers_usage_priced_by_the_engine(report: dict[str, object]) -> None:
    haiku = price_for("claude-haiku-4-5")
    for r in report["results"]:  # type: ignore[union-attr]
        usage = CallUsage(**r["call_usage"])
        spend = Decimal(r["compaction_spend_usd"])
        if r["summarizer"] == "none":
            assert spend == 0 and usage == CallUsage()
            assert r["compactions_by_kind"] == {"mask": r["compactions"]}
            continue
        assert spend == usage_cost(haiku, usage) > 0
        if r["summarizer"] == "haiku-cached":
            # On the session's cached prefix the span is read from the cache, not sent again.
            assert usage.cache_read_tokens > 10 * usage.input_tokens
        else:
            assert usage.cache_read_tokens == 0 and usage.input_tokens > 0


def test_break_even_and_totals_agree_with_the_uncompacted_run(report: dict[str, object]) -> None:
    for r in report["results"]:  # type: ignore[union-attr]
        total, base = Decimal(r["total_usd"]), Decimal(r["uncompacted_total_usd"])
        assert r["total_vs_uncompacted"] == pytest.approx(float(total / base), abs=0.001)
        if r["break_even_turn"] is not None:
            assert r["break_even_after_turns"] == r["break_even_turn"] - r["first_compaction_turn"]
            assert r["break_even_turn"] >= r["first_compaction_turn"]


def test_the_ratio_to_the_floor_is_shown_through_the_cycle(report: dict[str, object]) -> None:
    for r in report["results"]:  # type: ignore[union-attr]
        first = r["first_compaction_turn"]
        spread = r["billed_input_vs_floor_after_first_compaction"]
        assert spread["from_turn"] == first + 1 and spread["turns"] == 45 - first
        assert spread["min"] <= spread["median"] <= spread["max"]
        assert spread["min"] <= spread["mean"] <= spread["max"]
        for phase in spread["by_phase_mean"].values():
            assert phase is None or spread["min"] <= phase <= spread["max"]
        if first < 40:
            assert spread["min"] <= r["billed_input_vs_floor"]["40"] <= spread["max"]
        at_40 = r["turn_40_vs_floor_by_threshold"]
        assert set(at_40) == {"20000", "12000"}
        # The run's own threshold: its turn 40 as the matrix reports it.
        own = at_40["20000"]
        assert own["vs_floor"] == r["billed_input_vs_floor"]["40"]
        assert own["compactions_by_then"] <= r["compactions"]
        for at in at_40.values():
            since = at["turns_since_compaction"]
            assert (since is None) == (at["compactions_by_then"] == 0)
            assert since is None or 0 <= since < 40
        # A lower threshold compacts no later and no less often by turn 40.
        assert at_40["12000"]["compactions_by_then"] >= own["compactions_by_then"] >= 1
