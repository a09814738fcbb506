"""engine.policy.tool_calls: one reading of a tool call, by the work ledger and the offline
summarizer alike, on call shapes as the importers store Claude Code's and Codex's."""

from __future__ import annotations

import pytest

from engine.ledger import extract
from engine.ledger.model import EDITED, RAN, READ, WROTE
from engine.policy.tool_calls import command_of, file_action, path_of
from engine.summarizers.extractive_pool import build_pool
from tests.engine.test_ledger import by_kind, session


@pytest.mark.parametrize(
    ("inputs", "command"),
    [
        ({"command": "pytest -q", "description": "run the tests"}, "pytest -q"),  # Bash
        ({"command": ["bash", "-lc", "npm test"], "workdir": "/repo"}, "npm test"),  # shell
        ({"command": ["git", "status"]}, "git status"),
        ({"cmd": "ls -la", "yield_time_ms": 1000}, "ls -la"),  # exec_command
        ({"action": {"type": "exec", "command": ["ls", "-la"]}}, "ls -la"),  # local_shell
        ({"query": "SELECT count(*) FROM jobs"}, "SELECT count(*) FROM jobs"),
        ({"file_path": "/repo/a.py"}, None),
        ({"command": "   "}, None),
        ({"command": ["bash", 3]}, None),
        ({"action": {"action": {"command": "x"}}}, None),  # one level of nesting, no deeper
    ],
)
def test_the_command_a_call_runs(inputs: dict[str, object], command: str | None) -> None:
    assert command_of(inputs) == command


def test_the_file_a_call_names_and_what_it_does_to_it() -> None:
    assert path_of({"file_path": "/repo/a.py", "path": "/elsewhere"}) == "/repo/a.py"
    assert path_of({"notebook_path": "/repo/n.ipynb"}) == "/repo/n.ipynb"
    assert path_of({"dest": "out/x.txt"}) == "out/x.txt"
    assert path_of({"path": 3}) is None
    actions = {
        name: file_action(name)
        for name in ("Read", "Edit", "MultiEdit", "NotebookEdit", "Write", "str_replace_editor")
    }
    assert actions == {
        "Read": "read",
        "Edit": "edited",
        "MultiEdit": "edited",
        "NotebookEdit": "edited",
        "Write": "wrote",
        "str_replace_editor": "edited",
    }
    assert file_action("delete_file") == file_action("rename_file") == "edited"
    assert file_action("create_file") == "wrote"
    assert file_action("WebFetch") == "read"
    assert file_action("Glob") is None


def test_the_ledger_and_the_summarizer_read_a_call_alike() -> None:
    span = session(
        (
            "Cleaning up.",
            [
                ("delete_file", {"path": "/repo/old_limits.py"}, "deleted", False),
                ("sql", {"query": "SELECT count(*) FROM jobs"}, "count\n-----\n412", False),
                ("create_file", {"dest": "/repo/docs/jobs.md", "content": "# Jobs"}, "ok", False),
            ],
        )
    )
    entries = extract(span)
    assert by_kind(entries, EDITED) == ["/repo/old_limits.py"]
    assert by_kind(entries, WROTE) == ["/repo/docs/jobs.md"]
    assert by_kind(entries, READ) == []
    assert [text.split(" → ")[0] for text in by_kind(entries, RAN)] == ["SELECT count(*) FROM jobs"]
    pool = {candidate.text for candidate in build_pool(span, None)}
    assert "/repo/old_limits.py (edited)" in pool
    assert "/repo/docs/jobs.md (edited)" in pool
    assert any(text.startswith("SELECT count(*) FROM jobs") for text in pool)
