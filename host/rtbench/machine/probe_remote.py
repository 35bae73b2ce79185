"""The machine probe of a target reached by a shell (SSH): one remote `sh`
prints the /proc and /sys files `rtbench.machine.probe` reads, framed by marker
lines; the host rebuilds them under a temporary root and runs the same
`probe_machine` over it. So an SSH run stores the target's system report
(kernel, preemption, CPUs, cpufreq, C-states, interrupt affinities,
firmware, kernel configuration, services), read over the same path as its
agent, never this host's. What needs more than a file read (the SMI
counter's MSR) stays unread.
"""

from __future__ import annotations

import gzip
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rtbench.machine import probe
from rtbench.machine.probe_system import DMI_FIELDS

_C = "/sys/devices/system/cpu"
_CS = "/sys/devices/system/clocksource/clocksource0"
_FILES = (
    "/proc/cpuinfo /proc/mounts /proc/sys/kernel/hostname /proc/sys/kernel/osrelease "
    "/proc/version /proc/sys/kernel/version /sys/kernel/realtime "
    "/sys/kernel/debug/sched/preempt /proc/cmdline /proc/loadavg /proc/meminfo "
    "/proc/sys/kernel/sched_rt_runtime_us /proc/sys/kernel/sched_rt_period_us "
    "/sys/kernel/mm/transparent_hugepage/enabled /sys/hypervisor/type /proc/interrupts "
    "/proc/irq/default_smp_affinity /proc/irq/*/smp_affinity_list "
    f"{_C}/online {_C}/isolated {_C}/nohz_full {_C}/smt/active {_C}/smt/control "
    f"{_C}/cpu0/topology/thread_siblings_list {_C}/cpufreq/policy0/scaling_driver "
    f"{_C}/cpu*/cpufreq/scaling_governor {_C}/cpu*/cpufreq/scaling_driver "
    f"{_C}/cpuidle/current_driver {_C}/cpuidle/current_governor "
    f"{_C}/cpu0/cpuidle/state*/name {_C}/cpu0/cpuidle/state*/latency "
    f"{_C}/cpu0/cpuidle/state*/disable {_CS}/current_clocksource {_CS}/available_clocksource "
    + " ".join(f"/sys/class/dmi/id/{f}" for f in DMI_FIELDS)
    + " ".join(f" {t}/available_tracers" for t in probe.TRACEFS_PATHS)
)
_DIRS = (
    f"/sys/kernel {_C}/cpu[0-9]* {_C}/cpu0/cpuidle/state* /sys/fs/cgroup/system.slice "
    "/sys/fs/cgroup/system.slice/*.service /sys/fs/cgroup/systemd/system.slice "
    "/sys/fs/cgroup/systemd/system.slice/*.service "
    + " ".join(f"{t}/events/{g}" for t in probe.TRACEFS_PATHS for g in probe.TRACE_EVENT_GROUPS)
)
# POSIX sh (busybox too); /proc/config.gz decompressed on the target (text
# on the wire) and compressed again by `unpack`.
SCRIPT = f"""
f() {{ for p in "$@"; do [ -f "$p" ] && [ -r "$p" ] &&
  {{ printf '\\n@@rtbench-file %s\\n' "$p"; cat "$p" 2>/dev/null; }}; done; }}
d() {{ for p in "$@"; do [ -d "$p" ] && printf '\\n@@rtbench-dir %s\\n' "$p"; done; }}
f {_FILES}
d {_DIRS}
[ -e /dev/cpu_dma_latency ] && printf '\\n@@rtbench-file /dev/cpu_dma_latency\\n'
r=$(uname -r)
if [ -r /proc/config.gz ]; then
  printf '\\n@@rtbench-gz /proc/config.gz\\n'; gzip -dc /proc/config.gz 2>/dev/null
else
  f "/boot/config-$r"
fi
exit 0
"""

_FRAME = re.compile(r"\n@@rtbench-(file|dir|gz) ([^\n]*)\n")


def unpack(text: str, root: Path) -> int:
    """Writes the script's output as files and folders under `root`;
    returns how many entries it held."""
    parts = _FRAME.split(text)
    n = 0
    for i in range(1, len(parts) - 2, 3):
        kind, path, content = parts[i], parts[i + 1], parts[i + 2]
        rel = path.strip().lstrip("/")
        if not rel or ".." in Path(rel).parts:
            continue
        target = root / rel
        n += 1
        if kind == "dir":
            target.mkdir(parents=True, exist_ok=True)
        elif kind == "gz":
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(gzip.compress(content.encode()))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content + "\n")
    return n


def probe_text(
    text: str, where: str, config: Path | None = None, release: str = ""
) -> dict[str, Any]:
    """`probe_machine` over the script's output `text` (a QEMU guest's
    /init sends it on the stream port); `where` goes in `probed_on`.
    `config`: this host's copy of the config of the kernel `release` the
    guest booted (the kernel cache keeps the package's /boot/config-*),
    used when the guest runs that release and has no config of its own
    (Debian's kernels have no /proc/config.gz, an initramfs no /boot);
    `kernel_config.source` then names it."""
    with tempfile.TemporaryDirectory(prefix="rtbench-probe-") as d:
        root = Path(d)
        unpack(text, root)
        osrelease = root / "proc/sys/kernel/osrelease"
        booted = osrelease.read_text(errors="replace").strip() if osrelease.is_file() else ""
        borrowed = (
            config
            if config is not None
            and config.is_file()
            and release
            and booted == release
            and not (root / "proc/config.gz").exists()
            and not (root / f"boot/config-{release}").exists()
            else None
        )
        if borrowed is not None:
            (root / "boot").mkdir(exist_ok=True)
            shutil.copyfile(borrowed, root / f"boot/config-{release}")
        machine = probe.probe_machine(root)
    if borrowed is not None and machine.get("kernel_config"):
        machine["kernel_config"]["source"] = (
            f"{borrowed} on the host: the kernel package's /boot/config-{release} "
            "(the guest has no /proc/config.gz)"
        )
    machine["probed_on"] = where
    return machine


def probe_over(run: Callable[[str], list[str]], sudo: bool, timeout: float = 60) -> dict[str, Any]:
    """`probe_machine` of the target `run` reaches (remote command -> the
    argv running it there); a probe that could not run says why in
    `probe_errors`, the rest None, as on a machine that hides everything."""
    command = ("sudo -n " if sudo else "") + shlex.join(["sh", "-c", SCRIPT])
    with tempfile.TemporaryDirectory(prefix="rtbench-probe-") as d:
        root = Path(d)
        why = ""
        try:
            r = subprocess.run(run(command), capture_output=True, timeout=timeout, check=False)
            if r.returncode != 0 or not unpack(r.stdout.decode(errors="replace"), root):
                err = r.stderr.decode(errors="replace").strip().splitlines()
                why = f"the target's probe ended {r.returncode}: {err[-1] if err else 'no output'}"
        except (OSError, subprocess.TimeoutExpired) as e:
            why = f"the target's probe could not run: {e}"
        machine = probe.probe_machine(root)
    if why:
        machine["probe_errors"]["remote"] = why
    machine["probed_on"] = "target"
    return machine
