"""A QEMU guest's run stores the guest's system report, not this host's:
/init prints the probe's files on the stream port before the agent
(rtbench.machine.probe_remote), so the run's machine record has the guest kernel's
release and PREEMPT_RT model, QEMU's firmware strings (DMI: QEMU, SeaBIOS)
and the guest's CPUs, each of which differs from this machine's."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

from rtbench.model import Run
from rtbench.run.measure import measure, plan_for
from rtbench.store import Store
from rtbench.targets import resolve
from rtbench.targets.qemu import QemuTarget
from rtbench.transports.qemu import QemuTransport

pytestmark = [pytest.mark.tools("busybox-static", "cpio", "qemu-system-x86")]


# Once per kernel for the module: the guest's report does not change between
# the tests that read it, and each boot costs a TCG guest's ~15 CPU seconds.
@functools.cache
def _cal_ref_in(spec: str) -> tuple[Run, QemuTransport]:
    """A short CAL-REF in a booted guest, without timerlat: the guest's probe
    is what these tests read."""
    target = resolve(spec)
    assert isinstance(target, QemuTarget)
    transport = target.transport()
    transport.timerlat = False
    try:
        run = measure(transport, plan_for(target, ["CAL-REF:repeats=10"])).run
    finally:
        transport.stop()
    return run, transport


def test_a_guest_run_stores_the_guests_report() -> None:
    run, _ = _cal_ref_in("qemu:debian-rt")
    m = run.machine
    assert m["probed_on"] == "guest" and m["probe_errors"] == {}
    assert m["kernel_release"] == run.hello["os"]["release"] != os.uname().release
    assert m["preemption"]["model"] == "PREEMPT_RT"
    assert m["dmi"]["sys_vendor"] == "QEMU" and m["dmi"]["bios_vendor"] == "SeaBIOS"
    assert m["cpu_count"] == len(m["cpus_online"]) >= 1
    assert m["target"]["kind"] == "qemu"  # the host's own items still there


@pytest.mark.parametrize(("kernel", "rt"), [("debian-rt", True), ("debian-generic", False)])
def test_a_guest_run_stores_its_kernels_config(kernel: str, rt: bool, tmp_path: Path) -> None:
    """Debian's kernels have no /proc/config.gz and the guest no /boot: the
    config comes from the kernel cache (the package's /boot/config-<release>
    kept beside the vmlinuz the guest booted), and the stored run says so."""
    run, transport = _cal_ref_in(f"qemu:{kernel}")
    booted = transport.launch.kernel
    assert booted.config is not None
    with Store(tmp_path / "runs.sqlite") as store:
        stored = store.load(store.save(run)).machine
    config = stored["kernel_config"]
    assert config is not None, stored["probe_errors"]
    assert config["source"].startswith(f"{booted.config} on the host")
    assert f"/boot/config-{booted.release}" in config["source"]
    assert stored["kernel_release"] == booted.release
    assert (config["preempt"] == "PREEMPT_RT") is rt, config["preempt"]
    # The same file, line for line: the configured HZ.
    text = booted.config.read_text()
    assert f"CONFIG_HZ={config['hz']}\n" in text
    assert ("CONFIG_PREEMPT_RT=y\n" in text) is rt
