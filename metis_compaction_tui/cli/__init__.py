"""The `metis-compaction-tui` command. `main` imports the parser only when called, so importing
this package costs nothing (not even `collections.abc`: the status line starts here)."""

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: "Sequence[str] | None" = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["statusline"]:
        # Run by an agent on every update: dispatched before the full CLI is imported.
        from metis_compaction_tui.statusline import main as statusline_main

        return statusline_main(args[1:])
    if args in (["-h"], ["--help"]):
        # The overview page, without argparse (cli.overview): the first thing a new user runs.
        from metis_compaction_tui.cli.overview import overview

        sys.stdout.write(overview())
        return 0
    if args in (["inspect", "-h"], ["inspect", "--help"]):
        # argparse's page for it, without argparse (cli.help_pages): what a new user runs next.
        from metis_compaction_tui.cli.help_pages import inspect_help

        sys.stdout.write(inspect_help())
        return 0
    from metis_compaction_tui.cli.dispatch import main as dispatch_main

    return dispatch_main(argv)
