"""The system report beside the numbers (what rteval prints): firmware, the
kernel's configuration and the services running. Items of
`rtbench.machine.probe.probe_machine`, read under a root folder so that tests use
fake /proc and /sys trees; None where the machine does not say.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

# /sys/class/dmi/id: what the firmware says the machine is (readable by
# anyone, except the serial numbers, which are not wanted).
DMI_FIELDS = (
    "sys_vendor",
    "product_name",
    "product_version",
    "board_vendor",
    "board_name",
    "bios_vendor",
    "bios_version",
    "bios_date",
)

# Kernel options that change latency figures, beside the preemption model
# and HZ: tick and RCU offload, timers, threaded interrupts, frequency and
# idle control, the latency tracers, and debugging that slows the kernel.
RELEVANT_OPTIONS = (
    "CONFIG_NO_HZ_FULL",
    "CONFIG_NO_HZ_IDLE",
    "CONFIG_HZ_PERIODIC",
    "CONFIG_HIGH_RES_TIMERS",
    "CONFIG_RCU_NOCB_CPU",
    "CONFIG_RCU_BOOST",
    "CONFIG_IRQ_FORCED_THREADING",
    "CONFIG_CPU_FREQ",
    "CONFIG_CPU_IDLE",
    "CONFIG_INTEL_IDLE",
    "CONFIG_HWLAT_TRACER",
    "CONFIG_OSNOISE_TRACER",
    "CONFIG_TIMERLAT_TRACER",
    "CONFIG_PROVE_LOCKING",
    "CONFIG_DEBUG_PREEMPT",
    "CONFIG_KASAN",
    "CONFIG_DEBUG_OBJECTS",
)
_PREEMPT_MODELS = ("PREEMPT_RT", "PREEMPT", "PREEMPT_VOLUNTARY", "PREEMPT_NONE")
_GOVERNOR = re.compile(r"CONFIG_CPU_FREQ_DEFAULT_GOV_(\w+)")

# Where systemd keeps one cgroup per running service (cgroup v2, then v1).
_SERVICE_DIRS = ("sys/fs/cgroup/system.slice", "sys/fs/cgroup/systemd/system.slice")


def _read(root: Path, rel: str) -> str | None:
    try:
        return (root / rel).read_text(errors="replace").strip()
    except (OSError, ValueError):
        return None


def dmi(root: Path) -> dict[str, str] | None:
    """Vendor, product, board and firmware (BIOS/UEFI) version and date."""
    out = {f: v for f in DMI_FIELDS if (v := _read(root, f"sys/class/dmi/id/{f}"))}
    return out or None


def kernel_config(root: Path) -> dict[str, Any] | None:
    """The preemption model, HZ, the default frequency governor and the
    RELEVANT_OPTIONS as configured (unset: "n"), from /proc/config.gz or
    /boot/config-<release>."""
    from rtbench.machine.probe import _kernel_config

    release = _read(root, "proc/sys/kernel/osrelease")
    config = _kernel_config(root, release)
    if config is None:
        return None
    source = "/proc/config.gz" if (root / "proc/config.gz").exists() else f"/boot/config-{release}"
    model = next((m for m in _PREEMPT_MODELS if config.get(f"CONFIG_{m}") == "y"), None)
    hz = config.get("CONFIG_HZ")
    governor = next(
        (m[1].lower() for k, v in config.items() if v == "y" and (m := _GOVERNOR.fullmatch(k))),
        None,
    )
    return {
        "source": source,
        "preempt": model,
        "preempt_dynamic": config.get("CONFIG_PREEMPT_DYNAMIC") == "y",
        "hz": int(hz) if hz and hz.isdigit() else None,
        "default_governor": governor,
        "options": {o.removeprefix("CONFIG_"): config.get(o, "n") for o in RELEVANT_OPTIONS},
    }


def services(root: Path) -> dict[str, Any] | None:
    """The services systemd runs (one cgroup each under system.slice); None
    where there is no such slice (no systemd, or cgroups not mounted)."""
    for rel in _SERVICE_DIRS:
        d = root / rel
        try:
            names = sorted(p.name.removesuffix(".service") for p in d.glob("*.service"))
        except OSError:
            continue
        if d.is_dir():
            return {"count": len(names), "names": names, "source": f"/{rel}"}
    return None
