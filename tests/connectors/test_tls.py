"""Sources over HTTPS: every source client verifies the certificate with httpx's defaults, through the
one TLS context the process shares (connectors.http.tls_context), against an emulator serving TLS."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from connectors.base import CallStats, ErrorClassification, SourceUnreachable
from connectors.emulators.kit import EmulatorApp, Request, Response, RunningEmulator, serve
from connectors.http import SourceHttp

REPO = Path(__file__).resolve().parents[2]
TOKEN = "tls-test-token"


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that no public CA signed, and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "harvester-test")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


@pytest.fixture
def tls_emulator(tmp_path: Path) -> Iterator[tuple[RunningEmulator, Path]]:
    app = EmulatorApp(seed=1, token=TOKEN)

    @app.route("GET", r"/items/(?P<id>[^/]+)")
    def item(req: Request) -> Response:
        return Response(200, {"id": req.params["id"]})

    cert, key = _self_signed(tmp_path)
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, key)
    with serve(app, tls=server_side) as running:
        yield running, cert


def test_a_source_whose_certificate_no_trusted_ca_signed_is_refused(tls_emulator: tuple[RunningEmulator, Path]) -> None:
    emu, _ = tls_emulator
    assert emu.base_url.startswith("https://")
    http = SourceHttp(
        emu.base_url,
        headers={"Authorization": f"Bearer {TOKEN}"},
        stats=CallStats(),
        errors=ErrorClassification(),
        max_attempts=1,
    )
    try:
        with pytest.raises(SourceUnreachable, match="CERTIFICATE_VERIFY_FAILED"):
            http.get_json("/items/A")
    finally:
        http.close()


def test_a_certificate_trusted_through_ssl_cert_file_is_accepted_by_every_client(
    tls_emulator: tuple[RunningEmulator, Path],
) -> None:
    # httpx's own default honours SSL_CERT_FILE; the shared context must too. A process of its own: the
    # context is built once per process, from the environment it starts with.
    emu, cert = tls_emulator
    script = (
        "import sys\n"
        "from connectors.base import CallStats, ErrorClassification\n"
        "from connectors.http import SourceHttp\n"
        "for n in range(2):\n"
        "    http = SourceHttp(sys.argv[1], headers={'Authorization': 'Bearer ' + sys.argv[2]}, stats=CallStats(),\n"
        "                      errors=ErrorClassification(), max_attempts=1)\n"
        "    print(http.get_json(f'/items/X{n}')['id'])\n"
        "    http.close()\n"
    )
    env = {**os.environ, "SSL_CERT_FILE": str(cert)}
    env.pop("SSL_CERT_DIR", None)
    done = subprocess.run(
        [sys.executable, "-c", script, emu.base_url, TOKEN],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["X0", "X1"]
