"""Known answers for the background loads (agent --load).

Each kind must really run (its `load_<kind>` check passes with its work
counter; a thread that finished no unit of work in a short case on a busy
machine is a `load_idle` warning) and clean up after itself; `none` starts
nothing; a bad spec is a usage error naming what is allowed; a load that
cannot start ends the case in error with nothing left running; and a load
that should show in a case's figures does: a busy thread at a real-time
priority above the case on its CPU delays releases of JIT-PER that a
normal-priority one, with the same duty cycle, does not. No absolute time
is asserted: only counts and comparisons within one test."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import procs
import pytest

from rtbench.model import CaseResult, Check
from rtbench.stream import assemble, parse_lines

Runner = Callable[..., Any]  # conftest's run_agent -> AgentResult

KINDS = ["cpu", "memory", "kernel", "io", "irq"]
UNITS = {
    "cpu": "thousand busy-loop iterations",
    "memory": "MiB of cache lines written",
    "kernel": "system calls",
    "io": "fsync'd writes",
    "irq": "timer signals handled",
    "stress": "CPU ms used by stress-ng and its workers",
}
STRESS = shutil.which("stress-ng") is not None
# Mostly asleep, so load threads on its CPU get time too.
QUIET = "JIT-PER:period_us=1000:cycles=300:load_threads=0"
LAST = max(os.sched_getaffinity(0))  # the last CPU the tests may use (a cpuset may bar others)


def case_of(result: Any, case_id: str) -> CaseResult:
    c = result.run.case(case_id)
    assert isinstance(c, CaseResult), result.stderr
    return c


def checks(c: CaseResult, prefix: str) -> dict[str, Check]:
    return {x.name: x for x in c.checks if x.name.startswith(prefix)}


def env_with(**kw: str) -> dict[str, str]:
    return {**os.environ, **kw}


def test_every_kind_runs_counts_its_work_and_cleans_up(
    test_agent: Path, run_agent: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    spec = "mixed,stress" if STRESS else "mixed"
    r = run_agent(test_agent, ["--load", spec, QUIET, "CLK-RES:count=200"])
    errors = [(c.case, c.reason, [x for x in c.checks if x.verdict != "pass"])
              for c in r.run.cases]  # fmt: skip
    assert r.code == 0, (errors, r.stderr)
    assert r.run.hello["params"]["load"] == spec
    # one load thread per CPU the process may use (taskset, cpusets)
    assert r.run.hello["params"]["load_threads"] == len(os.sched_getaffinity(0))
    for cid in ("JIT-PER", "CLK-RES"):
        c = case_of(r, cid)
        assert c.params["load"] == spec
        found = checks(c, "load_")
        assert set(found) == {f"load_{k}" for k in KINDS + (["stress"] if STRESS else [])}
        for name, chk in found.items():
            kind = name.removeprefix("load_")
            m = re.search(rf": (\d+) {re.escape(UNITS[kind])}", chk.detail)
            assert m, chk.detail
            if kind != "stress":  # one thread per CPU, at normal priority, by default
                n = len(os.sched_getaffinity(0))
                assert chk.detail.startswith(f"{n} thread{'s' if n != 1 else ''} (SCHED_OTHER)")
            # The load ran; a thread that did no unit of work in the case
            # (another session's real-time task held its CPU, or a busy
            # machine's fsync outlasted the case) is a warning beside the
            # pass, never an error.
            assert chk.verdict == "pass", chk
            least = re.search(r"the least busy thread (\d+)", chk.detail)
            if int(m.group(1)) == 0 or (least is not None and int(least.group(1)) == 0):
                assert any(w.code == "load_idle" for w in c.warnings), chk
    assert list(tmp_path.iterdir()) == []  # no file or folder left behind


def _tasks(pid: int) -> list[tuple[str, int, int]]:
    """(comm, policy, rt_priority) of each thread of `pid`."""
    return [(t.comm, t.policy, t.rt_priority) for t in procs.threads(pid)]


def _watch_threads(exe: Path, args: list[str]) -> tuple[int, set[tuple[str, int, int]]]:
    """Runs the agent and samples its threads; (exit code, threads seen)."""
    proc = subprocess.Popen([str(exe), *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    seen: set[tuple[str, int, int]] = set()
    while proc.poll() is None:
        with contextlib.suppress(OSError):
            seen.update(_tasks(proc.pid))
        time.sleep(0.005)
    return proc.wait(), seen


@pytest.mark.realtime  # a load at prio=5 is SCHED_FIFO only where that is permitted
def test_none_starts_nothing_and_threads_get_the_policy_asked_for(agent: Path) -> None:
    code, none = _watch_threads(agent, ["--load", "none", QUIET])
    assert code == 0 and none
    assert not any(comm.startswith("load-") for comm, _, _ in none), none
    code, loaded = _watch_threads(agent, ["--load", "cpu:threads=3,kernel:prio=5:threads=1",
                                          QUIET])  # fmt: skip
    assert code == 0
    cpu = {t for t in loaded if t[0] == "load-cpu"}
    kernel = {t for t in loaded if t[0] == "load-kernel"}
    assert cpu == {("load-cpu", 0, 0)}  # SCHED_OTHER (threads share a name: one entry)
    assert kernel == {("load-kernel", 1, 5)}  # SCHED_FIFO 5, as asked


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--load", "cpuu"], r"unknown load kind 'cpuu' \(kinds: none, cpu, memory, kernel, io, "
                             r"irq, stress\[:ARGS\], mixed"),
        (["--load", "cpu:spin=3"], r"load cpu has no parameter 'spin' \(it has: threads, prio, "
                                   r"busy_us, idle_us\)"),
        (["--load", "io:kb=0"], r"io: kb=0 is out of range 1\.\.16384"),
        (["--load", "cpu:prio=90:idle_us=0"], r"would hold its CPUs for good"),
        (["--load", "mixed:busy_us=5"], r"mixed takes only threads= and prio="),
        (["--load", "none,cpu"], r"none cannot be combined"),
        (["--load", "cpu,mixed"], r"load cpu is listed twice"),
        (["--load", "cpu,"], r"ends with a comma"),
        (["--load", "cpu", "--load-cpus", "0-4096"], r"--load-cpus '0-4096'"),
        (["--load", "cpu", "--load-threads", "65"], r"--load-threads must be"),
    ],
)  # fmt: skip
def test_bad_load_specs_are_usage_errors(
    agent: Path, run_agent: Runner, args: list[str], message: str
) -> None:
    r = run_agent(agent, [*args, QUIET])
    assert r.code == 2
    assert re.search(message, r.stderr), r.stderr
    assert r.parsed.records == []  # nothing ran


def test_stress_without_stress_ng_is_a_clear_error(agent: Path, tmp_path: Path) -> None:
    p = subprocess.run([str(agent), "--load", "stress", QUIET], capture_output=True, text=True,
                       env=env_with(PATH=str(tmp_path)), check=False)  # fmt: skip
    assert p.returncode == 2
    assert "stress-ng is not installed" in p.stderr and p.stdout == ""


@pytest.mark.tools("stress-ng")
def test_stress_options_are_checked_before_measuring(agent: Path, run_agent: Runner) -> None:
    r = run_agent(agent, ["--load", "stress:--no-such-stressor 1", QUIET])
    assert r.code == 2 and "stress-ng refused the options" in r.stderr


def test_a_load_that_cannot_start_ends_the_case_in_error_and_leaves_nothing(
    test_agent: Path, tmp_path: Path
) -> None:
    # io cannot create its file there; cpu, started first, must be stopped.
    missing = tmp_path / "missing"
    p = subprocess.run([str(test_agent), "--load", "cpu,io", QUIET, "CLK-RES:count=10"],
                       capture_output=True, env=env_with(TMPDIR=str(missing)),
                       timeout=300, check=False)  # fmt: skip
    parsed = parse_lines(p.stdout.splitlines())
    run = assemble(parsed.records, parsed.issues, parsed.log)
    assert p.returncode == 3, p.stderr  # not a sanitizer's (leak) exit
    assert [c.outcome for c in run.cases] == ["error", "error"]
    for c in run.cases:
        # The reason names which load and why, as the check does.
        assert c.reason.startswith("the background load could not start: load io: cannot write")
        assert [(x.name, x.verdict) for x in c.checks] == [("load", "error"),
                                                           ("load_cpu", "pass")]  # fmt: skip
        assert c.checks[0].detail.startswith("load io: cannot write a file in")
        assert not c.series  # the case never ran


# A stop's budget is the case's: CAL-REF's ten repeats with 1 s of slack
# give about 1 s (time enough for a thread of a loaded machine to reach its
# last I/O); each io thread is held 2.5 s as it ends.
HOLD = ["--deadline-slack", "1000", "--load", "io:threads=2", "CAL-REF:repeats=10"]


@pytest.mark.parametrize("where", ["io_hold", "load_hold"])
def test_a_thread_held_in_its_io_stops_late_one_held_elsewhere_is_an_error(
    test_agent: Path, tmp_path: Path, where: str
) -> None:
    # A slow disk (an fsync behind stress-ng's writer once took over 20 s)
    # is the machine's: the case keeps its result, with a warning naming how
    # late. A thread held outside its I/O is stuck in rtbench: an error.
    p = subprocess.run([str(test_agent), "--inject", f"{where}=2500000000", *HOLD],
                       capture_output=True, env=env_with(TMPDIR=str(tmp_path)),
                       timeout=300, check=False)  # fmt: skip
    parsed = parse_lines(p.stdout.splitlines())
    run = assemble(parsed.records, parsed.issues, parsed.log)
    (c,) = run.cases
    load = checks(c, "load_io")["load_io"]
    late = [w.detail for w in c.warnings if w.code == "load_stop_late"]
    if where == "io_hold":
        assert p.returncode == 0 and c.outcome == "passed", (p.stderr, c.checks)
        assert load.verdict == "pass"
        (detail,) = late
        m = re.search(r"a thread ended (\d+\.\d) s past the case's budget", detail)
        # Held 2.5 s from the stop, the budget 1 s: 1.5 s late at least.
        assert m and float(m.group(1)) >= 1.4, detail
    else:
        assert p.returncode == 3, p.stderr  # not a sanitizer's exit
        assert c.outcome == "error" and load.verdict == "error", c.checks
        assert load.detail.endswith("a load thread did not stop") and not late
    assert list(tmp_path.iterdir()) == []


def test_a_killed_agents_leftovers_are_removed_by_the_next_start(
    agent: Path, run_agent: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = subprocess.Popen(["true"])  # a pid whose process is gone
    gone.wait()
    stale = tmp_path / f"rtbench-load-{gone.pid}-abc123"
    stale.mkdir()
    (stale / "k0").write_text("x")
    live = tmp_path / f"rtbench-load-{os.getpid()}-def456"  # its owner still runs
    live.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    r = run_agent(agent, ["--load", "io:threads=1", QUIET])
    assert r.code == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name]


def _releases_over(exe: Path, run_agent: Runner, load: str, over_ns: int) -> tuple[int, int]:
    jit = "JIT-PER:period_us=1000:cycles=400:load_threads=0"
    r = run_agent(exe, ["--cpu", str(LAST), "--load-cpus", str(LAST), "--load-threads", "1",
                        "--load", load, jit])  # fmt: skip
    assert r.code in (0, 1) and r.run.bye is not None, r.stderr  # measured
    s = case_of(r, "JIT-PER").find("latency")
    assert s is not None and s.samples is not None
    return int(np.count_nonzero(s.samples >= over_ns)), len(s.samples)


@pytest.mark.realtime  # the load must preempt the case
def test_a_real_time_cpu_load_above_the_case_shows_in_its_figures(
    agent: Path, run_agent: Runner
) -> None:
    # 3 ms busy in every 6: about a third of the releases fall in a busy
    # stretch with more than 1 ms of it left, an effect far larger than a
    # noisy machine's everyday wake-up latency (its rare stalls aside).
    duty = "busy_us=3000:idle_us=3000"
    rt, n = _releases_over(agent, run_agent, f"cpu:prio=90:{duty}", 1_000_000)
    normal, _ = _releases_over(agent, run_agent, f"cpu:{duty}", 1_000_000)
    none, _ = _releases_over(agent, run_agent, "none", 1_000_000)
    assert rt >= n // 10, (rt, normal, none)
    # The case preempts a normal-priority load at once; nothing preempts it
    # when the load has the higher real-time priority.
    assert rt > 2 * max(normal, none), (rt, normal, none)
