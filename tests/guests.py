"""A QEMU guest's short run that tests of several modules read, booted once
per test run (tests/shared.py): a TCG guest's boot costs 10-15 CPU
seconds, and tests/e2e/test_target_qemu.py (what the run stores of the
guest's kernel) and tests/e2e/test_guest_probe.py (the guest's system
report) read the same kind of run. Taken the way `rtbench run --target`
takes it (measure: the guest's probe, the plan's arguments), and QEMU
checked gone after it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pytest
import shared

from rtbench.model import Run
from rtbench.run.measure import measure, plan_for
from rtbench.targets import kernels, resolve
from rtbench.targets.qemu import QemuTarget

# The runs both modules read: two short cases in a PREEMPT_RT guest, and in
# a generic one with a CPU isolated, JIT-PER beside (its timerlat missing).
CASES = ["CAL-REF:repeats=10", "SYS-CALL:iterations=100"]
RT = ("qemu:debian-rt?accel=tcg", CASES)
GENERIC = (
    "qemu:debian-generic?accel=tcg&isolcpus=1",
    [*CASES, "JIT-PER:period_us=1000:cycles=50"],
)


@dataclass(frozen=True)
class GuestRun:
    run: Run
    timings: dict[str, float]  # the transport's: init, first_record, exit
    kernel: kernels.Kernel  # the kernel the guest booted


def qemu_processes(run_dir: str) -> list[int]:
    """QEMU processes whose command line names this run's files."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if run_dir.encode() in argv and b"qemu-system" in argv:
            pids.append(int(entry.name))
    return pids


def guest_run(config: pytest.Config, spec: str, cases: list[str]) -> GuestRun:
    """`cases` in a guest of `spec`, run once for the whole test run."""

    def take() -> GuestRun:
        target = resolve(spec)
        assert isinstance(target, QemuTarget)
        transport = target.transport()
        try:
            run = measure(transport, plan_for(target, cases)).run
        finally:
            transport.stop()
        assert transport.run_dir and not qemu_processes(transport.run_dir)
        return GuestRun(run, dict(transport.timings), transport.launch.kernel)

    key = hashlib.sha256("\n".join([spec, *cases]).encode()).hexdigest()[:16]
    return shared.once(config, f"guest-{key}", take)
