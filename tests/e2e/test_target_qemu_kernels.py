"""The other kernels: Debian's 6.12 PREEMPT_RT kernel (x86_64) and its
arm64 PREEMPT_RT kernel on `qemu-system-aarch64 -M virt`, one guest each.

Each test fetches its kernel once (into the user's kernel cache: a second
run reuses it) and boots it for a couple of short cases: TCG is slow, an
arm64 guest slower still. What is stored is the guest's kernel, its
preemption model and its architecture, never this machine's.
"""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from rtbench.model import Run
from rtbench.session import collect
from rtbench.store import Store
from rtbench.targets import kernels, resolve
from rtbench.targets.qemu import QemuTarget

CASES = ["CAL-REF:repeats=10", "SYS-CALL:iterations=100"]


def _run(spec: str) -> tuple[Run, QemuTarget, dict[str, float]]:
    target = resolve(spec)
    assert isinstance(target, QemuTarget)
    transport = target.transport()
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
    [("debian-rt-6.12", "x86_64", "q35"), ("debian-rt-arm64", "aarch64", "virt")],
)
def test_guest_stores_its_kernel_model_and_arch(
    name: str, arch: str, machine: str, tmp_path: Path
) -> None:
    kernel = kernels.fetch(name)
    assert kernel.arch == arch and kernel.preempt == "PREEMPT_RT" and kernel.hz > 0
    assert kernels.fetch(name) == kernel  # the cached one
    run, target, timings = _run(f"qemu:{name}?accel=tcg")
    assert run.complete, run.issues
    assert [(c.case, c.outcome) for c in run.cases] == [
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
