"""The system report (rtbench.machine.probe_system) by known answers on fake /proc
and /sys trees: the firmware's DMI strings, the kernel configuration's
preemption model, HZ, default governor and latency-relevant options (from
/proc/config.gz, else /boot/config-<release>), and the services systemd
runs; None for each where the tree does not say, and all of it in
probe_machine's record (so in every local run's metadata and the HTML
report's machine section)."""

from __future__ import annotations

import gzip
from pathlib import Path

from rtbench.machine.probe import probe_machine
from rtbench.machine.probe_system import RELEVANT_OPTIONS, dmi, kernel_config, services
from rtbench.reports.content import flatten

CONFIG = """\
# Linux/x86 6.6.21-rt26 Kernel Configuration
CONFIG_PREEMPT_RT=y
# CONFIG_PREEMPT_NONE is not set
CONFIG_HZ_1000=y
CONFIG_HZ=1000
CONFIG_NO_HZ_FULL=y
CONFIG_HIGH_RES_TIMERS=y
CONFIG_CPU_FREQ_DEFAULT_GOV_PERFORMANCE=y
# CONFIG_CPU_FREQ_DEFAULT_GOV_SCHEDUTIL is not set
CONFIG_HWLAT_TRACER=y
"""


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        if rel.endswith("/"):
            p.mkdir(parents=True, exist_ok=True)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
    return root


def test_firmware_kernel_config_and_services(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "proc/sys/kernel/osrelease": "6.6.21-rt26\n",
            "boot/config-6.6.21-rt26": CONFIG,
            "sys/class/dmi/id/sys_vendor": "Supermicro\n",
            "sys/class/dmi/id/bios_version": "3.4a\n",
            "sys/class/dmi/id/bios_date": "06/01/2023\n",
            "sys/fs/cgroup/system.slice/sshd.service/": "",
            "sys/fs/cgroup/system.slice/irqbalance.service/": "",
            "sys/fs/cgroup/system.slice/-.mount/": "",
        },
    )
    assert dmi(root) == {
        "sys_vendor": "Supermicro",
        "bios_version": "3.4a",
        "bios_date": "06/01/2023",
    }
    k = kernel_config(root)
    assert k is not None
    assert k["source"] == "/boot/config-6.6.21-rt26"
    assert (k["preempt"], k["preempt_dynamic"], k["hz"]) == ("PREEMPT_RT", False, 1000)
    assert k["default_governor"] == "performance"
    assert list(k["options"]) == [o.removeprefix("CONFIG_") for o in RELEVANT_OPTIONS]
    assert k["options"]["NO_HZ_FULL"] == "y" and k["options"]["HWLAT_TRACER"] == "y"
    assert k["options"]["RCU_NOCB_CPU"] == "n"  # not in the config: not set
    assert services(root) == {
        "count": 2,
        "names": ["irqbalance", "sshd"],
        "source": "/sys/fs/cgroup/system.slice",
    }
    machine = probe_machine(root)
    assert machine["dmi"]["bios_version"] == "3.4a"
    assert machine["kernel_config"]["hz"] == 1000
    assert machine["services"]["count"] == 2
    # What the HTML report's machine section shows of it.
    rows = dict(flatten(machine))
    assert rows["kernel_config.preempt"] == "PREEMPT_RT"
    assert rows["services.names"] == "irqbalance, sshd"


def test_config_gz_is_preferred_and_a_bare_tree_says_nothing(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    assert dmi(bare) is None and kernel_config(bare) is None and services(bare) is None
    root = tree(tmp_path / "gz", {"proc/sys/kernel/osrelease": "6.1.0\n"})
    with gzip.open(root / "proc/config.gz", "wt") as f:
        f.write("CONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_HZ=250\nCONFIG_PREEMPT_DYNAMIC=y\n")
    k = kernel_config(root)
    assert k is not None and k["source"] == "/proc/config.gz"
    assert (k["preempt"], k["preempt_dynamic"], k["hz"]) == ("PREEMPT_VOLUNTARY", True, 250)
    assert k["default_governor"] is None
