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

And the stack dump on SIGUSR1 (decision 157) that every ``harvester`` command registers: the forkserver and
its children do not run that command's main, and without it the signal would end them (an operator's
``pkill -USR1 -f harvester`` would fail every run listing apart). Registered here, it holds in the forkserver
and in every child forked from it.

It also keeps each child from running the parent's main script again (decision 154). multiprocessing prepares
every child of a forkserver by running the parent's ``__main__`` (the ``harvester`` script, a bench, pytest) as
``__mp_main__``, so that functions defined there can be unpickled; a forkserver is meant to do that once when
``"__main__"`` is among its preloads, but up to Python 3.13.7 it never receives the script's path
(CPython gh-126631, gh-137996) and every child imports what the script imports: ``app.cli`` and its 70 modules
(~55 ms of CPU) under a worker, numpy and onnxruntime under a bench (~0.27 s). A source process needs nothing
from ``__main__``: its target and everything sent to it live in ``app`` and ``connectors``. So in this
forkserver, and in the children it forks, the preparation skips the main script.

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
import faulthandler
import logging
import multiprocessing.spawn
import signal
from collections.abc import Callable, Mapping
from typing import Any

from connectors.attachments import load_readers
from connectors.http import tls_context

log = logging.getLogger(__name__)


def _ahead(what: str, build: Callable[[], object]) -> None:
    try:
        build()
    except Exception as exc:  # anything: see the module's docstring
        log.warning("source processes: %s not built ahead (%s: %s); each builds its own", what, type(exc).__name__, exc)


# What a child's preparation would use to run the parent's main script again (see the docstring).
_MAIN_KEYS = frozenset({"init_main_from_path", "init_main_from_name"})
_prepare = multiprocessing.spawn.prepare


def _prepare_without_main(data: Mapping[str, Any]) -> None:
    """multiprocessing's preparation of a child (``sys.path``, working directory, process name, ...) without
    running the parent's main script in it."""
    _prepare({key: value for key, value in data.items() if key not in _MAIN_KEYS})


multiprocessing.spawn.prepare = _prepare_without_main
_ahead("the stack dump on SIGUSR1", lambda: faulthandler.register(signal.SIGUSR1, all_threads=True))
_ahead("the TLS context", tls_context)
_ahead("the PDF reader", load_readers)
