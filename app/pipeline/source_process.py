"""A run's listing in a process of its own (issue 15 §1, decision 135).

A full or reconciliation run with read-ahead of a connector whose manifest says ``listing_apart``
(Confluence's, decision 153; an incremental poll lists in the run's process, decision 154), or any
whole-source run with ``HARVESTER_SOURCE_PROCESS=on`` (none with ``off``), lists its
source in a child process: the connector's ``enumerate`` (requests, JSON decoding, attachments' text) runs
there under an interpreter lock of its own while the run's process maps, loads and embeds. Measured in decision 133: on
two cores the lock cost the no-latency runs 0.03-0.09 of their ratio to the bare loop.

How it is wired:

- Children come from a **forkserver** (started by the worker at start-up, else by the first run that asks;
  the connector packages preloaded, and what each child would otherwise build at its first request,
  :mod:`app.pipeline.source_preload`, which also keeps each child from running the worker's main script again:
  ~0.4 s once, then ~10 ms a child, decision 154), never from a
  fork of the worker, whose other threads (heartbeats, the embedder, Procrastinate's loop) may hold locks
  at the moment of a fork.
- The child receives the run's :class:`SourceConfig` over the pipe (the credential never appears in an
  argument list or an environment), registers the credential for log redaction, logs through the same
  handler shape as the worker, and takes the credential's rate budget on a **database connection of its
  own** (the same key as the run's gate: one budget per credential, whichever process asks).
- What the connector emits comes back pickled, in batches of at most ``BATCH`` items, flushed at every
  checkpoint and preview and when the batch's first item is ``FLUSH_AFTER`` s old, each with the
  connector's :class:`CallStats` as of then (calls, 429s, notes, unreadable units), so a page committed
  in the run's process carries the counters of the requests that produced it. The pipe's buffer is the
  back-pressure: a child ahead of the run blocks on it.
- After the listing the child keeps its connector and answers ``count_by_container`` (the completeness
  audit needs the listing's own state: Slack counts the messages it read) until :meth:`close`.
- A failure is raised in the run's process at its place, after the items before it, as its own class
  (:class:`HttpError` rebuilt from its fields; a class that does not survive pickling becomes a
  :class:`SourceProcessFailed` naming it); a broken rate-gate connection becomes :class:`GateLost`, which
  the run treats as the database going away. A child that ends without its end mark (killed, crashed)
  fails the run: "source process exited with code -9 (SIGKILL)". So does a child that sends nothing for
  ``silence`` seconds (the rate-limit patience plus ``SILENCE_MARGIN``): nothing waits forever.
  A child's end is read from its pipe (end of file), never from ``Process.is_alive()``: multiprocessing
  learns of a child's exit from the forkserver, and calls every child gone once the forkserver dies.
- The child dies with its worker: a thread in it checks the worker's pid every ``WATCH_EVERY`` s, and a
  write to a closed pipe ends it too. It ignores SIGINT and SIGTERM: a worker shutting down gracefully
  (a whole control group signalled) finishes or hands back its run, and closes the child itself.

Not used for runs of named items (webhook deltas, dead-letter retries): they are a few requests, and the
directory cache (``directory_ttl``) that serves them lives in the worker's process.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing
import multiprocessing.forkserver
import os
import pickle
import signal
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerProcess
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from app.errors import HarvesterError
from app.logs import configure_logging, json_logging
from app.pids import alive
from app.pipeline.session_limits import bound_lock_waits
from app.redact import register_secret
from app.registry import connector_packages, get_spec
from app.services.rate_budget import PgRateGate
from connectors.base import CallStats, Checkpoint, Emitted, Preview, SourceConfig, SourceError
from connectors.http import HttpError

log = logging.getLogger(__name__)

BATCH = 50  # items a message carries at most (measured in decision 133: pickling is 9-45 µs an item)
FLUSH_AFTER = 0.02  # seconds a batch's first item waits for more before the batch goes anyway
WATCH_EVERY = 1.0  # seconds between the child's checks that its worker is alive
CLOSE_WAIT = 5.0  # seconds a child gets to end after "close" before it is killed
SILENCE_MARGIN = 300.0  # seconds past the rate-limit patience a child may send nothing before the run fails
POLL = 1.0  # seconds between the run's checks of a silent child

_context = multiprocessing.get_context("forkserver")
_preload_lock = threading.Lock()
_preloaded = False

# (api_calls, rate_limited, more_notes, notes, unread) of the child's CallStats.
Snapshot = tuple[int, int, int, tuple[str, ...], tuple[str, ...]]


class SourceProcessFailed(SourceError):
    """The source's process ended without finishing, or raised what could not cross the pipe."""


class GateLost(Exception):
    """The child's rate-gate connection to the database broke: the database went away under the fetch."""


@dataclass(frozen=True, slots=True)
class _Start:
    connector_type: str
    config: SourceConfig  # without its rate gate: the child opens its own
    gate_key: str | None
    conninfo: str | None  # the database the child's gate uses (password included: pipe only)
    lock_wait_s: int | None  # how long the gate's statements wait for another session's lock (decision 159)
    since: datetime | None
    checkpoint: Mapping[str, Any] | None
    worker_pid: int
    name: str  # run-<id>-source: the child's log lines say which run they belong to
    listing: bool  # False: only answer the run's questions (a resumed run whose listing had ended)
    log_level: int
    log_json: bool


def _preload() -> None:
    global _preloaded
    with _preload_lock:
        if not _preloaded:
            # ``source_preload`` builds what each child would otherwise build at its first request (decision
            # 136) and keeps each child from running the worker's main script again (decision 154): not
            # ``"__main__"`` here, which Python before 3.13.8 ignores and a later one would import into the
            # forkserver for nothing (the CLI and all it imports).
            _context.set_forkserver_preload([__name__, *connector_packages(), "app.pipeline.source_preload"])
            _preloaded = True


def start_forkserver() -> None:
    """Starts the forkserver now, with the connector packages imported (a worker at start-up): the first run
    does not pay its ~0.4 s."""
    _preload()
    multiprocessing.forkserver.ensure_running()
    log.info("source processes: forkserver ready")


class SourceProcess:
    """``enumerate`` and ``count_by_container`` of a connector of ``connector_type``, run in a child."""

    def __init__(
        self,
        connector_type: str,
        config: SourceConfig,
        stats: CallStats,
        *,
        conninfo: str | None,
        name: str,
        lock_wait_s: int | None = None,
    ) -> None:
        gate = config.rate_gate
        self._connector_type = connector_type
        self._config = replace(config, rate_gate=None)
        self._gate_key = gate.key if isinstance(gate, PgRateGate) else None
        self._conninfo = conninfo if self._gate_key is not None else None
        self._lock_wait_s = lock_wait_s
        self._stats = stats
        self._name = name
        self._silence = float(config.rate_limit_patience) + SILENCE_MARGIN
        self._process: ForkServerProcess | None = None
        self._pipe: Connection | None = None
        self._listed = False  # the child sent its end mark (or the error that ended the listing)
        self._notes_seen = 0
        self._more_seen = 0
        self._calls_base = stats.api_calls
        self._limited_base = stats.rate_limited

    # ------------------------------------------------------------------ the run's side

    def enumerate(self, since: datetime | None, checkpoint: Mapping[str, Any] | None) -> Iterator[Emitted]:
        pipe = self._spawn(since, checkpoint)
        try:
            while True:
                kind, value, snapshot = self._receive(pipe)
                self._merge(snapshot)
                if kind == "items":
                    yield from value
                elif kind == "end":
                    self._listed = True
                    return
                else:
                    self._listed = True
                    raise _rebuilt(value)
        finally:
            if not self._listed:  # the run stopped early (a failure, a lost lease): the child goes with it
                self._kill()

    def count_by_container(self, containers: Sequence[str]) -> Mapping[str, int | None]:
        pipe = self._pipe
        if pipe is None and self._process is None:
            # A run resumed after its listing had ended lists nothing: a child only to answer this.
            pipe = self._spawn(None, None, listing=False)
            self._listed = True
        if pipe is None or not self._listed:
            raise SourceProcessFailed("the source's process has not listed the source")
        try:
            _send(pipe, ("count", list(containers)))
        except OSError:  # the child ended after its listing: the audit is skipped, the run goes on
            raise SourceProcessFailed(self._exit_detail()) from None
        kind, value, snapshot = self._receive(pipe)
        self._merge(snapshot)
        if kind != "counted":
            raise _rebuilt(value)
        counted: Mapping[str, int | None] = value
        return counted

    def abort(self) -> None:
        """Ends a child that is still listing (the run stops early); one that listed everything stays, for
        :meth:`count_by_container`, until :meth:`close`."""
        process = self._process
        if not self._listed and process is not None:
            # Killed, not closed: the producer thread may be reading the pipe; the child's end closing on
            # its death is what wakes it. :meth:`close` closes our end later, from the run's thread.
            process.kill()
            process.join(CLOSE_WAIT)

    def close(self) -> None:
        """Ends the child: asked first, killed after ``CLOSE_WAIT`` s."""
        process, pipe = self._process, self._pipe
        if process is None:
            return
        if pipe is not None:
            # Asked even when multiprocessing says the child is gone: it learns that from the forkserver,
            # which may have died before its child. A child that missed this ends when the pipe closes.
            with contextlib.suppress(OSError, ValueError):
                _send(pipe, ("close", None))
            process.join(CLOSE_WAIT)
        self._kill()

    def _spawn(
        self, since: datetime | None, checkpoint: Mapping[str, Any] | None, *, listing: bool = True
    ) -> Connection:
        _preload()
        ours, theirs = _context.Pipe(duplex=True)
        process = _context.Process(target=_child, args=(theirs,), name=self._name, daemon=True)
        try:
            process.start()
        except (OSError, EOFError) as exc:
            # The forkserver could not fork (out of processes or memory) or died before answering: the run
            # fails with that reason, not as an internal error of its own.
            ours.close()
            theirs.close()
            raise SourceProcessFailed(f"could not start a source process: {type(exc).__name__}: {exc}") from exc
        theirs.close()  # only the child holds its end now: its exit is our end of file
        self._process, self._pipe = process, ours
        root = logging.getLogger()
        start = _Start(
            connector_type=self._connector_type,
            config=self._config,
            gate_key=self._gate_key,
            conninfo=self._conninfo,
            lock_wait_s=self._lock_wait_s,
            since=since,
            checkpoint=checkpoint,
            worker_pid=os.getpid(),
            name=self._name,
            listing=listing,
            log_level=root.getEffectiveLevel(),
            log_json=json_logging(),
        )
        _send(ours, start)
        log.debug("source process %s started (pid %s)", self._name, process.pid)
        return ours

    def _receive(self, pipe: Connection) -> tuple[str, Any, Snapshot]:
        silent_since = time.monotonic()
        while True:
            try:
                if pipe.poll(POLL):
                    message: tuple[str, Any, Snapshot] = pickle.loads(pipe.recv_bytes())
                    return message
            except (EOFError, OSError):  # the child's end closed: only the child held it, so it has ended
                raise SourceProcessFailed(self._exit_detail()) from None
            if time.monotonic() - silent_since > self._silence:
                self._kill()
                raise SourceProcessFailed(f"source process sent nothing for {self._silence:.0f} s; stopped it")

    def _exit_detail(self) -> str:
        process = self._process
        if process is None:
            return "source process was not started"
        process.join(CLOSE_WAIT)
        code = process.exitcode
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                return f"source process exited with code {code} ({signal.Signals(-code).name})"
        return f"source process exited with code {code}"

    def _merge(self, snapshot: Snapshot) -> None:
        calls, limited, more, notes, unread = snapshot
        stats = self._stats
        stats.api_calls = self._calls_base + calls
        stats.rate_limited = self._limited_base + limited
        for note in notes[self._notes_seen :]:
            stats.note(note)
        self._notes_seen = len(notes)
        stats.more_notes += more - self._more_seen
        self._more_seen = more
        stats.unread.update(unread)

    def _kill(self) -> None:
        process = self._process
        if process is not None:
            if process.is_alive():
                process.kill()
            process.join(CLOSE_WAIT)
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None


def _send(pipe: Connection, message: object) -> None:
    pipe.send_bytes(pickle.dumps(message, pickle.HIGHEST_PROTOCOL))


def _snapshot(stats: CallStats) -> Snapshot:
    return (stats.api_calls, stats.rate_limited, stats.more_notes, tuple(stats.notes), tuple(stats.unread))


# A failure as it crosses the pipe: ("http", status, reason, transient, detail), ("gate", text),
# ("pickled", bytes) or ("other", "Class: text").
Portable = tuple[Any, ...]


def _portable(exc: BaseException, gate_conn: psycopg.Connection[Any] | None) -> Portable:
    if isinstance(exc, psycopg.Error) and gate_conn is not None and (gate_conn.broken or gate_conn.closed):
        return ("gate", str(exc))
    if isinstance(exc, HttpError):
        return ("http", exc.status, exc.reason, exc.transient, exc.detail)
    try:
        data = pickle.dumps(exc, pickle.HIGHEST_PROTOCOL)
        pickle.loads(data)  # a class whose arguments do not round-trip fails here, not in the run
    except Exception:
        return ("other", f"{type(exc).__name__}: {exc}")
    return ("pickled", data)


def _rebuilt(value: Portable) -> BaseException:
    kind = value[0]
    if kind == "http":
        _, status, reason, transient, detail = value
        return HttpError(status, reason, transient, detail)
    if kind == "gate":
        return GateLost(value[1])
    if kind == "pickled":
        exc: BaseException = pickle.loads(value[1])
        return exc
    return SourceProcessFailed(f"source process failed: {value[1]}")


# ---------------------------------------------------------------------- the child's side


def _child(pipe: Connection) -> None:
    """The child's whole life: list, answer, close. Runs in a process forked by the forkserver."""
    # Every object the forkserver imported stays out of the collector's walks, as in a settled worker
    # (decision 92): the listing allocates a lot, and each full collection would walk them all.
    gc.freeze()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    start: _Start = pickle.loads(pipe.recv_bytes())
    _watch(start.worker_pid)
    register_secret(start.config.credential)
    if start.conninfo is not None:  # the database password travels inside it
        password = conninfo_to_dict(start.conninfo).get("password")
        register_secret(str(password) if password is not None else None)
    try:
        configure_logging(logging.getLevelName(start.log_level).lower(), json=start.log_json)
    except HarvesterError:  # a level without a name (set by a caller, not by our settings): the default
        configure_logging("info", json=start.log_json)
    stats = CallStats()
    gate_conn: psycopg.Connection[Any] | None = None
    out = _Batches(pipe, stats)
    try:
        config = start.config
        if start.gate_key is not None and start.conninfo is not None:
            gate_conn = psycopg.connect(start.conninfo, autocommit=True, connect_timeout=10)
            if start.lock_wait_s is not None:
                bound_lock_waits(gate_conn, start.lock_wait_s)
            config = replace(config, rate_gate=PgRateGate(gate_conn, start.gate_key))
        connector = get_spec(start.connector_type).create(config, stats)
        try:
            if not start.listing:
                _answer(pipe, connector, stats, gate_conn)
                return
            log.info("%s (pid %s): listing a %s source", start.name, os.getpid(), start.connector_type)
            began = time.monotonic()
            with out:
                for emitted in connector.enumerate(start.since, start.checkpoint):
                    out.add(emitted)
            _send(pipe, ("end", None, _snapshot(stats)))
            cpu = os.times()
            log.info(
                "%s: listed %d items in %.2f s (%.2f s of CPU, %d requests)",
                start.name,
                out.items,
                time.monotonic() - began,
                cpu.user + cpu.system,
                stats.api_calls,
            )
            _answer(pipe, connector, stats, gate_conn)
        finally:
            connector.close()
    except (BrokenPipeError, EOFError):
        pass  # the run's process is gone or closed us: nobody to tell
    except Exception as exc:
        if not isinstance(exc, SourceError | HttpError):
            log.exception("source process of %s failed", start.connector_type)
        with contextlib.suppress(OSError):
            out.flush()  # the items before the failure first: the run commits them, then fails
            _send(pipe, ("error", _portable(exc, gate_conn), _snapshot(stats)))
    finally:
        if gate_conn is not None:
            gate_conn.close()
        pipe.close()


class _Batches:
    """What the child sends of the listing: items in batches of at most ``BATCH``, a batch at once at each
    checkpoint and preview, and a batch whose first item waited ``FLUSH_AFTER`` s sent by a thread of its own
    while the connector waits on the source (else its items would wait for the next request's answer)."""

    def __init__(self, pipe: Connection, stats: CallStats) -> None:
        self._pipe = pipe
        self._stats = stats
        self._lock = threading.Lock()  # one sender at a time; held while the pipe is full (back-pressure)
        self._batch: list[Emitted] = []
        self._first = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._flush_late, name="batch-flush", daemon=True)
        self.items = 0  # items (not checkpoints or previews) sent

    def __enter__(self) -> _Batches:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if exc[0] is None:
            self.flush()

    def add(self, emitted: Emitted) -> None:
        with self._lock:
            if not self._batch:
                self._first = time.monotonic()
            self._batch.append(emitted)
            if isinstance(emitted, Checkpoint | Preview):
                self._send()
            else:
                self.items += 1
                if len(self._batch) >= BATCH:
                    self._send()

    def flush(self) -> None:
        with self._lock:
            if self._batch:
                self._send()

    def _send(self) -> None:
        batch, self._batch = self._batch, []
        _send(self._pipe, ("items", batch, _snapshot(self._stats)))

    def _flush_late(self) -> None:
        while not self._stop.wait(FLUSH_AFTER / 2):
            with self._lock:
                if self._batch and time.monotonic() - self._first >= FLUSH_AFTER:
                    with contextlib.suppress(OSError):  # the run is gone: the listing's next send says so
                        self._send()


def _answer(pipe: Connection, connector: Any, stats: CallStats, gate_conn: psycopg.Connection[Any] | None) -> None:
    """Answers the run's questions after the listing until it says "close" (or goes away)."""
    while True:
        kind, value = pickle.loads(pipe.recv_bytes())
        if kind != "count":
            return
        try:
            counted = dict(connector.count_by_container(value))
        except Exception as exc:
            _send(pipe, ("error", _portable(exc, gate_conn), _snapshot(stats)))
        else:
            _send(pipe, ("counted", counted, _snapshot(stats)))


def _watch(worker_pid: int) -> None:
    """Ends this process once its worker is gone (killed, crashed): nothing else would stop a child that
    waits on a slow source. Not the kernel's parent-death signal: the child's parent is the forkserver, which
    a signal to the whole control group ends while the worker shuts down gracefully and still needs it."""

    def watch() -> None:
        while True:
            time.sleep(WATCH_EVERY)
            if not alive(worker_pid):
                os._exit(0)

    threading.Thread(target=watch, name="worker-watch", daemon=True).start()
