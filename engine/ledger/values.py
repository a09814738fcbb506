"""Concrete values in a line: versions, dates, commit ids, sizes and times with their unit, ports,
codes, and settings (a name with a value that has a digit in it). What a continuing agent cannot
guess and a paraphrase loses first."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from engine.hex_ids import HASH, HEX_ID

_VALUE = re.compile(
    r"(?<![\w.])v?\d+\.\d+\.\d+(?:[-+]\w+(?:[.+\-]\w+)*)?(?!\w|\.\w)"  # 7.2.4, v1.4.0-rc.1
    r"|\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?Z?)?\b"  # dates
    rf"|{HEX_ID}"  # commit ids, digests
    r"|\b(?=[0-9A-F]*\d)(?=[0-9A-F]*[A-F])[0-9A-F]{8,40}\b"  # ids, addresses, LSNs: 9B22D0C8
    r"|(?<![\w.])\d+(?:\.\d+)?\s?(?:ms|s|min|h|kB|KB|MB|GB|KiB|MiB|GiB|%|rps|req/s)(?![\w])"
    # money: $4.2k, €1,870, $312; not a query's placeholder ($1, $12)
    r"|[$€£](?:\d{1,3}(?:,\d{3})+|\d{3,}|\d+(?=\.\d|[kKMB]\b))(?:\.\d+)?[kKMB]?\b"
    r"|(?<![\w.$€£])\d+(?:\.\d+)?(?:[kKMB]|x)(?!\w|\.\w)"  # 10k, 1.2M events; 3x, 2.5x
    r"|\b[A-Z][A-Z0-9]*-\d+\b|\b[A-Z]{2,}\d{2,}\b"  # tickets, codes: PAY-412, TS2322
    r"|(?<=port )\d{2,5}\b|(?<=[a-z]:)\d{2,5}\b"  # ports: port 6380, localhost:5432
)
_SETTING = re.compile(
    r"^\s*[\"']?([A-Za-z_][\w.\-]{1,40})[\"']?\s*(?:[:=]|->)\s*[\"']?"
    r"(?=[^\s\"',;{}\[\]()]*\d)([^\s\"',;{}\[\]()]+)[\"']?,?\s*(?:#.*)?$"  # a literal, not a call
)
# A file's path as a sentence names it: with a folder, or a name with a known extension.
PATH = re.compile(
    r"(?<![\w/.@:-])(?:\.{0,2}/)?(?:[\w.@-]+/)+[\w.@-]*\w"
    r"|(?<![\w/.-])[\w-]+\.(?:py|pyi|ts|tsx|js|jsx|mjs|md|rst|toml|json|ya?ml|sql|txt|cfg|ini|rs|go"
    r"|java|kt|rb|php|c|h|cc|cpp|hpp|cs|sh|lock|conf|xml|html|css|scss|proto|tf|gradle)\b"
    r"|\b(?:Dockerfile|Makefile|Procfile|Gemfile|Jenkinsfile)\b"
)
# A number with its unit written apart, as people say it ("took 22 minutes", "6 hours").
WITH_UNIT = re.compile(
    r"(?<![\w.])\d+(?:[.,]\d+)? (?:ms|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|"
    r"weeks?|months?|[KMGT]i?B|bytes?|rows|rps|connections|cores|replicas|workers)(?![\w/])"
)
# A time of day, as a conversation says it in passing ("Sunday 03:00", "at 16:30").
_SPOKEN = re.compile(r"(?<![\w:.])\d{1,2}:\d{2}(?![\w:])")
# A figure as a conversation gives it with what it counts ("57 tickets", "about 2,100 users"), a
# day ("December 15", "June 1") or an hour ("4pm", "10:30 am").
_MONTH = (
    r"Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?"
)
_SAID = re.compile(
    r"(?<![\w.,])\d{1,3}(?:,\d{3})*(?:\.\d+)? [a-z]{2,}s\b"
    rf"|\b(?:{_MONTH}) \d{{1,2}}\b(?![:.,]\d)"
    r"|(?<![\w:.])\d{1,2}(?::\d{2})? ?(?:[ap]m\b|[ap]\.m\.)"
    r"|(?<![\w.,])\d+(?:\.\d+)? percent\b"
)
# A bare number: its thousands grouped ("3,400" whole, not its "400"), of three digits or more,
# or with a decimal point; a sentence's closing period ends it ("uses maxBatchSize: 250.").
_NUMBER = re.compile(
    r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w,])"
    r"|(?<![\w.])\d{3,}(?:\.\d+)?(?!\w|\.\w)|(?<![\w.])\d+\.\d+(?!\w|\.\w)"
)


# A place in a source file, not a value: tests/test_api.py:183, (Foo.java:42), app.py:12: ...
# (a path with a slash, or a file name followed by its column or a closing parenthesis). Read
# as blank, so a grep hit (http.py:12:TIMEOUT = 5) still reads as the line it found.
_LINE_REFERENCE = re.compile(
    r"(?<![\w:/.\-])(?:\.{0,2}/)?(?:[\w.\-]+/)+[\w.\-]*\.[A-Za-z]\w{0,4}:\d+(?::\d+)?:?"
    r"|\b[\w\-]+\.[A-Za-z]\w{0,4}:\d+(?::\d+)?(?:(?=\))|:)"
)


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


def _readable(line: str) -> str:
    return _LINE_REFERENCE.sub(_blank, line[:LINE_LIMIT])


# A longer line (minified JSON, a base64 blob) is read up to here: values sit early in a line.
LINE_LIMIT = 400


def values_in(line: str, *, numbers: bool = True, spoken: bool = False) -> list[str]:
    """The values a line states, most telling kinds first; `numbers`: bare numbers too (of three
    digits or more, or with a decimal point), for prose where "hit rate 0.881" has no unit;
    `spoken`: a conversation's sentence, where units are written out and times of day said."""
    line = _readable(line)
    found: list[str] = []
    setting = _SETTING.match(line)
    if setting:
        found.append(setting.group(2))
    found.extend(m.group(0) for m in _VALUE.finditer(line))
    if spoken:
        found.extend(m.group(0) for m in WITH_UNIT.finditer(line))
        found.extend(m.group(0) for m in _SPOKEN.finditer(line))
        found.extend(m.group(0) for m in _SAID.finditer(line))
    if numbers and not found:
        found.extend(m.group(0) for m in _NUMBER.finditer(line))
    return list(dict.fromkeys(v.strip() for v in found if v.strip()))


# A line's shape among its output's lines: commit ids one mark, each run of words (with the
# _ . - inside names) one letter, each number one digit. Forty settings `retries_3: 520` share
# one shape; the one `engine_version = "15.4"` among them, or the one commit of a log whose
# subject carries a version, is shaped like no other line.
_SHAPE_WORDS = re.compile(r"[A-Za-z]+(?:[\s_.\-]*[A-Za-z]+)*")
_SHAPE_DIGITS = re.compile(r"\d+")
_HEX_RUN = re.compile(r"[0-9a-f]{7}")  # what any HASH match holds
# An output shorter than this is read whole: there is no crowd for a line to stand out from.
CROWD = 8


def value_shape(line: str) -> str:
    shaped = line[:LINE_LIMIT]
    if _HEX_RUN.search(shaped):  # HASH's lookaheads cost at every position: only where it can
        shaped = HASH.sub("#", shaped)
    shaped = _SHAPE_WORDS.sub("a", shaped)
    return "".join(_SHAPE_DIGITS.sub("0", shaped).split())  # spaces dropped (split: one pass)


# A table's row: this many whitespace-separated fields or more (a log line's message has its own
# count of words; a "key: value" line is no row).
_ROW_FIELDS = 4
# A row's first fields tell its table (a wide row's tail is free text, and reading it costs).
_ROW_KEY_FIELDS = 12
_LETTER = re.compile(r"[^\W\d_]")
_DIGIT = re.compile(r"\d")


def _field_class(field: str) -> str:
    """Words "a", ids mixing letters and digits "x", anything else (figures, and punctuation
    such as a table's | or a tree's └──) "0"."""
    if _LETTER.search(field) is None:
        return "0"
    return "x" if _DIGIT.search(field) else "a"


def table_rows(lines: list[str]) -> set[str]:
    """The rows of a table (CROWD or more lines whose fields are, column by column, words,
    figures or ids mixing both): kubectl's pods, ps, docker, a query's result. Their ids shape
    each row apart (value_shape reads "coredns-2c3579f74" and "ledger-7f9c" as other shapes), so
    a hundred pods would each stand out of an output that is one table."""
    if len(lines) < CROWD:
        return set()
    keys: dict[str, tuple[str, ...] | None] = {}
    counts: dict[tuple[str, ...], int] = {}
    for line in lines[:_OUTLYING_SCAN]:
        fields = line[:LINE_LIMIT].split(maxsplit=_ROW_KEY_FIELDS)[:_ROW_KEY_FIELDS]
        key = tuple(map(_field_class, fields)) if len(fields) >= _ROW_FIELDS else None
        keys[line] = key
        if key is not None:
            counts[key] = counts.get(key, 0) + 1
    return {line for line, key in keys.items() if key is not None and counts[key] >= CROWD}


def standing_out(lines: list[str], shapes: list[str] | None = None) -> list[bool]:
    """Per line: does it stand out of its output? Every line of a short output does; of a long
    one, the lines whose shape (value_shape) few others share: at most two, or an eighth of
    the output (three planted settings of one shape among thirty of another). `shapes`: each
    line's value_shape, when the caller has made them (outlying reads the same)."""
    if len(lines) < CROWD:
        return [True] * len(lines)
    if shapes is None:
        shapes = [value_shape(line) for line in lines]
    counts: dict[str, int] = {}
    for found in shapes:
        counts[found] = counts.get(found, 0) + 1
    few = max(2, len(lines) // 8)
    return [counts[found] <= few for found in shapes]


# A figure as a column of like-shaped lines holds it: a whole token, its unit attached ("143.7s",
# "412.61MB", "1.53%"), not a piece of a date, a time, an address or a name.
_FIGURE = re.compile(r"(?<![\w.:\-])(\d+(?:\.\d+)?)(?:%|ms|s|[KMGT]i?B)?(?![\w.:\-])")
# How far a column's largest figure must lead the next largest, as a share of the spread of the
# others: a count or id that grows line by line leads by a step, a stall among fast requests by
# many times their spread.
_OUTLYING = 0.5
# An output's first lines read for a figure far ahead (as quantities.roughly_named reads them).
_OUTLYING_SCAN = 4_000


def outlying(lines: list[str], shapes: list[str] | None = None) -> dict[str, str]:
    """line -> its figure, for the lines holding the largest figure of a column of their crowd
    (CROWD or more lines of one value_shape, or rows of one table) far ahead of the rest: the
    slowest request of a timing loop, the one CPU's failure counter, the crate that takes
    minutes to compile, the partition far behind. Of an output's first _OUTLYING_SCAN lines.
    `shapes` as for standing_out."""
    lines = lines[:_OUTLYING_SCAN]
    if shapes is None:
        shapes = [value_shape(line) for line in lines]
    groups: dict[object, list[str]] = {}
    for line, found in zip(lines, shapes, strict=False):
        groups.setdefault(found, []).append(line)
    # A table's rows shaped apart by their ids' letters and digits ("consumer-7-b2897d48-a4f4"),
    # or one row with a field left blank, still share their first field, their count of fields
    # and their figures' units, column by column (of the lines no crowd above holds).
    tables: dict[tuple[str, int], list[str]] = {}
    for line, found in zip(lines, shapes, strict=False):
        if len(groups[found]) >= CROWD:
            continue
        fields = line.split(maxsplit=1)
        key = (fields[0] if fields else "", line.count(" ") + 1)
        tables.setdefault(key, []).append(line)
    for key, table in tables.items():
        if len(table) < CROWD:
            continue
        for line in table:
            figures = list(_FIGURE.finditer(line[:LINE_LIMIT]))
            units = tuple(m.group(0)[len(m.group(1)) :] for m in figures)
            groups.setdefault((*key, len(line.split()), units), []).append(line)
    out: dict[str, str] = {}
    for crowd in groups.values():
        if len(crowd) < CROWD:
            continue
        rows = [_FIGURE.findall(line[:LINE_LIMIT]) for line in crowd]
        width = len(rows[0])
        if any(len(row) != width for row in rows):
            continue
        for column in range(width):
            figures = [float(row[column]) for row in rows]
            ordered = sorted(figures)
            low, second, top = ordered[0], ordered[-2], ordered[-1]
            if second > low and top - second >= _OUTLYING * (second - low):
                at = figures.index(top)
                out.setdefault(crowd[at], rows[at][column])
    return out


# A word of a line: five letters or more, a qualified name whole ("TZInfo::AmbiguousTime"); not
# a piece of an id ("jid=4be0c1d2a9f8"), nor an id of hex letters alone ("tid=bfdbd").
_WORD = re.compile(r"(?<![\w:])(?=[\w:]*[g-zG-Z])[A-Za-z][A-Za-z_:]{3,}[A-Za-z](?!\w)")
# A word said more often than this in an output is its crowd's, not one line's own.
_OWN_AT_MOST = 2
_OWN_SCAN = 4_000


def own_words(lines: list[str], of: list[str]) -> dict[str, str]:
    """line of `of` -> its first word that the output's lines use at most twice: what sets a
    log's one warning apart from a thousand request lines ("TZInfo::AmbiguousTime" after a job
    id), however far into the line it is. Of an output's first _OWN_SCAN lines."""
    uses = Counter(_WORD.findall("\n".join(line[:LINE_LIMIT] for line in lines[:_OWN_SCAN])))
    out: dict[str, str] = {}
    for line in of:
        own = next((w for w in _WORD.findall(line[:LINE_LIMIT]) if uses[w] <= _OWN_AT_MOST), None)
        if own is not None:
            out.setdefault(line, own)
    return out


def setting_name(line: str) -> str | None:
    setting = _SETTING.match(_readable(line))
    return setting.group(1) if setting else None


def lone_settings(lines: list[str]) -> set[str]:
    """The lines of an output that set a name no other line sets, where few do: a JSON dump's
    `"sqlQueries": 1187` beside a hundred resolvers' `"duration"`s is a setting of the whole, not
    a field of its records (line_shape keeps an unquoted name; a quoted one it reads as words)."""
    names = [setting_name(line) for line in lines[:_OWN_SCAN]]
    counts = Counter(name for name in names if name)
    lone = {line for line, name in zip(lines, names, strict=False) if name and counts[name] == 1}
    # Where most names are set once (a config file), none stands out by it.
    return lone if len(lone) <= max(2, counts.total() // 8) else set()


def window(line: str, value: str, limit: int) -> str:
    """The line clipped to `limit` characters, the value kept inside."""
    if len(line) <= limit:
        return line
    at = max(0, line.find(value))
    start = max(0, min(at - limit // 3, len(line) - limit))
    out = line[start : start + limit - 2]
    return ("…" if start else "") + out + "…"


# A term distinctive enough to name a line: an id or number of four digits or more, a
# snake_case, camelCase or hyphenated name, a path, a decimal or a version ("88120",
# "debezium_analytics", "readLoop", "media-uploads", "renditions/tmp/", "/etc/nginx/nginx.conf",
# "143.7", "1.0.109"); a number is read alone too ("sku%3A88120" names 88120, "v1.0.109" names
# 1.0.109). A path names a line that holds the same path, not one below it.
_TERM = re.compile(
    r"\b(?=\w*(?:\d|_|[a-z][A-Z]))\w{4,}\b"
    r"|\b[a-z][a-z0-9]+(?:-[a-z0-9]+)+\b"
    r"|(?<![\w/.-])/{0,2}[\w.-]+/[\w.-]+(?:/[\w.-]*)*"  # starts where a token does: linear
    r"|(?<![\d.])\d+\.\d+(?:\.\d+)*(?![\d.])"
)
# Shorter than this, a term is a word or a fraction, not a name: "I/O", "and/or", "3/4", "1.0".
_LEAST_TERM = 4
LEAST_PATH = 7
_DIGIT_RUN = re.compile(r"\d{4,}")
_TERM_TEXT_LIMIT = 4_000
# A term in more of an output's lines than this names none of them (a year in every timestamp).
_NAMED_AT_MOST = 2


def _terms(text: str) -> list[str]:
    """The text's terms in the order it says them, then its runs of four digits or more (an
    order, not a set: which term a line is read around must not follow the hash seed)."""
    text = text[:_TERM_TEXT_LIMIT]
    found = [
        term
        for term in _TERM.findall(text)
        if len(term) >= (LEAST_PATH if "/" in term else _LEAST_TERM)
    ]
    return list(dict.fromkeys([*found, *_DIGIT_RUN.findall(text)]))


def named_terms(texts: Iterable[str]) -> frozenset[str]:
    """The distinctive terms a conversation's own messages use: an output's line that names
    one is a line the work is about, however like its neighbours it is shaped."""
    terms: set[str] = set()
    for text in texts:
        terms.update(_terms(text))
    return frozenset(terms)


def named_lines(lines: list[str], named: frozenset[str]) -> dict[str, str]:
    """line -> the conversation's term it names, of the terms that single out at most two of
    the output's lines."""
    if not named:
        return {}
    hits: dict[str, list[str]] = {}
    for line in lines:
        for term in _terms(line):
            if term in named:
                hits.setdefault(term, []).append(line)
    out: dict[str, str] = {}
    for term, where in hits.items():
        if len(set(where)) <= _NAMED_AT_MOST:
            for line in where:
                # Of two terms a line names, a figure or an id says which fact it is: the
                # crate's 143.7 s compile, not its name, which the crate's other lines share.
                if line not in out or (_DIGIT.search(term) and not _DIGIT.search(out[line])):
                    out[line] = term
    return out


def named_file(text: str) -> str | None:
    """The first file a text names; a pair as short as "and/or" or "TCP/IP" is words (a longer
    one may name a thing: text/markdown, Europe/Berlin)."""
    for match in PATH.finditer(text):
        path = match.group(0)
        if "/" not in path or len(path) >= LEAST_PATH:
            return path
    return None
