"""Every credential is a secret (§6, redaction.md): the one place that says which values are, and
strips them from text before it is shown, logged or stored (events, cache rows, error texts).

A secret is any of:
- a value in the environment under a credential's name: ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN,
  OPENAI_API_KEY, and any variable whose name ends in _KEY, _TOKEN, _SECRET or _PASSWORD;
- a header value in ANTHROPIC_CUSTOM_HEADERS (the SDK sends them on every call: x-api-key,
  authorization, a gateway's own header);
- a value registered at run time (`register_secret`): a key passed in code, a plugin's option
  named like a credential;
- text shaped like a key, a bearer token, a credential header's value or an e-mail address.

A server may echo what it received, whole, cut short or URL-encoded: each secret is also matched
URL-encoded, and by its first and last characters when it is long enough that they identify it.

Every pattern is linear in the text: a 5 MB summary or error body is redacted in one pass.
"""

from __future__ import annotations

import functools
import os
import re
from _thread import allocate_lock  # threading.Lock, without importing threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from urllib.parse import quote

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 8  # shorter values ("1", "true") would redact ordinary words
_PART_CHARS = 12  # a long secret's head or tail this long identifies it
_PART_MIN_SECRET = 20

CREDENTIAL_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY")
_CREDENTIAL_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
CUSTOM_HEADERS_VARIABLE = "ANTHROPIC_CUSTOM_HEADERS"
# A plugin option or header named like this holds a credential.
_CREDENTIAL_NAME = re.compile(r"(?i)(key|token|secret|password|passwd|authorization|auth|cookie)")

# Each class run starts where the class cannot continue backwards (the lookbehinds), so a long
# run of key-like characters is scanned once, not once per starting position.
_SECRET_PATTERNS = (
    re.compile(r"(?<![A-Za-z0-9_\-])sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?<![A-Za-z0-9_\-])sk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]+=*"),
    re.compile(  # a credential header's value, with its "Bearer " or "Basic " scheme
        r"(?i)(x-api-key|api[_-]?key|authorization|token)"
        r"([\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic)\s+)?)(?!\[redacted\])[^\s\"',;}\]]+"
    ),
    re.compile(r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}"),
)

_registered: set[str] = set()
_lock = allocate_lock()


def is_credential_name(name: str) -> bool:
    """Whether an environment variable, header or option of this name holds a credential."""
    upper = name.upper()
    return upper in CREDENTIAL_VARIABLES or upper.endswith(_CREDENTIAL_SUFFIXES)


def looks_like_credential(name: str) -> bool:
    """A looser test for names someone else chose (a plugin's option, a custom header)."""
    return bool(_CREDENTIAL_NAME.search(name))


def register_secret(value: object) -> None:
    """Treat `value` as a secret from now on (a key passed in code, a credential option)."""
    if isinstance(value, str) and len(value.strip()) >= MIN_SECRET_CHARS:
        with _lock:
            _registered.add(value.strip())


def custom_header_values(raw: str | None) -> list[str]:
    """The values of ANTHROPIC_CUSTOM_HEADERS ("Name: value" lines, as the SDK reads them)."""
    values = []
    for line in (raw or "").split("\n"):
        _name, colon, value = line.partition(":")
        if colon and value.strip():
            values.append(value.strip())
            # "Authorization: Bearer xyz": the token alone may be echoed too.
            scheme, _, rest = value.strip().partition(" ")
            if scheme.lower() in ("bearer", "basic") and rest.strip():
                values.append(rest.strip())
    return values


def secrets_in_use() -> list[str]:
    """Every secret value known now, longest first (a secret inside another goes second)."""
    found = set(_registered)
    for name, value in os.environ.items():
        if is_credential_name(name) and len(value.strip()) >= MIN_SECRET_CHARS:
            found.add(value.strip())
    found.update(
        v for v in custom_header_values(os.environ.get(CUSTOM_HEADERS_VARIABLE))
        if len(v) >= MIN_SECRET_CHARS
    )  # fmt: skip
    return sorted(found, key=len, reverse=True)


# The secrets one pass over many short texts reads once (secrets_read_once), not per text.
_read_once: ContextVar[list[str] | None] = ContextVar("secrets_read_once", default=None)


@contextmanager
def secrets_read_once() -> Iterator[None]:
    """Within the block, `redact` uses the secrets known at its start. A ledger redacts each of
    thousands of entries, and reading the environment for each cost more than the redaction."""
    token = _read_once.set(secrets_in_use())
    try:
        yield
    finally:
        _read_once.reset(token)


def _whole_forms(secret: str) -> tuple[str, ...]:
    encoded = quote(secret, safe="")
    return (secret, encoded) if encoded != secret else (secret,)


# What can belong to one echoed value: the run a head or tail match is widened to.
_TOKEN = r"[^\s\"',;:{}()\[\]<>]"


@functools.lru_cache(maxsize=256)
def _cut_short_pattern(secret: str) -> re.Pattern[str]:
    """A token (a run of _TOKEN) holding `secret`'s head or tail. Matching starts only where a
    token starts (the lookbehind), so the scan is linear in the text."""
    parts = "|".join(re.escape(p) for p in (secret[:_PART_CHARS], secret[-_PART_CHARS:]))
    return re.compile(f"(?<!{_TOKEN}){_TOKEN}*?(?:{parts}){_TOKEN}*")


def _redact_cut_short(text: str, secret: str) -> str:
    """Each token of `text` that holds `secret`'s head or tail (a server that echoes the key cut
    short, or with something around it), redacted whole."""
    if len(secret) < _PART_MIN_SECRET:
        return text
    return _cut_short_pattern(secret).sub(REDACTED, text)


def redact(text: str) -> str:
    """`text` with every secret (see the module docstring) replaced by "[redacted]"."""
    secrets = _read_once.get()
    if secrets is None:
        secrets = secrets_in_use()
    for secret in secrets:  # whole values first: a cut-short match must not split one
        for form in _whole_forms(secret):
            if form in text:
                text = text.replace(form, REDACTED)
    for pattern in _SECRET_PATTERNS:  # before the cut-short pass, which could split a key
        if pattern.groups >= 2:
            text = pattern.sub(lambda match: f"{match.group(1)}{match.group(2)}{REDACTED}", text)
        else:
            text = pattern.sub(REDACTED, text)
    for secret in secrets:
        text = _redact_cut_short(text, secret)
    return text
