"""The one measuring path: every command that runs the agent (`run`, `ab`,
`campaign`) or reads a stream (`ingest`) goes through here.

    with StopSignals(say) as stop:
        measured = measure(target.transport(exe), Plan(args, ...), stop)
    saved = store_run(measured, say)

`measure` probes the host (when the target is this machine), records the
kernel trace when asked, collects the stream through any `Transport`, and
journals every line as it arrives (`rtbench.run.journal`); `store_run` stores the
run, retrying a busy store, and when the store cannot take it keeps the
stream in a named file that `rtbench ingest` stores later.

Signals: SIGINT, SIGTERM and SIGHUP end a measurement alike: the agent is
stopped, what arrived is stored, and the command exits 128 + the signal
(130, 143, 129). Signals after the first never interrupt the shutdown.
"""

from __future__ import annotations

import hashlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, Protocol

from rtbench import identity
from rtbench.analysis import stalls
from rtbench.io.atomic import AtomicSink
from rtbench.machine import probe
from rtbench.model import Run
from rtbench.run.journal import Journal, is_journal_line, parse_header
from rtbench.run.request import AgentRequest
from rtbench.run.session import Interrupted, StreamProgress, collect
from rtbench.store import (
    AlreadyStored,
    Store,
    StoreBusy,
    StoreError,
    StoreLocation,
    busy_timeout,
)
from rtbench.stream import Record, UnsupportedStreamVersion
from rtbench.transports import ReplayTransport, Transport

Say = Callable[[str], None]
OnRecord = Callable[[Record, StreamProgress], None]

# A busy store (another writer) is tried this many times, waiting the busy
# timeout (RTBENCH_DB_TIMEOUT) each time and backing off in between.
SAVE_ATTEMPTS = 3

_WHY: dict[int, str] = {
    signal.SIGINT: "interrupted by the user (Ctrl-C)",
    signal.SIGTERM: "stopped by SIGTERM",
    signal.SIGHUP: "stopped by SIGHUP (the terminal went away)",
}


def _quiet(message: str) -> None:
    del message


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP as one way to stop a measurement.

    The first signal interrupts the collection of a stream (KeyboardInterrupt
    inside `armed()`); outside it, and for every later signal, it is only
    noted, so stopping the agent and storing the run are never cut short.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, say: Say = _quiet) -> None:
        self.received: int | None = None
        self._say = say
        self._armed = False
        self._old: dict[int, Any] = {}
        self._exiting = False

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self._exiting:
            for sig, old in self._old.items():
                signal.signal(sig, old)
        self._old.clear()

    def exiting(self) -> None:
        """The command is done and about to exit: a signal from now on is
        ignored (neither an "Aborted!" nor another exit code)."""
        if self._old:
            self._exiting = True
            for sig in self.SIGNALS:
                signal.signal(sig, signal.SIG_IGN)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        del frame
        if self.received is None:
            self.received = signum
            if self._armed:
                self._armed = False
                raise KeyboardInterrupt
            self._say(f"{signal.Signals(signum).name}: stopping once what was measured is stored")
        else:
            self._say("already stopping: storing what was measured, this ends by itself")

    @contextmanager
    def armed(self) -> Iterator[None]:
        """The block (reading the stream) may be interrupted by the first signal."""
        if self.received is not None:
            raise KeyboardInterrupt
        self._armed = True
        try:
            yield
        finally:
            self._armed = False

    def why(self) -> str:
        return _WHY.get(self.received or signal.SIGINT, "stopped by a signal")

    @property
    def exit_code(self) -> int | None:
        return None if self.received is None else 128 + self.received


@dataclass
class Plan:
    """What to measure and how to label it; `target` and `target_meta` come
    from the target (`rtbench.targets`), `store_path` (the store: an SQLite
    file or a PostgreSQL database) None means no journal (the run is not to
    be stored)."""

    args: list[str]
    labels: dict[str, str] = field(default_factory=dict)
    source: str = "run"
    target: str | None = None  # the stored target name (default: the transport's)
    target_meta: dict[str, Any] = field(default_factory=dict)
    is_local: bool = True  # the agent runs on this machine: probe it, trace it
    trace: bool = False
    trace_cpu: int | None = None
    trace_flight: bool = False  # --break: a flight recorder, the spike explained
    save_stream: Path | None = None
    store_path: Path | StoreLocation | None = None


class TargetLike(Protocol):
    """What a plan needs of a target (`rtbench.targets.Target`)."""

    name: str
    emulated: bool
    is_local: bool

    def metadata(self) -> dict[str, Any]: ...


def plan_for(target: TargetLike, request: AgentRequest | list[str], **options: Any) -> Plan:
    """The plan of a run on `target`: the agent's arguments for `request`
    (arguments given as text are sent as they are) within what the target
    holds (a board's `most_samples`), its name, its metadata (stored as the
    run's `machine.target`, with `emulated`), and whether this host's probe
    and kernel trace apply (only when the agent runs here)."""
    if not isinstance(request, AgentRequest):
        request = AgentRequest(extra=list(request))
    args = request.within(getattr(target, "most_samples", None)).argv()
    meta = {**target.metadata(), "emulated": bool(target.emulated)}
    return Plan(args, target=target.name, target_meta=meta, is_local=target.is_local, **options)


@dataclass
class Measured:
    run: Run
    journal: Journal | None = None
    stream_error: str | None = None  # --save-stream could not be written
    store_path: Path | StoreLocation | None = None


@dataclass
class Saved:
    run_id: int | None = None
    error: str | None = None  # why the store refused the run
    kept: Path | None = None  # where its stream is, when it was not stored
    already: bool = False  # the store held this run (its identity): nothing stored


def measure(
    transport: Transport,
    plan: Plan,
    stop: StopSignals | None = None,
    on_record: OnRecord | None = None,
    say: Say = _quiet,
) -> Measured:
    """Runs the agent through `transport` and returns the run with its
    metadata; TransportError/StreamError when nothing could be measured."""
    # Imported here: only `--trace` needs the kernel-trace package.
    from rtbench import trace as kernel_trace

    # A transport that reaches the target's files (SSH) probes it there.
    remote_probe = getattr(transport, "probe_machine", None)
    machine: dict[str, Any] = {}
    if plan.is_local:
        machine = probe.probe_machine()
    elif callable(remote_probe):
        machine = dict(remote_probe())
    if plan.target_meta:
        machine["target"] = plan.target_meta
    target = plan.target or transport.name
    started = datetime.now(UTC).isoformat(timespec="seconds")
    run_id = identity.new()
    header = {
        "run": run_id,
        "started_at": started,
        "target": target,
        "source": plan.source,
        "labels": plan.labels,
        "machine": machine,
        "args": plan.args,
    }
    sink = AtomicSink(plan.save_stream) if plan.save_stream else None
    journal = Journal.create(plan.store_path, header, say) if plan.store_path else None

    def tee(raw: bytes, rec: Record | None) -> None:
        if journal is not None:
            # Durable at each case's end: a power cut keeps every finished case.
            journal.write(raw, sync=rec is not None and rec.kind in ("end", "bye"))
        if sink is not None:
            sink.write(raw + b"\n")

    armed: Callable[[], AbstractContextManager[None]] = stop.armed if stop else nullcontext
    rec = None
    try:
        with kernel_trace.recording(
            plan.trace and plan.is_local, plan.trace_cpu, plan.trace_flight
        ) as rec:
            # The agent echoes the identity in its hello: a saved stream of
            # this run is the same run when it is ingested.
            marker = rec.marker if rec is not None else None
            ours = AgentRequest(trace_marker=None if marker is None else str(marker), run_id=run_id)
            args = [*ours.argv(), *plan.args]
            try:
                run = collect(
                    transport,
                    args,
                    on_record,
                    tee=tee,
                    why_stopped=stop.why if stop else None,
                    armed=armed,
                )
            except Interrupted as e:
                run = e.run
    except UnsupportedStreamVersion:
        # Nothing this host reads, but a newer one may: the saved stream stays.
        if sink is not None:
            sink.commit()
        if journal is not None:
            journal.discard()
        raise
    except BaseException:
        if sink is not None:
            sink.discard()
        if journal is not None:
            journal.discard()  # nothing measured (the agent refused, the stream unreadable)
        raise
    if sink is not None:
        sink.commit()
    run.started_at, run.target, run.source = started, target, plan.source
    # What the transport read on the target during the run (a QEMU guest's
    # probe) stays; the host's own items come on top.
    run.machine, run.labels = {**run.machine, **machine}, dict(plan.labels)
    run.uuid = run_id
    if rec is None:  # with a trace, the trace split says more (trace/split.py)
        for case in run.cases:
            stalls.explain(case, machine)
    if rec is not None:
        kernel_trace.finish(run, rec)
    if journal is not None and journal.error:
        say(f"journal: {journal.error}")
    return Measured(run, journal, sink.error if sink else None, plan.store_path)


def check_args(transport: Transport, args: list[str]) -> str | None:
    """The agent's own check of `args` (--dry-run) on the target: None when
    it accepts them, else what it said."""
    transport.start(["--dry-run", *args])
    try:
        for _ in transport.lines():
            pass
    finally:
        status = transport.stop()
    if status in (0, None):
        return None
    return transport.diagnostics().strip() or f"the agent refused its arguments ({status})"


def read_stream(path: Path) -> Run:
    """A saved stream, a captured console or a journal as a run; a journal's
    header gives back the run's identity, labels, target, host probe and
    start time; a stream whose hello carries no identity gets the digest of
    its records (the same stream is always the same run). The file is read
    once (it may be a pipe); Ctrl-C raises Interrupted with what was read."""
    first: list[bytes] = []
    digest = hashlib.sha256()

    def skip(raw: bytes) -> bool:
        if not first:
            first.append(raw)
        return is_journal_line(raw)

    def tee(raw: bytes, rec: Record | None) -> None:
        if rec is not None:  # the record itself, not the console around it
            digest.update(raw[raw.find(b"@rtb ") :] + b"\n")

    try:
        run = collect(ReplayTransport(path), [], skip=skip, tee=tee)
    except Interrupted as e:  # the caller decides whether to keep it
        _from_header(e.run, path, first, digest.digest())
        raise
    _from_header(run, path, first, digest.digest())
    return run


def _from_header(run: Run, path: Path, first: list[bytes], digest: bytes) -> None:
    header = parse_header(first[0]) if first else {}
    if header:
        run.started_at = str(header.get("started_at") or run.started_at)
        run.target = str(header.get("target") or run.target)
        run.source = f"{header.get('source') or 'run'} (from {path.name})"
        labels, machine = header.get("labels"), header.get("machine")
        run.labels = {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}
        run.machine = machine if isinstance(machine, dict) else {}
    else:
        run.source = f"ingest {path.name}"
    run.uuid = (
        identity.parse(header.get("run"))
        or identity.parse(run.hello.get("run"))
        or identity.of_content(digest)
    )


def store_run(
    measured: Measured,
    say: Say = _quiet,
    store_path: Path | StoreLocation | None = None,
    copy: bool = False,
) -> Saved:
    """Stores the run; a busy store is retried with backoff. A run the store
    holds already (its identity) is not stored again (`Saved.already`);
    `copy` stores it anyway under a new identity. When the store cannot
    take it, the journal is kept as a named stream file instead."""
    path = store_path or measured.store_path
    journal = measured.journal
    if journal is not None:
        journal.mark_saving()
    error = ""
    for attempt in range(SAVE_ATTEMPTS):
        try:
            with Store(path) as store:
                store.save(measured.run, copy=copy)
        except AlreadyStored as e:
            measured.run.id = e.run_id
            if journal is not None:
                journal.discard()
            return Saved(e.run_id, already=True)
        except StoreError as e:
            error = str(e)
            if isinstance(e, StoreBusy) and attempt + 1 < SAVE_ATTEMPTS:
                wait = store_timeout() * 2**attempt
                say(f"the store is busy or out of reach ({e}): trying again in {wait:g} s")
                time.sleep(wait)
                continue
            break
        except Exception as e:  # a value the store cannot take must not lose the run
            error = f"{type(e).__name__}: {e}"
            break
        if journal is not None:
            journal.discard()
        return Saved(measured.run.id)
    kept = journal.keep() if journal is not None else None
    return Saved(None, error, kept)


def store_timeout() -> float:
    """Seconds before the first retry of a busy store ($RTBENCH_DB_TIMEOUT)."""
    return busy_timeout()
