"""The board RAM bench (bench/bench_rtos.py) reports a case over the 64 KiB
goal (issues 21, 22: every case of the quick suite in 64 KiB on every
kernel): SEM-SHF with 8,000 samples a series holds three buffers of 64 KB
alone, and must be listed; SEM-B-LCK (checks, no series: 59 KB on
FreeRTOS today) is listed exactly when its own figure is over. A real
qemu-system-arm boots the FreeRTOS firmware for each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import tools

pytestmark = pytest.mark.tools("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_rtos.py"


def _bench(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--ports", "freertos", "--cases", "SEM-SHF,SEM-B-LCK",
         "--max-samples", "8000", *args],
        capture_output=True, text=True, timeout=900, check=False, cwd=BENCH.parents[1],
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_a_case_over_64_kib_is_reported() -> None:
    tools.firmware("freertos", "mps2-an385")
    out = json.loads(_bench("--json"))
    r = out["ports"]["freertos"]
    assert out["goal_ram"] == 64 * 1024
    ram = {case: sum(c[k] for k in ("static_ram", "thread_slots", "thread_stacks", "heap_used"))
           for case, c in r["cases"].items()}  # fmt: skip
    assert ram["SEM-SHF"] > 3 * 8000 * 8, ram  # its three buffers at least
    assert "SEM-SHF" in r["over_goal"], (r["over_goal"], ram)
    assert r["over_goal"] == [c for c, n in ram.items() if n > 64 * 1024], (r["over_goal"], ram)
    assert r["ram_max"] == ram["SEM-SHF"]
    assert r["firmware"]["text"] > 0 and r["firmware"]["bss"] > 0
    text = _bench()
    for case, n in ram.items():
        line = next(x for x in text.splitlines() if x.strip().startswith(case + " "))
        assert ("over 64 KiB" in line) == (n > 64 * 1024), line
    assert "freertos: most any case used" in text and "MISS; over: SEM-SHF" in text
