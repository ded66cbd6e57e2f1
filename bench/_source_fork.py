"""A prototype of the source in a process of its own (decision 133), for ``bench/overlap.py --source-fork``.

Measurement only, never the product's path. While :func:`forked` is active, a connector's ``enumerate``
forks this process. The child builds a connector of the same class from the same configuration, without
the run's rate gate (its connection belongs to the parent), runs the real ``enumerate`` and sends what it
emits through a pipe, pickled in batches of ``BATCH`` or up to each checkpoint; the parent yields the
items in their order. The pipe's buffer is the back-pressure: a child ahead of the run blocks on it.

What it leaves out, and a product version needs (docs/decisions.md 133): the rate gate, the child's
request statistics, the connector's answers after the listing (``count_by_container``), logging, a start
method safe in a threaded worker (this forks a process whose other threads hold locks) and a child that
dies with its parent.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import pickle
import signal
import struct
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import IO, Any, NoReturn

from connectors.base import CallStats, Checkpoint, Emitted

BATCH = 50  # items a pickle carries at most (a shared object is written once a batch)
_HEAD = struct.Struct("<I")

Enumerate = Callable[[Any, datetime | None, Mapping[str, Any] | None], Iterator[Emitted]]


@dataclasses.dataclass
class Children:
    """CPU seconds of the children reaped while :func:`forked` was active (their rusage)."""

    cpu: float = 0.0


@contextlib.contextmanager
def forked(classes: tuple[type[Any], ...]) -> Iterator[Children]:
    """Within the block, ``enumerate`` of each class runs in a forked child."""
    children = Children()
    originals: dict[type[Any], Enumerate] = {cls: cls.enumerate for cls in classes}

    def through_child(original: Enumerate) -> Enumerate:
        def enumerate(self: Any, since: datetime | None, checkpoint: Mapping[str, Any] | None) -> Iterator[Emitted]:
            return _through_child(original, self, since, checkpoint, children)

        return enumerate

    for cls, original in originals.items():
        cls.enumerate = through_child(original)
    try:
        yield children
    finally:
        for cls, original in originals.items():
            cls.enumerate = original


def _through_child(
    original: Enumerate,
    connector: Any,
    since: datetime | None,
    checkpoint: Mapping[str, Any] | None,
    children: Children,
) -> Iterator[Emitted]:
    config = dataclasses.replace(connector.config, rate_gate=None)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read)
        _child(original, write, config, type(connector), since, checkpoint)
    os.close(write)
    ended = False
    try:
        with os.fdopen(read, "rb", buffering=1 << 20) as inp:
            while True:
                kind, value = _receive(inp)
                if kind == "items":
                    yield from value
                elif kind == "error":
                    ended = True
                    raise value
                else:
                    ended = True
                    return
    finally:
        if not ended:  # the run stopped early (a failure, a lost lease): the child goes with it
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _, _, usage = os.wait4(pid, 0)
        children.cpu += usage.ru_utime + usage.ru_stime


def _child(
    original: Enumerate,
    write: int,
    config: Any,
    cls: type[Any],
    since: datetime | None,
    checkpoint: Mapping[str, Any] | None,
) -> NoReturn:
    code = 0
    try:
        # The parent's objects are not the child's to collect: a connection finalised here would close the
        # parent's socket.
        gc.freeze()
        connector = cls(config, CallStats())
        with os.fdopen(write, "wb", buffering=1 << 20) as out:
            batch: list[Emitted] = []
            try:
                for emitted in original(connector, since, checkpoint):
                    batch.append(emitted)
                    if len(batch) >= BATCH or isinstance(emitted, Checkpoint):
                        _send(out, ("items", batch))
                        batch = []
                _send(out, ("items", batch))
                _send(out, ("end", None))
            except Exception as exc:  # the parent raises it at its place, after the items before it
                _send(out, ("items", batch))
                _send(out, ("error", exc))
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _send(out: IO[bytes], message: tuple[str, Any]) -> None:
    data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    out.write(_HEAD.pack(len(data)))
    out.write(data)
    out.flush()


def _receive(inp: IO[bytes]) -> tuple[str, Any]:
    head = inp.read(_HEAD.size)
    if len(head) < _HEAD.size:
        raise RuntimeError("the source's child process ended without its end mark")
    (size,) = _HEAD.unpack(head)
    message: tuple[str, Any] = pickle.loads(inp.read(size))
    return message
