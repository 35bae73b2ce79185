"""Linux kernel-trace mode (`rtbench run --trace`): kernel events recorded
through tracefs beside the agent's samples, and the in-kernel split of each
case computed from them. See docs/trace.md.

    with recording(True, cpu) as rec:
        run = collect(transport, [*agent_args(rec), *args])
    finish(run, rec)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rtbench.model import Run
from rtbench.model import Warning as RunWarning
from rtbench.trace.split import add_kernel_split
from rtbench.trace.tracefs import EVENTS, Capture, Recorder, snapshot

__all__ = [
    "EVENTS",
    "Capture",
    "Recorder",
    "add_kernel_split",
    "agent_args",
    "finish",
    "recording",
    "snapshot",
]


@contextmanager
def recording(enabled: bool, cpu: int | None) -> Iterator[Recorder | None]:
    """A Recorder around the block when `enabled` (None otherwise); `cpu` is
    the measurement CPU (None: the agent's default, the last one), which the
    drain thread keeps off."""
    if not enabled:
        yield None
        return
    with Recorder(avoid_cpu=cpu) as rec:
        yield rec


def agent_args(rec: Recorder | None) -> list[str]:
    """The agent's `--trace-marker` option, when there is a marker to write."""
    return rec.agent_args() if rec is not None else []


def finish(run: Run, rec: Recorder | None) -> None:
    """Adds what `rec` recorded to `run`, or says once why there is nothing."""
    if rec is None:
        return
    if rec.unavailable is not None:
        run.warnings.append(RunWarning("trace", f"no kernel trace: {rec.unavailable}"))
    elif rec.capture is not None:
        try:
            add_kernel_split(run, rec.capture)
        finally:
            rec.capture.close()
    if rec.restore_failures:
        run.warnings.append(
            RunWarning(
                "trace",
                "tracefs could not be fully restored: " + "; ".join(rec.restore_failures),
            )
        )
