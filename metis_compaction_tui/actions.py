"""The one registry of the app's actions: name, description, key.

Everything a user can do is declared here once. The footer (through each owner's BINDINGS), the
command palette (App.get_system_commands) and the help screen are all generated from this table,
so a key or a description is changed in one place and can never disagree between them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from textual.binding import Binding, BindingType

Scope = Literal[
    "app",
    "messages",
    "sessions",
    "summary",
    "detail",
    "compact",
    "cache",
    "trim",
    "knobs",
    "confirm",
    "help",
]

SCOPE_TITLES: dict[Scope, str] = {
    "app": "Everywhere",
    "messages": "Message list",
    "sessions": "Session list",
    "summary": "Summary detail",
    "detail": "Message detail",
    "compact": "Compact now",
    "cache": "Cache browser",
    "trim": "Trim the cache",
    "knobs": "What-if knobs",
    "confirm": "Confirmation",
    "help": "Help",
}


@dataclass(frozen=True)
class ActionSpec:
    """One action. `action` is the Textual action string run on the scope's owner (the App for
    "app", the screen or widget otherwise); `title` is the palette entry; `keys` may list several
    comma-separated keys, `key_display` is how the footer and help screen show them."""

    action: str
    title: str
    description: str
    scope: Scope
    keys: str | None = None
    key_display: str | None = None
    footer: bool = True
    priority: bool = False
    palette: bool = True  # listed in the command palette (navigation keys are not)
    bind: bool = True  # False: the key is bound elsewhere (Textual's own ctrl+p)
    short: str | None = None  # the footer's word when the title is too long for it

    @property
    def shown_key(self) -> str:
        if self.key_display:
            return self.key_display
        return (self.keys or "").split(",")[0]


ACTIONS: tuple[ActionSpec, ...] = (
    # -- everywhere ------------------------------------------------------------------------
    ActionSpec(
        "compact_now",
        "Compact now",
        "Preview, summarize and splice the span",
        "app",
        "c",
        short="Compact",
    ),
    ActionSpec(
        "undo_compaction",
        "Undo compaction",
        "Restore the latest compaction",
        "app",
        "u",
        short="Undo",
    ),
    ActionSpec(
        "cache_browser",
        "Browse cache",
        "Rows of compaction-cache.sqlite",
        "app",
        "b",
        short="Cache",
    ),
    ActionSpec(
        "toggle_follow",
        "Follow mode",
        "Scroll new messages in, or pause",
        "app",
        "f",
        short="Follow",
    ),
    ActionSpec(
        "open_selected", "Open message", "Detail of the selected message", "app", "o", footer=False
    ),
    ActionSpec(
        "next_session", "Next session", "Inspect the next session", "app", "]", footer=False
    ),
    ActionSpec(
        "previous_session", "Previous session", "Inspect the previous one", "app", "[", footer=False
    ),
    ActionSpec(
        "toggle_theme",
        "Light/dark theme",
        "Switch between light and dark",
        "app",
        "t",
        short="Theme",
    ),
    ActionSpec(
        "what_if",
        "What-if knobs",
        "Re-plan a transcript under other knobs",
        "app",
        "w",
        footer=False,
    ),
    ActionSpec(
        "settings",
        "Settings",
        "Each knob and summarizer setting, and where it came from",
        "app",
        "s",
        footer=False,
    ),
    ActionSpec("reload", "Reload", "Read the store again now", "app", "r", footer=False),
    ActionSpec("help", "Help", "Keys and what each view shows", "app", "question_mark,f1", "?"),
    ActionSpec(
        "command_palette",
        "Command palette",
        "Search every action",
        "app",
        "ctrl+p",
        "^p",
        footer=False,
        palette=False,
        bind=False,
    ),
    ActionSpec("quit", "Quit", "Leave the inspector", "app", "q", priority=False),
    # -- the message list (owned by MessageList) ---------------------------------------------
    ActionSpec(
        "open",
        "Open",
        "Detail of the message under the cursor",
        "messages",
        "enter",
        "⏎",
        palette=False,
    ),
    ActionSpec(
        "cursor_end",
        "Newest",
        "Jump to the newest message, follow again",
        "messages",
        "end,G",
        "End",
        footer=False,
        palette=False,
    ),
    ActionSpec(
        "cursor_home",
        "Oldest",
        "Jump to the first message (pauses follow)",
        "messages",
        "home,g",
        "Home",
        footer=False,
        palette=False,
    ),
    # -- the session list ---------------------------------------------------------------------
    ActionSpec(
        "select",
        "Inspect",
        "Inspect the highlighted session",
        "sessions",
        "enter",
        "⏎",
        palette=False,
    ),
    # -- summary detail -----------------------------------------------------------------------
    ActionSpec("close", "Back", "Back to the dashboard", "summary", "escape,q", "Esc"),
    ActionSpec(
        "switch_pane",
        "Other pane",
        "Summary text ↔ archived originals",
        "summary",
        "tab",
        footer=False,
        palette=False,
    ),
    ActionSpec("close", "Back", "Close the message", "detail", "escape,q", "Esc"),
    # -- compact now --------------------------------------------------------------------------
    ActionSpec(
        "summarize",
        "Summarize",
        "Run the compaction call for this span",
        "compact",
        "ctrl+r",
        "^r",
        priority=True,
    ),
    ActionSpec("accept", "Accept", "Splice the summary into the session", "compact", "a"),
    ActionSpec("reject", "Reject", "Discard the summary, change nothing", "compact", "r"),
    ActionSpec("close", "Close", "Close; nothing is changed", "compact", "escape", "Esc"),
    # -- cache browser ------------------------------------------------------------------------
    ActionSpec("evict", "Evict row", "Delete the highlighted cache row", "cache", "d,delete", "d"),
    ActionSpec("trim", "Trim to N", "Keep the N most recently read rows", "cache", "n"),
    ActionSpec("clear", "Clear cache", "Delete every cache row", "cache", "x"),
    ActionSpec("filter", "Filter", "Filter rows by key, model or text", "cache", "slash", "/"),
    ActionSpec("sort_next", "Sort", "Sort by the next column", "cache", "s"),
    ActionSpec("sort_reverse", "Reverse", "Reverse the sort order", "cache", "v", footer=False),
    ActionSpec("refresh", "Refresh", "Read the cache again", "cache", "r", footer=False),
    ActionSpec("close", "Back", "Back to the dashboard", "cache", "escape", "Esc"),
    ActionSpec("close", "Cancel", "Trim nothing", "trim", "escape", "Esc"),
    ActionSpec("apply", "Apply", "Re-plan under these knobs", "knobs", "ctrl+s", "^s"),
    ActionSpec("close", "Cancel", "Keep the knobs as they were", "knobs", "escape", "Esc"),
    # -- confirmation and help ----------------------------------------------------------------
    ActionSpec("confirm", "Yes", "Do it", "confirm", "y", palette=False),
    ActionSpec("cancel", "No", "Change nothing", "confirm", "n,escape", "n/Esc", palette=False),
    ActionSpec("close", "Back", "Close help", "help", "escape,q,question_mark", "Esc"),
)


def actions_for(scope: Scope) -> tuple[ActionSpec, ...]:
    return tuple(spec for spec in ACTIONS if spec.scope == scope)


def bindings_for(scope: Scope) -> list[BindingType]:
    """The BINDINGS list for the scope's owner."""
    return [
        Binding(
            spec.keys,
            spec.action,
            spec.short or spec.title,
            show=spec.footer,
            key_display=spec.key_display,
            priority=spec.priority,
            tooltip=spec.description,
        )
        for spec in actions_for(scope)
        if spec.keys and spec.bind
    ]


def palette_entries(scopes: Iterable[Scope]) -> list[ActionSpec]:
    """What the command palette lists for a screen: its own scope's actions, then the app's."""
    wanted = list(scopes)
    return [
        spec
        for scope in wanted
        for spec in actions_for(scope)
        if spec.palette and not (scope == "app" and spec.action == "command_palette")
    ]


def spec(scope: Scope, action: str) -> ActionSpec:
    for candidate in actions_for(scope):
        if candidate.action == action:
            return candidate
    raise KeyError(f"no action {action!r} in scope {scope!r}")
