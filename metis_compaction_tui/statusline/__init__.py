"""`metis-compaction-tui statusline`: one line beside the agent (spec §12.3).

Claude Code runs the command on every update (debounced to 300 ms) and cancels a run still in
flight, so this half imports the standard library only: it reads stdin, the transcript's saved
figures (statusline.state) and prints. When the transcript grew since those figures were saved, a
detached refresher (statusline.refresh: the importers and the engine's trigger rule) brings them
up to date for the next call; `--sync` waits for it instead. Whatever goes wrong, the line says so
in a few words and the exit status is 0: the agent's screen must not break.
"""

from __future__ import annotations

import os
import sys

from metis_compaction_tui.statusline.render import (
    FIELD_NAMES,
    clean,
    render_json,
    render_line,
    render_template,
    unknown_fields,
)

USAGE = """usage: metis-compaction-tui statusline [WORKSPACE] [-w WORKSPACE] [--session ID]
                                      [--format TEMPLATE] [--json] [--no-color] [--width N]
                                      [--sync] [--settings]

With no WORKSPACE: reads Claude Code's statusLine JSON on stdin and prints one line.
With a metis WORKSPACE (or -w/--workspace WORKSPACE): the same line from its session store
(--session picks one; default: the most recently updated).
--format TEMPLATE: named fields in braces, e.g. '{{model}} {{ctx}}/{{window}}'; token counts are
  written as on the line (65k). The fields: {fields}.
--json: every field as JSON. --sync: bring the saved figures up to date before printing.
--settings: print the statusLine block for Claude Code's settings.json, naming this command.
Colour is off with --no-color or NO_COLOR; the width is --width, else COLUMNS, else the terminal.
"""

MARKER_NO_INPUT = "metis: no status input"
MARKER_FAILED = "metis: status unavailable"


class Options:
    __slots__ = (
        "as_json",
        "colour",
        "own_process",
        "print_settings",
        "refresh",
        "session",
        "sync",
        "template",
        "width",
        "workspace",
        "ws_refresh",
    )

    def __init__(self) -> None:
        self.workspace: str | None = None
        self.session: str | None = None
        self.template: str | None = None
        self.as_json = False
        self.print_settings = False
        self.colour = not os.environ.get("NO_COLOR")
        self.width: int | None = None
        self.sync = False
        # (state folder, transcript, model) when a refresher is to start once the line is out
        self.refresh: tuple[str, str, str] | None = None
        # (state folder, workspace, session asked for): the same for a metis workspace
        self.ws_refresh: tuple[str, str, str | None] | None = None
        self.own_process = False  # run as the command: the process ends with this call


_VALUED = ("--format", "--session", "--width", "--workspace", "-w")


def parse_args(argv: list[str]) -> Options | str:
    """Options, or a message for a bad command line (argparse would cost more than the rest)."""
    opts = Options()
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg.startswith("--") and "=" in arg and arg.split("=", 1)[0] in _VALUED:
            arg, value = arg.split("=", 1)  # --format=TEMPLATE
            args.insert(0, value)
        if arg in ("-h", "--help"):
            return USAGE.format(fields=", ".join(FIELD_NAMES))
        if arg == "--json":
            opts.as_json = True
        elif arg == "--no-color":
            opts.colour = False
        elif arg == "--sync":
            opts.sync = True
        elif arg == "--settings":
            opts.print_settings = True
        elif arg in _VALUED:
            if not args:
                return f"statusline: {arg} needs a value"
            value = args.pop(0)
            if arg == "--format":
                unknown = unknown_fields(value)
                if unknown:
                    return (
                        f"statusline: --format: no field named {{{clean(unknown[0], 40)}}}; "
                        f"the fields are {', '.join(FIELD_NAMES)}"
                    )
                opts.template = value
            elif arg == "--session":
                opts.session = value
            elif arg in ("-w", "--workspace"):
                if opts.workspace is not None and opts.workspace != value:
                    return "statusline: two workspaces given; give one"
                opts.workspace = value
            elif not value.isdigit() or int(value) < 10:
                return "statusline: --width needs a number of columns (10 or more)"
            else:
                opts.width = int(value)
        elif arg.startswith("-"):
            return f"statusline: unknown option {clean(arg, 40)}"
        elif opts.workspace is None:
            opts.workspace = arg
        elif opts.workspace != arg:
            return "statusline: two workspaces given; give one"
    return opts


COMMAND = "metis-compaction-tui"


def command_path() -> list[str]:
    """This command by absolute path, as the agent's shell is to run it: the console script
    that is running (sys.argv[0]), else the one on PATH, else this interpreter with -m."""
    import shutil

    started = sys.argv[0] if sys.argv else ""
    if os.path.basename(started) == COMMAND and os.path.isfile(started):
        return [os.path.abspath(started)]
    found = shutil.which(COMMAND)
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "metis_compaction_tui.cli"]


def settings_block() -> str:
    """The `statusLine` entry for Claude Code's settings.json, naming this command (quoted for
    the shell Claude Code runs it with)."""
    import json
    import shlex

    command = " ".join(shlex.quote(part) for part in [*command_path(), "statusline"])
    block = {"statusLine": {"type": "command", "command": command, "padding": 0}}
    return json.dumps(block, indent=2)


def line_width(opts: Options) -> int:
    """--width, COLUMNS, the controlling terminal (Claude Code's, since our stdout is a pipe)."""
    if opts.width:
        return opts.width
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) >= 10:
        return int(columns)
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
        try:
            return max(10, os.get_terminal_size(fd).columns)
        finally:
            os.close(fd)
    except OSError:
        return 120


def empty_fields() -> dict[str, object]:
    return dict.fromkeys(FIELD_NAMES)


def _pct(part: int, whole: int) -> int:
    return round(100 * part / whole) if whole else 0


def claude_fields(raw: bytes, opts: Options) -> dict[str, object] | None:
    from metis_compaction_tui.statusline.claude_input import parse_claude_input, window_for
    from metis_compaction_tui.statusline.state import (
        identify,
        load_line_state,
        state_dir,
        still_same_file,
    )

    got = parse_claude_input(raw)
    if got is None:
        return None
    f = empty_fields()
    f["source"] = "claude-code"
    f["model"] = clean(got.model_name, 40)
    f["session"] = clean(got.session_id, 40)
    f["ctx"] = got.context_tokens
    f["ctx_from"] = "claude-code" if got.context_tokens is not None else None
    saved = None
    if not got.transcript_path:
        f["note"] = "no transcript path"
    else:
        path = os.path.abspath(got.transcript_path)
        now = identify(path)
        if now is None:
            f["note"] = "transcript missing"
        else:
            directory = state_dir()
            saved = load_line_state(directory, path)
            if saved is not None and not still_same_file(saved, now):
                saved = None  # truncated or replaced: what we knew is about another file
            if saved is None or saved["seen"] != now.size:
                if opts.sync:
                    from metis_compaction_tui.statusline.refresh import refresh

                    refresh(path, directory, got.model_id, wait=True, ending=opts.own_process)
                    saved = load_line_state(directory, path)
                    if saved is not None and not still_same_file(saved, now):
                        saved = None
                else:
                    opts.refresh = (directory, path, got.model_id)  # after the line is out
            if saved is None:
                f["note"] = "reading transcript…"
            elif saved["error"]:
                f["note"] = clean(str(saved["error"]), 60)
                saved = None
    if saved is not None:
        for name in (
            "agent_compactions",
            "our_compactions",
            "last_before",
            "last_after",
            "soft_in",
            "pending",
            "threshold",
            "hard_cap",
            "compaction_usd",
        ):
            f[name] = saved[name]
        f["trigger"] = saved["trigger"] or None
        f["explain"] = clean(str(saved["explain"]), 200)
        f["stale"] = bool(saved["stale_usage"])
        if saved["cache_total"]:
            f["cache_pct"] = _pct(saved["cache_read"], saved["cache_total"])  # type: ignore[arg-type]
    if f["cache_pct"] is None and got.context_tokens:
        f["cache_pct"] = _pct(got.cache_read_tokens or 0, got.context_tokens)
    if got.context_tokens is None:
        # Null both at a session's start and right after /compact: the transcript tells which.
        f["stale"] = bool(saved is not None and saved["stale_usage"])
        if f["last_after"] is not None and f["stale"]:
            f["note"] = f["note"] or "context not measured since the compaction"
    ctx = got.context_tokens
    if not got.usage_said and saved is not None and not f["stale"]:
        # An older Claude Code: the context the transcript last recorded.
        ctx = saved["last_context"]  # type: ignore[assignment]
        if ctx is not None:
            f["ctx"], f["ctx_from"] = ctx, "transcript"
    window = got.window_tokens
    named = window_for(got.model_id, got.model_name)
    if window is None or named > window:
        window = named  # not said, or 200k said of a 1M session
        f["window_from"] = "model name"
    elif window:
        f["window_from"] = "claude-code"
    f["window"] = window
    if window:
        # The point Claude Code compacts at, by its documented rule (statusline.auto_compact).
        from metis_compaction_tui.statusline.auto_compact import auto_compact_point

        point = auto_compact_point(window, got.project_dir or None)
        auto_at = point.at
        f["auto_at"], f["auto_window"], f["auto_from"] = auto_at, point.window, point.source
        if point.notes and not f["note"]:
            f["note"] = clean(point.notes[0], 120)
        if ctx is not None:
            f["ctx_pct"] = _pct(ctx, window)
            f["auto_pct"] = _pct(ctx, auto_at)
            f["auto_left"] = auto_at - ctx
    return f


def refresh_running(lock_file: str) -> bool:
    """Is a refresher holding this lock? (Checked before spawning one, so a long first read is
    not joined by a new process on every update.)"""
    import fcntl

    try:
        fd = os.open(lock_file, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing releases a lock we took
    return False


# The refresher's start: msgspec as the commands import it (lean_msgspec), then its module.
REFRESHER_PRELUDE = (
    "import os, sys\n"
    "from metis_compaction_tui.lean_msgspec import import_msgspec\n"
    "import_msgspec()\n"
)
REFRESHER = (
    REFRESHER_PRELUDE + "from metis_compaction_tui.statusline.{module} import main\n"
    "os._exit(main(sys.argv[1:]))\n"  # its files are written and closed: skip the teardown
)


def spawn_refresh(directory: str, path: str, model: str, *, own_process: bool = False) -> None:
    """Start the refresher detached (its own session, no stdio), so this call returns now and
    Claude Code never waits for a parse."""
    from metis_compaction_tui.statusline.state import state_key

    if refresh_running(os.path.join(directory, state_key(path) + ".lock")):
        return  # one is reading this transcript now (a first read of a big file takes seconds)
    _spawn("refresh", [directory, path, *([model] if model else [])], own_process)


def spawn_ws_refresh(
    directory: str, workspace: str, session: str | None, *, own_process: bool = False
) -> None:
    """The same for a metis workspace (statusline.workspace_refresh)."""
    from metis_compaction_tui.statusline.workspace import state_file, store_file

    lock = state_file(directory, store_file(workspace), session) + ".lock"
    if refresh_running(lock):
        return
    args = [directory, os.path.abspath(workspace), *([session] if session is not None else [])]
    _spawn("workspace_refresh", args, own_process)


def _spawn(module: str, args: list[str], own_process: bool) -> None:
    # -P: the agent's working folder must not go first on sys.path (a project with its own
    # `engine/` or `msgspec.py` would be imported, and run, in our place).
    argv = [sys.executable, "-P", "-c", REFRESHER.format(module=module), *args]
    if any("\0" in arg for arg in argv):
        return  # a NUL byte (in the model id) cannot be passed: no refresh rather than no line
    env = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
    start_detached(argv, env, fork=own_process)


def start_detached(argv: list[str], env: dict[str, str], *, fork: bool = False) -> None:
    """`fork`: fork and exec, for the command itself, which is single-threaded and exits right
    after. posix_spawn (and subprocess) wait until the child has exec'd, and on a loaded
    machine the child waits for a core (1-8 ms measured, on every call that finds the
    transcript grown); a fork returns at once, and the child, adopted by init when we exit, is
    reaped there. Called inside another program (tests, with threads perhaps), posix_spawn:
    a forked child of a threaded process may block on a lock another thread held."""
    if not fork:
        null = os.devnull
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, null, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, null, os.O_WRONLY, 0),
        ]
        try:
            os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)
        except (OSError, ValueError):
            pass  # the next call tries again
        return
    try:
        pid = os.fork()
    except OSError:
        return  # the next call tries again
    if pid:
        return
    try:  # the child: never returns into the caller's code, whatever happens
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.execve(argv[0], argv, env)
    finally:
        os._exit(127)


def main(argv: list[str], stdin: object = None, stdout: object = None) -> int:
    """Always 0 with one line on stdout, except for a bad command line (2, usage on stderr)."""
    out = stdout if stdout is not None else sys.stdout
    opts = parse_args(argv)
    if isinstance(opts, str):
        if opts.startswith("usage:"):
            out.write(opts)  # type: ignore[attr-defined]
            return 0
        sys.stderr.write(opts + "\n")
        return 2
    if opts.print_settings:
        out.write(settings_block() + "\n")  # type: ignore[attr-defined]
        return 0
    # Run as the command (not called with streams, not under a test's capture)?
    opts.own_process = stdout is None and sys.stdout is sys.__stdout__
    try:
        if opts.workspace is not None:
            from metis_compaction_tui.statusline.workspace import workspace_fields

            fields, opts.ws_refresh = workspace_fields(opts.workspace, opts.session, sync=opts.sync)
        else:
            source = stdin if stdin is not None else sys.stdin.buffer
            try:
                # A terminal is not Claude Code: say so instead of waiting for input.
                interactive = stdin is None and sys.stdin.isatty()
                raw = b"" if interactive else source.read((1 << 20) + 1)  # type: ignore[attr-defined]
            except (OSError, ValueError, AttributeError):
                raw = b""
            fields = claude_fields(raw or b"", opts)
        if fields is None:
            text = MARKER_NO_INPUT
        elif opts.as_json:
            text = render_json(fields)
        elif opts.template is not None:
            text = render_template(opts.template, fields, line_width(opts))
        else:
            text = render_line(fields, line_width(opts), opts.colour)
    except Exception:
        text = MARKER_FAILED
    try:
        out.write(text + "\n")  # type: ignore[attr-defined]
        out.flush()  # type: ignore[attr-defined]
    except (OSError, ValueError):
        pass  # Claude Code cancelled us: nobody is reading
    own_process = opts.own_process
    if opts.refresh is not None or opts.ws_refresh is not None:
        if own_process:
            # Our stdio goes before the refresher starts: a child holding the agent's pipe
            # until it execs would hold its read of our line open as long (waiting for a core
            # on a loaded machine). Nothing is written after this.
            _let_go_of_stdio()
        try:
            if opts.refresh is not None:
                spawn_refresh(*opts.refresh, own_process=own_process)
            else:
                spawn_ws_refresh(*opts.ws_refresh, own_process=own_process)  # type: ignore[misc]
        except Exception:
            pass  # the next call tries again
    if own_process:
        # The line is out: exit without the interpreter's teardown (about 4 ms of CPU, more
        # than the line itself). After a fork it would also copy our memory, shared with the
        # child until it execs, page by page (the exit came 20-25 ms after the line).
        try:
            sys.stderr.flush()
        finally:
            os._exit(0)
    return 0


def _let_go_of_stdio() -> None:
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
    except OSError:
        pass
