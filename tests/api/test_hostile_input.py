"""Hostile API input never reaches a 500 (issue 11, Deliver 6), through the real server process.

Bodies are limited in size (413) and nesting depth (422 naming the limit); a JSON endpoint refuses any
other content type (415); path ids are ASCII digits only; every 4xx is a problem document and every 422
names its field. The server log must show no unhandled exception afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from app.api.input_guard import MAX_BODY_BYTES, MAX_DEPTH
from tests.api.conftest import Server, SourceFactory

PROBLEM = "application/problem+json"


def _source_body(**fields: Any) -> dict[str, Any]:
    return {"name": "hostile-ok", "connector_type": "jira", "base_url": "http://127.0.0.1:9", **fields}


def _nested(levels: int) -> bytes:
    return b'{"name":"deep","connector_type":"jira","scope_list":[' + b"[" * levels + b"]" * levels + b"]}"


def _problem(r: httpx.Response, status: int) -> dict[str, Any]:
    assert r.status_code == status, (r.status_code, r.text[:500])
    assert r.headers["content-type"].startswith(PROBLEM), r.headers
    body: dict[str, Any] = r.json()
    assert body["status"] == status and body["type"].startswith("urn:harvester:problem:")
    return body


@pytest.fixture()
def client(api: Server) -> Iterator[httpx.Client]:
    with api.client() as c:
        yield c


def _count_sources(c: httpx.Client) -> int:
    return len(c.get("/api/v1/sources", params={"limit": 500}).json()["items"])


# ---------------------------------------------------------------- path ids


FULL_WIDTH_AND_FRIENDS = ["１", "%EF%BC%91", "١", "%D9%A1", "+1", "%201", "1%20", "0_1", "%E2%82%81"]


@pytest.mark.parametrize("spelling", FULL_WIDTH_AND_FRIENDS)
def test_a_path_id_is_ascii_digits_only(client: httpx.Client, make_source: SourceFactory, spelling: str) -> None:
    make_source()  # id 1 exists, so reading "１" as 1 would find it
    for path in (f"/api/v1/sources/{spelling}", f"/api/v1/runs/{spelling}", f"/api/v1/sources/{spelling}/runs"):
        r = client.get(path)
        assert r.status_code in (404, 422), (path, r.status_code, r.text[:300])
        _problem(r, r.status_code)
    r = client.patch(f"/api/v1/sources/{spelling}", json={"name": "renamed-by-unicode"})
    assert r.status_code in (404, 422)
    assert all(
        s["name"] != "renamed-by-unicode" for s in client.get("/api/v1/sources", params={"limit": 500}).json()["items"]
    )


# ---------------------------------------------------------------- content type, size, empty


@pytest.mark.parametrize(
    "content_type",
    ["application/xml", "text/plain", "application/x-www-form-urlencoded", "text/json", None],
)
def test_a_json_endpoint_refuses_other_content_types(client: httpx.Client, content_type: str | None) -> None:
    before = _count_sources(client)
    headers = {"content-type": content_type} if content_type else {}
    raw = json.dumps(_source_body(name=f"ct-{content_type}")).encode()
    body = _problem(client.post("/api/v1/sources", content=raw, headers=headers), 415)
    assert body["field"] == "body" and "application/json" in body["detail"]
    assert _count_sources(client) == before


def test_json_with_a_charset_or_a_plus_json_type_is_accepted(client: httpx.Client) -> None:
    for i, ct in enumerate(("application/json; charset=utf-8", "application/merge-patch+json")):
        r = client.post(
            "/api/v1/sources", content=json.dumps(_source_body(name=f"ct-ok-{i}")), headers={"content-type": ct}
        )
        assert r.status_code == 201, r.text


@pytest.mark.parametrize("chunked", [False, True])
def test_an_oversized_body_is_413_naming_the_limit(client: httpx.Client, chunked: bool) -> None:
    raw = json.dumps(_source_body(name="big", scope_list=["x" * 1000] * (MAX_BODY_BYTES // 1000 + 10))).encode()
    content: Any = iter([raw[i : i + 65536] for i in range(0, len(raw), 65536)]) if chunked else raw
    body = _problem(client.post("/api/v1/sources", content=content, headers={"content-type": "application/json"}), 413)
    assert str(MAX_BODY_BYTES) in body["detail"] and body["field"] == "body"


def test_the_webhook_receiver_has_the_same_size_limit(api: Server) -> None:
    r = httpx.post(f"{api.base_url}/api/v1/webhooks/1", content=b"[" * (MAX_BODY_BYTES + 1))
    assert str(MAX_BODY_BYTES) in _problem(r, 413)["detail"]


@pytest.mark.parametrize("raw", [b"", b"   ", b"\n"])
def test_an_empty_body_names_the_body(client: httpx.Client, raw: bytes) -> None:
    r = client.post("/api/v1/sources", content=raw, headers={"content-type": "application/json"})
    assert _problem(r, 422)["field"] == "body"


def test_an_optional_body_may_be_empty(client: httpx.Client) -> None:
    r = client.post("/api/v1/sync-all")
    assert r.status_code == 202, r.text


# ---------------------------------------------------------------- depth


@pytest.mark.parametrize("levels", [MAX_DEPTH, 2_000, 100_000, 400_000])
def test_deep_nesting_is_422_naming_the_limit(client: httpx.Client, levels: int) -> None:
    r = client.post("/api/v1/sources", content=_nested(levels), headers={"content-type": "application/json"})
    body = _problem(r, 422)
    assert body["field"] == "body" and str(MAX_DEPTH) in body["detail"]


def test_brackets_inside_strings_are_not_nesting(client: httpx.Client) -> None:
    name = '[{"\\' + "[" * 500
    r = client.post("/api/v1/sources", json=_source_body(name=name[:200]))
    assert r.status_code == 201, r.text


def test_unclosed_deep_nesting_is_refused_without_a_500(client: httpx.Client) -> None:
    for raw in (b"[" * 100_000, b'{"a":' * 50_000, b'"' + b"\\" * 1001, b'["\\"' * 10_000):
        r = client.post("/api/v1/sources", content=raw, headers={"content-type": "application/json"})
        assert r.status_code in (400, 422), (raw[:20], r.status_code)
        assert _problem(r, r.status_code)["field"] == "body"


# ---------------------------------------------------------------- every 422 names its field


FIELD_CASES: list[tuple[str, str, Any, int, str]] = [
    ("POST", "/api/v1/sources", [_source_body()], 422, "body"),
    ("POST", "/api/v1/sources", "a string", 422, "body"),
    ("POST", "/api/v1/sources", 42, 422, "body"),
    ("POST", "/api/v1/sources", None, 422, "body"),
    ("POST", "/api/v1/sources", _source_body(name="nul\u0000name"), 422, "name"),
    ("POST", "/api/v1/sources", _source_body(name="lone\ud800surrogate"), 422, "name"),
    ("POST", "/api/v1/sources", _source_body(scope_list=["ALPHA", "a\u0000b"]), 422, "scope_list[1]"),
    ("POST", "/api/v1/sources", _source_body(scope_list=[{"kind": "jql", "q\u0000": "x"}]), 422, "scope_list[0].q"),
    ("POST", "/api/v1/sources", _source_body(content_filters={"comm\u0000ents": True}), 422, "content_filters"),
    ("POST", "/api/v1/sources", _source_body(credential="tok\u0000en"), 422, "credential"),
    ("POST", "/api/v1/sources", _source_body(webhook_secret="\u0000" * 8), 422, "webhook_secret"),
    ("POST", "/api/v1/sources", _source_body(unknown_field=1), 422, "unknown_field"),
    ("POST", "/api/v1/sources", _source_body(name=""), 422, "name"),
    ("POST", "/api/v1/sources", _source_body(sync_interval="soon"), 422, "sync_interval"),
    ("PUT", "/api/v1/settings", [], 422, "body"),
    ("PUT", "/api/v1/settings", {"timezone": "Europe/\u0000Paris"}, 422, "timezone"),
    ("PUT", "/api/v1/settings", {"sync_interval": [1]}, 422, "sync_interval"),
    ("POST", "/api/v1/search", [], 422, "body"),
    ("POST", "/api/v1/search", {"query": "nul\u0000", "principal": {}}, 422, "query"),
]


def _encode(value: Any) -> bytes:
    # ensure_ascii keeps a lone surrogate as an escape, as a hostile client would send it.
    return json.dumps(value, ensure_ascii=True).encode()


@pytest.mark.parametrize(("method", "path", "payload", "status", "field"), FIELD_CASES)
def test_every_422_names_its_field(
    client: httpx.Client, method: str, path: str, payload: Any, status: int, field: str
) -> None:
    before = _count_sources(client)
    r = client.request(method, path, content=_encode(payload), headers={"content-type": "application/json"})
    body = _problem(r, status)
    assert body.get("field"), body
    assert body["field"].startswith(field), (body, field)
    assert _count_sources(client) == before


def test_a_field_path_is_named_in_patch_too(client: httpx.Client, make_source: SourceFactory) -> None:
    created = make_source()
    r = client.patch(f"/api/v1/sources/{created['id']}", content=_encode({"name": "x\u0000"}))
    assert _problem(r, 415)["field"] == "body"  # no content type: refused before anything else
    r = client.patch(
        f"/api/v1/sources/{created['id']}",
        content=_encode({"name": "x\u0000"}),
        headers={"content-type": "application/json"},
    )
    assert _problem(r, 422)["field"] == "name"


def test_a_nul_in_a_query_parameter_names_it(client: httpx.Client) -> None:
    r = client.get("/api/v1/runs", params={"ids": "1\u0000"})
    assert _problem(r, 422)["field"] == "ids"
    r = client.get("/api/v1/sources/1/dead-letters", params={"reason": "permission\u0000"})
    assert r.status_code in (404, 422)
    if r.status_code == 422:
        assert _problem(r, 422)["field"] == "reason"


def test_malformed_json_is_400_naming_the_body(client: httpx.Client) -> None:
    for raw in (b"{", b"{'a': 1}", b"\xff\xfe", b'{"name": NaN'):
        r = client.post("/api/v1/sources", content=raw, headers={"content-type": "application/json"})
        assert r.status_code in (400, 422), raw
        assert _problem(r, r.status_code)["field"] == "body"


def test_no_request_in_this_module_left_an_unhandled_error(api: Server) -> None:
    logs = api.logs()
    assert "unhandled" not in logs and "Traceback" not in logs, logs[-3000:]
    assert " 500 " not in logs, [line for line in logs.splitlines() if " 500 " in line][:5]
