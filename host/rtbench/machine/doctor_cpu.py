"""`rtbench doctor` checks of what the CPUs do between wake-ups: C-states,
interrupt affinity of the measured CPUs, SMIs (items of rtbench.machine.probe_cpu).
Docs: docs/doctor.md."""

from __future__ import annotations

from typing import Any

from rtbench.machine.doctor import Finding, _dict
from rtbench.machine.probe import format_cpulist

# An idle state whose exit takes longer than this shows in a wake-up latency.
DEEP_STATE_US = 10


def _measured_cpus(machine: dict[str, Any]) -> list[int]:
    """The CPUs runs measure on: the isolated ones, else the last online
    CPU (the agent's default, --cpu)."""
    isolated = machine.get("cpus_isolated")
    if isinstance(isolated, list) and isolated:
        return [int(c) for c in isolated]
    online = machine.get("cpus_online")
    if isinstance(online, list) and online:
        return [int(max(online))]
    count = machine.get("cpu_count")
    return [count - 1] if isinstance(count, int) and count > 0 else []


def check_c_states(machine: dict[str, Any], privileges: dict[str, Any]) -> Finding:
    name = "c-states"
    idle = machine.get("cpuidle")
    if not isinstance(idle, dict):
        return Finding(name, "info", "CPU idle sysfs not readable; cannot tell")
    deep = [
        s for s in idle.get("states") or []
        if isinstance(s, dict) and not s.get("disabled")
        and isinstance(s.get("latency_us"), int) and s["latency_us"] > DEEP_STATE_US
    ]  # fmt: skip
    driver = idle.get("driver") or "none"
    if not deep:
        return Finding(
            name,
            "ok",
            f"idle driver {driver}: no enabled state deeper than {DEEP_STATE_US} µs to leave",
        )
    names = ", ".join(f"{s.get('name')} ({s['latency_us']} µs)" for s in deep)
    if idle.get("pm_qos"):
        return Finding(
            name,
            "ok",
            f"deep idle states {names}: rtbench holds them off while "
            "it runs (/dev/cpu_dma_latency = 0, as cyclictest does; "
            "`rtbench run --cstates leave` to measure with them)",
        )
    return Finding(
        name,
        "degraded",
        f"deep idle states {names} and no /dev/cpu_dma_latency to hold them off: leaving "
        "them adds their exit latency to wake-ups",
        "boot with processor.max_cstate=1 intel_idle.max_cstate=0 (x86), or disable the "
        "states: echo 1 | sudo tee /sys/devices/system/cpu/cpu*/cpuidle/state[2-9]/disable",
    )


def check_irq_affinity(machine: dict[str, Any], privileges: dict[str, Any]) -> Finding:
    name = "irq-affinity"
    info = _dict(machine.get("irq_affinity"))
    irqs = info.get("irqs")
    if not isinstance(irqs, list):
        return Finding(name, "info", "/proc/interrupts not readable; cannot tell")
    measured = set(_measured_cpus(machine))
    landing = [
        i for i in irqs
        if isinstance(i, dict) and isinstance(i.get("cpus"), list) and measured & set(i["cpus"])
    ]  # fmt: skip
    where = format_cpulist(sorted(measured)) or "?"
    if not landing:
        return Finding(name, "ok", f"no device interrupt may land on CPU {where}")
    named = ", ".join(f"{i['irq']} {i.get('name') or ''}".strip() for i in landing[:6])
    more = f" and {len(landing) - 6} more" if len(landing) > 6 else ""
    isolated = isinstance(machine.get("cpus_isolated"), list) and machine["cpus_isolated"]
    return Finding(
        name,
        "degraded" if isolated else "info",
        f"{len(landing)} device interrupt{'s' if len(landing) != 1 else ''} may land on "
        f"the measured CPU {where} ({named}{more}): their handlers delay the measured thread",
        "steer them away: for i in /proc/irq/*/smp_affinity_list; do echo 0 | sudo tee $i; "
        "done (boot: irqaffinity=0), and stop irqbalance",
    )


def check_smi(machine: dict[str, Any], privileges: dict[str, Any]) -> Finding:
    name = "smi"
    smi = _dict(machine.get("smi"))
    count = smi.get("count")
    if not isinstance(count, int):
        why = smi.get("reason") or "no /dev/cpu/0/msr (as root: modprobe msr)"
        return Finding(name, "info", f"SMI count not readable: {why}")
    if count == 0:
        return Finding(name, "ok", "no SMI since boot (MSR 0x34)")
    return Finding(
        name,
        "info",
        f"{count} SMIs since boot (MSR 0x34): the firmware takes the CPU away from the OS "
        "for each, invisible to the kernel; compare the count before and after a run",
        "firmware settings (power management, USB legacy emulation) cause most SMIs",
    )


CPU_CHECKS = (check_c_states, check_irq_affinity, check_smi)
