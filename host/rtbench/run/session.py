"""One run of the agent through a transport: start it, parse its stream as
it arrives, and always end with a Run, whatever happened on the way.

Nothing already measured is lost: on Ctrl-C, a silent or crashed agent, or a
damaged stream, every intact record that arrived is assembled into the Run,
and what went wrong is one of its issues.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import BinaryIO

from rtbench.model import Run, StreamIssue
from rtbench.stream import Assembler, Record, StreamParser, UnsupportedStreamVersion, limits
from rtbench.transports import Transport, TransportError

# Before the first case begins the agent calibrates its clocks (~0.2 s);
# later the agent's own watchdog bounds each case, and this only catches a
# target that went silent altogether.
START_TIMEOUT_S = 60.0
MARGIN_S = 30.0


@dataclass
class StreamProgress:
    case: str = ""
    records: int = 0
    cases_done: int = 0


def collect(
    transport: Transport,
    args: list[str],
    on_record: Callable[[Record, StreamProgress], None] | None = None,
    raw_sink: BinaryIO | None = None,
    tee: Callable[[bytes, Record | None], None] | None = None,
    why_stopped: Callable[[], str] | None = None,
    skip: Callable[[bytes], bool] | None = None,
    armed: Callable[[], AbstractContextManager[None]] = nullcontext,
) -> Run:
    """Runs the agent through `transport` and returns what it measured;
    `raw_sink` receives the stream byte for byte (to keep or ingest later),
    `tee` each line with its record (None for noise) before it is parsed
    further; `skip` drops lines that are no part of the stream (a journal's
    own); `why_stopped` words a KeyboardInterrupt (Ctrl-C, SIGTERM), which
    only the reading of lines inside `armed()` lets in (`measure.StopSignals`)."""
    # Each record goes to the assembler as it arrives: samples flow on into
    # a spill file a chunk at a time, so memory stays bounded however long
    # the run (the journal holds the raw stream meanwhile).
    parser = StreamParser(keep=False)
    assembler = Assembler()
    progress = StreamProgress()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    failure: StreamIssue | None = None
    interrupted = False
    started_agent = False
    try:
        # Inside the try: a signal during start must still stop the agent.
        transport.start(args)
        started_agent = True
        transport.idle_timeout = START_TIMEOUT_S
        _read(
            transport, transport.lines(), parser, assembler, progress, on_record, raw_sink,
            tee, skip, armed,
        )  # fmt: skip
    except TransportError as e:
        if not started_agent:
            raise  # (the agent never ran; `finally` still cleans up)
        failure = StreamIssue("truncated", str(e))
    except UnsupportedStreamVersion as e:
        if not parser.accepted:
            raise  # nothing this host can read arrived
        # A newer format mid-run: nothing after it can be trusted to mean what
        # this host thinks, so the collection ends; every record before it is
        # kept (the run is incomplete), and the line is in the saved stream.
        failure = StreamIssue(
            "truncated", f"{e}; the collection stopped there, what arrived before is kept"
        )
    except KeyboardInterrupt:
        interrupted = True
        why = why_stopped() if why_stopped else "interrupted by the user (Ctrl-C)"
        failure = StreamIssue("truncated", f"{why}: the agent was stopped")
    finally:
        status = transport.stop()
    if interrupted:
        _read_remaining(transport, parser, assembler, progress, raw_sink, tee, skip)
    parser.finish()
    if status == 2 and not parser.accepted:
        # The agent refused its arguments before measuring anything.
        raise TransportError(transport.diagnostics() or "the agent refused its arguments")
    run = assembler.result(parser.issues, parser.log)
    cut = _cut_lines(transport)
    if cut:
        run.issues.append(
            StreamIssue(
                "damaged", f"{cut} pieces of lines longer than {limits.MAX_LINE} bytes were cut"
            )
        )
    if failure:
        run.issues.append(failure)
    if status not in (None, 0, 1, 3) and not interrupted and failure is None:
        diag = transport.diagnostics()
        run.issues.append(
            StreamIssue(
                "truncated",
                f"the agent exited with status {status}" + (f": {diag}" if diag else ""),
            )
        )
    run.started_at = started
    run.target = transport.name
    # What a target measured beside the stream (a QEMU guest's kernel timerlat).
    finish_run = getattr(transport, "finish_run", None)
    if finish_run is not None:
        finish_run(run)
    if interrupted:
        raise Interrupted(run)
    return run


def _read(
    transport: Transport,
    lines: Iterable[bytes],
    parser: StreamParser,
    assembler: Assembler,
    progress: StreamProgress,
    on_record: Callable[[Record, StreamProgress], None] | None,
    raw_sink: BinaryIO | None,
    tee: Callable[[bytes, Record | None], None] | None,
    skip: Callable[[bytes], bool] | None,
    armed: Callable[[], AbstractContextManager[None]] = nullcontext,
) -> None:
    live = getattr(transport, "live", True)
    budget = _Budget(live)
    it = iter(lines)
    while True:
        # A stop signal is let in only while waiting for the next line: one
        # landing while a line is handled waits for it to be done. Between
        # the journal's write and the assembler's taking the record, it
        # lost a case whose end the journal held (its end synced, absent
        # from the stored run: test_durability under a loaded suite).
        with armed():
            raw = next(it, None)
        if raw is None:
            break
        if skip is not None and skip(raw):
            continue
        if raw_sink is not None:
            raw_sink.write(raw + b"\n")
        try:
            rec = parser.feed(raw)
        except UnsupportedStreamVersion:
            if tee is not None:
                tee(raw, None)  # kept in the journal and the saved stream
            raise
        if tee is not None:
            tee(raw, rec)
        budget.spend(raw, rec, progress.records == 0)
        if rec is None:
            continue
        assembler.add(rec)
        progress.records += 1
        if rec.kind == "begin":
            progress.case = str(rec.body.get("case", ""))
            deadline_ms = rec.body.get("deadline_ms")
            if isinstance(deadline_ms, int) and deadline_ms > 0:
                transport.idle_timeout = deadline_ms / 1000 + MARGIN_S
        elif rec.kind == "end":
            progress.cases_done += 1
        if on_record:
            on_record(rec, progress)


def _read_remaining(
    transport: Transport,
    parser: StreamParser,
    assembler: Assembler,
    progress: StreamProgress,
    raw_sink: BinaryIO | None,
    tee: Callable[[bytes, Record | None], None] | None,
    skip: Callable[[bytes], bool] | None,
) -> None:
    """Records the agent wrote before a Ctrl-C stopped it but the host had
    not read yet (a loaded host reads behind its agent): measured, so kept.
    Only transports that read ahead have any (`remaining`)."""
    remaining = getattr(transport, "remaining", None)
    if remaining is None:
        return
    # A second Ctrl-C, or the stream itself says stop: what was read is kept.
    with suppress(KeyboardInterrupt, UnsupportedStreamVersion, TransportError):
        _read(transport, remaining(), parser, assembler, progress, None, raw_sink, tee, skip)


def _cut_lines(transport: Transport) -> int:
    cut = getattr(transport, "cut_lines", None)
    return cut[0] if isinstance(cut, list) and cut else 0


class _Budget:
    """What a stream may write that is not a record (rtbench.stream.limits):
    a live stream that exceeds it is stopped with the reason."""

    def __init__(self, live: bool) -> None:
        self.live = live
        self.lines = 0  # all lines before the hello
        self.noise_lines = 0
        self.noise_bytes = 0
        self.first: float | None = None

    def spend(self, raw: bytes, rec: Record | None, before_hello: bool) -> None:
        if before_hello and rec is None:
            self.lines += 1
            now = time.monotonic()
            self.first = self.first if self.first is not None else now
            late = self.live and now - self.first > limits.HELLO_S
            if self.lines > limits.HELLO_LINES or late:
                raise TransportError(
                    f"no `hello` record within {limits.HELLO_LINES:,} lines and "
                    f"{limits.HELLO_S:.0f} s (got {self.lines:,} lines of other text): "
                    "not an rtbench agent's stream"
                )
        elif rec is None and self.live:
            self.noise_lines += 1
            self.noise_bytes += len(raw)
            if self.noise_lines > limits.NOISE_LINES or self.noise_bytes > limits.NOISE_BYTES:
                raise TransportError(
                    f"the agent wrote {self.noise_lines:,} lines ({self.noise_bytes:,} bytes) "
                    "that are not records, over the limit: stopped it"
                )


class Interrupted(Exception):
    """Ctrl-C during a run; carries the Run with everything that arrived."""

    def __init__(self, run: Run) -> None:
        super().__init__("interrupted")
        self.run = run
