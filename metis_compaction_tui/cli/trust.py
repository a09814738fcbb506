"""`trust`, `trust --show` and `untrust`: the CLI face of engine.workspace_trust (the rule and the
record live there; this module only says what happened)."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

import msgspec

from engine import (
    read_record,
    record_path,
    resolve_config,
    trust_workspace,
    untrust_workspace,
)
from metis_compaction_tui.cli.errors import CliError
from metis_compaction_tui.cli.output import emit_json, one_line


def _folder(workspace: Path) -> Path:
    if not workspace.is_dir():
        raise CliError(f"workspace {workspace} does not exist or is not a folder")
    return workspace


def cmd_trust(workspace: Path, show: bool, as_json: bool, out: TextIO) -> int:
    if show:
        return cmd_trust_show(_folder(workspace), as_json, out)
    record, allowed = trust_workspace(_folder(workspace))
    if as_json:
        emit_json({**msgspec.to_builtins(record), "allows": allowed}, out)
        return 0
    out.write(f"trusted {one_line(record.config_file)} (sha256 {record.sha256[:16]})\n")
    if allowed:
        for key, value in allowed.items():
            out.write(f"  it may now set {key} = {one_line(str(value))}\n")
    else:
        out.write("  it sets nothing that needs trust\n")
    out.write("  any change to the file needs trusting again\n")
    return 0


def cmd_trust_show(workspace: Path, as_json: bool, out: TextIO) -> int:
    trust = resolve_config(workspace, environ={}).trust  # the file alone, as trust sees it
    record = read_record(workspace)
    if as_json:
        emit_json(
            {
                **msgspec.to_builtins(trust),
                "record": str(record_path(workspace)),
                "trusted_sha256": record.sha256 if record else None,
            },
            out,
        )
        return 0
    out.write(f"workspace  {one_line(trust.workspace)}\n")
    sha = f" (sha256 {trust.sha256[:16]})" if trust.sha256 else ""
    out.write(f"config     {one_line(trust.config_file)}{sha}\n")
    gated = ", ".join(trust.gated) or "none"
    out.write(f"trust      {trust.state}; settings that need trust: {gated}\n")
    if record is not None:
        same = "this content" if record.sha256 == trust.sha256 else "other content"
        out.write(f"record     {one_line(str(record_path(workspace)))} ({same})\n")
    if trust.state == "untrusted":
        out.write(f"  review the file, then `{one_line(trust.trust_command)}`\n")
    return 0


def cmd_untrust(workspace: Path, out: TextIO) -> int:
    if untrust_workspace(workspace):
        out.write(f"untrusted {one_line(str(workspace.resolve()))}\n")
    else:
        out.write(f"{one_line(str(workspace.resolve()))} was not trusted\n")
    return 0
