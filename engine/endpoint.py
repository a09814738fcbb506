"""Where a compaction call goes, in the words `compact`, its preview and the app's compact-now
screen show: the user sees which host gets the session (and the key) before and after a call."""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from engine.summarizers.base import EXTRACTIVE_MODEL
from engine.summarizers.settings import SummarizerSettings

ANTHROPIC_DEFAULT = "Anthropic API default"
OPENAI_DEFAULT = "OpenAI API default"
# Each SDK summarizer's prefix, the variable its SDK reads a base URL from, and its default host.
_SDK_ENDPOINTS = (
    ("anthropic:", "ANTHROPIC_BASE_URL", ANTHROPIC_DEFAULT),
    ("openai:", "OPENAI_BASE_URL", OPENAI_DEFAULT),
)
OFFLINE = "offline"


def origin_of(url: str) -> str:
    """scheme://host[:port] of a URL: never its user, password, path or query."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    try:
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        port = ""
    return f"{parts.scheme or '?'}://{host}{port}"


def call_endpoint(
    model: str,
    settings: SummarizerSettings | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> str:
    """The endpoint `model`'s summary call would reach with `settings` (engine.summarizers'
    choice: an import path first, then the offline model, then Anthropic's SDK)."""
    chosen = (settings or SummarizerSettings()).for_model(model)
    if chosen.import_path is not None:
        return f"imported summarizer {chosen.import_path} (its own endpoint)"
    if model == EXTRACTIVE_MODEL or model.startswith("local:"):
        return OFFLINE
    for prefix, variable, default in _SDK_ENDPOINTS:
        if model.startswith(prefix):
            if chosen.base_url:
                return origin_of(chosen.base_url)
            env_url = (os.environ if environ is None else environ).get(variable)
            if env_url:  # the SDK reads it when no base URL is passed
                return f"{origin_of(env_url)} ({variable})"
            return default
    return "the summarizer the program was given"
