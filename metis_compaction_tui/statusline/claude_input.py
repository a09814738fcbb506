"""Claude Code's statusLine JSON (stdin), read with the standard library only.

Claude Code runs the status-line command on every update and cancels a run still in flight, so
this path imports no msgspec, engine or importer (each costs tens of milliseconds). Every field is
untrusted: numbers must be non-negative ints, strings are cut short and cleaned before display.
"""

from __future__ import annotations

from metis_compaction_tui.statusline.json_object import load_object

MAX_STDIN_BYTES = 1 << 20  # the real object is a few hundred bytes; refuse a flood


class ClaudeInput:
    """The fields the line uses. `current_usage` is None right after /compact (Claude Code has
    not measured the new context yet), and then `used_percentage` is stale too: both ignored."""

    __slots__ = (
        "cache_creation_tokens",
        "cache_read_tokens",
        "context_tokens",
        "cost_usd",
        "input_tokens",
        "model_id",
        "model_name",
        "project_dir",
        "session_id",
        "transcript_path",
        "usage_said",
        "window_tokens",
    )

    def __init__(self) -> None:
        self.session_id = ""
        self.transcript_path = ""
        self.model_id = ""
        self.model_name = ""
        self.project_dir = ""  # where Claude Code reads the project's settings files
        self.window_tokens: int | None = None
        # Whether the input has current_usage at all (null after /compact is saying something).
        # Claude Code before 2.0.65 sent no context_window, and the first versions with one no
        # current_usage: the line then takes the context from the transcript.
        self.usage_said = False
        self.context_tokens: int | None = None  # input + cache read + cache creation
        self.input_tokens: int | None = None
        self.cache_read_tokens: int | None = None
        self.cache_creation_tokens: int | None = None
        self.cost_usd: float | None = None


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value != value or value < 0 or value > 1e15:  # NaN, negative, absurd
        return None
    return int(value)


def _text(value: object, limit: int = 4096) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _object(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def parse_claude_input(raw: bytes) -> ClaudeInput | None:
    """None when stdin is not a JSON object (empty, garbage, too big)."""
    if not raw.strip() or len(raw) > MAX_STDIN_BYTES:
        return None
    data = load_object(raw)
    if data is None:
        return None
    got = ClaudeInput()
    got.session_id = _text(data.get("session_id"), 200)
    got.transcript_path = _text(data.get("transcript_path"))
    folders = _object(data.get("workspace"))
    got.project_dir = _text(folders.get("project_dir")) or _text(data.get("cwd"))
    model = data.get("model")
    if isinstance(model, str):
        got.model_id = got.model_name = model[:200]
    else:
        model = _object(model)
        got.model_id = _text(model.get("id"), 200)
        got.model_name = _text(model.get("display_name"), 200) or got.model_id
    window = _object(data.get("context_window"))
    got.window_tokens = _count(window.get("context_window_size")) or None
    got.usage_said = "current_usage" in window
    usage = window.get("current_usage")
    if isinstance(usage, dict):
        got.input_tokens = _count(usage.get("input_tokens")) or 0
        got.cache_read_tokens = _count(usage.get("cache_read_input_tokens")) or 0
        got.cache_creation_tokens = _count(usage.get("cache_creation_input_tokens")) or 0
        got.context_tokens = got.input_tokens + got.cache_read_tokens + got.cache_creation_tokens
    cost = _object(data.get("cost")).get("total_cost_usd")
    if isinstance(cost, int | float) and not isinstance(cost, bool) and 0 <= cost < 1e9:
        got.cost_usd = float(cost)
    return got


# Claude Code's windows: 200k, or 1M where the model id says so ("claude-sonnet-4-5[1m]").
DEFAULT_WINDOW = 200_000
LONG_WINDOW = 1_000_000


def window_for(model_id: str, model_name: str) -> int:
    """A model's window read off its name: for a Claude Code that does not say it, and over the
    200k some versions report for a 1M session."""
    named = f"{model_id} {model_name}".lower()
    return LONG_WINDOW if "[1m]" in named or "1m context" in named else DEFAULT_WINDOW
