"""A QEMU guest's run stores the guest's system report, not this host's:
/init prints the probe's files on the stream port before the agent
(rtbench.machine.probe_remote), so the run's machine record has the guest kernel's
release and PREEMPT_RT model, QEMU's firmware strings (DMI: QEMU, SeaBIOS)
and the guest's CPUs, each of which differs from this machine's."""

from __future__ import annotations

import os
from pathlib import Path

import guests
import pytest
from guests import GuestRun, guest_run

from rtbench.store import Store

pytestmark = [pytest.mark.tools("busybox-static", "cpio", "qemu-system-x86")]


# Each kernel's run is booted once for the whole test run and read by
# tests/e2e/test_target_qemu.py too (tests/guests.py): the guest's report
# does not change between the tests that read it, and each boot costs a TCG
# guest's 10-15 CPU seconds.
RUNS = {"debian-rt": guests.RT, "debian-generic": guests.GENERIC}


def _run_in(kernel: str, config: pytest.Config) -> GuestRun:
    return guest_run(config, *RUNS[kernel])


def test_a_guest_run_stores_the_guests_report(pytestconfig: pytest.Config) -> None:
    run = _run_in("debian-rt", pytestconfig).run
    m = run.machine
    assert m["probed_on"] == "guest" and m["probe_errors"] == {}
    assert m["kernel_release"] == run.hello["os"]["release"] != os.uname().release
    assert m["preemption"]["model"] == "PREEMPT_RT"
    assert m["dmi"]["sys_vendor"] == "QEMU" and m["dmi"]["bios_vendor"] == "SeaBIOS"
    assert m["cpu_count"] == len(m["cpus_online"]) >= 1
    assert m["target"]["kind"] == "qemu"  # the host's own items still there


@pytest.mark.parametrize(("kernel", "rt"), [("debian-rt", True), ("debian-generic", False)])
def test_a_guest_run_stores_its_kernels_config(
    kernel: str, rt: bool, tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    """Debian's kernels have no /proc/config.gz and the guest no /boot: the
    config comes from the kernel cache (the package's /boot/config-<release>
    kept beside the vmlinuz the guest booted), and the stored run says so."""
    guest = _run_in(kernel, pytestconfig)
    run, booted = guest.run, guest.kernel
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
