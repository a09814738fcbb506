"""One status line from named fields: the default segments (dropped from the least important when
the width is short), a `--format` template, or JSON. Standard library only."""

from __future__ import annotations

from metis_compaction_tui.safe_text import neutralise

FIELD_NAMES = (
    "source",
    "model",
    "session",
    "ctx",
    "ctx_from",
    "window",
    "window_from",
    "ctx_pct",
    "auto_at",
    "auto_window",
    "auto_from",
    "auto_pct",
    "auto_left",
    "trigger",
    "soft_in",
    "pending",
    "threshold",
    "hard_cap",
    "explain",
    "agent_compactions",
    "our_compactions",
    "last_before",
    "last_after",
    "cache_pct",
    "compaction_usd",
    "stale",
    "note",
)


def clean(text: str, limit: int = 80) -> str:
    """Data shown on the line, by the app's one rule (safe_text.neutralise: control, C1 and bidi
    code points made visible, so an escape sequence reaches the terminal as text), on one line,
    length capped."""
    text = neutralise(text[: limit * 2 + 16], single_line=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# The fields that count tokens: written as the line writes them (65k), in a template too.
TOKEN_FIELDS = frozenset(
    (
        "ctx",
        "window",
        "auto_at",
        "auto_window",
        "auto_left",
        "soft_in",
        "pending",
        "threshold",
        "hard_cap",
        "last_before",
        "last_after",
    )
)


def short(tokens: int | None) -> str:
    if tokens is None:
        return "?"
    if tokens < 0:
        return "-" + short(-tokens)
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.1f}M"
    if tokens >= 10_000:
        return f"{tokens // 1000}k"
    if tokens >= 1000:
        return f"{tokens / 1000:.1f}k"
    return str(tokens)


_COLOURS = {"green": "\x1b[32m", "yellow": "\x1b[33m", "red": "\x1b[31m", "dim": "\x1b[2m"}
_RESET = "\x1b[0m"


class Segment:
    __slots__ = ("parts",)

    def __init__(self, *parts: tuple[str, str | None]) -> None:
        # (text, colour name or None). Every piece is neutralised here, whatever it came from
        # (stdin, the transcript, the saved state file): no field reaches the terminal raw.
        self.parts = tuple((neutralise(text, single_line=True), colour) for text, colour in parts)

    def plain(self) -> str:
        return "".join(text for text, _ in self.parts)

    def coloured(self) -> str:
        return "".join(f"{_COLOURS[c]}{text}{_RESET}" if c else text for text, c in self.parts)


def _zone(pct: int | None) -> str | None:
    if pct is None:
        return None
    return "green" if pct < 70 else "yellow" if pct < 100 else "red"


def segments(f: dict[str, object]) -> list[Segment]:
    """The default line, most important first."""
    out: list[Segment] = []
    ctx, window = f["ctx"], f["window"]
    if f["source"] == "metis":
        if ctx is None:  # no session read: what went wrong is the whole line
            return [Segment((str(f["note"] or "no figures"), "dim"))]
        out.append(
            Segment(
                (f"history {short(ctx)} (pending {short(f['pending'])}", None),  # type: ignore[arg-type]
                (f" of {short(f['threshold'])}/{short(f['hard_cap'])})", None),  # type: ignore[arg-type]
            )
        )
    elif ctx is None:
        what = "just compacted" if f["stale"] else "not measured yet"
        out.append(Segment((f"ctx ? ({what})", "dim")))
    else:
        pct = f["ctx_pct"]
        guessed = "~" if f["window_from"] == "model name" else ""
        tail = f"/{guessed}{short(window)} {pct}%" if window else ""  # type: ignore[arg-type]
        out.append(Segment((f"ctx {short(ctx)}", None), (tail, _zone(f["auto_pct"]))))  # type: ignore[arg-type]
        if f["auto_at"] is not None:
            left = f["auto_left"]
            text = (
                f"auto-compact at {short(f['auto_at'])}: {short(left)} left"  # type: ignore[arg-type]
                if isinstance(left, int) and left > 0
                else f"past auto-compact ({short(f['auto_at'])})"  # type: ignore[arg-type]
            )
            out.append(Segment((text, _zone(f["auto_pct"]))))  # type: ignore[arg-type]
    trigger = f["trigger"]
    if trigger:
        colour = {"ok": "green", "soft": "yellow", "forced": "red"}.get(str(trigger))
        detail = f", soft in {short(f['soft_in'])}" if f["soft_in"] is not None else ""  # type: ignore[arg-type]
        out.append(Segment(("ours: ", None), (str(trigger), colour), (detail, None)))
    if f["source"] == "metis":
        if f["our_compactions"] is not None:
            out.append(Segment((f"compactions {f['our_compactions']}", None)))
    elif f["agent_compactions"] is not None:
        out.append(
            Segment(
                (
                    f"compactions {f['agent_compactions']} agent / {f['our_compactions']} ours",
                    None,
                )
            )
        )
    if f["last_before"] is not None or f["last_after"] is not None:
        out.append(
            Segment((f"last {short(f['last_before'])}→{short(f['last_after'])}", None))  # type: ignore[arg-type]
        )
    if f["cache_pct"] is not None:
        out.append(Segment((f"cache {f['cache_pct']}%", None)))
    if f["compaction_usd"] is not None:
        sign = "$" if f["source"] == "metis" else "≤$"  # the agent's: an upper-bound estimate
        out.append(Segment((f"compaction {sign}{f['compaction_usd']}", None)))
    if f["note"]:
        out.append(Segment((str(f["note"]), "dim")))
    return out


SEPARATOR = " | "


def render_line(f: dict[str, object], width: int, colour: bool) -> str:
    """Drop the least important segments until the line fits; cut the last one if it must."""
    parts = segments(f)
    note = parts[-1] if f["note"] and parts else None
    while len(parts) > 1 and len(SEPARATOR.join(p.plain() for p in parts)) > width:
        # keep a note (what went wrong) over a figure
        drop = -2 if note is not None and parts[-1] is note and len(parts) > 2 else -1
        del parts[drop]
    plain = SEPARATOR.join(p.plain() for p in parts)
    if len(plain) > width:
        return plain[: max(1, width - 1)] + "…"
    if not colour:
        return plain
    return SEPARATOR.join(p.coloured() for p in parts)


def _template_names(template: str) -> list[str]:
    names = []
    position = 0
    while (start := template.find("{", position)) >= 0:
        end = template.find("}", start)
        if end < 0:
            break
        names.append(template[start + 1 : end])
        position = end + 1
    return names


def unknown_fields(template: str) -> list[str]:
    """The `{name}`s in a template that are not fields (a typo would print as written)."""
    return [name for name in _template_names(template) if name not in FIELD_NAMES]


def render_template(template: str, f: dict[str, object], width: int) -> str:
    """`{name}` is replaced by the field (token counts as the line writes them); anything else
    is kept as written (no format specs: the template is text, not code). Names are checked
    when the command line is read (unknown_fields)."""
    out: list[str] = []
    position = 0
    while (start := template.find("{", position)) >= 0:
        end = template.find("}", start)
        if end < 0:
            break
        name = template[start + 1 : end]
        out.append(template[position:start])
        if name in f:
            value = f[name]
            if value is None:
                out.append("-")
            elif name in TOKEN_FIELDS and isinstance(value, int):
                out.append(short(value))
            else:
                out.append(clean(str(value)))
        else:
            out.append(template[start : end + 1])
        position = end + 1
    out.append(template[position:])
    line = neutralise("".join(out), single_line=True)
    return line if len(line) <= width else line[: max(1, width - 1)] + "…"


def render_json(f: dict[str, object]) -> str:
    import json  # only for --json: the plain line must not pay for it

    return json.dumps(f, ensure_ascii=True, separators=(",", ":"))
