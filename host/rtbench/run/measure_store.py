"""Measure and store one run: the path `run`, `ab` and `campaign` share.

    taken = measure_and_store(transport, plan_for(target, request), stop, say=say)
    taken.code     # its exit status (rtbench.outcomes)
    taken.problem  # why it is an error of rtbench's, if it is one

Each command shows the run its own way; what happened to it (measured or
not, stored or kept as a stream to ingest) and what that means for the
exit status are decided here once.
"""

from __future__ import annotations

from dataclasses import dataclass

from rtbench.outcomes import exit_code
from rtbench.run.measure import (
    Measured,
    OnRecord,
    Plan,
    Saved,
    Say,
    StopSignals,
    measure,
    store_run,
)
from rtbench.stream import StreamError
from rtbench.transports import Transport, TransportError


def _quiet(message: str) -> None:
    del message


@dataclass
class Taken:
    measured: Measured | None  # None: nothing could be measured (`unmeasured` says why)
    saved: Saved | None = None  # None: not stored (not asked to, or nothing measured)
    unmeasured: str | None = None

    @property
    def outcome(self) -> str:
        """The run's outcome; `error` when rtbench could not measure or store it."""
        if self.measured is None or (self.saved is not None and self.saved.error is not None):
            return "error"
        return self.measured.run.outcome

    @property
    def code(self) -> int:
        """The exit status (docs/outcomes.md): the outcome's, and 2 when the
        stream could not be saved where asked (--save-stream)."""
        if self.measured is not None and self.measured.stream_error:
            return 2
        return exit_code(self.outcome)

    @property
    def problem(self) -> str | None:
        """What went wrong on rtbench's side, for a person; None if nothing."""
        if self.unmeasured is not None:
            return f"could not measure: {self.unmeasured}"
        if self.saved is not None and self.saved.error is not None:
            kept = (
                f"its stream is kept in {self.saved.kept}: `rtbench ingest {self.saved.kept}` "
                "stores it"
                if self.saved.kept is not None
                else "no journal of it could be kept"
            )
            return f"could not be stored ({self.saved.error}); {kept}"
        return None


def measure_and_store(
    transport: Transport,
    plan: Plan,
    stop: StopSignals | None = None,
    on_record: OnRecord | None = None,
    say: Say = _quiet,
    store: bool = True,
    copy: bool = False,
) -> Taken:
    """Runs the agent and stores its run (unless `store` is False; `copy`:
    a run the store holds already is stored again as a copy). Never raises
    for a target out of reach or a broken stream: `Taken.unmeasured` says it."""
    try:
        measured = measure(transport, plan, stop, on_record, say)
    except (TransportError, StreamError, OSError) as e:
        return Taken(None, unmeasured=str(e))
    return store_measured(measured, say, store, copy)


def store_measured(
    measured: Measured, say: Say = _quiet, store: bool = True, copy: bool = False
) -> Taken:
    """Stores a run measured or read from a stream (`rtbench ingest`)."""
    return Taken(measured, store_run(measured, say, copy=copy) if store else None)
