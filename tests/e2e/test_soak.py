"""End-to-end: per-CPU soak runs through `rtbench run` (docs/soak.md), and
a spike caught with --break and explained from the kernel trace: the test
starts a busy SCHED_FIFO thread of known name and priority on a measured
CPU, and the stored run must name it. No timing is asserted beyond the
injected amounts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import rtbench

from rtbench.store import Store
from rtbench.trace import snapshot
from rtbench.trace.tracefs import kernel_has_tracefs, toplevel_lock

TWO_CPUS = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to measure on both"
)


def measured_cpus() -> tuple[str, list[int]]:
    """(--cpus, the CPUs it measures): `all` (every online CPU, however many
    this machine has) where the tests may use them all, else the first two
    they may use (a cpuset or taskset narrower than the machine)."""
    allowed = sorted(os.sched_getaffinity(0))
    if allowed == list(range(os.cpu_count() or 1)):
        return "all", allowed
    return ",".join(map(str, allowed[:2])), allowed[:2]


@TWO_CPUS
def test_cpus_all_with_live_figures_when_piped(db: Path, agent: Path) -> None:
    arg, cpus = measured_cpus()
    r = rtbench(
        "run", "-c", "JIT-PER", "--cpus", arg, "--duration", "6s",
        "--set", "JIT-PER.period_us=2000", "--set", "JIT-PER.load_threads=0",
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stdout + r.stderr
    first, second = cpus[:2]
    live = re.findall(
        rf"JIT-PER \d+ s of 6 s latency µs: CPU{first} cur .* \| CPU{second} cur ", r.stderr
    )
    assert len(live) >= 2, r.stderr
    with Store(db) as store:
        run = store.load(1)
    c = run.case("JIT-PER")
    assert c is not None
    assert sorted(int(s.point["cpu"]) for s in c.series if s.name == "latency") == cpus
    assert all(s.n > 0 for s in c.series)
    assert c.params["duration_ms"] == 6000
    assert not any(w.code == "truncated" for w in c.warnings)


# Spins `busy` seconds at SCHED_FIFO 95 on `cpu`, named rtb-hog, once the
# periodic tasks (threads named jit-per) of the agent that `parent` (this
# test's rtbench) started have run a while; other agents on the machine
# are not its business.
HOG = """
import ctypes, glob, os, sys, time
cpu, busy, parent = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
ctypes.CDLL(None).prctl(15, b"rtb-hog", 0, 0, 0)
os.sched_setaffinity(0, {cpu})
def periodic_tasks():
    for comm in glob.glob("/proc/[0-9]*/task/*/comm"):
        try:
            stat = open(comm.split("/task/")[0] + "/stat").read()
            ppid = stat.rsplit(")", 1)[1].split()[1]
            if ppid == parent and open(comm).read().strip() == "jit-per":
                return True
        except (OSError, IndexError):
            pass
    return False
deadline = time.monotonic() + 120
while not periodic_tasks():
    if time.monotonic() > deadline:
        sys.exit("no jit-per thread appeared")
    time.sleep(0.05)
time.sleep(1.0)
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(95))
end = time.monotonic() + busy
while time.monotonic() < end:
    pass
"""


@TWO_CPUS
@pytest.mark.root("--trace writes tracefs")
@pytest.mark.realtime
@pytest.mark.skipif(not kernel_has_tracefs(), reason="needs a kernel with tracefs")
def test_break_with_trace_names_the_busy_thread(db: Path, agent: Path) -> None:
    """A thread at priority 95 spins 120 ms on the last CPU while JIT-PER
    (priority 80) runs there; --break 50 ms (above this machine's noise)
    stops the run inside that, and the spike's attribution names the thread
    with its pid and priority."""
    arg, cpus = measured_cpus()
    cpu = max(cpus)
    with toplevel_lock(shared=True):
        before = snapshot(own_instances=False)
        run = subprocess.Popen(
            [
                sys.executable, "-m", "rtbench.cli", "run", "-c", "JIT-PER", "--cpus", arg,
                "--duration", "60s", "--trace", "--break", "50000",
                "--set", "JIT-PER.period_us=1000", "--set", "JIT-PER.load_threads=0",
            ],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        hog = subprocess.Popen([sys.executable, "-c", HOG, str(cpu), "0.12", str(run.pid)])
        try:
            out, err = run.communicate(timeout=300)
            assert hog.wait(timeout=60) == 0
        finally:
            for p in (run, hog):
                p.kill()
                p.wait()
        assert snapshot(own_instances=False) == before
    assert run.returncode in (0, 1), out + err
    with Store(db) as store:
        stored = store.load(1)
    c = stored.case("JIT-PER")
    assert c is not None
    [brk] = [w for w in c.warnings if w.code == "break"]
    assert f"on CPU {cpu}," in brk.detail, brk.detail
    [spike] = [w for w in c.warnings if w.code == "spike"]
    head = spike.detail.split("\n")[0]
    assert f"on CPU {cpu};" in head, spike.detail
    assert f"thread rtb-hog (pid {hog.pid}, real-time priority 95) held the CPU" in head, (
        spike.detail
    )
    assert "sched_switch: rtb-hog" in spike.detail
    assert any(w.code == "trace" and "flight recorder" in w.detail for w in stored.warnings)
    # The run stopped at the break, long before the 60 s.
    assert c.duration_ns < 50e9
    # `rtbench show` of the stored run shows it.
    shown = rtbench("show", "latest")
    assert shown.returncode == 0 and "rtb-hog" in shown.stdout
