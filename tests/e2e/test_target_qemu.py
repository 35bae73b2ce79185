"""QEMU targets against a real QEMU (TCG) booting Debian's kernel packages.

The tests fetch the kernels themselves (`rtbench kernel fetch`'s code, into
the user's cache: a second run reuses them) and boot one guest per run:
the PREEMPT_RT kernel and the generic one each run two short cases, and
what is stored is the guest's kernel, not this machine's. A guest killed
mid-run and a run stopped by Ctrl-C keep the finished cases, are marked
incomplete and leave no QEMU behind.
"""

from __future__ import annotations

import os
import platform
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import guests
import pytest
import tools
from guests import guest_run, qemu_processes

from rtbench.model import CaseResult, Run
from rtbench.run.session import Interrupted, StreamProgress, collect
from rtbench.store import Store
from rtbench.stream import Record
from rtbench.targets import kernels, resolve
from rtbench.targets.qemu import QemuTarget, probe_kvm
from rtbench.transports.qemu import QemuTransport

pytestmark = pytest.mark.tools(*tools.qemu_guest())

CASES = guests.CASES
# Long enough that a guest stopped after the first case is stopped inside it.
LONG_SECOND = ["CAL-REF:repeats=10", "THR-SW:n=2:duration_ms=60000"]


@pytest.fixture(scope="module")
def fetched() -> dict[str, kernels.Kernel]:
    return {name: tools.guest_kernel(name) for name in ("debian-rt", "debian-generic")}


def _target(spec: str) -> QemuTarget:
    target = resolve(spec)
    assert isinstance(target, QemuTarget)
    return target


def _transport(spec: str) -> Iterator[QemuTransport]:
    transport = _target(spec).transport()
    try:
        yield transport
    finally:
        transport.stop()
        assert transport.run_dir and not qemu_processes(transport.run_dir)


@pytest.fixture
def rt(fetched: dict[str, kernels.Kernel]) -> Iterator[QemuTransport]:
    yield from _transport("qemu:debian-rt?accel=tcg")


def _store_and_read_kernel(run: Run, tmp_path: Path) -> str:
    with Store(tmp_path / "runs.sqlite") as store:
        run_id = store.save(run)
        (summary,) = [r for r in store.list_runs() if r.id == run_id]
        assert store.load(run_id).hello["os"]["release"] == summary.kernel
    return summary.kernel


def test_fetch_records_the_release(fetched: dict[str, kernels.Kernel]) -> None:
    rt, generic = fetched["debian-rt"], fetched["debian-generic"]
    assert rt.image.is_file() and generic.image.is_file()
    assert rt.release.endswith("-rt-amd64") and "-rt" not in generic.release
    # A second fetch of the same package version is the cached one.
    assert kernels.fetch("debian-rt") == rt


# The two kernels' runs (CASES, and JIT-PER beside in the generic one):
# each booted once for the whole test run, and read by
# tests/e2e/test_guest_probe.py too (tests/guests.py).
def test_rt_kernel_run_stores_the_guests_kernel(
    fetched: dict[str, kernels.Kernel], tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    guest = guest_run(pytestconfig, *guests.RT)
    run = guest.run
    assert run.complete and [c.case for c in run.cases] == ["CAL-REF", "SYS-CALL"]
    assert all(c.outcome == "passed" for c in run.cases), [(c.case, c.reason) for c in run.cases]
    os_info = run.hello["os"]
    assert os_info["release"] == fetched["debian-rt"].release != platform.release()
    assert os_info["preempt"] == "PREEMPT_RT"
    # The guest's own command line and clocksource, read in the guest.
    assert "tsc=reliable" in os_info["cmdline"] and os_info["clocksource"]
    assert run.hello["realtime"]["ok"] is True  # the agent is root in its guest
    assert _store_and_read_kernel(run, tmp_path) == fetched["debian-rt"].release
    assert set(guest.timings) == {"init", "first_record", "exit"}
    assert guest.timings["init"] <= guest.timings["first_record"] <= guest.timings["exit"]


def test_generic_kernel_run_with_isolated_cpu(
    fetched: dict[str, kernels.Kernel], tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    # Debian's generic 6.1 kernel has no timerlat: the run says so and goes on.
    run = guest_run(pytestconfig, *guests.GENERIC).run
    assert run.complete and [c.outcome for c in run.cases][:2] == ["passed", "passed"]
    assert not fetched["debian-generic"].timerlat
    (warning,) = [w for w in run.warnings if w.code == "timerlat"]
    assert "no timerlat tracer" in warning.detail
    jit = run.case("JIT-PER")
    assert jit is not None and jit.find("latency") is not None
    assert jit.find("kernel_thread_latency") is None
    os_info = run.hello["os"]
    release = _store_and_read_kernel(run, tmp_path)
    assert release == fetched["debian-generic"].release
    assert "-rt" not in release and release != platform.release()
    assert os_info["preempt"] != "PREEMPT_RT" and os_info["isolated_cpus"] == "1"
    assert "isolcpus=1" in os_info["cmdline"]
    assert run.hello["cpu"]["count"] == 2


@pytest.fixture
def rt_one_cpu(fetched: dict[str, kernels.Kernel]) -> Iterator[QemuTransport]:
    yield from _transport("qemu:debian-rt?accel=tcg&smp=1")


def test_rsp_io_runs_in_the_guest_with_its_stimulator(rt_one_cpu: QemuTransport) -> None:
    # rtb-stim travels in the initramfs beside the agent; /dev/pts is mounted
    # for the pseudo-terminal line. One CPU: the stimulator at SCHED_FIFO 99
    # shares it with the agent, so it must wait for answers blocked (a
    # spinning one would starve the handler: every edge lost).
    # Scenario e (the handler blocks: the pty's kernel worker is not starved).
    run = collect(rt_one_cpu, ["RSP-IO:line=0,1,2:scenario=4:count=10:timeout_ms=20000"])
    (case,) = run.cases
    assert case.outcome == "passed", [(c.name, c.detail) for c in case.checks]
    names = {c.name: c for c in case.checks}
    assert "SCHED_FIFO 99 on the measured CPU (one CPU)" in names["stimulator"].detail
    for line in ("eventfd", "pipe", "pty"):
        assert "10 edges, 10 answered" in names[f"e_{line}_edges"].detail
        rising = case.find("rising", {"scenario": "e", "line": line})
        assert rising is not None and rising.n == 5


def test_killed_guest_keeps_finished_cases(rt: QemuTransport) -> None:
    def kill_after_first_case(rec: Record, progress: StreamProgress) -> None:
        if rec.kind == "end" and progress.cases_done == 1:
            assert rt.pid is not None
            os.kill(rt.pid, signal.SIGKILL)

    run = collect(rt, LONG_SECOND, kill_after_first_case)
    assert not run.complete
    assert cast(CaseResult, run.case("CAL-REF")).outcome == "passed"
    second = run.case("THR-SW")
    assert second is None or second.outcome == "error"
    assert any("QEMU was ended by SIGKILL" in i.detail for i in run.issues), run.issues
    assert rt.proc is not None and rt.proc.poll() is not None


def test_ctrl_c_stops_the_guest(rt: QemuTransport) -> None:
    def interrupt_after_first_case(rec: Record, progress: StreamProgress) -> None:
        if rec.kind == "end" and progress.cases_done == 1:
            raise KeyboardInterrupt

    with pytest.raises(Interrupted) as caught:
        collect(rt, LONG_SECOND, interrupt_after_first_case)
    run = caught.value.run
    assert not run.complete
    assert cast(CaseResult, run.case("CAL-REF")).outcome == "passed"
    assert rt.proc is not None and rt.proc.poll() is not None
    assert not qemu_processes(rt.run_dir)


def test_every_qemu_run_is_emulated_with_its_accelerator(
    fetched: dict[str, kernels.Kernel],
) -> None:
    target = _target("qemu:debian-rt?accel=tcg&smp=1")
    target.transport()
    meta = target.metadata()
    assert target.emulated is True and target.is_local is False
    assert meta["accel"] == "tcg" and meta["machine"] == "q35" and meta["qemu"]
    assert meta["kernel_release"] == fetched["debian-rt"].release and meta["smp"] == 1


def test_kvm_probe_answers_once(fetched: dict[str, kernels.Kernel]) -> None:
    # Whatever KVM does here (works, fails, hangs nested), the probe ends
    # with an answer and a reason, and the second call is the cached answer.
    target = _target("qemu:debian-rt")
    agent = target.agent()
    first = probe_kvm("qemu-system-x86_64", fetched["debian-rt"], agent)
    assert first[1] and probe_kvm("qemu-system-x86_64", fetched["debian-rt"], agent) == first
