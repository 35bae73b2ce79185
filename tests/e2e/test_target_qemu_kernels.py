"""The other kernels: Debian's 6.12 PREEMPT_RT kernel (x86_64) and its
arm64 PREEMPT_RT kernel on `qemu-system-aarch64 -M virt`, one guest each.

Each test fetches its kernel once (into the user's kernel cache: a second
run reuses it) and boots it for a couple of short cases: TCG is slow, an
arm64 guest slower still. What is stored is the guest's kernel, its
preemption model and its architecture, never this machine's, and beside
JIT-PER the kernel's own timerlat figures from the same guest.
"""

from __future__ import annotations

import platform
from pathlib import Path

import pytest
import tools

from rtbench.build import ensure_agent
from rtbench.model import Run
from rtbench.session import collect
from rtbench.store import Store
from rtbench.targets import guest_trace, kernels, resolve
from rtbench.targets.qemu import QemuTarget

pytestmark = pytest.mark.tools("busybox-static", "cpio")
X86, ARM = pytest.mark.tools("qemu-system-x86"), pytest.mark.tools("qemu-system-arm")

CASES = ["CAL-REF:repeats=10", "SYS-CALL:iterations=100", "JIT-PER:period_us=1000:cycles=500"]


def _run(spec: str, trace: bool) -> tuple[Run, QemuTarget, dict[str, float]]:
    target = resolve(spec)
    assert isinstance(target, QemuTarget)
    transport = target.transport()
    # --trace: recorded in the guest, brought back on its virtio console.
    transport.trace = guest_trace.request(flight=False) if trace else None
    try:
        run = collect(transport, CASES)
    finally:
        transport.stop()
    return run, target, transport.timings


def _stored_release(run: Run, tmp_path: Path) -> str:
    with Store(tmp_path / "runs.sqlite") as store:
        run_id = store.save(run)
        (summary,) = [r for r in store.list_runs() if r.id == run_id]
        assert store.load(run_id).hello["os"]["machine"] == run.hello["os"]["machine"]
    return summary.kernel


@pytest.mark.parametrize(
    ("name", "arch", "machine"),
    [
        pytest.param("debian-rt-6.12", "x86_64", "q35", marks=X86),
        pytest.param("debian-rt-arm64", "aarch64", "virt", marks=ARM),
    ],
)
def test_guest_stores_its_kernel_model_and_arch(
    name: str, arch: str, machine: str, tmp_path: Path
) -> None:
    kernel = tools.guest_kernel(name)
    assert kernel.arch == arch and kernel.preempt == "PREEMPT_RT" and kernel.hz > 0
    assert kernels.fetch(name) == kernel  # the cached one
    run, target, timings = _run(f"qemu:{name}?accel=tcg", trace=arch == "aarch64")
    assert run.complete, run.issues
    assert [(c.case, c.outcome) for c in run.cases][:2] == [
        ("CAL-REF", "passed"),
        ("SYS-CALL", "passed"),
    ], [(c.case, c.reason) for c in run.cases]
    os_info = run.hello["os"]
    assert os_info["release"] == kernel.release != platform.release()
    assert os_info["preempt"] == "PREEMPT_RT" and os_info["machine"] == arch
    assert _stored_release(run, tmp_path) == kernel.release
    meta = target.metadata()
    assert meta["machine"] == machine and meta["arch"] == arch and meta["accel"] == "tcg"
    assert meta["kernel_preempt"] == "PREEMPT_RT" and meta["kernel_hz"] == str(kernel.hz)
    assert timings["init"] <= timings["first_record"] <= timings["exit"]
    # The kernel's timerlat on JIT-PER's CPU (the last) and period, stored
    # beside it, and JIT-PER's best is no better than the kernel's thread.
    assert kernel.timerlat
    jit = run.case("JIT-PER")
    assert jit is not None and not [w for w in run.warnings if w.code == "timerlat"]
    for name in ("kernel_irq_latency", "kernel_thread_latency"):
        series = jit.find(name)
        assert series is not None and series.n > 0 and series.kind == "latency"
        assert series.attrs == {"source": "kernel timerlat"}
    irq, thread = jit.find("kernel_irq_latency"), jit.find("kernel_thread_latency")
    assert irq is not None and thread is not None and irq.min is not None
    assert thread.min is not None and irq.min <= thread.min  # the IRQ comes first
    # Its verdict depends on TCG's speed in two windows (docs/targets-qemu.md):
    # that it compared the two figures is what this test can hold.
    check = {c.name: c for c in jit.checks}["above_kernel_timerlat"]
    assert check.verdict in ("pass", "skip") and "timerlat thread's" in check.detail
    with Store(tmp_path / "runs.sqlite") as store:
        (stored,) = store.list_runs()
        again = store.load(stored.id).case("JIT-PER")
    assert again is not None
    kept = again.find("kernel_thread_latency")
    assert kept is not None and kept.attrs == {"source": "kernel timerlat"}
    assert kept.n == thread.n
    if arch == "aarch64":
        # The guest's own kernel trace, split per case as a local one is:
        # the measurement CPU's interrupts (the arm64 timer among them).
        # (x86's local_timer events do not exist on arm64: said, not an error.)
        said = [w.detail for w in run.warnings if w.code == "trace"]
        assert all("irq_vectors:local_timer" in d for d in said), said
        for case in run.cases:
            irqs = [s for s in case.series if s.name == "kernel.irq" and s.point]
            assert any(s.point.get("irq") == "arch_timer" for s in irqs), case.case
            assert any("QEMU guest" in w.detail for w in case.warnings if w.code == "trace")


def test_a_late_wake_up_moves_jit_per_and_not_the_kernels_figures() -> None:
    # The known answer: the test build's fault spins 5 ms after every
    # wake-up of the agent (`wake_delay`), which JIT-PER must show and the
    # kernel's own timerlat, measured in the same guest, must not.
    kernel = kernels.fetch("debian-rt")
    assert kernel.timerlat
    target = resolve("qemu:debian-rt?accel=tcg")
    assert isinstance(target, QemuTarget)
    transport = target.transport(ensure_agent("test", static=True))
    try:
        run = collect(
            transport, ["--inject=wake_delay=5000000", "JIT-PER:period_us=20000:cycles=50"]
        )
    finally:
        transport.stop()
    jit = run.case("JIT-PER")
    assert jit is not None, run.issues
    latency = jit.find("latency")
    irq, thread = jit.find("kernel_irq_latency"), jit.find("kernel_thread_latency")
    assert latency is not None and irq is not None and thread is not None
    assert latency.min is not None and latency.min >= INJECTED_NS
    assert irq.min is not None and irq.min < INJECTED_NS
    assert thread.min is not None and thread.min < INJECTED_NS
    check = {c.name: c for c in jit.checks}["above_kernel_timerlat"]
    assert check.verdict == "pass", check.detail


INJECTED_NS = 5_000_000
