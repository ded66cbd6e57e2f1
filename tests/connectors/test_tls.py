"""Sources over HTTPS: every source client verifies the certificate with httpx's defaults, through the
one TLS context the process shares (connectors.http.tls_context), against an emulator serving TLS."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectors.base import CallStats, ErrorClassification, SourceUnreachable
from connectors.emulators.kit import EmulatorApp, Request, Response, RunningEmulator, serve
from connectors.http import SourceHttp
from tests.tls_cert import self_signed

REPO = Path(__file__).resolve().parents[2]
TOKEN = "tls-test-token"


def _trusting(cert: Path) -> dict[str, str]:
    """This environment with ``cert`` as the only CA a new process trusts (its TLS context is built once, from
    the environment it starts with)."""
    env = {**os.environ, "SSL_CERT_FILE": str(cert)}
    env.pop("SSL_CERT_DIR", None)
    return env


@pytest.fixture
def tls_emulator(tmp_path: Path) -> Iterator[tuple[RunningEmulator, Path]]:
    app = EmulatorApp(seed=1, token=TOKEN)

    @app.route("GET", r"/items/(?P<id>[^/]+)")
    def item(req: Request) -> Response:
        return Response(200, {"id": req.params["id"]})

    cert, key = self_signed(tmp_path)
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
    env = _trusting(cert)
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


def test_an_attachment_linked_over_plain_http_is_read_over_tls_and_the_credential_never_goes_in_clear(
    tmp_path: Path,
) -> None:
    """A source reached over HTTPS whose payload links an attachment over plain HTTP on its own host, as a
    server whose base-URL setting says http does (decision 155): here the link names another port of the
    host, where a plain-HTTP server notes every request. The attachment is read at the source's origin over
    TLS, and the plain server gets nothing; before, it got the request with the credential in clear text."""
    source, plain = EmulatorApp(seed=1, token=TOKEN), EmulatorApp(seed=1)

    @source.route("GET", r"/secure/attachment/(?P<id>\d+)/(?P<name>[^/]+)")
    def attachment(req: Request) -> Response:
        return Response(200, f"attachment {req.params['id']}, read over TLS".encode(), {"Content-Type": "text/plain"})

    @plain.route("GET", r"/secure/attachment/(?P<id>\d+)/(?P<name>[^/]+)")
    def overheard(req: Request) -> Response:
        return Response(200, f"overheard: {req.headers.get('authorization')}".encode(), {"Content-Type": "text/plain"})

    cert, key = self_signed(tmp_path)
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, key)
    script = (
        "import sys\n"
        "from connectors.attachments import AttachmentReader\n"
        "from connectors.base import CallStats, ErrorClassification\n"
        "from connectors.http import SourceHttp\n"
        "http = SourceHttp(sys.argv[1], headers={'Authorization': 'Bearer ' + sys.argv[2]}, stats=CallStats(),\n"
        "                  errors=ErrorClassification(), max_attempts=1)\n"
        "got = AttachmentReader(http, CallStats(), 'jira').read('A-1', sys.argv[3], content_type='text/plain',\n"
        "                                                       filename='notes.txt', size=None)\n"
        "print(got.text, got.reason, sep='|')\n"
        "http.close()\n"
    )
    env = _trusting(cert)
    with serve(source, tls=server_side) as secure, serve(plain) as clear:
        link = f"{clear.base_url}/secure/attachment/7/notes.txt"  # http://127.0.0.1:<the plain server's port>
        done = subprocess.run(
            [sys.executable, "-c", script, secure.base_url, TOKEN, link],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        heard = plain.stats()["requests"]
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "attachment 7, read over TLS|None"
    assert heard == 0
