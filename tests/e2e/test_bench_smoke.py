"""Every bench script runs in its smoke mode (small sizes, one pass), so a
bench that no longer imports or runs fails CI instead of rotting until the
next time someone measures (issue 22: bench_analysis.py had not imported
for weeks). `make bench` runs the same commands.

The figures are not checked: they are a shared machine's, and a bench exits
0 whether its goal is met or missed. A bench that cannot apply here (no
cyclictest, no QEMU, no real-time priority) says `skipped: why` and exits 0;
that is reported as a skip with its reason.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import tools

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("bench_*.py"))
# The system packages a bench needs: missing, its test skips naming them and
# the command that installs them (fails in CI), as the `tools` marker does.
NEEDS: dict[str, tuple[str, ...]] = {
    "bench_jit_cyclictest.py": ("rt-tests",),
    "bench_qemu_boot.py": tools.qemu_guest(),
    "bench_rtos.py": ("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi"),
}


def test_every_bench_script_is_found() -> None:
    assert "bench_analysis.py" in SCRIPTS and "bench_foundation.py" in SCRIPTS


@pytest.mark.e2e
@pytest.mark.parametrize("script", SCRIPTS)
def test_bench_runs_in_smoke_mode(script: str) -> None:
    tools.need(*NEEDS.get(script, ()))
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), "--smoke"],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
        cwd=BENCH.parent,
    )
    assert proc.returncode == 0, f"{script} --smoke: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    if "skipped: " in proc.stdout:
        pytest.skip(f"{script}: {proc.stdout.split('skipped: ', 1)[1].strip()}")
    assert proc.stdout.strip(), f"{script} --smoke printed nothing"
