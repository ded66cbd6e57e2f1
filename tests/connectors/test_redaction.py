"""Every rendering of a secret is redacted (connectors/redaction.py), whatever surrounds it."""

from __future__ import annotations

import base64
import json
import urllib.parse

import pytest

from connectors.redaction import REDACTED, Redactor, renderings

SECRETS = ["CanaryPlain7Q2w9xx", "Canary/+=&?%Url7Q2w9", "Canary\"'\\Quote7Q2w9", "tok\nen\x00€7Q2w9"]


def _contexts(secret: str) -> list[str]:
    raw = secret.encode("utf-8")
    out = [
        f"GET /x -> 500: {secret}",
        repr(f"Bearer {secret}".encode()),
        repr({"authorization": f"Bearer {secret}"}),
        json.dumps({"authorization": f"Bearer {secret}"}),
        json.dumps({"a": secret}, ensure_ascii=False),
        "?token=" + urllib.parse.quote(secret, safe=""),
        "?token=" + urllib.parse.quote_plus(secret),
        raw.hex(),
    ]
    # base64 at every alignment and with any prefix: "Basic " + b64("user:" + secret), b64(header) ...
    for prefix in (b"", b"u", b"us", b"ops@example.com:", b"Bearer ", b"x" * 7):
        for suffix in (b"", b"!", b"!!"):
            data = prefix + raw + suffix
            out.append("Basic " + base64.b64encode(data).decode())
            out.append(base64.urlsafe_b64encode(data).decode().rstrip("="))
    return out


@pytest.mark.parametrize("secret", SECRETS)
def test_no_rendering_survives(secret: str) -> None:
    redact = Redactor([secret])
    for text in _contexts(secret):
        cleaned = redact(text)
        assert REDACTED in cleaned, text
        assert "7Q2w9" not in cleaned, (text, cleaned)
        raw = secret.encode()
        # No 8-character run of the secret's base64 (at any alignment) is left.
        for offset in range(3):
            encoded = base64.b64encode(b"\0" * offset + raw).decode()[4:-4]
            for i in range(0, max(0, len(encoded) - 8), 4):
                assert encoded[i : i + 8] not in cleaned, (text, cleaned)


def test_the_password_of_user_colon_token_is_redacted_alone() -> None:
    redact = Redactor(["ops@example.com:CanaryBasic7Q2w9"])
    assert redact("the token CanaryBasic7Q2w9 was refused") == f"the token {REDACTED} was refused"


def test_a_basic_header_value_redacts_its_decoded_parts() -> None:
    header = "Basic " + base64.b64encode(b"ops@example.com:CanaryBasic7Q2w9").decode()
    assert "7Q2w9" not in Redactor([header])("echo: ops@example.com:CanaryBasic7Q2w9")


def test_short_values_are_not_searched_for() -> None:
    assert renderings("abc") == frozenset()
    assert Redactor(["abc"])("abcabc") == "abcabc"
