"""A QEMU guest's run stores the guest's system report, not this host's:
/init prints the probe's files on the stream port before the agent
(rtbench.machine.probe_remote), so the run's machine record has the guest kernel's
release and PREEMPT_RT model, QEMU's firmware strings (DMI: QEMU, SeaBIOS)
and the guest's CPUs, each of which differs from this machine's."""

from __future__ import annotations

import os

import pytest

from rtbench.run.measure import measure, plan_for
from rtbench.targets import resolve
from rtbench.targets.qemu import QemuTarget

pytestmark = [pytest.mark.tools("busybox-static", "cpio", "qemu-system-x86")]


def test_a_guest_run_stores_the_guests_report() -> None:
    target = resolve("qemu:debian-rt")
    assert isinstance(target, QemuTarget)
    transport = target.transport()
    transport.timerlat = False
    try:
        run = measure(transport, plan_for(target, ["CAL-REF:repeats=10"])).run
    finally:
        transport.stop()
    m = run.machine
    assert m["probed_on"] == "guest" and m["probe_errors"] == {}
    assert m["kernel_release"] == run.hello["os"]["release"] != os.uname().release
    assert m["preemption"]["model"] == "PREEMPT_RT"
    assert m["dmi"]["sys_vendor"] == "QEMU" and m["dmi"]["bios_vendor"] == "SeaBIOS"
    assert m["cpu_count"] == len(m["cpus_online"]) >= 1
    assert m["target"]["kind"] == "qemu"  # the host's own items still there
