"""AES-256-GCM for credentials and webhook secrets (seed 000 "Секреты": ciphertext at rest, mask only out).

Envelope: ``v1:<key id>:<urlsafe b64 of nonce || ciphertext+tag>``. The key id (first 8 hex chars of the
key's SHA-256) lets a rotation re-encrypt row by row while both keys are configured (docs/operations.md).
The source id is bound as associated data, so a ciphertext copied to another source does not decrypt.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets as pysecrets
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from app.config import Config
from app.errors import HarvesterError
from app.redact import register_secret

_PREFIX = "v1"
_MAX_DECRYPTED = 4096


@dataclass(frozen=True, slots=True)
class Keyring:
    current: bytes
    previous: tuple[bytes, ...] = ()
    # (envelope, context) -> plaintext already decrypted and registered by this keyring. A webhook or a
    # run list decrypts the same stored secret on every request; AES-GCM plus registering every rendering
    # of it for redaction was per-request work done once is enough (issue 15 §2). A changed secret is a new
    # envelope (fresh nonce), so it is never answered from here; a tampered one never got in.
    _decrypted: dict[tuple[str, str], str] = field(default_factory=dict, init=False, repr=False, compare=False)

    @staticmethod
    def key_id(key: bytes) -> str:
        return hashlib.sha256(key).hexdigest()[:8]

    def encrypt(self, plaintext: str, *, context: str) -> str:
        register_secret(plaintext)
        nonce = os.urandom(12)
        ct = AESGCM(self.current).encrypt(nonce, plaintext.encode(), context.encode())
        return f"{_PREFIX}:{self.key_id(self.current)}:{base64.urlsafe_b64encode(nonce + ct).decode()}"

    def decrypt(self, envelope: str, *, context: str) -> str:
        known = self._decrypted.get((envelope, context))
        if known is not None:
            return known
        try:
            prefix, kid, blob = envelope.split(":", 2)
        except ValueError:
            raise HarvesterError("stored secret has an unknown format") from None
        if prefix != _PREFIX:
            raise HarvesterError("stored secret has an unknown format")
        for key in (self.current, *self.previous):
            if self.key_id(key) == kid:
                raw = base64.urlsafe_b64decode(blob)
                try:
                    plaintext = AESGCM(key).decrypt(raw[:12], raw[12:], context.encode()).decode()
                except Exception:
                    raise HarvesterError("stored secret does not decrypt with its key (tampered?)") from None
                register_secret(plaintext)  # from here on, no log line or audit event can show it
                if len(self._decrypted) >= _MAX_DECRYPTED:
                    self._decrypted.clear()  # bounded: a keyring reading many sources re-decrypts, no more
                self._decrypted[(envelope, context)] = plaintext
                return plaintext
        raise HarvesterError(f"stored secret was encrypted with key {kid}, which is not configured")


def mask(plaintext_or_none: str | None) -> str | None:
    """What a client may see of a secret: that it is set, and its last 4 characters at most."""
    if not plaintext_or_none:
        return None
    tail = plaintext_or_none[-4:] if len(plaintext_or_none) >= 12 else ""
    return "••••" + tail


def _parse_key(text: str, name: str = "HARVESTER_SECRET_KEY") -> bytes:
    text = text.strip()
    register_secret(text)
    try:
        key = bytes.fromhex(text) if len(text) == 64 else base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        raise HarvesterError(f"{name} must be 32 bytes as 64 hex chars or base64") from None
    if len(key) != 32:
        raise HarvesterError(f"{name} must be 32 bytes (AES-256) as 64 hex chars or base64")
    return key


def load_keyring(config: Config) -> Keyring:
    previous = tuple(_parse_key(k, "HARVESTER_PREVIOUS_SECRET_KEYS") for k in config.previous_secret_keys)
    if config.secret_key:
        return Keyring(_parse_key(config.secret_key), previous)
    if config.database_url:
        raise HarvesterError("HARVESTER_SECRET_KEY is required with HARVESTER_DATABASE_URL (32 bytes, hex or base64)")
    return Keyring(_key_file(config.key_file), previous)


def _key_file(path: Path) -> bytes:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another process generated it first; read theirs
        else:
            with os.fdopen(fd, "w") as f:
                f.write(pysecrets.token_hex(32))
    return _parse_key(path.read_text())
