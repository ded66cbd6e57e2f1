"""Signature checks never raise, whatever the header bytes (issue 11, Deliver 5).

A server hands header values over as latin-1 text, so any byte 0x00-0xFF can arrive; the checks must
answer False, never raise (``hmac.compare_digest`` on a non-ASCII str raises ``TypeError``; ``int()`` on
5,000 digits raises ``ValueError``)."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.webhook_sig import hub_signature, slack_signature, verify_hub_signature, verify_slack_signature

SECRET = "s3cret-value"
BODY = b'{"webhookEvent":"jira:issue_updated"}'
latin1 = st.binary(max_size=200).map(lambda b: b.decode("latin-1"))
any_text = st.text(max_size=200)


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(latin1, any_text))
def test_hub_check_answers_false_for_any_header_value(value: str) -> None:
    assert verify_hub_signature({"X-Hub-Signature": value}, BODY, SECRET) is False
    assert verify_hub_signature({"X-Hub-Signature": "sha256=" + value}, BODY, SECRET) is False


@settings(max_examples=300, deadline=None)
@given(signature=st.one_of(latin1, any_text), stamp=st.one_of(latin1, any_text, st.just("9" * 5000)))
def test_slack_check_answers_false_for_any_header_values(signature: str, stamp: str) -> None:
    headers = {"X-Slack-Signature": signature, "X-Slack-Request-Timestamp": stamp}
    assert verify_slack_signature(headers, BODY, SECRET) is False


def test_valid_signatures_still_verify() -> None:
    assert verify_hub_signature({"x-hub-signature": hub_signature(BODY, SECRET)}, BODY, SECRET)
    stamp = str(int(time.time()))
    headers = {"X-Slack-Signature": slack_signature(SECRET, stamp, BODY), "X-Slack-Request-Timestamp": stamp}
    assert verify_slack_signature(headers, BODY, SECRET)


def test_a_signed_but_absurd_timestamp_is_refused() -> None:
    for stamp in ("1" + "0" * 4999, "١٧٠٠٠٠٠٠٠٠", "+1700000000", " 1700000000"):
        headers = {"X-Slack-Signature": slack_signature(SECRET, stamp, BODY), "X-Slack-Request-Timestamp": stamp}
        assert verify_slack_signature(headers, BODY, SECRET, now=1_700_000_000) is False
