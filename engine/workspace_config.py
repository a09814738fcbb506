"""`<workspace>/.metis/config.yaml` (§11: where operators tune a workspace), resolved with the
user's own config file, the environment and command-line flags into the knobs and summarizer
settings, each with its origin.

Precedence, highest first: a flag (`--set KEY=VALUE`) > the environment (`METIS_<KEY>`, dots as
underscores, e.g. METIS_COMPACTION_THRESHOLD_TOKENS, METIS_SUMMARIZER_BASE_URL,
METIS_SUMMARIZER_PRICE_INPUT_PER_MTOK) > the workspace file > the user's file
(`engine.layout.user_config_path`) > the default. A knob nothing sets keeps the session's own
stored value where there is a session (`ResolvedConfig.apply`).

Both files are read with `msgspec.yaml` into the same typed structs, which refuse unknown keys;
every error is a `ConfigFileError` naming the file, the line and the key (or the variable or the
flag). Only the workspace file's settings can need trust (engine.workspace_trust).
"""

from __future__ import annotations

import functools
import os
import re
import time
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec

from engine.config import CompactionConfig
from engine.errors import ConfigError, StoreError
from engine.layout import METIS_DIR, config_path, user_config_path
from engine.safe_files import FileRefused, read_regular
from engine.summarizers.settings import StatedPrice, SummarizerSettings
from engine.workspace_trust import (
    TRUSTED,
    TrustError,
    TrustRecord,
    WorkspaceTrust,
    assess,
    digest,
    gated_keys,
    is_gated,
    record_path,
    workspace_key,
    write_record,
)

ENV_PREFIX = "METIS_"
MAX_FILE_BYTES = 256 * 1024

DEFAULT = "default"
USER_FILE = "user_file"  # the user's own config file
FILE = "file"  # the workspace's
ENVIRONMENT = "environment"
FLAG = "flag"
SESSION = "session"  # a stored session's own knob, which nothing above overrode


# -- the file's shape: every key optional, none unknown --------------------------------------


class _PriceLayer(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    input_per_mtok: Decimal | None = None
    output_per_mtok: Decimal | None = None
    cache_write_per_mtok: Decimal | None = None
    cache_read_per_mtok: Decimal | None = None


class _SummarizerLayer(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    model: str | None = None  # the model these settings serve; the same as compaction_model
    import_path: str | None = msgspec.field(default=None, name="import")
    options: dict[str, str | int | float | bool] | None = None
    base_url: str | None = None
    price: _PriceLayer | None = None
    timeout_s: float | None = None
    no_key: bool | None = None  # the endpoint takes no key: none is sent (summarizers.keyless)


class ConfigLayer(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What one source (the file, the environment, the flags) sets; None: not set here."""

    compaction_threshold_tokens: int | None = None
    compaction_hard_cap_tokens: int | None = None
    compaction_preserve_recent_turns: int | None = None
    compaction_model: str | None = None
    compaction_max_cost_per_session_usd: Decimal | None = None
    compaction_summary_prompt_version: str | None = None
    compaction_cache_max_rows: int | None = None
    compaction_max_summary_tokens: int | None = None
    compaction_summary_payback_turns: int | None = None
    compaction_strategy: str | None = None
    summarizer: _SummarizerLayer | None = None


@functools.cache
def _fields(struct_type: type[msgspec.Struct]) -> tuple[msgspec.structs.FieldInfo, ...]:
    """msgspec.structs.fields, once per type (it evaluates the annotations on every call)."""
    return msgspec.structs.fields(struct_type)


def _keys(struct_type: type[msgspec.Struct], prefix: str = "") -> list[str]:
    """Every settable key, dotted ("summarizer.price.input_per_mtok")."""
    keys: list[str] = []
    for field in _fields(struct_type):
        name = prefix + field.encode_name
        inner = _struct_in(field.type)
        keys += _keys(inner, name + ".") if inner is not None else [name]
    return keys


def _struct_in(annotation: Any) -> type[msgspec.Struct] | None:
    for candidate in getattr(annotation, "__args__", (annotation,)):
        if isinstance(candidate, type) and issubclass(candidate, msgspec.Struct):
            return candidate
    return None


KNOBS: tuple[str, ...] = CompactionConfig.__struct_fields__
SETTABLE_KEYS: tuple[str, ...] = tuple(k for k in _keys(ConfigLayer) if k != "summarizer.options")


def env_name(key: str) -> str:
    return ENV_PREFIX + key.replace(".", "_").upper()


# -- where a value came from --------------------------------------------------------------------


class Origin(msgspec.Struct, frozen=True):
    kind: str  # default | user_file | file | environment | flag | session
    where: str = ""  # "<file>:<line>", "METIS_X", "--set x"

    def __str__(self) -> str:
        return f"{_LABELS.get(self.kind, self.kind)} {self.where}".strip()


_LABELS = {USER_FILE: "user file"}  # the words a kind is shown with, where they differ


class ConfigFileError(ConfigError):
    """A bad value in a config source; the message names the file and line (or the variable or
    the flag) and the key."""

    def __init__(self, key: str, detail: str, *, where: str) -> None:
        ValueError.__init__(self, f"{where}: {key}: {detail}")
        self.knob = key
        self.where = where
        self.detail = detail


# -- reading the file ---------------------------------------------------------------------------

# What msgspec's errors say; compiled by `re` when an error is read (and kept in its cache).
_AT_PATH = r" - at `\$((?:\.[^`.\[]+|\[\d+\])*)`$"
_UNKNOWN = r"Object contains unknown field `([^`]+)`"
_YAML_LINE = r"line (\d+), column (\d+)"


def read_user_config_bytes(path: Path) -> bytes | None:
    """The user's own config file's exact bytes (None when absent): a regular file within the
    same bound as a workspace's. A link is followed (dotfile managers make them), but it must
    lead to a regular file: a FIFO, a device or a folder is refused without being read."""
    try:
        return read_regular(path, MAX_FILE_BYTES, what="a config file", follow_links=True)
    except FileNotFoundError:
        return None
    except FileRefused as refused:
        raise ConfigFileError("(file)", refused.what, where=str(path)) from None
    except OSError as error:
        raise ConfigFileError("(file)", f"unreadable: {error.strerror}", where=str(path)) from None


def read_config_bytes(path: Path) -> bytes | None:
    """The file's exact bytes (None when absent), read as engine.safe_files reads a workspace
    file: a regular file in the workspace, no link, no FIFO or device, at most MAX_FILE_BYTES."""
    try:
        return read_regular(
            path, MAX_FILE_BYTES, workspace=path.parent.parent, what="a config file"
        )
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        # The same words as the store's: a file named .metis.
        raise StoreError(
            f"{path.parent} is a file, not the {METIS_DIR} folder of a workspace: move it aside"
        ) from None
    except FileRefused as refused:
        raise ConfigFileError("(file)", refused.what, where=str(path)) from None
    except OSError as error:
        raise ConfigFileError("(file)", f"unreadable: {error.strerror}", where=str(path)) from None


def parse_config(raw: bytes | None, path: Path) -> tuple[ConfigLayer, dict[str, int]]:
    """The layer and key lines of a config file's bytes (None: no file); errors name `path`."""
    if raw is None:
        return ConfigLayer(), {}
    text = raw.decode("utf-8", errors="replace")
    if not text.strip():
        return ConfigLayer(), {}
    _refuse_aliases(text, path)
    try:
        layer = msgspec.yaml.decode(raw, type=ConfigLayer)
    except msgspec.ValidationError as error:
        key, detail = _key_of(str(error))
        detail = _plain(detail, _value_at(msgspec.yaml.decode(raw), key), in_yaml=True)
        line = _line_of(text, key)
        raise ConfigFileError(
            key or "(top level)", detail, where=f"{path}:{line}" if line else str(path)
        ) from None
    except msgspec.DecodeError as error:  # YAML syntax: the parser says where
        message = str(error)
        lines = re.findall(_YAML_LINE, message)
        line = lines[-1][0] if lines else "?"
        detail = re.sub(r'\s*in "<[a-z ]+>", line \d+, column \d+', "", message)
        detail = re.sub(r"\s+", " ", detail).strip() or "not YAML"
        raise ConfigFileError("(YAML syntax)", detail, where=f"{path}:{line}") from None
    written = _written_keys(text)
    _refuse_repeats(written, path)
    lines = _key_lines(text, written)
    return layer, {key: _line_of(text, key, lines) or 0 for key in _set_keys(layer)}


def _loader(yaml: Any) -> Any:
    """libyaml's safe loader when PyYAML was built with it (as msgspec.yaml uses), else Python's."""
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _refuse_aliases(text: str, path: Path) -> None:
    """A file read back is untrusted: YAML aliases (`*name`) can expand a few lines into billions
    of nodes, and a config has no use for them, so the first one is refused by its line."""
    import yaml  # msgspec.yaml's own parser

    try:
        for token in yaml.scan(text, Loader=_loader(yaml)):
            if isinstance(token, yaml.AliasToken):
                line = token.start_mark.line + 1
                raise ConfigFileError(
                    "(YAML alias)", "aliases (*name) are not allowed here", where=f"{path}:{line}"
                )
    except yaml.YAMLError:
        return  # the decoder reports the syntax error with its line


def _key_of(message: str) -> tuple[str, str]:
    """The dotted key a msgspec ValidationError is about, and its words without the path."""
    at = re.search(_AT_PATH, message)
    path = at.group(1).lstrip(".") if at else ""
    detail = message[: at.start()] if at else message
    unknown = re.search(_UNKNOWN, detail)
    if unknown:
        name = unknown.group(1)
        parent = f"{path}." if path else ""
        siblings = sorted(
            {
                parent + k[len(parent) :].split(".")[0]
                for k in _keys(ConfigLayer)
                if k.startswith(parent)
            }
        )
        return parent + name, f"unknown key; the keys here are {', '.join(siblings)}"
    return path, detail.replace(" | null", "")


def _written_keys(text: str) -> list[tuple[str, int]]:
    """Every dotted key written in the YAML with its 1-based line, in file order, repeats kept."""
    import yaml  # msgspec.yaml's own parser

    try:
        root: Any = yaml.compose(text, Loader=_loader(yaml))
    except yaml.YAMLError:
        return []
    found: list[tuple[str, int]] = []

    def walk(node: Any, prefix: str) -> None:
        if not isinstance(node, yaml.MappingNode):
            return
        for key_node, value_node in node.value:
            name = f"{prefix}{getattr(key_node, 'value', '')}"
            found.append((name, key_node.start_mark.line + 1))
            walk(value_node, name + ".")

    walk(root, "")
    return found


def _key_lines(text: str, written: list[tuple[str, int]] | None = None) -> dict[str, int]:
    """The line of every dotted key written in the YAML (its first writing)."""
    lines: dict[str, int] = {}
    for name, line in _written_keys(text) if written is None else written:
        lines.setdefault(name, line)
    return lines


def _refuse_repeats(written: list[tuple[str, int]], path: Path) -> None:
    """YAML parsers keep the last of two equal keys without a word; a hand-edited config with a
    key set twice is more likely a mistake than a choice, so it is refused by both lines."""
    first: dict[str, int] = {}
    for name, line in written:
        if name in first:
            raise ConfigFileError(
                name,
                f"set twice (lines {first[name]} and {line}); keep one",
                where=f"{path}:{line}",
            )
        first[name] = line


def _line_of(text: str, key: str, lines: dict[str, int] | None = None) -> int | None:
    """The line of the dotted `key`, or of its nearest written parent."""
    if not key:
        return None
    lines = _key_lines(text) if lines is None else lines
    parts = key.split(".")
    for end in range(len(parts), 0, -1):
        line = lines.get(".".join(parts[:end]))
        if line is not None:
            return line
    return None


def _set_keys(layer: msgspec.Struct, prefix: str = "") -> list[str]:
    keys: list[str] = []
    for field in _fields(type(layer)):
        value = getattr(layer, field.name)
        if value is None:
            continue
        name = prefix + field.encode_name
        if isinstance(value, msgspec.Struct):
            keys += _set_keys(value, name + ".")
        else:
            keys.append(name)
    return keys


def _flat(layer: msgspec.Struct) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key in _set_keys(layer):
        target: Any = layer
        for part in key.split("."):
            target = getattr(target, _attr(type(target), part))
        values[key] = target
    return values


def _attr(struct_type: type[msgspec.Struct], encode_name: str) -> str:
    for field in _fields(struct_type):
        if field.encode_name == encode_name:
            return field.name
    raise KeyError(encode_name)


# -- the environment and flags: text, converted by the same structs -------------------------------


def _text_layer(values: Mapping[str, str], where: Mapping[str, str]) -> ConfigLayer:
    """Dotted keys with text values (from METIS_* or --set) as a ConfigLayer; errors name their
    variable or flag."""
    nested: dict[str, Any] = {}
    for key, text in values.items():
        target = nested
        *parents, last = key.split(".")
        for part in parents:
            target = target.setdefault(part, {})
        target[last] = text
    try:
        return msgspec.convert(nested, ConfigLayer, strict=False)
    except msgspec.ValidationError as error:
        key, detail = _key_of(str(error))
        raise ConfigFileError(
            key, _plain(detail, values.get(key)), where=where.get(key, "?")
        ) from None


# msgspec's words for text that is not the number (or flag) a key takes.
_EXPECTED_TEXT = r"Expected `(int|float|bool)`, got `(?:str|float)`|Invalid decimal string"
_EXPECTED_WORDS = {
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "decimal": "a decimal number",
}


def _plain(detail: str, value: object, *, in_yaml: bool = False) -> str:
    """A value that is not the number (or flag) its key takes: what it was and what it should
    be ('lots' is not a whole number; 2.5 is not a whole number), not msgspec's words for it."""
    expected = re.search(_EXPECTED_TEXT, detail)
    if expected is None:
        return detail
    wanted = _EXPECTED_WORDS[expected.group(1) or "decimal"]
    if isinstance(value, float):
        return f"{value!r} is not {wanted}"
    if not isinstance(value, str):
        return detail
    # A long value is not echoed: it is no number mistyped, and could be a key pasted there.
    shown = f"{value!r}" if len(value) <= 32 else "the text there"
    if in_yaml and _reads_as(value, expected.group(1)):
        return f"{shown} is quoted, so it is text; write it without quotes"
    return f"{shown} is not {wanted}"


_YAML_KINDS: dict[str, type | tuple[type, ...]] = {"int": int, "float": (int, float), "bool": bool}


def _reads_as(text: str, kind: str | None) -> bool:
    """Whether quoted YAML text would be the value its key takes once unquoted."""
    try:
        return isinstance(msgspec.yaml.decode(text), _YAML_KINDS[kind or ""])
    except (msgspec.DecodeError, KeyError):
        return False


def _value_at(document: object, key: str) -> object:
    """The value at a dotted key of a decoded document, None where there is none."""
    for part in key.split("."):
        if not isinstance(document, dict):
            return None
        document = document.get(part)
    return document


def environment_values(environ: Mapping[str, str]) -> dict[str, str]:
    return {key: environ[env_name(key)] for key in SETTABLE_KEYS if env_name(key) in environ}


def flag_key(name: str) -> str:
    """A flag's key as typed: a knob may leave off its `compaction_` prefix."""
    name = name.strip()
    if name in SETTABLE_KEYS or name == "summarizer.options":
        return name
    if f"compaction_{name}" in SETTABLE_KEYS:
        return f"compaction_{name}"
    raise ConfigFileError(
        name, f"no such setting; the settings are {', '.join(SETTABLE_KEYS)}", where="--set"
    )


def parse_flags(sets: list[str] | tuple[str, ...]) -> dict[str, str]:
    """`--set KEY=VALUE` (repeatable) as dotted keys and text values."""
    values: dict[str, str] = {}
    for item in sets:
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigFileError(item, "expected KEY=VALUE", where="--set")
        values[flag_key(name)] = value.strip()
    return values


# -- resolving ------------------------------------------------------------------------------------


class ResolvedConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The workspace's knobs and summarizer settings, and where each value came from."""

    path: Path
    file_found: bool
    user_path: Path  # the user's own config file (engine.layout.user_config_path)
    user_file_found: bool
    config: CompactionConfig
    summarizer: SummarizerSettings
    origins: dict[str, Origin]  # by dotted key: every knob, every summarizer setting
    trust: WorkspaceTrust  # whether the file's trust-gated settings apply (engine.workspace_trust)

    def require_trust(self, command: str) -> None:
        """Before `command` runs with these settings: WorkspaceUntrusted (a ConfigError) if the
        workspace file sets a gated setting it may not, one line naming key, file and remedy."""
        self.trust.require(command)

    def require_stored_model(self, session_id: str, stored: CompactionConfig, command: str) -> None:
        """The session store is a workspace file too: a model it names that picks another
        provider (engine.workspace_trust.is_gated) is used only when the user chose it, by a
        flag, the environment, their own config or a trusted workspace config."""
        model = stored.compaction_model
        if self.origins["compaction_model"].kind != DEFAULT or self.trust.state == TRUSTED:
            return
        if is_gated("compaction_model", model):
            raise ConfigError(
                "compaction_model",
                f"session {session_id!r} in the store names {model!r}, another provider than "
                f"anthropic: or local:, and nothing of yours chose it, so `{command}` is refused; "
                "name the model yourself (--set compaction_model=..., METIS_COMPACTION_MODEL or "
                "your config file) to send the session there",
            )

    def overrides(self) -> dict[str, Any]:
        """The knobs something set (flag, environment, a file): what they change in a session."""
        return {
            knob: getattr(self.config, knob) for knob in KNOBS if self.origins[knob].kind != DEFAULT
        }

    def manager_kwargs(self, command: str = "SessionManager") -> dict[str, Any]:
        """SessionManager keyword arguments: every knob and the summarizer settings. A manager
        compacts with them, so an untrusted file's gated settings refuse here (`command` names
        what is refused) rather than being silently left out."""
        self.require_trust(command)
        knobs: dict[str, Any] = {knob: getattr(self.config, knob) for knob in KNOBS}
        return {**knobs, "summarizer_settings": self.summarizer}

    def apply(self, stored: CompactionConfig) -> CompactionConfig:
        """A stored session's knobs with what the flags, environment and file set on top."""
        overrides = self.overrides()
        if not overrides:
            return stored
        try:
            return msgspec.structs.replace(stored, **overrides)
        except ConfigError as error:
            # A set knob that clashes with one the session keeps (a hard cap set below the
            # session's own threshold): name the line, variable or flag that set it.
            knob = error.knob if error.knob in overrides else next(iter(overrides))
            origin = self.origins[knob]
            detail = str(error).split(": ", 1)[-1]
            raise ConfigFileError(
                error.knob, f"{detail} (with this session's own knobs)", where=origin.where
            ) from None

    def origins_for(self, stored: CompactionConfig | None) -> dict[str, Origin]:
        """Where each value of `apply(stored)` comes from: a knob nothing set is the session's."""
        if stored is None:
            return dict(self.origins)
        return {
            key: Origin(SESSION) if key in KNOBS and origin.kind == DEFAULT else origin
            for key, origin in self.origins.items()
        }

    def describe(self, stored: CompactionConfig | None = None) -> list[tuple[str, str, str]]:
        """(key, value as text, origin as text) for each knob and summarizer setting."""
        return [(key, value, str(origin)) for key, value, origin in self._rows(stored)]

    def _rows(self, stored: CompactionConfig | None) -> list[tuple[str, str, Origin]]:
        config = self.config if stored is None else self.apply(stored)
        origins = self.origins_for(stored)
        rows: list[tuple[str, str, Origin]] = []
        for key in (*KNOBS, *(k for k in SETTABLE_KEYS if k.startswith("summarizer."))):
            if key == "summarizer.model":
                continue  # the same as compaction_model
            value = getattr(config, key) if key in KNOBS else self._summarizer_value(key)
            rows.append((key, "-" if value is None else str(value), origins[key]))
        return rows

    def _summarizer_value(self, key: str) -> object:
        settings = self.summarizer
        if key.startswith("summarizer.price."):
            price = settings.price
            return None if price is None else getattr(price, key.rsplit(".", 1)[1])
        return getattr(settings, _attr(SummarizerSettings, key.removeprefix("summarizer.")))

    def to_json(self, stored: CompactionConfig | None = None) -> dict[str, Any]:
        """{key: {"value": ..., "origin": kind, "where": ...}} (docs/cli-json.md)."""
        return {
            key: {"value": value, "origin": origin.kind, "where": origin.where}
            for key, value, origin in self._rows(stored)
        }


def resolve_config(
    workspace: Path,
    *,
    flags: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> ResolvedConfig:
    """The knobs and summarizer settings for `workspace`: flag > environment > workspace file >
    the user's file > default. `flags` are dotted keys with text values (parse_flags); `environ`
    defaults to os.environ (the user's file is found from the process's own, as trust records)."""
    user_path = user_config_path()
    user_raw = read_user_config_bytes(user_path)
    user_layer, user_lines = parse_config(user_raw, user_path)
    path = config_path(workspace)
    raw = read_config_bytes(path)
    file_layer, lines = parse_config(raw, path)
    env_values = environment_values(os.environ if environ is None else environ)
    flag_values = dict(flags or {})
    user_values = _flat(user_layer)
    layers: list[tuple[dict[str, Any], dict[str, Origin]]] = [
        (
            user_values,
            {k: Origin(USER_FILE, f"{user_path}:{user_lines.get(k, 0)}") for k in user_values},
        ),
        (_flat(file_layer), {k: Origin(FILE, f"{path}:{lines.get(k, 0)}") for k in lines}),
        (
            _flat(_text_layer(env_values, {k: env_name(k) for k in env_values})),
            {k: Origin(ENVIRONMENT, env_name(k)) for k in env_values},
        ),
        (
            _flat(_text_layer(flag_values, {k: f"--set {k}" for k in flag_values})),
            {k: Origin(FLAG, f"--set {k}") for k in flag_values},
        ),
    ]
    values: dict[str, Any] = {}
    origins: dict[str, Origin] = {key: Origin(DEFAULT) for key in SETTABLE_KEYS}
    for layer_values, layer_origins in layers:  # lowest first: each later one wins
        for key, value in layer_values.items():
            values[key] = value
            origins[key] = layer_origins[key]
    files = _Files(path, raw is not None, user_path, user_raw is not None)
    # Every value is checked, a withheld one too: a bad file is named whether trusted or not.
    resolved = _build(files, dict(values), dict(origins))
    file_values = layers[1][0]
    in_force = [key for key in file_values if origins[key].kind == FILE]
    trust = assess(workspace, raw, file_values, in_force, lines)
    if not trust.withheld:
        return msgspec.structs.replace(resolved, trust=trust)
    # engine.workspace_trust: an untrusted file's gated settings are not applied; what the
    # user's own file sets for the key applies instead, as if the workspace file did not set it.
    for key in trust.withheld:
        if key in user_values:
            values[key], origins[key] = user_values[key], layers[0][1][key]
        else:
            del values[key]
            origins[key] = Origin(DEFAULT)
    return _build(files, values, origins, trust)


class _Files(msgspec.Struct, frozen=True):
    """The two config files resolved, and whether each was there."""

    path: Path
    found: bool
    user_path: Path
    user_found: bool


def _build(
    files: _Files,
    values: dict[str, Any],
    origins: dict[str, Origin],
    trust: WorkspaceTrust | None = None,
) -> ResolvedConfig:
    def fail(key: str, detail: str) -> ConfigFileError:
        origin = origins.get(key, Origin(DEFAULT))
        return ConfigFileError(key, detail, where=origin.where or origin.kind)

    model = values.get("compaction_model")
    served = values.get("summarizer.model")
    if served is not None:
        if model is None:  # `summarizer: {model: ...}` alone names the compaction model
            values["compaction_model"], origins["compaction_model"] = (
                served,
                origins["summarizer.model"],
            )
        elif served != model:
            raise fail(
                "summarizer.model",
                f"{served!r} differs from compaction_model {model!r} "
                f"({origins['compaction_model']}); the settings serve one model: give one name",
            )
    knobs = {knob: values[knob] for knob in KNOBS if knob in values}
    try:
        config = CompactionConfig(**knobs)
    except ConfigError as error:
        cap = "compaction_hard_cap_tokens"
        if error.knob == "compaction_threshold_tokens" and origins[error.knob].kind == DEFAULT:
            # Only the hard cap was set, below the default threshold: name the line that did it.
            raise fail(
                cap,
                f"{knobs[cap]} must be above compaction_threshold_tokens "
                f"({CompactionConfig().compaction_threshold_tokens}, the default): set both",
            ) from None
        raise fail(error.knob, str(error).split(": ", 1)[-1]) from None
    price_keys = [k for k in SETTABLE_KEYS if k.startswith("summarizer.price.")]
    price_values = {k.rsplit(".", 1)[1]: values[k] for k in price_keys if k in values}
    price: StatedPrice | None = None
    if price_values:
        for needed in ("input_per_mtok", "output_per_mtok"):
            if needed not in price_values:
                some = next(k for k in price_keys if k in values)
                raise fail(some, f"a stated price needs summarizer.price.{needed} too")
        try:
            price = StatedPrice(**price_values)
        except ConfigError as error:
            raise fail(error.knob, str(error).split(": ", 1)[-1]) from None
    # The settings serve the model named here (by compaction_model or summarizer.model); with no
    # model named anywhere they serve whichever model a session has.
    named = origins["compaction_model"].kind != DEFAULT
    settings_args: dict[str, Any] = {
        "model": config.compaction_model if named else None,
        "price": price,
    }
    for key in ("import", "options", "base_url", "timeout_s", "no_key"):
        if f"summarizer.{key}" in values:
            settings_args[_attr(SummarizerSettings, key)] = values[f"summarizer.{key}"]
    try:
        settings = SummarizerSettings(**settings_args)
    except ConfigError as error:
        raise fail(error.knob, str(error).split(": ", 1)[-1]) from None
    origins.setdefault("summarizer.options", Origin(DEFAULT))
    return ResolvedConfig(
        path=files.path,
        file_found=files.found,
        user_path=files.user_path,
        user_file_found=files.user_found,
        config=config,
        summarizer=settings,
        origins=origins,
        trust=trust or assess(files.path.parent.parent, None, {}, (), {}),
    )


def trust_workspace(workspace: Path | str) -> tuple[TrustRecord, dict[str, object]]:
    """Record the workspace file's exact content as trusted. Returns the record and the gated
    settings it holds (what the user has just allowed). A file that does not parse is not
    trusted: it would need trusting again once fixed."""
    folder = Path(workspace)
    if not folder.is_dir():
        raise TrustError(f"workspace {folder} does not exist or is not a folder")
    path = config_path(folder)
    raw = read_config_bytes(path)
    if raw is None:
        raise TrustError(f"{path}: no such file; nothing to trust")
    layer, _ = parse_config(raw, path)
    values = _flat(layer)
    record = TrustRecord(
        workspace=str(workspace_key(folder)),
        config_file=str(path),
        sha256=digest(raw),
        trusted_at_ms=time.time_ns() // 1_000_000,
    )
    try:
        write_record(record)
    except OSError as error:
        raise TrustError(
            f"{record_path(folder)}: cannot record trust: {error.strerror or error}"
        ) from None
    return record, {key: _shown(values[key]) for key in gated_keys(values)}


def _shown(value: object) -> object:
    """A gated value as `trust` shows it: an option named like a credential is a secret."""
    from engine.redaction import looks_like_credential

    if isinstance(value, dict):
        return {k: "[redacted]" if looks_like_credential(str(k)) else v for k, v in value.items()}
    return value
