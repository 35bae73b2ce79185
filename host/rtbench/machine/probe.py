"""Machine metadata stored with every run, and the current process's privileges.

`probe_machine()` reads /proc and /sys relative to a root directory, so tests
can point it at a fake tree. Every item is read by one small function in
`_ITEMS`; an item that cannot be read is None, never an exception, because a
run must still be stored on a machine where half of /sys is hidden (a
container, a VM, a non-root user).

Nothing here runs at import time: probing happens only when a function is
called.
"""

from __future__ import annotations

import gzip
import itertools
import os
import platform
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rtbench import __version__
from rtbench.machine import probe_cpu, probe_system

# Bumped when a key changes meaning, so stored runs can be read correctly later.
PROBE_SCHEMA = 1

# The trace event groups that explain latency outliers (interrupts, scheduler,
# timers, x86 interrupt vectors).
TRACE_EVENT_GROUPS = ("irq", "sched", "timer", "irq_vectors")

# Where tracefs can live: its own mount point (4.1+), or the legacy path inside
# debugfs, which the kernel automounts on access.
TRACEFS_PATHS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")

# CapEff bits (include/uapi/linux/capability.h).
CAP_IPC_LOCK = 14
CAP_SYS_NICE = 23

# Limits are stored as plain ints; -1 means unlimited, the same convention as
# sched_rt_runtime_us, so the dict stays JSON-able.
UNLIMITED = -1

_CPU_DIR = "sys/devices/system/cpu"


# --- small readers ----------------------------------------------------------


def _read(root: Path, rel: str) -> str | None:
    """The file's text without the trailing newline, or None if unreadable."""
    try:
        return (root / rel.lstrip("/")).read_text(errors="replace").rstrip("\n")
    except (OSError, ValueError):
        return None


def _isdir(path: Path) -> bool:
    # Path.is_dir() raises PermissionError under a directory we may not search
    # (debugfs is 0700); for a probe that simply means "cannot see it".
    try:
        return path.is_dir()
    except OSError:
        return False


def _listdir(path: Path) -> list[str] | None:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return None


def parse_cpulist(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]; '' and '(null)' -> []."""
    text = text.strip()
    if not text or text == "(null)":
        return []
    cpus: list[int] = []
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        if sep:
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(lo))
    return sorted(set(cpus))


def format_cpulist(cpus: list[int]) -> str:
    """[0, 1, 2, 3, 8] -> '0-3,8' (the kernel's own cpulist form)."""
    parts: list[str] = []
    ordered = sorted(set(cpus))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def _bracketed(text: str) -> str | None:
    """The selected word of a sysfs choice list: 'always [madvise] never' -> 'madvise'."""
    m = re.search(r"\[([^\]]+)\]", text)
    return m.group(1) if m else None


def _cpuinfo(root: Path) -> list[dict[str, str]] | None:
    """/proc/cpuinfo as one dict per block (per CPU on x86, plus a trailer on ARM)."""
    text = _read(root, "proc/cpuinfo")
    if text is None:
        return None
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        key, sep, value = line.partition(":")
        if sep:
            current.setdefault(key.strip(), value.strip())
    if current:
        blocks.append(current)
    return blocks


def _kernel_config(root: Path, release: str | None) -> dict[str, str] | None:
    """CONFIG_* values from /proc/config.gz or /boot/config-<release>, if present."""
    text: str | None = None
    try:
        with gzip.open(root / "proc/config.gz", "rt", errors="replace") as f:
            text = f.read()
    except (OSError, EOFError, ValueError):
        text = None
    if text is None and release:
        text = _read(root, f"boot/config-{release}")
    if text is None:
        return None
    config: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.startswith("CONFIG_"):
            config[key] = value
    return config


def _mounts(root: Path) -> dict[str, str] | None:
    """Mount point -> filesystem type, from /proc/mounts."""
    text = _read(root, "proc/mounts")
    if text is None:
        return None
    mounts: dict[str, str] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            mounts[fields[1]] = fields[2]
    return mounts


# --- one function per item -------------------------------------------------


def _hostname(root: Path) -> str | None:
    name = _read(root, "proc/sys/kernel/hostname")
    if name is None and root == Path("/"):
        # Non-Linux or /proc hidden: the C library still knows.
        name = socket.gethostname() or None
    return name


def _kernel_release(root: Path) -> str | None:
    return _read(root, "proc/sys/kernel/osrelease")


def _kernel_version(root: Path) -> str | None:
    return _read(root, "proc/version")


def _preemption(root: Path) -> dict[str, Any] | None:
    """The preemption model and, for PREEMPT_DYNAMIC, the mode in effect.

    The uname version string carries one flag (init/Makefile: the last of
    PREEMPT, PREEMPT_DYNAMIC, PREEMPT_RT that is configured); no flag means
    PREEMPT_NONE or PREEMPT_VOLUNTARY, which only the kernel config can tell
    apart. The dynamic mode is read from debugfs when it is readable (root),
    else from `preempt=` on the command line, else the config's default.
    """
    version = " ".join(
        v
        for v in (_read(root, "proc/version"), _read(root, "proc/sys/kernel/version"))
        if v is not None
    )
    tokens = version.split()
    config = _kernel_config(root, _read(root, "proc/sys/kernel/osrelease")) or {}
    realtime_file = _read(root, "sys/kernel/realtime")
    debugfs = _read(root, "sys/kernel/debug/sched/preempt")
    cmdline = _read(root, "proc/cmdline") or ""

    def cfg(name: str) -> bool:
        return config.get(f"CONFIG_{name}") == "y"

    # Old -rt patch sets wrote "PREEMPT RT" as two words.
    old_rt = any(a == "PREEMPT" and b == "RT" for a, b in itertools.pairwise(tokens))
    realtime = "PREEMPT_RT" in tokens or old_rt or realtime_file == "1" or cfg("PREEMPT_RT")
    dynamic = "PREEMPT_DYNAMIC" in tokens or cfg("PREEMPT_DYNAMIC") or debugfs is not None

    # The static choice in the config is also the dynamic kernel's boot default.
    default_mode: str | None = None
    for option, option_mode in (
        ("PREEMPT_NONE", "none"),
        ("PREEMPT_VOLUNTARY", "voluntary"),
        ("PREEMPT", "full"),
        ("PREEMPT_LAZY", "lazy"),
    ):
        if cfg(option):
            default_mode = option_mode

    model: str | None
    if realtime:
        model = "PREEMPT_RT"
    elif dynamic:
        model = "PREEMPT_DYNAMIC"
    elif "PREEMPT" in tokens or cfg("PREEMPT"):
        model = "PREEMPT"
    elif "PREEMPT_LAZY" in tokens or cfg("PREEMPT_LAZY"):
        model = "PREEMPT_LAZY"
    elif cfg("PREEMPT_VOLUNTARY"):
        model = "PREEMPT_VOLUNTARY"
    elif cfg("PREEMPT_NONE"):
        model = "PREEMPT_NONE"
    elif tokens:
        model = "NONE_OR_VOLUNTARY"
    else:
        return None

    modes: list[str] | None = None
    mode: str | None = None
    mode_source: str | None = None
    if debugfs is not None:
        modes = [w.strip("()") for w in debugfs.split()]
        mode = _bracketed(debugfs.replace("(", "[").replace(")", "]"))
        mode_source = "debugfs"
    if mode is None and dynamic:
        m = re.search(r"(?:^|\s)preempt=(\S+)", cmdline)
        if m:
            mode, mode_source = m.group(1), "cmdline"
    # PREEMPT_RT only runs in full or lazy mode, whatever else the config says.
    if (
        mode is None
        and dynamic
        and default_mode is not None
        and (not realtime or default_mode in ("full", "lazy"))
    ):
        mode, mode_source = default_mode, "config"
    if mode is None:
        static = {
            "PREEMPT_RT": "full",
            "PREEMPT": "full",
            "PREEMPT_LAZY": "lazy",
            "PREEMPT_VOLUNTARY": "voluntary",
            "PREEMPT_NONE": "none",
        }
        if model in static:
            mode, mode_source = static[model], "model"

    return {
        "model": model,
        "mode": mode,
        "mode_source": mode_source,
        "modes": modes,
        "realtime": realtime,
    }


def _cmdline(root: Path) -> str | None:
    return _read(root, "proc/cmdline")


def _cpu_model(root: Path) -> str | None:
    blocks = _cpuinfo(root)
    if not blocks:
        return None
    # x86, then the names other architectures use (ARM boards, MIPS, PowerPC, RISC-V).
    for key in ("model name", "Model", "Hardware", "cpu model", "cpu", "uarch"):
        for block in blocks:
            if block.get(key):
                return block[key]
    first = blocks[0]
    if "CPU implementer" in first:
        # arm64 names no model, only the ID registers.
        return f"implementer {first['CPU implementer']} part {first.get('CPU part', '?')}"
    return None


def _cpu_count(root: Path) -> int | None:
    blocks = _cpuinfo(root)
    if blocks:
        n = sum(1 for b in blocks if "processor" in b and b["processor"].isdigit())
        if n:
            return n
    online = _cpus_online(root)
    return len(online) if online else None


def _cpulist_file(root: Path, name: str) -> list[int] | None:
    text = _read(root, f"{_CPU_DIR}/{name}")
    return None if text is None else parse_cpulist(text)


def _cpus_online(root: Path) -> list[int] | None:
    return _cpulist_file(root, "online")


def _cpus_isolated(root: Path) -> list[int] | None:
    return _cpulist_file(root, "isolated")


def _cpus_nohz_full(root: Path) -> list[int] | None:
    # Absent unless the kernel has CONFIG_NO_HZ_FULL.
    return _cpulist_file(root, "nohz_full")


def _clocksource(root: Path) -> dict[str, Any] | None:
    base = "sys/devices/system/clocksource/clocksource0"
    current = _read(root, f"{base}/current_clocksource")
    available = _read(root, f"{base}/available_clocksource")
    if current is None and available is None:
        return None
    return {
        "current": current.strip() if current is not None else None,
        "available": available.split() if available is not None else None,
    }


def _cpufreq(root: Path) -> dict[str, Any] | None:
    """The governor of every CPU; `available` False when there is no cpufreq.

    No cpufreq is normal in a VM or on boards whose firmware owns the clock,
    and is not the same as "unknown" (None: the CPU directory is unreadable).
    """
    entries = _listdir(root / _CPU_DIR)
    if entries is None:
        return None
    cpus = sorted(int(e[3:]) for e in entries if re.fullmatch(r"cpu\d+", e))
    governors: dict[str, str] = {}
    for n in cpus:
        gov = _read(root, f"{_CPU_DIR}/cpu{n}/cpufreq/scaling_governor")
        if gov:
            governors[str(n)] = gov.strip()
    driver = _read(root, f"{_CPU_DIR}/cpufreq/policy0/scaling_driver")
    if driver is None and cpus:
        driver = _read(root, f"{_CPU_DIR}/cpu{cpus[0]}/cpufreq/scaling_driver")
    return {"available": bool(governors), "governors": governors, "driver": driver}


def _int_or_none(text: str | None) -> int | None:
    return int(text.strip()) if text is not None else None


def _rt_throttling(root: Path) -> dict[str, Any] | None:
    runtime = _int_or_none(_read(root, "proc/sys/kernel/sched_rt_runtime_us"))
    period = _int_or_none(_read(root, "proc/sys/kernel/sched_rt_period_us"))
    if runtime is None and period is None:
        return None
    # runtime >= period grants RT tasks the whole period: no throttling.
    enabled = None if runtime is None else runtime != -1 and (period is None or runtime < period)
    return {"runtime_us": runtime, "period_us": period, "enabled": enabled}


def _loadavg(root: Path) -> list[float] | None:
    text = _read(root, "proc/loadavg")
    if text is None:
        return None
    return [float(x) for x in text.split()[:3]]


def _mem_total_bytes(root: Path) -> int | None:
    text = _read(root, "proc/meminfo")
    if text is None:
        return None
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            fields = line.split()
            scale = 1024 if len(fields) > 2 and fields[2].lower() == "kb" else 1
            return int(fields[1]) * scale
    return None


def _tracefs(root: Path) -> dict[str, Any] | None:
    mounts = _mounts(root)
    if mounts is None and not _isdir(root / "sys/kernel"):
        return None
    for path in TRACEFS_PATHS:
        tracers = _read(root, f"{path}/available_tracers")
        mounted = tracers is not None or (mounts or {}).get(path) == "tracefs"
        if not mounted:
            continue
        events_dir = root / path.lstrip("/") / "events"
        readable = tracers is not None
        return {
            "mounted": True,
            "path": path,
            # tracefs is root-only by default: mounted but unreadable is common.
            "readable": readable,
            "tracers": tracers.split() if tracers is not None else None,
            "event_groups": (
                {g: _isdir(events_dir / g) for g in TRACE_EVENT_GROUPS} if readable else None
            ),
        }
    return {
        "mounted": False,
        "path": None,
        "readable": False,
        "tracers": None,
        "event_groups": None,
    }


def _smt(root: Path) -> dict[str, Any] | None:
    active_text = _read(root, f"{_CPU_DIR}/smt/active")
    control = _read(root, f"{_CPU_DIR}/smt/control")
    active: bool | None = None
    if active_text is not None:
        active = active_text.strip() == "1"
    else:
        # Kernels without the smt directory: a CPU with siblings means SMT is on.
        siblings = _read(root, f"{_CPU_DIR}/cpu0/topology/thread_siblings_list")
        if siblings is not None:
            active = len(parse_cpulist(siblings)) > 1
    if active is None and control is None:
        return None
    return {"active": active, "control": control.strip() if control is not None else None}


def _thp(root: Path) -> str | None:
    text = _read(root, "sys/kernel/mm/transparent_hugepage/enabled")
    return _bracketed(text) if text is not None else None


def _hypervisor(root: Path) -> bool | None:
    """True under a hypervisor; None when this architecture cannot say."""
    hv_type = _read(root, "sys/hypervisor/type")
    if hv_type:
        return True
    blocks = _cpuinfo(root)
    if not blocks:
        return None
    flags = next((b["flags"] for b in blocks if "flags" in b), None)
    if flags is None:
        # Only x86 publishes the CPUID hypervisor bit as a flag.
        return None
    return "hypervisor" in flags.split()


def _python_version(root: Path) -> str:
    return platform.python_version()


def _rtbench_version(root: Path) -> str:
    return __version__


def _schema(root: Path) -> int:
    return PROBE_SCHEMA


_ITEMS: tuple[tuple[str, Callable[[Path], Any]], ...] = (
    ("schema", _schema),
    ("hostname", _hostname),
    ("kernel_release", _kernel_release),
    ("kernel_version", _kernel_version),
    ("preemption", _preemption),
    ("cmdline", _cmdline),
    ("cpu_model", _cpu_model),
    ("cpu_count", _cpu_count),
    ("cpus_online", _cpus_online),
    ("cpus_isolated", _cpus_isolated),
    ("cpus_nohz_full", _cpus_nohz_full),
    ("clocksource", _clocksource),
    ("cpufreq", _cpufreq),
    ("rt_throttling", _rt_throttling),
    ("loadavg", _loadavg),
    ("mem_total_bytes", _mem_total_bytes),
    ("tracefs", _tracefs),
    ("smt", _smt),
    ("thp", _thp),
    ("hypervisor", _hypervisor),
    ("cpuidle", probe_cpu.cpuidle),
    ("irq_affinity", probe_cpu.irq_affinity),
    ("smi", probe_cpu.smi_count),
    ("dmi", probe_system.dmi),
    ("kernel_config", probe_system.kernel_config),
    ("services", probe_system.services),
    ("python_version", _python_version),
    ("rtbench_version", _rtbench_version),
)

PROBE_KEYS: tuple[str, ...] = (*(key for key, _ in _ITEMS), "probe_errors")


def probe_machine(root: Path = Path("/")) -> dict[str, Any]:
    """Machine metadata as a JSON-able dict (keys: `PROBE_KEYS`).

    Files are read under `root`. An item that cannot be read is None; an item
    whose content could not be parsed is None too, and the reason goes into
    `probe_errors` (item -> message) so a strange kernel is visible, not fatal.
    """
    machine: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for key, probe in _ITEMS:
        try:
            machine[key] = probe(root)
        except Exception as exc:  # one odd file must not lose the whole record
            machine[key] = None
            errors[key] = f"{type(exc).__name__}: {exc}"
    machine["probe_errors"] = errors
    return machine


# --- privileges of the current process --------------------------------------


def _rlimit(name: str) -> tuple[int | None, int | None]:
    # Imported here so that the host package still imports where `resource`
    # does not exist (a Windows host reading a serial line).
    try:
        import resource

        soft, hard = resource.getrlimit(getattr(resource, name))
    except (ImportError, AttributeError, OSError, ValueError):
        return None, None

    def norm(value: int) -> int:
        return UNLIMITED if value == resource.RLIM_INFINITY else value

    return norm(soft), norm(hard)


def _capability(bit: int) -> bool | None:
    text = _read(Path("/"), "proc/self/status")
    if text is None:
        return None
    for line in text.splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> bit & 1)
    return None


def _try_sched_fifo() -> tuple[bool, str]:
    """Whether this thread may switch to SCHED_FIFO priority 1; restores at once.

    Trying is the only reliable answer: root can still be refused (a container
    without CAP_SYS_NICE, a cgroup with no RT runtime), and a plain user can be
    allowed (RLIMIT_RTPRIO, file capabilities).
    """
    if not all(
        hasattr(os, f) for f in ("sched_setscheduler", "sched_getscheduler", "sched_getparam")
    ):
        return False, "sched_setscheduler is not available on this platform"
    policy = os.sched_getscheduler(0)
    param = os.sched_getparam(0)
    rt_policies = (os.SCHED_FIFO, os.SCHED_RR)
    # glibc returns SCHED_RESET_ON_FORK or'ed into the policy.
    reset_on_fork = getattr(os, "SCHED_RESET_ON_FORK", 0)
    if policy & ~reset_on_fork in rt_policies:
        # Already real-time (e.g. started under chrt): nothing to try, and
        # switching away could be impossible to undo without privilege.
        return True, f"already real-time (policy {policy}, priority {param.sched_priority})"
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except OSError as exc:
        return False, f"sched_setscheduler(SCHED_FIFO, 1) refused: {exc.strerror or exc}"
    try:
        os.sched_setscheduler(0, policy, param)
    except OSError as exc:
        # Lowering the policy is always allowed, so this is a kernel surprise;
        # staying SCHED_FIFO silently would distort everything that follows.
        raise RuntimeError(f"could not restore scheduling policy {policy}: {exc}") from exc
    return True, ""


def _user_name(uid: int) -> str | None:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return None


def probe_privileges() -> dict[str, Any]:
    """What the current process may do for real-time measurement.

    Keys: euid, user, sched_fifo (bool), sched_fifo_detail, cap_sys_nice,
    cap_ipc_lock (bool or None), rlimit_rtprio_soft/_hard and
    rlimit_memlock_soft/_hard (int, -1 = unlimited, None = unknown; memlock in
    bytes).
    """
    euid = os.geteuid()
    ok, detail = _try_sched_fifo()
    rtprio_soft, rtprio_hard = _rlimit("RLIMIT_RTPRIO")
    memlock_soft, memlock_hard = _rlimit("RLIMIT_MEMLOCK")
    return {
        "euid": euid,
        "user": _user_name(euid),
        "sched_fifo": ok,
        "sched_fifo_detail": detail,
        "cap_sys_nice": _capability(CAP_SYS_NICE),
        "cap_ipc_lock": _capability(CAP_IPC_LOCK),
        "rlimit_rtprio_soft": rtprio_soft,
        "rlimit_rtprio_hard": rtprio_hard,
        "rlimit_memlock_soft": memlock_soft,
        "rlimit_memlock_hard": memlock_hard,
    }
