"""An API request blocked by another session's lock (decision 161), through a real ``harvester serve``.

A DBA's ``ALTER TABLE``, ``VACUUM FULL`` or ``LOCK TABLE`` on a table a request reads made the request wait as
long as the lock lasted, on one of the pool's ten connections: a dozen such requests held them all, and every
request after them waited for the pool too. Each pooled connection now waits at most
``HARVESTER_API_LOCK_WAIT`` for a lock, and the request answers 503 with ``Retry-After``.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.api.conftest import Server, start_server

REQUESTS = 12  # more than the pool's ten connections


@pytest.fixture()
def server(fresh_db_url: str, tmp_path: Path) -> Iterator[Server]:
    running = start_server(fresh_db_url, tmp_path, {"HARVESTER_API_LOCK_WAIT": "1"})
    try:
        yield running
    finally:
        running.stop()


def test_requests_blocked_by_another_session_s_lock_answer_503_and_free_their_connections(server: Server) -> None:
    with server.client("read") as c:
        assert c.get("/api/v1/sources").status_code == 200
        with psycopg.connect(server.db_url, application_name="dba-vacuum-full") as holder:
            holder.execute("lock table sources in access exclusive mode")  # what VACUUM FULL takes

            def get(_: int) -> httpx.Response:
                return c.get("/api/v1/sources")

            with ThreadPoolExecutor(REQUESTS) as pool:
                answers = list(pool.map(get, range(REQUESTS)))
            holder.rollback()
        after = c.get("/api/v1/sources")

    assert [r.status_code for r in answers] == [503] * REQUESTS, [r.text for r in answers]
    for r in answers:
        assert r.json()["type"] == "urn:harvester:problem:busy", r.text
        assert r.headers["retry-after"] == "5"
        assert "sources" not in r.text.lower().replace("/api/v1/sources", "")  # nothing of the SQL reaches it
    assert after.status_code == 200, after.text
    assert server.logs().count("waited too long for a lock another session holds") >= REQUESTS
