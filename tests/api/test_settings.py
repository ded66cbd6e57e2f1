"""Platform settings: each change raises the version; an invalid value writes nothing (seed 003 "Настройки")."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Server


def test_get_shows_defaults_with_the_window_as_day_and_time(api: Server) -> None:
    with api.client("read") as c:
        body = c.get("/api/v1/settings").json()
    assert body["values"]["reconcile_window"] == {"day": "sunday", "time": "03:00"}
    assert body["values"]["sync_interval"] == 900 and body["values"]["timezone"] == "UTC"
    assert body["values"]["fetch_fanout"] == 4
    assert body["values"]["directory_ttl"] == 300
    assert body["values"]["lock_wait_max"] == 60
    assert body["values"]["response_max_mib"] == 128 and body["values"]["response_max_seconds"] == 300
    assert isinstance(body["version"], int)


def test_put_changes_values_and_raises_the_version(api: Server) -> None:
    with api.client() as c:
        before = c.get("/api/v1/settings").json()
        r = c.put(
            "/api/v1/settings",
            json={
                "sync_interval": 1800,
                "timezone": "Europe/Berlin",
                "reconcile_window": {"day": "saturday", "time": "22:30"},
                "mass_delete_share": 0.5,
            },
        )
        same = c.put("/api/v1/settings", json={"sync_interval": 1800})
        stale = c.put("/api/v1/settings", json={"version": before["version"], "sync_interval": 60})
    assert r.status_code == 200, r.text
    after = r.json()
    assert after["version"] > before["version"]
    assert after["values"]["reconcile_window"] == {"day": "saturday", "time": "22:30"}
    assert after["values"]["timezone"] == "Europe/Berlin" and after["values"]["mass_delete_share"] == 0.5
    assert same.json()["version"] == after["version"]  # an equal value is not a change
    assert stale.status_code == 409 and stale.json()["field"] == "version"


def test_invalid_values_are_422_and_change_nothing(api: Server) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"sync_interval": "often"}, "sync_interval"),
        ({"sync_interval": -60}, "sync_interval"),
        ({"probe_interval": 0}, "probe_interval"),
        ({"timezone": "Mars/Olympus_Mons"}, "timezone"),
        ({"timezone": "../../etc/passwd"}, "timezone"),
        ({"reconcile_window": {"day": "sunday", "time": "25:00"}}, "reconcile_window.time"),
        ({"reconcile_window": {"day": "caturday", "time": "03:00"}}, "reconcile_window.day"),
        ({"mass_delete_share": 1.5}, "mass_delete_share"),
        ({"search_include_drafts": "yes"}, "search_include_drafts"),
        ({"api_key": "s3cr3t"}, "api_key"),
        ({"fetch_fanout": 0}, "fetch_fanout"),
        ({"fetch_fanout": 17}, "fetch_fanout"),
        ({"fetch_fanout": 2.5}, "fetch_fanout"),
        ({"directory_ttl": -1}, "directory_ttl"),
        ({"directory_ttl": 3601}, "directory_ttl"),
        ({"directory_ttl": 2.5}, "directory_ttl"),
        ({"directory_ttl": "five minutes"}, "directory_ttl"),
        ({"directory_ttl": True}, "directory_ttl"),
        ({"lock_wait_max": 0}, "lock_wait_max"),  # PostgreSQL's lock_timeout 0 is no bound at all
        ({"lock_wait_max": 3601}, "lock_wait_max"),
        ({"lock_wait_max": 1.5}, "lock_wait_max"),
        ({"lock_wait_max": "a minute"}, "lock_wait_max"),
        ({"response_max_mib": 0}, "response_max_mib"),
        ({"response_max_mib": 4097}, "response_max_mib"),
        ({"response_max_mib": 0.5}, "response_max_mib"),
        ({"response_max_seconds": 0}, "response_max_seconds"),
        ({"response_max_seconds": 3601}, "response_max_seconds"),
        ({"response_max_seconds": "5 minutes"}, "response_max_seconds"),
        # One good value with one bad: all or nothing.
        ({"watchdog_silence": 7200, "timezone": "Nowhere/Town"}, "timezone"),
    ]
    with api.client() as c:
        before = c.get("/api/v1/settings").json()
        for body, field in cases:
            r = c.put("/api/v1/settings", json=body)
            assert r.status_code == 422, (body, r.text)
            assert r.json()["field"] == field, (body, r.json())
        after = c.get("/api/v1/settings").json()
    assert after == before


@pytest.mark.parametrize(
    ("key", "low", "high"),
    [
        ("directory_ttl", 0, 3600),
        ("lock_wait_max", 1, 3600),
        ("response_max_mib", 1, 4096),
        ("response_max_seconds", 1, 3600),
    ],
)
def test_a_bounded_setting_takes_each_of_its_bounds(api: Server, key: str, low: int, high: int) -> None:
    with api.client() as c:
        at_low = c.put("/api/v1/settings", json={key: low})
        at_high = c.put("/api/v1/settings", json={key: high})
    assert at_low.status_code == 200, at_low.text
    assert at_low.json()["values"][key] == low
    assert at_high.status_code == 200, at_high.text
    assert at_high.json()["values"][key] == high
