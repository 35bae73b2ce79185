"""NOISE-OS on the emulated board (FreeRTOS, -icount): the only noise a
polling task sees there is the kernel's 1 kHz tick, so its gaps are the
tick's known answer: one per millisecond of polling, each the same length,
one tick period apart."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import numpy as np
import pytest
from helpers import rtbench
from tools import firmware

from rtbench.stream import load_run

pytestmark = pytest.mark.tools("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi")


def test_the_tick_is_the_noise(tmp_path: Path) -> None:
    firmware("freertos", "mps2-an385")  # no FreeRTOS kernel: a skip naming where to put one
    stream = tmp_path / "noise.rtb"
    r = rtbench(
        "run",
        "--target",
        "qemu:freertos-mps2-an385",
        "-c",
        "NOISE-OS",
        "--set",
        "NOISE-OS.duration_ms=200",
        "--no-store",
        "--save-stream",
        str(stream),
    )
    assert r.returncode == 0, r.stderr
    case = load_run(stream).case("NOISE-OS")
    assert case is not None and case.outcome == "passed", case
    noise, at = case.find("noise"), case.find("noise_at")
    assert noise is not None and at is not None
    assert noise.samples is not None and at.samples is not None
    # A tick a millisecond for the ~198 ms polled (the calibration takes
    # the rest of the 200): 197 or 198 by where the polling starts against
    # the tick, which moves with the firmware's code.
    assert 197 <= noise.n <= 201
    assert cast(int, noise.max) - cast(int, noise.min) <= 100  # ns: the same handler every time
    # A gap is seen where the loop is when the tick comes: each start within
    # a few loop iterations (~4 us) of the lattice, the lattice exactly 1 ms.
    period = np.diff(at.samples)
    assert (np.abs(period - 1_000_000) <= 5_000).all()
    assert abs(float(period.mean()) - 1_000_000) <= 100
