"""Machine probing against fake /proc + /sys trees, and once against this machine.

The fake trees are whole machine kinds (an RT box, a VM, a bare container);
each test also runs the doctor on the result, because the probe's dict is only
useful if the doctor reads it as intended.
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import rtbench
from rtbench.machine import probe
from rtbench.machine.doctor import doctor_exit_code, run_doctor
from rtbench.machine.probe import (
    PROBE_KEYS,
    format_cpulist,
    parse_cpulist,
    probe_machine,
    probe_privileges,
)

Tree = dict[str, str]


def make_tree(root: Path, files: Tree) -> Path:
    """Writes `files` (relative path -> content; a path ending in / is a directory)."""
    for rel, content in files.items():
        path = root / rel
        if rel.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


def cpuinfo(n: int, model: str, flags: str) -> str:
    blocks = [
        f"processor\t: {i}\nvendor_id\t: GenuineIntel\nmodel name\t: {model}\nflags\t\t: {flags}\n"
        for i in range(n)
    ]
    return "\n".join(blocks) + "\n"


CPU = "sys/devices/system/cpu"
CS = "sys/devices/system/clocksource/clocksource0"

RT_BOX: Tree = {
    "proc/sys/kernel/hostname": "rtbox\n",
    "proc/sys/kernel/osrelease": "6.6.21-rt26\n",
    "proc/version": "Linux version 6.6.21-rt26 (builder@host) (gcc 12.2.0) "
    "#1 SMP PREEMPT_RT Fri Mar  1 10:00:00 UTC 2024\n",
    "proc/sys/kernel/version": "#1 SMP PREEMPT_RT Fri Mar  1 10:00:00 UTC 2024\n",
    "sys/kernel/realtime": "1\n",
    "proc/cmdline": "BOOT_IMAGE=/vmlinuz root=/dev/sda1 isolcpus=2,3 nohz_full=2,3 rcu_nocbs=2,3\n",
    "proc/cpuinfo": cpuinfo(4, "Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz", "fpu tsc constant_tsc"),
    f"{CPU}/online": "0-3\n",
    f"{CPU}/isolated": "2-3\n",
    f"{CPU}/nohz_full": "2-3\n",
    **{f"{CPU}/cpu{i}/cpufreq/scaling_governor": "performance\n" for i in range(4)},
    f"{CPU}/cpufreq/policy0/scaling_driver": "intel_pstate\n",
    f"{CPU}/smt/active": "0\n",
    f"{CPU}/smt/control": "off\n",
    f"{CS}/current_clocksource": "tsc\n",
    f"{CS}/available_clocksource": "tsc hpet acpi_pm \n",
    "proc/sys/kernel/sched_rt_runtime_us": "-1\n",
    "proc/sys/kernel/sched_rt_period_us": "1000000\n",
    "proc/loadavg": "0.05 0.10 0.08 1/250 12345\n",
    "proc/meminfo": "MemTotal:       16318412 kB\nMemFree:        15000000 kB\n",
    "proc/mounts": "/dev/sda1 / ext4 rw 0 0\n"
    "tracefs /sys/kernel/tracing tracefs rw,nosuid,nodev,noexec,relatime 0 0\n",
    "sys/kernel/tracing/available_tracers": "timerlat osnoise hwlat function nop\n",
    **{f"sys/kernel/tracing/events/{g}/enable": "0\n" for g in probe.TRACE_EVENT_GROUPS},
    "sys/kernel/mm/transparent_hugepage/enabled": "always madvise [never]\n",
    # C6 is deep but disabled; the isolated CPUs 2-3 receive no device IRQ.
    f"{CPU}/cpuidle/current_driver": "intel_idle\n",
    f"{CPU}/cpuidle/current_governor": "menu\n",
    **{
        f"{CPU}/cpu0/cpuidle/state{i}/{k}": f"{v}\n"
        for i, (n, lat, off) in enumerate([("POLL", 0, 0), ("C1", 2, 0), ("C6", 85, 1)])
        for k, v in (("name", n), ("latency", lat), ("disable", off))
    },
    "proc/interrupts": "           CPU0       CPU1       CPU2       CPU3\n"
    "  0:         40          0          0          0   IO-APIC   2-edge      timer\n"
    "120:       9000         10          0          0   PCI-MSI 524288-edge      eth0\n"
    "NMI:          0          0          0          0   Non-maskable interrupts\n",
    "proc/irq/0/smp_affinity_list": "0\n",
    "proc/irq/120/smp_affinity_list": "0-1\n",
    "proc/irq/default_smp_affinity": "3\n",
}

VM: Tree = {
    "proc/sys/kernel/hostname": "guest\n",
    "proc/sys/kernel/osrelease": "6.1.0-18-amd64\n",
    "proc/version": "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) "
    "(gcc-12 (Debian 12.2.0-14) 12.2.0) #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)\n",
    # debugfs readable: the mode in parentheses is the one in effect.
    "sys/kernel/debug/sched/preempt": "none (voluntary) full\n",
    "proc/cmdline": "BOOT_IMAGE=/boot/vmlinuz-6.1.0-18-amd64 root=UUID=1234 ro quiet\n",
    "proc/cpuinfo": cpuinfo(2, "QEMU Virtual CPU version 2.5+", "fpu tsc hypervisor"),
    f"{CPU}/online": "0-1\n",
    f"{CPU}/isolated": "\n",
    # No smt directory (older kernel) and no cpufreq: only topology.
    f"{CPU}/cpu0/topology/thread_siblings_list": "0\n",
    f"{CPU}/cpu1/topology/thread_siblings_list": "1\n",
    f"{CS}/current_clocksource": "kvm-clock\n",
    f"{CS}/available_clocksource": "kvm-clock tsc acpi_pm \n",
    "proc/sys/kernel/sched_rt_runtime_us": "950000\n",
    "proc/sys/kernel/sched_rt_period_us": "1000000\n",
    "proc/loadavg": "3.50 2.10 1.00 3/180 999\n",
    "proc/meminfo": "MemTotal:        2035600 kB\n",
    "proc/mounts": "/dev/vda1 / ext4 rw 0 0\nproc /proc proc rw 0 0\n",
    "sys/kernel/tracing/": "",
    "sys/kernel/mm/transparent_hugepage/enabled": "[always] madvise never\n",
}

ROOT_PRIVILEGES: dict[str, Any] = {
    "euid": 0,
    "user": "root",
    "sched_fifo": True,
    "sched_fifo_detail": "",
    "cap_sys_nice": True,
    "cap_ipc_lock": True,
    "rlimit_rtprio_soft": 0,
    "rlimit_rtprio_hard": 0,
    "rlimit_memlock_soft": 8 * 1024 * 1024,
    "rlimit_memlock_hard": 8 * 1024 * 1024,
}

USER_PRIVILEGES: dict[str, Any] = {
    **ROOT_PRIVILEGES,
    "euid": 1000,
    "user": "alice",
    "sched_fifo": False,
    "sched_fifo_detail": "sched_setscheduler(SCHED_FIFO, 1) refused: Operation not permitted",
    "cap_sys_nice": False,
    "cap_ipc_lock": False,
}


def statuses(machine: dict[str, Any], privileges: dict[str, Any]) -> dict[str, str]:
    return {f.name: f.status for f in run_doctor(machine, privileges)}


def common(expected: dict[str, Any]) -> dict[str, Any]:
    """The items that never come from the tree."""
    return {
        "schema": probe.PROBE_SCHEMA,
        "python_version": platform.python_version(),
        "rtbench_version": rtbench.__version__,
        "probe_errors": {},
        **expected,
    }


def test_rt_box(tmp_path: Path) -> None:
    machine = probe_machine(make_tree(tmp_path, RT_BOX))
    assert machine == common(
        {
            "hostname": "rtbox",
            "kernel_release": "6.6.21-rt26",
            "kernel_version": RT_BOX["proc/version"].strip(),
            "preemption": {
                "model": "PREEMPT_RT",
                "mode": "full",
                "mode_source": "model",
                "modes": None,
                "realtime": True,
            },
            "cmdline": RT_BOX["proc/cmdline"].strip(),
            "cpu_model": "Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz",
            "cpu_count": 4,
            "cpus_online": [0, 1, 2, 3],
            "cpus_isolated": [2, 3],
            "cpus_nohz_full": [2, 3],
            "clocksource": {"current": "tsc", "available": ["tsc", "hpet", "acpi_pm"]},
            "cpufreq": {
                "available": True,
                "governors": {str(i): "performance" for i in range(4)},
                "driver": "intel_pstate",
            },
            "rt_throttling": {"runtime_us": -1, "period_us": 1000000, "enabled": False},
            "loadavg": [0.05, 0.10, 0.08],
            "mem_total_bytes": 16318412 * 1024,
            "tracefs": {
                "mounted": True,
                "path": "/sys/kernel/tracing",
                "readable": True,
                "tracers": ["timerlat", "osnoise", "hwlat", "function", "nop"],
                "event_groups": {g: True for g in probe.TRACE_EVENT_GROUPS},
            },
            "smt": {"active": False, "control": "off"},
            "thp": "never",
            "hypervisor": False,
            "cpuidle": {
                "driver": "intel_idle",
                "governor": "menu",
                "states": [
                    {"name": "POLL", "latency_us": 0, "disabled": False},
                    {"name": "C1", "latency_us": 2, "disabled": False},
                    {"name": "C6", "latency_us": 85, "disabled": True},
                ],
                "pm_qos": False,
            },
            "irq_affinity": {
                "irqs": [
                    {"irq": 0, "name": "timer", "cpus": [0]},
                    {"irq": 120, "name": "eth0", "cpus": [0, 1]},
                ],
                "default_mask": "3",
            },
            "smi": None,
            "dmi": None,
            "kernel_config": None,
            "services": None,
        }
    )
    assert set(machine) == set(PROBE_KEYS)
    json.dumps(machine)  # must be storable as is

    findings = run_doctor(machine, ROOT_PRIVILEGES)
    assert {f.name: f.status for f in findings} == {
        "rt-privilege": "ok",
        "rt-throttling": "ok",
        "preemption": "ok",
        "clocksource": "ok",
        "cpu-governor": "ok",
        "isolated-cpus": "ok",
        "smt": "ok",
        "virtualization": "ok",
        "load": "ok",
        "memlock": "ok",
        "tracefs": "ok",
        "thp": "ok",
        "c-states": "ok",
        "irq-affinity": "ok",
        "smi": "info",
    }
    assert doctor_exit_code(findings) == 0


def test_vm_without_cpufreq_with_throttling(tmp_path: Path) -> None:
    machine = probe_machine(make_tree(tmp_path, VM))
    assert machine == common(
        {
            "hostname": "guest",
            "kernel_release": "6.1.0-18-amd64",
            "kernel_version": VM["proc/version"].strip(),
            "preemption": {
                "model": "PREEMPT_DYNAMIC",
                "mode": "voluntary",
                "mode_source": "debugfs",
                "modes": ["none", "voluntary", "full"],
                "realtime": False,
            },
            "cmdline": VM["proc/cmdline"].strip(),
            "cpu_model": "QEMU Virtual CPU version 2.5+",
            "cpu_count": 2,
            "cpus_online": [0, 1],
            "cpus_isolated": [],
            "cpus_nohz_full": None,
            "clocksource": {"current": "kvm-clock", "available": ["kvm-clock", "tsc", "acpi_pm"]},
            "cpufreq": {"available": False, "governors": {}, "driver": None},
            "rt_throttling": {"runtime_us": 950000, "period_us": 1000000, "enabled": True},
            "loadavg": [3.5, 2.1, 1.0],
            "mem_total_bytes": 2035600 * 1024,
            "tracefs": {
                "mounted": False,
                "path": None,
                "readable": False,
                "tracers": None,
                "event_groups": None,
            },
            "smt": {"active": False, "control": None},
            "thp": "always",
            "hypervisor": True,
            "cpuidle": {"driver": None, "governor": None, "states": [], "pm_qos": False},
            "irq_affinity": None,
            "smi": None,
            "dmi": None,
            "kernel_config": None,
            "services": None,
        }
    )

    findings = run_doctor(machine, USER_PRIVILEGES)
    assert {f.name: f.status for f in findings} == {
        "rt-privilege": "bad",
        "rt-throttling": "degraded",
        "preemption": "degraded",
        "clocksource": "ok",
        "cpu-governor": "info",
        "isolated-cpus": "info",
        "smt": "ok",
        "virtualization": "degraded",
        "load": "degraded",
        "memlock": "degraded",
        "tracefs": "info",
        "thp": "info",
        "c-states": "ok",
        "irq-affinity": "info",
        "smi": "info",
    }
    assert doctor_exit_code(findings) == 1
    by_name = {f.name: f for f in findings}
    assert "no cpufreq" in by_name["cpu-governor"].detail
    assert "95%" in by_name["rt-throttling"].detail
    assert "echo -1 > /proc/sys/kernel/sched_rt_runtime_us" in by_name["rt-throttling"].fix
    assert "mount -t tracefs nodev /sys/kernel/tracing" in by_name["tracefs"].fix
    assert "isolcpus=1" in by_name["isolated-cpus"].fix
    for f in findings:
        if f.status in ("degraded", "bad"):
            assert f.fix, f"{f.name} says what is wrong but not how to fix it"


def test_everything_missing(tmp_path: Path) -> None:
    machine = probe_machine(tmp_path)
    tree_items = set(PROBE_KEYS) - {"schema", "python_version", "rtbench_version", "probe_errors"}
    assert machine == common({k: None for k in tree_items})

    findings = run_doctor(machine, {})
    assert len(findings) == 15
    assert {f.status for f in findings} == {"info"}
    assert doctor_exit_code(findings) == 0


def test_unparsable_items_are_none_and_reported(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "proc/loadavg": "garbage here\n",
            "proc/sys/kernel/sched_rt_runtime_us": "lots\n",
            # A directory where a file should be: unreadable, not an error.
            "proc/sys/kernel/osrelease/": "",
            "proc/sys/kernel/hostname": "box\n",
        },
    )
    machine = probe_machine(tmp_path)
    assert machine["loadavg"] is None
    assert machine["rt_throttling"] is None
    assert machine["kernel_release"] is None
    assert machine["hostname"] == "box"
    assert set(machine["probe_errors"]) == {"loadavg", "rt_throttling"}
    assert machine["probe_errors"]["loadavg"].startswith("ValueError")


def _config_gz(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        f.write("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("files", "model", "mode", "source"),
    [
        pytest.param(
            {
                "proc/version": "Linux version 6.8.0 #1 SMP PREEMPT_DYNAMIC x\n",
                "proc/cmdline": "ro quiet preempt=full\n",
            },
            "PREEMPT_DYNAMIC",
            "full",
            "cmdline",
            id="dynamic-cmdline",
        ),
        pytest.param(
            {"proc/version": "Linux version 6.8.0 #1 SMP PREEMPT_DYNAMIC x\n"},
            "PREEMPT_DYNAMIC",
            None,
            None,
            id="dynamic-unknown-mode",
        ),
        pytest.param(
            {"proc/version": "Linux version 5.15.0 #1 SMP PREEMPT Tue Jan 1\n"},
            "PREEMPT",
            "full",
            "model",
            id="preempt",
        ),
        pytest.param(
            {"proc/version": "Linux version 5.4.0-rt1 #1 SMP PREEMPT RT Tue Jan 1\n"},
            "PREEMPT_RT",
            "full",
            "model",
            id="old-rt-two-words",
        ),
        pytest.param(
            {
                "proc/version": "Linux version 6.12.0 #1 SMP PREEMPT_RT x\n",
                "sys/kernel/debug/sched/preempt": "(full) lazy\n",
            },
            "PREEMPT_RT",
            "full",
            "debugfs",
            id="rt-dynamic-debugfs",
        ),
        pytest.param(
            {"proc/version": "Linux version 6.1.0 #1 SMP Debian\n"},
            "NONE_OR_VOLUNTARY",
            None,
            None,
            id="no-flag",
        ),
        pytest.param(
            {
                "proc/version": "Linux version 6.1.0 #1 SMP Debian\n",
                "proc/sys/kernel/osrelease": "6.1.0\n",
                "boot/config-6.1.0": "CONFIG_PREEMPT_VOLUNTARY=y\n# CONFIG_PREEMPT is not set\n",
            },
            "PREEMPT_VOLUNTARY",
            "voluntary",
            "model",
            id="boot-config",
        ),
    ],
)
def test_preemption_models(
    tmp_path: Path, files: Tree, model: str, mode: str | None, source: str | None
) -> None:
    pre = probe_machine(make_tree(tmp_path, files))["preemption"]
    assert (pre["model"], pre["mode"], pre["mode_source"]) == (model, mode, source)


def test_preemption_dynamic_default_from_config_gz(tmp_path: Path) -> None:
    make_tree(tmp_path, {"proc/version": "Linux version 6.18.0 #1 SMP PREEMPT_DYNAMIC @0\n"})
    _config_gz(
        tmp_path / "proc/config.gz",
        ["CONFIG_PREEMPT_NONE=y", "# CONFIG_PREEMPT is not set", "CONFIG_PREEMPT_DYNAMIC=y"],
    )
    pre = probe_machine(tmp_path)["preemption"]
    assert (pre["model"], pre["mode"], pre["mode_source"]) == ("PREEMPT_DYNAMIC", "none", "config")
    assert statuses(probe_machine(tmp_path), {})["preemption"] == "degraded"


def test_tracefs_mounted_but_unreadable_and_legacy_path(tmp_path: Path) -> None:
    make_tree(
        tmp_path / "a",
        {"proc/mounts": "nodev /sys/kernel/tracing tracefs rw 0 0\n", "sys/kernel/tracing/": ""},
    )
    tfs = probe_machine(tmp_path / "a")["tracefs"]
    assert tfs["mounted"] is True and tfs["readable"] is False and tfs["tracers"] is None

    make_tree(
        tmp_path / "b",
        {
            "sys/kernel/debug/tracing/available_tracers": "nop\n",
            "sys/kernel/debug/tracing/events/sched/": "",
        },
    )
    tfs = probe_machine(tmp_path / "b")["tracefs"]
    assert tfs["path"] == "/sys/kernel/debug/tracing"
    assert tfs["event_groups"] == {
        "irq": False,
        "sched": True,
        "timer": False,
        "irq_vectors": False,
    }


def test_arm64_cpuinfo(tmp_path: Path) -> None:
    text = "".join(
        f"processor\t: {i}\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd\n"
        f"CPU implementer\t: 0x41\nCPU part\t: 0xd08\n\n"
        for i in range(4)
    )
    machine = probe_machine(make_tree(tmp_path, {"proc/cpuinfo": text}))
    assert machine["cpu_model"] == "implementer 0x41 part 0xd08"
    assert machine["cpu_count"] == 4
    # No x86 flags: a VM cannot be told apart, so say "unknown", not "bare metal".
    assert machine["hypervisor"] is None


def test_cpulist_round_trip() -> None:
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("") == [] and parse_cpulist("(null)") == []
    assert format_cpulist([11, 0, 1, 2, 3, 8, 10]) == "0-3,8,10-11"
    assert format_cpulist([]) == ""


# --- this machine -------------------------------------------------------------

_TYPES: dict[str, type | tuple[type, ...]] = {
    "schema": int,
    "hostname": str,
    "kernel_release": str,
    "kernel_version": str,
    "preemption": dict,
    "cmdline": str,
    "cpu_model": str,
    "cpu_count": int,
    "cpus_online": list,
    "cpus_isolated": list,
    "cpus_nohz_full": list,
    "clocksource": dict,
    "cpufreq": dict,
    "rt_throttling": dict,
    "loadavg": list,
    "mem_total_bytes": int,
    "tracefs": dict,
    "smt": dict,
    "thp": str,
    "hypervisor": bool,
    "cpuidle": dict,
    "irq_affinity": dict,
    "smi": dict,
    "dmi": dict,
    "kernel_config": dict,
    "services": dict,
    "python_version": str,
    "rtbench_version": str,
    "probe_errors": dict,
}


def test_real_machine_structure() -> None:
    machine = probe_machine()
    assert list(machine) == list(PROBE_KEYS)
    assert set(_TYPES) == set(PROBE_KEYS)
    for key, value in machine.items():
        assert value is None or isinstance(value, _TYPES[key]), (key, value)
    assert json.loads(json.dumps(machine)) == machine
    assert machine["probe_errors"] == {}
    assert machine["python_version"] == platform.python_version()
    if sys.platform.startswith("linux"):
        assert isinstance(machine["kernel_release"], str)
        assert isinstance(machine["cpu_count"], int) and machine["cpu_count"] >= 1
        assert machine["preemption"] is None or machine["preemption"]["model"] is not None


def test_real_privileges_structure_and_policy_restored() -> None:
    before = (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)
    priv = probe_privileges()
    assert (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority) == before
    assert priv["euid"] == os.geteuid()
    assert isinstance(priv["sched_fifo"], bool)
    assert isinstance(priv["sched_fifo_detail"], str)
    for key in ("rlimit_rtprio_soft", "rlimit_rtprio_hard", "rlimit_memlock_soft"):
        assert isinstance(priv[key], int) and priv[key] >= probe.UNLIMITED
    assert isinstance(priv["cap_sys_nice"], bool)
    json.dumps(priv)
    if os.geteuid() == 0 and priv["cap_sys_nice"]:
        assert priv["sched_fifo"] is True


def test_privileges_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(pid: int, policy: int, param: os.sched_param) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "sched_setscheduler", refuse)
    priv = probe_privileges()
    assert priv["sched_fifo"] is False
    assert "Operation not permitted" in priv["sched_fifo_detail"]


def test_privileges_already_realtime_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(os, "sched_getscheduler", lambda pid: os.SCHED_FIFO)
    monkeypatch.setattr(os, "sched_getparam", lambda pid: os.sched_param(80))
    monkeypatch.setattr(os, "sched_setscheduler", lambda *a: calls.append(1))
    priv = probe_privileges()
    assert priv["sched_fifo"] is True and "already real-time" in priv["sched_fifo_detail"]
    assert calls == []


def test_import_does_not_probe() -> None:
    # An audit hook sees every open(); importing must not touch /proc or /sys.
    code = textwrap.dedent(
        """
        import sys
        seen = []
        def hook(event, args):
            if event == "open" and isinstance(args[0], str) and args[0].startswith(
                ("/proc", "/sys")
            ):
                seen.append(args[0])
        sys.addaudithook(hook)
        import rtbench.machine.probe, rtbench.machine.doctor
        print(repr(seen))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
