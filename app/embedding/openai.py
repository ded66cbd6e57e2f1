"""Any OpenAI-compatible ``POST /v1/embeddings`` endpoint (OpenAI, vLLM, TEI, Ollama, LiteLLM...).

Transient failures (429, 5xx, connection errors) are retried with exponential backoff; a
``Retry-After`` from the server wins over our own schedule. The API key is sent as a bearer token and
appears nowhere else: not in logs, exception messages or ``repr``.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx
import numpy as np
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

from app.embedding.base import DimensionMismatch, EmbeddingError, Vectors, l2_normalise
from app.http_answer import (
    Answer,
    AnswerTooLarge,
    AnswerTooSlow,
    BoundedClient,
    CallAbandoned,
    post_bounded,
    sleep_unless_abandoned,
)
from app.redact import register_secret
from connectors.http import header_value_problem

log = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 64
DEFAULT_MAX_TOKENS = 512  # a retrieval chunk size, well under the usual 8k input limit
DEFAULT_ATTEMPTS = 6
# One answer's bounds (decision 162): a batch of 2,048 texts of 3,072 dimensions is about 130 MB of JSON; an
# answer may take five read timeouts in all, however its bytes trickle.
ANSWER_MAX_BYTES = 256 * 1024 * 1024
ANSWER_TIMEOUTS = 5
# A server asking us to wait longer than this is treated as "try again later", not obeyed forever.
MAX_RETRY_AFTER = 120.0
_RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})


class _Transient(EmbeddingError):
    def __init__(self, message: str, retry_after: float | None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def endpoint_url(url: str) -> str:
    """Accept a server root, an OpenAI-style ``.../v1`` base URL, or the full embeddings URL."""
    base = url.rstrip("/")
    if base.endswith("/embeddings"):
        return base
    if base.endswith("/v1"):
        return f"{base}/embeddings"
    return f"{base}/v1/embeddings"


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date), None if absent/garbled."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    if math.isnan(seconds):
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


class OpenAIEmbedder:
    def __init__(
        self,
        *,
        url: str,
        model: str,
        dimension: int,
        api_key: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        attempts: int = DEFAULT_ATTEMPTS,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
        # A backoff that a stopped run's embedding thread leaves at once (decision 167).
        sleep: Callable[[float], None] = sleep_unless_abandoned,
    ) -> None:
        if dimension < 1 or batch_size < 1 or attempts < 1:
            raise ValueError("dimension, batch_size and attempts must be >= 1")
        self.model_name = model
        self.dimension = dimension
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.url = endpoint_url(url)
        if api_key:
            problem = header_value_problem(api_key)
            if problem is not None:
                # Refused here, not as a UnicodeEncodeError in the middle of the first embedding call.
                raise ValueError(f"the embedder API key cannot be sent as an HTTP header: it {problem}")
            register_secret(api_key)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = BoundedClient(headers=headers, timeout=timeout, transport=transport)
        self._answer_seconds = timeout * ANSWER_TIMEOUTS
        # Full jitter: workers throttled together must not come back together.
        self._backoff = wait_random_exponential(multiplier=0.5, max=30.0)
        self._retrying = Retrying(
            stop=stop_after_attempt(attempts),
            wait=self._wait,
            retry=retry_if_exception_type(_Transient),
            before_sleep=self._log_retry,
            sleep=sleep,
            reraise=True,
        )

    def count_tokens(self, text: str) -> int:
        # No tokenizer for a remote model offline: ~3 UTF-8 bytes per token over-counts both English
        # (~4 chars/token) and Cyrillic (2 bytes/char, ~2.5 chars/token), so chunks stay under limit.
        return math.ceil(len(text.encode("utf-8")) / 3)

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            try:
                out[start : start + len(batch)] = self._retrying(self._request, batch)
            except CallAbandoned as exc:  # from a backoff: the caller stopped (decision 167)
                raise EmbeddingError(f"embeddings endpoint: {exc}") from None
        return out

    def close(self) -> None:
        self._client.close()

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(url={self.url!r}, model={self.model_name!r}, dimension={self.dimension})"

    # ------------------------------------------------------------ one request

    def _request(self, batch: list[str]) -> Vectors:
        try:
            response = post_bounded(
                self._client,
                self.url,
                max_bytes=ANSWER_MAX_BYTES,
                max_seconds=self._answer_seconds,
                json={"model": self.model_name, "input": batch, "encoding_format": "float"},
            )
        except CallAbandoned as exc:  # the caller stopped: not the endpoint's failure, and not retried
            raise EmbeddingError(f"embeddings endpoint: {exc}") from None
        except AnswerTooSlow as exc:
            raise _Transient(f"embeddings endpoint: {exc}", None) from None
        except AnswerTooLarge as exc:
            raise EmbeddingError(f"embeddings endpoint: {exc}") from None
        except httpx.TransportError as exc:
            raise _Transient(f"embeddings endpoint unreachable: {type(exc).__name__}", None) from None
        if response.status_code in _RETRY_STATUSES:
            raise _Transient(
                f"embeddings endpoint answered {response.status_code}",
                parse_retry_after(response.headers.get("retry-after")),
            )
        if response.status_code != 200:
            text = response.content[:300].decode("utf-8", errors="replace")
            raise EmbeddingError(f"embeddings endpoint answered {response.status_code}: {text!r}")
        return self._vectors(response, len(batch))

    def _vectors(self, response: Answer, expected: int) -> Vectors:
        try:
            data: list[dict[str, Any]] = json.loads(response.content)["data"]
            rows = sorted(data, key=lambda item: int(item.get("index", 0)))
            matrix = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"embeddings response is not OpenAI-shaped: {exc}") from None
        if matrix.ndim != 2 or matrix.shape[0] != expected:
            raise EmbeddingError(f"embeddings response has {len(rows)} vectors for {expected} inputs")
        if matrix.shape[1] != self.dimension:
            raise DimensionMismatch(
                f"model {self.model_name!r} returned {matrix.shape[1]}-d vectors, "
                f"configured dimension is {self.dimension}"
            )
        return l2_normalise(matrix)

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Transient) and exc.retry_after is not None:
            return exc.retry_after
        return float(self._backoff(state))

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        log.warning("embedding request attempt %d failed (%s); retrying in %.1fs", state.attempt_number, exc, wait)
