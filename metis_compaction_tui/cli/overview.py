"""The command's name, its subcommands' one-line help, and the top-level `--help` page, written
without argparse: `metis-compaction-tui --help` imports this module and textwrap only. The
parser (cli.dispatch) takes the same texts from here."""

from __future__ import annotations

import os

PROG = "metis-compaction-tui"
USAGE = f"{PROG} [WORKSPACE]  |  {PROG} COMMAND [options]"
DESCRIPTION = (
    "Inspect and drive session compaction for metis dev. With no subcommand, open the inspector "
    "app on WORKSPACE (default: the current directory)."
)
EPILOG = f"`{PROG} WORKSPACE` is `{PROG} open WORKSPACE`; every subcommand has --help."
COMMAND_HELP = {
    "open": "open the inspector app on a workspace",
    "demo": "a temporary workspace with a simulated metis dev, and the app on it",
    "inspect": "the app on Claude Code / Codex transcripts, live; what-ifs never touch the file",
    "status": "each session's pressure, watermark, trigger decision and spend",
    "compact": "compact a session now (--dry-run: the span, tokens, cost, cache hit; no write)",
    "undo": "undo a session's latest compaction",
    "cache": "the workspace's compaction cache",
    "simulate": "run the simulated metis dev alone (for a second terminal)",
    "trust": "let this workspace's .metis/config.yaml, as it is now, set what runs code or picks "
    "the endpoint (summarizer.import, base_url, ...); any change needs trust again",
    "untrust": "forget a workspace's trust",
    # Run by cli.main before the parser is built; listed here for --help.
    "statusline": "one line for Claude Code's statusLine (JSON on stdin) or a metis workspace",
}


def terminal_columns() -> int:
    """shutil.get_terminal_size().columns, without importing shutil: COLUMNS when it is a
    positive number, else standard output's terminal, else 80."""
    import sys

    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _width() -> int:
    """As argparse's help formatter: COLUMNS, else the terminal's width, less 2."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit():
        width = int(columns)
    else:
        try:
            width = os.get_terminal_size(1).columns
        except OSError:
            width = 80
    return max(40, width - 2)


def overview() -> str:
    """The top-level help page, laid out as argparse lays out its own."""
    import textwrap

    width = _width()
    lines = [f"usage: {USAGE}", ""]
    lines += textwrap.wrap(DESCRIPTION, width)
    lines += ["", "positional arguments:", "  COMMAND"]
    name_width = max(len(name) for name in COMMAND_HELP if len(name) <= 8) + 2
    for name, text in COMMAND_HELP.items():
        indent = " " * (4 + name_width)
        body = textwrap.wrap(text, max(20, width - len(indent)))
        if len(name) + 2 > name_width:  # a long name has its help on the next line
            lines.append(f"    {name}")
            lines += [indent + part for part in body]
        else:
            lines.append(f"    {name.ljust(name_width)}{body[0]}")
            lines += [indent + part for part in body[1:]]
    lines += [
        "",
        "options:",
        "  -h, --help  show this help message and exit",
        "  --version   print the version and exit",
        "",
    ]
    lines += textwrap.wrap(EPILOG, width)
    return "\n".join(lines) + "\n"
