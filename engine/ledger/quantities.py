"""Quantities as people say them and as tools print them, so the exact figure behind a rough
mention can be found: "over 400 ms" for a GC log's 412.771ms, "nearly eight minutes" for
MSBuild's 00:07:42.18, "roughly seven thousand" for a count of 6914, "about one and a half
percent" for 1.53%. An agent rounds what it read; the line it read it from is the one the work
rests on."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from typing import NamedTuple

_SMALL = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen",
]  # fmt: skip
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_WORDS = {word: float(n) for n, word in enumerate(_SMALL)}
_WORDS |= {word: float(20 + 10 * n) for n, word in enumerate(_TENS)}
_SCALES = {"hundred": 100.0, "thousand": 1_000.0, "k": 1_000.0, "million": 1_000_000.0}
# unit -> (its kind, how many of the kind's base unit it is)
_UNITS = {
    **dict.fromkeys(("ms", "millisecond", "milliseconds"), ("time", 0.001)),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), ("time", 1.0)),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), ("time", 60.0)),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), ("time", 3_600.0)),
    **dict.fromkeys(("%", "percent"), ("share", 1.0)),
    **dict.fromkeys(("kb", "kib"), ("size", 1e3)),  # kB, KiB: a rough figure, not 1,024
    **dict.fromkeys(("mb", "mib"), ("size", 1e6)),
    **dict.fromkeys(("gb", "gib"), ("size", 1e9)),
    **dict.fromkeys(("tb", "tib"), ("size", 1e12)),
}
_NUMBER_PATTERN = r"\d+(?:,\d{3})*(?:\.\d+)?"
_SPOKEN_NUMBER = "|".join(sorted(_WORDS, key=len, reverse=True))
_UNIT_WORDS = "|".join(sorted((u for u in _UNITS if u != "%"), key=len, reverse=True))
# A figure given roughly: "over 400 ms", "nearly eight minutes", "roughly seven thousand",
# "~3.5k". A figure given exactly is a term the line names (values.named_terms).
_HEDGE = (
    r"(about|around|roughly|nearly|almost|just over|just under|over|under|approximately|"
    r"approx\.|close to|more than|less than|some|~)"
)
# Which side of the figure said the printed one lies on: "over 400 ms" is no 385 ms, and
# "nearly eight minutes" no 8:20 (a crowd of pauses near 400 ms has one above it).
_ABOVE = frozenset({"over", "just over", "more than"})
_BELOW = frozenset({"under", "just under", "less than", "nearly", "almost"})
_SAID = re.compile(
    rf"(?<![\w.,]){_HEDGE} ?({_NUMBER_PATTERN}|{_SPOKEN_NUMBER})( and a half)?"
    r"(?:[ -]?(hundred|thousand|million|k)\b)?"
    rf"(?:[ -]?(%|(?:{_UNIT_WORDS})\b))?",
    re.IGNORECASE,
)
# As a tool prints it: 412.771ms, 41.09 ms, 1.53%, 00:07:42.18, 6914 (a bare count), its unit
# spelled out too ("Started App in 41.7 seconds"). A number in a date (2024-05-01) is no count,
# and a time of day after a date is no duration.
# Times as _UNITS names them; sizes in the cases tools print them (a lower-case "mb" is no unit).
_PRINTED_TIMES = sorted((u for u, (kind, _) in _UNITS.items() if kind == "time"), key=len)[::-1]
_PRINTED_UNIT = rf"%|(?:{'|'.join(_PRINTED_TIMES)}|kB|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\b"
_PRINTED = re.compile(
    rf"(?<![\w.,:-])({_NUMBER_PATTERN})[ ]?({_PRINTED_UNIT})?"
    r"(?![\w:-]|\.\w)"  # a sentence's closing period ends it
    r"|(?<![\w.:])(?<!-\d\d[ T])(\d{1,2}):(\d{2}):(\d{2}(?:\.\d+)?)(?![\w.:])"
)
# A bare count said or printed must be at least this to be matched (a "3" is any line's).
_LEAST_COUNT = 100.0
# How far a rough mention may be from the figure ("nearly eight minutes" for 7:42 is 4% off).
_CLOSE = 0.10
# A mention that matches more of an output's lines than this singles out none of them.
_AT_MOST = 2
# A text is read this far for what it says (as values.named_terms reads it), and an output's
# first _SCAN lines: a Bash output Claude Code keeps is a few hundred.
_TEXT_LIMIT = 4_000
_SCAN = 4_000


class Quantity(NamedTuple):
    kind: str  # time, size, share, or "" for a bare count
    value: float  # in the kind's base unit (seconds, bytes, percent)
    side: int = 0  # 1: the figure is above it ("over"), -1: below ("nearly"), 0: either


def _number(text: str) -> float:
    word = text.lower()
    return _WORDS[word] if word in _WORDS else float(text.replace(",", ""))


def _quantity(number: float, unit: str | None, side: int = 0) -> Quantity | None:
    if unit:
        kind, scale = _UNITS[unit.lower()]
        return Quantity(kind, number * scale, side)
    return Quantity("", number, side) if number >= _LEAST_COUNT else None


def _side(hedge: str) -> int:
    hedge = " ".join(hedge.lower().split())
    return 1 if hedge in _ABOVE else -1 if hedge in _BELOW else 0


def said_quantities(texts: Iterable[str]) -> frozenset[Quantity]:
    """The quantities a conversation gives roughly, with a unit or a scale, or a count of 100
    or more."""
    found: set[Quantity] = set()
    for text in texts:
        for match in _SAID.finditer(text[:_TEXT_LIMIT]):
            hedge, number, half, scale, unit = match.groups()
            if number.lower() in _WORDS and not (scale or unit):
                continue  # "one of them", "two pods": words, not a figure
            value = _number(number) + (0.5 if half else 0.0)
            value *= _SCALES[scale.lower()] if scale else 1.0
            quantity = _quantity(value, unit, _side(hedge))
            if quantity is not None and quantity.value > 0:
                found.add(quantity)
    return frozenset(found)


def _printed(match: re.Match[str]) -> Quantity | None:
    number, unit, hours, minutes, seconds = match.groups()
    if number is not None:
        return _quantity(float(number.replace(",", "")), unit)
    return Quantity("time", int(hours) * 3_600 + int(minutes) * 60 + float(seconds))


def roughly_named(lines: list[str], said: frozenset[Quantity]) -> dict[str, str]:
    """line -> the printed figure in it that a quantity the conversation states is close to,
    of the quantities that single out at most two of the output's lines."""
    if not said:
        return {}
    by_kind: dict[str, list[Quantity]] = {}
    for quantity in sorted(said, key=lambda q: (q.value, q.side)):
        by_kind.setdefault(quantity.kind, []).append(quantity)
    values_of = {kind: [q.value for q in found] for kind, found in by_kind.items()}
    # One pass over the output's first _SCAN lines (a line at a time costs a call a line).
    lines = lines[:_SCAN]
    text = "\n".join(lines)
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    hits: dict[Quantity, dict[str, str]] = {}
    for match in _PRINTED.finditer(text):
        printed = _printed(match)
        values = values_of.get(printed.kind) if printed is not None else None
        if not values or printed is None:
            continue
        # |printed - said| <= _CLOSE * said  <=>  said in [printed/(1+c), printed/(1-c)]
        low = bisect_left(values, printed.value / (1 + _CLOSE))
        high = bisect_right(values, printed.value / (1 - _CLOSE))
        if low == high:
            continue
        line = lines[bisect_right(starts, match.start()) - 1]
        for quantity in by_kind[printed.kind][low:high]:
            if quantity.side * (printed.value - quantity.value) < 0:
                continue  # on the other side of it than the hedge said
            where = hits.setdefault(quantity, {})
            if len(where) <= _AT_MOST:  # past it, the quantity singles out nothing
                where.setdefault(line, match.group(0))
    out: dict[str, str] = {}
    for where in hits.values():
        if len(where) <= _AT_MOST:
            for line, figure in where.items():
                out.setdefault(line, figure)
    return out
