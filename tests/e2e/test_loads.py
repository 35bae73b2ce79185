"""End-to-end: a background load never outlives its run.

`rtbench run --load mixed` (plus stress-ng where installed) is ended three
ways in the middle of a case: Ctrl-C on the host, SIGKILL of the agent,
SIGKILL of the host. Each time, within seconds, no process of that run may
remain: not the agent, not a child it forked, not stress-ng or one of its
workers. The run's processes are found by walking /proc for an environment
marker that this test gives the host and every descendant inherits; unlike
the parent chain it still finds a process whose parent died (it is then
reparented), and it never matches another session's agents.

Files: the io load's file is unnamed (O_TMPFILE) and vanishes with the
process; stress-ng's folder is removed by its guardian; the kernel load's
folder cannot be removed by an agent that is killed (the host's Ctrl-C ends
the agent with SIGTERM, then SIGKILL, neither of which it catches). So no
file may remain but the kernel load's transient one (a kill may land
between its create and unlink), and the next load start removes the
folders left behind, with that file."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import procs
import pytest

MARK = "RTBENCH_LOAD_TEST"
LOAD = "mixed,stress" if shutil.which("stress-ng") else "mixed"


def _ours(mark: str) -> dict[int, str]:
    """pid -> command name of every live (not zombie) process carrying `mark`."""
    want = f"{MARK}={mark}".encode()
    found = {}
    for s in procs.processes():
        env = procs.read(s.pid, "environ")
        if env is not None and want in env.split(b"\0") and s.state != "Z":
            found[s.pid] = s.comm
    return found


# Only what hangs reaches it: a slow machine is never a failure here.
HANG_S = 120.0


def _wait_for(pred: Callable[[], bool], timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def _load_threads(pid: int) -> int:
    return sum(t.comm.startswith("load-") for t in procs.threads(pid))


def _start(tmp: Path, mark: str) -> tuple[subprocess.Popen[str], int]:
    """The host, and its agent once the load runs."""
    env = {**os.environ, MARK: mark, "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rtbench.cli", "run", "--load", LOAD, "-c", "THR-SW",
         "--set", "THR-SW.duration_ms=120000", "--set", "THR-SW.n=2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip

    # The measuring agent is the one whose load threads run: the host may
    # start short-lived agents first (--list), which end on their own.
    loaded: list[int] = []

    def measuring() -> bool:
        loaded[:] = [
            p for p, c in _ours(mark).items() if c == "rtbench-agent" and _load_threads(p) >= 5
        ]
        return bool(loaded)

    assert _wait_for(measuring, HANG_S), f"no agent with its load started: {_ours(mark)}"
    pid = loaded[0]
    if "stress" in LOAD:
        # The kinds start one after the other, each once its threads run: on
        # a quiet VM stress-ng, the last, once took over 10 s to appear (CI).
        def stress() -> bool:
            return "stress-ng" in " ".join(_ours(mark).values())

        assert _wait_for(stress, HANG_S), _ours(mark)
    time.sleep(0.5)  # measuring under load
    return proc, pid


def _files(tmp: Path) -> list[Path]:
    """Files left, but the kernel load's own: it creates and unlinks one
    4 KiB file `k<thread>` over and over, and a kill may land in between."""
    return [p for p in tmp.rglob("*")
            if not p.is_dir() and not re.fullmatch(r"k\d+", p.name)]  # fmt: skip


def _next_start_sweeps(agent: Path, tmp: Path) -> None:
    p = subprocess.run([str(agent), "--load", "kernel:threads=1", "CAL-REF:repeats=10"],
                       capture_output=True, env={**os.environ, "TMPDIR": str(tmp)},
                       timeout=60, check=False)  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("how", ["sigint_host", "sigkill_agent", "sigkill_host"])
def test_nothing_of_a_loaded_run_survives(db: Path, agent: Path, tmp_path: Path, how: str) -> None:
    mark = uuid.uuid4().hex
    tmp = tmp_path / "tmp"  # the run's TMPDIR
    tmp.mkdir()
    proc, agent_pid = _start(tmp, mark)
    before = _ours(mark)
    assert agent_pid in before
    # A load thread in an fsync behind a slow disk dies only once it
    # returns (over 20 s here under stress-ng's hdd writer): the host's
    # pipes, which the agent holds too, close only then (30 s were crossed
    # on a fresh Debian 12 chroot, the host killed, 2026-11-27).
    try:
        if how == "sigint_host":
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=HANG_S)
            assert proc.returncode == 130
        elif how == "sigkill_agent":
            os.kill(agent_pid, signal.SIGKILL)
            proc.communicate(timeout=HANG_S)  # the host notices and ends
        else:
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=HANG_S)
        assert _wait_for(lambda: not _ours(mark), HANG_S), (before, _ours(mark))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert _files(tmp) == []
    _next_start_sweeps(agent, tmp)
