"""Errors shared across the engine's modules."""


class ConfigError(ValueError):
    """A knob with a bad value; `knob` names it."""

    def __init__(self, knob: str, detail: str) -> None:
        super().__init__(f"{knob}: {detail}")
        self.knob = knob
