"""Claude Code's auto-compact point (statusline.auto_compact), one test per documented statement,
with real settings files (and a FIFO, a folder, an oversized file) in a temporary folder."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from metis_compaction_tui.statusline import main
from metis_compaction_tui.statusline.auto_compact import (
    SETTINGS_MAX_BYTES,
    auto_compact_point,
    settings_files,
)

K = 1000


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """(user folder, project folder, environment naming the user folder)."""
    user, project = tmp_path / "user", tmp_path / "project"
    (user).mkdir()
    (project / ".claude").mkdir(parents=True)
    return user, project, {"CLAUDE_CONFIG_DIR": str(user)}


def put(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


# -- the default: the model's window, less the summary's room and the buffer ----------------------


@pytest.mark.parametrize(("window", "at"), [(200 * K, 167 * K), (1000 * K, 967 * K)])
def test_with_nothing_set_it_compacts_near_the_models_limit(window: int, at: int) -> None:
    point = auto_compact_point(window, None, {})
    assert (point.at, point.window, point.source, point.notes) == (at, window, "default", [])


# -- CLAUDE_CODE_AUTO_COMPACT_WINDOW ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "model", "window"),
    [
        ("500000", 1000 * K, 500 * K),  # "a lower value like 500000 on a 1M model"
        ("500000", 200 * K, 200 * K),  # capped at the model's actual window
        ("50000", 200 * K, 100 * K),  # the range starts at 100K
        ("2000000", 1000 * K, 1000 * K),  # and ends at 1M
        ("4e5", 1000 * K, 400 * K),
    ],
)
def test_the_window_variable_sets_the_window_within_its_range(
    value: str, model: int, window: int
) -> None:
    point = auto_compact_point(model, None, {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": value})
    assert (point.window, point.at, point.source) == (window, window - 33 * K, "env")


def test_the_window_variable_takes_precedence_over_the_setting(dirs) -> None:  # type: ignore[no-untyped-def]
    _user, project, env = dirs
    put(project / ".claude" / "settings.local.json", {"autoCompactWindow": 300_000})
    env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = "400000"
    point = auto_compact_point(1000 * K, str(project), env)
    assert (point.window, point.source) == (400 * K, "env")


def test_a_window_variable_that_is_no_number_is_ignored_with_a_note() -> None:
    point = auto_compact_point(200 * K, None, {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "lots"})
    assert (point.at, point.source) == (167 * K, "default")
    assert "CLAUDE_CODE_AUTO_COMPACT_WINDOW" in point.notes[0] and "ignored" in point.notes[0]


# -- the autoCompactWindow setting and the files' precedence --------------------------------------


def test_the_setting_in_the_user_file_under_claude_config_dir(dirs) -> None:  # type: ignore[no-untyped-def]
    user, project, env = dirs
    path = put(user / "settings.json", {"autoCompactWindow": 400_000})
    point = auto_compact_point(1000 * K, str(project), env)
    assert (point.window, point.at, point.source) == (400 * K, 367 * K, f"setting {path}")


def test_project_over_user_and_local_over_project(dirs) -> None:  # type: ignore[no-untyped-def]
    user, project, env = dirs
    put(user / "settings.json", {"autoCompactWindow": 400_000})
    shared = put(project / ".claude" / "settings.json", {"autoCompactWindow": 500_000})
    assert auto_compact_point(1000 * K, str(project), env).source == f"setting {shared}"
    local = put(project / ".claude" / "settings.local.json", {"autoCompactWindow": 600_000})
    point = auto_compact_point(1000 * K, str(project), env)
    assert (point.window, point.source) == (600 * K, f"setting {local}")


def test_auto_in_a_higher_file_means_the_default(dirs) -> None:  # type: ignore[no-untyped-def]
    user, project, env = dirs
    put(user / "settings.json", {"autoCompactWindow": 400_000})
    put(project / ".claude" / "settings.json", {"autoCompactWindow": "auto"})
    point = auto_compact_point(1000 * K, str(project), env)
    assert (point.at, point.source) == (967 * K, "default")


def test_the_setting_is_capped_like_the_variable(dirs) -> None:  # type: ignore[no-untyped-def]
    user, _project, env = dirs
    put(user / "settings.json", {"autoCompactWindow": 900_000})
    assert auto_compact_point(200 * K, None, env).window == 200 * K
    put(user / "settings.json", {"autoCompactWindow": 10})
    assert auto_compact_point(1000 * K, None, env).window == 100 * K


def test_without_claude_config_dir_the_user_file_is_under_home(tmp_path: Path) -> None:
    home = str(Path.home())
    assert settings_files(None, {})[-1] == os.path.join(home, ".claude", "settings.json")
    assert settings_files(str(tmp_path), {"CLAUDE_CONFIG_DIR": "/x"}) == [
        str(tmp_path / ".claude" / "settings.local.json"),
        str(tmp_path / ".claude" / "settings.json"),
        "/x/settings.json",
    ]


# -- CLAUDE_AUTOCOMPACT_PCT_OVERRIDE: a percentage of the window, which can only lower the point ---


def test_the_percentage_lowers_the_point() -> None:
    point = auto_compact_point(200 * K, None, {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"})
    assert (point.at, point.source) == (100 * K, "pct override")


def test_a_percentage_above_the_default_point_has_no_effect() -> None:
    point = auto_compact_point(200 * K, None, {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "95"})
    assert (point.at, point.source) == (167 * K, "default")


def test_the_percentage_is_of_the_compaction_window() -> None:
    env = {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "500000", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}
    point = auto_compact_point(1000 * K, None, env)
    assert (point.window, point.at, point.source) == (500 * K, 250 * K, "pct override")


@pytest.mark.parametrize("value", ["0", "101", "-5", "half", "nan"])
def test_a_percentage_out_of_range_is_ignored_with_a_note(value: str) -> None:
    point = auto_compact_point(200 * K, None, {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": value})
    assert point.at == 167 * K and "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE" in point.notes[0]


# -- settings files are someone else's ------------------------------------------------------------


def test_bad_json_is_ignored_with_a_note_and_the_next_file_decides(dirs) -> None:  # type: ignore[no-untyped-def]
    user, project, env = dirs
    bad = project / ".claude" / "settings.json"
    bad.write_text('{"autoCompactWindow": 300000,')  # cut short
    put(user / "settings.json", {"autoCompactWindow": 400_000})
    point = auto_compact_point(1000 * K, str(project), env)
    assert point.window == 400 * K
    assert point.notes == [f"settings {bad}: not a JSON object; ignored"]


def test_a_setting_of_the_wrong_type_is_ignored_with_a_note(dirs) -> None:  # type: ignore[no-untyped-def]
    user, _project, env = dirs
    put(user / "settings.json", {"autoCompactWindow": "400k"})
    point = auto_compact_point(1000 * K, None, env)
    assert point.at == 967 * K and "autoCompactWindow" in point.notes[0]


def test_a_fifo_a_folder_and_an_oversized_file_are_not_read(dirs) -> None:  # type: ignore[no-untyped-def]
    user, project, env = dirs
    os.mkfifo(project / ".claude" / "settings.local.json")  # no writer: opening must not hang
    (project / ".claude" / "settings.json").mkdir()
    big = user / "settings.json"
    big.write_text('{"autoCompactWindow": 400000, "pad": "' + "x" * SETTINGS_MAX_BYTES + '"}')
    point = auto_compact_point(1000 * K, str(project), env)
    assert (point.at, point.source) == (967 * K, "default")
    assert len(point.notes) == 3
    assert "not a regular file" in point.notes[0] and "not a regular file" in point.notes[1]
    assert "over 1 MiB" in point.notes[2]


# -- through the command: the line and --json say where the point came from ------------------------


def test_the_line_takes_the_point_from_the_projects_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "proj"
    path = put(project / ".claude" / "settings.json", {"autoCompactWindow": 400_000})
    raw = json.dumps(
        {
            "session_id": "s",
            "cwd": str(project),
            "model": {"id": "claude-sonnet-4-5[1m]", "display_name": "Sonnet 4.5 (1M context)"},
            "workspace": {"current_dir": str(project), "project_dir": str(project)},
            "context_window": {
                "context_window_size": 1_000_000,
                "current_usage": {"input_tokens": 300_000},
            },
        }
    ).encode()
    out = io.StringIO()
    assert main(["--json"], io.BytesIO(raw), out) == 0
    f = json.loads(out.getvalue())
    assert (f["auto_at"], f["auto_window"], f["auto_from"]) == (367_000, 400_000, f"setting {path}")
    assert f["auto_left"] == 67_000 and f["window"] == 1_000_000
    monkeypatch.setenv("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "50")
    out = io.StringIO()
    main(["--no-color", "--width", "200"], io.BytesIO(raw), out)
    assert "past auto-compact (200k)" in out.getvalue()
