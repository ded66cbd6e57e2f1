"""What start-up built, moved out of the garbage collector's sight once a process is ready to work.

A long-running process (``harvester worker``, ``serve``, ``sync``) spends start-up importing modules and
building its app: about 83,000 container objects (functions, classes, module dicts) that live as long as
the process. CPython's full collection walks every one of them each time: 66-68 ms of CPU on this
project's machine, three times in a 2,000-issue Jira run (docs/performance.md "The collector's walks over
start-up objects", decision 92). ``gc.freeze()`` moves every object tracked now into a permanent
generation that collections skip. The cost is that a reference cycle among those objects that later
becomes garbage is never freed; start-up objects are not replaced while a process runs, so nothing of size
is kept.
"""

from __future__ import annotations

import gc
import logging

from app.registry import get_spec, known_types

log = logging.getLogger(__name__)


def settle(*, connectors: bool = True) -> int:
    """Import every connector package a run may need (``connectors``), collect once, freeze what is left;
    returns the number of objects frozen (``gc.get_freeze_count()``). Calling it again freezes what was
    built since."""
    if connectors:
        # Imported at a run's first use otherwise, so their modules would stay in every full collection.
        for connector_type in known_types():
            get_spec(connector_type)
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.info("start-up objects frozen out of the collector's walks: %d", frozen, extra={"frozen_objects": frozen})
    return frozen
