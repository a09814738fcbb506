"""The work ledger (engine.ledger) on tool calls shaped as the importers store Claude Code's and
Codex's: what it extracts, how it merges, how it holds to its budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from hashlib import sha1
from pathlib import Path

import msgspec
import pytest

from engine.ledger import HEADING, Ledger, apply_ledger, extract, ledger_reserve, render, split
from engine.ledger.merge import merge
from engine.ledger.model import (
    EDITED,
    ERROR,
    NAMED_FILE_RANK,
    RAN,
    READ,
    RESTATED_RANK,
    TOP_VALUE_RANK,
    VALUE,
    WROTE,
    make_entry,
)
from engine.ledger.values import lone_settings, outlying, table_rows, values_in
from engine.messages import (
    Message,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
    validate_history,
)
from engine.policy.splice import summary_text
from engine.tokens import estimate_text_tokens

Call = tuple[str, dict[str, object], str, bool]


def session(*turns: tuple[str, list[Call]]) -> tuple[Message, ...]:
    """An ask, then per turn an assistant message with its calls and their results."""
    messages = [Message("u0", Role.USER, (TextContentBlock("please fix the build"),))]
    for index, (text, calls) in enumerate(turns):
        uses = tuple(
            ToolUseContentBlock(f"t{index}-{n}", name, args)
            for n, (name, args, _, _) in enumerate(calls)
        )
        messages.append(Message(f"a{index}", Role.ASSISTANT, (TextContentBlock(text), *uses)))
        if calls:
            results = tuple(
                ToolResultContentBlock(f"t{index}-{n}", output, error)
                for n, (_, _, output, error) in enumerate(calls)
            )
            messages.append(Message(f"r{index}", Role.USER, results))
        else:
            messages.append(Message(f"u{index + 1}", Role.USER, (TextContentBlock("go on"),)))
    validate_history(messages)
    return tuple(messages)


def codex_output(output: str, exit_code: int) -> str:
    return json.dumps({"output": output, "metadata": {"exit_code": exit_code}})


PYTEST_FAIL = (
    "============================= test session starts ==============================\n"
    "tests/test_api.py ..F.\n"
    "FAILED tests/test_api.py::test_limit - AssertionError: assert 50 == 100\n"
    "========================= 1 failed, 3 passed in 0.42s =========================="
)

CLAUDE = session(
    (
        "Reading the config and running the tests.",
        [
            ("Read", {"file_path": "/repo/app/config.py"}, "TIMEOUT = 30\nPORT = 8081\n", False),
            ("Bash", {"command": "pytest -q", "description": "Run tests"}, PYTEST_FAIL, True),
        ],
    ),
    (
        "Fixing the limit.",
        [
            (
                "Edit",
                {"file_path": "/repo/app/api.py", "old_string": "50", "new_string": "100"},
                "The file /repo/app/api.py has been updated.",
                False,
            ),
            (
                "MultiEdit",
                {
                    "file_path": "/repo/app/limits.py",
                    "edits": [{"old_string": "a", "new_string": "b"}],
                },
                "Applied 1 edit to /repo/app/limits.py",
                False,
            ),
            (
                "Write",
                {"file_path": "/repo/docs/limits.md", "content": "# Limits\n"},
                "File created successfully at: /repo/docs/limits.md",
                False,
            ),
        ],
    ),
)

CODEX = session(
    (
        "Looking around.",
        [
            (
                "shell",
                {"command": ["bash", "-lc", "cargo test"], "workdir": "/w"},
                codex_output("running 12 tests\ntest result: FAILED. 10 passed; 2 failed", 101),
                False,
            ),
            (
                "exec_command",
                {"cmd": "git log -1 --format=%h"},
                "Chunk ID: 1a\nWall time: 0.1 seconds\nProcess exited with code 0\n"
                "Original token count: 3\nOutput:\n9f3c2ab\n",
                False,
            ),
        ],
    ),
    (
        "Patching.",
        [
            (
                "apply_patch",
                {
                    "input": "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-a\n+b\n"
                    "*** Add File: src/limits.rs\n+pub const MAX: u32 = 100;\n*** End Patch"
                },
                "Success. Updated the following files:\nM src/lib.rs\nA src/limits.rs",
                False,
            ),
        ],
    ),
)


def by_kind(entries: list, kind: str) -> list[str]:
    return [e.text for e in entries if e.kind == kind]


def count(text: str) -> int:
    return estimate_text_tokens(summary_text("local:extractive", 0, text))


def test_claude_code_calls_give_files_commands_errors_and_values() -> None:
    entries = extract(CLAUDE)
    assert by_kind(entries, READ) == ["/repo/app/config.py"]
    assert by_kind(entries, EDITED) == ["/repo/app/api.py", "/repo/app/limits.py"]
    assert by_kind(entries, WROTE) == ["/repo/docs/limits.md"]
    assert by_kind(entries, RAN) == ["pytest -q → 1 failed, 3 passed"]
    assert "FAILED tests/test_api.py::test_limit - AssertionError: assert 50 == 100" in by_kind(
        entries, ERROR
    )
    values = by_kind(entries, VALUE)
    assert "TIMEOUT = 30" in values and "PORT = 8081" in values


def test_codex_calls_give_exit_status_patch_files_and_the_output_unwrapped() -> None:
    entries = extract(CODEX)
    assert by_kind(entries, RAN) == [
        "cargo test → 10 passed, 2 failed, exit 101",
        "git log -1 --format=%h → exit 0",
    ]
    assert by_kind(entries, EDITED) == ["src/lib.rs"]
    assert by_kind(entries, WROTE) == ["src/limits.rs"]
    assert "9f3c2ab" in by_kind(entries, VALUE)
    assert not any('"metadata"' in e.text for e in entries)  # the JSON wrapper is not content


def test_a_repeated_error_with_other_counts_is_one_entry_its_latest_instance() -> None:
    first = "ERROR: 3 checks failed after 1.2s"
    later = "ERROR: 5 checks failed after 0.8s"
    span = session(
        ("Checking.", [("Bash", {"command": "make check"}, first, True)]),
        ("Again.", [("Bash", {"command": "make check"}, later, True)]),
    )
    entries = extract(span)
    assert by_kind(entries, ERROR) == [later]
    assert by_kind(entries, RAN) == ["make check → failed"]  # one command, its latest outcome


def test_a_file_read_then_edited_is_one_edited_entry_and_a_failed_edit_is_none() -> None:
    span = session(
        ("Reading.", [("Read", {"file_path": "a.py"}, "x = 1", False)]),
        (
            "Editing.",
            [
                ("Edit", {"file_path": "a.py", "old_string": "1", "new_string": "2"}, "ok", False),
                ("Edit", {"file_path": "b.py"}, "String to replace not found in file.", True),
            ],
        ),
    )
    entries = extract(span)
    assert by_kind(entries, EDITED) == ["a.py"]
    assert by_kind(entries, READ) == []
    assert "b.py" not in " ".join(by_kind(entries, EDITED))
    assert by_kind(entries, ERROR) == ["String to replace not found in file."]


def test_a_file_body_is_not_read_as_errors() -> None:
    body = "def check(x):\n    raise ValueError('bad input')\n"
    span = session(("Reading.", [("Read", {"file_path": "v.py"}, body, False)]))
    assert by_kind(extract(span), ERROR) == []


def test_the_section_adds_only_what_the_prose_leaves_out() -> None:
    prose = "Goal: fix the limit. Edited /repo/app/api.py; pytest -q had failed."
    result = apply_ledger(prose, CLAUDE, None, 2_000, count)
    section = split(result.text)
    assert section.prose == prose
    texts = [e.text for e in section.entries]
    assert "/repo/app/api.py" not in texts  # stated in the prose
    assert "/repo/app/limits.py" in texts and "/repo/docs/limits.md" in texts
    assert result.restored == len(section.entries) and result.dropped == 0
    assert count(result.text) <= 2_000


def test_a_summary_that_states_everything_gets_no_ledger() -> None:
    everything = "\n".join(m.text() for m in CODEX)
    result = apply_ledger(everything, CODEX, None, 100_000, count)
    assert result.text == everything
    assert HEADING not in result.text
    assert result.restored == 0 and result.dropped == 0
    assert result.ledger.entries  # the ledger itself is still known


def test_a_ledger_bigger_than_its_room_drops_the_least_specific_and_says_how_many() -> None:
    calls: list[Call] = [
        ("Read", {"file_path": f"src/module_{i}.py"}, "pass", False) for i in range(40)
    ]
    calls.append(("Bash", {"command": "pytest"}, "E   KeyError: 'tenant_id'", True))
    span = session(("Reading everything.", calls))
    prose = "Goal: find the tenant bug."
    budget = count(prose) + 60
    result = apply_ledger(prose, span, None, budget, count)
    assert count(result.text) <= budget
    assert 0 < result.restored < len(result.ledger.entries)
    assert result.dropped == len(result.ledger.entries) - result.restored
    section = split(result.text)
    assert section.left_out == result.dropped
    kinds = [e.kind for e in section.entries]
    assert ERROR in kinds and RAN in kinds  # the error and the command outrank file reads


def test_no_room_at_all_leaves_the_prose_alone_and_counts_every_entry_dropped() -> None:
    prose = "Goal: find the tenant bug."
    result = apply_ledger(prose, CLAUDE, None, count(prose), count)
    assert result.text == prose
    assert result.restored == 0 and result.dropped == len(result.ledger.entries)


def test_an_empty_summary_stays_empty_so_it_fails_as_one() -> None:
    assert apply_ledger("  ", CLAUDE, None, 2_000, count).text.strip() == ""


def test_the_ledger_is_a_function_of_the_span() -> None:
    first = apply_ledger("Goal: x.", CLAUDE, None, 2_000, count)
    again = apply_ledger("Goal: x.", CLAUDE, None, 2_000, count)
    assert first == again
    assert ledger_reserve(CLAUDE, 2_000, count) == ledger_reserve(CLAUDE, 2_000, count) > 0
    assert ledger_reserve(CLAUDE, 2_000, count) <= 2_000 * 0.1


def test_render_and_split_read_each_other_back() -> None:
    entries = extract(CLAUDE) + extract(CODEX)
    text = render(entries, left_out=4)
    section = split(f"Some prose.\n\n{text}")
    assert section.prose == "Some prose."
    assert sorted(e.key for e in section.entries) == sorted({e.key for e in entries})
    assert section.left_out == 4


def test_a_recompaction_merges_the_earlier_ledger_from_the_summary_in_its_span() -> None:
    earlier = apply_ledger("Goal: fix the limit.", CLAUDE, None, 2_000, count)
    summary = Message(
        "s1",
        Role.USER,
        (TextContentBlock(summary_text("local:extractive", 0, earlier.text)),),
    )
    later = CODEX[1:]  # the new work after the earlier summary
    span = (summary, Message("f", Role.ASSISTANT, (TextContentBlock("ok"),)), *later)
    entries = extract(span)
    texts = " ".join(e.text for e in entries)
    assert "pytest -q → 1 failed, 3 passed" in texts  # from the earlier ledger
    assert "cargo test" in texts  # from the new calls
    merged = apply_ledger("Goal: ship it.", span, None, 2_000, count)
    assert "/repo/app/limits.py" in merged.text and "src/limits.rs" in merged.text


def test_a_prior_ledger_passed_in_is_merged_and_the_later_outcome_wins() -> None:
    prior = Ledger(tuple(extract(CLAUDE)))
    rerun = session(("Rerun.", [("Bash", {"command": "pytest -q"}, "4 passed in 0.30s", False)]))
    result = apply_ledger("Goal: done.", rerun, prior, 2_000, count)
    ran = [e.text for e in result.ledger.entries if e.kind == RAN]
    assert ran == ["pytest -q → 4 passed"]
    assert any(e.text == "/repo/docs/limits.md" for e in result.ledger.entries)


def test_hostile_calls_are_read_within_bounds() -> None:
    nested: dict[str, object] = {}
    inner = nested
    for _ in range(3_000):  # deeper than Python's recursion limit
        inner["action"] = {}
        inner = inner["action"]  # type: ignore[assignment]
    blob = "timeout = " + "9x" * 100_000 + " junk"
    span = session(
        (
            "Odd calls.",
            [
                ("local_shell", nested, "ok", False),
                ("Read", {"file_path": "blob.cfg"}, f"{blob}\nport = 8080\n", False),
            ],
        )
    )
    entries = extract(span)
    assert by_kind(entries, RAN) == ["local_shell → ok"]
    assert "port = 8080" in by_kind(entries, VALUE)
    assert all(len(e.text) <= 200 for e in entries)


def test_a_key_in_a_command_or_output_never_reaches_the_ledger() -> None:
    key = "sk-ant-" + "a1B2c3D4e5F6g7H8"
    span = session(
        (
            "Calling the API.",
            [
                (
                    "Bash",
                    {"command": f"curl -H 'x-api-key: {key}' localhost:8080/v1/ping"},
                    f"error: 401 for key {key}",
                    True,
                )
            ],
        )
    )
    result = apply_ledger("Goal: ping the API.", span, None, 2_000, count)
    assert result.restored > 0
    assert key not in result.text and "[redacted]" in result.text


def test_of_a_long_output_the_values_shaped_like_no_other_line_are_the_ones_kept() -> None:
    # Forty numeric settings of one shape; the version and the one odd setting bury among them.
    crowd = [f"pool_size_{i} = {100 + i * 7}" for i in range(40)]
    config = "\n".join([*crowd[:13], 'engine_version = "15.4.2"', *crowd[13:27]])
    config += "\nbackup_retention_period = 14\n" + "\n".join(crowd[27:])
    log = "\n".join(f"{i:07x}a Tidy imports (sam)" for i in range(1, 30))
    log += "\n9d03f4c Bump okhttp to 4.12.0 (robin)\n" + log
    span = session(
        ("Reading it.", [("Read", {"file_path": "/infra/main.tf"}, config, False)]),
        ("History.", [("Bash", {"command": "git log --oneline"}, log, False)]),
    )
    values = " ".join(by_kind(extract(span), VALUE))
    assert "15.4.2" in values and "backup_retention_period = 14" in values
    assert "4.12.0" in values


def test_a_one_line_answer_is_the_outcome_of_its_command() -> None:
    span = session(
        (
            "Versions and sizes.",
            [
                ("Bash", {"command": "node --version"}, "v20.11.1", False),
                ("Bash", {"command": "wc -l a.csv"}, "  88412 a.csv", False),
                ("Bash", {"command": "true"}, "", False),
            ],
        ),
    )
    ran = by_kind(extract(span), RAN)
    assert "node --version → v20.11.1" in ran
    assert "wc -l a.csv → 88412 a.csv" in ran
    assert "true → ok" in ran


def test_a_long_output_with_several_odd_values_keeps_six_of_them() -> None:
    crowd = [f"pool_size_{i} = {100 + i * 7}" for i in range(40)]
    odd = ['engine = "15.4.2"', "port = 6380", "region = eu-west-1a", "tier = db.r6g.xlarge"]
    odd += ["retention = 14d", "timeout = 75s"]
    config = "\n".join([*crowd[:20], *odd, *crowd[20:]])
    span = session(("Reading it.", [("Read", {"file_path": "/infra/main.tf"}, config, False)]))
    values = " ".join(by_kind(extract(span), VALUE))
    assert all(line in values for line in odd), values


def test_a_value_that_stands_out_of_a_long_output_outranks_its_crowd() -> None:
    # Thirty commits of one shape and one status line: the lag is what the output says, and a
    # short ledger keeps it before any commit id of the crowd.
    log = "\n".join(f"{sha1(str(i).encode()).hexdigest()[:7]} Tidy imports" for i in range(30))
    log += "\nsub_billing | replicating | lag 41 s"
    span = session(("Status.", [("Bash", {"command": "./status.sh"}, log, False)]))
    values = [e for e in extract(span) if e.kind == VALUE]
    lag = next(e for e in values if "lag 41 s" in e.text)
    crowd = [e for e in values if "Tidy imports" in e.text]
    assert crowd and all(lag.rank > e.rank for e in crowd)


def test_a_tables_rows_are_a_crowd_though_their_ids_shape_each_row_apart() -> None:
    # kubectl's pods: each row's generated ids give it a shape of its own, but the rows are one
    # table; the quota line after it is what the output says beside them.
    pods = [
        f"{ns} {app}-{sha1(str(i).encode()).hexdigest()[:9]}-{i:x}{i * 7 % 97:02d}b 1/1 Running"
        f" {i % 5} {i + 3}d 10.4{i % 8}.{i * 13 % 250}.{i * 7 % 250} gke-pool-{i % 3}-{i * 31:x}"
        for i, (ns, app) in enumerate(
            [("catalog", "coredns"), ("payments", "gateway"), ("ledger", "search-api")] * 12
        )
    ]
    output = "\n".join([*pods, "quota: pods 118/120"])
    span = session(("Pods.", [("Bash", {"command": "kubectl get pods -A -o wide"}, output, False)]))
    values = [e for e in extract(span) if e.kind == VALUE]
    quota = next(e for e in values if "118/120" in e.text)
    rows = [e for e in values if "Running" in e.text]
    assert rows and all(quota.rank > e.rank for e in rows), values
    assert table_rows(pods) == set(pods)
    assert table_rows(["a: 1", "b: 2"] * 8) == set()  # "key: value" lines are no table


# A cargo build's timings with one crate far ahead, and a tree naming that crate's version.
_TIMED_CRATE = "quarry-macros v0.9.2 (proc-macro) 143.7s 131.2s default,sqlx"
_TIMINGS = "\n".join(
    _TIMED_CRATE
    if i == 7
    else f"crate-{chr(97 + i) * 2} v1.{i}.0 (lib) {50 + i}.{i}s {9 + i}.0s std"
    for i in range(20)
)
_TIMINGS_CALL = ("Bash", {"command": "cargo build --timings"}, _TIMINGS, False)
_TREE = "quarry-cli v0.14.0\n└── quarry-macros v0.9.2 (proc-macro) (/src/crates/quarry-macros)"
_TREE_CALL = ("Bash", {"command": "cargo tree -i quarry-macros"}, _TREE, False)


def test_a_line_named_for_a_figure_is_its_own_entry_beside_a_later_line_of_its_version() -> None:
    # The compile time the reply names and a later tree line naming the crate's version share
    # the crate's version; the line chosen for its figure stays, with the figure as a needle.
    span = session(
        ("Timings.", [_TIMINGS_CALL]),
        ("quarry-macros is the 143.7 s crate at the top. Its users:", []),
        ("Tree.", [_TREE_CALL]),
    )
    values = [e for e in extract(span) if e.kind == VALUE]
    timed = [e for e in values if "143.7s" in e.text]
    assert timed and "143.7" in timed[0].needles, values
    assert any("└── quarry-macros v0.9.2" in e.text for e in values), values


def test_one_line_under_two_keys_is_merged_into_one_entry() -> None:
    line = _TIMED_CRATE
    chosen = make_entry(VALUE, line, 1, figure="143.7")
    read_back = make_entry(VALUE, line, 0)  # from an earlier summary: no figure to go by
    assert chosen.key != read_back.key
    merged = merge([msgspec.structs.replace(read_back, rank=68)], [chosen])
    assert [(e.order, e.rank) for e in merged] == [(1, 68)]  # the later, the higher rank
    # A lower line of the read-back key first moves it aside (restated); the chosen entry of
    # the same text then replaces that, and the line is said once.
    tree = make_entry(VALUE, "└── quarry-macros v0.9.2 (proc-macro)", 2)
    assert tree.key == read_back.key and tree.rank <= read_back.rank
    merged = merge([read_back], [tree, msgspec.structs.replace(chosen, order=3)])
    assert sorted(e.text for e in merged) == sorted([line, tree.text]), merged


def test_a_recompaction_keeps_an_earlier_line_a_later_one_shares_its_value_with() -> None:
    first = session(
        ("Timings.", [_TIMINGS_CALL]),
        ("quarry-macros is the 143.7 s crate. Remaining: add a note to CHANGELOG.md.", []),
    )
    earlier = apply_ledger("Goal: a faster build.", first, None, 2_000, count)
    assert "143.7s 131.2s" in earlier.text and "CHANGELOG.md" in earlier.text
    summary = Message(
        "s1", Role.USER, (TextContentBlock(summary_text("local:extractive", 0, earlier.text)),)
    )
    later = session(("Tree.", [_TREE_CALL]))
    span = (summary, Message("f", Role.ASSISTANT, (TextContentBlock("ok"),)), *later[1:])
    values = [e for e in extract(span) if e.kind == VALUE]
    assert any("143.7s 131.2s" in e.text for e in values), values
    assert any("└── quarry-macros" in e.text for e in values), values
    # The file read back goes by its path, at its rank, as when it was extracted.
    named = [e for e in values if "CHANGELOG.md" in e.text]
    assert [(e.needles, e.rank) for e in named] == [(("CHANGELOG.md",), NAMED_FILE_RANK)]


def test_of_one_error_repeated_through_an_output_its_latest_instance_is_kept() -> None:
    lines = [f'src/m{i}.py:{i}: error: Incompatible types (got "str{i}")' for i in range(8)]
    output = "\n".join([*lines, "Found 8 errors in 8 files"])
    span = session(("Types.", [("Bash", {"command": "mypy src"}, output, True)]))
    errors = by_kind(extract(span), ERROR)
    assert lines[-1] in errors and lines[0] not in errors


def test_every_distinct_error_of_an_output_is_kept_the_first_few_ranked_highest() -> None:
    words = ["unused import", "line too long", "unused variable", "none comparison"]
    words += ["redefined name", "bare except", "mutable default"]
    lines = [f"src/app.py:{i}:1: error: {w}" for i, w in enumerate(words, 1)]
    span = session(("Lint.", [("Bash", {"command": "ruff check ."}, "\n".join(lines), True)]))
    errors = [e for e in extract(span) if e.kind == ERROR]
    assert sorted(e.text for e in errors) == sorted(lines)
    command = next(e for e in extract(span) if e.kind == RAN)
    ranks = sorted((e.rank for e in errors), reverse=True)
    assert ranks[0] > command.rank > ranks[-1]  # the rest go before a command's "→ failed"...
    assert ranks[-1] > 70  # ...but before a command that merely ran


def test_a_failed_http_status_line_and_a_go_test_failure_are_error_lines() -> None:
    span = session(
        (
            "Checking.",
            [
                (
                    "Bash",
                    {"command": "curl -si localhost/health"},
                    "HTTP/1.1 503 Service Unavailable\nretry-after: 5",
                    False,
                ),
                (
                    "Bash",
                    {"command": "go test ./..."},
                    "--- FAIL: TestParse (0.00s)\nFAIL\tacme/p\t0.01s",
                    False,
                ),
            ],
        ),
    )
    errors = by_kind(extract(span), ERROR)
    assert "HTTP/1.1 503 Service Unavailable" in errors
    assert "--- FAIL: TestParse (0.00s)" in errors
    assert "go test ./... → failed" in by_kind(extract(span), RAN)


def test_commands_that_merely_ran_share_one_line_and_read_back_as_entries() -> None:
    span = session(
        (
            "Looking around.",
            [
                ("Bash", {"command": "git status"}, "nothing to commit, working tree clean", False),
                ("Bash", {"command": "ls src"}, "a.py\nb.py", False),
                ("Bash", {"command": "pytest -q"}, PYTEST_FAIL, True),
            ],
        ),
    )
    entries = extract(span)
    text = render(entries)
    assert "- ran ok: git status · ls src" in text.split("\n")
    assert "- ran: pytest -q → 1 failed, 3 passed" in text.split("\n")
    assert "→ ok" not in text  # said once, by the line's label
    back = split(f"Prose.\n\n{text}").entries
    assert sorted(e.text for e in back if e.kind == RAN) == sorted(by_kind(entries, RAN))
    assert sorted(e.key for e in back) == sorted(e.key for e in entries)


def test_room_a_long_entry_leaves_holds_shorter_ones_ranked_below_it() -> None:
    long_command = "psql -h db -c '" + "select 1; " * 12 + "' && pg_dump --schema-only -f x.sql"
    span = session(
        (
            "Work.",
            [
                ("Bash", {"command": "pytest"}, "E   KeyError: 'tenant_id'", True),
                ("Bash", {"command": long_command}, "", False),
                ("Read", {"file_path": "src/a.py"}, "pass", False),
            ],
        ),
    )
    prose = "Goal: find the tenant bug."
    without_long = render([e for e in extract(span) if not e.text.startswith("psql")], left_out=1)
    budget = count(f"{prose}\n\n{without_long}")
    result = apply_ledger(prose, span, None, budget, count)
    assert count(result.text) <= budget
    section = split(result.text)
    assert "src/a.py" in [e.text for e in section.entries]  # below the command, and it fits
    assert not any(e.text.startswith("psql") for e in section.entries)
    assert section.left_out == result.dropped == 1


def test_build_step_errors_and_panics_are_error_lines_and_a_report_heading_is_not() -> None:
    docker = (
        '#7 [3/5] RUN npm ci\n#7 ERROR: process "/bin/sh -c npm ci" did not complete: exit code: 1'
    )
    panic = "thread 'main' panicked at 'index out of bounds', src/main.rs:4:5"
    rspec = "Failures:\n\n  1) Order#total sums items\n     Failure/Error: expect(total).to eq(30)"
    span = session(
        (
            "Building.",
            [
                ("Bash", {"command": "docker build ."}, docker, False),
                ("Bash", {"command": "cargo run"}, panic, False),
                ("Bash", {"command": "rspec"}, rspec, False),
            ],
        ),
    )
    entries = extract(span)
    errors = by_kind(entries, ERROR)
    assert docker.split("\n")[1] in errors
    assert panic in errors and "cargo run → failed" in by_kind(entries, RAN)
    assert "Failure/Error: expect(total).to eq(30)" in errors and "Failures:" not in errors


def test_a_place_in_a_source_file_or_a_call_is_not_a_value() -> None:
    from engine.ledger.model import value_needles
    from engine.ledger.values import values_in

    # A traceback's "file:line" is not a port, nor a call's argument a setting's value.
    assert values_in("tests/test_models.py:183: accounts = parse(source, strict=True)") == []
    assert values_in("at com.acme.Foo.bar(Foo.java:42)") == []
    assert values_in("response = make_fixture(2)") == []
    # A grep hit reads as the line it found; a host's port is still a port.
    assert value_needles("billing_client/http.py:12:DEFAULT_TIMEOUT = 5")[0] == (
        "DEFAULT_TIMEOUT",
        "5",
    )
    assert values_in("connect to localhost:5432 failed") == ["5432"]
    assert "8080" in values_in("http://api.local:8080/health")


def test_what_an_error_line_says_indented_under_it_is_kept_with_it() -> None:
    jest = "\n".join(
        [
            "PASS src/a.test.tsx (1.3 s)",
            "FAIL src/screens/Pairing.test.tsx (12.0 s)",
            "  ● PairingScreen › shows retry after timeout",
            "",
            '    thrown: "Exceeded timeout of 5000 ms for a test."',
        ]
    )
    gradle = "> A failure occurred while executing CheckDuplicatesRunnable\n"
    gradle += "   > Duplicate class k.Jdk8Kt found in modules stdlib-1.9.24 and stdlib-jdk8-1.7.10"
    span = session(
        (
            "Tests.",
            [
                ("Bash", {"command": "npx jest"}, jest, True),
                ("Bash", {"command": "./gradlew assemble"}, gradle, True),
            ],
        ),
    )
    errors = {e.text: e.rank for e in extract(span) if e.kind == ERROR}
    assert "● PairingScreen › shows retry after timeout" in errors
    detail = "> Duplicate class k.Jdk8Kt found in modules stdlib-1.9.24 and stdlib-jdk8-1.7.10"
    assert detail in errors
    # Below the error lines themselves, above a command that merely ran.
    assert errors["FAIL src/screens/Pairing.test.tsx (12.0 s)"] > errors[detail] > 70


def test_a_log_line_naming_what_the_conversation_is_about_is_kept_around_that_name() -> None:
    # Forty purge lines of one template: the one for the sku the user asked about is the one
    # the work is about, and its purge id sits at the end of a long line.
    lines = [
        f"2026-12-07T03:{i:02d}:00Z INFO purge POST /purge/sku%3A{10000 + i * 7} status=200 "
        f'body={{"status": "ok", "id": "19283-17335-{4000000 + i}"}} took={i + 20}ms'
        for i in range(40)
    ]
    lines[23] = lines[23].replace(f"sku%3A{10000 + 23 * 7}", "sku%3A88120")
    messages = list(
        session(
            (
                "Reading the purge log.",
                [("Bash", {"command": "cat purge.log"}, "\n".join(lines), False)],
            )
        )
    )
    ask = Message("u-ask", Role.USER, (TextContentBlock("Why is page 88120 still stale?"),))
    span = (messages[0], ask, *messages[1:])
    values = by_kind(extract(span), VALUE)
    assert any("sku%3A88120" in v and "4000023" in v for v in values), values


def test_a_log_line_the_conversation_names_outranks_a_git_logs_commits() -> None:
    # A git log's commits carry ids and dates (specific kinds); the purge line for the sku the
    # user asked about carries only a bare id, but the work is about it: it goes in first.
    lines = [
        f"INFO purge POST /purge/sku%3A{10000 + i * 7} id={4000000 + i} took={i + 20}ms"
        for i in range(40)
    ]
    lines[23] = lines[23].replace(f"sku%3A{10000 + 23 * 7}", "sku%3A88120")
    log = "\n".join(
        f"{sha1(str(i).encode()).hexdigest()[:7]} 2026-11-{i + 1:02d} dev{i % 3} Fix item {i}"
        for i in range(6)
    )
    messages = list(
        session(
            (
                "Reading the history and the purge log.",
                [
                    ("Bash", {"command": "git log --oneline"}, log, False),
                    ("Bash", {"command": "cat purge.log"}, "\n".join(lines), False),
                ],
            )
        )
    )
    ask = Message("u-ask", Role.USER, (TextContentBlock("Why is page 88120 still stale?"),))
    span = (messages[0], ask, *messages[1:])
    values = [e for e in extract(span) if e.kind == VALUE]
    named = next(e for e in values if "sku%3A88120" in e.text)
    commits = [e for e in values if "2026-11-" in e.text]
    assert commits
    assert all(named.rank > e.rank for e in commits), (named.rank, [e.rank for e in commits])


def test_further_instances_of_one_error_template_in_an_output_rank_below_a_command() -> None:
    from engine.ledger.model import REPEAT_RANK

    names = ["orders", "invoices", "shipments", "warehouses", "addresses"]
    log = [f'ERROR: could not obtain lock on relation "{n}"' for n in names]
    log.append("ERROR: canceling statement due to statement timeout")
    span = session(("Log.", [("Bash", {"command": "tail pg.log"}, "\n".join(log), False)]))
    entries = extract(span)
    errors = {e.text: e.rank for e in entries if e.kind == ERROR}
    assert set(errors) == set(log)  # every distinct line is still kept while room lasts
    locks = sorted((errors[line] for line in log[:5]), reverse=True)
    assert locks[0] > 70 and locks[1:] == [REPEAT_RANK] * 4
    assert errors[log[5]] > 70  # another kind of error is not a repeat


def test_a_long_logs_distinct_error_lines_are_kept_when_room_allows_after_the_settings() -> None:
    # A log of 30 distinct lock errors (one per relation), a setting and a bare timing: with the
    # room a short prose leaves, every line is in the section; with less, the setting goes
    # before the lines past the output's tenth, and they rank above the bare timing.
    names = [f"table_{chr(97 + i % 26)}{chr(97 + i // 26)}" for i in range(30)]
    log = [f'ERROR: could not obtain lock on relation "{n}"' for n in names]
    conf = "lock_timeout = 4500ms"
    span = session(
        (
            "The log and the config.",
            [
                ("Bash", {"command": "tail -n 400 pg.log"}, "\n".join(log), False),
                ("Read", {"file_path": "/etc/pg/conf.d/locks.conf"}, conf, False),
                ("Read", {"file_path": "/data/p95.txt"}, "412ms", False),
            ],
        )
    )
    entries = extract(span)
    assert set(by_kind(entries, ERROR)) == set(log)
    timing = next(e for e in entries if e.text == "412ms")
    assert min(e.rank for e in entries if e.kind == ERROR) > timing.rank
    roomy = apply_ledger("We read the log.", span, None, 2_000, count)
    assert all(line in roomy.text for line in log) and "412ms" in roomy.text, roomy.text
    # Room for about half of them: the setting is in, the lines past an output's tenth are not.
    tight = apply_ledger("We read the log.", span, None, 320, count)
    assert "4500ms" in tight.text, tight.text
    assert 10 <= sum(line in tight.text for line in log) < 20, tight.text


def test_a_ledger_reads_the_environments_secrets_once_and_redacts_every_entry_by_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each entry is redacted; the environment is read once for the whole span, not per entry.
    import engine.redaction as redaction

    secret = "tok-" + "q7" * 12
    monkeypatch.setenv("METIS_TEST_API_TOKEN", secret)
    reads = []
    secrets_in_use = redaction.secrets_in_use

    def counted() -> list[str]:
        reads.append(1)
        return secrets_in_use()

    monkeypatch.setattr(redaction, "secrets_in_use", counted)
    log = "\n".join(f"ERROR: token {secret} refused by shard {n}a" for n in "bcdefgh")
    span = session(("Log.", [("Bash", {"command": f"auth --token {secret}"}, log, True)]))
    entries = extract(span)
    assert len(entries) >= 5 and reads == [1]
    assert all(secret not in e.text for e in entries)
    assert any("[redacted]" in e.text for e in entries)


def test_a_quoted_message_is_not_a_name_two_messages_are_two_errors() -> None:
    log = [
        'level=error msg="forward failed" err="upstream returned 503"',
        'level=error msg="jwks refresh failed" err="dial tcp: connection refused"',
    ]
    span = session(("Log.", [("Bash", {"command": "kubectl logs gw"}, "\n".join(log), False)]))
    ranks = [e.rank for e in extract(span) if e.kind == ERROR]
    assert len(ranks) == 2 and min(ranks) > 70


def test_a_stack_frame_under_an_error_is_not_its_detail() -> None:
    output = "BleError: Bluetooth is powered off\n    at BleManager._call (src/ble.js:1104:13)"
    span = session(("Tests.", [("Bash", {"command": "npx jest"}, output, True)]))
    errors = by_kind(extract(span), ERROR)
    assert errors == ["BleError: Bluetooth is powered off"]


def test_a_runners_progress_is_no_value_and_code_under_an_error_no_detail() -> None:
    output = "\n".join(
        [
            "tests/test_retry.py F. [ 30%]",
            "tests/test_models.py .. [100%]",
            "_______ test_no_retry_on_client_error _______",
            "    def test_no_retry_on_client_error():",
            "E   AssertionError: expected 1 call, got 4",
        ]
    )
    span = session(("Tests.", [("Bash", {"command": "pytest"}, output, True)]))
    entries = extract(span)
    assert not any("%]" in v for v in by_kind(entries, VALUE))
    assert not any(e.startswith("def ") for e in by_kind(entries, ERROR))


def test_numbers_said_in_passing_are_values_as_people_say_them() -> None:
    # Units written out, counts grouped by thousands, a time of day: each the value of its
    # sentence (its needle), not a bare fragment of it ("400" of "3,400") or no value at all.
    said = (
        "CI says the Android job now takes 22 minutes, it was 14 before the bump. "
        "For scale: about 3,400 SKUs change price in a typical nightly run. "
        "Sunday 03:00 UTC it is."
    )
    span = (
        Message("u0", Role.USER, (TextContentBlock(said),)),
        Message("a0", Role.ASSISTANT, (TextContentBlock("Noted."),)),
    )
    needles = {e.needles for e in extract(span) if e.kind == VALUE}
    assert {("22 minutes",), ("3,400",), ("03:00",)} <= needles, needles


def test_an_error_whose_template_the_prose_states_goes_after_a_command() -> None:
    # Two logs, each with its lock error: the prose quotes one; the other's instance (another
    # relation) tells less than the migration command the prose left out.
    lock = 'ERROR: could not obtain lock on relation "{}"'
    span = session(
        (
            "Logs and the migration.",
            [
                ("Bash", {"command": "tail primary.log"}, lock.format("orders"), False),
                ("Bash", {"command": "tail replica.log"}, lock.format("invoices"), False),
                ("Bash", {"command": "alembic -c deploy/alembic.ini upgrade head"}, "done", False),
            ],
        )
    )
    prose = f"Summary.\n- {lock.format('orders')}\n- tail primary.log\n- tail replica.log"
    # Room for the one entry or the other: the longer, the error, would fit alone.
    error = f"- error: {lock.format('invoices')}"
    room = f"{prose}\n\n{HEADING}\n{error}\n(+1 more ledger entries left out)"
    result = apply_ledger(prose, span, None, count(room), count)
    assert "alembic -c deploy/alembic.ini upgrade head" in result.text, result.text
    assert lock.format("invoices") not in result.text


def test_a_long_error_line_loses_the_asides_that_restate_its_values_before_its_tail() -> None:
    line = (
        "ERROR: Duplicate class kotlin.collections.jdk8.CollectionsJDK8Kt found in modules "
        "kotlin-stdlib-1.9.24 (org.jetbrains.kotlin:kotlin-stdlib:1.9.24) and "
        "kotlin-stdlib-jdk8-1.7.10 (org.jetbrains.kotlin:kotlin-stdlib-jdk8:1.7.10)"
    )
    span = session(("Build.", [("Bash", {"command": "./gradlew assemble"}, line, True)]))
    errors = by_kind(extract(span), ERROR)
    assert errors == [
        "ERROR: Duplicate class kotlin.collections.jdk8.CollectionsJDK8Kt found in modules "
        "kotlin-stdlib-1.9.24 and kotlin-stdlib-jdk8-1.7.10"
    ], errors
    # An aside that says something new stays: "(exit 137)" names no value said before it.
    short = "ERROR: worker killed (exit 137) while writing chunk 18 of 40"
    span = session(("Run.", [("Bash", {"command": "make run"}, short, True)]))
    assert by_kind(extract(span), ERROR) == [short]


def test_an_upper_case_hex_id_is_a_value_of_its_own() -> None:
    # A replication slot's LSN (4F1/9B22D0C8), an address: the id, not the row's bare count,
    # is the row's value, so an error line that carries the count does not stand for the row.
    rows = [
        f" slot_{i:<12} | logical | t | {889000000 + i * 977} | 5C0/{0x6FCB5D45 + i * 4099:08X}"
        for i in range(10)
    ]
    rows[4] = " debezium_analytics | logical | f | 861203101 | 4F1/9B22D0C8"
    vacuum = "WARNING: oldest xmin 861203101 is far in the past\nERROR: dead rows not removable"
    span = session(
        (
            "Checking the slots.",
            [("Bash", {"command": "psql -c 'TABLE slots'"}, "\n".join(rows), False)],
        ),
        (
            "The debezium_analytics slot looks stale.",
            [("Bash", {"command": "vacuumdb"}, vacuum, True)],
        ),
    )
    values = by_kind(extract(span), VALUE)
    assert any("9B22D0C8" in v for v in values), values


def test_a_row_naming_a_hyphenated_name_or_a_prefix_the_conversation_uses_is_kept() -> None:
    # Forty rows of one shape: the two the conversation names, by a bucket's hyphenated name
    # and by a key prefix, are what the work is about.
    rows = [f"bucket-{i:02d} | objects/{i:02d}/ | {1000 + i * 37}.{i:02d}" for i in range(40)]
    rows[11] = "media-uploads | objects/11/ | 11284.19"
    rows[29] = "bucket-29 | renditions/tmp/ | 214.87"
    ask = "Why did media-uploads grow? Size what sits under renditions/tmp/ too."
    span = (
        Message("u-ask", Role.USER, (TextContentBlock(ask),)),
        *session(("Querying.", [("Bash", {"command": "athena query"}, "\n".join(rows), False)]))[
            1:
        ],
    )
    values = [e for e in extract(span) if e.kind == VALUE]
    named = [e for e in values if e.rank == TOP_VALUE_RANK]
    assert any("11284.19" in e.text for e in named), values
    assert any("214.87" in e.text for e in named), values


def test_a_decimal_or_version_the_conversation_cites_names_its_output_line() -> None:
    rows = [
        f"crate-{i:02d} v0.{i}.0 (lib)  {10 + i * 1.3:.1f}s  {4 + i * 0.7:.1f}s" for i in range(40)
    ]
    rows[7] = "quarry-macros v0.9.2 (proc-macro)  143.7s  131.2s"
    rows[30] = "syn v1.0.109 (lib)  18.4s  9.9s"
    said = "A second copy of syn (1.0.109) came in; that is the 143.7 s crate at the top."
    span = (
        *session(
            (
                "Timing the build.",
                [("Bash", {"command": "cargo build --timings"}, "\n".join(rows), False)],
            )
        ),
        Message("a-said", Role.ASSISTANT, (TextContentBlock(said),)),
    )
    named = [e.text for e in extract(span) if e.kind == VALUE and e.rank == TOP_VALUE_RANK]
    assert any("143.7s" in text for text in named), named
    assert any("syn v1.0.109" in text for text in named), named


def test_an_absolute_path_names_its_line_and_a_short_fraction_or_word_names_none() -> None:
    from engine.ledger.values import named_lines, named_terms

    lines = [f"{i:04d} /etc/app/conf.d/site-{i}.conf ok" for i in range(30)]
    lines[12] = "0012 /etc/nginx/nginx.conf reloaded I/O 3/4"
    named = named_terms(["I edited /etc/nginx/nginx.conf; I/O is 3/4 and/or 1.0 of it."])
    assert named_lines(lines, named) == {lines[12]: "/etc/nginx/nginx.conf"}
    assert not {"I/O", "3/4", "and/or", "1.0"} & named


def test_the_one_figure_far_ahead_of_its_column_stands_out_of_its_crowd() -> None:
    # A hundred timed requests of one shape, one of them a five-second stall: its line is the
    # one the work is about. The request numbers grow line by line and single out none.
    rows = [
        f"{i:03d} code=200 time_namelookup: 0.00{i % 7 + 1}2 time_total: 0.1{i % 9}3"
        for i in range(100)
    ]
    rows[57] = "057 code=200 time_namelookup: 5.012874 time_total: 5.139205"
    timings = "\n".join(rows)
    span = session(("Timing a loop.", [("Bash", {"command": "./loop.sh"}, timings, False)]))
    values = [e for e in extract(span) if e.kind == VALUE]
    assert any("5.012874" in e.text for e in values), [e.text for e in values]
    stall = next(e for e in values if "5.012874" in e.text)
    assert all(stall.rank >= e.rank for e in values)


def test_a_column_without_a_figure_far_ahead_singles_out_no_line() -> None:
    # Ids and times that grow line by line, and counts spread evenly: no line leads its column.
    rows = [
        f"cpu={i} found={(i * 37) % 60} insert_failed={900 + (i * 611) % 8900}" for i in range(16)
    ]
    assert outlying(rows) == {}
    rows[11] = "cpu=11 found=52 insert_failed=18734"
    assert outlying(rows) == {rows[11]: "18734"}
    # A pathological line is read in linear time.
    assert outlying(["1." * 2_000] * 8 + ["9" * 4_000] * 8) == {}


def test_an_error_class_is_read_in_its_own_case_and_a_word_ending_in_error_is_none() -> None:
    # cargo's timings name the thiserror crate; a DNS log answers NOERROR: neither went wrong.
    output = "\n".join(
        [
            "thiserror-impl v2.0.3 build-script (run) 55.3s 51.4s default",
            '[INFO] 10.40.59.64:39514 - 59552 "A IN vault.svc. udp 80 false 512" NOERROR qr,aa,rd',
            "OSError: [Errno 28] No space left on device",
            "java.lang.NullPointerException at Foo.bar",
            "shard 3: db_error=timeout",
        ]
    )
    span = session(("Building.", [("Bash", {"command": "./build.sh"}, output, False)]))
    errors = by_kind(extract(span), ERROR)
    assert not any("thiserror" in e or "NOERROR" in e for e in errors), errors
    assert any(e.startswith("OSError") for e in errors)
    assert any("NullPointerException" in e for e in errors)
    assert any("db_error" in e for e in errors)


def test_a_key_value_line_is_no_runners_tally() -> None:
    # "early_drop=0 error=9" reads "0 error" only across two keys: the line is a per-CPU
    # counter row, not a test run's totals, and its command did not end in "0 error".
    rows = [f"cpu={i} insert=0 insert_failed={900 + i * 37} early_drop=0 error=9" for i in range(4)]
    span = session(("Counters.", [("Bash", {"command": "conntrack -S"}, "\n".join(rows), False)]))
    entries = extract(span)
    assert "conntrack -S → ok" in by_kind(entries, RAN)
    assert any("insert_failed=1011" in v for v in by_kind(entries, VALUE))
    tally = session(
        ("Tests.", [("Bash", {"command": "pytest"}, "== 1 failed, 3 passed ==", False)])
    )
    assert "pytest → 1 failed, 3 passed" in by_kind(extract(tally), RAN)


def test_a_value_closing_a_sentence_is_read_without_the_period() -> None:
    # A reply states what it set as its sentence's last word: the period ends the value.
    text = "The loader now uses maxBatchSize: 250. Redis is on 7.2.4. Hit rate was 0.881."
    span = (Message("a-said", Role.ASSISTANT, (TextContentBlock(text),)),)
    needles = [n for e in extract(span) if e.kind == VALUE for n in e.needles]
    assert {"250", "7.2.4", "0.881"} <= set(needles), needles
    # Still no piece of an address or a file name.
    assert values_in("host 10.4.2.17 serves file 1.2.3.tar") == []


def test_each_figure_a_sentence_gives_in_passing_is_kept_in_its_own_clause() -> None:
    said = (
        "For context, the catalog pushes around 9,200 updates a minute at peak, the nightly feed "
        "lands at 02:30 UTC, and last time the whole reindex on the old cluster took 41 minutes."
    )
    span = (Message("u-ask", Role.USER, (TextContentBlock(said),)),)
    values = by_kind(extract(span), VALUE)
    for figure, words in (("9,200", "updates"), ("02:30", "lands"), ("41 minutes", "reindex")):
        assert any(figure in v and words in v for v in values), (figure, values)


def test_a_figure_said_in_passing_keeps_the_output_line_that_showed_it() -> None:
    # The query printed "(1286 rows)"; a later recap names the figure beside another: the
    # output's line, which says what it counted, stays the entry for it.
    rows = "\n".join(f"{i} | user{i}" for i in range(12)) + "\n(1286 rows)"
    recap = (
        "Status: the backfill runs in 500-row batches with a pause between them on the replica, "
        "the unique index is built concurrently afterwards, and the 1286 colliding groups are "
        "merged into their older account."
    )
    messages = session(("Counting.", [("Bash", {"command": "psql -f dupes.sql"}, rows, False)]))
    span = (*messages, Message("a-recap", Role.ASSISTANT, (TextContentBlock(recap),)))
    values = by_kind(extract(span), VALUE)
    assert any("(1286 rows)" in v for v in values), values
    assert any("500-row" in v for v in values), values


def test_a_value_said_again_less_specifically_keeps_its_specific_line_to_fill_room() -> None:
    first = "Correction: the script now throttles at requests_per_second=3200, a third of peak."
    recap = (
        "Summary for the team: the new index uses external versions and a 3200 requests per "
        "second throttle, and the read alias stays where it is."
    )
    span = (
        Message("a1", Role.ASSISTANT, (TextContentBlock(first),)),
        Message("u1", Role.USER, (TextContentBlock("ok"),)),
        Message("a2", Role.ASSISTANT, (TextContentBlock(recap),)),
    )
    values = [e for e in extract(span) if e.kind == VALUE]
    specific = [e for e in values if "requests_per_second=3200" in e.text]
    restated = [e for e in values if "3200 requests per second" in e.text]
    assert specific and restated, [e.text for e in values]
    # The later statement stays the value's entry; the specific one fills only room left.
    assert specific[0].rank <= RESTATED_RANK


def test_a_limit_said_in_words_stays_though_a_command_carries_its_value() -> None:
    limit = "And MSRV stays at 1.74.0, customers build from source with Debian's rustc."
    messages = session(
        (
            "Pinning the toolchain.",
            [("Bash", {"command": "rustup override set 1.74.0"}, "override set", False)],
        )
    )
    span = (*messages, Message("u-limit", Role.USER, (TextContentBlock(limit),)))
    values = by_kind(extract(span), VALUE)
    assert any("Debian" in v and "1.74.0" in v for v in values), values


def _job_log(warning: str) -> str:
    """Sidekiq-like lines whose thread ids (letters, digits or both) give them many shapes, and
    one warning that says what no other line says, far into its line."""
    tids = ["7f6f9", "cddde", "00185", "a1b2c", "9e9e9", "bfdbd", "3c4d5", "e0e0e", "12ab3"]
    lines = [
        f"2026-11-0{1 + i % 3}T0{i % 10}:{i:02d}:00.{i:03d}Z pid={10 + i} tid={tids[i % 9]}"
        f" class=ReminderJob jid={sha1(str(i).encode()).hexdigest()[:24]} INFO: done: {i}.5 sec"
        for i in range(60)
    ]
    lines[37] = (
        f"2026-11-01T06:30:04.118Z pid=31 tid=7fq2 class=ReminderJob jid={'4be0c1d2' * 3} WARN: "
        f"{warning}"
    )
    return "\n".join(lines)


def test_a_long_log_line_is_read_around_the_words_only_it_says() -> None:
    warning = "TZInfo::AmbiguousTime: 2026-11-01 01:30:00 is an ambiguous local time."
    span = session(("Jobs.", [("Bash", {"command": "cat jobs.log"}, _job_log(warning), False)]))
    values = by_kind(extract(span), VALUE)
    assert any("TZInfo::AmbiguousTime" in v for v in values), values


def test_a_table_row_with_blank_fields_whose_figure_leads_its_column_stands_out() -> None:
    # Rows shaped apart by their member ids' letters and digits; the one partition nobody holds
    # has dashes for its member and a lag far ahead of every other row's.
    ids = ["b2897d48-a4f4", "fe2211fe-c4b2", "5e88cdbc-bbbb", "36a1dd47-0a5a", "c3a0e003-e0e3"]
    rows = [
        f"billing invoices {i} {10_000_000 + i * 3_500_000} {10_000_500 + i * 3_500_000 + i * 37}"
        f" {500 + i * 37} consumer-{i % 8}-{ids[i % 5]} /10.42.0.{i} client-{i % 8}"
        for i in range(24)
    ]
    rows[17] = "billing invoices 17 61822014 63662235 1840221 - - -"
    assert outlying(rows).get(rows[17]) == "1840221"


def test_a_conversation_gives_counts_with_their_nouns_days_and_hours() -> None:
    said = (
        "Support has had 57 tickets since Monday. The branch is cut on December 15. "
        "The review is at 4pm today. I looked at 3 of them."
    )
    span = (Message("u-ask", Role.USER, (TextContentBlock(said),)),)
    values = by_kind(extract(span), VALUE)
    for figure in ("57 tickets", "December 15", "4pm"):
        assert any(figure in v for v in values), (figure, values)
    assert not any("3 of them" in v for v in values), values  # a number, not a figure
    assert values_in("I looked at 3 of them", spoken=True) == []


def test_a_record_dumps_lone_setting_is_read_and_a_configs_settings_stay_a_crowd() -> None:
    records = [
        {"fieldName": f"field{i}", "startOffset": 1200 + i * 917, "duration": 40_000 + i * 7919}
        for i in range(40)
    ]
    dump = json.dumps({"resolvers": records, "diagnostics": {"sqlQueries": 1187}}, indent=2)
    span = session(("Tracing.", [("Bash", {"command": "curl -s localhost/graphql"}, dump, False)]))
    assert any('"sqlQueries": 1187' in v for v in by_kind(extract(span), VALUE))
    # A config's names are each set once: none stands out for it.
    config = "\n".join(f"setting_{i}: {100 + i}" for i in range(40))
    assert lone_settings(config.splitlines()) == set()


def test_a_figure_said_in_passing_ranks_with_the_values_outputs_show() -> None:
    said = (
        "Fleet numbers: there are 41,300 devices in the field, the update went out to 3,120 of "
        "them before ops stopped it, and 573 haven't checked in since."
    )
    span = (Message("u-ask", Role.USER, (TextContentBlock(said),)),)
    passing = next(e for e in extract(span) if e.kind == VALUE and "573" in e.text)
    assert "41,300" not in passing.text
    assert passing.rank >= 56  # not below a long output's values, which fill the room first


@pytest.mark.parametrize(
    ("said", "value"),
    [
        ("The refunds cost us €1,870 so far.", "€1,870"),
        ("The bill came to $4.2k last month.", "$4.2k"),
        ("Each seat is $9.99.", "$9.99"),
        ("We ingest 1.2M events a day.", "1.2M"),
        ("It handles 10k requests.", "10k"),
        ("The queue holds 3x the normal volume.", "3x"),
        ("p95 went up 2.5x after the deploy.", "2.5x"),
        ("It started at 2 a.m. on Sunday.", "2 a.m."),
        ("That is 14 percent of checkout traffic.", "14 percent"),
        ("Throughput rose 3x.", "3x"),
        ("It handled 10k.", "10k"),
    ],
)
def test_money_scaled_counts_multiples_and_spelled_units_are_values(said: str, value: str) -> None:
    assert value in values_in(said, spoken=True)


@pytest.mark.parametrize(
    "line", ["WHERE id = $1", "ANY($12)", "mov 0x1F, eax", "image 1920x1080", "sha 3e4x"]
)
def test_placeholders_hex_and_dimensions_are_no_money_or_multiple(line: str) -> None:
    assert values_in(line, spoken=True) == []


_EXTRACT_SETS = """
import sys
from engine.ledger import extract
from tests.perf.quality.bench import SETS
for name in sys.argv[1]:
    for session in SETS[name]:
        for entry in extract(tuple(session.build())):
            print(entry.kind, entry.rank, entry.key, entry.text, sep="\\t")
"""


def test_the_ledger_is_the_same_whatever_the_hash_seed() -> None:
    # The ledger is a function of the span (and an input of the cache key): no set's order may
    # choose a line's window, needles or rank. Long sessions name several terms a line.
    root = Path(__file__).resolve().parents[2]
    outputs = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)}
        done = subprocess.run(
            [sys.executable, "-c", _EXTRACT_SETS, "JK"],
            capture_output=True, text=True, env=env, cwd=root, check=True, timeout=120,
        )  # fmt: skip
        outputs.add(done.stdout)
    assert len(outputs) == 1 and len(next(iter(outputs)).splitlines()) > 200


def test_a_file_the_conversation_names_is_an_entry_that_goes_by_its_path() -> None:
    span = session(
        ("Fixed the cut. Remaining: add a regression note to CHANGELOG.md.", []),
        ("Should docs/setup.md say so too?", []),  # a question states nothing
        ("It speaks TCP/IP and/or UDP.", []),  # word pairs, no file
    )
    values = [e for e in extract(span) if e.kind == VALUE]
    named = [e for e in values if "CHANGELOG.md" in e.text]
    assert [e.needles for e in named] == [("CHANGELOG.md",)], values
    assert not any("docs/setup.md" in e.text or "TCP/IP" in e.text for e in values), values
    # A prose that drops the plan gets the file back; one that names the file does not.
    assert "CHANGELOG.md" in apply_ledger("Goal: fix the cut.", span, None, 2_000, count).text
    stated = apply_ledger("Open: a note in CHANGELOG.md.", span, None, 2_000, count)
    assert stated.text.count("CHANGELOG.md") == 1
    # A plan naming three files leaves the text's figures their room.
    plan = (
        "The cold build takes 22 minutes on CI. Next I will update engine/cache.py. Then "
        "tests/test_cache.py gets a case. Finally docs/cache.md needs a note."
    )
    texts = [e.text for e in extract(session((plan, []))) if e.kind == VALUE]
    assert any("22 minutes" in t for t in texts), texts
    assert sum(".py" in t or ".md" in t for t in texts) == 3, texts
