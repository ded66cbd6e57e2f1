"""What the forkserver of source processes builds once, so that no child builds it again (decision 136).

Imported by that forkserver alone: :mod:`app.pipeline.source_process` names this module among those it
preloads. A source process is a fork of the forkserver and starts with whatever the forkserver built. What a
process builds lazily, at its first request or first attachment, every child would otherwise build anew at
the head of its run's listing, while the run waits for its first page:

- the TLS context every source client verifies with (:func:`connectors.http.tls_context`): loading the CA
  bundle is ~20 ms of CPU, even for a source reached over plain HTTP (a client's connection pools are built
  with it);
- the ``idna`` codec, imported at a socket's first connect to encode the host name;
- pypdf, imported at the first PDF attachment (:func:`connectors.attachments.load_readers`): 50-70 ms.

Measured with scratch scripts against the bench's emulators, from a connector's creation to its first
checkpoint in a fresh fork: Slack 101 → 71 ms, Confluence 165 → ~90 ms (a process that had listed before:
60 and 92 ms).

Nothing here may raise: a forkserver whose preload raises anything but ImportError dies at its start, and
with it every source process to come ("unexpected EOF" at each start). What cannot be built here (a
``SSL_CERT_FILE`` naming a missing file) is left to each child, which then fails its run with the reason, as a
run in one process does.
"""

from __future__ import annotations

import encodings.idna  # noqa: F401  (imported for its side effect: the codec registered before any child)
import logging
from collections.abc import Callable

from connectors.attachments import load_readers
from connectors.http import tls_context

log = logging.getLogger(__name__)


def _ahead(what: str, build: Callable[[], object]) -> None:
    try:
        build()
    except Exception as exc:  # anything: see the module's docstring
        log.warning("source processes: %s not built ahead (%s: %s); each builds its own", what, type(exc).__name__, exc)


_ahead("the TLS context", tls_context)
_ahead("the PDF reader", load_readers)
