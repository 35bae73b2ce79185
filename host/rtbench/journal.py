"""The journal: the raw stream of a run on disk as it arrives.

A measuring host writes every line the agent sends to a journal file beside
the store (`<store>.journals/`; for a PostgreSQL store, in the user's data
directory) and syncs it at each case's `end`, so a host
killed by SIGKILL, the OOM killer or a power cut leaves a file from which the
next `rtbench` stores every finished case (`rtbench.recovery`). The first
line is a header (`#rtbench-journal {json}`: store, pid, labels, host probe);
the rest is the stream byte for byte, so `rtbench ingest` reads a journal
like any captured console.

A live journal is held under an exclusive `flock` by its host; the kernel
drops the lock when that process dies however it dies, which is how another
process tells a crashed run from a running one (a pid alone can be reused).
When the store's directory cannot take the journal (full, read-only) it goes
to a per-user directory under the system's temporary directory instead.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rtbench.store.location import StoreLocation, locate

HEADER = b"#rtbench-journal "
SAVING = b"#rtbench-saving"
SUFFIX = ".journal"
FORMAT = 1


def journal_dir(store: Path | StoreLocation) -> Path:
    """Where this host journals the runs it measures for `store`: beside an
    SQLite file; for a database server, in the user's data directory."""
    return locate(store).journal_dir


def fallback_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"rtbench-journals-{os.getuid()}"


def is_journal_line(raw: bytes) -> bool:
    """The journal's own lines, which are no part of the agent's stream."""
    return raw.startswith((HEADER, SAVING))


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class Journal:
    """One run's journal; `Journal.create` opens it, locked, with its header."""

    def __init__(self, fd: int, path: Path, header: bytes) -> None:
        self._fd: int | None = fd
        self.path = path
        self._header = header
        self._written = 0  # stream bytes safely in the file (after the header)
        self._written_lines = 0
        self.error: str | None = None  # what went wrong with the journal, if anything
        # Stopped journals keep their descriptor: the lock says the host lives.
        self._stopped = False

    @classmethod
    def create(
        cls, store: Path | StoreLocation, header: dict[str, Any], warn: Callable[[str], None]
    ) -> Journal | None:
        """A new journal in the store's journal directory, else in the
        fallback one; None (after a warning) when neither can be written."""
        meta = {"format": FORMAT, "pid": os.getpid(), "store": locate(store).key, **header}
        line = HEADER + json.dumps(meta, separators=(",", ":")).encode() + b"\n"
        problems: list[str] = []
        for directory in (journal_dir(store), fallback_dir()):
            try:
                journal = cls._open_in(directory, line)
            except OSError as e:
                problems.append(f"{directory}: {e.strerror or e}")
                continue
            if problems:
                warn(f"the journal is in {journal.path} ({'; '.join(problems)})")
            return journal
        warn(
            "the stream cannot be journaled (" + "; ".join(problems) + "): if this host "
            "dies before the run is stored, the run is lost"
        )
        return None

    @classmethod
    def _open_in(cls, directory: Path, header: bytes) -> Journal:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        stem = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{time.monotonic_ns() % 10**6}"
        # Locked under a name recovery ignores, then renamed: recovery never
        # sees an unlocked journal of a live host.
        tmp = directory / f".{stem}.new"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _write_all(fd, header)
            os.fsync(fd)
            path = directory / f"{stem}{SUFFIX}"
            os.rename(tmp, path)
            _fsync_dir(directory)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return cls(fd, path, header)

    @property
    def active(self) -> bool:
        return self._fd is not None

    def write(self, raw: bytes, *, sync: bool = False) -> None:
        """Appends one line of the stream; `sync` makes it (and all before
        it) durable. A failure moves the journal to the fallback directory
        once; if that fails too the journal stops and says why."""
        if self._fd is None or self._stopped:
            return
        data = raw + b"\n"
        try:
            _write_all(self._fd, data)
            if sync:
                os.fsync(self._fd)
        except OSError as e:
            self._move(data, e)
            return
        self._written += len(data)
        self._written_lines += 1

    def _move(self, pending: bytes, cause: OSError) -> None:
        """Copies the journal to the fallback directory and goes on there."""
        assert self._fd is not None
        old_fd, old_path = self._fd, self.path
        fallback = fallback_dir()
        try:
            if old_path.parent == fallback:
                raise cause
            new = Journal._open_in(fallback, self._header)
            assert new._fd is not None
            with open(old_path, "rb") as f:
                f.seek(len(self._header))
                _write_all(new._fd, f.read(self._written))
            _write_all(new._fd, pending)
            os.fsync(new._fd)
        except OSError as e:
            self.error = (
                f"the journal stopped at line {self._lines()}: {old_path}: "
                f"{cause.strerror or cause}; {fallback}: {e.strerror or e}"
            )
            # What is in the old file is whole up to the failed line.
            self._stopped = True
            return
        self._fd, self.path = new._fd, new.path
        self._written += len(pending)
        self._written_lines += 1
        self.error = f"moved from {old_path.parent} ({cause.strerror or cause})"
        os.close(old_fd)
        with contextlib.suppress(OSError):
            os.unlink(old_path)

    def _lines(self) -> int:
        return 1 + self._written_lines

    def mark_saving(self) -> None:
        """Notes that the run is being stored: recovery then checks the store
        before storing it again (a kill between commit and unlink)."""
        self.write(SAVING, sync=True)

    def discard(self) -> None:
        """The run is stored: the journal is no longer needed."""
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        self.close()

    def keep(self) -> Path | None:
        """The run could not be stored: the journal becomes a named stream
        file beside it (which recovery leaves alone); returns its path."""
        if self._fd is None and self.error is None:
            return None
        kept = self.path.with_name(f"rtbench-unsaved-{self.path.stem}.rtb")
        try:
            if self._fd is not None:
                os.fsync(self._fd)
            os.rename(self.path, kept)
            _fsync_dir(kept.parent)
        except OSError:
            kept = self.path
        self.close()
        return kept

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def read_header(path: Path) -> dict[str, Any]:
    """The header of a journal (or {} for a stream without one)."""
    with path.open("rb") as f:
        return parse_header(f.readline().rstrip(b"\n"))


def parse_header(first: bytes) -> dict[str, Any]:
    """A journal's header from its first line ({} when it is not one)."""
    if not first.startswith(HEADER):
        return {}
    try:
        meta = json.loads(first[len(HEADER) :])
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def was_saving(path: Path) -> bool:
    with path.open("rb") as f:
        return any(line.rstrip(b"\n") == SAVING for line in f)


@contextlib.contextmanager
def claimed(path: Path) -> Iterator[bool]:
    """Tries to take a journal for recovery: True when no live host holds it
    and it is still the file at `path` (another recoverer may have taken and
    removed it meanwhile)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except OSError:
            same = False
        yield same
    finally:
        os.close(fd)


def candidates(store: Path | StoreLocation) -> list[Path]:
    """Journals that may belong to this store, oldest first."""
    found: list[Path] = []
    for directory in (journal_dir(store), fallback_dir()):
        with contextlib.suppress(OSError):
            found += sorted(directory.glob(f"*{SUFFIX}"))
    return found
