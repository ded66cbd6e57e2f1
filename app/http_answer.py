"""An answer from an HTTP endpoint Harvester calls out to, read within a bound of size and time (decision 162).

httpx's timeouts bound each wait for bytes, not the whole answer: a receiver or an embeddings endpoint that
sends a few bytes at a time, each within the read timeout, held its caller without end (an alert job, the
audit sink's thread, a run waiting for vectors). :func:`post_bounded` reads the answer as it comes and gives up
once it has taken ``max_seconds`` from the request or passed ``max_bytes``. The sources' own client
(``connectors.http``) applies the same two bounds to every source answer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx


class AnswerTooSlow(httpx.TimeoutException):
    """The answer had not ended ``max_seconds`` after its request: a timeout like any other to the caller."""


class AnswerTooLarge(httpx.DecodingError):
    """The answer's decoded body passed ``max_bytes``: no retry can shrink it."""


@dataclass(frozen=True, slots=True)
class Answer:
    status_code: int
    headers: httpx.Headers
    content: bytes  # decoded (gunzipped), at most max_bytes


def post_bounded(client: httpx.Client, url: str, *, max_bytes: int, max_seconds: float, **request: Any) -> Answer:
    """POST through ``client`` and read the answer within the bounds. Raises :class:`AnswerTooSlow` or
    :class:`AnswerTooLarge` (both ``httpx.HTTPError``), or what ``client.stream`` raises."""
    deadline = time.monotonic() + max_seconds
    with client.stream("POST", url, **request) as response:
        parts: list[bytes] = []
        size = 0
        # Each chunk is what one receive brought, inflated: the bounds are checked between receives.
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise AnswerTooLarge(f"the answer is larger than {max_bytes} bytes", request=response.request)
            parts.append(chunk)
            if time.monotonic() > deadline:
                raise AnswerTooSlow(
                    f"the answer had not ended {max_seconds:g} s after the request ({size} bytes had come)",
                    request=response.request,
                )
        return Answer(response.status_code, response.headers, b"".join(parts))
