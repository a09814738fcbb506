"""The exact figure behind a rough mention (engine.ledger.quantities): what an agent rounded
("nearly eight minutes", "roughly seven thousand") singles out the output line it read."""

from __future__ import annotations

from engine.ledger import extract
from engine.ledger.model import TOP_VALUE_RANK, VALUE
from engine.ledger.quantities import Quantity, roughly_named, said_quantities
from engine.messages import Message, Role, TextContentBlock
from tests.engine.test_ledger import session


def test_rough_figures_are_read_with_their_unit_and_scale() -> None:
    said = said_quantities(
        [
            "The build ran for nearly eight minutes before failing.",
            "roughly seven thousand session writes, about 1.5% of them lost, ~3.5k rows",
            "the worst pause was over 400 ms; it took 3 s once",  # "3 s" is exact: not here
            "one of the two queries is dropped",  # words, not figures
        ]
    )
    assert said == {
        Quantity("time", 480.0, side=-1),  # "nearly": at most eight minutes
        Quantity("", 7000.0),
        Quantity("share", 1.5),
        Quantity("", 3500.0),
        Quantity("time", 0.4, side=1),  # "over": at least 400 ms
    }


def test_a_rough_figure_singles_out_the_line_it_came_from_and_a_crowded_one_none() -> None:
    lines = [f"GC({i}) Pause Young {100 + i * 3}.{i:03d}ms" for i in range(40)]
    lines[17] = "Build FAILED. Time Elapsed 00:07:42.18"
    said = said_quantities(["nearly eight minutes", "about 150 ms"])
    # 150 ms is within a tenth of many pauses: it names none of them.
    assert roughly_named(lines, said) == {lines[17]: "00:07:42.18"}
    assert roughly_named(lines, said_quantities(["a figure said exactly: 7 minutes"])) == {}


def test_the_line_behind_a_rough_figure_is_a_value_ranked_first() -> None:
    rows = [f"session-{i:03d} writes={900 + i * 13} acked=true" for i in range(40)]
    rows[23] = "old-master writes=6914 acked=true discarded=true"
    span = (
        *session(("Counting.", [("Bash", {"command": "redis-cli info"}, "\n".join(rows), False)])),
        Message(
            "a1",
            Role.ASSISTANT,
            (TextContentBlock("Roughly seven thousand writes went to the old master."),),
        ),
    )
    named = [e.text for e in extract(span) if e.kind == VALUE and e.rank == TOP_VALUE_RANK]
    assert any("writes=6914" in text for text in named), named


def test_a_figure_near_two_lines_names_both_and_near_three_names_none() -> None:
    said = said_quantities(["about 500 ms"])
    two = ["p50 120ms", "p95 480ms", "p99 515ms", "max 900ms"]
    assert roughly_named(two, said) == {"p95 480ms": "480ms", "p99 515ms": "515ms"}
    three = [*two, "p98 505ms"]
    assert roughly_named(three, said) == {}


def test_a_date_is_no_count_a_time_of_day_no_duration_and_a_figure_stays_on_its_line() -> None:
    said = said_quantities(["about eight hours", "about 2,000 users", "about 480 jobs"])
    lines = ["released 2024-05-01", "2024-05-01 04:55:21 backup started", "queue depth 480"]
    lines += ["min latency 3"]
    assert roughly_named(lines, said) == {"queue depth 480": "480"}


def test_a_duration_printed_with_its_unit_spelled_out_is_found_behind_a_rough_one() -> None:
    # "~40 seconds" of warm-up is the service that started in 41.7 seconds, not its neighbours.
    lines = [
        "cart-api INFO Started CartApplication in 26.3 seconds (process running for 27.5)",
        "checkout-api INFO Started CheckoutApplication in 41.7 seconds (process running for 43.9)",
        "pricing-api INFO Started PricingApplication in 12.9 seconds (process running for 14.0)",
        "build took 1 minute",
    ]
    said = said_quantities(["A new pod spends its first ~40 seconds compiling hot paths."])
    assert roughly_named(lines, said) == {lines[1]: "41.7 seconds"}


def test_a_printed_duration_closing_a_sentence_keeps_its_unit() -> None:
    lines = ["Build finished in 41.7 seconds.", "Build finished in 12.9 seconds."]
    said = said_quantities(["It builds in about 40 seconds."])
    assert roughly_named(lines, said) == {lines[0]: "41.7 seconds"}


def test_over_and_nearly_single_out_the_figure_on_their_side_of_a_crowd_near_it() -> None:
    # Pauses near 400 ms: "about 400 ms" is within a tenth of five of them and names none; the
    # worst "over 400 ms" is the one pause above it, and "nearly 400 ms" the one just below.
    pauses = [f"GC({i}) Pause Young {ms}ms" for i, ms in enumerate([372.7, 379.8, 385.4, 396.2])]
    lines = [*pauses, "GC(4) Pause Young 412.771ms", "GC(5) Pause Young 58.5ms"]
    assert roughly_named(lines, said_quantities(["about 400 ms"])) == {}
    over = said_quantities(["The worst pause was over 400 ms."])
    assert roughly_named(lines, over) == {lines[4]: "412.771ms"}
    assert roughly_named(lines, said_quantities(["more than 400 ms"])) == {lines[4]: "412.771ms"}
    # Four pauses lie within a tenth below 400 ms: "nearly 400 ms" names none of them.
    assert roughly_named(lines, said_quantities(["one took nearly 400 ms"])) == {}
    builds = ["build 1 took 00:08:20", "build 2 took 00:07:42", "build 3 took 00:08:31"]
    nearly = said_quantities(["the failing build ran for nearly eight minutes"])
    assert roughly_named(builds, nearly) == {builds[1]: "00:07:42"}
    assert roughly_named(builds, said_quantities(["about eight minutes"])) == {}
    # Above or below, a figure more than a tenth away is still no match.
    assert roughly_named(lines, said_quantities(["just under 460 ms"])) == {}


def test_a_figure_and_a_half_is_read_as_one_figure() -> None:
    said = said_quantities(["About one and a half percent of queries were lost outright."])
    assert said == {Quantity("share", 1.5)}
    lines = ["Queries completed: 147586 (98.47%)", "Queries lost: 2291 (1.53%)"]
    assert roughly_named(lines, said) == {lines[1]: "1.53%"}
    hours = said_quantities(["the backfill ran for roughly two and a half hours"])
    assert hours == {Quantity("time", 9_000.0)}
