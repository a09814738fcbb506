"""msgspec imported without `typing_extensions`, for the start of the commands and of the status
line's refreshers, which run often and briefly.

msgspec imports typing_extensions only for what `typing` itself has on Python 3.11+
(get_type_hints with include_extras, Required, NotRequired), and falls back to `typing` when it
is absent, as on any install without it. It is installed here because the anthropic SDK needs
it; importing it pulls in `inspect`, a large part of a short command's start. Nothing of ours
uses it; a library imported later gets it as usual.
"""

import sys


def import_msgspec() -> None:
    """Import msgspec as on an install without typing_extensions, unless either is loaded."""
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # its import now fails
    try:
        import msgspec  # noqa: F401
    finally:
        del sys.modules["typing_extensions"]
