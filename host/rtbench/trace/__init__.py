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
from rtbench.trace.attribution import explain_breaks
from rtbench.trace.split import add_kernel_split
from rtbench.trace.tracefs import (
    EVENTS,
    FLIGHT_BUFFER_KB,
    FLIGHT_CLOCKS,
    FLIGHT_EVENTS,
    Capture,
    Recorder,
    snapshot,
)

__all__ = [
    "EVENTS",
    "Capture",
    "Recorder",
    "add_kernel_split",
    "agent_args",
    "explain_breaks",
    "finish",
    "recording",
    "snapshot",
]


@contextmanager
def recording(enabled: bool, cpu: int | None, flight: bool = False) -> Iterator[Recorder | None]:
    """A Recorder around the block when `enabled` (None otherwise); `cpu` is
    the measurement CPU (None: the agent's default, the last one), which the
    drain thread keeps off. `flight`: a flight recorder for `--break`
    (docs/soak.md): the kernel keeps the latest events, the agent stops it
    at the break, and the spike is explained instead of the per-case split."""
    if not enabled:
        yield None
        return
    if flight:
        rec = Recorder(
            avoid_cpu=cpu,
            events=FLIGHT_EVENTS,
            buffer_kb=FLIGHT_BUFFER_KB,
            clocks=FLIGHT_CLOCKS,
            drain_interval=None,
        )
    else:
        rec = Recorder(avoid_cpu=cpu)
    with rec:
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
            if rec.drain_interval is None:
                explain_breaks(run, rec.capture)
            else:
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
