"""Run in a child of the source processes' forkserver by test_source_process: what the child found built
when it started. Imports nothing heavy of its own, so what it reports came from the forkserver."""

from __future__ import annotations

import sys
from multiprocessing.connection import Connection

from connectors.http import tls_context


def report(pipe: Connection) -> None:
    pipe.send(
        {
            "tls_context": tls_context.cache_info().currsize,
            "pypdf": "pypdf" in sys.modules,
            "idna": "encodings.idna" in sys.modules,
        }
    )
    pipe.close()
