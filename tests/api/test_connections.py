"""The database connections a REAL ``harvester serve`` holds, named as docs/operations.md counts them for
sizing ``max_connections`` (decision 137): its pool (``harvester-api``, two at start, at most ten) and one
LISTEN connection (``harvester-api-listen``) that keeps the token and runs caches honest."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import psycopg

from app.api.change_listener import LISTENER
from app.api.db import API_CONNECTIONS
from tests.api.conftest import Server
from tests.pg_activity import named, settled


def test_a_server_holds_the_connections_the_operations_guide_counts(fresh_api: Server) -> None:
    fresh_api.token()  # made now: the requests below then open no connection of the test's own
    with psycopg.connect(fresh_api.db_url, autocommit=True) as probe:
        at_start = Counter({API_CONNECTIONS: 2, LISTENER: 1})
        assert settled(probe, at_start) == at_start

        def ask(_: int) -> int:
            with fresh_api.client() as c:
                return sum(c.get("/api/v1/runs").status_code for _ in range(5))

        with ThreadPoolExecutor(24) as pool:
            assert set(pool.map(ask, range(48))) == {200 * 5}
        busy = named(probe)
        assert set(busy) == {API_CONNECTIONS, LISTENER}, busy
        assert 2 <= busy[API_CONNECTIONS] <= 10 and busy[LISTENER] == 1, busy
