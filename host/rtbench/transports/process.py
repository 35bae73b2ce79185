"""The part of a Transport that runs a child process and reads its output.

The local agent, `ssh` and QEMU are all a child of the host whose stdout is
the agent's stream. The child gets its own session: a terminal's Ctrl-C
reaches the host only, which then stops the child in order (and keeps its
exit status). Its stdout is read on a thread into a queue so `lines` can
give up after a silence; its stderr is drained on another thread so a
chatty child never blocks on a full pipe, and kept for diagnostics. How the
child is ended differs per transport; each one's `stop` finishes with
`_reap`.
"""

from __future__ import annotations

import contextlib
import io
import os
import queue
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import IO

from rtbench.stream.limits import STDERR_LINES, bounded_lines
from rtbench.transports.base import TransportError

# Lines read ahead of the parser: up to MAX_LINE bytes each, so few.
QUEUED_LINES = 128
# After a stop, how long a line still owed may take: the child is gone and
# its pipe closes, unless something it started still holds it.
REMAINING_WAIT_S = 2.0
# A child writing into a file (`_spawn(..., stdout_file=True)`): how often
# its reader looks for more.
FOLLOW_POLL_S = 0.02


class _Followed(io.RawIOBase):
    """The child's stdout written into an unlinked file, read as it grows:
    a read waits for more until the child has ended and all was read. Its
    own offset (pread): the child's writes keep theirs."""

    def __init__(self, fd: int, proc: subprocess.Popen[bytes]) -> None:
        super().__init__()
        self._fd, self._proc, self._at = fd, proc, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(b)
        while True:
            ended = self._proc.poll() is not None  # before the read: nothing after it is lost
            data = os.pread(self._fd, len(view), self._at)
            if data or ended:
                view[: len(data)] = data
                self._at += len(data)
                return len(data)
            time.sleep(FOLLOW_POLL_S)

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


class ChildTransport:
    """A base for transports whose agent stream is a child's stdout."""

    name: str
    idle_timeout: float | None

    def __init__(self) -> None:
        self.idle_timeout = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=QUEUED_LINES)
        # Its last lines only: a child flooding stderr costs no memory.
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self._readers: list[threading.Thread] = []
        self._stdout: IO[bytes] = io.BytesIO()  # the child's, once started
        self._followed = False
        self.cut_lines = [0]  # pieces of over-long lines (rtbench.stream.limits)
        # When the child last wrote a line, the ones `_line` consumes too (a
        # QEMU guest's markers: its trace and timerlat after the agent's
        # last record): a child that speaks is not silent.
        self._heard = time.monotonic()

    def _reset_streams(self) -> None:
        """Forgets a previous child's output (a transport started again)."""
        self._queue = queue.Queue(maxsize=QUEUED_LINES)
        self._stderr = deque(maxlen=STDERR_LINES)
        self.cut_lines = [0]

    def _spawn(
        self,
        argv: list[str],
        what: str,
        *,
        stdin: int = subprocess.DEVNULL,
        preexec: Callable[[], None] | None = None,
        stdout_file: bool = False,
    ) -> None:
        """Starts `argv` (`what` names it in errors) and its readers.
        `stdout_file`: the child writes its stdout into an unlinked file
        the reader follows, never into a pipe. A full pipe holds a writer
        back for as long as the host takes to read (a loaded host, a slow
        store); an emulated board under -icount spins on its UART's busy
        flag meanwhile, and host time became virtual time in its figures."""
        with contextlib.ExitStack() as stack:
            sink = (
                stack.enter_context(tempfile.TemporaryFile(prefix="rtbench-stdout-"))
                if stdout_file
                else None
            )
            try:
                self.proc = subprocess.Popen(
                    argv,
                    stdin=stdin,
                    stdout=sink if sink is not None else subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                    preexec_fn=preexec,
                )
            except OSError as e:
                raise TransportError(f"cannot start {what}: {e}") from e
            self._followed = sink is not None
            if sink is not None:
                # The reader's own descriptor; the child holds the other.
                self._stdout = io.BufferedReader(_Followed(os.dup(sink.fileno()), self.proc))
            else:
                assert self.proc.stdout is not None
                self._stdout = self.proc.stdout
        # The reader gets this child's queue and output, not the attributes:
        # a previous child's reader still draining on a loaded host (its
        # join gives up after 5 s) would otherwise put its stale lines, and
        # its end, into the next run's queue.
        self._readers = [
            threading.Thread(
                target=self._pump,
                args=(self._queue, self._stdout, self.cut_lines, self._followed),
                daemon=True,
            ),
            threading.Thread(target=self._drain_stderr, daemon=True),
        ]
        for t in self._readers:
            t.start()

    def _line(self, line: bytes) -> bytes | None:
        """A line of stdout (without its newline) as the stream's line, or
        None for one the transport consumes itself. Runs on the reader."""
        return line

    def _pump(
        self,
        out: queue.Queue[bytes | None],
        stdout: IO[bytes],
        cut_lines: list[int],
        followed: bool,
    ) -> None:
        for raw in bounded_lines(stdout, cut_lines):
            self._heard = time.monotonic()
            line = self._line(raw)
            if line is not None:
                out.put(line)
        if followed:
            stdout.close()  # the file is gone with its last descriptor
        out.put(None)  # the end of the stream (an empty line is a line)

    def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for raw in bounded_lines(self.proc.stderr, [0]):
            self._stderr.append(raw.decode("utf-8", "replace"))

    def _timeout(self) -> float | None:
        """How long the next line may take (asked before each line)."""
        return self.idle_timeout

    def _silence(self, timeout: float) -> str:
        """The error when no line came for `timeout` s."""
        return f"the agent wrote nothing for {timeout:.0f} s; stopped it"

    def lines(self) -> Iterator[bytes]:
        while True:
            item = self._next(self._timeout())
            if item is None:
                return
            yield item

    def _next(self, timeout: float | None) -> bytes | None:
        """The next line, or TransportError once the child wrote nothing at
        all (not even a line the transport consumed) for `timeout` s."""
        asked = time.monotonic()
        while True:
            wait = None if timeout is None else max(asked, self._heard) + timeout - time.monotonic()
            if wait is not None and wait <= 0:
                raise TransportError(self._silence(timeout or 0.0))
            try:
                return self._queue.get(timeout=wait)
            except queue.Empty:
                continue  # the child may have spoken meanwhile: wait from then

    def remaining(self) -> Iterator[bytes]:
        """After `stop`: the lines the child wrote that nobody read yet, read
        ahead into the queue or still in its pipe. The host stopped early
        (Ctrl-C) but they were measured, so they are parsed too."""
        while True:
            try:
                item = self._queue.get(timeout=REMAINING_WAIT_S)
            except queue.Empty:
                return
            if item is None:
                return
            yield item

    def _reap(self, proc: subprocess.Popen[bytes]) -> int:
        """Waits for the ended child, then for its last words (stderr),
        which must be read before anyone asks for them."""
        status = proc.wait()
        for t in self._readers:
            t.join(timeout=5)
        return status

    def diagnostics(self) -> str:
        return "\n".join(list(self._stderr)[-20:])
