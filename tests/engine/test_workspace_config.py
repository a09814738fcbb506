"""`.metis/config.yaml` (§11): every knob and the summarizer settings, errors naming file, line
and key, and precedence flag > environment > workspace file > the user's file > default with each
value's origin; the user's own file needs no trust, and is read within the same bounds."""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path

import pytest

from engine.config import CompactionConfig
from engine.layout import user_config_path
from engine.summarizers import price_origin
from engine.workspace_config import (
    KNOBS,
    ConfigFileError,
    config_path,
    env_name,
    parse_flags,
    resolve_config,
    trust_workspace,
)
from engine.workspace_trust import WorkspaceUntrusted

FULL = """\
# every §11 knob, and how to reach and price the summarizer
compaction_threshold_tokens: 40_000
compaction_hard_cap_tokens: 90_000
compaction_preserve_recent_turns: 4
compaction_model: "anthropic:qwen2.5:7b"
compaction_max_cost_per_session_usd: "0.50"
compaction_summary_prompt_version: "2.0.0"
compaction_cache_max_rows: 500
compaction_max_summary_tokens: 1500
compaction_summary_payback_turns: 5
compaction_strategy: hybrid
summarizer:
  base_url: http://127.0.0.1:11434
  timeout_s: 30
  price:
    input_per_mtok: 0
    output_per_mtok: 0
"""


def write(workspace: Path, text: str) -> Path:
    path = config_path(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_no_file_gives_the_defaults_each_from_default(tmp_path: Path) -> None:
    resolved = resolve_config(tmp_path, environ={})
    assert resolved.config == CompactionConfig()
    assert not resolved.file_found
    assert {origin.kind for origin in resolved.origins.values()} == {"default"}


def test_every_knob_is_read_from_the_file_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, FULL)
    # The endpoint is trust-gated (engine.workspace_trust): withheld until the file is trusted.
    untrusted = resolve_config(tmp_path, environ={})
    assert untrusted.summarizer.base_url is None
    assert untrusted.trust.withheld == ("summarizer.base_url",)
    trust_workspace(tmp_path)
    resolved = resolve_config(tmp_path, environ={})
    config = resolved.config
    assert config.compaction_threshold_tokens == 40_000
    assert config.compaction_hard_cap_tokens == 90_000
    assert config.compaction_preserve_recent_turns == 4
    assert config.compaction_model == "anthropic:qwen2.5:7b"
    assert config.compaction_max_cost_per_session_usd == Decimal("0.50")
    assert config.compaction_summary_prompt_version == "2.0.0"
    assert config.compaction_cache_max_rows == 500
    assert config.compaction_max_summary_tokens == 1500
    assert config.compaction_summary_payback_turns == 5
    assert config.compaction_strategy == "hybrid"
    for knob in KNOBS:
        assert resolved.origins[knob].kind == "file", knob
    assert str(resolved.origins["compaction_threshold_tokens"]) == f"file {path}:2"
    assert str(resolved.origins["summarizer.price.output_per_mtok"]) == f"file {path}:17"
    settings = resolved.summarizer
    assert settings.base_url == "http://127.0.0.1:11434"
    assert settings.timeout_s == 30
    assert price_origin(config.compaction_model, settings) == "price you set ($0)"


def test_precedence_is_flag_then_environment_then_file_then_default(tmp_path: Path) -> None:
    path = write(tmp_path, "compaction_threshold_tokens: 40000\ncompaction_cache_max_rows: 7\n")
    environ = {
        env_name("compaction_threshold_tokens"): "50000",
        env_name("compaction_preserve_recent_turns"): "3",
        env_name("summarizer.base_url"): "http://127.0.0.1:9",
    }
    flags = parse_flags(["threshold_tokens=60000"])
    resolved = resolve_config(tmp_path, flags=flags, environ=environ)
    config = resolved.config
    assert config.compaction_threshold_tokens == 60_000  # flag over environment over file
    assert config.compaction_preserve_recent_turns == 3  # environment over default
    assert config.compaction_cache_max_rows == 7  # file over default
    assert config.compaction_hard_cap_tokens == 80_000  # default
    assert resolved.summarizer.base_url == "http://127.0.0.1:9"
    origins = {key: str(origin) for key, origin in resolved.origins.items()}
    assert origins["compaction_threshold_tokens"] == "flag --set compaction_threshold_tokens"
    assert origins["compaction_preserve_recent_turns"] == (
        "environment METIS_COMPACTION_PRESERVE_RECENT_TURNS"
    )
    assert origins["summarizer.base_url"] == "environment METIS_SUMMARIZER_BASE_URL"
    assert origins["compaction_cache_max_rows"] == f"file {path}:2"
    assert origins["compaction_hard_cap_tokens"] == "default"
    # Without the flag the environment wins; without both, the file.
    assert resolve_config(tmp_path, environ=environ).config.compaction_threshold_tokens == 50_000
    assert resolve_config(tmp_path, environ={}).config.compaction_threshold_tokens == 40_000


def test_a_stored_sessions_knob_stays_unless_something_sets_it(tmp_path: Path) -> None:
    write(tmp_path, "compaction_threshold_tokens: 40000\n")
    resolved = resolve_config(tmp_path, environ={})
    stored = CompactionConfig(
        compaction_preserve_recent_turns=2, compaction_model="local:extractive"
    )
    applied = resolved.apply(stored)
    assert applied.compaction_threshold_tokens == 40_000
    assert applied.compaction_preserve_recent_turns == 2
    assert applied.compaction_model == "local:extractive"
    origins = resolved.origins_for(stored)
    assert origins["compaction_threshold_tokens"].kind == "file"
    assert origins["compaction_preserve_recent_turns"].kind == "session"


def error_of(tmp_path: Path, text: str) -> ConfigFileError:
    write(tmp_path, text)
    with pytest.raises(ConfigFileError) as raised:
        resolve_config(tmp_path, environ={})
    return raised.value


def test_a_bad_key_is_named_with_its_file_and_line(tmp_path: Path) -> None:
    error = error_of(
        tmp_path, "# tuned\ncompaction_threshold_tokens: 40000\ncompaction_treshold: 1\n"
    )
    assert str(error).startswith(f"{config_path(tmp_path)}:3: compaction_treshold: unknown key")
    assert error.knob == "compaction_treshold"


def test_a_bad_nested_key_is_named_with_its_dotted_path(tmp_path: Path) -> None:
    error = error_of(tmp_path, "summarizer:\n  base_url: http://127.0.0.1:1\n  api_key: sk-x\n")
    assert str(error).startswith(f"{config_path(tmp_path)}:3: summarizer.api_key: unknown key")
    assert "sk-x" not in str(error)  # a value is never echoed for an unknown key


def test_a_bad_type_is_named_with_its_file_line_and_key(tmp_path: Path) -> None:
    error = error_of(tmp_path, "\n\ncompaction_cache_max_rows: lots\n")
    assert str(error) == (
        f"{config_path(tmp_path)}:3: compaction_cache_max_rows: 'lots' is not a whole number"
    )
    error = error_of(tmp_path, "summarizer:\n  price:\n    input_per_mtok: cheap\n")
    assert str(error).endswith("summarizer.price.input_per_mtok: 'cheap' is not a decimal number")
    error = error_of(tmp_path, "compaction_cache_max_rows: [1]\n")
    assert str(error).endswith("compaction_cache_max_rows: Expected `int`, got `array`")
    key = "sk-ant-api03-" + "x" * 80  # pasted in the wrong place: never echoed
    error = error_of(tmp_path, f"compaction_cache_max_rows: {key}\n")
    assert key not in str(error) and str(error).endswith("the text there is not a whole number")
    # A number quoted in YAML is text: said so, with what to do.
    error = error_of(tmp_path, "compaction_cache_max_rows: '12'\n")
    assert str(error).endswith("'12' is quoted, so it is text; write it without quotes")
    error = error_of(tmp_path, "compaction_cache_max_rows: 2.5\n")
    assert str(error).endswith("compaction_cache_max_rows: 2.5 is not a whole number")


def test_a_bad_value_is_named_with_the_engines_reason(tmp_path: Path) -> None:
    error = error_of(
        tmp_path, "compaction_preserve_recent_turns: 1\ncompaction_threshold_tokens: 0\n"
    )
    assert str(error).startswith(f"{config_path(tmp_path)}:2: compaction_threshold_tokens: 0 ")


def test_bad_yaml_is_named_with_its_file_and_line(tmp_path: Path) -> None:
    error = error_of(tmp_path, "compaction_cache_max_rows: 10\nsummarizer: [oops\n")
    assert str(error).startswith(f"{config_path(tmp_path)}:3: (YAML syntax): ")


def test_a_partial_stated_price_is_refused(tmp_path: Path) -> None:
    error = error_of(tmp_path, "summarizer:\n  price:\n    input_per_mtok: 1\n")
    assert "summarizer.price.output_per_mtok" in str(error)
    assert str(error).startswith(f"{config_path(tmp_path)}:3: ")


def test_a_bad_environment_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError) as raised:
        resolve_config(tmp_path, environ={"METIS_COMPACTION_CACHE_MAX_ROWS": "many"})
    assert str(raised.value).startswith(
        "METIS_COMPACTION_CACHE_MAX_ROWS: compaction_cache_max_rows: 'many' is not a whole number"
    )


def test_an_unknown_flag_is_refused_naming_it() -> None:
    with pytest.raises(ConfigFileError, match="--set: nope: no such setting"):
        parse_flags(["nope=1"])


def test_summarizer_model_names_the_compaction_model_and_may_not_contradict_it(
    tmp_path: Path,
) -> None:
    write(tmp_path, 'summarizer:\n  import: "tests.plugins.acme:make"\n  model: "acme:small"\n')
    trust_workspace(tmp_path)
    resolved = resolve_config(tmp_path, environ={})
    assert resolved.config.compaction_model == "acme:small"
    assert resolved.summarizer.import_path == "tests.plugins.acme:make"
    error = error_of(tmp_path, 'compaction_model: "local:extractive"\nsummarizer:\n  model: a:b\n')
    assert str(error).startswith(f"{config_path(tmp_path)}:3: summarizer.model: 'a:b' differs")


def test_a_hard_cap_below_the_default_threshold_names_the_hard_caps_line(tmp_path: Path) -> None:
    error = error_of(tmp_path, "# small\ncompaction_hard_cap_tokens: 2000\n")
    assert str(error).startswith(
        f"{config_path(tmp_path)}:2: compaction_hard_cap_tokens: 2000 must be above "
        "compaction_threshold_tokens (30000, the default)"
    )


async def test_manager_kwargs_build_a_manager_with_the_files_model_and_settings(
    tmp_path: Path,
) -> None:
    from engine.manager import SessionManager

    write(tmp_path, FULL)
    with pytest.raises(WorkspaceUntrusted, match=r"summarizer\.base_url"):  # not silently dropped
        resolve_config(tmp_path, environ={}).manager_kwargs()
    trust_workspace(tmp_path)
    manager = SessionManager(
        workspace=tmp_path, **resolve_config(tmp_path, environ={}).manager_kwargs()
    )
    assert manager.config == resolve_config(tmp_path, environ={}).config
    assert manager.summarizer.name == "anthropic:qwen2.5:7b"
    assert manager.summarizer.estimate_cost(10_000, 2_000) == 0  # the stated $0
    await manager.aclose()


def test_a_key_set_twice_is_refused_naming_both_lines(tmp_path: Path) -> None:
    """YAML keeps the last of two equal keys silently; a hand-edited file that sets one twice is
    refused by both lines, nested keys included, instead of running on a value nobody chose."""
    error = error_of(
        tmp_path, "compaction_threshold_tokens: 40000\n# later\ncompaction_threshold_tokens: 9\n"
    )
    assert str(error) == (
        f"{config_path(tmp_path)}:3: compaction_threshold_tokens: set twice (lines 1 and 3); "
        "keep one"
    )
    nested = error_of(tmp_path, "summarizer:\n  timeout_s: 5\n  timeout_s: 50\n")
    assert str(nested).startswith(f"{config_path(tmp_path)}:3: summarizer.timeout_s: set twice")


def test_the_same_name_under_different_parents_is_not_a_repeat(tmp_path: Path) -> None:
    config_path(tmp_path).parent.mkdir(parents=True, exist_ok=True)
    config_path(tmp_path).write_text(
        "summarizer:\n  timeout_s: 5\ncompaction_threshold_tokens: 40000\n"
    )
    resolved = resolve_config(tmp_path, environ={})
    assert resolved.config.compaction_threshold_tokens == 40_000


def test_yaml_aliases_are_refused_by_their_line(tmp_path: Path) -> None:
    """A file read back is untrusted: an alias bomb is refused before it is expanded."""
    bomb = 'a: &a ["x", "x"]\nb: &b [*a, *a]\nc: [*b, *b]\n'
    error = error_of(tmp_path, bomb)
    assert str(error).startswith(f"{config_path(tmp_path)}:2: (YAML alias): ")


def test_an_oversized_file_is_refused(tmp_path: Path) -> None:
    error = error_of(tmp_path, "# " + "x" * 300_000 + "\n")
    assert "a config file is at most" in str(error)


def test_a_set_knob_that_clashes_with_a_sessions_own_names_where_it_was_set(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "compaction_hard_cap_tokens: 50000\n")
    resolved = resolve_config(tmp_path, environ={})
    stored = CompactionConfig(compaction_threshold_tokens=60_000, compaction_hard_cap_tokens=90_000)
    with pytest.raises(ConfigFileError) as raised:
        resolved.apply(stored)
    assert str(raised.value).startswith(f"{path}:1: compaction_threshold_tokens: 60000 must be")
    assert "this session's own knobs" in str(raised.value)


def test_with_no_model_named_the_summarizer_settings_serve_each_sessions_model(
    tmp_path: Path,
) -> None:
    from engine.summarizers import make_summarizer

    write(tmp_path, 'summarizer:\n  import: "tests.plugins.acme:make"\n')
    trust_workspace(tmp_path)
    resolved = resolve_config(tmp_path, environ={})
    assert resolved.summarizer.model is None
    assert make_summarizer("acme:small", resolved.summarizer).name == "acme:small"
    write(
        tmp_path,
        'compaction_model: "acme:small"\nsummarizer:\n  import: "tests.plugins.acme:make"\n',
    )
    trust_workspace(tmp_path)  # a changed file is trusted again
    named = resolve_config(tmp_path, environ={})
    assert named.summarizer.model == "acme:small"
    assert make_summarizer("local:extractive", named.summarizer).name == "local:extractive"


# -- the user's own config file ($XDG_CONFIG_HOME/metis-compaction-tui/config.yaml) -------------


def write_user(text: str) -> Path:
    """The user's own file, in the test's own XDG_CONFIG_HOME (tests/conftest.py)."""
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_user_file_lives_in_the_users_config_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert user_config_path() == tmp_path / "xdg" / "metis-compaction-tui" / "config.yaml"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for unset_or_relative in ("", "relative/xdg"):  # the XDG spec: only an absolute one counts
        monkeypatch.setenv("XDG_CONFIG_HOME", unset_or_relative)
        expected = tmp_path / "home" / ".config" / "metis-compaction-tui" / "config.yaml"
        assert user_config_path() == expected


def test_precedence_is_flag_environment_workspace_file_user_file_session_default(
    tmp_path: Path,
) -> None:
    user = write_user(
        "compaction_threshold_tokens: 35000\n"
        "compaction_hard_cap_tokens: 85000\n"
        "compaction_preserve_recent_turns: 6\n"
        "compaction_cache_max_rows: 9\n"
        "compaction_max_summary_tokens: 1200\n"
    )
    path = write(
        tmp_path,
        "compaction_threshold_tokens: 40000\n"
        "compaction_cache_max_rows: 7\n"
        "compaction_preserve_recent_turns: 4\n",
    )
    environ = {
        env_name("compaction_threshold_tokens"): "50000",
        env_name("compaction_preserve_recent_turns"): "3",
    }
    resolved = resolve_config(
        tmp_path, flags=parse_flags(["threshold_tokens=60000"]), environ=environ
    )
    assert resolved.user_file_found and resolved.user_path == user
    config = resolved.config
    assert config.compaction_threshold_tokens == 60_000  # flag over all four below it
    assert config.compaction_preserve_recent_turns == 3  # environment over both files
    assert config.compaction_cache_max_rows == 7  # workspace file over the user's
    assert config.compaction_hard_cap_tokens == 85_000  # the user's file over the default
    assert config.compaction_max_summary_tokens == 1200
    assert config.compaction_strategy == "summarize"  # nothing set it
    origins = {key: str(origin) for key, origin in resolved.origins.items()}
    assert origins["compaction_threshold_tokens"] == "flag --set compaction_threshold_tokens"
    assert origins["compaction_cache_max_rows"] == f"file {path}:2"
    assert origins["compaction_hard_cap_tokens"] == f"user file {user}:2"
    assert origins["compaction_max_summary_tokens"] == f"user file {user}:5"
    assert origins["compaction_strategy"] == "default"
    shown = resolved.to_json()
    assert shown["compaction_hard_cap_tokens"] == {
        "value": "85000",
        "origin": "user_file",
        "where": f"{user}:2",
    }
    assert shown["compaction_cache_max_rows"]["origin"] == "file"
    # A stored session: the user's file sets a knob over the session's own; what nothing sets
    # stays the session's.
    stored = CompactionConfig(compaction_hard_cap_tokens=99_000, compaction_summary_payback_turns=7)
    applied = resolved.apply(stored)
    assert applied.compaction_hard_cap_tokens == 85_000
    assert applied.compaction_summary_payback_turns == 7
    session_origins = resolved.origins_for(stored)
    assert session_origins["compaction_hard_cap_tokens"].kind == "user_file"
    assert session_origins["compaction_summary_payback_turns"].kind == "session"
    # Layer by layer down: without the flag the environment, then the workspace file, then the
    # user's file, then the default.
    assert resolve_config(tmp_path, environ=environ).config.compaction_threshold_tokens == 50_000
    assert resolve_config(tmp_path, environ={}).config.compaction_threshold_tokens == 40_000
    path.unlink()
    assert resolve_config(tmp_path, environ={}).config.compaction_threshold_tokens == 35_000
    user.unlink()
    assert resolve_config(tmp_path, environ={}).config.compaction_threshold_tokens == 30_000


def test_the_users_endpoint_and_import_apply_without_trust(tmp_path: Path) -> None:
    write_user(
        'compaction_model: "acme:small"\n'
        "summarizer:\n"
        '  import: "tests.plugins.acme:make"\n'
        "  options: {fee_usd: '0.004'}\n"
        '  base_url: "http://127.0.0.1:9"\n'
    )
    resolved = resolve_config(tmp_path, environ={})
    assert resolved.summarizer.import_path == "tests.plugins.acme:make"
    assert resolved.summarizer.options == {"fee_usd": "0.004"}
    assert resolved.summarizer.base_url == "http://127.0.0.1:9"
    assert resolved.config.compaction_model == "acme:small"
    assert resolved.trust.state == "no file" and not resolved.trust.withheld
    assert resolved.manager_kwargs("compact")["summarizer_settings"] == resolved.summarizer


def test_the_same_settings_in_an_untrusted_workspace_file_are_refused(tmp_path: Path) -> None:
    user = write_user('summarizer:\n  base_url: "http://127.0.0.1:9"\n')
    path = write(
        tmp_path,
        "compaction_cache_max_rows: 7\n"
        "summarizer:\n"
        '  base_url: "http://127.0.0.1:8"\n'
        '  import: "tests.plugins.acme:make"\n',
    )
    resolved = resolve_config(tmp_path, environ={})
    # The workspace's endpoint would win over the user's, so it needs trust all the same.
    assert resolved.trust.state == "untrusted"
    assert resolved.trust.withheld == ("summarizer.import", "summarizer.base_url")
    assert resolved.trust.withheld_at == (f"{path}:4", f"{path}:3")
    with pytest.raises(WorkspaceUntrusted) as refused:
        resolved.manager_kwargs("compact")
    assert str(refused.value).startswith(f"{path}:4: summarizer.import (+1 more): ")
    # Withheld, the workspace's values are as if unset: the user's endpoint shows, no import.
    assert resolved.summarizer.base_url == "http://127.0.0.1:9"
    assert str(resolved.origins["summarizer.base_url"]) == f"user file {user}:2"
    assert resolved.summarizer.import_path is None
    assert resolved.origins["summarizer.import"].kind == "default"
    assert resolved.config.compaction_cache_max_rows == 7  # not gated: applies untrusted
    trust_workspace(tmp_path)
    trusted = resolve_config(tmp_path, environ={})
    assert trusted.summarizer.base_url == "http://127.0.0.1:8"
    assert trusted.summarizer.import_path == "tests.plugins.acme:make"
    assert str(trusted.origins["summarizer.base_url"]) == f"file {path}:3"


def user_error(text: str, tmp_path: Path) -> str:
    write_user(text)
    with pytest.raises(ConfigFileError) as raised:
        resolve_config(tmp_path, environ={})
    return str(raised.value)


def test_the_user_files_errors_name_it_by_line_and_key(tmp_path: Path) -> None:
    user = user_config_path()
    unknown = user_error("# mine\ncompaction_treshold: 1\n", tmp_path)
    assert unknown.startswith(f"{user}:2: compaction_treshold: unknown key; the keys here are ")
    bad = user_error("compaction_cache_max_rows: lots\n", tmp_path)
    assert bad == f"{user}:1: compaction_cache_max_rows: 'lots' is not a whole number"
    twice = user_error("compaction_cache_max_rows: 1\ncompaction_cache_max_rows: 2\n", tmp_path)
    assert twice == (f"{user}:2: compaction_cache_max_rows: set twice (lines 1 and 2); keep one")
    bomb = user_error('a: &a ["x", "x"]\nb: [*a, *a]\n', tmp_path)
    assert bomb.startswith(f"{user}:2: (YAML alias): ")
    clash = user_error("compaction_hard_cap_tokens: 2000\n", tmp_path)
    assert clash.startswith(f"{user}:1: compaction_hard_cap_tokens: 2000 must be above ")
    big = user_error("# " + "x" * 300_000 + "\n", tmp_path)
    assert big.startswith(f"{user}: (file): ") and "a config file is at most 262,144" in big


def test_a_user_file_that_is_a_fifo_or_a_link_to_a_device_is_refused_unread(
    tmp_path: Path,
) -> None:
    user = user_config_path()
    user.parent.mkdir(parents=True)
    os.mkfifo(user)  # opened without O_NONBLOCK, this would wait for a writer forever
    with pytest.raises(ConfigFileError) as raised:
        resolve_config(tmp_path, environ={})
    assert str(raised.value) == (f"{user}: (file): is a named pipe (FIFO), not a regular file")
    user.unlink()
    user.symlink_to("/dev/zero")  # read whole, this would never end
    with pytest.raises(ConfigFileError) as raised:
        resolve_config(tmp_path, environ={})
    assert str(raised.value) == (
        f"{user}: (file): is a symbolic link to a device, not a regular file"
    )
    user.unlink()
    user.mkdir()
    with pytest.raises(ConfigFileError, match="is a folder, not a regular file"):
        resolve_config(tmp_path, environ={})


def test_a_user_file_linked_to_a_regular_file_is_read(tmp_path: Path) -> None:
    """Dotfile managers keep the real file elsewhere and link it into ~/.config."""
    dotfiles = tmp_path / "dotfiles" / "metis.yaml"
    dotfiles.parent.mkdir()
    dotfiles.write_text("compaction_cache_max_rows: 11\n")
    user = user_config_path()
    user.parent.mkdir(parents=True)
    user.symlink_to(dotfiles)
    resolved = resolve_config(tmp_path, environ={})
    assert resolved.config.compaction_cache_max_rows == 11
    assert str(resolved.origins["compaction_cache_max_rows"]) == f"user file {user}:1"


def test_summarizer_no_key_is_read_from_the_file_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model server that takes no key says so; sending none needs no trust (it sends less)."""
    path = config_path(tmp_path)
    path.parent.mkdir()
    path.write_text(
        'compaction_model: "anthropic:qwen"\nsummarizer:\n  no_key: true\n'
        "  price: {input_per_mtok: 0, output_per_mtok: 0}\n"
    )
    resolved = resolve_config(tmp_path)
    assert resolved.summarizer.no_key is True and resolved.trust.state != "untrusted"
    monkeypatch.setenv("METIS_SUMMARIZER_NO_KEY", "false")
    assert resolve_config(tmp_path).summarizer.no_key is False
