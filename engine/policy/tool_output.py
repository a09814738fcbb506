"""Reading a tool's output line by line: which lines are errors, which carry values, which are
instances of a template repeated through it; and the masked placeholder's own shape. Pure text
rules, shared by the `mask` strategy (engine.policy.strategies keeps an output's key line in its
placeholder) and the offline summarizer (engine.summarizers.extractive_pool reads outputs and
placeholders back)."""

from __future__ import annotations

import re
from collections import Counter

import msgspec

from engine.hex_ids import HASH

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


# Matched on the lower-cased line (twice as fast as (?i) on long outputs).
_ERROR = re.compile(
    r"\b(?:error|errors|exception|traceback|failed|failure|failures|fatal|panic|denied|"
    r"refused|timed out|cannot|can't|unable|not found|no such|invalid|segmentation|abort\w*|"
    r"conflict|unreachable|killed|oom|fail|panicked)\b"
    r"|_(?:error|exception|failure)\b"  # db_error
    r"|^http/[\d.]+ [45]\d\d\b"  # a failed request's status line: HTTP/1.1 503 Service Unavailable
)

_NO_ERROR = re.compile(
    r"(?i)\b(?:0|no|zero) (?:errors?|failures?|failed)\b|\b(?:errors?|failures?|failed):? 0\b"
)

NOTICE = re.compile(r"(?i)\b(?:warn\w*|deprecat\w*|skipp\w*|ignor\w*|dropp\w*|retr(?:y|ied)\w*)\b")

# A traceback's banner says nothing; a commit of a log ("6c66b11 Improve error message") is a
# subject someone wrote, not an error the command hit.
_NOT_ERROR_TEXT = re.compile(
    r"^Traceback \(most recent call last\):?$"
    r"|^(?i:errors?|failures?|failed):?$"  # a report's heading ("Failures:"), its lines follow
    rf"|^(?:[*|/\\ ]+)?(?:commit )?{HASH.pattern} "
)

KEY_VALUE = re.compile(r"^[\w.\-\[\] \"']{1,48}?\s*(?:[:=]|->|=>)\s*\S")

_RULE = re.compile(r"([=\-*#~_.+])\1{3,}")  # ===== and ----- rules: decoration, not content


def clean(text: str) -> str:
    return " ".join(_RULE.sub(" ", CONTROL.sub(" ", text)).split())


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


_WORDS = re.compile(r"[A-Za-z_]+")

_DIGITS = re.compile(r"\d+")

SPACES = re.compile(r"\s+")

_SETTING = re.compile(r"^\s*([A-Za-z_][\w.\-]{0,40})\s*[:=]\s*[\"'\d]")


def line_shape(line: str) -> str:
    """A line's template: words and numbers blanked, so repeated log/test/listing lines match.
    A setting keeps its name (port = 5057 and workers = 4 are two facts, not one template)."""
    setting = _SETTING.match(line)
    name = setting.group(1) if setting else ""
    return name + "".join(_DIGITS.sub("0", _WORDS.sub("a", line)).split())


# An error's class name, read in its own case: ComparisonFailure, OSError, KeyError; not a word
# that merely ends in "error" (the thiserror crate, DNS's NOERROR answer).
_ERROR_CLASS = r"\w(?:Error|Exception|Failure)\b"
_ERROR_CLASS_NAME = re.compile(_ERROR_CLASS)


def is_error_line(line: str) -> bool:
    return (
        bool(_ERROR.search(line.lower()) or _ERROR_CLASS_NAME.search(line))
        and not _NO_ERROR.search(line)
        and not _NOT_ERROR_TEXT.match(line)
    )


def salient_lines(lines: list[str]) -> list[str]:
    """The lines of an output worth reading: all of a short one; of a long one, those that are
    not instances of a template repeated through it (test progress, listings, log lines)."""
    if len(lines) <= 4:
        return lines
    line_shapes = [line_shape(line) for line in lines]
    counts = Counter(line_shapes)
    return [line for line, shape in zip(lines, line_shapes, strict=True) if counts[shape] <= 2]


def value_weight(line: str) -> int:
    weight = 2 if NOTICE.search(line) else 0
    if KEY_VALUE.match(line):
        weight += 2
    if re.search(r"\d", line):
        weight += 2
    if HASH.search(line) or re.search(r"\d+\.\d+", line):
        weight += 1
    return weight


_CODE = re.compile(
    # "#include" is code; "#7 ERROR: ..." is a build step's output (docker's BuildKit).
    r"^(?:\d+[:\s]+)?(?:raise|def|class|except|assert|if|elif|return|import|from|#(?!\d)|//|\*)\b"
    r"|^[A-Z]+$"  # FAILURES, ERRORS: a report's headings
)


def is_code(line: str) -> bool:
    """Source code shown in an output (a traceback's "def test_x():", "raise X"), or a
    report's heading: not an error line however it reads."""
    return bool(_CODE.match(line))


_ERROR_MESSAGE = re.compile(r"(?:Error|Exception|FAILED|error)\b:?\s+\S")

_ERROR_NAME = re.compile(_ERROR_CLASS + r"|\bFAILED\b|^E\s|(?i:^error\b)")


def error_lines(lines: list[str], most: int = 2) -> list[str]:
    """An output's error lines, at most `most`: those naming the error and saying what went
    wrong first (FAILED x - AssertionError: 2 != 3, before a bare "x.py:54: AssertionError"),
    never code that merely mentions one."""
    found = [line for line in lines if is_error_line(line) and not _CODE.match(line)]
    if len(found) <= most:
        return found

    def rank(i: int) -> tuple[int, int]:
        line = found[i]
        return (-(bool(_ERROR_NAME.search(line)) + bool(_ERROR_MESSAGE.search(line))), i)

    return [found[i] for i in sorted(sorted(range(len(found)), key=rank)[:most])]


def digest_lines(salient: list[str], *, long: bool, limit: int = 110) -> list[int]:
    """Which salient lines stand for an output: the weightiest (values, numbers, versions), then
    the last (where tools print their totals), up to three and about `limit` characters."""
    last = len(salient) - 1 if long else -1
    weights = [value_weight(line) + 2 * (i == last) for i, line in enumerate(salient)]
    ranked = sorted(range(len(salient)), key=lambda i: (-weights[i], i))
    picked: list[int] = []
    size = 0
    for i in ranked[:3]:
        if picked and (size + len(salient[i]) > limit or weights[i] < 3):
            continue
        picked.append(i)
        size += len(salient[i]) + 3
    return sorted(picked)


# Exit status as Codex and Claude Code print it before the output.
_EXIT = re.compile(r"^(?:Exit code:? |Process exited with code )(-?\d{1,4})$")
_HEADER = re.compile(r"^(?:Chunk ID|Wall time|Original token count|Total output lines): ")


def shell_output(content: str) -> tuple[str, int | None]:
    """A shell result's output and exit status: Codex's JSON ({"output", "metadata":
    {"exit_code"}}), its "Exit code: N ... Output:" header, Claude Code's "Exit code N"."""
    stripped = content.lstrip()
    if stripped.startswith("{") and '"output"' in stripped[:200]:
        try:
            decoded = msgspec.json.decode(stripped)
        except msgspec.DecodeError:
            decoded = None
        if isinstance(decoded, dict) and isinstance(decoded.get("output"), str):
            meta = decoded.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
            return decoded["output"], exit_code
    lines = content.split("\n")
    exit_code = None
    for index, line in enumerate(lines[:6]):
        match = _EXIT.match(line.strip())
        if match:
            exit_code = int(match.group(1))
        elif line.strip() == "Output:":
            return "\n".join(lines[index + 1 :]), exit_code
        elif not _HEADER.match(line) and index > 0 and exit_code is None:
            break
    if exit_code is not None and _EXIT.match(lines[0].strip()):
        return "\n".join(lines[1:]), exit_code
    return content, exit_code


# engine.policy.strategies writes a masked tool result as this prefix, its first line and its
# key lines; read back here so a fold of masked copies still sees what they kept.
MASKED_PREFIX = "[tool result masked: "

_MASKED_LINES = re.compile(r"; first line: (.*?)(?:; key lines: (.*))?\]$", re.DOTALL)


def masked_lines(content: str) -> list[str] | None:
    """The lines a masked placeholder kept (its first and key lines); None if not one."""
    if not content.startswith(MASKED_PREFIX):
        return None
    found = _MASKED_LINES.search(content)
    if found is None:
        return []
    first, keys = found.group(1), found.group(2)
    return [line for line in [first, *(keys.split(" | ") if keys else [])] if line]


def key_lines(content: str, *, most: int = 1, limit: int = 80) -> list[str]:
    """The lines of a tool output a reader would miss most, beyond its first: its error lines,
    else the lines that carry values and are not instances of a template repeated through it
    (a log's one WARNING and its closing total among a thousand INFO lines). What a masked
    result keeps (engine.policy.strategies.placeholder), so a later summary can still say it."""
    lines = [clean(line) for line in content.splitlines()]
    lines = [line for line in lines if line][1:]
    errors = error_lines(lines, most)
    if errors:
        return [clip(line, limit) for line in errors]
    salient = salient_lines(lines)
    picked = digest_lines(salient, long=len(lines) > 4, limit=2 * limit)[:most]
    return [clip(salient[i], limit) for i in picked]


# Prose cut into sentences (a reply, a request): what summaries and the work ledger choose from.
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=;)\s+(?=[^a-z])|\n+")
_ABBREVIATION = re.compile(r"(?i)(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|no)\.)$")


def sentences(text: str) -> list[str]:
    out: list[str] = []
    glue = False
    for part in _SENTENCE.split(text):
        part = clean(part)
        if part and glue and out:
            out[-1] = f"{out[-1]} {part}"
        elif part:
            out.append(part)
        glue = bool(part) and bool(_ABBREVIATION.search(part))  # "e.g. x" is one sentence
    return out


# A sentence's clauses, cut where its punctuation pauses: a sentence that gives several figures
# in passing ("about 9,200 updates a minute, the feed lands at 02:30, and it took 41 minutes")
# says each in its own clause, with the words that tell what it counts.
_CLAUSE = re.compile(r"(?<=[,;])\s+|\s+[\u2013\u2014-]\s+")


def clauses(sentence: str) -> list[str]:
    return [part for part in (p.strip(" ,;:") for p in _CLAUSE.split(sentence)) if part]
