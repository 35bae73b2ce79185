from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from rtbench.transports.base import TransportError

_EOF = b""


class LocalTransport:
    """Runs the agent as a child process of this one.

    The agent gets its own process group so the host decides when it ends;
    it also asks the kernel to kill it when the host dies (PDEATHSIG), so no
    real-time thread outlives a run, even if the host is killed.
    """

    name = "local"

    def __init__(self, exe: Path, preexec: Callable[[], None] | None = None) -> None:
        self.exe = exe
        self.preexec = preexec  # tests use it to drop privileges for real
        self.idle_timeout: float | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._queue: queue.Queue[bytes] = queue.Queue(maxsize=10000)
        self._stderr: list[str] = []
        self._readers: list[threading.Thread] = []

    def start(self, args: list[str]) -> None:
        try:
            self.proc = subprocess.Popen(
                [str(self.exe), *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=self.preexec,
            )
        except OSError as e:
            raise TransportError(f"cannot start {self.exe}: {e}") from e
        self._readers = [
            threading.Thread(target=self._pump, daemon=True),
            threading.Thread(target=self._drain_stderr, daemon=True),
        ]
        for t in self._readers:
            t.start()

    def _pump(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            self._queue.put(raw.rstrip(b"\n"))
        self._queue.put(_EOF)

    def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for raw in self.proc.stderr:
            self._stderr.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def lines(self) -> Iterator[bytes]:
        while True:
            timeout = self.idle_timeout
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                raise TransportError(
                    f"the agent wrote nothing for {timeout:.0f} s; stopped it"
                ) from None
            if item is _EOF:
                return
            yield item

    def stop(self) -> int | None:
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            # The whole group: the agent's threads and anything it started.
            for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        status = proc.wait()
        # The agent's last words (stderr) must be read before anyone asks.
        for t in self._readers:
            t.join(timeout=5)
        return status

    def diagnostics(self) -> str:
        return "\n".join(self._stderr[-20:])
