"""`rtbench doctor`: is this machine set up to measure real-time behaviour?

Each check reads the dicts of `rtbench.machine.probe` (so it also works on the
metadata stored with an old run) and returns one `Finding`: what is fine,
what will degrade results, and the command that fixes it. The statuses:

- ok: nothing to do;
- degraded: results stay valid but are noisier or slower than this machine
  can do;
- bad: results will be flagged (not real-time), fix it before measuring;
- info: worth knowing, or could not be checked.

Docs: docs/doctor.md (keep the two in step).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.console import Console
from rich.table import Table
from rich.text import Text

from rtbench.machine.probe import UNLIMITED, format_cpulist

Status = Literal["ok", "degraded", "bad", "info"]

# The highest priority the agent gives its case threads (RTB_PRIO_MAX in
# agent/include/rtb/port.h); a lower RLIMIT_RTPRIO refuses the top ones.
AGENT_MAX_PRIORITY = 99

# mlockall(MCL_CURRENT | MCL_FUTURE) must cover every thread stack and sample
# buffer the agent maps later; below this a run can fail to lock or allocate.
MEMLOCK_ENOUGH = 128 * 1024 * 1024

# A 1-minute load average above this per online CPU means other work competes
# with the measurement for caches, memory bandwidth and interrupts.
LOAD_PER_CPU_HIGH = 0.5

# CPU-local counters read in user space through the vDSO: cheap and stable.
GOOD_CLOCKSOURCES = frozenset(
    {"tsc", "arch_sys_counter", "arm_arch_timer", "riscv_clocksource", "timebase"}
)
# Paravirtual clocks: vDSO-readable, the best a guest usually gets.
VIRT_CLOCKSOURCES = frozenset({"kvm-clock", "hyperv_clocksource_tsc_page", "xen", "lguest"})
# Device clocks read through port I/O or MMIO, not through the vDSO.
SLOW_CLOCKSOURCES = frozenset({"hpet", "acpi_pm", "pit", "jiffies", "refined-jiffies"})

_STATUS_STYLE: dict[str, str] = {
    "ok": "bold green",
    "degraded": "bold yellow",
    "bad": "bold red",
    "info": "bold cyan",
}


@dataclass
class Finding:
    name: str
    status: Status
    detail: str
    fix: str = ""


def _dict(value: Any) -> dict[str, Any]:
    # Stored runs may come from an older probe: treat anything odd as absent.
    return value if isinstance(value, dict) else {}


def _cpu_count(machine: dict[str, Any]) -> int | None:
    count = machine.get("cpu_count")
    if isinstance(count, int) and count > 0:
        return count
    online = machine.get("cpus_online")
    return len(online) if isinstance(online, list) and online else None


def _user(privileges: dict[str, Any]) -> str:
    user = privileges.get("user")
    return user if isinstance(user, str) and user else "youruser"


def _limit_text(value: Any, unit: str = "") -> str:
    if value is None:
        return "unknown"
    if value == UNLIMITED:
        return "unlimited"
    if unit == "bytes" and isinstance(value, int):
        return f"{value // 1024} KiB"
    return str(value)


# --- checks ---------------------------------------------------------------


def check_rt_privilege(machine: dict[str, Any], privileges: dict[str, Any]) -> Finding:
    name = "rt-privilege"
    fifo = privileges.get("sched_fifo")
    if fifo is None:
        return Finding(name, "info", "privileges were not probed; cannot tell about SCHED_FIFO")
    euid = privileges.get("euid")
    soft = privileges.get("rlimit_rtprio_soft")
    cap = privileges.get("cap_sys_nice")
    user = _user(privileges)
    limits_line = f"{user}  -  rtprio  {AGENT_MAX_PRIORITY}"
    if fifo:
        if euid == 0 or cap:
            why = "root" if euid == 0 else "CAP_SYS_NICE"
            return Finding(name, "ok", f"SCHED_FIFO permitted ({why}): any priority up to 99")
        if isinstance(soft, int) and soft != UNLIMITED and soft < AGENT_MAX_PRIORITY:
            return Finding(
                name,
                "degraded",
                f"SCHED_FIFO permitted only up to priority {soft} (RLIMIT_RTPRIO); the "
                f"agent's case threads use priorities up to {AGENT_MAX_PRIORITY}, and those "
                "above the limit are refused",
                f"raise the limit: add `{limits_line}` to /etc/security/limits.conf "
                "and log in again",
            )
        return Finding(name, "ok", f"SCHED_FIFO permitted (RLIMIT_RTPRIO {_limit_text(soft)})")

    reason = privileges.get("sched_fifo_detail") or "sched_setscheduler refused"
    detail = (
        f"this process cannot use SCHED_FIFO ({reason}): the agent runs at normal "
        "priority and every figure of the run is flagged not_realtime"
    )
    if euid == 0:
        # Root refused means the refusal comes from outside the process.
        return Finding(
            name,
            "bad",
            detail + "; root is refused, so a container or cgroup withholds it",
            "in a container, grant CAP_SYS_NICE (docker run --cap-add=SYS_NICE "
            "--ulimit rtprio=99); with CONFIG_RT_GROUP_SCHED give the cgroup RT time, "
            "e.g. echo 950000 > /sys/fs/cgroup/cpu/<group>/cpu.rt_runtime_us",
        )
    return Finding(
        name,
        "bad",
        detail + f" (euid {euid}, RLIMIT_RTPRIO {_limit_text(soft)}, CAP_SYS_NICE {cap})",
        "one of: run as root (sudo rtbench ...); or give the agent binary the "
        "capability: sudo setcap cap_sys_nice+ep <agent>; or raise RLIMIT_RTPRIO: add "
        f"`{limits_line}` to /etc/security/limits.conf and log in again",
    )


def check_rt_throttling(machine: dict[str, Any], privileges: dict[str, Any]) -> Finding:
    name = "rt-throttling"
    thr = _dict(machine.get("rt_throttling"))
    runtime, period = thr.get("runtime_us"), thr.get("period_us")
    if not isinstance(runtime, int):
        return Finding(name, "info", "sched_rt_runtime_us not readable; cannot tell")
    if thr.get("enabled") is False:
        return Finding(name, "ok", f"RT throttling off (sched_rt_runtime_us = {runtime})")
    share = f"{runtime / period:.0%}" if isinstance(period, int) and period > 0 else "part"
    period_text = f"{period} µs" if isinstance(period, int) else "period"
    return Finding(
        name,
        "degraded",
        f"RT throttling on: RT tasks may use only {share} of each CPU ({runtime} of every "
        f"{period_text}); a case that keeps a CPU busy at RT priority is stopped for the "
        "rest of the period, which shows up as outliers of that length. Cases that "
        "mostly sleep are not affected",
        "sudo sh -c 'echo -1 > /proc/sys/kernel/sched_rt_runtime_us' (lasts until reboot; "
        "persist with kernel.sched_rt_runtime_us = -1 in /etc/sysctl.d/). Warning: "
        "without throttling a runaway RT task can starve the CPU and hang the machine",
    )


def check_clocksource(machine: dict[str, Any], privileges: dict[str, Any]) -> Finding:
    name = "clocksource"
    cs = _dict(machine.get("clocksource"))
    current = cs.get("current")
    available = cs.get("available") or []
    if not isinstance(current, str):
        return Finding(name, "info", "current clocksource not readable; cannot tell")
    if current in GOOD_CLOCKSOURCES:
        return Finding(name, "ok", f"{current}: a CPU counter read in user space, cheap")
    if current in VIRT_CLOCKSOURCES:
        return Finding(
            name,
            "ok",
            f"{current}: paravirtual clock, read in user space; fine for a VM"
            + (" (tsc is also available)" if "tsc" in available else ""),
        )
    if current in SLOW_CLOCKSOURCES:
        if "tsc" in available:
            fix = (
                "sudo sh -c 'echo tsc > "
                "/sys/devices/system/clocksource/clocksource0/current_clocksource' "
                "(persist: boot with clocksource=tsc)"
            )
        else:
            fix = (
                "the kernel did not offer tsc (it may have judged it unstable, see "
                "dmesg | grep -i clocksource); boot with tsc=reliable only if the CPU "
                "has an invariant TSC (constant_tsc nonstop_tsc flags)"
            )
        return Finding(
            name,
            "degraded",
            f"{current}: every clock read goes to a slow device through a system call, "
            "so timestamps cost much more and add their own jitter to the results",
            fix,
        )
    return Finding(name, "info", f"{current}: not a clocksource this check knows")


def check_cpu_governor(machine: dict[str, Any], privileges: dict[str, Any]) -> Finding:
    name = "cpu-governor"
    if machine.get("cpufreq") is None:
        return Finding(name, "info", "CPU sysfs not readable; cannot tell the governor")
    freq = _dict(machine.get("cpufreq"))
    governors = _dict(freq.get("governors"))
    if not freq.get("available") or not governors:
        return Finding(
            name,
            "info",
            "no cpufreq: the frequency is fixed or managed by firmware or the hypervisor "
            "(normal in a VM); rtbench cannot check it",
        )
    by_gov: dict[str, list[int]] = {}
    for cpu, gov in governors.items():
        by_gov.setdefault(str(gov), []).append(int(cpu))
    summary = "; ".join(f"{g} on CPUs {format_cpulist(c)}" for g, c in sorted(by_gov.items()))
    others = sorted(g for g in by_gov if g not in ("performance", "userspace"))
    if not others:
        return Finding(name, "ok", summary)
    return Finding(
        name,
        "degraded",
        f"{summary}: with {', '.join(others)} the clock speed follows the load, so the "
        "same work takes a different time and wake-ups from a slow clock add latency",
        "sudo cpupower frequency-set -g performance, or: for g in "
        "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; do echo performance | "
        "sudo tee $g; done",
    )


def check_preemption(machine: dict[str, Any], privileges: dict[str, Any]) -> Finding:
    name = "preemption"
    pre = _dict(machine.get("preemption"))
    model, mode = pre.get("model"), pre.get("mode")
    if not isinstance(model, str):
        return Finding(name, "info", "kernel version not readable; preemption model unknown")
    rt_kernel_fix = (
        "install a PREEMPT_RT kernel (Debian: linux-image-rt-amd64; Ubuntu: the realtime "
        "kernel; or build with CONFIG_PREEMPT_RT)"
    )
    switch_fix = (
        "boot with preempt=full on the kernel command line, or switch now: "
        "echo full | sudo tee /sys/kernel/debug/sched/preempt (needs debugfs: "
        "mount -t debugfs none /sys/kernel/debug)"
    )
    if model == "PREEMPT_RT":
        return Finding(name, "ok", "PREEMPT_RT: the kernel built for bounded latency")
    if model == "PREEMPT_DYNAMIC":
        where = f" (from {pre.get('mode_source')})" if pre.get("mode_source") else ""
        if mode in ("full", "lazy"):
            return Finding(
                name,
                "ok",
                f"PREEMPT_DYNAMIC in mode {mode}{where}: fully preemptible; PREEMPT_RT "
                "bounds worst cases further",
                "",
            )
        if mode in ("none", "voluntary"):
            return Finding(
                name,
                "degraded",
                f"PREEMPT_DYNAMIC in mode {mode}{where}: kernel code runs to the next "
                "preemption point before an RT task gets the CPU, which lengthens worst "
                "cases by milliseconds",
                f"{switch_fix}; best: {rt_kernel_fix}",
            )
        return Finding(
            name,
            "info",
            "PREEMPT_DYNAMIC, but the mode in effect could not be read",
            "as root: mount -t debugfs none /sys/kernel/debug; "
            "cat /sys/kernel/debug/sched/preempt (the mode in parentheses); "
            f"make it full: {switch_fix}",
        )
    if model in ("PREEMPT", "PREEMPT_LAZY"):
        return Finding(
            name, "ok", f"{model}: fully preemptible; PREEMPT_RT bounds worst cases further"
        )
    label = {
        "PREEMPT_VOLUNTARY": "PREEMPT_VOLUNTARY",
        "PREEMPT_NONE": "PREEMPT_NONE",
    }.get(model, "no preemption flag in the version string (PREEMPT_NONE or _VOLUNTARY)")
    return Finding(
        name,
        "degraded",
        f"{label}: kernel code is not preempted, so an RT task waits for the running "
        "system call or interrupt work to finish; worst cases grow by milliseconds",
        f"{rt_kernel_fix}, or a kernel with CONFIG_PREEMPT_DYNAMIC booted with preempt=full",
    )


def _isolation_example(machine: dict[str, Any]) -> str:
    n = _cpu_count(machine) or 4
    if n < 2:
        return "isolcpus=... needs a second CPU: leave CPU 0 for housekeeping"
    lo = max(1, n // 2)
    cpus = str(n - 1) if lo >= n - 1 else f"{lo}-{n - 1}"
    return (
        f"boot with isolcpus={cpus} nohz_full={cpus} rcu_nocbs={cpus} (keep CPU 0 for "
        "housekeeping) and run the agent on an isolated CPU"
    )


def check_isolated_cpus(machine: dict[str, Any], privileges: dict[str, Any]) -> Finding:
    name = "isolated-cpus"
    isolated = machine.get("cpus_isolated")
    nohz = machine.get("cpus_nohz_full")
    if not isinstance(isolated, list):
        return Finding(name, "info", "isolated CPU list not readable; cannot tell")
    nohz_text = f"; nohz_full: {format_cpulist(nohz) or 'none'}" if isinstance(nohz, list) else ""
    if isolated:
        return Finding(
            name,
            "ok",
            f"CPUs {format_cpulist(isolated)} isolated{nohz_text}: run the agent on one of "
            "them to keep other tasks away from the measurement",
        )
    return Finding(
        name,
        "info",
        f"no isolated CPUs{nohz_text}: the measured CPU is shared with every other task "
        "and its interrupts",
        _isolation_example(machine),
    )


def check_tracefs(machine: dict[str, Any], privileges: dict[str, Any]) -> Finding:
    name = "tracefs"
    tfs = machine.get("tracefs")
    if not isinstance(tfs, dict):
        return Finding(name, "info", "tracefs state not readable; cannot tell")
    if not tfs.get("mounted"):
        return Finding(
            name,
            "info",
            "tracefs not mounted: rtbench cannot record kernel events to explain outliers "
            "(the measurements themselves are not affected)",
            "sudo mount -t tracefs nodev /sys/kernel/tracing",
        )
    path = tfs.get("path")
    if not tfs.get("readable"):
        return Finding(
            name,
            "info",
            f"tracefs mounted at {path} but not readable by this user",
            "run as root to use tracing",
        )
    groups = _dict(tfs.get("event_groups"))
    present = [g for g, ok in groups.items() if ok]
    missing = [g for g, ok in groups.items() if not ok]
    tracers = tfs.get("tracers") or []
    detail = (
        f"tracefs at {path}; tracers: {' '.join(tracers) or 'none'}; "
        f"event groups: {' '.join(present) or 'none'}"
    )
    if missing:
        # irq_vectors exists on x86 only, so a gap is informative, not a fault.
        detail += f" (missing: {' '.join(missing)})"
    return Finding(name, "ok", detail)


def check_memlock(machine: dict[str, Any], privileges: dict[str, Any]) -> Finding:
    name = "memlock"
    soft = privileges.get("rlimit_memlock_soft")
    if privileges.get("euid") == 0 or privileges.get("cap_ipc_lock"):
        return Finding(name, "ok", "CAP_IPC_LOCK (root): mlockall is not limited")
    if soft is None:
        return Finding(name, "info", "RLIMIT_MEMLOCK not probed; cannot tell")
    if soft == UNLIMITED or (isinstance(soft, int) and soft >= MEMLOCK_ENOUGH):
        return Finding(name, "ok", f"RLIMIT_MEMLOCK {_limit_text(soft, 'bytes')}")
    user = _user(privileges)
    return Finding(
        name,
        "degraded",
        f"RLIMIT_MEMLOCK {_limit_text(soft, 'bytes')}: mlockall() cannot lock the "
        "agent's memory (thread stacks and buffers), so pages can be faulted or swapped "
        "in mid-measurement, adding latency",
        f"add `{user}  -  memlock  unlimited` to /etc/security/limits.conf and log in "
        "again, or run as root, or sudo setcap cap_ipc_lock+ep <agent>",
    )


def check_virtualization(machine: dict[str, Any], privileges: dict[str, Any]) -> Finding:
    name = "virtualization"
    hv = machine.get("hypervisor")
    if hv is None:
        return Finding(name, "info", "cannot tell whether this is a VM (no x86 CPU flags)")
    if not hv:
        return Finding(name, "ok", "bare metal (no hypervisor flag)")
    return Finding(
        name,
        "degraded",
        "running under a hypervisor: the host's scheduler, interrupts and vCPU "
        "preemption add latency that the guest cannot see or control; compare only runs "
        "made on the same VM setup",
        "for absolute figures run on bare metal; in a VM, pin each vCPU to a dedicated "
        "(isolated) host CPU and run an RT kernel on the host",
    )


def check_smt(machine: dict[str, Any], privileges: dict[str, Any]) -> Finding:
    name = "smt"
    smt = _dict(machine.get("smt"))
    active = smt.get("active")
    if active is None:
        return Finding(name, "info", "SMT state not readable; cannot tell")
    if not active:
        return Finding(name, "ok", f"SMT off (control: {smt.get('control') or 'unknown'})")
    return Finding(
        name,
        "info",
        "SMT on: two hardware threads share each core, so work on the sibling of the "
        "measured CPU slows it down",
        "keep the measured CPU's sibling idle (isolate both), or turn SMT off: "
        "echo off | sudo tee /sys/devices/system/cpu/smt/control (boot: nosmt)",
    )


def check_load(machine: dict[str, Any], privileges: dict[str, Any]) -> Finding:
    name = "load"
    load = machine.get("loadavg")
    cpus = _cpu_count(machine)
    if not isinstance(load, list) or not load or cpus is None:
        return Finding(name, "info", "load average or CPU count not readable; cannot tell")
    load1 = float(load[0])
    text = f"1-minute load {load1:.2f} on {cpus} CPU{'s' if cpus != 1 else ''}"
    if load1 <= LOAD_PER_CPU_HIGH * cpus:
        return Finding(name, "ok", f"{text}: quiet")
    return Finding(
        name,
        "degraded",
        f"{text}: other work competes with the measurement for caches, memory and "
        "interrupts, and results will vary with it",
        "stop other work (builds, VMs, indexers) before measuring, or measure on "
        "isolated CPUs; ignore this if measuring under load is the point",
    )


def check_thp(machine: dict[str, Any], privileges: dict[str, Any]) -> Finding:
    name = "thp"
    thp = machine.get("thp")
    if not isinstance(thp, str):
        return Finding(name, "info", "transparent huge page setting not readable")
    if thp != "always":
        return Finding(name, "ok", f"transparent huge pages: {thp}")
    return Finding(
        name,
        "info",
        "transparent huge pages: always; page faults may compact memory and khugepaged "
        "runs in the background, both occasional latency sources",
        "echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/enabled",
    )


CHECKS: tuple[Callable[[dict[str, Any], dict[str, Any]], Finding], ...] = (
    check_rt_privilege,
    check_rt_throttling,
    check_preemption,
    check_clocksource,
    check_cpu_governor,
    check_isolated_cpus,
    check_smt,
    check_virtualization,
    check_load,
    check_memlock,
    check_tracefs,
    check_thp,
)


def run_doctor(machine: dict[str, Any], privileges: dict[str, Any]) -> list[Finding]:
    """One finding per check, in `CHECKS` order (most important first)."""
    findings: list[Finding] = []
    for check in CHECKS:
        try:
            findings.append(check(machine, privileges))
        except Exception as exc:  # metadata of an old run may hold shapes we never wrote
            name = check.__name__.removeprefix("check_").replace("_", "-")
            findings.append(Finding(name, "info", f"could not check: {type(exc).__name__}: {exc}"))
    return findings


def doctor_exit_code(findings: Sequence[Finding]) -> int:
    """0 when nothing is bad (degraded results are still results), 1 otherwise."""
    return 1 if any(f.status == "bad" for f in findings) else 0


def render_findings(findings: Sequence[Finding], console: Console) -> None:
    """One row per finding coloured by status, the fix under its detail, then a tally."""
    # A grid, not lines: long details wrap under themselves instead of under
    # the status column, so the status column stays scannable.
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for f in findings:
        # Text, not markup: details hold brackets and paths rich would misread.
        body = Text(f.detail)
        if f.fix:
            body.append("\nfix: ", style="dim")
            body.append(f.fix)
        table.add_row(
            Text(f.status, style=_STATUS_STYLE.get(f.status, "")),
            Text(f.name, style="bold"),
            body,
        )
    console.print(table)
    summary = Text()
    for i, status in enumerate(_STATUS_STYLE):
        n = sum(1 for f in findings if f.status == status)
        if i:
            summary.append(", ")
        summary.append(f"{n} {status}", style=_STATUS_STYLE[status] if n else "dim")
    console.print(summary)


# The checks of what the CPUs do between wake-ups have a module of their own,
# which takes Finding from this one: imported last, once Finding exists.
from rtbench.machine.doctor_cpu import CPU_CHECKS  # noqa: E402

CHECKS = (*CHECKS, *CPU_CHECKS)
