"""Recording kernel events through tracefs, and putting tracefs back as it was.

`Recorder` is a context manager. On entry it mounts tracefs if it has to,
makes a private trace instance (`instances/rtbench-<pid>`: its own ring
buffer, event switches, clock and marker, so it neither disturbs nor sees a
trace someone else runs at the top level), sets the clock, the buffer size
and the events, and starts a thread that drains the per-CPU binary buffers
into spool files while the agent runs (so a long run does not overwrite its
own beginning). On exit, whatever ended the block (normal end, an exception,
Ctrl-C, SIGTERM, an agent that crashed), it stops tracing, reads what is
left, and undoes every change in reverse order.

Restoring follows rtla: every file written keeps its original value beside
it in a journal (`TraceJournal`), and the journal is played back at the end. The
mount and the instance are journal entries too. A second Ctrl-C while the
journal plays back is held until it has finished.

When tracing cannot be had (no tracefs in this kernel, not root, a refused
write), `Recorder.unavailable` says why and the run goes on without it.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, BinaryIO, Literal

from rtbench.trace.formats import (
    EventFormat,
    check_header_event,
    parse_format,
    parse_header_page,
)
from rtbench.trace.ringbuf import Damage, Event, RingBufferError, Spec, merge, read_pages

TRACEFS = Path("/sys/kernel/tracing")

# The events of the in-kernel split (catalogue, IRQ), and sched_process_fork,
# which tells which tasks are the agent's threads (the agent is the task that
# writes the markers; its threads are the tasks it and they create).
EVENTS: tuple[str, ...] = (
    "irq:irq_handler_entry",
    "irq:irq_handler_exit",
    "irq_vectors:local_timer_entry",
    "irq_vectors:local_timer_exit",
    "sched:sched_waking",
    "sched:sched_switch",
    "sched:sched_process_fork",
    # NOISE-OS's gaps are named from them too (rtbench/trace/noise.py).
    "irq:softirq_entry",
    "irq:softirq_exit",
)
# The flight recorder (`--break`): the same, for the spike's attribution.
FLIGHT_EVENTS: tuple[str, ...] = EVENTS
# The flight recorder's clock: `mono` first, the clock of the agent's
# schedule (rtb_clock_now, CLOCK_MONOTONIC), so that the planned release
# the break marker gives (`since`) is exact in trace time; against mono_raw
# an NTP-slewed clock would be off by up to 500 ppm.
FLIGHT_CLOCKS: tuple[str, ...] = ("mono", "mono_raw", "global", "local")
# Per CPU for the flight recorder: the last second or so of a busy CPU, all
# decoded after the run (about 10 µs an event in Python).
FLIGHT_BUFFER_KB = 4096
# The agent's marker lines arrive as this event; it is always recorded.
MARKER_EVENT = "ftrace:print"

# Trace clocks whose ring-buffer values are nanoseconds (the kernel's
# trace_clocks[] table, in_ns = 1), best first. mono_raw is the agent's own
# clock (CLOCK_MONOTONIC_RAW), so kernel and agent times share a time base;
# mono and global are monotonic across CPUs too; local is per CPU only, which
# makes cross-CPU wake-up latencies approximate.
NS_CLOCKS: tuple[str, ...] = ("mono_raw", "mono", "global", "local")

# Per CPU. A busy case writes ~10 MB/s of sched events on this kind of
# machine; the drain thread empties the buffer every DRAIN_INTERVAL_S, so
# this holds several intervals with room to spare.
BUFFER_KB = 16384
DRAIN_INTERVAL_S = 0.05
INSTANCE_PREFIX = "rtbench-"


# Top-level settings are the machine's, shared by every tracer: two
# recordings changing them at once would each restore the other's values.
# A top-level recording holds this lock exclusively; whoever needs the top
# level to stay still (a test comparing before and after) holds it shared.
TOPLEVEL_LOCK = (
    Path("/run/lock") if Path("/run/lock").is_dir() else Path(tempfile.gettempdir())
) / "rtbench-trace.lock"


class TraceError(Exception):
    """Tracing is not possible here; the message is the reason, for the user."""


@contextlib.contextmanager
def toplevel_lock(shared: bool = True) -> Iterator[None]:
    """Holds TOPLEVEL_LOCK (waiting for it) while the block runs."""
    import fcntl

    with open(TOPLEVEL_LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _lock_toplevel(journal: TraceJournal) -> None:
    import fcntl

    f = open(TOPLEVEL_LOCK, "a")  # noqa: SIM115 (held until the journal plays back)
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        raise TraceError(
            "another recording is using the top level of tracefs (it holds "
            f"{TOPLEVEL_LOCK}); try again when it has finished"
        ) from None
    journal.did(f"lock {TOPLEVEL_LOCK}", f.close)  # closing releases the lock


# --- the journal of changes ---------------------------------------------------


@dataclass
class _Entry:
    what: str
    undo: Callable[[], None]


def read_setting(path: Path) -> str:
    return path.read_text().strip()


def _selected(text: str) -> str:
    """'[local] global counter' -> 'local' (tracefs marks the current choice)."""
    m = re.search(r"\[([^\]]+)\]", text)
    return m.group(1) if m else text.strip()


def _write(path: Path, value: str) -> None:
    # One write() of the whole value: tracefs files act on each write call.
    with path.open("w") as f:
        f.write(value)


def restorable_value(path: Path, current: str) -> str:
    """The value to write back so that `path` means what `current` meant."""
    if path.name == "trace_clock" or path.name == "current_tracer":
        return _selected(current)
    if path.name == "buffer_size_kb":
        # "7 (expanded: 1408)": the buffer is still at its boot minimum and
        # grows to 1408 KB when first used. Enabling any event grows it for
        # good, so the faithful value to restore is the expanded one.
        m = re.search(r"expanded:\s*(\d+)", current)
        return m.group(1) if m else current.split()[0]
    if path.name == "enable":
        return current.rstrip("*")  # '1*': soft-enabled by a trigger
    return current


class TraceJournal:
    """Changes made to the system, each with what undoes it, played back in
    reverse order. A file's original value is the one read before its first
    write; later writes to the same file keep it."""

    def __init__(self) -> None:
        self.entries: list[_Entry] = []
        self._originals: dict[Path, str] = {}

    def set(self, path: Path, value: str) -> None:
        if path not in self._originals:
            original = restorable_value(path, read_setting(path))
            self._originals[path] = original
            # Registered before the write: a write that half happened is undone too.
            self.entries.append(_Entry(f"{path} = {original}", lambda: _write(path, original)))
        _write(path, value)

    def did(self, what: str, undo: Callable[[], None]) -> None:
        self.entries.append(_Entry(what, undo))

    def original(self, path: Path) -> str | None:
        return self._originals.get(path)

    def playback(self) -> list[str]:
        """Undoes everything, newest first; one failure does not stop the
        rest. Returns what could not be undone."""
        failed: list[str] = []
        while self.entries:
            entry = self.entries.pop()
            try:
                entry.undo()
            except OSError as e:
                failed.append(f"{entry.what}: {e.strerror or e}")
        self._originals.clear()
        return failed


# --- mounting ------------------------------------------------------------------


def _libc() -> Any:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def mount_tracefs(where: Path) -> None:
    rc = _libc().mount(b"nodev", os.fsencode(where), b"tracefs", 0, None)
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(where))


def umount(where: Path) -> None:
    libc = _libc()
    for _ in range(50):
        if libc.umount2(os.fsencode(where), 0) == 0:
            return
        err = ctypes.get_errno()
        if err != 16:  # EBUSY: a file inside was still being closed
            raise OSError(err, os.strerror(err), str(where))
        time.sleep(0.02)
    raise OSError(16, os.strerror(16), str(where))


def is_mounted(where: Path) -> bool:
    try:
        mounts = Path("/proc/self/mounts").read_text()
    except OSError:
        return False
    return any(
        len(f) >= 3 and f[1] == str(where) and f[2] == "tracefs"
        for f in (line.split() for line in mounts.splitlines())
    )


def kernel_has_tracefs() -> bool:
    try:
        return any(line.split()[-1] == "tracefs" for line in open("/proc/filesystems"))
    except OSError:
        return False


# --- what was recorded ---------------------------------------------------------


@dataclass
class Capture:
    """One recording: the raw pages of each CPU and the kernel's descriptions
    needed to decode them. Can be saved to a directory and loaded again (the
    tests' recorded fixture is such a directory)."""

    clock: str
    cpus: list[int]
    events: list[str]  # enabled
    missing: list[str]  # asked for, absent from this kernel
    header_page: str
    header_event: str
    formats: dict[str, str]  # "system:event" -> its format file
    files: dict[int, Path]  # cpu -> raw pages, back to back
    page_size: int
    source: str  # "instance rtbench-123" or "top level"
    byteorder: Literal["little", "big"] = "little" if sys.byteorder == "little" else "big"
    overrun: dict[int, int] = field(default_factory=dict)  # per_cpu stats: events lost
    notes: list[str] = field(default_factory=list)
    # cpu -> byte ranges of its file lost on the way from a target (zeros
    # in their place): the pages holding them are cut there.
    lost: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    # Pages cut at damage by the last decoding (events_in_order): not saved,
    # found again from the pages by each decoding.
    damage: list[Damage] = field(default_factory=list)
    _pages: int = 0  # pages the last decoding read
    _tmp: tempfile.TemporaryDirectory[str] | None = None

    def spec(self, fields: Mapping[str, frozenset[str]] | None = None) -> Spec:
        """The decoder for this capture; `fields`: decode only these events
        ("system:event") and of each only these fields (None: everything)."""
        check_header_event(self.header_event)
        layout = parse_header_page(self.header_page)
        formats: dict[int, EventFormat] = {}
        for name, text in self.formats.items():
            if fields is None or name in fields:
                fmt = parse_format(text, name.split(":", 1)[0])
                formats[fmt.id] = fmt
        return Spec(layout, formats, self.byteorder, self.page_size, dict(fields or {}))

    def cpu_events(self, cpu: int, spec: Spec) -> Iterator[Event]:
        """A CPU's events; a damaged page is cut at the damage (`damage`)."""
        cuts: dict[int, int] = {}  # page -> where in it the first lost byte is
        for a, b in self.lost.get(cpu, []):
            for n in range(a // spec.chunk, (b - 1) // spec.chunk + 1):
                cuts[n] = min(cuts.get(n, spec.chunk), max(a - n * spec.chunk, 0))
        pages = self._read_pages(cpu, spec.chunk)
        yield from read_pages(pages, cpu, spec, self.damage, cuts)

    def _read_pages(self, cpu: int, chunk: int) -> Iterator[bytes]:
        with self.files[cpu].open("rb") as f:
            while page := f.read(chunk):
                if len(page) < chunk:
                    break  # a torn tail (a capture cut short): nothing whole in it
                self._pages += 1
                yield page

    def events_in_order(self, fields: Mapping[str, frozenset[str]] | None = None) -> list[Event]:
        """Every CPU's events merged in time order. A damaged page costs
        only its events after the damage (`damage` says where); the trace
        is unreadable (RingBufferError) only when no page is whole."""
        spec = self.spec(fields)
        self.damage, self._pages = [], 0
        events = merge(self.cpu_events(cpu, spec) for cpu in self.cpus if cpu in self.files)
        if self.damage and len(self.damage) == self._pages:
            raise RingBufferError(f"no page is whole; the first damage: {self.damage[0]}")
        return events

    def damage_warning(self) -> str | None:
        """What the last decoding had to cut, for the run's warnings."""
        if not self.damage:
            return None
        more = len(self.damage) - 1
        return (
            f"the kernel trace was damaged at {self.damage[0]}"
            + (
                f" and on {more} more page(s): " + ", ".join(map(str, self.damage[1:6]))
                if more
                else ""
            )
            + (" ..." if more > 5 else "")
            + ": each damaged page was cut there, the events after the damage in it are lost "
            "and left out, the events before it are kept (a page copied while a writer was "
            "still at work, or damaged on its way)"
        )

    @property
    def bytes_recorded(self) -> int:
        return sum(p.stat().st_size for p in self.files.values() if p.exists())

    def save(self, directory: Path) -> None:
        import json

        directory.mkdir(parents=True, exist_ok=True)
        (directory / "header_page").write_text(self.header_page)
        (directory / "header_event").write_text(self.header_event)
        fdir = directory / "formats"
        fdir.mkdir(exist_ok=True)
        for name, text in self.formats.items():
            (fdir / name.replace(":", "__")).write_text(text)
        for cpu, path in self.files.items():
            shutil.copyfile(path, directory / f"cpu{cpu}.raw")
        meta = {
            "clock": self.clock,
            "cpus": self.cpus,
            "events": self.events,
            "missing": self.missing,
            "page_size": self.page_size,
            "source": self.source,
            "byteorder": self.byteorder,
            "overrun": {str(k): v for k, v in self.overrun.items()},
            "notes": self.notes,
            "lost": {str(k): v for k, v in self.lost.items()},
        }
        (directory / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")

    @classmethod
    def load(cls, directory: Path) -> Capture:
        import json

        meta = json.loads((directory / "meta.json").read_text())
        formats = {
            p.name.replace("__", ":"): p.read_text()
            for p in sorted((directory / "formats").iterdir())
        }
        cpus = [int(c) for c in meta["cpus"]]
        return cls(
            clock=meta["clock"],
            cpus=cpus,
            events=list(meta["events"]),
            missing=list(meta["missing"]),
            header_page=(directory / "header_page").read_text(),
            header_event=(directory / "header_event").read_text(),
            formats=formats,
            files={
                c: directory / f"cpu{c}.raw" for c in cpus if (directory / f"cpu{c}.raw").exists()
            },
            page_size=int(meta["page_size"]),
            source=meta["source"],
            byteorder="big" if meta.get("byteorder") == "big" else "little",
            overrun={int(k): int(v) for k, v in meta.get("overrun", {}).items()},
            notes=list(meta.get("notes", [])),
            lost={
                int(k): [(int(a), int(b)) for a, b in v] for k, v in meta.get("lost", {}).items()
            },
        )

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


# --- the drain thread ------------------------------------------------------------


class _Drainer:
    """Empties each CPU's trace_pipe_raw into a spool file, every interval,
    from a thread kept off the measurement CPU when it can be."""

    def __init__(self, fds: dict[int, int], spools: dict[int, BinaryIO], chunk: int) -> None:
        self.fds, self.spools, self.chunk = fds, spools, chunk
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, interval: float, avoid_cpu: int | None) -> None:
        def loop() -> None:
            with contextlib.suppress(OSError, AttributeError, ValueError):
                allowed = os.sched_getaffinity(0)
                # None: the agent's default measurement CPU, the last one.
                avoid = max(allowed) if avoid_cpu is None else avoid_cpu
                others = allowed - {avoid}
                if others:
                    os.sched_setaffinity(0, others)  # this thread only (Linux)
            try:
                while not self._stop.wait(interval):
                    self.drain()
            except BaseException as e:  # reported by the recorder, not lost in a thread
                self.error = e

        self._thread = threading.Thread(target=loop, name="rtbench-trace-drain", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def drain(self) -> None:
        for cpu, fd in self.fds.items():
            while True:
                try:
                    page = os.read(fd, self.chunk)
                except BlockingIOError:
                    break
                if not page:
                    break
                # A read returns one whole page; pad a short one so pages stay
                # aligned in the spool (the header's commit says what is valid).
                self.spools[cpu].write(page.ljust(self.chunk, b"\0"))


# --- the recorder -------------------------------------------------------------------


def _online_cpus() -> list[int]:
    try:
        text = Path("/sys/devices/system/cpu/online").read_text().strip()
    except OSError:
        return list(range(os.cpu_count() or 1))
    cpus: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Recorder:
    """`with Recorder() as rec:` records kernel events while the block runs;
    afterwards `rec.capture` holds them (or `rec.unavailable` says why not),
    and tracefs is as it was before.

    `instance=False` records in the top-level buffer instead (the fallback
    for a kernel without instances); every top-level setting changed is
    journaled and restored the same way.
    """

    def __init__(
        self,
        root: Path = TRACEFS,
        *,
        instance: bool = True,
        events: tuple[str, ...] = EVENTS,
        buffer_kb: int = BUFFER_KB,
        clocks: tuple[str, ...] = NS_CLOCKS,
        drain_interval: float | None = DRAIN_INTERVAL_S,
        avoid_cpu: int | None = None,
        lock_toplevel: bool = True,
    ) -> None:
        self.root = root
        self.lock_toplevel = lock_toplevel  # False: the caller holds TOPLEVEL_LOCK
        self.use_instance = instance
        self.wanted_events = events
        self.buffer_kb = buffer_kb
        self.clocks = clocks
        self.drain_interval = drain_interval
        self.avoid_cpu = avoid_cpu
        self.journal = TraceJournal()
        self.dir: Path = root  # the instance's directory, or root
        self.capture: Capture | None = None
        self.unavailable: str | None = None
        self.restore_failures: list[str] = []
        self.mounted_here = False
        self._drainer: _Drainer | None = None
        self._fds: dict[int, int] = {}
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._spools: dict[int, BinaryIO] = {}
        self._clock = ""
        self._enabled: list[str] = []
        self._missing: list[str] = []
        self._cpus: list[int] = []
        self._signals: dict[int, Any] = {}

    # The path the agent writes its markers into (None: not recording).
    @property
    def marker(self) -> Path | None:
        return self.dir / "trace_marker" if self.capture is None and self._fds else None

    def agent_args(self) -> list[str]:
        from rtbench.run.request import AgentRequest  # the one rendering of the agent's options

        m = self.marker
        return AgentRequest(trace_marker=str(m)).argv() if m is not None else []

    # -- entering

    def __enter__(self) -> Recorder:
        self._catch_termination()
        try:
            self._setup()
        except TraceError as e:
            self.unavailable = str(e)
            self._teardown()
        except OSError as e:
            self.unavailable = f"tracefs refused a setting: {e}"
            self._teardown()
        except BaseException:
            self._teardown()
            self._release_termination()
            raise
        return self

    def _setup(self) -> None:
        if not kernel_has_tracefs():
            raise TraceError("this kernel has no tracefs (not in /proc/filesystems)")
        if not is_mounted(self.root):
            if os.geteuid() != 0:
                raise TraceError(
                    f"tracefs is not mounted at {self.root} and mounting it needs root"
                )
            mount_tracefs(self.root)
            self.mounted_here = True
            root = self.root
            self.journal.did(f"mount tracefs at {root}", lambda: umount(root))
        if not os.access(self.root / "tracing_on", os.R_OK | os.W_OK):
            raise TraceError(
                f"not permitted to trace: {self.root} is not writable for uid {os.geteuid()} "
                "(run as root)"
            )
        if self.use_instance:
            self.dir = self._make_instance()
        elif self.lock_toplevel:
            _lock_toplevel(self.journal)
        self._configure()
        self._open_buffers()
        _write(self.dir / "tracing_on", "1")

    def _make_instance(self) -> Path:
        instances = self.root / "instances"
        if not instances.is_dir():
            raise TraceError(f"{instances} does not exist: this kernel has no trace instances")
        # Instances left by an rtbench that was killed outright (SIGKILL):
        # nobody else can own rtbench-<pid> of a dead pid.
        for stale in instances.glob(f"{INSTANCE_PREFIX}*"):
            pid = stale.name[len(INSTANCE_PREFIX) :]
            if pid.isdigit() and not _pid_alive(int(pid)):
                with contextlib.suppress(OSError):
                    stale.rmdir()
        path = instances / f"{INSTANCE_PREFIX}{os.getpid()}"
        if path.exists():  # an earlier process with this pid, killed outright
            path.rmdir()
        # Journaled first: a Ctrl-C right after mkdir must not leak it.
        self.journal.did(f"create instance {path.name}", lambda: _rmdir_instance(path))
        path.mkdir()
        return path

    def _configure(self) -> None:
        d, j = self.dir, self.journal
        j.set(d / "tracing_on", "0")
        if (d / "current_tracer").exists():
            j.set(d / "current_tracer", "nop")
        available = read_setting(d / "trace_clock").replace("[", " ").replace("]", " ").split()
        clock = next((c for c in self.clocks if c in available), None)
        if clock is None:
            raise TraceError(
                f"no nanosecond trace clock ({', '.join(self.clocks)}) among: {' '.join(available)}"
            )
        j.set(d / "trace_clock", clock)
        self._clock = clock
        if read_setting(d / "buffer_size_kb") == "X":
            # Per-CPU sizes differ: journal each one, so each comes back.
            for p in sorted((d / "per_cpu").glob("cpu*/buffer_size_kb")):
                j.set(p, str(self.buffer_kb))
        else:
            j.set(d / "buffer_size_kb", str(self.buffer_kb))
        overwrite = d / "options" / "overwrite"
        if self.drain_interval is not None and overwrite.exists():
            # Drained, the buffer is there to keep the whole run from its
            # beginning: when the drain falls behind (one CPU: it shares it
            # with a real-time case), drop the newest events, not the
            # oldest with the case's begin marker (counted as lost either
            # way). The flight recorder (no drain) keeps its last second.
            j.set(overwrite, "0")
        for name in self.wanted_events:
            system, event = name.split(":", 1)
            enable = d / "events" / system / event / "enable"
            if enable.exists():
                j.set(enable, "1")
                self._enabled.append(name)
            else:
                self._missing.append(name)
        if not self._enabled:
            raise TraceError(
                "none of the kernel events " + ", ".join(self.wanted_events) + " exists here"
            )
        # Empty the buffer of anything older than this run (not a setting:
        # there is nothing to restore). O_TRUNC is what `echo > trace` does.
        with (d / "trace").open("w"):
            pass

    def _open_buffers(self) -> None:
        self._cpus = _online_cpus()
        self._tmp = tempfile.TemporaryDirectory(prefix="rtbench-trace-")
        chunk = self._chunk()
        for cpu in self._cpus:
            raw = self.dir / "per_cpu" / f"cpu{cpu}" / "trace_pipe_raw"
            if not raw.exists():
                continue
            self._fds[cpu] = os.open(raw, os.O_RDONLY | os.O_NONBLOCK)
            self._spools[cpu] = open(Path(self._tmp.name) / f"cpu{cpu}.raw", "wb")  # noqa: SIM115
        if not self._fds:
            raise TraceError(f"no per_cpu/cpuN/trace_pipe_raw under {self.dir}")
        self._drainer = _Drainer(self._fds, self._spools, chunk)
        # None: a flight recorder. The kernel's buffer keeps the latest
        # events, overwriting the oldest, and is read once at the end.
        if self.drain_interval is not None:
            self._drainer.start(self.drain_interval, self.avoid_cpu)

    def _chunk(self) -> int:
        layout = parse_header_page(read_setting(self.dir / "events" / "header_page") + "\n")
        sub = self.dir / "buffer_subbuf_size_kb"
        if sub.exists():  # 6.8+: sub-buffers may be larger than a page
            return max(layout.page_size, int(read_setting(sub)) * 1024)
        return layout.page_size

    # -- leaving

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        deferred: list[int] = []
        with _signals_deferred(deferred):
            try:
                if self._fds:
                    self._finish()
            except OSError as e:
                self.unavailable = f"reading the recorded events failed: {e}"
            finally:
                self._teardown()
        self._release_termination()
        if deferred and exc_type is None:
            # The Ctrl-C held back while tracefs was being restored.
            raise KeyboardInterrupt

    def _finish(self) -> None:
        d = self.dir
        with contextlib.suppress(OSError):
            _write(d / "tracing_on", "0")
        drainer = self._drainer
        assert drainer is not None
        drainer.stop()
        _writers_done([d / "per_cpu" / f"cpu{cpu}" / "stats" for cpu in self._fds])
        notes: list[str] = []
        if drainer.error is not None:
            notes.append(f"draining the trace buffer failed: {drainer.error}")
        try:
            drainer.drain()
        except OSError as e:
            notes.append(f"reading the trace buffer failed: {e}")
        overrun: dict[int, int] = {}
        for cpu in self._fds:
            stats = _read_stats(d / "per_cpu" / f"cpu{cpu}" / "stats")
            lost = stats.get("overrun", 0) + stats.get("dropped events", 0)
            if lost:
                overrun[cpu] = lost
        formats: dict[str, str] = {}
        for name in (*self._enabled, MARKER_EVENT):
            system, event = name.split(":", 1)
            with contextlib.suppress(OSError):
                formats[name] = (d / "events" / system / event / "format").read_text()
        for spool in self._spools.values():
            spool.close()
        assert self._tmp is not None
        self.capture = Capture(
            clock=self._clock,
            cpus=sorted(self._fds),
            events=list(self._enabled),
            missing=list(self._missing),
            header_page=(d / "events" / "header_page").read_text(),
            header_event=(d / "events" / "header_event").read_text(),
            formats=formats,
            files={cpu: Path(self._tmp.name) / f"cpu{cpu}.raw" for cpu in self._fds},
            page_size=drainer.chunk,
            source=f"instance {d.name}" if self.use_instance else "top level",
            overrun=overrun,
            notes=notes,
            _tmp=self._tmp,
        )
        self._tmp = None  # the capture owns the spool files now

    def _teardown(self) -> None:
        if self._drainer is not None:
            self._drainer.stop()
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()
        for spool in self._spools.values():
            spool.close()
        self._spools.clear()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        self.restore_failures = self.journal.playback()

    # -- SIGTERM / SIGHUP end the run like Ctrl-C, so that __exit__ runs

    def _catch_termination(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        def as_interrupt(signum: int, frame: FrameType | None) -> None:
            raise KeyboardInterrupt

        for sig in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) is signal.SIG_DFL:
                self._signals[sig] = signal.signal(sig, as_interrupt)

    def _release_termination(self) -> None:
        for sig, previous in self._signals.items():
            signal.signal(sig, previous)
        self._signals.clear()


def _rmdir_instance(path: Path) -> None:
    # rmdir fails with EBUSY while a file of the instance is still open (an
    # agent that is being killed may hold its trace_marker for a moment).
    for _ in range(100):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as e:
            if e.errno != 16:
                raise
            time.sleep(0.05)
    path.rmdir()


def _writers_done(stats: list[Path], timeout: float = 2.0) -> None:
    """Waits for the writers that were inside an event when tracing went off:
    tracing_on stops new events only, and a page read before such a writer
    finishes is torn. Done once no CPU's counts move between two looks."""
    seen = [_read_stats(p) for p in stats]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = [_read_stats(p) for p in stats]
        if now == seen:
            return
        seen = now


def _read_stats(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        text = path.read_text()
    except OSError:
        return out
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            with contextlib.suppress(ValueError):
                out[key.strip()] = int(value.split()[0])
    return out


@contextlib.contextmanager
def _signals_deferred(deferred: list[int]) -> Iterator[None]:
    """Holds SIGINT (and SIGTERM) while tracefs is restored: a second Ctrl-C
    must not leave the machine half restored. Only the main thread can set
    handlers; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def hold(signum: int, frame: FrameType | None) -> None:
        deferred.append(signum)

    previous = {sig: signal.signal(sig, hold) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# --- looking at the state (tests, `docs/trace.md`) -----------------------------------


def snapshot(
    root: Path = TRACEFS, events: tuple[str, ...] = EVENTS, own_instances: bool = True
) -> dict[str, str]:
    """Every top-level setting a Recorder may touch, plus the instance list
    and the mount, as text: equal before and after a recording.
    `own_instances=False` leaves rtbench's instances out of the list (other
    rtbench runs on the same machine come and go with theirs)."""
    snap: dict[str, str] = {"mounted": str(is_mounted(root))}
    if not is_mounted(root):
        return snap
    for name in ("tracing_on", "current_tracer", "trace_clock", "buffer_size_kb"):
        with contextlib.suppress(OSError):
            value = read_setting(root / name)
            snap[name] = restorable_value(root / name, value)
    # An unexpanded buffer ("7 (expanded: 1408)") stands for the buffer the
    # kernel will allocate when it is first used. Tracing at the top level
    # makes that happen for good, so both read as the expanded size, in the
    # kernel's rounding (whole sub-buffers of header_page's data size).
    unexpanded: tuple[str, str] | None = None
    with contextlib.suppress(OSError, ValueError):
        top = read_setting(root / "buffer_size_kb")
        if "expanded" in top:
            data = parse_header_page(read_setting(root / "events" / "header_page")).data_size
            want = int(restorable_value(root / "buffer_size_kb", top)) * 1024
            shown = str(-(-want // data) * data // 1024)
            unexpanded = (top.split()[0], shown)
            snap["buffer_size_kb"] = shown
    for cpu_file in sorted(root.glob("per_cpu/cpu*/buffer_size_kb")):
        with contextlib.suppress(OSError):
            value = restorable_value(cpu_file, read_setting(cpu_file))
            if unexpanded is not None and value == unexpanded[0]:
                value = unexpanded[1]
            snap[str(cpu_file.relative_to(root))] = value
    for name in events:
        system, event = name.split(":", 1)
        enable = root / "events" / system / event / "enable"
        with contextlib.suppress(OSError):
            snap[f"events/{system}/{event}/enable"] = read_setting(enable)
    with contextlib.suppress(OSError):
        snap["instances"] = " ".join(
            sorted(
                p.name
                for p in (root / "instances").iterdir()
                if own_instances or not p.name.startswith(INSTANCE_PREFIX)
            )
        )
    return snap
