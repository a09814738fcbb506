"""Every credential is a secret, whatever its variable or header (engine.redaction): an API key,
an auth token, ANTHROPIC_CUSTOM_HEADERS' values, a plugin's key option, and any *_KEY, *_TOKEN,
*_SECRET or *_PASSWORD variable never reach stdout, stderr, the store or the cache file, not even
when a server echoes them back whole, cut short or URL-encoded.

The echoing server is real (tests/messages_api_server.py `echo`: an error repeating every request
header) and the CLI runs as its own process with the real SDK.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

import pytest

from engine.errors import ConfigError
from engine.layout import metis_dir
from engine.redaction import REDACTED, redact, register_secret, secrets_in_use
from engine.summarizers.plugin import summarizer_from_factory
from tests.cli_process import run_cli
from tests.hostile.test_endpoint_answers import GUARD_S, SESSION, workspace
from tests.messages_api_server import MessagesAPIServer, echo

API_KEY = "sk-ant-api03-CREDAPIKEY-0123456789abcdef"
AUTH_TOKEN = "opaque-AUTHTOKENVALUE-9f8e7d6c5b4a"  # no key-like shape: only the env says it
HEADER_VALUE = "gw-CUSTOMHEADERVALUE-42aa17"
BEARER_VALUE = "gwbearer-HEADERBEARER-77c1"
MARKERS = ("CREDAPIKEY", "AUTHTOKENVALUE", "CUSTOMHEADERVALUE", "HEADERBEARER")


def leaks(text: str) -> list[str]:
    return [marker for marker in MARKERS if marker in text]


def workspace_bytes(ws: Path) -> str:
    """Every file under .metis (the store, its WAL, the cache), as text."""
    return "\n".join(
        p.read_bytes().decode("utf-8", "replace") for p in metis_dir(ws).rglob("*") if p.is_file()
    )


def base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "METIS_"))}


@pytest.mark.parametrize("credential", ["api_key", "auth_token"])
def test_an_echoing_server_gets_no_credential_into_output_store_or_cache(
    tmp_path: Path, server: MessagesAPIServer, credential: str
) -> None:
    ws = workspace(tmp_path / "ws")
    env = {
        **base_env(),
        "ANTHROPIC_CUSTOM_HEADERS": (
            f"x-gateway-key: {HEADER_VALUE}\nx-team-auth: Bearer {BEARER_VALUE}"
        ),
    }
    if credential == "api_key":
        env["ANTHROPIC_API_KEY"] = API_KEY
    else:
        env["ANTHROPIC_AUTH_TOKEN"] = AUTH_TOKEN
    server.default = echo(401)
    outputs = []
    for extra in ([], ["--json"]):
        done = run_cli(
            "compact", SESSION, "-w", str(ws),
            "--set", f"summarizer.base_url={server.base_url}", *extra,
            env=env, timeout=GUARD_S,
        )  # fmt: skip
        assert done.returncode == 1, done.stderr
        assert "compaction call failed (auth)" in done.stderr
        outputs.append(done.stdout + done.stderr)
    status = run_cli("status", str(ws), "--json", env=env, timeout=GUARD_S)
    assert status.returncode == 0, status.stderr
    outputs.append(status.stdout + status.stderr)
    # The server got them, and said them back (the test would catch a leak)...
    echoed = [r.headers for r in server.requests if r.path == "/v1/messages"]
    sent = API_KEY if credential == "api_key" else AUTH_TOKEN
    assert echoed and all(sent in str(h) and HEADER_VALUE in str(h) for h in echoed)
    # ...and they are nowhere: not the output, not a byte of the store or the cache.
    assert not leaks("\n".join(outputs)), outputs
    assert REDACTED in outputs[0]
    assert not leaks(workspace_bytes(ws))


def test_every_credential_variable_is_redacted_whole_cut_short_and_url_encoded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    values = {
        "ANTHROPIC_AUTH_TOKEN": AUTH_TOKEN,
        "OPENAI_API_KEY": "openai-OPENAIKEYVALUE-123456",
        "MY_GATEWAY_SECRET": "gateway-GATEWAYSECRET-aa11",
        "DB_PASSWORD": "pw-DBPASSWORDVALUE+/=&x",
        "ANTHROPIC_CUSTOM_HEADERS": f"authorization: Bearer {BEARER_VALUE}",
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SECRET_NAME_PREFIX_ONLY", "harmless-value-0001")
    for value in [*list(values.values())[:-1], BEARER_VALUE]:
        for shown in (value, quote(value, safe=""), value[:14], value[-14:]):
            text = redact(f"server said <{shown}> to us")
            assert shown not in text and REDACTED in text, (value, shown, text)
    assert redact("harmless-value-0001") == "harmless-value-0001"
    assert redact("nothing secret here") == "nothing secret here"
    assert not any("harmless" in s for s in secrets_in_use())


def test_a_plugin_option_named_like_a_credential_is_a_secret() -> None:
    value = "plugin-PLUGINOPTIONKEY-55aa"
    assert redact(value) == value  # not a secret until a plugin is given it as a credential
    # Acme takes no such option: the factory fails, and the value is a secret all the same.
    with pytest.raises(ConfigError) as refused:
        summarizer_from_factory(
            "tests.plugins.acme:make", "acme:large", {"fee_usd": "0.002", "gateway_token": value}
        )
    assert value not in str(refused.value)
    assert redact(f"401: token {value} refused") == f"401: token {REDACTED} refused"
    register_secret("short")  # under 8 characters: would redact ordinary words
    assert redact("a short word") == "a short word"


def test_a_registered_keys_head_never_splits_another_key_of_the_same_shape() -> None:
    # Two keys share the "sk-ant-api03" head: redacting one's head must not leave the other's
    # tail showing (the shape rule redacts the whole other key first).
    register_secret("sk-ant-api03-REGISTEREDONE-000000")
    other = "sk-ant-api03-Zx9_OTHERKEYBODY-abc"
    text = redact(f"key {other} and x-api-key: {other}")
    assert "OTHERKEYBODY" not in text and text.count(REDACTED) == 2, text
