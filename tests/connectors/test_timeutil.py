"""The sources' timestamps (decision 95): ``parse_time`` reads what ``fromisoformat`` takes as it is without
normalising it first, and ``iso_utc`` writes UTC through orjson; both give what the normalising parse (for
every text, as before) and ``isoformat()`` give, checked here against those forms as the reference."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.timeutil import _as_utc, _parse_normalised, iso_utc, parse_time


def reference_parse(value: Any) -> datetime | None:
    """parse_time as it was: every text through the normalising parse, none read as it comes."""
    return _as_utc(_parse_normalised(value)) if isinstance(value, str) else None


def reference_iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def two(n: int) -> str:
    return f"{n:02d}"


# Timestamps as the sources send them and shapes around them: Atlassian's +0000, Z, +01:00, fractions of
# any length, no seconds, a space for the T, a date alone, surrounding blanks, a stray Z, junk at the end.
timestamps = st.builds(
    lambda lead, year, month, day, sep, hour, minute, seconds, fraction, offset, trail: (
        f"{lead}{year:04d}-{two(month)}-{two(day)}{sep}{two(hour)}:{two(minute)}{seconds}{fraction}{offset}{trail}"
    ),
    st.sampled_from(["", " ", "\t"]),
    st.integers(1, 9999),
    st.integers(1, 12),
    st.integers(1, 28),
    st.sampled_from(["T", " ", "t", "x"]),
    st.integers(0, 24),
    st.integers(0, 59),
    st.sampled_from(["", ":00", ":59", ":7"]),
    st.sampled_from(["", ".0", ".123", ".123456", ".1234567", ".000"]),
    st.sampled_from(["", "Z", "z", "+0000", "+00:00", "-0530", "+05:30", "+01", "+1400", "-23:59", "+0100Z", "ZZ"]),
    st.sampled_from(["", " ", "\n", "Z", "x"]),
)


@settings(max_examples=600, deadline=None)
@given(timestamps)
def test_parse_time_reads_what_the_normalising_parse_read(text: str) -> None:
    assert parse_time(text) == reference_parse(text)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=40), st.none(), st.integers(), st.dates().map(str)))
def test_parse_time_on_anything(value: Any) -> None:
    assert parse_time(value) == reference_parse(value)


def test_parse_time_by_example() -> None:
    assert parse_time("2024-03-05T10:11:12.345+0100") == datetime(2024, 3, 5, 9, 11, 12, 345000, tzinfo=UTC)
    assert parse_time(" 2024-03-05T10:11:12Z\n") == datetime(2024, 3, 5, 10, 11, 12, tzinfo=UTC)
    assert parse_time("2024-03-05T10:11:12") == datetime(2024, 3, 5, 10, 11, 12, tzinfo=UTC)
    assert parse_time("2024-03-05T10:11:12.000+0000").tzinfo is UTC  # type: ignore[union-attr]
    assert parse_time("") is None
    assert parse_time("   ") is None
    assert parse_time("yesterday") is None
    assert parse_time(1709633472) is None
    assert parse_time("0001-01-01T00:30:00+01:00") is None  # before the first UTC instant
    assert parse_time("9999-12-31T23:30:00-01:00") is None


@settings(max_examples=600, deadline=None)
@given(st.datetimes(timezones=st.just(UTC)))
def test_iso_utc_writes_what_isoformat_wrote(value: datetime) -> None:
    assert iso_utc(value) == reference_iso(value)


@settings(max_examples=200, deadline=None)
@given(
    st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)),
    st.sampled_from([UTC, timezone(timedelta(0)), timezone(timedelta(hours=5, minutes=30)), ZoneInfo("Europe/London")]),
)
def test_iso_utc_in_other_zones_as_before(value: datetime, zone: Any) -> None:
    # Only the UTC singleton takes the fast path; any other zone object (even one at +00:00) keeps isoformat().
    aware = value.replace(tzinfo=zone)
    assert iso_utc(aware) == reference_iso(aware)


def test_iso_utc_by_example() -> None:
    assert iso_utc(datetime(2024, 3, 5, 9, 11, 12, 345000, tzinfo=UTC)) == "2024-03-05T09:11:12.345000Z"
    assert iso_utc(datetime(2024, 3, 5, 9, 11, 12, tzinfo=UTC)) == "2024-03-05T09:11:12Z"
    assert iso_utc(datetime(2024, 3, 5, 9, 11, 12, tzinfo=timezone(timedelta(hours=1)))) == "2024-03-05T09:11:12+01:00"
    assert iso_utc(None) is None
