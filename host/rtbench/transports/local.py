from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

from rtbench.transports.process import ChildTransport


class LocalTransport(ChildTransport):
    """Runs the agent as a child process of this one.

    The agent gets its own process group so the host decides when it ends;
    it also asks the kernel to kill it when the host dies (PDEATHSIG), so no
    real-time thread outlives a run, even if the host is killed.
    """

    name = "local"

    def __init__(self, exe: Path, preexec: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.exe = exe
        self.preexec = preexec  # tests use it to drop privileges for real

    def start(self, args: list[str]) -> None:
        self._spawn([str(self.exe), *args], str(self.exe), preexec=self.preexec)

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
        return self._reap(proc)
