"""The ledger of a span, read deterministically from its messages: the files its tool calls read,
wrote and edited, the commands they ran and what came of them, the error lines their outputs
showed, and the values its messages and outputs state. An earlier summary in the span brings its
own ledger, merged in (engine.ledger.merge).

Tool calls as the importers store them: Claude Code's Read/Write/Edit/MultiEdit/NotebookEdit
({"file_path": ...}) and Bash ({"command": "..."}); Codex's shell/local_shell
({"command": ["bash", "-lc", "..."]}), exec_command ({"cmd": "..."}) and apply_patch (the patch
text: "*** Update File: path"); any other tool by its name and its path or command argument.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import msgspec

from engine.ledger.merge import merge
from engine.ledger.model import (
    EDITED,
    ERROR,
    OUTCOME,
    RAN,
    READ,
    REPEAT_RANK,
    TOP_VALUE_RANK,
    VALUE,
    WROTE,
    Entry,
    make_entry,
    shape,
)
from engine.ledger.quantities import Quantity, roughly_named, said_quantities
from engine.ledger.render import split
from engine.ledger.values import (
    CROWD,
    lone_settings,
    named_file,
    named_lines,
    named_terms,
    outlying,
    own_words,
    standing_out,
    table_rows,
    value_shape,
    values_in,
    window,
)
from engine.messages import Message, TextContentBlock, ToolResultContentBlock, ToolUseContentBlock
from engine.policy.splice import parse_summary_text
from engine.policy.tool_calls import command_of, file_action, path_of
from engine.policy.tool_output import (
    clauses,
    clean,
    clip,
    error_lines,
    is_code,
    masked_lines,
    salient_lines,
    sentences,
    shell_output,
)
from engine.redaction import secrets_read_once

_COMMAND_LIMIT = 110
_ERROR_LIMIT = 160
_VALUE_LIMIT = 90
_VALUES_PER_OUTPUT = 6
_VALUES_PER_TEXT = 3
# Of a text's figures said in passing (beside another in one sentence), the most kept, and the
# least they rank: a summary's line for the sentence keeps its first figure at most (a model
# compresses it, the offline summarizer clips it), and no tool can print the others again.
# Facts kept on the tuning sets were the same at 56 and at 68 (the most a value ranks).
_PASSING_PER_TEXT = 3
_PASSING_RANK = 56
_FILES_PER_TEXT = 3
# An output's first few distinct error lines rank as errors; the next (a compiler's eighth
# complaint) rank below a failed command, kept while room lasts; the rest of a long log's
# distinct lines (the twentieth relation a lock timed out on) rank with a bare figure, below a
# version, a date, an id or a setting, filling the room those leave (a lossy model's short prose
# leaves most of it). Tuning sets at 2,000 tokens: of set H's 67 error lines the two lossy
# models kept 49 and 50 at rank 40, 53 and 61 at 47, 56 and 63 at 50; of the 212 facts of H, J
# and K they kept 4 fewer at 47, 6 and 7 fewer at 50; the offline summary the same at each.
_ERRORS_PER_OUTPUT = 3
_MORE_ERRORS_PER_OUTPUT = 10
_ALL_ERRORS_PER_OUTPUT = 40
_MORE_ERROR_RANK = 76
_LAST_ERROR_RANK = 47
_QUOTED = re.compile(r"\"[^\"\s]*\"|'[^'\s]*'|`[^`\s]*`")  # a name: one word quoted
_WITH_DIGIT = re.compile(r"\S*\d\S*")
_DETAILS_PER_OUTPUT = 2
# A stack frame: JavaScript's and Java's "at f (file:1:2)", Python's 'File "x.py", line 3'.
_FRAME = re.compile(r"^(?:at \S|File \")")
_DETAIL_SCAN = 4_000  # lines of an output read for details
# A value read from one of a long output's crowd of like-shaped lines (values.standing_out)
# ranks this much below its kind: the line that stands out of the crowd goes first.
CROWD_PENALTY = 20
# A crowd's line whose figure leads its column far ahead (values.outlying) ranks just below a
# line the conversation names.
LEADING_RANK = TOP_VALUE_RANK - 1
_SHORT_OUTPUT = 60
_PROGRESS = re.compile(r"\[\s*\d{1,3}%\]$")  # a runner's progress: tests/test_api.py .. [ 30%]
_NAMED_LIMIT = 160  # a named line is read wider than a value's: what it says of the name

_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.M)
_PATCH_KIND = {"Add": WROTE, "Update": EDITED, "Delete": EDITED}
# A runner's count: "3 failed", "12 passed"; not a key's value beside the next key in a
# key=value line ("early_drop=0 error=9").
_COUNT = re.compile(
    r"(?<!=)\b(\d+) (passed|failed|failures?|errors?|skipped|xfailed|xpassed|deselected|total)"
    r"\b(?!=)"
)


class Named(NamedTuple):
    """What the conversation itself says: its distinctive terms (values.named_terms) and the
    figures it gives roughly (quantities.said_quantities)."""

    terms: frozenset[str] = frozenset()
    quantities: frozenset[Quantity] = frozenset()


_NOTHING_NAMED = Named()


# The last span read and its entries: a compaction asks twice of one span (its reserve, then
# its section), and a span's messages are frozen, so the same tuple gives the same entries.
_last: tuple[tuple[Message, ...], list[Entry]] | None = None


def extract(span: tuple[Message, ...]) -> list[Entry]:
    """Every ledger entry of the span, one per identity, the latest instance of each."""
    global _last
    last = _last  # one read: another thread may replace it
    if last is not None and last[0] is span:
        return list(last[1])
    with secrets_read_once():  # each entry is redacted (make_entry): the secrets read once
        entries = _extract(span)
    _last = (span, entries)
    return list(entries)


def _extract(span: tuple[Message, ...]) -> list[Entry]:
    results = {
        block.tool_use_id: block
        for message in span
        for block in message.content
        if isinstance(block, ToolResultContentBlock)
    }
    found: list[Entry] = []
    said_in_words: set[str] = set()  # the values' lines the conversation's own sentences give
    named = _named(span)
    for position, message in enumerate(span):
        for block in message.content:
            if isinstance(block, TextContentBlock):
                if parse_summary_text(block.text) is not None or message.synthetic:
                    earlier = parse_summary_text(block.text)
                    body = earlier.summary if earlier is not None else block.text
                    found = merge(found, split(body, order=position).entries)
                else:
                    stated, passing = _text_values(block.text, position)
                    said_in_words.update(e.text for e in (*stated, *passing))
                    if passing:  # (most texts give none: the keys are gathered for those only)
                        # A figure said in passing that an earlier line already holds ("the 1286
                        # groups" after a query's "(1286 rows)") keeps that line, which says more.
                        held = {e.key for e in found}
                        passing = [e for e in passing if e.key not in held]
                    found.extend([*stated, *passing])
            elif isinstance(block, ToolUseContentBlock):
                found.extend(_call(block, results.get(block.id), position, named))
    entries = merge([], found)
    # A value an error line or a command already carries is said there; not a sentence of the
    # conversation, whose words tell what the value is ("MSRV stays at 1.74, customers build
    # with Debian's rustc" beside a command pinning 1.74).
    said = " ".join(e.text.lower() for e in entries if e.kind in (ERROR, RAN))
    return [
        e
        for e in entries
        if e.kind != VALUE
        or e.text in said_in_words
        or not all(n.lower() in said for n in e.needles)
    ]


def _text_values(text: str, position: int) -> tuple[list[Entry], list[Entry]]:
    """A text's values: its sentences' most specific (one each), and the figures a sentence
    gives in passing beside its first."""
    entries: list[Entry] = []
    files: list[Entry] = []  # sentences naming a file and no value
    passing: list[Entry] = []  # figures a sentence's window left out, each in its own clause
    for sentence in sentences(text):
        found = values_in(sentence, spoken=True)
        if sentence.endswith("?"):
            continue
        if not found:
            # A file the work names ("Remaining: a regression note in CHANGELOG.md"): what a
            # lossy summary of the plan drops first, and no call may have touched it yet. Its
            # own quota: a plan naming three files leaves a text's figures their room.
            path = named_file(sentence)
            if path is not None:
                files.append(make_entry(VALUE, window(sentence, path, _VALUE_LIMIT), position))
            continue
        shown = window(sentence, found[0], _VALUE_LIMIT)
        entries.append(make_entry(VALUE, shown, position))
        # A sentence that gives several figures in passing ("about 9,200 a minute, the feed
        # lands at 02:30, and it took 41 minutes") says each in a clause, with the words that
        # tell what it counts; the window around its first figure cuts the others off.
        for part in clauses(sentence):
            said = values_in(part, spoken=True)
            if said and not all(value in shown for value in said):
                passing.append(make_entry(VALUE, window(part, said[0], _VALUE_LIMIT), position))
    ranked = sorted(entries, key=lambda e: -e.rank)[:_VALUES_PER_TEXT]
    passing = [msgspec.structs.replace(e, rank=max(e.rank, _PASSING_RANK)) for e in passing]
    ranked_passing = sorted(passing, key=lambda e: -e.rank)[:_PASSING_PER_TEXT]
    stated = [e for e in entries if e in ranked] + files[:_FILES_PER_TEXT]
    return stated, [e for e in passing if e in ranked_passing]


def _call(
    block: ToolUseContentBlock,
    result: ToolResultContentBlock | None,
    position: int,
    named: Named = _NOTHING_NAMED,
) -> list[Entry]:
    inputs = block.input
    failed = result is not None and result.is_error
    patch = _patch_text(block)
    if patch is not None:
        if failed:
            return _errors(_lines(result.content), failed, position, read=False)  # type: ignore[union-attr]
        return [
            make_entry(_PATCH_KIND.get(kind, EDITED) if kind else EDITED, path.strip(), position)
            for kind, path, moved in _PATCH_FILE.findall(patch)
            for path in [path or moved]
        ]
    command = command_of(inputs)
    path = path_of(inputs)
    if command is None and path is not None:
        # file_action answers in the ledger's kinds; a tool that names a file and no more reads it
        kind = file_action(block.name) or READ
        entries = [] if failed and kind != READ else [make_entry(kind, clean(path), position)]
        if result is not None and (kind == READ or failed):
            lines = _lines(result.content)
            entries += _errors(lines, failed, position, read=True)
            if kind == READ:
                entries += _values(lines, position, named)
        return entries
    if command is None:
        command = f"{block.name}"
    output, exit_code = shell_output(result.content) if result is not None else ("", None)
    lines = _lines(output)
    first_line = command.strip().split("\n", 1)[0]
    shown = clip(clean(first_line), _COMMAND_LIMIT)
    if first_line != command.strip() and not shown.endswith("…"):
        shown += " …"
    errors = _errors(lines, failed, position, read=False)
    errors += _details(output, errors, position)
    outcome = _outcome(lines, exit_code, result, bool(errors))
    return [
        make_entry(RAN, f"{shown}{OUTCOME}{outcome}", position),
        *errors,
        *_values(lines, position, named),
    ]


def _patch_text(block: ToolUseContentBlock) -> str | None:
    """The patch of an apply_patch call (Codex's custom tool, or the shell form whose argv is
    ["apply_patch", patch])."""
    inputs = block.input
    if block.name == "apply_patch":
        text = inputs.get("input") or inputs.get("patch")
        return text if isinstance(text, str) else ""
    argv = inputs.get("command")
    if isinstance(argv, list) and len(argv) >= 2 and argv[0] == "apply_patch":
        return str(argv[-1])
    return None


def _outcome(
    lines: list[str], exit_code: int | None, result: ToolResultContentBlock | None, errors: bool
) -> str:
    if result is None:
        return "no result"
    for line in reversed(lines[-12:]):
        counts = [f"{n} {word}" for n, word in _COUNT.findall(line)]
        if any(("passed" in c or "failed" in c or "error" in c) for c in counts):
            summary = ", ".join(dict.fromkeys(counts))
            return summary if not exit_code else f"{summary}, exit {exit_code}"
    if exit_code is not None:
        return f"exit {exit_code}"
    if result.is_error or errors:
        return "failed"
    one = lines[0] if len(lines) == 1 else ""
    if len(one) <= _SHORT_OUTPUT and OUTCOME.strip() not in one and values_in(one):
        # A one-line answer ("v20.11.1", "88412 exports/march.csv") is what came of the command:
        # said beside it, not as a value entry of its own that a short ledger drops first.
        return one
    return "ok"


def _lines(text: str) -> list[str]:
    kept = masked_lines(text)
    raw = text.splitlines() if kept is None else kept
    return [line for line in (clean(line) for line in raw) if line]


def _errors(lines: list[str], failed: bool, position: int, *, read: bool) -> list[Entry]:
    """An output's error lines. A file's contents are not errors ("raise ValueError" in a
    source file): a read fails only when the tool says so, and then its first line says why."""
    if read:
        return (
            [make_entry(ERROR, clip(line, _ERROR_LIMIT), position) for line in lines[:1]]
            if failed
            else []
        )
    # One line per error (digits aside), its latest instance: the ledger's identity for an
    # error (model.shape), so the eighth "m7.py:7: error: ..." is the one kept, not the first.
    shapes = [shape(line) for line in lines]
    latest = {found: i for i, found in enumerate(shapes)}
    distinct = [line for i, line in enumerate(lines) if latest[shapes[i]] == i]
    kept = error_lines(distinct, _ALL_ERRORS_PER_OUTPUT)
    # The best few of the kept are the best few of all: error_lines ranks the same way on both.
    more = set(error_lines(kept, _MORE_ERRORS_PER_OUTPUT))
    first = set(error_lines(kept, _ERRORS_PER_OUTPUT))
    entries = []
    for line in kept:
        entry = make_entry(ERROR, _error_text(line), position)
        if line not in more:
            entry = msgspec.structs.replace(entry, rank=_LAST_ERROR_RANK)
        elif line not in first:
            entry = msgspec.structs.replace(entry, rank=_MORE_ERROR_RANK)
        entries.append(entry)
    # Another instance of an error already said here (a log's "could not obtain lock on
    # relation X" for the fifth X) tells less than a further command: it fills what room is left.
    said: set[str] = set()
    for index in sorted(range(len(entries)), key=lambda i: -entries[i].rank):
        template = error_template(entries[index].text)
        if template in said:
            rank = min(entries[index].rank, REPEAT_RANK)
            entries[index] = msgspec.structs.replace(entries[index], rank=rank)
        said.add(template)
    return entries


# A parenthesized aside: what it says may be said already before it.
_ASIDE = re.compile(r" \(([^()]{1,120})\)")


def _error_text(line: str) -> str:
    """An error line as an entry says it: a line too long for the limit first loses its asides
    that only restate values said before them ("kotlin-stdlib-1.9.24
    (org.jetbrains.kotlin:kotlin-stdlib:1.9.24)"), so what follows them still fits."""
    if len(line) > _ERROR_LIMIT:

        def restated(match: re.Match[str]) -> str:
            said = values_in(match.group(0).strip())  # its values, read as an aside's
            before = line[: match.start()]
            return "" if said and all(v in before for v in said) else match.group(0)

        line = _ASIDE.sub(restated, line)
    return clip(line, _ERROR_LIMIT)


def error_template(error: str) -> str:
    """An error line with its names and numbers blanked: its quoted names ("warehouses"), and
    each word with a digit in it (times, pids, pod-7f9c2)."""
    return _WITH_DIGIT.sub("0", _QUOTED.sub("Q", error.lower()))


def _details(output: str, errors: list[Entry], position: int) -> list[Entry]:
    """What an output's error lines go on to say, indented under them: gradle's "> A failure
    occurred" over "> Duplicate class X found in modules a and b", jest's "FAIL file" over
    "● Suite › the failing test". The details of the highest-ranked errors first, ranked with
    an output's further error lines."""
    rank = {e.text: e.rank for e in errors}
    found: dict[str, int] = {}  # detail -> its error's rank
    raw = output.splitlines()[:_DETAIL_SCAN]
    for index, line in enumerate(raw):
        parent = rank.get(_error_text(clean(line))) if line.strip() else None
        if parent is None:
            continue
        after = next((x for x in raw[index + 1 : index + 3] if x.strip()), "")
        indent = len(line) - len(line.lstrip())
        detail = _error_text(clean(after))
        if len(after) - len(after.lstrip()) <= indent or len(detail) < 8 or detail in rank:
            continue
        if _FRAME.match(detail) or is_code(detail):  # where it was thrown, not what it says
            continue
        found.setdefault(detail, parent)
    best = sorted(found, key=lambda d: -found[d])[:_DETAILS_PER_OUTPUT]
    return [
        msgspec.structs.replace(make_entry(ERROR, detail, position), rank=_MORE_ERROR_RANK)
        for detail in found
        if detail in best
    ]


def _named(span: tuple[Message, ...]) -> Named:
    texts = [
        block.text
        for message in span
        if not message.synthetic
        for block in message.content
        if isinstance(block, TextContentBlock) and parse_summary_text(block.text) is None
    ]
    return Named(named_terms(texts), said_quantities(texts))


def _tally(line: str) -> bool:
    """A test run's totals (its command's outcome) or its progress (nothing): no value line."""
    return bool(_COUNT.search(line) or _PROGRESS.search(line))


def _values(lines: list[str], position: int, named: Named = _NOTHING_NAMED) -> list[Entry]:
    """The most specific values of an output's lines that are not instances of a template
    repeated through it (a log's thousand request lines say nothing one by one). Of a long
    output, the lines shaped like no other go first: the one version among forty numeric
    settings, the one commit naming a version in a log, the one log line naming the id the
    conversation is about."""
    salient = salient_lines(lines)
    # A record dump's lone setting, which line_shape read as one of its records' fields.
    settings = lone_settings(lines) - set(salient) if len(lines) >= CROWD else set()
    if settings:
        kept = set(salient) | settings
        salient = [line for line in lines if line in kept]
    # Shaped like many of the whole output's lines (thirty commits of a log, whatever their
    # subjects): one of a crowd, though few of its exact template are left among the salient.
    shapes = [value_shape(line) for line in lines]  # one pass, read by both crowd rules below
    crowd = {
        line for line, alone in zip(lines, standing_out(lines, shapes), strict=True) if not alone
    } | table_rows(lines)
    entries: list[tuple[bool, bool, Entry]] = []  # (stands out, says its own words, entry)
    # line -> what in it the conversation names: a term, or a figure it gave roughly
    mentioned = roughly_named(lines, named.quantities) | named_lines(lines, named.terms)
    # A crowd's line whose figure leads its column far ahead of the rest (the slowest of a
    # hundred timed requests) stands out of it too, after the lines the conversation names.
    leading = {
        line: figure for line, figure in outlying(lines, shapes).items() if line not in mentioned
    }
    # line -> a word only it (or one other line) uses: of equally specific lines shaped like no
    # other, one that says what no other says (a log's one warning) goes before one set apart
    # only by the shapes of its ids; and a long one is read around that word.
    matters = len(salient) + len(mentioned) + len(leading) > _VALUES_PER_OUTPUT or any(
        len(line) > _VALUE_LIMIT for line in salient
    )  # (a short list is kept whole, in any order, and a short line is read whole)
    own = own_words(lines, salient) if len(lines) >= CROWD and matters else {}
    for line, alone in zip(salient, standing_out(salient), strict=True):
        if _tally(line) or line in mentioned or line in leading:
            continue
        found = values_in(line)
        if found:
            shown = window(line, found[0], _VALUE_LIMIT)
            word = own.get(line)
            if word and word not in shown:
                around = window(line, word, _VALUE_LIMIT)
                shown = around if values_in(around) else shown
            entry = make_entry(VALUE, shown, position)
            alone = (alone and line not in crowd) or line in settings
            if not alone:
                entry = msgspec.structs.replace(entry, rank=entry.rank - CROWD_PENALTY)
            entries.append((alone, word is not None or not own, entry))
    # A line the conversation names stands out of its crowd, read around the name, and ranks
    # as the most specific of values: the work is about it, whatever its value's kind (a bare
    # count beside the id the user asked after), ahead of a git log's or a table's rows.
    for line, term in mentioned.items():
        if values_in(line) and not _tally(line):
            entry = make_entry(VALUE, window(line, term, _NAMED_LIMIT), position, figure=term)
            entry = msgspec.structs.replace(entry, rank=TOP_VALUE_RANK)
            entries.append((True, True, entry))
    for line, figure in leading.items():
        if not _tally(line):
            shown = window(line, figure, _NAMED_LIMIT)
            entry = make_entry(VALUE, shown, position, figure=figure)
            entry = msgspec.structs.replace(entry, rank=LEADING_RANK)
            entries.append((True, True, entry))
    ranked = sorted(entries, key=lambda a: (not a[0], -a[2].rank, not a[1], a[2].text))
    best = {id(e) for _, _, e in ranked[:_VALUES_PER_OUTPUT]}
    return [e for _, _, e in entries if id(e) in best]
