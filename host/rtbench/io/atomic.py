"""Every file rtbench writes, written whole or not at all.

A report, an export, a JUnit file or a saved stream goes to a temporary file
beside its destination and is renamed into place once complete, so a full
disk, a read-only mount or a kill leaves the old file (or none), never half
of a new one. `check_writable` says before a long run that the file could
not be written at all.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO, cast


class OutputError(Exception):
    """A file rtbench was asked to write cannot be written, said plainly."""


def _reason(e: OSError) -> str:
    return e.strerror or str(e)


def check_writable(path: Path) -> None:
    """Raises OutputError when `path` clearly cannot be written: its directory
    is missing or read-only, or it is a directory."""
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory")
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
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    except OSError as e:
        raise OutputError(f"cannot write {path}: {_reason(e)}") from e
    done = False
    try:
        kwargs = {} if "b" in mode else {"encoding": "utf-8", "newline": newline}
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
        try:
            fd, self._tmp = tempfile.mkstemp(
                prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
            )
        except OSError as e:
            raise OutputError(f"cannot write {path}: {_reason(e)}") from e
        self._f: IO[bytes] | None = os.fdopen(fd, "wb")

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
            f.flush()
            os.fsync(f.fileno())
            f.close()
            self._f = None
            os.chmod(self._tmp, 0o666 & ~_umask())
            os.replace(self._tmp, self.path)
        except OSError as e:
            self._fail(e)

    def discard(self) -> None:
        if self._f is not None:
            with contextlib.suppress(OSError):
                self._f.close()
            self._f = None
        with contextlib.suppress(OSError):
            os.unlink(self._tmp)
