"""Live progress in the CLI: N of M, rate and ETA (rich)."""

from __future__ import annotations

from types import TracebackType

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from app.pipeline.run import Progress as RunProgress


class RunProgressBar:
    def __init__(self, label: str) -> None:
        self.label = label
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]:>10}"),
            TextColumn("errors {task.fields[errors]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
        )
        self.task: TaskID | None = None

    def __enter__(self) -> RunProgressBar:
        self.progress.start()
        self.task = self.progress.add_task(self.label, total=None, rate="", errors=0)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.progress.stop()

    def update(self, p: RunProgress) -> None:
        import time

        assert self.task is not None
        elapsed = max(time.monotonic() - p.started, 1e-6)
        self.progress.update(
            self.task, completed=p.done, total=p.total, rate=f"{p.done / elapsed:,.0f}/s", errors=p.errors
        )
