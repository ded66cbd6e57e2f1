"""A full sync of each source over HTTPS, as real Jira, Confluence and Slack are served, through REAL
``harvester sync`` processes: the same rows as over plain HTTP, and the connections kept alive.

Every other sync test talks plain HTTP to its emulator. Over TLS two things could go wrong that plain HTTP
cannot show: a link the source serves back (an attachment's content, a Slack file) that the client cannot
follow, and a client that opens a connection per request, each one a TLS handshake and, against a real
source, one or two more round trips per request. The emulators link with the scheme they are served on
(connectors.emulators.kit.request_base_url); the certificate is trusted through ``SSL_CERT_FILE``, as a
platform team trusts an internal CA. Confluence's listing runs in a source process (its default, decision
153), which builds its TLS context in the forkserver (decision 136).
"""

from __future__ import annotations

import ssl
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from app.secrets import Keyring
from connectors.emulators.confluence import ConfluenceEmulator
from connectors.emulators.jira import JiraEmulator
from connectors.emulators.kit import EmulatorApp, serve
from connectors.emulators.slack import SlackEmulator
from tests.conftest import REPO
from tests.connect_proxy import ConnectProxy
from tests.jobs.conftest import Procs
from tests.sync.connectors_conftest import TOKEN, add_source
from tests.tls_cert import self_signed

EMULATORS: dict[str, tuple[Callable[[], EmulatorApp], str]] = {
    "jira": (lambda: JiraEmulator(230, seed=5, token=TOKEN), ""),
    "confluence": (lambda: ConfluenceEmulator(pages=40, seed=5, token=TOKEN), "/wiki"),
    "slack": (lambda: SlackEmulator(messages=120, seed=5, token=TOKEN), ""),
}
# Handshakes a whole run may make: the listing's connection, the fan-out's (four by default), the directory
# reads' and a few the pool may replace. A client without keep-alive would make one a request (100-200 here).
MOST_HANDSHAKES = 16
FILE = {"name": "numbers.txt", "mimetype": "text/plain", "text": "Quarterly numbers, read over TLS"}


def _server_tls(folder: Path) -> tuple[ssl.SSLContext, Path]:
    """A server-side TLS context with a new self-signed certificate for 127.0.0.1, and that certificate's file
    (what ``SSL_CERT_FILE`` names for the client)."""
    cert, key = self_signed(folder)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    return tls, cert


def _sync(procs: Procs, source_id: int, cert: Path, proxy: str | None = None) -> None:
    env = procs.env(SSL_CERT_FILE=str(cert))
    for name in [k for k in env if k.lower().endswith("_proxy")]:
        del env[name]  # this machine's own proxy settings are not the test's
    if proxy is not None:
        env["HTTPS_PROXY"] = proxy
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "sync", str(source_id), "--mode", "full"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]


def _rows(probe: psycopg.Connection[Any], source_id: int, base_url: str) -> dict[tuple[str, str], str]:
    """Each entity of the source as text, its own server's address taken out (the two are served on different
    ports and schemes, and a link names its server)."""
    rows = probe.execute(
        """select source_type, source_entity_id,
                  jsonb_build_array(title, body, url, acl_principals, metadata, status)::text
             from entities where source_id = %s""",
        (source_id,),
    ).fetchall()
    host = base_url.split("://", 1)[1]
    return {
        (kind, sid): text.replace(f"https://{host}", "BASE").replace(f"http://{host}", "BASE")
        for kind, sid, text in rows
    }


@pytest.mark.parametrize(
    ("kind", "links"), [("confluence", None), ("jira", None), ("jira", "http"), ("confluence", "http"), ("slack", None)]
)
def test_a_full_sync_over_https_loads_what_one_over_http_does_on_a_few_connections(
    kind: str,
    links: str | None,
    procs: Procs,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    tmp_path: Path,
) -> None:
    build, path = EMULATORS[kind]
    tls, cert = _server_tls(tmp_path)
    served_secure = build()
    served_secure.base_scheme = links  # "http": links over plain HTTP, fetched over TLS at the base's origin
    with serve(served_secure, tls=tls) as secure, serve(build()) as plain:
        assert secure.base_url.startswith("https://")
        if kind == "slack":  # the seeded workspace links nothing back to its server: a file does
            posted = httpx.post(
                secure.base_url + "/_emulator/messages",
                json={"channel": "C0GENERAL", "text": "numbers attached", "files": [FILE]},
                verify=ssl.create_default_context(cafile=cert),
            )
            posted.raise_for_status()
        over_tls = add_source(conn, keyring, kind, secure.base_url + path, name=f"{kind}-https")
        over_http = add_source(conn, keyring, kind, plain.base_url + path, name=f"{kind}-http")
        _sync(procs, over_tls, cert)
        _sync(procs, over_http, cert)
        handshakes = tls.session_stats()["accept"]
        requests = int(secure.app.stats()["requests"])
    secure_rows = _rows(probe, over_tls, secure.base_url)
    plain_rows = _rows(probe, over_http, plain.base_url)
    assert plain_rows and {key: secure_rows.get(key) for key in plain_rows} == plain_rows
    extra = [text for key, text in secure_rows.items() if key not in plain_rows]
    if kind == "slack":  # the posted message, with its file's text read over TLS
        assert len(extra) == 1 and FILE["text"] in extra[0], extra
    else:  # issues and pages link their attachments on the server: those were followed over TLS
        assert extra == []
        assert "BASE" in "".join(secure_rows.values()), "no entity links its own server"
    # Each request on a connection kept alive: a handful of handshakes for the run's 100-200 requests.
    assert 0 < handshakes <= MOST_HANDSHAKES < requests, (handshakes, requests)


@pytest.mark.parametrize("kind", ["jira", "confluence"])
def test_a_full_sync_through_an_https_proxy_tunnels_every_request_and_the_proxy_reads_no_credential(
    kind: str,
    procs: Procs,
    conn: psycopg.Connection[Any],
    probe: psycopg.Connection[Any],
    keyring: Keyring,
    tmp_path: Path,
) -> None:
    """``HTTPS_PROXY`` naming a proxy that only tunnels, as a corporate one does: every request of the run (the
    listing, the fan-out's, the attachments'; Confluence's from its source process) goes through a tunnel to
    the source, the run loads what a direct one does, and the proxy never sees the credential in clear."""
    build, path = EMULATORS[kind]
    tls, cert = _server_tls(tmp_path)
    with serve(build(), tls=tls) as secure, ConnectProxy() as proxy:
        tunnelled = add_source(conn, keyring, kind, secure.base_url + path, name=f"{kind}-proxied")
        direct = add_source(conn, keyring, kind, secure.base_url + path, name=f"{kind}-direct")
        _sync(procs, tunnelled, cert, proxy.url)
        through_proxy = int(secure.app.stats()["requests"])
        _sync(procs, direct, cert)
    assert _rows(probe, tunnelled, secure.base_url) == _rows(probe, direct, secure.base_url) != {}
    assert proxy.refused == []
    assert proxy.targets and set(proxy.targets) == {secure.base_url.removeprefix("https://")}
    assert len(proxy.targets) <= MOST_HANDSHAKES < through_proxy
    relayed = bytes(proxy.relayed)
    assert len(relayed) > 10_000 and TOKEN.encode() not in relayed and b"uthorization" not in relayed
