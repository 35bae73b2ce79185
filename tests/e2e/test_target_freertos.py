"""The FreeRTOS firmware on QEMU's mps2-an385 board (a real qemu-system-arm,
started by each test), through the one measure path every target uses.

The quick suite runs there and every case ends passed, failed, skipped or
unsupported (with the reason), never error; the behaviour checks hold on
FreeRTOS; under -icount the same firmware gives the same figures twice; a
run stopped or timed out leaves no QEMU behind; and a Linux run and a
FreeRTOS run compare case by case, a case one side could not do shown as
such, never as a zero.
"""

from __future__ import annotations

import io
import os
import re
import time
from pathlib import Path

import pytest
import tools
from boards import measure_board, quick_suite, quick_suite_args
from rich.console import Console

from rtbench import identity
from rtbench.analysis.compare import compare_runs
from rtbench.commands.analysis import _units
from rtbench.machine.build import ensure_agent
from rtbench.model import Run
from rtbench.reports.comparison import comparison_view
from rtbench.reports.figures import comparison_table
from rtbench.reports.tables import print_table
from rtbench.run.measure import measure, plan_for
from rtbench.targets import resolve
from rtbench.targets.local import LocalTarget
from rtbench.targets.qemu_board import BoardTarget
from rtbench.transports import TransportError
from rtbench.transports.board import BoardTransport

SPEC = "qemu:freertos-mps2-an385"
# The behaviour checks of issue 10: each must pass on FreeRTOS.
BEHAVIOUR = {
    "SEM-B-REL": {"release_order"},
    "MUT-B-PI": {"control", "pi"},
    "THR-B-NEW": {"lower_waits", "equal_tail", "equal_runs_on_yield", "higher_preempts"},
    "SEM-B-LCK": {"take_until_zero", "give_increments", "blocks_at_zero", "give_wakes_waiter",
                  "waiter_consumes"},
    "THR-LOCK": {"lock_holds"},  # vTaskSuspendAll: a scheduler lock POSIX has not
}  # fmt: skip

pytestmark = pytest.mark.tools("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi")

# Two run identities whose CRCs take different instruction counts.
RUN_IDS = ("00000000-0000-4000-8000-000000000000", "ffffffff-ffff-4fff-bfff-ffffffffffff")


@pytest.fixture(scope="module")
def firmware() -> Path:
    return tools.firmware("freertos", "mps2-an385")


def _target(spec: str = SPEC) -> BoardTarget:
    target = resolve(spec)
    assert isinstance(target, BoardTarget)
    return target


def _measure(args: list[str], spec: str = SPEC) -> tuple[Run, BoardTransport]:
    return measure_board(spec, args)


def test_the_quick_suite_runs_on_freertos(firmware: Path, pytestconfig: pytest.Config) -> None:
    # The run test_board_hist.py reads too, taken once (tests/shared.py).
    args = quick_suite_args()
    run, stack_use = quick_suite(pytestconfig, SPEC)
    assert run.bye is not None and run.complete, run.issues
    assert run.hello["port"] == "freertos"
    assert [c.case for c in run.cases] == [a.split(":")[0] for a in args]
    for c in run.cases:
        assert c.outcome in ("passed", "failed", "skipped", "unsupported"), (c.case, c.outcome)
        if c.outcome in ("skipped", "unsupported"):
            assert c.reason, c.case
        elif c.outcome == "passed":
            assert c.series or c.checks, f"{c.case} passed with nothing measured"
    checks = {(c.case, k.name): k.verdict for c in run.cases for k in c.checks}
    for case, names in BEHAVIOUR.items():
        for name in names:
            assert checks.get((case, name)) == "pass", (case, name, checks.get((case, name)))
    # A series keeps every sample up to max_samples: what it drops is past
    # that bound, never a streamed chunk's overflow (CAL-TIMER once dropped
    # 49,567 of its 99,999 reads on this board, its blocks of 127 deltas
    # against a buffer of 128 drained only when full).
    keep = run.hello["params"]["max_samples"]
    for c in run.cases:
        for s in c.series:
            if s.samples is None and not s.holes:  # a histogram-only series (NOISE-OS loop)
                continue
            kept = 0 if s.samples is None else len(s.samples)
            assert s.holes == 0 and kept + s.dropped == s.n, (c.case, s.label)
            assert s.dropped == 0 or kept == keep, (c.case, s.label, kept, s.dropped)
    # What the run stores about its target.
    meta = run.machine["target"]
    assert meta["os"] == "FreeRTOS" and meta["os_version"] == "V11.3.0"
    assert (meta["board"], meta["cpu"], meta["tick_rate_hz"]) == ("mps2-an385", "cortex-m3", 1000)
    assert meta["emulated"] is True and meta["time"] == "icount" and meta["icount_shift"] == 5
    assert run.emulated and "not a hardware latency" in run.emulated_time
    # The firmware reports its tasks' stack use after its last record.
    assert "rtb-main" in stack_use
    # Known answer: CLK-DUR finds the tick the board is configured with
    # (configTICK_RATE_HZ 1000), every slot of it, and nothing else.
    clk = run.case("CLK-DUR")
    assert clk is not None
    period, tick, other = (clk.find(n) for n in ("tick_period", "tick", "other"))
    assert period is not None and period.max == 1_000_000, period
    assert tick is not None and tick.n > 100 and other is not None and other.n == 0


def test_icount_gives_the_same_figures_twice(
    firmware: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check of the emulated target's determinism, not of FreeRTOS: the
    same firmware, two runs with two run identities on purpose (the hello's
    CRC over the id takes a data-dependent number of instructions; every
    case starts on the tick, so nothing of it reaches the figures)."""

    def figures(run_id: str) -> list[tuple[object, ...]]:
        monkeypatch.setattr(identity, "new", lambda: run_id)
        run, _ = _measure(["SEM-SHF:duration_ms=100"])
        assert run.uuid == run_id
        (case,) = run.cases
        assert case.outcome == "passed" and case.series
        out: list[tuple[object, ...]] = []
        for s in case.series:
            h = s.hist
            assert h is not None and s.n > 100
            out.append((s.name, s.n, s.min, s.max, s.sum, tuple(h.counts)))
        return out

    assert figures(RUN_IDS[0]) == figures(RUN_IDS[1])


def test_a_slow_reader_does_not_reach_the_figures(
    firmware: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs of cases that print between their measurements (CAL-TIMER's
    series before its next one, RSP-IO's scenario by scenario, IRQ-LAT
    after CAL-TIMER's output), two run identities; in the second the host
    reads nothing for a while after the hello, as a loaded host or a slow
    store does. The figures are the same: the UART never waits for the
    host. Through a pipe it did (64 KiB, then the firmware spun on the
    UART's busy flag in virtual time): a campaign's repetitions differed in
    RSP-IO's and IRQ-LAT's maxima."""
    args = ["CAL-TIMER:reads=100000:rounds=5000", "IRQ-LAT:count=2000:period_us=500",
            "RSP-IO:count=200"]  # fmt: skip
    line = BoardTransport._line

    def figures(run_id: str, stall_s: float) -> list[tuple[object, ...]]:
        stalled = [False]

        def slow_line(self: BoardTransport, raw: bytes) -> bytes | None:
            if not stalled[0] and b" hello " in raw:
                stalled[0] = True
                time.sleep(stall_s)  # on the reader: nothing is read meanwhile
            return line(self, raw)

        monkeypatch.setattr(identity, "new", lambda: run_id)
        monkeypatch.setattr(BoardTransport, "_line", slow_line)
        run, _ = _measure(args)
        assert run.uuid == run_id and stalled[0]
        out: list[tuple[object, ...]] = []
        for case in run.cases:
            assert case.outcome == "passed" and case.series, case.case
            for s in case.series:
                h = s.hist
                assert h is not None and s.n > 0
                out.append((case.case, s.name, s.point, s.n, s.min, s.max, s.sum, tuple(h.counts)))
        return out

    assert figures(RUN_IDS[0], 0.0) == figures(RUN_IDS[1], 3.0)


def test_jit_per_latency_is_the_release_delay_on_the_tick(firmware: Path) -> None:
    """Issue 20: releases are planned on the 1 ms tick and a latency runs from
    the tick, so it is the tick interrupt plus the switch, not the schedule's
    phase against the tick (915-918 us of a 1000 us period before). The
    figures are instruction-count time (-icount), the same every run, not
    the host's wall time. The interval and deviation, which never depended
    on the phase, stay the period and a few us."""
    run, _ = _measure(["JIT-PER:period_us=1000:cycles=200"])
    (case,) = run.cases
    assert case.outcome == "passed", case.checks
    lat, iv, dev = (case.find(n) for n in ("latency", "interval", "deviation"))
    assert lat is not None and iv is not None and dev is not None
    assert lat.attrs == {"release_grain_ns": 1_000_000}  # the tick was the reference
    # The board sends a full buffer of 128 samples between two releases and
    # skips the periods that took (counted in the check): no release and no
    # interval spans the sending.
    releases = next(k for k in case.checks if k.name == "releases").detail
    m = re.search(r"\((\d+) of them paused (\d+) times to send samples\)", releases)
    assert m is not None, releases
    paused, pauses = int(m[1]), int(m[2])
    assert pauses == 1 and paused >= 1, releases
    assert lat.n == 200 - paused and lat.min is not None and lat.max is not None
    assert lat.min > 0 and lat.max < 20_000, (lat.min, lat.max)
    assert iv.n == lat.n - 1 - pauses and iv.mean is not None
    assert abs(iv.mean - 1_000_000) < 1_000
    assert dev.min is not None and dev.max is not None and -5_000 <= dev.min <= dev.max <= 5_000


def test_host_time_is_recorded_as_such(firmware: Path) -> None:
    run, _ = _measure(["CAL-REF:repeats=10"], f"{SPEC}?time=host")
    meta = run.machine["target"]
    assert meta["time"] == "host" and "icount_shift" not in meta
    assert "host's load" in run.emulated_time


def _running_firmware(transport: BoardTransport) -> bool:
    return transport.proc is not None and transport.proc.poll() is None


def test_a_silent_firmware_is_stopped_and_qemu_ends(firmware: Path) -> None:
    transport = _target().transport()
    transport.idle_timeout = 1.0
    # THR-SW runs 60 s of virtual time without a record: silence.
    transport.start(["THR-SW:n=2:duration_ms=60000"])
    try:
        with pytest.raises(TransportError, match="wrote nothing"):
            for _ in transport.lines():
                pass
        assert _running_firmware(transport)
    finally:
        transport.stop()
    assert not _running_firmware(transport)


def test_a_run_stopped_mid_case_ends_qemu(firmware: Path) -> None:
    transport = _target().transport()
    transport.start(["CAL-REF:repeats=10", "THR-SW:n=2:duration_ms=60000"])
    try:
        for line in transport.lines():
            if b" begin " in line and b"THR-SW" in line:
                break
        assert _running_firmware(transport)
    finally:
        transport.stop()
    assert not _running_firmware(transport)


def test_linux_and_freertos_side_by_side(firmware: Path) -> None:
    # THR-LOCK: FreeRTOS only (POSIX has no scheduler lock); RSP-IO: a pipe
    # on Linux, the board's timer line on FreeRTOS (never paired).
    # CAL-TIMER: its cross-CPU series exist only where there are two CPUs.
    cases = ["SEM-SHF:duration_ms=100", "RSP-IO:count=20", "THR-LOCK", "CAL-TIMER"]
    local = LocalTarget("local")
    linux = measure(local.transport(ensure_agent("release")), plan_for(local, cases)).run
    freertos, _ = _measure(cases)
    linux.id, freertos.id = 1, 2
    outcome = {(r.id, c.case): c.outcome for r in (linux, freertos) for c in r.cases}
    assert outcome[(2, "RSP-IO")] == "passed"  # the board's emulated edges
    assert (outcome[(1, "THR-LOCK")], outcome[(2, "THR-LOCK")]) == ("unsupported", "passed")
    cmp = compare_runs([linux, freertos])
    # Like with like: an emulated board against this machine, no ratio, no test.
    assert cmp.note.startswith("runs of different kinds (hardware and "), cmp.note
    assert all(r.pvalue is None and set(r.ratios) == {None} for r in cmp.rows)
    shf = [r for r in cmp.rows if r.case == "SEM-SHF"]
    assert shf and all(v is not None for r in shf for v in r.values)  # paired by ID
    missing = [(r, i) for r in cmp.rows for i, v in enumerate(r.values) if v is None]
    for row, i in missing:
        run = (linux, freertos)[i]
        said = outcome.get((run.id, row.case), "not run")
        # A case that ran but made no such series is "not made", never "passed".
        assert row.absent[i] == ("not made" if said in ("passed", "failed") else said)
    rsp = [row for row in cmp.rows if row.case == "RSP-IO"]
    assert rsp and all(None in row.values for row in rsp)  # another line on each side
    if len(os.sched_getaffinity(0)) > 1:
        xcpu = [row for row in cmp.rows if row.case == "CAL-TIMER" and "xcpu" in row.label]
        assert xcpu and all(r.absent[1] == "not made" for r in xcpu)
    lock = [row for row in cmp.rows if row.case == "THR-LOCK"]
    assert lock and all(r.absent[0] == "unsupported" and r.values[1] is not None for r in lock)
    # Rendered: the word, never a zero, in the terminal and the report.
    buf = io.StringIO()
    print_table(comparison_table(cmp, _units(cmp)), Console(file=buf, width=240, color_system=None))
    text = buf.getvalue()
    for row, i in missing:
        line = next(x for x in text.splitlines() if row.label in x and row.case in x)
        assert row.absent[i] in line and " 0.000 " not in line
    view = comparison_view([linux, freertos], draw=False)
    for vr in view.rows:
        for v, why in zip(vr.values, vr.row.absent, strict=True):
            if why:
                assert v == why


# The negative controls of the behaviour checks: the portable fault layer of
# the test firmware breaks the primitive, and the check must see it.
CONTROLS = [
    ("sem_fifo=1", "SEM-B-REL", {"release_order"}),
    ("mutex_nopi=1", "MUT-B-PI:rounds=3", {"pi"}),
    ("new_prio=2", "THR-B-NEW:repeats=5", {"lower_waits", "equal_tail", "equal_runs_on_yield"}),
    ("sem_noblock=1", "SEM-B-LCK", {"blocks_at_zero", "take_until_zero"}),
    ("sched_nolock=1", "THR-LOCK", {"lock_holds"}),
]


@pytest.mark.parametrize(("fault", "case", "fails"), CONTROLS, ids=[c[0] for c in CONTROLS])
def test_negative_controls_fail_on_freertos(fault: str, case: str, fails: set[str]) -> None:
    tools.firmware("freertos", "mps2-an385", "test")
    run, _ = _measure(["--inject", fault, case], f"{SPEC}?flavor=test")
    assert run.hello["build"]["test_hooks"] is True
    (result,) = run.cases
    verdicts = {k.name: k.verdict for k in result.checks}
    assert result.outcome == "failed", verdicts
    for name in fails:
        assert verdicts.get(name) == "fail", (name, verdicts)
