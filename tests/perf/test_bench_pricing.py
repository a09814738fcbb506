"""The cost benchmarks at a price the user states (workload_cost.py --price / --price-model): real
runs of the matrix, short, whose figures follow the stated rates, and the option's checks."""

from __future__ import annotations

import asyncio
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

PERF = Path(__file__).resolve().parent
sys.path.insert(0, str(PERF))  # the scripts import their siblings by bare name

import _pricing  # noqa: E402
import workload_cost  # noqa: E402

from engine.summarizers.pricing import CallUsage, price_for, usage_cost  # noqa: E402

# 40 turns of the mixed workload at a threshold it crosses three times; summarize only (its
# standalone and cached calls), no held-out set, no replays at other thresholds.
QUICK = ["--json", "--turns", "40", "--workload", "mixed", "--strategy", "summarize"]
QUICK += ["--no-quality", "--threshold", "12000", "--turn-40-thresholds", ""]


def matrix(*price: str) -> dict[str, Any]:
    args = workload_cost.parse_args([*QUICK, *price])
    return workload_cost.strategy_cost.public(asyncio.run(workload_cost.strategies(args)))


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Any]]:
    return {
        "table": matrix(),
        "stated at the table's rates": matrix(
            "--price-model", "claude-haiku-4-5", "--price", "1,5"
        ),
        "stated": matrix("--price", "1,5"),
        "stated, doubled": matrix("--price", "2,10"),
        "stated, other cache rates": matrix("--price", "1,5,2,0.05"),
    }


def _usd(result: dict[str, Any], key: str) -> Decimal:
    return Decimal(result[key])


def test_the_pricing_section_names_the_rates_and_where_they_come_from(
    runs: dict[str, dict[str, Any]],
) -> None:
    assert runs["table"]["pricing"] | {"applies_to": ""} == {
        "model": "claude-haiku-4-5",
        "origin": "table",
        "input_per_mtok": "1",
        "output_per_mtok": "5",
        "cache_write_per_mtok": "1.25",
        "cache_read_per_mtok": "0.1",
        "derived_from_input": [],
        "applies_to": "",
    }
    doubled = runs["stated, doubled"]["pricing"]
    assert doubled["model"] == _pricing.STATED_MODEL and doubled["origin"] == "stated"
    assert [Decimal(doubled[f]) for f in _pricing.PRICE_FIELDS] == [
        2,
        10,
        Decimal("2.5"),
        Decimal("0.2"),
    ]
    assert doubled["derived_from_input"] == ["cache_write_per_mtok", "cache_read_per_mtok"]
    other = runs["stated, other cache rates"]["pricing"]
    assert [Decimal(other[f]) for f in _pricing.PRICE_FIELDS] == [1, 5, 2, Decimal("0.05")]
    assert other["derived_from_input"] == []


def test_a_stated_price_equal_to_the_tables_bills_the_same(
    runs: dict[str, dict[str, Any]],
) -> None:
    table, stated = runs["table"], runs["stated at the table's rates"]
    assert stated["pricing"]["origin"] == "stated"
    assert stated["uncompacted"] == table["uncompacted"]
    assert stated["results"] == table["results"]


def test_doubling_every_rate_doubles_every_amount(runs: dict[str, dict[str, Any]]) -> None:
    once, twice = runs["stated"], runs["stated, doubled"]
    for shape, base in once["uncompacted"].items():
        assert Decimal(twice["uncompacted"][shape]["total_usd"]) == 2 * Decimal(base["total_usd"])
    for a, b in zip(once["results"], twice["results"], strict=True):
        assert a["compactions"] >= 2 and _usd(a, "compaction_spend_usd") > 0
        for key in ("input_usd", "compaction_spend_usd", "total_usd", "uncompacted_total_usd"):
            assert _usd(b, key) == 2 * _usd(a, key), key
        assert Decimal(b["floor"]["40"]["usd"]) == 2 * Decimal(a["floor"]["40"]["usd"])
        # The same decisions (summary budgets pick the same lengths: every rate scaled alike),
        # so the same usage and the same ratios.
        assert b["call_usage"] == a["call_usage"]
        assert b["billed_input_vs_floor"] == a["billed_input_vs_floor"]
        assert b["total_vs_uncompacted"] == a["total_vs_uncompacted"]


def test_the_spend_is_the_usage_at_the_stated_price(runs: dict[str, dict[str, Any]]) -> None:
    stated, other = runs["stated"], runs["stated, other cache rates"]
    price = _pricing.pricing(None, _pricing.parse_price("1,5,2,0.05")).price
    for a, b in zip(stated["results"], other["results"], strict=True):
        assert _usd(b, "compaction_spend_usd") == usage_cost(price, CallUsage(**b["call_usage"]))
        # Cache reads at half the rate, writes at 1.6x: other totals, other ratios.
        assert _usd(b, "uncompacted_total_usd") < _usd(a, "uncompacted_total_usd")
        assert _usd(b, "total_usd") != _usd(a, "total_usd")
        assert b["billed_input_vs_floor"] != a["billed_input_vs_floor"]
    # And the table's price is not what billed them.
    haiku = price_for("claude-haiku-4-5")
    cached = other["results"][-1]
    assert _usd(cached, "compaction_spend_usd") != usage_cost(
        haiku, CallUsage(**cached["call_usage"])
    )


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--price", "1"], "expected INPUT,OUTPUT[,CACHE_WRITE[,CACHE_READ]]"),
        (["--price", "1,five"], "field 2 (output_per_mtok) 'five' is not a number"),
        (["--price", "1,5,-1"], "field 3 (cache_write_per_mtok) '-1': expected a finite number"),
        (["--price", "1,5,,nan"], "field 4 (cache_read_per_mtok) 'nan'"),
        (["--price", "0,5"], "field 1 (input_per_mtok) '0': expected more than 0"),
        (["--price-model", "claude-unknown-9"], "no price known for 'claude-unknown-9'"),
        (["--turn-40-thresholds", "20000,x"], "expected comma-separated token counts"),
    ],
)
def test_a_bad_price_is_refused_naming_the_field(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        workload_cost.parse_args(argv)
    assert exit_.value.code == 2
    assert said in capsys.readouterr().err
