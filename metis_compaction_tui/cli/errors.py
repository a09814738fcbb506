"""The command line's own error, apart from the commands so that raising it imports nothing."""


class CliError(Exception):
    """One line on stderr and exit code 2: a missing workspace, a bad store, an unknown id."""
