"""The probe of a target reached by a shell (rtbench.machine.probe_remote): its
script, run here by `sh` as a remote login shell would, rebuilds the /proc
and /sys files the probe reads, and the probe over them gives what the
local probe gives for every item read from files (the known answer: the
same machine both ways); a target whose shell fails says why and keeps the
record's shape."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rtbench.machine.probe import probe_machine
from rtbench.machine.probe_remote import SCRIPT, probe_over, probe_text, unpack

# Items not read from files the script copies, or that move between reads.
MOVING = {"loadavg", "smi", "python_version", "rtbench_version", "probe_errors", "mem_total_bytes"}


@pytest.mark.skipif(not Path("/proc/version").exists(), reason="needs Linux's /proc")
def test_the_target_probe_is_the_local_probe_here() -> None:
    remote = probe_over(lambda command: ["sh", "-c", command], sudo=False)
    local = probe_machine()
    assert remote["probed_on"] == "target" and "remote" not in remote["probe_errors"]
    assert remote["kernel_release"] is not None
    for key in set(local) - MOVING:
        assert remote[key] == local[key], key


def test_a_failing_shell_says_why() -> None:
    m = probe_over(lambda command: ["sh", "-c", "echo denied >&2; exit 255"], sudo=False)
    assert m["kernel_release"] is None
    assert m["probe_errors"]["remote"] == "the target's probe ended 255: denied"


def test_frames_become_a_tree_and_stay_inside_it(tmp_path: Path) -> None:
    text = (
        "\n@@rtbench-file /proc/version\nLinux version 6.1\n"
        "\n@@rtbench-dir /sys/fs/cgroup/system.slice/sshd.service\n"
        "\n@@rtbench-file /../../etc/evil\nx\n"
    )
    assert unpack(text, tmp_path) == 2
    assert (tmp_path / "proc/version").read_text().strip() == "Linux version 6.1"
    assert (tmp_path / "sys/fs/cgroup/system.slice/sshd.service").is_dir()
    assert not (tmp_path.parent / "etc").exists()


@pytest.mark.skipif(not Path("/proc/version").exists(), reason="needs Linux's /proc")
def test_line_by_line_as_a_guest_sends_it() -> None:
    """A QEMU guest's /init sends the script's output a marker line at a
    time, and the transport strips each (rtbench.targets.qemu_transport):
    the probe over what arrives is still this machine's."""
    loop = f'( {SCRIPT} ) 2>/dev/null | while IFS= read -r l; do echo "m: probe $l"; done'
    out = subprocess.run(["sh", "-c", loop], capture_output=True, check=True).stdout
    lines = [line.removeprefix(b"m:").strip() for line in out.split(b"\n") if line]
    body = [b.removeprefix(b"probe").removeprefix(b" ").decode() for b in lines]
    guest, local = probe_text("\n".join(body), "guest"), probe_machine()
    assert guest["probed_on"] == "guest"
    for key in ("kernel_release", "cpus_online", "kernel_config", "cpuidle", "cpufreq", "dmi"):
        assert guest[key] == local[key], key
    assert guest["irq_affinity"]["default_mask"] == local["irq_affinity"]["default_mask"]


def test_a_guest_without_a_config_borrows_its_kernels(tmp_path: Path) -> None:
    """The host's copy of the booted kernel's config stands in for the one
    the guest lacks, named as such; never for another release, nor over the
    guest's own."""
    config = tmp_path / "config"
    config.write_text("CONFIG_PREEMPT_RT=y\nCONFIG_HZ=250\n")
    text = "\n@@rtbench-file /proc/sys/kernel/osrelease\n6.12.9-rt-amd64\n"
    got = probe_text(text, "guest", config, "6.12.9-rt-amd64")["kernel_config"]
    assert got["preempt"] == "PREEMPT_RT" and got["hz"] == 250
    assert got["source"].startswith(f"{config} on the host")
    assert probe_text(text, "guest", config, "6.12.9-amd64")["kernel_config"] is None
    own = text + "\n@@rtbench-file /boot/config-6.12.9-rt-amd64\nCONFIG_HZ=1000\n"
    got = probe_text(own, "guest", config, "6.12.9-rt-amd64")["kernel_config"]
    assert got["source"] == "/boot/config-6.12.9-rt-amd64" and got["hz"] == 1000
