"""Tests in parallel (pytest-xdist, `make test` runs `-n auto`), except the
exclusive ones: `@pytest.mark.exclusive` tests run while no other test
runs. While one runs the other worker idles, so a test is exclusive only
for a reason a sibling test would break, said in a comment beside the mark:
- global kernel state: tracefs, /dev/cpu_dma_latency, sched_rt_runtime,
  CPU isolation, /dev/mqueue counted;
- real-time busy loops (loads, blockers at SCHED_FIFO) that would starve a
  sibling test for seconds, past its own timeouts;
- a figure that a sibling's agent would move and stress-ng would not:
  every agent run as root measures at SCHED_FIFO on the first CPU it may
  use, so a sibling's agent preempts it there, where stress-ng's normal
  priority never does.
"Measures a ratio in one run" is not a reason: the suite passes under
`stress-ng --cpu 1 --vm 1 --io 1`, a heavier load than a sibling worker.
Marks go on the tests that need them, not on their modules.

Exclusive, besides the tests marked so: every `realtime` test (its checks
depend on who preempts whom at SCHED_FIFO, which a sibling's real-time
agent would change) and the modules listed in EXCLUSIVE_MODULES
(conftest.py), whose tests have not yet been sorted one by one.

Beside an exclusive test, the files in BYSTANDER_MODULES (conftest.py)
run without the lock: pure computation on the host (no agent, no kernel
state, no clock or timeout that seconds of a real-time load's starvation
could cross), to an exclusive test what stress-ng's normal-priority load
is. They are handed out among the files with exclusive tests, so that the
other worker has them to run: an exclusive block left one CPU idle for
a minute of each run (2026-11-26).

One shared/exclusive lock (flock) for the whole run: every test holds it
shared from its setup to its teardown, an exclusive test holds it
exclusively, and keeps it for the next test when that one is exclusive
too. A second lock is the turnstile in front of it, so that a worker
waiting for the exclusive lock is not starved by the others taking the
shared one test after test. Without xdist (or with one worker) nothing is
locked: the tests run one at a time anyway."""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

# The folder of the run's two lock files, chosen by the controller and
# handed to each worker in its workerinput.
WORKERINPUT_KEY = "rtbench_lock_dir"


class RunLock:
    """A worker's handles on the run's two lock files."""

    def __init__(self, folder: Path) -> None:
        self._gate = os.open(folder / "gate", os.O_RDWR | os.O_CREAT, 0o600)
        self._main = os.open(folder / "main", os.O_RDWR | os.O_CREAT, 0o600)
        self._kept = False  # the exclusive lock still held from the last test

    @contextmanager
    def held(self, exclusive: bool, keep: bool = False) -> Iterator[None]:
        """Held for one test; `keep` (an exclusive test followed by another
        one on this worker) leaves it held for the next test: released
        between the two, the other worker would start a test that the next
        one then waits for while this worker idles, once per test."""
        if not exclusive:
            self._let_go_kept()
        if not self._kept:
            fcntl.flock(self._gate, fcntl.LOCK_EX)
            try:
                fcntl.flock(self._main, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            finally:
                fcntl.flock(self._gate, fcntl.LOCK_UN)
        self._kept = False
        try:
            yield
        finally:
            if exclusive and keep:
                self._kept = True
            else:
                fcntl.flock(self._main, fcntl.LOCK_UN)

    @contextmanager
    def beside(self) -> Iterator[None]:
        """A bystander's test: no lock held, an exclusive test may run."""
        self._let_go_kept()
        yield

    def _let_go_kept(self) -> None:
        """The exclusive lock kept from the last test, let go before a test
        that does not hold it exclusively."""
        if self._kept:
            fcntl.flock(self._main, fcntl.LOCK_UN)
            self._kept = False


_lock: RunLock | None = None
_folder: Path | None = None


def worker_lock(config: pytest.Config) -> RunLock | None:
    """This worker's lock; None outside xdist."""
    global _lock
    if _lock is None:
        workerinput = getattr(config, "workerinput", None)
        if workerinput is None or WORKERINPUT_KEY not in workerinput:
            return None
        _lock = RunLock(Path(workerinput[WORKERINPUT_KEY]))
    return _lock


def lock_folder() -> str:
    """The controller's folder for the run's lock files (made once)."""
    global _folder
    if _folder is None:
        _folder = Path(tempfile.mkdtemp(prefix="rtbench-pytest-lock-"))
    return str(_folder)


def remove_folder() -> None:
    if _folder is not None:
        shutil.rmtree(_folder, ignore_errors=True)
