"""SIGTERM and SIGHUP end the app through its own exit path: the default
action killed the process at once, leaving the terminal in the alternate screen with mouse
tracking on. A handler on the event loop calls the app's quit, so Textual's shutdown writes the
sequences that restore the terminal.

A second signal while that exit is under way ends the process at once, by the signal's default
action: a shutdown can stick (seen when the terminal hung up and a TERM followed: Textual's
writer waited on a terminal that was gone), and a user or tmux sending it again means "now"."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable

EXIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def install_exit_signals(quit_app: Callable[[int], None]) -> Callable[[], None]:
    """Route EXIT_SIGNALS to `quit_app(128 + signum)` on the running loop; returns the undo."""
    loop = asyncio.get_running_loop()
    installed = []
    exiting = False

    def on_signal(sig: signal.Signals) -> None:
        nonlocal exiting
        if exiting:  # the graceful exit has not ended: do not wait on it
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
            return
        exiting = True
        quit_app(128 + int(sig))

    for sig in EXIT_SIGNALS:
        try:
            loop.add_signal_handler(sig, on_signal, sig)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, Windows
            continue
        installed.append(sig)

    def uninstall() -> None:
        for sig in installed:
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(sig)

    return uninstall
