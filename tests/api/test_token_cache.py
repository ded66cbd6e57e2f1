"""The API caches token look-ups in process (issue 15 §2) and still refuses a token on the very next
request once it is revoked or narrowed, whoever changes it: the API itself, or another session (the
CLI, psql) through the api_tokens NOTIFY trigger."""

from __future__ import annotations

import uuid

import httpx
import psycopg

from app.api.auth import new_token, token_hash
from app.queries import tokens as tq
from tests.api.conftest import Server


def _token(server: Server, scope: str) -> tuple[int, str]:
    token = new_token()
    with psycopg.connect(server.db_url) as conn:
        row = tq.create_token(
            conn,
            name=f"cache-{uuid.uuid4().hex[:8]}",
            scope=scope,
            token_hash=token_hash(token),
            expires_at=None,
            principals=None,
        )
    assert row is not None
    return row.id, token


def _get(server: Server, token: str, path: str = "/api/v1/sources") -> int:
    response = httpx.get(server.base_url + path, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return response.status_code


def test_a_token_revoked_in_another_session_is_refused_on_the_next_request(fresh_api: Server) -> None:
    token_id, token = _token(fresh_api, "read")
    assert [_get(fresh_api, token) for _ in range(3)] == [200, 200, 200]  # the later two answered from the cache

    with psycopg.connect(fresh_api.db_url) as conn:
        conn.execute("update api_tokens set revoked_at = now() where id = %s", (token_id,))

    assert _get(fresh_api, token) == 401


def test_a_token_revoked_through_the_api_is_refused_on_the_next_request(fresh_api: Server) -> None:
    token_id, token = _token(fresh_api, "read")
    assert _get(fresh_api, token) == 200
    assert _get(fresh_api, token) == 200

    with fresh_api.client() as admin:
        assert admin.delete(f"/api/v1/tokens/{token_id}").status_code == 200

    assert _get(fresh_api, token) == 401


def test_a_token_narrowed_to_read_loses_admin_rights_on_the_next_request(fresh_api: Server) -> None:
    token_id, token = _token(fresh_api, "admin")
    assert _get(fresh_api, token, "/api/v1/tokens") == 200
    assert _get(fresh_api, token, "/api/v1/tokens") == 200

    with psycopg.connect(fresh_api.db_url) as conn:
        conn.execute("update api_tokens set scope = 'read' where id = %s", (token_id,))

    assert _get(fresh_api, token, "/api/v1/tokens") == 403
    assert _get(fresh_api, token) == 200
