"""The runs endpoints answer from cached response bytes (issue 15 §2, decision 65) and stay correct: a change
any session commits shows up (NOTIFY), a write through this API shows up at once, the cache is off while
its listener is disconnected, and the token check still runs on every request.

"Served from the cache" is made visible by changing a run with triggers off (``session_replication_role``
replica: no NOTIFY): the API keeps answering the old page until something clears the cache.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
from prometheus_client.parser import text_string_to_metric_families

from app.db.migrate import migrate
from app.secrets import Keyring
from app.services.sources import NewSource, create_source
from tests.api.conftest import Server, SourceFactory, start_server
from tests.api.test_pool_restart import _embedded


def _add_runs(db_url: str, source_id: int, n: int) -> list[int]:
    with psycopg.connect(db_url) as conn:
        rows = conn.execute(
            "insert into sync_runs (source_id, mode, trigger, state, started_at, finished_at, entities_done, "
            "entities_total) select %s, 'incremental', 'schedule', 'succeeded', now() - interval '1 minute', now(), "
            "10, 10 from generate_series(1, %s) returning id",
            (source_id, n),
        ).fetchall()
    return [r[0] for r in rows]


def _set_done(db_url: str, run_id: int, done: int, *, notify: bool = True) -> None:
    with psycopg.connect(db_url) as conn:
        if not notify:  # triggers off for this session: no harvester_runs notification
            conn.execute("set session_replication_role = replica")
        conn.execute("update sync_runs set entities_done = %s where id = %s", (done, run_id))


def _eventually(check: Callable[[], bool], what: str, deadline: float = 30.0) -> None:
    until = time.monotonic() + deadline
    while not check():
        assert time.monotonic() < until, f"not within {deadline:g} s: {what}"
        time.sleep(0.05)


def _done_of(client: httpx.Client, path: str, run_id: int) -> int:
    body = client.get(path).json()
    items = body.get("items", [body])
    done: int = next(r["entities_done"] for r in items if r["id"] == run_id)
    return done


def test_a_cached_page_is_served_until_another_session_changes_a_run(api: Server, make_source: SourceFactory) -> None:
    source_id = make_source()["id"]
    (run_id,) = _add_runs(api.db_url, source_id, 1)
    paths = [f"/api/v1/sources/{source_id}/runs", f"/api/v1/runs?source_id={source_id}", f"/api/v1/runs/{run_id}"]
    with api.client("read") as c:
        for path in paths:

            def shows_new_run(p: str = path) -> bool:
                return _done_of(c, p, run_id) == 10

            _eventually(shows_new_run, f"{path} shows the new run")
            assert c.get(path).status_code == 200  # now cached

        _set_done(api.db_url, run_id, 11, notify=False)
        for path in paths:
            assert _done_of(c, path, run_id) == 10, "the page came from the cache"

        # As a worker commits a page of progress: the NOTIFY reaches the listener, the page is rebuilt.
        _set_done(api.db_url, run_id, 12)
        for path in paths:

            def shows_committed_change(p: str = path) -> bool:
                return _done_of(c, p, run_id) == 12

            _eventually(shows_committed_change, f"{path} shows the committed change")


def _lookups(api: Server) -> dict[str, float]:
    """harvester_api_runs_cache_lookups_total of the server process, by outcome."""
    families = text_string_to_metric_families(httpx.get(f"{api.base_url}/metrics").text)
    family = next((f for f in families if f.name == "harvester_api_runs_cache_lookups"), None)
    found = {s.labels["outcome"]: s.value for s in family.samples if s.name.endswith("_total")} if family else {}
    return {outcome: found.get(outcome, 0.0) for outcome in ("hit", "waited", "built")}


def test_requests_for_a_page_being_built_wait_for_that_build(api: Server, make_source: SourceFactory) -> None:
    """After a clear every request in flight misses at once; only the first reads the database, the others
    are answered with what it kept. The read is held by a lock on sync_runs so that all are in flight."""
    source_id = make_source()["id"]
    _add_runs(api.db_url, source_id, 3)
    path = f"/api/v1/sources/{source_id}/runs"
    with api.client("read") as c:
        _eventually(lambda: len(c.get(path).json()["items"]) == 3, "the runs are listed")  # token cached, listening
    fresh = f"{path}?limit=7"  # a key nobody asked for yet: a certain miss
    before = _lookups(api)
    with psycopg.connect(api.db_url) as locker, ThreadPoolExecutor(8) as pool:
        locker.execute("lock table sync_runs in access exclusive mode")
        headers = {"Authorization": f"Bearer {api.token('read')}"}
        futures = [pool.submit(httpx.get, api.base_url + fresh, headers=headers, timeout=30) for _ in range(8)]

        def blocked() -> bool:
            row = locker.execute(
                "select count(*) from pg_locks where relation = 'sync_runs'::regclass and not granted"
            ).fetchone()
            return row is not None and row[0] >= 1

        _eventually(blocked, "the first request waits for the lock")
        time.sleep(0.5)  # the other seven reach the server and find the build under way
        locker.rollback()
        bodies = [f.result().content for f in futures]
    assert all(f.result().status_code == 200 for f in futures)
    assert len(set(bodies)) == 1 and len(json.loads(bodies[0])["items"]) == 3
    after = _lookups(api)
    assert after["built"] - before["built"] == 1, (before, after)
    assert (after["waited"] - before["waited"]) + (after["hit"] - before["hit"]) == 7, (before, after)


def test_a_write_through_the_api_is_visible_to_the_next_read(api: Server, make_source: SourceFactory) -> None:
    source_id = make_source()["id"]
    _add_runs(api.db_url, source_id, 2)
    path = f"/api/v1/sources/{source_id}/runs"
    with api.client() as c:
        assert len(c.get(path).json()["items"]) == 2
        assert len(c.get(path).json()["items"]) == 2  # cached
        # The notification would race the next read; without it only the API's own clear can help.
        with psycopg.connect(api.db_url, autocommit=True) as conn:
            conn.execute("alter table sync_runs disable trigger _900_notify_runs")
            try:
                started = c.post(path, json={"mode": "incremental"})
                assert started.status_code == 202, started.text
                # No polling: the POST cleared this process's cache before its response was sent.
                page = c.get(path).json()["items"]
            finally:
                conn.execute("alter table sync_runs enable trigger _900_notify_runs")
        assert page[0]["id"] == started.json()["id"]
        assert len(page) == 3


def test_a_page_with_a_running_run_is_never_kept(api: Server, make_source: SourceFactory) -> None:
    source_id = make_source()["id"]
    (run_id,) = _add_runs(api.db_url, source_id, 1)
    with psycopg.connect(api.db_url) as conn:
        conn.execute(
            "update sync_runs set state = 'running', finished_at = null, started_at = now() where id = %s", (run_id,)
        )
    path = f"/api/v1/runs/{run_id}"
    with api.client("read") as c:
        _eventually(lambda: c.get(path).json()["state"] == "running", "the run shows as running")
        first = c.get(path).json()["progress"]["elapsed_seconds"]
        time.sleep(0.05)
        assert c.get(path).json()["progress"]["elapsed_seconds"] > first, "elapsed time moves with the clock"


def test_a_revoked_token_is_refused_on_a_cached_page(api: Server, make_source: SourceFactory) -> None:
    source_id = make_source()["id"]
    (run_id,) = _add_runs(api.db_url, source_id, 1)
    path = f"/api/v1/sources/{source_id}/runs"
    with api.client() as admin:
        token_id = admin.post("/api/v1/tokens", json={"name": f"cache-{run_id}", "scope": "read"}).json()
        token = token_id["token"]
        reader = {"Authorization": f"Bearer {token}"}
        assert httpx.get(api.base_url + path, headers=reader).status_code == 200
        assert httpx.get(api.base_url + path, headers=reader).status_code == 200
        _set_done(api.db_url, run_id, 99, notify=False)
        assert admin.delete(f"/api/v1/tokens/{token_id['id']}").status_code == 200
        _set_done(api.db_url, run_id, 98, notify=False)  # the DELETE cleared the cache: cache this again
        assert _done_of(admin, path, run_id) == 98
        _set_done(api.db_url, run_id, 97, notify=False)
        assert _done_of(admin, path, run_id) == 98, "the page is cached"
        assert httpx.get(api.base_url + path, headers=reader).status_code == 401
        assert httpx.get(api.base_url + path).status_code == 401
    logs = api.logs()
    assert token not in logs
    assert "cache listener started (LISTEN harvester_api_tokens, harvester_runs)" in logs


def test_the_cache_is_off_while_its_listener_is_disconnected(tmp_path: Path) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="hv-runs-cache-", dir="/tmp"))
    data_dir.chmod(0o711)
    server: Server | None = None
    try:
        url = _embedded(data_dir, "start")
        migrate(url, data_dir / "backups")
        server = start_server(url, tmp_path)
        with psycopg.connect(url) as conn:
            keyring = Keyring(bytes.fromhex(server.secret_key))
            source_id = create_source(conn, keyring, NewSource("restart", "jira", "http://127.0.0.1:9", "t" * 20))
        (run_id,) = _add_runs(url, source_id, 1)
        path = f"/api/v1/runs/{run_id}"
        with server.client("read") as c:
            _eventually(lambda: _done_of(c, path, run_id) == 10, "the run is visible")
            assert _done_of(c, path, run_id) == 10
            # The token cache and the runs cache share one LISTEN connection (app/api/change_listener.py).
            with psycopg.connect(url) as conn:
                listening = conn.execute(
                    "select count(*) from pg_stat_activity"
                    " where query ilike '%listen harvester%' and pid <> pg_backend_pid()"
                ).fetchone()
            assert listening == (1,)

            _embedded(data_dir, "stop")
            _eventually(lambda: "cache listener lost its connection" in server.logs(), "the loss is logged")
            # Off: the page is not answered from memory while nothing would tell the cache of a change.
            assert c.get(path).status_code >= 500
            assert _embedded(data_dir, "start") == url
            # A change no notification announces, committed while the listener may still be reconnecting.
            _set_done(url, run_id, 42, notify=False)
            _eventually(lambda: c.get(path).status_code == 200, "the API reads the database again")
            _eventually(lambda: "cache listener reconnected" in server.logs(), "the reconnection is logged")
            assert _done_of(c, path, run_id) == 42
        assert server.logs().count("cache listener lost its connection") == 1
        server.proc.terminate()
        assert server.proc.wait(timeout=15) is not None  # the listener thread does not hold up shutdown
    finally:
        if server is not None:
            server.stop()
        _embedded(data_dir, "stop")
        shutil.rmtree(data_dir, ignore_errors=True)
