"""Summarizers from elsewhere: an import path in the config names a factory of any object that
meets the `Summarizer` protocol (metis dev's own provider adapter, a team's gateway client).

The factory is called as `factory(model, **options)` and must return a summarizer whose `name` is
exactly `model`: a named model is never served by another. Any failure is a ConfigError naming
`summarizer.import`, never a fallback to some other summarizer.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from engine.errors import ConfigError
from engine.redaction import looks_like_credential, register_secret
from engine.summarizers.base import Summarizer

KNOB = "summarizer.import"


def load_factory(import_path: str) -> Callable[..., Any]:
    """The callable at "package.module:attribute"; ConfigError says why it cannot be had."""
    module_name, _, attribute = import_path.partition(":")
    if not module_name or not attribute:
        raise ConfigError(KNOB, f"{import_path!r} is not 'package.module:factory'")
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as error:  # ImportError, or whatever the module raised while loading
        raise ConfigError(
            KNOB,
            f"cannot import {module_name!r} for {import_path!r}: {type(error).__name__}: {error}",
        ) from None
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ConfigError(KNOB, f"{module_name!r} has no {attribute!r}") from None
    if not callable(target):
        raise ConfigError(KNOB, f"{import_path!r} is not callable")
    return target


def summarizer_from_factory(
    import_path: str, model: str, options: Mapping[str, object] | None = None
) -> Summarizer:
    factory = load_factory(import_path)
    for name, value in (options or {}).items():
        if looks_like_credential(name):  # a gateway's key or token: a secret (engine.redaction)
            register_secret(value)
    try:
        made = factory(model, **dict(options or {}))
    except Exception as error:
        raise ConfigError(
            KNOB, f"{import_path}({model!r}) failed: {type(error).__name__}: {error}"
        ) from None
    if not isinstance(made, Summarizer):
        raise ConfigError(
            KNOB,
            f"{import_path}({model!r}) returned a {type(made).__name__}, which does not meet the "
            "Summarizer protocol (name, summarize, estimate_cost, aclose)",
        )
    if made.name != model:
        raise ConfigError(
            KNOB, f"{import_path}({model!r}) returned a summarizer serving {made.name!r}"
        )
    return made
