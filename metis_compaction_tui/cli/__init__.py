"""The `metis-compaction-tui` command. `main` imports the parser only when called, so importing
this package costs nothing."""

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from metis_compaction_tui.cli.dispatch import main as dispatch_main

    return dispatch_main(argv)
