"""The journal: the raw stream of a run on disk as it arrives.

A measuring host writes every line the agent sends to a journal file beside
the store (`<store>.journals/`; for a PostgreSQL store, in the user's data
directory) and syncs it at each case's `end`, so a host
killed by SIGKILL, the OOM killer or a power cut leaves a file from which the
next `rtbench` stores every finished case (`rtbench.run.recovery`). The first
line is a header (`#rtbench-journal {json}`: store, pid, labels, host probe);
the rest is the stream byte for byte, so `rtbench ingest` reads a journal
like any captured console.

A live journal is held under an exclusive `flock` by its host; the kernel
drops the lock when that process dies however it dies, which is how another
process tells a crashed run from a running one (a pid alone can be reused).
When the store's directory cannot take the journal (full, read-only) it goes
to the user's state directory instead (`fallback_dirs`).

Every journal folder is private to its user: created 0700, and its owner
and mode are checked before it is used or read (`private_dir`); in it, only
regular files owned by the user are journals (anything else is ignored with
a warning, and opened with O_NONBLOCK | O_NOFOLLOW, so a FIFO or a symlink
never makes a command hang or read another file). A journal that is stored
but cannot be removed (a read-only folder) is listed in the done list
(`mark_done`) and not read again.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import platformdirs

from rtbench.store.location import StoreLocation, locate

HEADER = b"#rtbench-journal "
SAVING = b"#rtbench-saving"
SUFFIX = ".journal"
FORMAT = 1


def journal_dir(store: Path | StoreLocation) -> Path:
    """Where this host journals the runs it measures for `store`: beside an
    SQLite file; for a database server, in the user's data directory."""
    return locate(store).journal_dir


def fallback_dirs() -> list[Path]:
    """Where a journal goes when the store's folder cannot take it: the
    user's state directory, then (when there is one) the runtime one,
    often another file system. Never a shared folder such as /tmp, where
    another user could create the folder first."""
    dirs = [platformdirs.user_state_path("rtbench") / "journals"]
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime:
        dirs.append(Path(runtime) / "rtbench" / "journals")
    return dirs


def private_dir(directory: Path, create: bool = True) -> Path:
    """`directory`, checked private to this user: made 0700 when missing
    (`create`); a folder another user owns is refused (PermissionError), one
    of ours that others may enter is made 0700."""
    if create:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = os.stat(directory)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(directory))
    if st.st_uid != os.geteuid():
        raise PermissionError(
            errno.EPERM, f"owned by uid {st.st_uid}, not by you: not used", str(directory)
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        try:
            os.chmod(directory, mode & 0o700)  # the owner's own bits stay (read-only)
        except OSError as e:
            if mode & 0o022:  # others could plant, rename or remove journals there
                raise PermissionError(
                    errno.EPERM, f"others may write in it, and it cannot be made private: {e}"
                ) from e
    return directory


def _open_own(path: Path) -> int:
    """A read-only descriptor of `path` when it is a regular file of this
    user (never blocks on a FIFO, never follows a symlink); else OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
        os.close(fd)
        raise PermissionError(errno.EPERM, "not a regular file of yours", str(path))
    return fd


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
        for directory in (journal_dir(store), *fallback_dirs()):
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
        private_dir(directory)
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
        """Copies the journal to a fallback directory and goes on there."""
        assert self._fd is not None
        old_fd, old_path = self._fd, self.path
        problems: list[str] = []
        for fallback in fallback_dirs():
            if old_path.parent == fallback:
                continue
            try:
                new = Journal._open_in(fallback, self._header)
            except OSError as e:
                problems.append(f"{fallback}: {e.strerror or e}")
                continue
            assert new._fd is not None
            try:
                with open(old_path, "rb") as f:
                    f.seek(len(self._header))
                    _write_all(new._fd, f.read(self._written))
                _write_all(new._fd, pending)
                os.fsync(new._fd)
            except OSError as e:
                problems.append(f"{fallback}: {e.strerror or e}")
                new.discard()
                continue
            break
        else:
            self.error = (
                f"the journal stopped at line {self._lines()}: {old_path}: "
                f"{cause.strerror or cause}; " + ("; ".join(problems) or "no other folder")
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
    """The header of a journal (or {} for a stream without one); OSError
    when `path` is no regular file of this user."""
    with os.fdopen(_open_own(path), "rb") as f:
        return parse_header(f.readline(1 << 20).rstrip(b"\n"))


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
    with os.fdopen(_open_own(path), "rb") as f:
        return any(line.rstrip(b"\n") == SAVING for line in f)


@contextlib.contextmanager
def claimed(path: Path) -> Iterator[bool]:
    """Tries to take a journal for recovery: True when no live host holds it
    and it is still the file at `path` (another recoverer may have taken and
    removed it meanwhile)."""
    try:
        fd = _open_own(path)
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


def candidates(
    store: Path | StoreLocation, warn: Callable[[str], None] | None = None
) -> list[Path]:
    """Journals that may belong to this store, oldest first: regular files
    of this user in its private journal folders, not marked done. What else
    is there is ignored, with a warning through `warn`."""
    found: list[Path] = []
    done = _done_keys()
    me = os.geteuid()
    for directory in (journal_dir(store), *fallback_dirs()):
        if not os.path.isdir(directory):
            continue
        try:
            private_dir(directory, create=False)
        except OSError as e:
            if warn is not None:
                warn(f"{directory}: {e.strerror or e}; its journals are ignored")
            continue
        with contextlib.suppress(OSError):
            for path in sorted(directory.glob(f"*{SUFFIX}")):
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if not stat.S_ISREG(st.st_mode) or st.st_uid != me:
                    if warn is not None:
                        warn(f"{path}: not a regular file of yours; ignored")
                    continue
                if _key(st) not in done:
                    found.append(path)
    return found


# -- journals stored but not removable ----------------------------------------


def done_list() -> Path:
    """The list of journals that are stored but could not be removed."""
    return platformdirs.user_state_path("rtbench") / "done-journals"


def _key(st: os.stat_result) -> str:
    # The file as it is: a journal written to after it was listed (its name
    # reused) is a new one.
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def _done_keys() -> set[str]:
    try:
        fd = _open_own(done_list())
    except OSError:
        return set()
    with os.fdopen(fd, "rb") as f:
        return {line.split(b" ", 1)[0].decode("ascii", "replace") for line in f}


def mark_done(path: Path) -> None:
    """Lists a stored journal that cannot be removed: it is not read again."""
    st = os.lstat(path)
    listed = done_list()
    private_dir(listed.parent)
    fd = os.open(listed, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        _write_all(fd, f"{_key(st)} {path}\n".encode(errors="surrogateescape"))
        os.fsync(fd)
    finally:
        os.close(fd)
