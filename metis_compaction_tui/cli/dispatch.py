"""`metis-compaction-tui`: open the inspector, or run one non-interactive subcommand.

    metis-compaction-tui [WORKSPACE]        open the app on a workspace (default: .)
    metis-compaction-tui demo               a temporary workspace, a simulated metis dev, the app
    metis-compaction-tui inspect [PATH]     the app on Claude Code / Codex transcripts (read-only)
    metis-compaction-tui status / compact / undo / cache / simulate   (each has --help)
    metis-compaction-tui trust [--show] / untrust [WORKSPACE]   workspace trust (docs/security.md)

A missing workspace, a store that is not SQLite or of a newer schema, an unknown session id: one
line on stderr, exit code 2, nothing written. Stores are opened with create=False except by
`demo` and `simulate`. An API key is only ever read from ANTHROPIC_API_KEY, never from argv.
"""

from __future__ import annotations

import argparse
import errno
import math
import sys

from metis_compaction_tui.cli import exit_codes
from metis_compaction_tui.cli.errors import CliError
from metis_compaction_tui.cli.help_pages import (
    INSPECT_PATH_HELP,
    INSPECT_SCRATCH_HELP,
    KNOB_SCOPE,
    LIMIT_HELP,
    set_help,
    workspace_flag_help,
)
from metis_compaction_tui.cli.overview import (
    COMMAND_HELP,
    DESCRIPTION,
    EPILOG,
    PROG,
    USAGE,
    terminal_columns,
)
from metis_compaction_tui.defaults import DEFAULT_LIMIT, DEMO_PACE, DEMO_TURNS, LOCAL_MODEL
from metis_compaction_tui.lean_msgspec import import_msgspec

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (--help pays for argparse)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path
    from typing import TextIO

    from metis_compaction_tui.demo.simulator import Simulator

# Each subcommand imports what it uses when it runs (the store, the importers, asyncio, the
# app): `status --help` pays for argparse, not for the rest.

SUBCOMMANDS = (
    "open", "demo", "inspect", "status", "compact", "undo", "cache", "simulate", "trust", "untrust",
)  # fmt: skip


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `only` naming a subcommand, that subcommand alone (its run never
    shows the others, and each costs argparse a parser); with `only=""` every subcommand as its
    name and one-line help (what the top-level --help lists). A command builds (and imports)
    what its own options need, not every other's."""
    parser = argparse.ArgumentParser(
        prog=PROG, usage=USAGE, description=DESCRIPTION, epilog=EPILOG, formatter_class=_Formatter
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", prog=PROG)
    for name, help_text in COMMAND_HELP.items():
        if only and name != only:
            continue
        build = _BUILDERS.get(name)
        if build is None or (only is not None and name != only):
            sub.add_parser(name, add_help=False, help=help_text, formatter_class=_Formatter)
        else:
            build(sub.add_parser(name, help=help_text, formatter_class=_Formatter))
    return parser


class _Formatter(argparse.HelpFormatter):
    """argparse's own layout and width (the terminal's less 2), the width found without the
    shutil import argparse makes for it each time a parser is built."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=terminal_columns() - 2)


def _json_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON (docs/cli-json.md)")


def _knob_flags(p: argparse.ArgumentParser) -> None:
    _set_flag(p, KNOB_SCOPE)
    p.add_argument("--limit", type=_number(int, 1), default=DEFAULT_LIMIT, help=LIMIT_HELP)


def _build_open(p: argparse.ArgumentParser) -> None:
    _workspace_args(p)


def _build_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-app", action="store_true", help="run only the simulator (see --seconds)")
    p.add_argument("--keep", action="store_true", help="keep the workspace when the demo ends")
    p.add_argument(
        "--seconds", type=_number(float, 0), default=60.0,
        help="with --no-app: stop after this",
    )  # fmt: skip
    _simulation_flags(p, pace=DEMO_PACE)


def _build_inspect(p: argparse.ArgumentParser) -> None:
    _knob_flags(p)
    # Its --help page is help_pages.inspect_help, written without argparse from these texts.
    p.add_argument("path", nargs="?", type=_path, default=None, help=INSPECT_PATH_HELP)
    _workspace_flag(p, "path", "PATH")
    p.add_argument("--scratch", type=_path, default=None, help=INSPECT_SCRATCH_HELP)


def _build_status(p: argparse.ArgumentParser) -> None:
    _json_flag(p)
    _knob_flags(p)
    _workspace_args(p, what="a workspace, a transcript or a folder of transcripts")


def _build_compact(p: argparse.ArgumentParser) -> None:
    _json_flag(p)
    _knob_flags(p)
    p.add_argument("session", help="the session id (see `status`), or a transcript file")
    p.add_argument("--dry-run", action="store_true", help="show what would happen; write nothing")
    p.add_argument("--instructions", help="what the summary must keep (part of the cache key)")
    _workspace_args(p)


def _build_undo(p: argparse.ArgumentParser) -> None:
    _json_flag(p)
    p.add_argument("session", help="the session id (see `status`)")
    _workspace_args(p)


def _build_cache(p: argparse.ArgumentParser) -> None:
    actions = p.add_subparsers(dest="action", metavar="{list,show,evict,trim,clear}")
    actions.required = True

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        return actions.add_parser(name, help=help_text, formatter_class=_Formatter)

    a = action("list", "rows, most recently read first")
    _json_flag(a)
    _workspace_args(a)
    a = action("show", "one row with its summary text")
    _json_flag(a)
    a.add_argument("key", help="a cache key, or a unique prefix of one")
    _workspace_args(a)
    a = action("evict", "delete one row")
    _json_flag(a)
    a.add_argument("key", help="a cache key, or a unique prefix of one")
    _workspace_args(a)
    a = action("trim", "keep the N most recently read rows")
    _json_flag(a)
    a.add_argument("n", type=int, metavar="N")
    a.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    _workspace_args(a)
    a = action("clear", "delete every row")
    _json_flag(a)
    a.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    _workspace_args(a)


def _build_trust(p: argparse.ArgumentParser) -> None:
    _json_flag(p)
    p.add_argument("--show", action="store_true", help="say whether it is trusted; change nothing")
    _workspace_args(p)


def _build_untrust(p: argparse.ArgumentParser) -> None:
    _workspace_args(p)


def _build_simulate(p: argparse.ArgumentParser) -> None:
    _workspace_args(p)
    p.add_argument(
        "--seconds", type=_number(float, 0), default=None,
        help="stop after this many seconds",
    )  # fmt: skip
    _simulation_flags(p, pace=DEMO_PACE)


_BUILDERS = {
    "open": _build_open,
    "demo": _build_demo,
    "inspect": _build_inspect,
    "status": _build_status,
    "compact": _build_compact,
    "undo": _build_undo,
    "cache": _build_cache,
    "simulate": _build_simulate,
    "trust": _build_trust,
    "untrust": _build_untrust,
}


def _path(text: str) -> Path:
    """argparse's type for a path: pathlib is imported when a path is given, not to list help."""
    from pathlib import Path

    return Path(text)


_path.__name__ = "path"  # argparse names the type in its messages


class _Version(argparse.Action):
    """--version, read from the package's metadata only when asked (not on every start)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        sys.stdout.write(f"{PROG} {installed_version()}\n")
        parser.exit()


def installed_version() -> str:
    """The version pip installed (the package's metadata), or a plain word for a bare checkout."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PROG)
    except PackageNotFoundError:
        return "(not installed)"


def _workspace_args(p: argparse.ArgumentParser, what: str = "the workspace") -> None:
    """One convention for every subcommand: the workspace (or transcript) as a trailing
    positional, with -w/--workspace accepted too. `resolve_workspace` merges the two."""
    p.add_argument("workspace", nargs="?", type=_path, default=None, help=f"{what} (default: .)")
    _workspace_flag(p, "workspace", "WORKSPACE")


def _workspace_flag(p: argparse.ArgumentParser, positional: str, metavar: str) -> None:
    p.add_argument(
        "--workspace",
        "-w",
        dest=f"{positional}_flag",
        metavar=metavar,
        type=_path,
        default=None,
        help=workspace_flag_help(metavar),
    )


def resolve_workspace(args: argparse.Namespace) -> None:
    """Fold -w into the positional; both given and different is an error, not a guess. The
    default is the current folder, except for `inspect`'s PATH (its default folders)."""
    for name in ("workspace", "path"):
        if not hasattr(args, f"{name}_flag"):
            continue
        positional, flag = getattr(args, name), getattr(args, f"{name}_flag")
        if positional is not None and flag is not None and positional != flag:
            raise CliError(f"two {name}s given: {positional} and -w {flag}; give one")
        chosen = positional or flag
        setattr(args, name, chosen if chosen is not None or name == "path" else _path("."))


def _number(kind: type[int] | type[float], low: float, *, above: bool = False):  # type: ignore[no-untyped-def]
    """An argparse type: a finite number >= low (> low with `above`); NaN, inf and negatives are
    refused with a usage error, never run."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value) or value < low or (above and value == low):
            bound = f"more than {low:g}" if above else f"{low:g} or more"
            raise argparse.ArgumentTypeError(f"{text!r}: must be a finite number, {bound}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def _set_flag(p: argparse.ArgumentParser, scope: str) -> None:
    p.add_argument(
        "--set", action="append", default=[], metavar="KNOB=VALUE", dest="sets",
        help=set_help(scope),
    )  # fmt: skip


def _simulation_flags(p: argparse.ArgumentParser, *, pace: float) -> None:
    _set_flag(p, "the sessions it starts keep them, as metis dev's would")
    p.add_argument(
        "--pace",
        type=_number(float, 0),
        default=pace,
        help=f"messages per second ({pace}; 0: flat out)",
    )
    p.add_argument(
        "--turns",
        type=_number(int, 1),
        default=DEMO_TURNS,
        help=f"turns per session ({DEMO_TURNS})",
    )
    p.add_argument(
        "--seed", type=_number(int, 0), default=0, help="the scripted session's seed (0)"
    )
    p.add_argument(
        "--reruns",
        type=_number(int, 0),
        default=1,
        help="reruns of the same script (1): cache hits",
    )
    p.add_argument(
        "--model",
        default=None,
        help=f"compaction model (over METIS_COMPACTION_MODEL and .metis/config.yaml; else "
        f"{LOCAL_MODEL}); anthropic:<model> needs ANTHROPIC_API_KEY, openai:<model> "
        "OPENAI_API_KEY, unless summarizer.base_url is on this machine",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="do not log each compaction")


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    if not args_in or (args_in[0] not in SUBCOMMANDS and not args_in[0].startswith("-")):
        args_in.insert(0, "open")  # `metis-compaction-tui [WORKSPACE]`
    parser = build_parser(only=args_in[0] if args_in[0] in SUBCOMMANDS else "")
    args, extra = parser.parse_known_args(args_in)
    # argparse binds an optional trailing positional at the first positional it meets, so
    # `compact S --dry-run WS` leaves WS over: it is the workspace when none was bound yet.
    lone = len(extra) == 1 and not extra[0].startswith("-")
    if lone and getattr(args, "workspace", "") is None:
        args.workspace, extra = _path(extra[0]), []
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    exit_codes.reset()
    from metis_compaction_tui.cli.output import Output, OutputLost, warn

    out = Output(sys.stdout)
    try:
        resolve_workspace(args)
        code = _dispatch(args, out)  # type: ignore[arg-type]
        out.flush()
        return exit_codes.settle(code)
    except OutputLost:
        if exit_codes.committed():
            warn(
                f"{PROG}: committed, but the report could not be written (closed pipe or full disk)"
            )
        return exit_codes.settle(exit_codes.OUTPUT_LOST)
    except Exception as error:
        # Each kind can only have been raised if its module was imported: looked up, not
        # imported (--help must not load the engine).
        if isinstance(error, _loaded("engine.errors", "NothingToCompact")):
            warn(f"{PROG}: {error}; nothing written")
            return exit_codes.settle(exit_codes.NOTHING_DONE)
        if isinstance(error, _loaded("engine.row_check", "BadRow")):
            # A value this engine never writes, named by table, column and row.
            warn(
                f"{PROG}: {error}: written by something other than this engine; nothing "
                "written. Restore the file from a backup, or delete that row"
            )
            return exit_codes.settle(exit_codes.USAGE)
        if isinstance(error, OSError) and error.errno == errno.ENAMETOOLONG:
            # Only a path given on the command line can be too long to look up.
            name = str(error.filename or "")
            shown = name if len(name) <= 80 else f"{name[:60]}… ({len(name):,} characters)"
            warn(f"{PROG}: {shown}: {error.strerror}; give a shorter path")
            return exit_codes.settle(exit_codes.USAGE)
        if not isinstance(error, user_errors()):
            raise
        warn(f"{PROG}: {describe(error)}")
        return exit_codes.settle(exit_codes.USAGE)
    except KeyboardInterrupt:
        return exit_codes.settle(exit_codes.INTERRUPTED)


class _NotLoaded(Exception):
    """Stands for an error class whose module was never imported (nothing raised one)."""


def _loaded(module: str, name: str) -> type[Exception]:
    kind = getattr(sys.modules.get(module), name, None)
    return kind if isinstance(kind, type) and issubclass(kind, Exception) else _NotLoaded


def user_errors() -> tuple[type[Exception], ...]:
    """The errors told in one line (exit 2): a store or config error can only have been raised
    if its module was imported, so they are looked up, not imported."""
    found: list[type[Exception]] = [CliError]
    for module, name in (
        ("engine.store.schema", "StoreError"),
        ("engine.errors", "StoreError"),
        ("engine.errors", "ConfigError"),
    ):
        kind = getattr(sys.modules.get(module), name, None)
        if isinstance(kind, type) and issubclass(kind, Exception):
            found.append(kind)
    return tuple(found)


def describe(error: Exception) -> str:
    """The error's line, naming a knob once: a config error from a flag is placed at
    "--set KNOB", which already names the knob its message starts with."""
    where, knob, detail = (getattr(error, a, None) for a in ("where", "knob", "detail"))
    if isinstance(where, str) and isinstance(detail, str) and where == f"--set {knob}":
        return f"{where}: {detail}"
    return str(error)


def _is_transcript(path: Path) -> bool:
    """cli.transcripts' rule, without importing the importers for the plain case: a folder with
    a `.metis` store (or the default ".") is a workspace."""
    from pathlib import Path

    from engine import is_workspace

    if path.is_dir() and (path == Path(".") or is_workspace(path)):
        return False
    from metis_compaction_tui.cli.transcripts import is_transcript_path

    return is_transcript_path(path)


def _not_a_workspace(command: str, session: str, workspace: Path) -> None:
    """The session comes first: a workspace folder given in its place (with the default
    workspace holding no store) is named as the slip it is, not as a store missing from "."."""
    from pathlib import Path

    from engine import is_workspace

    given = Path(session)
    if workspace == Path(".") and not is_workspace(workspace) and is_workspace(given):
        raise CliError(
            f"{session} is a workspace, not a session id: the session comes "
            f"first, `{command} SESSION {session}` (`status "
            f"{session}` lists its sessions)"
        )


def _dispatch(args: argparse.Namespace, out: TextIO) -> int:
    # Each case imports its own command module: a subcommand pays for what it uses. `cache`
    # loads msgspec only when there is a cache to read (cli.cache).
    if args.command != "cache":
        import_msgspec()
    match args.command:
        case "open":
            return cmd_open(args.workspace)
        case "inspect":
            from metis_compaction_tui.cli.transcripts import cmd_inspect

            return cmd_inspect(args.path, args.scratch, args.limit, args.sets)
        case "status":
            if _is_transcript(args.workspace):
                from metis_compaction_tui.cli.transcripts import cmd_transcript_status

                return cmd_transcript_status(args.workspace, args.sets, args.limit, args.json, out)
            from engine import parse_flags
            from metis_compaction_tui.cli.commands import cmd_status

            return cmd_status(args.workspace, args.json, out, parse_flags(args.sets))
        case "compact":
            session = _path(args.session)
            if session.exists() and not session.is_dir():  # a named pipe too: refused when read
                from metis_compaction_tui.cli.transcripts import cmd_transcript_compact

                return cmd_transcript_compact(
                    session, args.dry_run, args.instructions, args.sets, args.json, out
                )
            _not_a_workspace(args.command, args.session, args.workspace)
            from engine import parse_flags
            from metis_compaction_tui.cli.commands import cmd_compact

            return cmd_compact(
                args.workspace,
                args.session,
                args.dry_run,
                args.instructions,
                args.json,
                out,
                parse_flags(args.sets),
            )
        case "undo":
            _not_a_workspace(args.command, args.session, args.workspace)
            from metis_compaction_tui.cli.commands import cmd_undo

            return cmd_undo(args.workspace, args.session, args.json, out)
        case "cache":
            from metis_compaction_tui.cli.cache import cmd_cache

            arg = getattr(args, "key", None) if args.action != "trim" else args.n
            return cmd_cache(
                args.workspace, args.action, arg, args.json, getattr(args, "yes", False), out
            )
        case "simulate":
            return cmd_simulate(args, out)
        case "trust":
            from metis_compaction_tui.cli.trust import cmd_trust

            return cmd_trust(args.workspace, args.show, args.json, out)
        case "untrust":
            from metis_compaction_tui.cli.trust import cmd_untrust

            return cmd_untrust(args.workspace, out)
        case "demo":
            return cmd_demo(args, out)
    raise AssertionError(args.command)  # pragma: no cover


def cmd_open(workspace: Path) -> int:
    from engine import SessionStore, store_path

    if not workspace.is_dir():
        raise CliError(f"workspace {workspace} does not exist or is not a folder")
    if store_path(workspace).exists():
        SessionStore.open(workspace).close()  # a broken or newer store: one line, before the UI
    try:
        from metis_compaction_tui.app import run_app
    except ModuleNotFoundError as error:
        if error.name != "metis_compaction_tui.app":
            raise
        raise CliError(
            "the inspector app is not in this build; use status, compact, cache"
        ) from None
    return int(run_app(workspace) or 0)


def _simulator(args: argparse.Namespace, workspace: Path, out: TextIO) -> Simulator:
    from engine import parse_flags, resolve_config
    from metis_compaction_tui.demo.simulator import Simulator

    # The simulated metis dev reads the workspace's settings as metis dev would: --model and
    # --set over METIS_* over .metis/config.yaml over the demo's own knobs and the offline model.
    settings = resolve_config(workspace, flags=parse_flags(args.sets))
    settings.require_trust("simulate")  # its sessions compact with these settings
    overrides = settings.overrides()
    model = args.model or overrides.pop("compaction_model", LOCAL_MODEL)
    overrides.pop("compaction_model", None)
    from engine import check_summarizer, missing_key

    check_summarizer(model, settings.summarizer)  # unserved, unpriced: refused before any write
    if key := missing_key(model, settings.summarizer):
        raise CliError(f"model {model}: set {key} (or use {LOCAL_MODEL})")

    def log(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    return Simulator(
        workspace,
        pace=args.pace,
        turns=args.turns,
        seed=args.seed,
        model=model,
        reruns=args.reruns,
        knobs=overrides,
        log=None if args.quiet else log,
        summarizer_settings=settings.summarizer,
    )


async def _run_for(simulator: Simulator, seconds: float | None) -> None:
    import asyncio

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    if seconds is not None:
        loop.call_later(seconds, stop.set)
    await simulator.run(stop)


def cmd_simulate(args: argparse.Namespace, out: TextIO) -> int:
    workspace: Path = args.workspace
    if not workspace.is_dir():
        raise CliError(f"workspace {workspace} does not exist or is not a folder")
    simulator = _simulator(args, workspace, out)
    import asyncio

    asyncio.run(_run_for(simulator, args.seconds))
    _summary(simulator, out)
    return 0


def _summary(simulator: Simulator, out: TextIO) -> None:
    r = simulator.report
    out.write(
        f"simulated {r.turns} turns, {r.messages} messages in {len(r.sessions)} session(s): "
        f"{r.compactions} compactions ({r.soft} soft, {r.forced} forced, {r.cache_hits} cache "
        f"hits), {r.budget_skips} turns skipped on a spent budget, {r.truncations} truncations\n"
        f"workspace: {simulator.workspace}\n"
    )


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    """The demo's workspace is temporary: removed when the demo ends, by quitting, Ctrl-C,
    SIGTERM or SIGHUP (--keep keeps it)."""
    import shutil
    import signal
    import tempfile

    workspace = _path(tempfile.mkdtemp(prefix="metis-demo-"))

    def end(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)  # unwinds through the finally below

    previous = {sig: signal.signal(sig, end) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        out.write(f"demo workspace: {workspace}\n")
        return _demo_in(workspace, args, out)
    except KeyboardInterrupt:
        return 130
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if args.keep:
            out.write(f"demo workspace kept at {workspace}\n")
        else:
            shutil.rmtree(workspace, ignore_errors=True)


def _demo_in(workspace: Path, args: argparse.Namespace, out: TextIO) -> int:
    import asyncio
    import subprocess

    from engine import SessionStore, simulator_log_path

    if args.no_app:
        simulator = _simulator(args, workspace, out)
        asyncio.run(_run_for(simulator, args.seconds))
        _summary(simulator, out)
        return 0
    # The writer runs in its own process, as metis dev would: two processes share the store.
    SessionStore.open(workspace, create=True).close()  # the app opens onto an existing store
    log_path = simulator_log_path(workspace)
    command = [
        sys.executable, "-m", "metis_compaction_tui.cli", "simulate", str(workspace),
        "--pace", str(args.pace), "--turns", str(args.turns), "--seed", str(args.seed),
        "--reruns", str(args.reruns), *(["--model", args.model] if args.model else []),
        *(f"--set={knob}" for knob in args.sets),
    ]  # fmt: skip
    with log_path.open("w") as log:
        writer = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            return cmd_open(workspace)
        finally:
            writer.terminate()
            try:
                writer.wait(timeout=5)
            except subprocess.TimeoutExpired:
                writer.kill()
                writer.wait()


if __name__ == "__main__":
    sys.exit(main())
