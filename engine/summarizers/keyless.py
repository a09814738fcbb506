"""When a summarizer's call goes without an API key: the one rule both SDK summarizers follow.

Local model servers (Ollama, llama.cpp's server, vLLM, LM Studio) serve the Messages API and the
OpenAI chat API on this machine and take no key, while both SDKs refuse to send without one. A
call goes keyless when the settings say the endpoint takes none (`SummarizerSettings.no_key`), or
when no key is configured and the base URL is this machine. Nothing is invented in a key's place:
the SDK is told to omit its authorization headers, and a key the user has (the environment's, or
a profile the SDK would discover on disk) is never sent to an endpoint that takes none.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

# The headers the two SDKs put a key in; each is removed from a keyless call's requests.
KEY_HEADERS = ("Authorization", "X-Api-Key")


def is_loopback(base_url: str | None) -> bool:
    """Whether `base_url` names this machine: localhost, 127.0.0.0/8 or ::1 (a name that merely
    resolves there, or a LAN address, is not: say `no_key` for those)."""
    if not base_url:
        return False
    try:
        host = urlsplit(base_url).hostname
    except ValueError:
        return False
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def sends_no_key(base_url: str | None, key: str | None, *, no_key: bool = False) -> bool:
    """Whether a call to `base_url` goes without a key: the settings say the endpoint takes none
    (`no_key`), or none is configured (`key` empty) and the endpoint is this machine."""
    return no_key or (not key and is_loopback(base_url))
