"""An HTTP proxy on 127.0.0.1 that only tunnels (``CONNECT host:port``), as a corporate proxy does for HTTPS
sources: for the tests that sync through one. It keeps the targets it was asked for and every byte it relayed,
so a test can say what a proxy's operator could read."""

from __future__ import annotations

import select
import socket
import socketserver
import threading
from types import TracebackType


class ConnectProxy:
    def __init__(self) -> None:
        self.targets: list[str] = []  # "host:port" of each tunnel opened
        self.refused: list[str] = []  # first lines of requests that were not CONNECT
        self.relayed = bytearray()  # every byte relayed, both ways
        self._lock = threading.Lock()
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy._tunnel(self.request)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def _tunnel(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(4096)
            if not chunk:
                return
            head += chunk
        first = head.split(b"\r\n", 1)[0].decode("latin-1")
        method, _, rest = first.partition(" ")
        if method != "CONNECT":
            with self._lock:
                self.refused.append(first)
            client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        target = rest.split(" ", 1)[0]
        host, _, port = target.rpartition(":")
        with self._lock:
            self.targets.append(target)
        with socket.create_connection((host, int(port)), timeout=30) as upstream:
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            ends = {client: upstream, upstream: client}
            while True:
                readable, _, _ = select.select(list(ends), [], [], 30)
                if not readable:
                    return
                for end in readable:
                    data = end.recv(65536)
                    if not data:
                        return
                    ends[end].sendall(data)
                    with self._lock:
                        self.relayed += data

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> ConnectProxy:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
