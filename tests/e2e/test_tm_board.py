"""The TM throughput scores on the emulated board (FreeRTOS, -icount): the
work done in two runs of the same firmware agrees within half a percent,
and a case the kernel cannot run says so with its reason.
(Not to the count: a case starts after the host has drained the UART, a
wait no instruction count fixes, so the windows fall at another phase of
the 1 kHz tick, whose handler takes its share of each window.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import rtbench
from tools import firmware

from rtbench.stream import load_run

pytestmark = pytest.mark.tools("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi")


def _scores(tmp_path: Path, name: str) -> dict[str, tuple[int, int]]:
    stream = tmp_path / f"{name}.rtb"
    r = rtbench(
        "run",
        "--target",
        "qemu:freertos-mps2-an385",
        "-c",
        "TM-*",
        "--set",
        "TM-*.duration_ms=100",
        "--set",
        "TM-*.window_ms=50",
        "--no-store",
        "--save-stream",
        str(stream),
    )
    assert r.returncode == 0, r.stderr
    run = load_run(stream)
    mem = run.case("TM-MEM")
    assert mem is not None and mem.outcome == "unsupported" and "pvPortMalloc" in mem.reason
    out = {}
    for c in run.cases:
        if c.case != "TM-MEM":
            assert c.outcome == "passed", (c.case, c.checks)
            s = c.find("score")
            assert s is not None and s.n == 2
            out[c.case] = (s.n, s.sum)
    return out


def test_scores_repeat_exactly(tmp_path: Path) -> None:
    firmware("freertos", "mps2-an385")  # no FreeRTOS kernel: a skip naming where to put one
    first, second = _scores(tmp_path, "a"), _scores(tmp_path, "b")
    assert len(first) == 7 and first.keys() == second.keys()
    for case, (n, total) in first.items():
        n2, total2 = second[case]
        assert n == n2 and abs(total - total2) <= max(200, total // 200), case
