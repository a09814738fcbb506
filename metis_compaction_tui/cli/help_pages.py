"""`inspect --help`, laid out as argparse lays out a subcommand's page, without argparse: the
first thing someone pointing the app at their transcripts runs, and argparse, gettext and locale
were most of its start. cli.dispatch builds the inspect parser from the same texts (the ones
below), and tests/cli compare the two pages at many widths.

The layout is argparse's HelpFormatter for a parser of optional flags and one optional
positional: its usage wrapping and its two-column option list."""

from __future__ import annotations

from metis_compaction_tui.cli.overview import PROG, terminal_columns
from metis_compaction_tui.defaults import DEFAULT_LIMIT

# engine.layout's config_path, relative to the workspace (a test holds the two together): the
# help pages do not import the engine, nor pathlib with it.
WORKSPACE_CONFIG = ".metis/config.yaml"

HELP_HELP = "show this help message and exit"  # argparse's own -h text
INSPECT_PATH_HELP = (
    "a transcript file or a folder of them (default: ~/.claude/projects, ~/.codex/sessions and "
    "~/.codex/archived_sessions)"
)
INSPECT_SCRATCH_HELP = (
    "where what-if compactions keep their cache (default: ~/.cache/metis-compaction-tui/inspect)"
)
KNOB_SCOPE = "on a store, applies to this run only and is never saved"
LIMIT_HELP = f"transcripts only: of a folder, the N most recently written ({DEFAULT_LIMIT})"


def set_help(scope: str) -> str:
    return (
        "a knob or summarizer setting, e.g. threshold_tokens=150000 or "
        "summarizer.base_url=http://127.0.0.1:4000 (repeatable; over METIS_* and "
        f"{WORKSPACE_CONFIG}; {scope})"
    )


def workspace_flag_help(metavar: str) -> str:
    return f"{metavar} given as an option instead (the two must not differ)"


def inspect_help() -> str:
    """`metis-compaction-tui inspect --help`, as argparse writes it at this terminal's width."""
    # (usage part, invocation, help) in the order cli.dispatch adds them
    options = [
        ("[-h]", "-h, --help", HELP_HELP),
        ("[--set KNOB=VALUE]", "--set KNOB=VALUE", set_help(KNOB_SCOPE)),
        ("[--limit LIMIT]", "--limit LIMIT", LIMIT_HELP),
        ("[--workspace PATH]", "--workspace PATH, -w PATH", workspace_flag_help("PATH")),
        ("[--scratch SCRATCH]", "--scratch SCRATCH", INSPECT_SCRATCH_HELP),
    ]
    positionals = [("[path]", "path", INSPECT_PATH_HELP)]
    return _page(f"{PROG} inspect", options, positionals)


Entry = tuple[str, str, str]


def _page(prog: str, options: list[Entry], positionals: list[Entry]) -> str:
    """argparse.HelpFormatter.format_help for these entries, at argparse's width."""
    import textwrap

    width = terminal_columns() - 2
    lines = _usage(prog, [o[0] for o in options], [p[0] for p in positionals], width)
    max_help_position = min(24, max(width - 20, 4))
    longest = max(len(entry[1]) for entry in options + positionals) + 2  # the section's indent
    help_position = min(longest + 2, max_help_position)
    help_width = max(width - help_position, 11)
    action_width = help_position - 4
    for title, entries in (("positional arguments", positionals), ("options", options)):
        lines += ["", f"{title}:"]
        for _, invocation, text in entries:
            wrapped = textwrap.wrap(" ".join(text.split()), help_width)
            if len(invocation) <= action_width:
                lines.append(f"  {invocation:<{action_width}}  {wrapped[0]}")
            else:
                lines += [f"  {invocation}", " " * help_position + wrapped[0]]
            lines += [" " * help_position + line for line in wrapped[1:]]
    return "\n".join(lines) + "\n"


def _usage(prog: str, optionals: list[str], positionals: list[str], width: int) -> list[str]:
    """argparse's usage line, wrapped as it wraps one too long for the width (each part is a
    bracketed flag or positional, so its part pattern finds exactly these)."""
    prefix = "usage: "
    usage = " ".join([prog, *optionals, *positionals])
    if len(prefix) + len(usage) <= width:
        return [prefix + usage]

    def wrap(parts: list[str], indent: str, first: str | None = None) -> list[str]:
        out: list[str] = []
        line: list[str] = []
        length = len(first if first is not None else indent) - 1
        for part in parts:
            if length + 1 + len(part) > width and line:
                out.append(indent + " ".join(line))
                line, length = [], len(indent) - 1
            line.append(part)
            length += len(part) + 1
        if line:
            out.append(indent + " ".join(line))
        if first is not None:
            out[0] = out[0][len(indent) :]
        return out

    if len(prefix) + len(prog) <= 0.75 * width:
        indent = " " * (len(prefix) + len(prog) + 1)
        if optionals:
            lines = wrap([prog, *optionals], indent, prefix)
            lines += wrap(positionals, indent)
        elif positionals:
            lines = wrap([prog, *positionals], indent, prefix)
        else:
            lines = [prog]
    else:
        indent = " " * len(prefix)
        lines = wrap(optionals + positionals, indent)
        if len(lines) > 1:
            lines = wrap(optionals, indent) + wrap(positionals, indent)
        lines = [prog, *lines]
    return [prefix + lines[0], *lines[1:]]
