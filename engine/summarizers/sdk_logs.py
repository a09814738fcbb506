"""The provider SDKs log each request's body at DEBUG (the span, which may hold a pasted key):
their records are redacted before any handler sees them."""

from __future__ import annotations

import logging

from engine.redaction import redact


class RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno <= logging.DEBUG or record.args:
            record.msg, record.args = redact(record.getMessage()), None
        return True


def redact_logs_of(*loggers: str) -> None:
    for name in loggers:
        logging.getLogger(name).addFilter(RedactingFilter())
