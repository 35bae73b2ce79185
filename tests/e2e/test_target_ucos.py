"""The uC/OS firmwares on QEMU's mps2-an385 board (a real qemu-system-arm,
started by each test), through the one measure path every target uses, as
tests/e2e/test_target_freertos.py does for FreeRTOS.

Each kernel runs the quick suite, every case ending passed, failed, skipped
or unsupported with the reason, never error; its behaviour checks pass and
the injected faults make them fail; `--list` and the stream parse; under
-icount the same firmware gives the same figures twice; and a run records
what the firmware is (a kernel copy edited in place: test_patched_kernel.py).
"""

from __future__ import annotations

from typing import cast

import pytest
import tools
from boards import measure_board

from rtbench import catalogue, identity
from rtbench.model import CaseResult, Run
from rtbench.run.suites import SUITES, Planned
from rtbench.targets import resolve
from rtbench.targets.qemu_board import BoardTarget
from rtbench.transports.board import BoardTransport

BOARD = "mps2-an385"
# port -> (OS name, kernel version, the behaviour checks that must pass)
KERNELS = {
    "ucos3": ("uC/OS-III", "v3.08.02", {
        "SEM-B-REL": {"release_order"},
        "MUT-B-PI": {"control", "pi"},
        "MUT-ARC": {"inheritance"},
        "THR-B-NEW": {"lower_waits", "equal_tail", "equal_runs_on_yield", "higher_preempts"},
        "SEM-B-LCK": {"take_until_zero", "give_increments", "blocks_at_zero",
                      "give_wakes_waiter", "waiter_consumes"},
        "THR-LOCK": {"lock_holds"},
    }),
    # One task per priority, a priority ceiling for the mutex: no check of
    # equal priorities, and MUT-ARC's check names the ceiling.
    "ucos2": ("uC/OS-II", "v2.93.01", {
        "SEM-B-REL": {"release_order"},
        "MUT-B-PI": {"control", "pi"},
        "MUT-ARC": {"ceiling"},
        "THR-B-NEW": {"lower_waits", "higher_preempts"},
        "SEM-B-LCK": {"take_until_zero", "give_increments", "blocks_at_zero",
                      "give_wakes_waiter", "waiter_consumes"},
        "THR-LOCK": {"lock_holds"},
    }),
}  # fmt: skip
# What uC/OS-II cannot run as specified: unsupported with the kernel's
# reason, never an error and never emulated into a pass.
ONE_TASK_PER_PRIORITY = {"THR-SW", "THR-CTX", "THR-B-RR", "TM-COOP"}
LOADS_SHARE_A_PRIORITY = {"THR-PRE", "IRQ-RSP", "JIT-PER"}

pytestmark = pytest.mark.tools("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi")

# Two run identities whose CRCs take different instruction counts.
RUN_IDS = ("00000000-0000-4000-8000-000000000000", "ffffffff-ffff-4fff-bfff-ffffffffffff")


def _spec(port: str, query: str = "") -> str:
    return f"qemu:{port}-{BOARD}" + (f"?{query}" if query else "")


def _measure(args: list[str], spec: str) -> tuple[Run, BoardTransport]:
    return measure_board(spec, args)


@pytest.mark.parametrize("port", sorted(KERNELS))
def test_the_quick_suite_runs(port: str) -> None:
    os_name, version, behaviour = KERNELS[port]
    tools.firmware(port, BOARD)
    args = [Planned(c, dict(p)).agent_arg() for c, p in SUITES["quick"].items()]
    run, transport = _measure(args, _spec(port))
    assert run.bye is not None and run.complete, run.issues
    assert run.hello["port"] == port
    assert [c.case for c in run.cases] == [a.split(":")[0] for a in args]
    for c in run.cases:
        assert c.outcome in ("passed", "failed", "skipped", "unsupported"), (c.case, c.outcome)
        if c.outcome in ("skipped", "unsupported"):
            assert c.reason, c.case
        elif c.outcome == "passed":
            assert c.series or c.checks, f"{c.case} passed with nothing measured"
    checks = {(c.case, k.name): k.verdict for c in run.cases for k in c.checks}
    for case, names in behaviour.items():
        for name in names:
            assert checks.get((case, name)) == "pass", (case, name, checks.get((case, name)))
    if port == "ucos2":
        outcome = {c.case: c for c in run.cases}
        for case in ONE_TASK_PER_PRIORITY | LOADS_SHARE_A_PRIORITY:
            assert outcome[case].outcome == "unsupported", (case, outcome[case].outcome)
            assert "one task per priority" in outcome[case].reason, outcome[case].reason
        skipped = {k.name: k for k in outcome["THR-B-NEW"].checks if k.verdict == "skip"}
        assert set(skipped) == {"equal_tail", "equal_runs_on_yield"}
        # The mutex cases say which protocol avoided the inversion.
        for case in ("MUT-B-PI", "MUT-ARC"):
            text = " ".join(k.detail for k in outcome[case].checks)
            assert "priority ceiling" in text and "inheritance" not in text, text
    else:
        pi = next(k for k in cast(CaseResult, run.case("MUT-B-PI")).checks if k.name == "pi")
        assert "priority inheritance" in pi.detail
    meta = run.machine["target"]
    assert (meta["os"], meta["os_version"], meta["port"]) == (os_name, version, port)
    assert (meta["kernel"], meta["kernel_version"]) == (os_name, version)
    assert len(meta["kernel_digest"]) == 64 and len(meta["firmware_sha256"]) == 64
    assert (meta["board"], meta["tick_rate_hz"]) == (BOARD, 1000)
    assert "rtb-main" in transport.stack_use()
    # Known answer: CLK-DUR finds the kernel's 1 kHz tick and nothing else.
    clk = run.case("CLK-DUR")
    assert clk is not None
    period, tick, other = (clk.find(n) for n in ("tick_period", "tick", "other"))
    assert period is not None and period.max == 1_000_000, period
    assert tick is not None and tick.n > 100 and other is not None and other.n == 0
    # Known answer: IRQ-TLT's events keep one phase against the tick wherever
    # the case runs, so alone it gives the figures it gives after the suite's
    # 25 cases. Its phase once followed the instructions its setup took:
    # uC/OS-II's timer_to_thread read 11.76 us alone and 16.00 in the suite,
    # the tick's handler inside every other sample.
    # IRQ-LAT's timer grid too: it started where its setup ended, and when
    # the board's stacks shrank uC/OS-II's timer_latency read 12.76-16.36 us
    # in the suite (uC/OS-III: 6.04 and 10.88, the tick in every other
    # sample), 6.04 flat before.
    tlt = next(a for a in args if a.startswith("IRQ-TLT:"))
    lat = next(a for a in args if a.startswith("IRQ-LAT:"))
    alone, _ = _measure([lat, tlt], _spec(port))
    for case, name in (
        ("IRQ-TLT", "timer_to_thread"),
        ("IRQ-TLT", "raised_to_thread"),
        ("IRQ-LAT", "timer_latency"),
    ):
        in_suite, by_itself = (cast(CaseResult, r.case(case)).find(name) for r in (run, alone))
        assert in_suite is not None and by_itself is not None, name
        ratio = (in_suite.sum / in_suite.n) / (by_itself.sum / by_itself.n)
        assert 0.98 < ratio < 1.02, (name, in_suite, by_itself)
        worst_ratio = cast(int, in_suite.max) / cast(int, by_itself.max)
        assert 0.95 < worst_ratio < 1.05, (name, in_suite.max, by_itself.max)


@pytest.mark.parametrize("port", sorted(KERNELS))
def test_the_case_list_parses(port: str) -> None:
    tools.firmware(port, BOARD)
    target = resolve(_spec(port))
    assert isinstance(target, BoardTarget)
    transport = target.transport()
    try:
        transport.start(["--list"])
        for _ in transport.lines():
            pass
    finally:
        status = transport.stop()
    assert status == 0, transport.diagnostics()
    listed = catalogue.parse_list("\n".join(n for n in transport.notes if n.startswith("{")))
    assert set(SUITES["quick"]) <= set(listed)
    assert set(listed) == set(catalogue.posix_cases())  # one case table for every port


@pytest.mark.parametrize("port", sorted(KERNELS))
def test_icount_gives_the_same_figures_twice(port: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two run identities on purpose: the hello's CRC over the id takes a
    # data-dependent number of instructions, and every case must still start
    # at the same instruction against the tick (uC/OS-II's idle loop once
    # held the tick back by a phase this set: SEM-SHF moved by 40 ns steps).
    tools.firmware(port, BOARD)

    def figures(run_id: str) -> list[tuple[object, ...]]:
        monkeypatch.setattr(identity, "new", lambda: run_id)
        run, _ = _measure(["SEM-SHF:duration_ms=100", "IRQ-LAT:count=200", "MUT-ARC"], _spec(port))
        assert run.uuid == run_id
        out: list[tuple[object, ...]] = []
        for case in run.cases:
            assert case.outcome == "passed" and case.series, case.case
            for s in case.series:
                h = s.hist
                assert h is not None and s.n > 100
                out.append((case.case, s.name, s.n, s.min, s.max, s.sum, tuple(h.counts)))
        return out

    assert figures(RUN_IDS[0]) == figures(RUN_IDS[1])


# The negative controls of the behaviour checks: the portable fault layer of
# the test firmware breaks the primitive, and the check must see it.
CONTROLS = [
    ("sem_fifo=1", "SEM-B-REL", {"release_order"}),
    ("mutex_nopi=1", "MUT-B-PI:rounds=3", {"pi"}),
    ("new_prio=2", "THR-B-NEW:repeats=5", {"lower_waits", "equal_tail", "equal_runs_on_yield"}),
    ("sem_noblock=1", "SEM-B-LCK", {"blocks_at_zero", "take_until_zero"}),
    ("sched_nolock=1", "THR-LOCK", {"lock_holds"}),
]


# uC/OS-II: no inheritance to remove (mutex_nopi), and THR-B-NEW's
# equal-priority checks do not run there.
PORT_CONTROLS = [("ucos3", *c) for c in CONTROLS] + [
    ("ucos2", f, c, fails - {"equal_tail", "equal_runs_on_yield"})
    for f, c, fails in CONTROLS
    if f != "mutex_nopi=1"
]


@pytest.mark.parametrize(
    ("port", "fault", "case", "fails"), PORT_CONTROLS, ids=[f"{c[0]}-{c[1]}" for c in PORT_CONTROLS]
)
def test_negative_controls_fail(port: str, fault: str, case: str, fails: set[str]) -> None:
    tools.firmware(port, BOARD, "test")
    run, _ = _measure(["--inject", fault, case], _spec(port, "flavor=test"))
    assert run.hello["build"]["test_hooks"] is True
    (result,) = run.cases
    verdicts = {k.name: k.verdict for k in result.checks}
    assert result.outcome == "failed", verdicts
    for name in fails:
        assert verdicts.get(name) == "fail", (name, verdicts)


def test_ucos2_more_threads_than_the_board_holds_is_skipped_not_measured_with_fewer() -> None:
    # A point that needs more threads at once than the board's 64 KiB holds
    # (RTB_CASE_THREADS, 16 beside the agent's; uC/OS-II's static task
    # table has 40 slots) is skipped with the reason before any thread is
    # made, never measured with fewer waiters than asked.
    tools.firmware("ucos2", BOARD)
    run, _ = _measure(["SEM-ARC:waiters=48:rounds=2"], _spec("ucos2"))
    (result,) = run.cases
    checks = {k.name: k for k in result.checks}
    assert result.outcome == "skipped", (result.outcome, checks)
    detail = checks["threads"].detail
    assert checks["threads"].verdict == "skip" and "W=48: needs 48 threads" in detail, detail
    assert "RTB_CASE_THREADS" in detail and result.reason == detail
    assert all(s.n == 0 for s in result.series), "measured with fewer waiters than asked"
