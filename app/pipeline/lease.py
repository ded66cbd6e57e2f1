"""The fenced lease a worker holds on a running run (issue 11 §1).

Every claim of a run (ClaimRun) is a new generation: ``sync_runs.deliveries`` after the claim. The
holder names ``(run id, generation, worker id)`` in every write it makes:

- :meth:`RunLease.hold` is the FIRST statement of every unit of work (a page, the resolution, the
  finish). It locks the run row if the lease is still this holder's and raises :class:`LeaseLost`
  otherwise, so the unit rolls back before it wrote anything. A takeover (ClaimRun is an UPDATE of the
  same row) waits for a unit in flight and every later unit of the old holder sees it and stops: a
  paused worker that wakes up never counts, deletes or clears anything of the new holder's run.
- :class:`Heartbeat` beats the lease from a thread with its own connection every few seconds while the
  run executes, so a slow page (embedding, an HTTP call with retries) does not look like a dead worker.
  A paused or killed process stops beating with everything else; that is what a takeover detects.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import psycopg

from app.queries import runs as rq

log = logging.getLogger(__name__)

ConnectionFactory = Callable[[], psycopg.Connection[Any]]


class LeaseLost(Exception):
    """The run was taken over, cancelled or finished by someone else: this holder must stop writing."""


@dataclass(frozen=True, slots=True)
class RunLease:
    run_id: int
    generation: int  # sync_runs.deliveries as set by this holder's claim
    worker_id: str  # hostname:pid:uuid, unique per execution

    def hold(self, conn: psycopg.Connection[Any]) -> None:
        """Lock the run row for the open transaction, or raise :class:`LeaseLost` (the unit rolls back)."""
        if not conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS:
            raise RuntimeError("RunLease.hold must open a unit of work (inside conn.transaction())")
        held = rq.hold_run_lease(conn, id=self.run_id, generation=self.generation, worker_id=self.worker_id)
        if held is None:
            raise LeaseLost(f"run {self.run_id}: lease generation {self.generation} is no longer held")

    def beat(self, conn: psycopg.Connection[Any]) -> bool:
        """One heartbeat (its own statement); False when the lease is lost."""
        return rq.heartbeat(conn, id=self.run_id, generation=self.generation, worker_id=self.worker_id) > 0

    def release(self, conn: psycopg.Connection[Any]) -> bool:
        """Give the lease up (the run stays running, claimable at once); False when it was not held."""
        return rq.release_run_lease(conn, id=self.run_id, generation=self.generation, worker_id=self.worker_id) > 0


def beat_interval(stale_run_after: int) -> float:
    """A few beats per stale period, so one late beat never makes a live holder look dead."""
    return max(0.2, min(10.0, stale_run_after / 4))


class Heartbeat:
    """Beats ``lease`` every ``interval`` seconds from a daemon thread on its own connection.

    A lost database connection is re-opened at the next beat (the run's own connection may be broken too;
    the run notices by itself). :attr:`lost` is set once a beat matched no row: the lease is gone.
    """

    def __init__(self, lease: RunLease, connect: ConnectionFactory, interval: float) -> None:
        self.lease = lease
        self.interval = interval
        self._connect = connect
        self._stop = threading.Event()
        self.lost = threading.Event()
        self._on_lost: list[Callable[[], None]] = []
        self._on_lost_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"lease-heartbeat-{lease.run_id}", daemon=True)
        self._conn: psycopg.Connection[Any] | None = None

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def when_lost(self, act: Callable[[], None]) -> None:
        """Call ``act`` from the heartbeat's thread as soon as a beat finds the lease gone (at once if one
        already has): what sleeps on the run's behalf (its rate gate, decision 158) stops then, not when the
        run's own thread next looks."""
        with self._on_lost_lock:
            if not self.lost.is_set():
                self._on_lost.append(act)
                return
        act()

    def _lose(self) -> None:
        with self._on_lost_lock:
            self.lost.set()
            acts, self._on_lost = self._on_lost, []
        for act in acts:
            try:
                act()
            except Exception:  # one failing must not keep the others from stopping
                log.exception("run %s: stopping after the lease was lost failed", self.lease.run_id)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                if not self._beat_once():
                    self._lose()
                    return
        finally:
            if self._conn is not None:
                self._conn.close()

    def _beat_once(self) -> bool:
        try:
            if self._conn is None or self._conn.closed:
                self._conn = self._connect()
            return self.lease.beat(self._conn)
        except Exception as exc:  # a beat that cannot reach the database is retried, never fatal to the run
            log.warning("run %s: heartbeat failed (%s); retrying", self.lease.run_id, type(exc).__name__)
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            return True
