"""Doctor checks of C-states, interrupt affinity and SMIs, on fake /sys and
/proc trees (the probe) and on metadata dicts (the checks)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from test_probe import make_tree

from rtbench.machine.doctor_cpu import check_c_states, check_irq_affinity, check_smi
from rtbench.machine.probe_cpu import MSR_SMI_COUNT, cpuidle, irq_affinity, smi_count

CPU = "sys/devices/system/cpu"


def _idle(tmp_path: Path, disable_c6: bool, pm_qos: bool) -> dict[str, Any]:
    files = {
        f"{CPU}/cpuidle/current_driver": "intel_idle\n",
        f"{CPU}/cpu0/cpuidle/state0/name": "POLL\n",
        f"{CPU}/cpu0/cpuidle/state0/latency": "0\n",
        f"{CPU}/cpu0/cpuidle/state1/name": "C6\n",
        f"{CPU}/cpu0/cpuidle/state1/latency": "133\n",
        f"{CPU}/cpu0/cpuidle/state1/disable": "1\n" if disable_c6 else "0\n",
    }
    if pm_qos:
        files["dev/cpu_dma_latency"] = ""
    machine = {"cpuidle": cpuidle(make_tree(tmp_path, files))}
    return machine


def test_deep_c_state_without_a_hold_is_degraded(tmp_path: Path) -> None:
    f = check_c_states(_idle(tmp_path / "a", disable_c6=False, pm_qos=False), {})
    assert f.status == "degraded" and "C6 (133 µs)" in f.detail and "max_cstate" in f.fix
    f = check_c_states(_idle(tmp_path / "b", disable_c6=False, pm_qos=True), {})
    assert f.status == "ok" and "holds them off" in f.detail
    f = check_c_states(_idle(tmp_path / "c", disable_c6=True, pm_qos=False), {})
    assert f.status == "ok" and "no enabled state deeper" in f.detail


def test_interrupts_on_an_isolated_cpu(tmp_path: Path) -> None:
    root = make_tree(tmp_path, {
        "proc/interrupts": "   CPU0  CPU1\n 5:  1  2  IO-APIC 5-edge  ttyS0\n"
                           "LOC:  9  9  Local timer interrupts\n",
        "proc/irq/5/smp_affinity_list": "0-1\n",
    })  # fmt: skip
    info = irq_affinity(root)
    assert info == {"irqs": [{"irq": 5, "name": "ttyS0", "cpus": [0, 1]}], "default_mask": None}
    isolated = check_irq_affinity({"irq_affinity": info, "cpus_isolated": [1]}, {})
    assert isolated.status == "degraded" and "5 ttyS0" in isolated.detail and isolated.fix
    shared = check_irq_affinity({"irq_affinity": info, "cpus_online": [0, 1]}, {})
    assert shared.status == "info"
    steered = {"irqs": [{"irq": 5, "name": "ttyS0", "cpus": [0]}]}
    assert check_irq_affinity({"irq_affinity": steered, "cpus_isolated": [1]}, {}).status == "ok"


def test_smi_count_from_the_msr_file(tmp_path: Path) -> None:
    assert smi_count(tmp_path) is None
    assert check_smi({"smi": None}, {}).status == "info"
    msr = tmp_path / "dev/cpu/0/msr"
    msr.parent.mkdir(parents=True)
    # The msr driver reads register N at offset N; the count is its low half.
    msr.write_bytes(b"\0" * MSR_SMI_COUNT + struct.pack("<Q", (7 << 32) | 42))
    found = smi_count(tmp_path)
    assert found == {"count": 42, "reason": ""}
    assert "42 SMIs" in check_smi({"smi": found}, {}).detail
    msr.write_bytes(b"\0" * 4)
    assert smi_count(tmp_path) == {"count": None, "reason": "MSR 0x34 gave a short read"}
