"""What the CPUs do between wake-ups, beside the figures (rteval's system
report, cyclictest's C-state hold): idle states and their exit latency,
where interrupts may land, and SMIs where the counter is readable.

Items of `rtbench.machine.probe.probe_machine`, read under a root folder so that
fake /proc and /sys trees test them (tests/host/test_probe_cpu.py).
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path
from typing import Any

_CPU = "sys/devices/system/cpu"
# MSR_SMI_COUNT (Intel, Nehalem and later): SMIs since reset, low 32 bits.
MSR_SMI_COUNT = 0x34


def _read(root: Path, rel: str) -> str | None:
    # rtbench.machine.probe imports this module for its item table: its reader is
    # taken at call time, not import time.
    from rtbench.machine.probe import _read as read

    return read(root, rel)


def cpuidle(root: Path) -> dict[str, Any] | None:
    """The idle driver and, per state of CPU 0, its name, exit latency and
    whether it is disabled; and whether the PM QoS file cyclictest holds
    exists. None when the CPU sysfs is not there at all."""
    if not (root / _CPU).is_dir():
        return None
    states: list[dict[str, Any]] = []
    base = root / _CPU / "cpu0" / "cpuidle"
    names = sorted((p.name for p in base.glob("state*")), key=lambda n: int(n[5:] or 0))
    for name in names:
        latency = _read(root, f"{_CPU}/cpu0/cpuidle/{name}/latency")
        states.append(
            {
                "name": _read(root, f"{_CPU}/cpu0/cpuidle/{name}/name") or name,
                "latency_us": int(latency) if latency and latency.isdigit() else None,
                "disabled": _read(root, f"{_CPU}/cpu0/cpuidle/{name}/disable") == "1",
            }
        )
    return {
        "driver": _read(root, f"{_CPU}/cpuidle/current_driver"),
        "governor": _read(root, f"{_CPU}/cpuidle/current_governor"),
        "states": states,
        "pm_qos": (root / "dev/cpu_dma_latency").exists(),
    }


_IRQ_LINE = re.compile(r"^\s*(\d+):")


def irq_affinity(root: Path) -> dict[str, Any] | None:
    """Each device interrupt's allowed CPUs and name (/proc/irq, /proc/interrupts)."""
    from rtbench.machine.probe import parse_cpulist

    text = _read(root, "proc/interrupts")
    if text is None:
        return None
    lines = text.splitlines()
    ncpu = len(lines[0].split()) if lines else 0
    irqs: list[dict[str, Any]] = []
    for line in lines[1:]:
        m = _IRQ_LINE.match(line)
        if not m:
            continue  # NMI, LOC...: per-CPU by nature, not steerable
        fields = line[m.end() :].split()
        affinity = _read(root, f"proc/irq/{m[1]}/smp_affinity_list")
        irqs.append(
            {
                "irq": int(m[1]),
                "name": fields[-1] if len(fields) > ncpu else "",
                "cpus": parse_cpulist(affinity) if affinity is not None else None,
            }
        )
    default = _read(root, "proc/irq/default_smp_affinity")
    return {"irqs": irqs, "default_mask": default}


def smi_count(root: Path) -> dict[str, Any] | None:
    """SMIs since reset from MSR 0x34 of CPU 0: readable only as root with
    the msr driver, and only on Intel; None without the driver, a count of
    None with the reason when the register cannot be read."""
    path = root / "dev/cpu/0/msr"
    if not path.exists():
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            raw = os.pread(fd, 8, MSR_SMI_COUNT)
        finally:
            os.close(fd)
    except OSError as e:
        return {"count": None, "reason": f"MSR 0x34 not readable: {e.strerror or e}"}
    if len(raw) != 8:
        return {"count": None, "reason": "MSR 0x34 gave a short read"}
    return {"count": int(struct.unpack("<Q", raw)[0] & 0xFFFFFFFF), "reason": ""}
