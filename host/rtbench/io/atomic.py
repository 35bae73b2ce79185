"""Every file rtbench writes, written whole or not at all.

A report, an export, a JUnit file or a saved stream goes to a temporary file
beside its destination and is renamed into place once complete, so a full
disk, a read-only mount or a kill leaves the old file (or none), never half
of a new one. `check_writable` says before a long run that the file could
not be written at all.

Only a regular file is replaced. An existing path that is something else is
never destroyed (as root, `-o /dev/null` must not replace the system's
/dev/null with a file): a FIFO, a character device (`/dev/null`, a
terminal) or the process's own streams (`-o /dev/stdout`) are written
through, as asked; a directory, a block device or a socket is refused. A
symbolic link is followed: the file it points to is replaced, the link
stays.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO, Any, cast


class OutputError(Exception):
    """A file rtbench was asked to write cannot be written, said plainly."""


def _reason(e: OSError) -> str:
    return e.strerror or str(e)


# Paths that name an open stream of this process, whatever is behind it.
_OWN_STREAMS = ("/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/self/fd/")


def _own_fd(path: Path) -> int | None:
    """The descriptor `path` names (/dev/stdout: 1, /dev/fd/N: N), else None."""
    text = str(path)
    named = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
    if text in named:
        return named[text]
    for prefix in ("/dev/fd/", "/proc/self/fd/"):
        if text.startswith(prefix) and text[len(prefix) :].isdigit():
            return int(text[len(prefix) :])
    return None


def _open_through(path: Path, mode: str, **kwargs: Any) -> IO[Any]:
    """A FIFO or a device opened for writing; the process's own stream is
    written through its descriptor (sharing its offset: what the shell
    redirected to a file is neither truncated nor overwritten)."""
    fd = _own_fd(path)
    if fd is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        return open(os.dup(fd), mode, **kwargs)
    return open(path, mode, **kwargs)


def destination(path: Path) -> tuple[Path, bool]:
    """Where to write for `path`, and whether to write through it (True)
    rather than replace it: the file a symbolic link points to; through
    for a FIFO, a character device or the process's own streams. Raises
    OutputError for what must never be written over."""
    try:
        st = os.stat(path)  # follows links
    except FileNotFoundError:
        # A new file; a dangling link is followed to where it points.
        return (Path(os.path.realpath(path)) if path.is_symlink() else path), False
    except OSError as e:
        raise OutputError(f"cannot write {path}: {_reason(e)}") from e
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise OutputError(f"cannot write {path}: it is a directory")
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or str(path).startswith(_OWN_STREAMS):
        return path, True
    if not stat.S_ISREG(mode):
        what = {stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}.get(
            stat.S_IFMT(mode), "not a regular file"
        )
        raise OutputError(f"cannot write {path}: it is {what}; give a file name")
    return Path(os.path.realpath(path)), False


def check_writable(path: Path) -> None:
    """Raises OutputError when `path` clearly cannot be written: its directory
    is missing or read-only, or it is a directory (or a block device...)."""
    path, through = destination(path)
    if through:
        if not os.access(path, os.W_OK):
            raise OutputError(f"cannot write {path}: permission denied")
        return
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"cannot write {path}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        why = "is on a read-only file system" if _read_only(parent) else "is not writable"
        raise OutputError(f"cannot write {path}: the directory {parent} {why}")


def _read_only(directory: Path) -> bool:
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_text(path: Path, newline: str | None = None) -> AbstractContextManager[IO[str]]:
    """A text file to write `path` through: a temporary file in the same
    directory, renamed onto `path` when the block ends normally and removed
    when it does not. Any OSError becomes an OutputError naming `path`."""
    return cast(AbstractContextManager[IO[str]], _atomic(path, "w", newline))


def atomic_binary(path: Path) -> AbstractContextManager[IO[bytes]]:
    """`atomic_text` for bytes."""
    return cast(AbstractContextManager[IO[bytes]], _atomic(path, "wb", None))


@contextmanager
def _atomic(path: Path, mode: str, newline: str | None) -> Iterator[IO[str] | IO[bytes]]:
    check_writable(path)
    shown = path
    path, through = destination(path)
    kwargs = {} if "b" in mode else {"encoding": "utf-8", "newline": newline}
    if through:
        try:
            with _open_through(path, mode, **kwargs) as f:
                yield f
        except OSError as e:
            raise OutputError(f"cannot write {shown}: {_reason(e)}") from e
        return
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    except OSError as e:
        raise OutputError(f"cannot write {path}: {_reason(e)}") from e
    done = False
    try:
        with os.fdopen(fd, mode, **kwargs) as f:  # type: ignore[call-overload]
            yield f
            f.flush()
            os.fsync(f.fileno())
        # mkstemp makes 0600; a written file gets what open() would give it.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
        done = True
    except OSError as e:
        raise OutputError(f"cannot write {path}: {_reason(e)}; nothing was written") from e
    finally:
        if not done:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_text(path: Path, text: str) -> None:
    with atomic_text(path) as f:
        f.write(text)


def write_bytes(path: Path, data: bytes) -> None:
    with atomic_binary(path) as f:
        f.write(data)


class AtomicSink:
    """A file filled during a run (`--save-stream`): bytes go to a temporary
    file as they come; `commit` renames it into place. A write that fails
    (a full disk) stops the sink without disturbing the run; `error` then
    says why, and nothing partial is left."""

    def __init__(self, path: Path) -> None:
        check_writable(path)
        self.path = path
        self.error: str | None = None
        real, self._through = destination(path)
        self._real = real  # a link's target: the file replaced
        if self._through:  # a FIFO or a device: written as the run goes
            self._tmp = str(real)
            try:
                self._f: IO[bytes] | None = _open_through(real, "wb")
            except OSError as e:
                raise OutputError(f"cannot write {path}: {_reason(e)}") from e
            return
        path = real
        try:
            fd, self._tmp = tempfile.mkstemp(
                prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
            )
        except OSError as e:
            raise OutputError(f"cannot write {path}: {_reason(e)}") from e
        self._f = os.fdopen(fd, "wb")

    def write(self, data: bytes) -> None:
        if self._f is None:
            return
        try:
            self._f.write(data)
        except OSError as e:
            self._fail(e)

    def _fail(self, e: OSError) -> None:
        self.error = f"cannot write {self.path}: {_reason(e)}; nothing was written"
        self.discard()

    def commit(self) -> None:
        """Puts the file in place, or leaves nothing and sets `error`."""
        f = self._f
        if f is None:
            return
        try:
            if self._through:
                self._f = None
                f.close()
                return
            f.flush()
            os.fsync(f.fileno())
            f.close()
            self._f = None
            os.chmod(self._tmp, 0o666 & ~_umask())
            os.replace(self._tmp, self._real)
        except OSError as e:
            self._fail(e)

    def discard(self) -> None:
        if self._f is not None:
            with contextlib.suppress(OSError):
                self._f.close()
            self._f = None
        if not self._through:  # (what went through a FIFO cannot be taken back)
            with contextlib.suppress(OSError):
                os.unlink(self._tmp)
