"""What a tool call does, read from its name and input alone: the shell command it runs, the file
it names and what it does to that file. The work ledger (engine.ledger.extraction) and the offline
summarizer (engine.summarizers.extractive_pool) both read calls here, so they say the same of one.

The shapes, as the importers store them: Claude Code's Bash ({"command": "..."}), Read, Write,
Edit, MultiEdit ({"file_path": ...}) and NotebookEdit ({"notebook_path": ...}); Codex's shell
({"command": ["bash", "-lc", "..."]}), exec_command ({"cmd": "..."}) and a local_shell call
stored whole ({"action": {"type": "exec", "command": [...]}}); any other tool by its name and a
path or command argument of a common name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

COMMAND_KEYS = ("command", "cmd", "script", "shell", "code", "query")
PATH_KEYS = (
    "file_path",
    "notebook_path",
    "path",
    "file",
    "filename",
    "target_file",
    "target",
    "dest",
)

FileAction = Literal["edited", "wrote", "read"]
_EDIT = re.compile(r"(?i)edit|patch|replace|insert|apply|rename|delete|move")
_WRITE = re.compile(r"(?i)write|create")
_READ = re.compile(r"(?i)read|view|open|cat\b|get_file|show|fetch")


def command_of(inputs: Mapping[str, object]) -> str | None:
    """The shell command a call runs: a string, or an argv (["bash", "-lc", "npm test"] reads
    as the script it runs); None for a call that runs none."""
    for key in COMMAND_KEYS:
        value = inputs.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list) and value and all(isinstance(a, str) for a in value):
            argv = [str(a) for a in value]
            if len(argv) >= 3 and argv[-2] in ("-c", "-lc"):
                return argv[-1]
            return " ".join(argv)
    action = inputs.get("action")
    if isinstance(action, dict) and "action" not in action:
        return command_of(action)
    return None


def path_of(inputs: Mapping[str, object]) -> str | None:
    """The file a call names, if any."""
    return next((str(inputs[k]) for k in PATH_KEYS if isinstance(inputs.get(k), str)), None)


def file_action(name: str) -> FileAction | None:
    """What a tool of this name does to the file it names; None when its name does not say."""
    if _EDIT.search(name):
        return "edited"
    if _WRITE.search(name):
        return "wrote"
    if _READ.search(name):
        return "read"
    return None
