"""The emulator kit's request statistics that tests of the clients rely on (connectors/emulators/kit.py)."""

from __future__ import annotations

import threading

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
