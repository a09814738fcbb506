"""Workspace trust, as direnv has it: a workspace's `.metis/config.yaml` may tune the knobs, but
the settings that run code or send the session (and the user's key) somewhere take effect only
once the user has trusted that file's exact content.

The rule, in one place (`is_gated`): from a workspace file, `summarizer.import` (a factory that is
imported and called), `summarizer.options` (what that factory is given), `summarizer.base_url`
(where the session and the API key go), and a `compaction_model` / `summarizer.model` of any
provider but `anthropic:` and `local:` (another provider's endpoint and key, or an imported
factory) are trust-gated. The same
settings from the user's own config file, the environment or a flag are the user's own and need
no trust; a workspace file's gated value still does when the user's file sets the same key, as
the workspace's would win over it.

`metis-compaction-tui trust WS` records the sha256 of the file's bytes, keyed by the resolved
workspace path, in the user's own config folder ($XDG_CONFIG_HOME/metis-compaction-tui, else
~/.config/metis-compaction-tui). Any change to the file needs trusting again. An untrusted file's
gated settings are withheld (not applied): reading commands show the rest and say so; a command
that would use them refuses with `WorkspaceUntrusted`, one line naming the key, the file and the
command that trusts it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path

import msgspec

from engine.errors import ConfigError
from engine.layout import config_path, user_config_dir
from engine.safe_files import read_regular

TRUSTED_DIR = "trusted-workspaces"
RECORD_MAX_BYTES = 64 * 1024
PROG = "metis-compaction-tui"

# Always gated from a workspace file: they run code, or say where the session and key are sent.
GATED_KEYS = ("summarizer.import", "summarizer.options", "summarizer.base_url")
# Gated when they name a provider other than UNGATED_MODEL_PREFIXES (below).
MODEL_KEYS = ("compaction_model", "summarizer.model")

NO_FILE = "no file"
NOT_NEEDED = "not needed"  # the file sets nothing gated
TRUSTED = "trusted"
UNTRUSTED = "untrusted"


# A model named from a workspace file may keep the provider a session already goes to (Anthropic's,
# with the user's own key and base URL) or stay offline; any other provider (openai:, a plugin's)
# would send the session, and that provider's key, somewhere the user did not choose.
UNGATED_MODEL_PREFIXES = ("anthropic:", "local:")


def is_gated(key: str, value: object) -> bool:
    """Whether a workspace file's `key: value` takes effect only once the file is trusted."""
    if key in GATED_KEYS:
        return True
    if key in MODEL_KEYS:
        return not (isinstance(value, str) and value.startswith(UNGATED_MODEL_PREFIXES))
    return False


def gated_keys(values: Mapping[str, object]) -> tuple[str, ...]:
    """The trust-gated keys among a workspace file's dotted settings: what runs code first."""
    order = (*GATED_KEYS, *MODEL_KEYS)
    return tuple(sorted((k for k, v in values.items() if is_gated(k, v)), key=order.index))


# -- where trust is recorded ----------------------------------------------------------------------


def digest(raw: bytes) -> str:
    import hashlib  # on use: a workspace without a config file never needs it

    return hashlib.sha256(raw).hexdigest()


def workspace_key(workspace: Path | str) -> Path:
    """The workspace as trust knows it: its resolved path (a link to it is the same workspace)."""
    return Path(workspace).resolve()


def record_path(workspace: Path | str) -> Path:
    key = os.fsencode(str(workspace_key(workspace)))
    return user_config_dir() / TRUSTED_DIR / f"{digest(key)}.json"


class TrustRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One trusted workspace file: stored in the user's config folder, never in the workspace."""

    workspace: str  # resolved path
    config_file: str
    sha256: str  # of the file's exact bytes when trusted
    trusted_at_ms: int


def read_record(workspace: Path | str) -> TrustRecord | None:
    """The workspace's record, or None (none, or one this tool did not write: not trusted)."""
    try:
        raw = read_regular(record_path(workspace), RECORD_MAX_BYTES)
        record = msgspec.json.decode(raw, type=TrustRecord)
    except (OSError, msgspec.MsgspecError):
        return None
    return record if record.workspace == str(workspace_key(workspace)) else None


def write_record(record: TrustRecord) -> Path:
    """Written whole or not at all (aside, then renamed), readable by the user alone."""
    path = record_path(record.workspace)
    path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    tmp = path.with_name(f".{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(msgspec.json.encode(record))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


# -- what a workspace's trust is now ---------------------------------------------------------------


class WorkspaceTrust(msgspec.Struct, frozen=True, kw_only=True):
    """Whether the workspace file's gated settings apply (docs/cli-json.md `workspace_trust`)."""

    state: str  # no file | not needed | trusted | untrusted
    workspace: str  # resolved path
    config_file: str
    sha256: str = ""  # of the file's bytes as read now
    gated: tuple[str, ...] = ()  # the trust-gated keys the file sets
    withheld: tuple[str, ...] = ()  # of those, the ones not applied (untrusted, nothing above)
    withheld_at: tuple[str, ...] = ()  # "<file>:<line>" of each withheld key
    changed: bool = False  # trusted once, with other content

    @property
    def trust_command(self) -> str:
        import shlex  # only an untrusted file's remedy is quoted

        return f"{PROG} trust {shlex.quote(self.workspace)}"

    def note(self) -> str:
        """One short line for status and the app: empty unless the file is untrusted."""
        if self.state != UNTRUSTED:
            return ""
        if not self.withheld:
            return (
                f"workspace config untrusted: its {', '.join(self.gated)} are overridden here "
                f"(`{self.trust_command}` allows them)"
            )
        changed = " (changed since trusted)" if self.changed else ""
        return (
            f"workspace config untrusted{changed}: {', '.join(self.withheld)} not applied; "
            f"review it, then `{self.trust_command}`"
        )

    def require(self, command: str) -> None:
        """Raise WorkspaceUntrusted if `command` would run with settings this file may not set."""
        if self.withheld:
            raise WorkspaceUntrusted(self, command)


class WorkspaceUntrusted(ConfigError):
    """A command that would use a withheld setting: one line naming the key, the file (and
    line) and the command that trusts it."""

    def __init__(self, trust: WorkspaceTrust, command: str) -> None:
        key, where = trust.withheld[0], trust.withheld_at[0]
        more = f" (+{len(trust.withheld) - 1} more)" if len(trust.withheld) > 1 else ""
        what = "has changed since you trusted it" if trust.changed else "is not trusted"
        ValueError.__init__(
            self,
            f"{where}: {key}{more}: this workspace config {what}, so `{command}` is refused; "
            f"review the file, then run `{trust.trust_command}`",
        )
        self.knob = key
        self.trust = trust


def assess(
    workspace: Path | str,
    raw: bytes | None,
    file_values: Mapping[str, object],
    applied: Iterable[str],
    lines: Mapping[str, int],
) -> WorkspaceTrust:
    """The trust of the workspace file whose bytes are `raw` (None: no file) and settings
    `file_values`; `applied` are the keys where the file's value is the one in force (nothing
    above it set them), `lines` their lines."""
    path = config_path(workspace)
    key = str(workspace_key(workspace))
    if raw is None:
        return WorkspaceTrust(state=NO_FILE, workspace=key, config_file=str(path))
    sha = digest(raw)
    gated = gated_keys(file_values)
    if not gated:
        return WorkspaceTrust(state=NOT_NEEDED, workspace=key, config_file=str(path), sha256=sha)
    record = read_record(workspace)
    if record is not None and record.sha256 == sha:
        return WorkspaceTrust(
            state=TRUSTED, workspace=key, config_file=str(path), sha256=sha, gated=gated
        )
    in_force = set(applied)
    withheld = tuple(k for k in gated if k in in_force)
    return WorkspaceTrust(
        state=UNTRUSTED,
        workspace=key,
        config_file=str(path),
        sha256=sha,
        gated=gated,
        withheld=withheld,
        withheld_at=tuple(f"{path}:{lines.get(k, 0)}" for k in withheld),
        changed=record is not None,
    )


# -- trusting and untrusting -----------------------------------------------------------------------


class TrustError(ConfigError):
    """`trust` could not be done: one line saying why."""

    def __init__(self, message: str) -> None:
        ValueError.__init__(self, message)
        self.knob = "(trust)"


def untrust_workspace(workspace: Path | str) -> bool:
    """Forget the workspace's trust; whether there was any."""
    try:
        record_path(workspace).unlink()
    except FileNotFoundError:
        return False
    except OSError as error:
        raise TrustError(
            f"{record_path(workspace)}: cannot remove: {error.strerror or error}"
        ) from None
    return True
