"""Pipeline overlap (issue 15 §1-2): every goal's ratio against its baseline, measured in one run.

Each emulator runs in its own process (a real source is a remote server: its rendering must not share
our interpreter lock), fed the same data as bench/connector_sync.py. For each connector:

(1) no injected latency — items/s of a full run through ``execute_run`` (mapping, hashing, upserts,
    seen-set, resolve, cursor) against the bare ``enumerate()`` loop; goal >= 0.8. With the emulator
    answering at once, a run is CPU: the row also prints the CPU seconds of the bare loop and of the best
    ``after`` run by process (this one, the emulator, PostgreSQL; psutil) and the ``bound`` that CPU puts
    on the ratio on this machine: bare wall ÷ max(this process's CPU, all of it ÷ cores), since one
    interpreter lock serialises nearly all of this process's work and the cores carry the rest;
(2) ``latency_ms`` injected on every request (emulator fault) — full-run wall time against the bare
    fetch loop's; goal <= 1.1;
(3) the local embedder (fewer items; MiniLM on ``--embed-threads``) — full-run wall time
    against max(bare fetch loop, bare ``embed()`` of the same chunk texts); goal <= 1.15. The row also
    prints the ``bound`` for the best ``after`` run: nothing can be embedded before the first group of
    texts reaches the stage, and from then on at best the run's CPU (every process's) is spread over the
    cores, so the run takes at least max(bare fetch, first group's arrival + its CPU ÷ cores); a little
    CPU spent before that arrival makes this a slightly generous floor.

Every pipeline figure is measured twice in the same run: ``before`` with ``prefetch=0`` (each page
fetched only after the previous one committed) and ``after`` with ``prefetch=DEFAULT_PREFETCH``.
Bare and pipeline runs alternate ``--repeats`` times and the best of each is kept. ``--source-process`` adds
a third run to section (1), ``after`` with the connector's listing in a process of its own
(``HARVESTER_SOURCE_PROCESS=on``, app.pipeline.source_process, decision 135), printed on a row of its own
with that process's CPU.

    python bench/overlap.py [--items 2000] [--latency-items 600] [--latency-ms 100] [--embed-items 150]
                            [--embed-compare] [--coalesce-compare] [--index-compare] [--budget-compare]
                            [--source-process] [--repeats 2]
                            [--only jira,slack]
                            [--skip latency,embed]

The database: as bench/connector_sync.py (HARVESTER_DATABASE_URL's server, else an embedded one).
"""

# The work is in bench/_overlap.py. This script imports nothing else at its top: ``--source-process`` starts a
# forkserver that imports the main script once (app.pipeline.source_process), and a main that had numpy in it
# would make every source process pay for numpy's threads after each fork (~0.3 s of CPU, decision 135),
# which no ``harvester`` entry point does.

if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench._overlap import main

    main()
