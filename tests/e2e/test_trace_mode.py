"""End-to-end: `rtbench run --trace` on this machine, for real (root and a
kernel with tracefs; skipped otherwise). The kernel series must appear, and
every tracing setting must be back to what it was afterwards: after a
normal run, after Ctrl-C (SIGINT) or SIGTERM in the middle of a case, and
after the agent crashed. No timing is asserted."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import rtbench
from procs import children, threads

from rtbench.trace import snapshot
from rtbench.trace.tracefs import TRACEFS, kernel_has_tracefs, toplevel_lock

pytestmark = [
    pytest.mark.root("the kernel-trace mode writes tracefs"),
    pytest.mark.skipif(not kernel_has_tracefs(), reason="needs a kernel with tracefs"),
]

FAST = ["-c", "CAL-REF", "-c", "SEM-SHF", "--set", "SEM-SHF.duration_ms=100"]


@pytest.fixture(autouse=True)
def still_top_level() -> Iterator[None]:
    """No top-level recording (another rtbench's test on this machine) may
    change the settings between a test's before and after."""
    with toplevel_lock(shared=True):
        yield


def settings() -> dict[str, str]:
    # rtbench's own instances are checked by name: other runs on the same
    # machine come and go with theirs.
    return snapshot(own_instances=False)


def test_trace_run_adds_kernel_series_and_restores(db: Path, agent: Path) -> None:
    before = settings()
    r = rtbench("run", "--trace", *FAST)
    # passed or failed (a shared machine may starve SEM-SHF), never an error
    assert r.returncode in (0, 1), r.stdout + r.stderr
    assert settings() == before
    for pattern in (
        r"SEM-SHF\s+│ kernel\.local_timer",
        r"SEM-SHF\s+│ kernel\.wakeup ",
        r"SEM-SHF\s+│ kernel\.irq",
        r"CAL-REF\s+│ kernel\.local_timer",
        r"trace SEM-SHF: kernel events from tracefs \(instance rtbench-\d+; trace_clock \w+",
    ):
        assert re.search(pattern, r.stdout), (pattern, r.stdout)
    if "SEM-SHF passed" in r.stdout:
        # The kernel saw the agent's wake-ups: SEM-SHF's B thread is woken
        # once a sample, so kernel.wakeup has at least as many.
        row = r"SEM-SHF\s+│ (give_to_run|kernel\.wakeup)\s+│ \S+\s+│\s+(\d+)"
        rows = {m[1]: int(m[2]) for m in re.finditer(row, r.stdout)}
        assert rows["kernel.wakeup"] >= rows["give_to_run"] > 0, rows
    # stored with the run
    shown = rtbench("show", "latest")
    assert shown.returncode == 0 and "kernel.wakeup" in shown.stdout


def test_without_trace_nothing_is_touched(db: Path, agent: Path) -> None:
    before = settings()
    r = rtbench("run", "-c", "CAL-REF")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kernel." not in r.stdout and settings() == before


def _child_thread_named(parent: int, comm: str) -> bool:
    """A child process of `parent` (its agent) has a thread named `comm`."""
    return any(t.comm == comm for child in children(parent) for t in threads(child))


def _journaled_begin(db: Path, case: str) -> bool:
    """The host has parsed `case`'s begin record: it journals each line
    (beside the store) once parsed (rtbench.run.measure)."""
    begin = b' begin {"case":"' + case.encode() + b'"'
    for journal in (db.parent / f"{db.name}.journals").glob("*.journal"):
        try:
            if begin in journal.read_bytes():
                return True
        except OSError:
            continue  # stored and removed meanwhile
    return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_mid_run_restores(db: Path, agent: Path, sig: signal.Signals) -> None:
    before = settings()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rtbench.cli", "run", "--trace", "-c", "SEM-SHF",
         "--set", "SEM-SHF.duration_ms=20000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    instance = TRACEFS / "instances" / f"rtbench-{proc.pid}"
    try:
        deadline = time.monotonic() + 60
        while not instance.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "tracing never started"
            time.sleep(0.05)
        assert instance.name in snapshot()["instances"]  # so the check after can fail
        # Inside SEM-SHF: its threads run. Waited for, not slept for: a busy
        # machine takes its time to get there.
        deadline = time.monotonic() + 120
        while not _child_thread_named(proc.pid, "shf-b"):
            assert proc.poll() is None and time.monotonic() < deadline, "SEM-SHF never began"
            time.sleep(0.05)
        # And the host has read SEM-SHF's begin: the agent wrote it before its
        # threads, but a loaded host reads behind the agent, and what it had
        # not read when the signal lands is not in the run (no case, no row).
        while not _journaled_begin(db, "SEM-SHF"):
            assert proc.poll() is None and time.monotonic() < deadline, "no begin read"
            time.sleep(0.05)
        proc.send_signal(sig)
        out, errs = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # 128 + the signal, as a shell reports it (Ctrl-C 130, SIGTERM 143)
    assert proc.returncode == 128 + sig, out + errs
    assert settings() == before
    assert not instance.exists()
    assert "what was measured is stored" in errs
    # the cut case keeps its kernel split, and says it was cut
    assert re.search(r"SEM-SHF\s+│ kernel\.wakeup ", out), out
    assert "no end marker" in out


def test_agent_crash_restores(db: Path, agent: Path, tmp_path: Path) -> None:
    """An agent killed (SIGKILL) in the middle of a case."""
    crashing = tmp_path / "crashing-agent"
    crashing.write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" --list "*) exec "{agent}" --list ;; esac\n'
        f'"{agent}" "$@" &\n'
        "pid=$!\n"
        "sleep 1\n"
        "kill -KILL $pid\n"
        "wait $pid\n"
        "exit 137\n"
    )
    crashing.chmod(0o755)
    before = settings()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rtbench.cli", "run", "--trace", "--agent", str(crashing),
         "-c", "SEM-SHF", "--set", "SEM-SHF.duration_ms=20000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    out, errs = proc.communicate(timeout=300)
    assert proc.returncode == 2, out + errs
    assert "Stream problems" in out and "SEM-SHF" in out
    assert settings() == before
    assert not (TRACEFS / "instances" / f"rtbench-{proc.pid}").exists()
