"""The emulator kit's request statistics that tests of the clients rely on (connectors/emulators/kit.py)."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from connectors.emulators import kit


def test_latency_depth_counts_requests_waited_for_in_turn_and_keeps_its_memory_flat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Fold answers away as soon as more than 8 are kept, whatever their age.
    monkeypatch.setattr(kit, "_DEPTH_KEEP", 8)
    monkeypatch.setattr(kit, "_DEPTH_HORIZON", 0.0)
    faults = kit.Faults()
    faults.add({"latency_ms": 1})
    for _ in range(30):  # one after another: each waited for the one before
        faults.for_request("GET /x")
    assert faults.latency_depth == 30
    assert len(faults._ends) <= 9, "the answers kept stay bounded"

    faults.add({"latency_ms": 200})
    barrier = threading.Barrier(3)

    def together() -> None:
        barrier.wait()
        faults.for_request("GET /y")

    threads = [threading.Thread(target=together) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert faults.latency_depth == 31, "three requests sent at once are one more wait, not three"
    assert faults.max_in_latency == 3


def test_a_route_latency_delays_only_the_routes_it_finds() -> None:
    faults = kit.Faults()
    faults.add({"route_latency_ms": {r"/search": 1, "history$": 2}})
    for route in (
        "GET /rest/api/3/search/jql",
        "GET /rest/api/2/issue/(?P<id>[^/]+)",
        "GET /api/conversations\\.history",
    ):
        faults.for_request(route)
    # Only the requests that waited are counted inside the latency wait, by route.
    assert faults.max_in_latency_by_route == {"GET /rest/api/3/search/jql": 1, "GET /api/conversations\\.history": 1}
    assert faults.describe()["route_latency_ms"] == {"/search": 1.0, "history$": 2.0}
    faults.clear()
    assert faults.describe()["route_latency_ms"] == {}

    for bad, why in (
        ({"route_latency_ms": {"/search": -1}}, "milliseconds"),
        ({"route_latency_ms": ["/search"]}, "milliseconds"),
        ({"route_latency_ms": {"(": 5}}, "route_latency_ms"),
    ):
        with pytest.raises(ValueError, match=why):
            faults.add(bad)


class _Clock:
    """The kit's ``time`` module with ``sleep`` recorded instead of slept."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)


def test_a_keyed_latency_slows_that_record_alone_and_only_where_it_is_served(monkeypatch: pytest.MonkeyPatch) -> None:
    # Decision 132's fault: one slow record among fast ones. Asking whether a list shows the record does not
    # wait, serving it does, other keys and other requests are untouched, and a bad spec names its field.
    clock = _Clock()
    monkeypatch.setattr(kit, "time", clock)
    faults = kit.Faults()
    faults.add({"latency_ms": 300, "keys": ["P-3"]})
    assert faults.for_key("P-3", serving=False) is None
    assert faults.for_key("P-4") is None
    assert faults.for_request("GET /x") is None
    assert clock.slept == []
    assert faults.for_key("P-3") is None
    assert clock.slept == [0.3]
    assert faults.describe()["latency_ms"] == 0.0 and faults.describe()["rules"][0]["latency_ms"] == 300.0
    for bad, field in (
        ({"latency_ms": 0, "keys": ["P-3"]}, "latency_ms"),
        ({"latency_ms": "slow", "keys": ["P-3"]}, "latency_ms"),
        ({"latency_ms": 100, "keys": "P-3"}, "keys"),
        ({"latency_ms": 100, "keys": ["P-3"], "status": 503}, "status"),
    ):
        with pytest.raises(ValueError, match=field):
            faults.add(bad)


def test_a_counted_fault_with_a_ratio_fires_on_that_share_of_requests_until_its_count() -> None:
    # The chaos tests' sprinkled outages: failures spread through a run, never more than its retries ride out.
    faults = kit.Faults(seed=7)
    faults.add({"status": 503, "ratio": 0.2, "count": 4})
    answers = [faults.for_request("GET /x") for _ in range(400)]
    failed = [i for i, a in enumerate(answers) if a is not None]
    assert len(failed) == 4 and all(answers[i].status == 503 for i in failed)  # type: ignore[union-attr]
    assert failed != [0, 1, 2, 3] and failed[-1] > 4, "sprinkled, not the next four requests"
    # A count alone is still the next requests, as before.
    faults.clear()
    faults.add({"status": 503, "count": 3})
    assert [faults.for_request("GET /x") is not None for _ in range(5)] == [True, True, True, False, False]


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ({"route": "/x", "trickle_headers_ms": 0}, "trickle_headers_ms must be a number > 0"),
        ({"route": "/x", "trickle_headers_ms": "fast"}, "trickle_headers_ms must be a number > 0"),
        ({"route": "/x", "trickle_headers_ms": True}, "trickle_headers_ms must be a number > 0"),
        ({"trickle_headers_ms": 10}, "fault needs a 'route' pattern"),
        ({"route": "(", "trickle_headers_ms": 10}, "route: "),
        ({"route": "/x", "trickle_headers_ms": 10, "trickle_ms": 10}, "a fault is one of"),
        ({"route": "/x", "trickle_headers_ms": 10, "status": 500}, "takes only 'route', itself and 'count'"),
        ({"route": "/x", "trickle_headers_ms": 10, "count": 0}, "count must be a positive integer"),
    ],
)
def test_a_bad_shape_fault_is_refused_over_http_naming_its_field_and_nothing_is_armed(
    spec: dict[str, object], says: str
) -> None:
    app = kit.EmulatorApp(seed=1)
    app.route("GET", r"/x")(lambda _req: kit.Response(200, {"ok": True}))
    with kit.serve(app) as running:
        refused = httpx.post(f"{running.base_url}/_emulator/faults", json=spec)
        assert refused.status_code == 400
        assert says in refused.text
        answer = httpx.get(f"{running.base_url}/x")
        assert answer.status_code == 200 and answer.json() == {"ok": True}
        assert httpx.get(f"{running.base_url}/_emulator/faults").json() == kit.Faults().describe()


def test_a_trickled_head_comes_whole_and_only_for_its_count() -> None:
    app = kit.EmulatorApp(seed=1)
    app.route("GET", r"/x")(lambda _req: kit.Response(200, {"ok": True}))
    with kit.serve(app) as running:
        spec = {"route": "/x", "trickle_headers_ms": 5, "count": 1}
        assert httpx.post(f"{running.base_url}/_emulator/faults", json=spec).status_code == 200
        answer = httpx.get(f"{running.base_url}/x")  # the trickled head parses like any other
        assert answer.status_code == 200 and answer.json() == {"ok": True}
        shapes = httpx.get(f"{running.base_url}/_emulator/faults").json()["shapes"]
        assert [(s["trickle_headers_ms"], s["count"]) for s in shapes] == [(5.0, 0)], "its one use is spent"
        assert app.faults.shape("GET /x", kit.Response(200, {"ok": True})).trickle_headers_ms == 0.0
