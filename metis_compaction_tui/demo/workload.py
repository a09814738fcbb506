"""The §10 benchmark workload: a long, scripted, deterministic coding session with planted facts.

Each turn is a user ask, one to three tool cycles (read_file / run_tests / grep / edit_file: file
contents, pytest output with failures, grep hits, edits) and an assistant reply. A turn adds about
1k tokens by the len/3 estimator, so the session crosses a 30k threshold near turn 30 (§7). Every
turn starts on a user message and ends on an assistant text, so each prefix of the session passes
validate_history.

Planted facts (`planted_facts`) are stated verbatim in a user ask or an assistant reply at known
turns, in the words a developer would use (not phrased for any summarizer), and their answer
keywords occur nowhere else in the session: a benchmark can ask whether a summary kept them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Literal

import msgspec

from engine import (
    Message,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
)
from metis_compaction_tui.demo import workload_shapes

DEFAULT_TURNS = 60


class PlantedFact(msgspec.Struct, frozen=True):
    """A fact stated at `turn` (1-based); recovered when every answer keyword appears."""

    fact_id: str
    turn: int
    statement: str
    question: str
    answer_keywords: tuple[str, ...]
    role: Literal["user", "assistant"] = "user"  # who states it


# (fact_id, role, statement, question, answer_keywords)
_FACTS: tuple[tuple[str, Literal["user", "assistant"], str, str, tuple[str, ...]], ...] = (
    (
        "staging-db-port",
        "user",
        "By the way, the staging database listens on port 5433, not the default.",
        "Which port does the staging database listen on?",
        ("5433",),
    ),
    (
        "wire-format",
        "assistant",
        "We decided to use msgspec instead of pydantic for the wire format, since it decodes "
        "faster and validates the same.",
        "Which library was chosen for the wire format, over which alternative?",
        ("msgspec", "pydantic"),
    ),
    (
        "flaky-test",
        "user",
        "The flaky test is tests/test_io.py::test_retry, so a single failure there means nothing.",
        "Which test is known to be flaky?",
        ("test_io.py::test_retry",),
    ),
    (
        "billing-owner",
        "user",
        "Priya owns the billing module, so any change to src/ledger/billing.py needs her review.",
        "Who has to review changes to the billing module?",
        ("Priya",),
    ),
    (
        "upstream-batch-limit",
        "assistant",
        "The upstream API rejects batches larger than 750 entries, which is why MAX_BATCH is 750.",
        "What is the largest batch the upstream API accepts?",
        ("750",),
    ),
    (
        "python-312",
        "user",
        "CI only runs one interpreter for now: we can't move to Python 3.12 until the numpy pin "
        "is lifted.",
        "What blocks the move to Python 3.12?",
        ("numpy", "3.12"),
    ),
    (
        "release-freeze",
        "user",
        "The release freeze starts on June 12, so the migration has to land before then.",
        "When does the release freeze start?",
        ("June 12",),
    ),
    (
        "sandbox-credentials",
        "assistant",
        "The sandbox credentials live in vault under secret/payments/sandbox; nothing is read "
        "from a dotenv file.",
        "Where are the payment sandbox credentials kept?",
        ("secret/payments/sandbox",),
    ),
    (
        "v1-endpoint",
        "user",
        "We agreed to keep the v1 /import endpoint alive until the end of Q3.",
        "Until when does the v1 import endpoint stay?",
        ("/import", "Q3"),
    ),
    (
        "retry-backoff",
        "assistant",
        "The retry backoff starts at 250 ms and doubles up to a cap of 8 seconds.",
        "What are the retry backoff's start and cap?",
        ("250 ms", "8 seconds"),
    ),
    (
        "lint-command",
        "user",
        "Always run make lint rather than calling the linter directly; the Makefile pins its "
        "version.",
        "How should the linter be run?",
        ("make lint",),
    ),
    (
        "prod-bucket",
        "user",
        "The production bucket is ledger-prod-eu-west-1; never point the tests at it.",
        "What is the production bucket called?",
        ("ledger-prod-eu-west-1",),
    ),
)


def planted_facts(seed: int = 0, turns: int = DEFAULT_TURNS) -> list[PlantedFact]:
    """The facts `scripted_session(seed, turns)` plants, in turn order. They are spread over the
    first DEFAULT_TURNS turns with a seeded jitter, whatever `turns` is, so a shorter session is
    a prefix of a longer one; a session shorter than that plants only the facts it reaches."""
    rng = random.Random(f"facts:{seed}")
    order = list(range(len(_FACTS)))
    rng.shuffle(order)
    last = DEFAULT_TURNS - 1  # the last turn stays fact-free
    used: set[int] = set()
    facts: list[PlantedFact] = []
    for slot, index in enumerate(order):
        centre = 2 + (slot + 0.5) * (last - 2) / len(order)
        turn = min(last, max(2, round(centre + rng.uniform(-1.5, 1.5))))
        if turn in used:
            continue
        used.add(turn)
        fact_id, role, statement, question, keywords = _FACTS[index]
        facts.append(PlantedFact(fact_id, turn, statement, question, keywords, role))
    return sorted((f for f in facts if f.turn <= turns), key=lambda fact: fact.turn)


# -- the fictional project ---------------------------------------------------------------------


class _Task(msgspec.Struct, frozen=True):
    """One bug or feature the session works on for a few turns."""

    report: str
    path: str
    test_path: str
    test_name: str
    function: str
    error: str
    cause: str
    fix: str


_TASKS: tuple[_Task, ...] = (
    _Task(
        "The CSV import drops the last row when the file has no trailing newline.",
        "src/ledger/io.py",
        "tests/test_io.py",
        "test_last_row_without_newline",
        "read_rows",
        "AssertionError: assert 2 == 3",
        "read_rows splits on '\\n' and discards the final chunk when it is not terminated",
        "iterate with csv.reader over the handle instead of splitting by hand",
    ),
    _Task(
        "Amounts with a comma as the decimal separator come out a hundred times too big.",
        "src/ledger/models.py",
        "tests/test_models.py",
        "test_parse_amount_decimal_comma",
        "parse_amount",
        "AssertionError: assert Decimal('12345') == Decimal('123.45')",
        "parse_amount strips every non-digit before it knows which separator is decimal",
        "detect the decimal separator from the last separator in the string",
    ),
    _Task(
        "The retry wrapper retries on 400 responses, which can never succeed.",
        "src/ledger/retry.py",
        "tests/test_retry.py",
        "test_no_retry_on_client_error",
        "with_retries",
        "AssertionError: expected 1 call, got 4",
        "with_retries treats every HTTPStatusError as transient",
        "retry only on 408, 429 and 5xx, and re-raise anything else at once",
    ),
    _Task(
        "POST /batches returns 500 instead of 422 when the payload has an unknown currency.",
        "src/ledger/api.py",
        "tests/test_api.py",
        "test_unknown_currency_is_422",
        "create_batch",
        "AssertionError: assert 500 == 422",
        "the KeyError from the currency table escapes create_batch unhandled",
        "validate the currency up front and answer 422 with the offending code",
    ),
    _Task(
        "Reconciliation marks transfers between our own accounts as unmatched.",
        "src/ledger/reconcile.py",
        "tests/test_reconcile.py",
        "test_internal_transfer_matches",
        "match_entries",
        "AssertionError: assert ['t-17'] == []",
        "match_entries compares signed amounts, so the two legs of a transfer never agree",
        "match on the absolute amount and opposite direction within the same day",
    ),
    _Task(
        "Settings ignore the LEDGER_TIMEOUT environment variable.",
        "src/ledger/config.py",
        "tests/test_config.py",
        "test_timeout_from_environment",
        "load_settings",
        "AssertionError: assert 30 == 5",
        "load_settings reads the file after the environment and overwrites it",
        "apply the environment last, after the file defaults",
    ),
    _Task(
        "Exporting a month with no entries writes a file with no header.",
        "src/ledger/export.py",
        "tests/test_export.py",
        "test_empty_month_has_header",
        "write_month",
        "AssertionError: assert '' == 'date,account,amount\\n'",
        "write_month returns early before the header when there are no rows",
        "write the header unconditionally, then the rows",
    ),
    _Task(
        "Batch ids collide when two imports start in the same millisecond.",
        "src/ledger/models.py",
        "tests/test_models.py",
        "test_batch_ids_unique_under_burst",
        "new_batch_id",
        "AssertionError: assert 998 == 1000",
        "new_batch_id is just the millisecond timestamp",
        "append a per-process counter to the timestamp",
    ),
)

_FOLLOWUPS: tuple[str, ...] = (
    "Go ahead with the fix, but keep the public signature of {function} unchanged.",
    "What does {function} do with an empty input? Check that before changing it.",
    "Can you grep for other callers of {function} first? I don't want to break the exporter.",
    "Please add a regression test for this to {test_path}.",
    "The test still fails for me locally. Can you run {test_path} again and look closer?",
    "Before we go on, show me the part of {path} that handles this.",
    "Is {function} covered anywhere else in the suite? Run the related tests.",
)
_WRAPS: tuple[str, ...] = (
    "Looks good. Run the whole suite once more and then let's move on.",
    "Great, thanks. Give me a short summary of what changed for the commit message.",
    "Fine by me. Double-check nothing else imports the old helper, then we're done here.",
)
_TOOL_INTROS: dict[str, tuple[str, ...]] = {
    "read_file": (
        "Let me read {path} first.",
        "I'll open {path} to see how {function} works.",
        "Reading {path} around {function}.",
    ),
    "run_tests": (
        "Running {target} to see where it stands.",
        "Let me run {target}.",
        "I'll check the tests: {target}.",
    ),
    "grep": (
        "Searching for uses of {function}.",
        "Let me find every caller of {function}.",
    ),
    "read_log": (
        "Let me look at the service log around the failure.",
        "Checking the recent log output.",
    ),
    "edit_file": (
        "Now the change in {path}.",
        "Editing {function} in {path}.",
        "Applying the fix to {path}.",
    ),
}
_REPLIES: tuple[str, ...] = (
    "The failure came from {function} in {path}: {cause}. I changed it to {fix}. {test_name} "
    "passes now and the rest of {test_path} is green. I left the logging as it was, so the "
    "nightly job's output will look the same apart from the corrected rows.",
    "Found it. The cause: {cause}. The fix is to {fix}; I kept the signature of {function} as "
    "it was and added {test_name} to {test_path} so it stays fixed. Two callers in the "
    "exporter pass keyword arguments only, so they are unaffected.",
    "I looked through {path}. The cause is that {cause}, which explains the report. Nothing "
    "else calls {function} in a way that depends on the old behaviour, so the change stays "
    "local to this module.",
    "Done: {function} now does the right thing, and {test_name} covers it. The suite passes "
    "apart from the tests marked slow, which I did not run; they only touch the exporter and "
    "should be unaffected.",
    "Here is where it stands: {test_name} fails with {error}. The cause: {cause}. Next step "
    "is to {fix}; that touches only {path}, and I will rerun {test_path} afterwards.",
)
_CONTEXT: tuple[str, ...] = (
    "It started after Tuesday's deploy, as far as I can tell.",
    "Ops noticed it in the nightly job's report this morning.",
    "A customer reported it through support with a sample file attached.",
    "It only shows up with the files from the second bank, not the first.",
    "Keep the change small if you can; I want to ship it with the next patch release.",
    "No rush on refactoring around it, a targeted fix is fine for now.",
    "I'd like a test that reproduces it before anything else changes.",
    "The logs from the import worker show nothing unusual around it.",
)

_NOUNS = (
    "row", "entry", "batch", "account", "statement", "record", "payload", "amount", "currency",
    "line", "header", "chunk", "offset", "attempt", "response", "cursor", "transfer", "period",
)  # fmt: skip
_VERBS = (
    "parse", "read", "load", "split", "validate", "normalize", "merge", "apply", "fetch",
    "encode", "decode", "flush", "group", "render", "compute", "match", "collect", "resolve",
)  # fmt: skip
_FIELDS = ("id", "amount", "currency", "posted_at", "account_id", "memo", "status", "direction")


def _plural(noun: str) -> str:
    if noun.endswith("y"):
        return noun[:-1] + "ies"
    return noun + ("es" if noun.endswith(("ch", "s", "x")) else "s")


def _code_line(rng: random.Random) -> str:
    a, b = rng.sample(_NOUNS, 2)
    many_a, many_b = _plural(a), _plural(b)
    field = rng.choice(_FIELDS)
    n = rng.randint(2, 99)
    templates = (
        f"    {many_a} = [{a} for {a} in {many_b} if {a}.{field}]",
        f'    if not {a}:\n        raise ValueError("empty {a}: %r" % ({b},))',
        f"    total = sum({a}.amount for {a} in {many_a})",
        f"    for index, {a} in enumerate({many_b}):\n        {a}.{field} = index",
        f'    log.debug("{rng.choice(_VERBS)} %d {many_a}", len({many_a}))',
        f'    {a} = {b}.get("{field}", {n})',
        f"    {many_a}.sort(key=lambda {a}: ({a}.{field}, {a}.id))",
        f"    if len({many_a}) > {n}:\n        {many_a} = {many_a}[:{n}]",
        f"    {a} = {b}.{field} or default_{field}()",
        f"    seen.add({a}.{field})",
        f"    # {rng.choice(_VERBS)} before {rng.choice(_VERBS)}: the {b} may be partial",
        f'    with open(path, encoding="utf-8") as handle:\n        {many_a} = '
        f"handle.read().splitlines()",
    )
    return rng.choice(templates)


def _function_source(rng: random.Random, name: str, *, test: bool) -> str:
    if test:
        subject = rng.choice(_NOUNS)
        body = [
            f"    {subject} = make_{subject}({rng.randint(1, 40)})",
            *(_code_line(rng) for _ in range(rng.randint(1, 3))),
            f"    result = {rng.choice(_VERBS)}_{_plural(subject)}([{subject}])",
            f"    assert result == expected_{_plural(subject)}({rng.randint(1, 9)})",
        ]
        return f"def {name}():\n" + "\n".join(body) + "\n"
    params = ", ".join(_plural(p) for p in rng.sample(_NOUNS, rng.randint(1, 3)))
    body = [_code_line(rng) for _ in range(rng.randint(3, 9))]
    body.append(f"    return {_plural(rng.choice(_NOUNS))}")
    doc = (
        f'    """{rng.choice(_VERBS).capitalize()} the {_plural(rng.choice(_NOUNS))} of a batch."""'
    )
    return f"def {name}({params}):\n{doc}\n" + "\n".join(body) + "\n"


def _file_source(seed: int, path: str, version: int, focus: str) -> str:
    """The file as the tool reads it, numbered like `cat -n`; stable per (seed, path, version)."""
    rng = random.Random(f"file:{seed}:{path}:{version}")
    test = path.startswith("tests/")
    if test:
        head = ["import pytest", "", "from ledger import *  # noqa: F403", ""]
    else:
        head = [f'"""{path}: part of the ledger import service."""', "", "import logging", ""]
        head += ["log = logging.getLogger(__name__)", ""]
    prefix = "test_" if test else ""
    names = [
        f"{prefix}{rng.choice(_VERBS)}_{_plural(rng.choice(_NOUNS))}"
        for _ in range(rng.randint(3, 5))
    ]
    names.insert(rng.randint(0, len(names)), focus)
    parts = [_function_source(rng, name, test=test) for name in names]
    lines = [*head, *"\n\n".join(parts).splitlines()]
    return "\n".join(f"{number:>5}\t{line}" for number, line in enumerate(lines, start=1))


_SUITE = ("tests/test_api.py", "tests/test_export.py", "tests/test_models.py", "tests/test_io.py")


def _pytest_output(rng: random.Random, task: _Task, whole_suite: bool, failing: bool) -> str:
    files = (
        [task.test_path, *(f for f in _SUITE if f != task.test_path)]
        if whole_suite
        else [task.test_path]
    )
    counts = [rng.randint(8, 40) for _ in files]
    failed = rng.randint(1, 2) if failing else 0
    lines = [
        "=" * 29 + " test session starts " + "=" * 29,
        "platform linux -- Python 3.11.9, pytest-8.3.2, pluggy-1.5.0",
        "rootdir: /home/dev/ledger",
        "configfile: pyproject.toml",
        f"collected {sum(counts)} items",
        "",
    ]
    done = 0
    for index, (file, count) in enumerate(zip(files, counts, strict=True)):
        done += count
        marks = ["."] * count
        if index == 0:  # the failures are in the task's own test file
            for position in rng.sample(range(count), failed):
                marks[position] = "F"
        lines.append(
            f"{file} {''.join(marks)}".ljust(72) + f"[{round(100 * done / sum(counts)):>3}%]"
        )
    passed = sum(counts) - failed
    if failing:
        lines += ["", "=" * 32 + " FAILURES " + "=" * 32]
        for index in range(failed):
            name = task.test_name if index == 0 else f"test_{rng.choice(_VERBS)}_edge_case"
            subject = rng.choice(_NOUNS)
            body = "\n".join(_code_line(rng) for _ in range(rng.randint(1, 3)))
            lines += [
                "_" * 24 + f" {name} " + "_" * 24,
                "",
                f"    def {name}():",
                f"        {subject} = make_fixture({rng.randint(1, 9)})",
                *("    " + line for line in body.splitlines()),
                f">       assert {task.function}({subject}) == expected",
                f"E       {task.error}",
                f"E        +  where result = {task.function}({subject})",
                "",
                f"{task.test_path}:{rng.randint(20, 140)}: AssertionError",
            ]
        lines.append("=" * 26 + " short test summary info " + "=" * 26)
        lines.append(f"FAILED {task.test_path}::{task.test_name} - {task.error}")
    seconds = f"{rng.uniform(0.4, 6.0):.2f}"
    summary = f"{failed} failed, {passed} passed" if failed else f"{passed} passed"
    lines.append(f"{'=' * 28} {summary} in {seconds}s {'=' * 28}")
    return "\n".join(lines)


def _grep_output(rng: random.Random, task: _Task) -> str:
    places = [task.path, task.test_path, "src/ledger/export.py", "src/ledger/api.py"]
    hits = set()
    for _ in range(rng.randint(4, 12)):
        noun = rng.choice(_NOUNS)
        line = f"    {_plural(noun)} = {task.function}({noun}_source, strict=True)"
        hits.add(f"{rng.choice(places)}:{rng.randint(5, 220)}:{line}")
    return "\n".join(sorted(hits))


class _Session:
    """Builds one turn at a time; all randomness comes from one seeded generator."""

    def __init__(self, seed: int, turns: int, shape: str = "mixed") -> None:
        if shape not in workload_shapes.SHAPES:
            raise ValueError(f"unknown workload shape {shape!r}: {workload_shapes.SHAPES}")
        self.shape = shape
        self.seed = seed
        self.rng = random.Random(f"session:{seed}")
        self.facts = {fact.turn: fact for fact in planted_facts(seed, turns)}
        self.tasks = list(_TASKS)
        self.rng.shuffle(self.tasks)
        self.versions: dict[str, int] = {}
        self.task_index = 0
        self.task_turns_left = 0
        self.task_turn = 0

    def _next_task(self) -> _Task:
        if self.task_turns_left == 0:
            self.task_index += 1
            self.task_turns_left = self.rng.randint(3, 6)
            self.task_turn = 0
        self.task_turns_left -= 1
        self.task_turn += 1
        return self.tasks[self.task_index % len(self.tasks)]

    def turn(self, number: int) -> list[Message]:
        rng = self.rng
        task = self._next_task()
        first, last = self.task_turn == 1, self.task_turns_left == 0
        fields = {
            "path": task.path,
            "test_path": task.test_path,
            "function": task.function,
            "test_name": task.test_name,
        }
        if first:
            ask = f"{task.report} Can you look at {task.path}? {rng.choice(_FOLLOWUPS[:4])}"
        elif last:
            ask = rng.choice(_WRAPS)
        else:
            ask = rng.choice(_FOLLOWUPS)
        ask = ask.format(**fields)
        extra = rng.sample(_CONTEXT, rng.choice((0, 1, 1, 2)))
        ask = " ".join([ask, *extra])
        fact = self.facts.get(number)
        answer = ""
        if self.shape == "chatty":
            remark, answer = workload_shapes.discussion(rng, fields)
            ask = f"{ask} {remark}"
        if fact is not None and fact.role == "user":
            ask = f"{ask} {fact.statement}"
        ids = (f"w{self.seed}-t{number:04d}-m{k:02d}" for k in range(100))
        messages = [_text(next(ids), Role.USER, ask)]
        kinds = self._tool_plan(first, last)
        for cycle, step in enumerate(kinds):
            calls = [
                self._tool_call(kind, task, f"toolu_{self.seed}_{number:04d}_{cycle}_{k}")
                for k, kind in enumerate(step)
            ]
            intro = rng.choice(_TOOL_INTROS[step[0]]).format(
                **{"target": task.test_path, **fields, **calls[0][2]}
            )
            messages.append(
                Message(
                    id=next(ids),
                    role=Role.ASSISTANT,
                    content=(TextContentBlock(intro), *(use for use, _, _ in calls)),
                )
            )
            messages.append(
                Message(id=next(ids), role=Role.USER, content=tuple(res for _, res, _ in calls))
            )
        reply = rng.choice(_REPLIES).format(
            cause=task.cause,
            fix=task.fix,
            error=task.error,
            **fields,
        )
        if answer:
            reply = f"{answer} {reply}"
        if fact is not None and fact.role == "assistant":
            reply = f"{reply} {fact.statement}"
        messages.append(_text(next(ids), Role.ASSISTANT, reply))
        return messages

    def _tool_plan(self, first: bool, last: bool) -> list[list[str]]:
        """Tool cycles for the turn; a cycle may hold two parallel calls."""
        rng = self.rng
        if self.shape == "long_outputs":
            return workload_shapes.long_plan(rng, first, last)
        if self.shape == "chatty":
            return workload_shapes.chatty_plan(rng, first, last)
        if first:
            plan = [["read_file"], rng.choice([["grep"], ["run_tests"], ["read_file", "grep"]])]
        elif last:
            plan = [["run_tests"]]
        else:
            plan = [
                [rng.choices(("read_file", "run_tests", "grep", "edit_file"), (4, 3, 2, 3))[0]]
                for _ in range(rng.choices((1, 2, 3), (3, 5, 2))[0])
            ]
        return plan

    def _tool_call(
        self, kind: str, task: _Task, tool_id: str
    ) -> tuple[ToolUseContentBlock, ToolResultContentBlock, dict[str, str]]:
        rng = self.rng
        path = task.path if kind != "read_file" or rng.random() < 0.7 else task.test_path
        if kind == "read_file":
            focus = task.function if path == task.path else task.test_name
            source = _file_source(self.seed, path, self.versions.get(path, 0), focus)
            if self.shape == "long_outputs":  # the whole module, not the part around the focus
                version = self.versions.get(path, 0)
                more = [_file_source(self.seed, f"{path}#{k}", version, focus) for k in (1, 2)]
                source = "\n".join([source, *more])
            return (
                ToolUseContentBlock(tool_id, kind, {"path": path}),
                ToolResultContentBlock(tool_id, source),
                {"path": path},
            )
        if kind == "read_log":
            log = workload_shapes.service_log(rng)
            return (
                ToolUseContentBlock(tool_id, kind, {"service": log.split()[2].split("[")[0]}),
                ToolResultContentBlock(tool_id, log),
                {},
            )
        if kind == "run_tests":
            whole = rng.random() < (0.8 if self.shape == "long_outputs" else 0.3)
            target = "the whole suite" if whole else task.test_path
            output = _pytest_output(rng, task, whole, failing=rng.random() < 0.6)
            command = "pytest tests" if whole else f"pytest {task.test_path}"
            return (
                ToolUseContentBlock(tool_id, kind, {"command": command}),
                ToolResultContentBlock(tool_id, output),
                {"target": target},
            )
        if kind == "grep":
            pattern = f"{task.function}\\("
            return (
                ToolUseContentBlock(tool_id, kind, {"pattern": pattern, "path": "src tests"}),
                ToolResultContentBlock(tool_id, _grep_output(rng, task)),
                {},
            )
        assert kind == "edit_file"
        version = self.versions.get(path, 0)
        old = "\n".join(_code_line(rng) for _ in range(rng.randint(2, 4)))
        new = "\n".join(_code_line(rng) for _ in range(rng.randint(2, 5)))
        failed = rng.random() < 0.1
        if not failed:
            self.versions[path] = version + 1
        result = (
            f"Error: old_string not found in {path}; re-read the file and try again."
            if failed
            else f"Edited {path}: 1 replacement at line {rng.randint(12, 180)}."
        )
        return (
            ToolUseContentBlock(
                tool_id, kind, {"path": path, "old_string": old, "new_string": new}
            ),
            ToolResultContentBlock(tool_id, result, is_error=failed),
            {},
        )


def _text(message_id: str, role: Role, text: str) -> Message:
    return Message(id=message_id, role=role, content=(TextContentBlock(text),))


def scripted_session(
    seed: int = 0, turns: int = DEFAULT_TURNS, shape: str = "mixed"
) -> Iterator[list[Message]]:
    """Yield the session one turn at a time (the messages that turn adds), deterministic for a
    seed; a shorter session is a prefix of a longer one. The facts of `planted_facts(seed,
    turns)` are stated at their turns. `shape`: one of workload_shapes.SHAPES."""
    session = _Session(seed, turns, shape)
    for number in range(1, turns + 1):
        yield session.turn(number)
