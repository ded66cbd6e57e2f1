"""The connectors' HTTP client: CPU a request, ours against httpx's client (decision 102, issue 15 §2).

A Jira emulator in its own process serves ``--issues`` issues; their text attachments and the search
pages are then requested ``--repeats`` times by each client below, in turn (best round kept), from one
thread:

- ``httpx.Client``: what ``connectors.http.SourceHttp`` sent through until decision 102, built as it
  was (base URL, the credential, redirects followed, the shared TLS context), the baseline;
- ``SourceHttp``: what every connector sends through now (urllib3 under it);
- ``http.client``: the standard library's bare connection, a floor no client with pooling, redirects and
  retries reaches.

Printed per client and kind of request: requests, CPU µs a request in this process (what the emulator
spends is not counted), and the ratio to httpx's. A search page's CPU includes decoding it (the same
``decode_json`` for all three). What each client got is compared: the same bytes, the same pages.

Then a new connection's wall time, ``--connections`` of them each round, to a listener on 127.0.0.1 that
accepts at once: urllib3's blocking connect (a request made without a run's stop), the baseline, against
the sliced handshake a run's request makes (decision 168), alternating rounds.

    python bench/http_client.py [--issues 1000] [--repeats 3] [--connections 2000]
"""

from __future__ import annotations

import argparse
import http.client
import resource
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from app.registry import get_spec
from bench._overlap import CASES, emulator
from bench.connector_sync import TOKEN
from connectors.answer_deadline import answer_deadline, pool_manager
from connectors.atlassian import auth_headers
from connectors.base import CallStats, ErrorClassification, RawItem, SourceConfig
from connectors.http import SourceHttp, decode_json, tls_context

_PAGE_PATH = "/rest/api/2/search"


def _cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def _targets(base_url: str, path: str) -> tuple[list[str], list[dict[str, str]]]:
    """The text attachments' URLs and the search pages' params a full enumeration of the emulator asks."""
    connector = get_spec("jira").create(SourceConfig(1, base_url + path, TOKEN, "all", (), {}), CallStats())
    try:
        items = [e for e in connector.enumerate(None, None) if isinstance(e, RawItem)]
    finally:
        connector.close()
    urls = [
        str(a["content"])
        for item in items
        for a in item.payload["fields"].get("attachment") or []
        if str(a.get("mimeType") or "").startswith("text/")
    ]
    pages = [{"jql": "order by id", "startAt": str(at), "maxResults": "100"} for at in range(0, len(items), 100)]
    return urls, pages


def _connections(count: int, repeats: int) -> dict[str, float]:
    """Best seconds a connection over ``repeats`` rounds of ``count``: without a stop, and with one."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # the listener closed
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    pool = pool_manager(None).connection_from_url(
        f"http://127.0.0.1:{listener.getsockname()[1]}", pool_kwargs={"timeout": 5.0}
    )
    stop = threading.Event()  # never set: the run goes on
    best: dict[str, float] = {}
    try:
        for _ in range(repeats):
            for name, event in (("urllib3", None), ("under a stop", stop)):
                started = time.perf_counter()
                for _ in range(count):
                    conn = pool._new_conn()
                    with answer_deadline(time.monotonic() + 30, event):
                        conn.connect()
                    conn.close()
                spent = (time.perf_counter() - started) / count
                best[name] = min(best.get(name, spent), spent)
    finally:
        listener.close()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--issues", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--connections", type=int, default=2000)
    args = parser.parse_args()
    case = next(c for c in CASES if c.name == "jira")
    headers = auth_headers(f"bot@example.com:{TOKEN}")
    with emulator(case, args.issues) as root:
        base_url = root + case.path
        urls, pages = _targets(root, case.path)
        ours = SourceHttp(base_url, headers=headers, stats=CallStats(), errors=ErrorClassification())
        theirs = httpx.Client(
            base_url=base_url,
            headers={"Accept": "application/json", **headers},
            timeout=30.0,
            follow_redirects=True,
            verify=tls_context(),
        )
        where = urlsplit(root)
        bare = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port)
        bare_headers = {"Accept": "*/*", **headers}

        def bare_get(url: str) -> bytes:
            bare.request("GET", urlsplit(url).path, headers=bare_headers)
            return bare.getresponse().read()

        def bare_page(params: dict[str, str]) -> object:
            query = str(httpx.QueryParams(params))
            bare.request("GET", f"{urlsplit(base_url).path}{_PAGE_PATH}?{query}", headers=bare_headers)
            return decode_json(bare.getresponse().read())

        clients: dict[str, tuple[Callable[[str], bytes], Callable[[dict[str, str]], object]]] = {
            "httpx.Client": (
                lambda u: theirs.get(u, headers={"Accept": "*/*"}).content,
                lambda p: decode_json(theirs.get(_PAGE_PATH, params=p).content),
            ),
            "SourceHttp": (
                lambda u: ours.get_bytes_capped(u, 1 << 20)[0] or b"",
                lambda p: ours.get_json(_PAGE_PATH, p),
            ),
            "http.client": (bare_get, bare_page),
        }
        best: dict[tuple[str, str], float] = {}
        bodies: dict[str, list[bytes]] = {}
        decoded: dict[str, list[object]] = {}
        try:
            for _ in range(args.repeats):
                for name, (get, page) in clients.items():
                    started = _cpu()
                    got = [get(u) for u in urls]
                    spent = _cpu() - started
                    best[name, "attachment"] = min(best.get((name, "attachment"), spent), spent)
                    bodies[name] = got
                    started = _cpu()
                    decoded[name] = [page(p) for p in pages]
                    spent = _cpu() - started
                    best[name, "search page"] = min(best.get((name, "search page"), spent), spent)
        finally:
            ours.close()
            theirs.close()
            bare.close()
    if len({tuple(b) for b in bodies.values()}) != 1:
        raise SystemExit("the clients got different attachment bodies")
    if any(d != decoded["SourceHttp"] for d in decoded.values()) or not all(
        isinstance(p, dict) and p.get("issues") for p in decoded["SourceHttp"]
    ):
        raise SystemExit("the clients got different search pages, or pages without issues")
    counts = {"attachment": len(urls), "search page": len(pages)}
    print(f"{args.issues} issues; best of {args.repeats} rounds; CPU of this process only")
    print(f"{'client':14} {'request':12} {'requests':>8} {'CPU µs a request':>17} {'÷ httpx':>8}")
    for kind, n in counts.items():
        base = best["httpx.Client", kind] / n
        for name in clients:
            each = best[name, kind] / n
            print(f"{name:14} {kind:12} {n:8d} {each * 1e6:17.0f} {each / base:8.2f}")
    connect = _connections(args.connections, args.repeats)
    print(f"{'connect':14} {'connections':>12} {'wall µs each':>13} {'÷ urllib3':>10}")
    for name, each in connect.items():
        print(f"{name:14} {args.connections:12d} {each * 1e6:13.1f} {each / connect['urllib3']:10.2f}")


if __name__ == "__main__":
    main()
