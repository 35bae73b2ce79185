"""A user's patch of an RTOS kernel, as a new user would try it, on every
kernel of the mps2-an385 board (FreeRTOS, uC/OS-III, uC/OS-II): the test
copies the kernel, and the build cache rebuilds the firmware for the copy
edited in place, the run's kernel digest differs, and a busy loop of known
length put in the kernel's semaphore post moves SEM-SHF's median by exactly
its instructions' time (within 1 %) and leaves a case with no post in its
path alone.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import NamedTuple, cast

import numpy as np
import pytest
import tools
from boards import measure_board

from rtbench.machine.build import ensure_firmware, kernel_sources
from rtbench.model import CaseResult, Run
from rtbench.run.measure import plan_for
from rtbench.targets import resolve

pytestmark = pytest.mark.tools("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi")

BOARD = "mps2-an385"
# A loop of this many instructions in the semaphore post; under -icount
# shift=5 each takes 32 ns: 9,952 ns expected.
NOPS = 311
INSN_NS = 32


class Patch(NamedTuple):
    fetch: str  # the kernel's FetchContent name (port.toml)
    env: str  # the variable naming a local copy
    version: str
    file: str  # the file of the post, in the kernel's sources
    anchor: str  # a line met once, at the post's entry
    untouched: str  # a case whose measured path holds no semaphore post


PATCHES = {
    # xSemaphoreGive is xQueueGenericSend.
    "freertos": Patch("FREERTOS_KERNEL", "RTBENCH_FREERTOS_KERNEL", "V11.3.0", "queue.c",
                      "    traceENTER_xQueueGenericSend( xQueue, pvItemToQueue, xTicksToWait, "
                      "xCopyPosition );\n", "THR-SW:n=2:duration_ms=100"),
    "ucos3": Patch("UC_OS3", "RTBENCH_UCOS3_KERNEL", "v3.08.02", "Source/os_sem.c",
                   "    OS_TRACE_SEM_POST_ENTER(p_sem, opt);\n",
                   "THR-SW:n=2:duration_ms=100"),
    # One task per priority: no THR-SW. CLK-RES sleeps and wakes on the tick
    # alone (OSTimeDly, OSTimeTick), no semaphore in its path.
    "ucos2": Patch("UC_OS2", "RTBENCH_UCOS2_KERNEL", "v2.93.01", "Source/os_sem.c",
                   "    OS_TRACE_SEM_POST_ENTER(pevent);\n",
                   "CLK-RES:count=200"),
}  # fmt: skip


def _measure(args: list[str], port: str) -> Run:
    return measure_board(f"qemu:{port}-{BOARD}", args)[0]


def _medians(run: Run, case: str, series: str) -> list[float]:
    """The median of each point of `series` (a sweep gives one per point)."""
    c = run.case(case)
    assert c is not None and c.outcome == "passed", (case, c and c.outcome)
    found = [s for s in c.series if s.name == series]
    assert found, (case, series)
    out = []
    for s in found:
        assert s.samples is not None and len(s.samples) >= 100, (case, series, s.point)
        out.append(float(np.median(s.samples)))
    return out


@pytest.mark.parametrize("port", sorted(PATCHES))
def test_a_kernel_edited_in_place_is_rebuilt_told_apart_and_measured(
    port: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    patch = PATCHES[port]
    local = {s.fetch: p for s, p in kernel_sources(port).items()}[patch.fetch]
    if local is None:
        tools.unavailable(f"needs a local copy of the {port} kernel: set {patch.env} to one")
    kernel = tmp_path / "kernel"
    shutil.copytree(local, kernel)
    monkeypatch.setenv(patch.env, str(kernel))
    monkeypatch.setenv("RTBENCH_BUILD_DIR", str(tmp_path / "build"))
    untouched = patch.untouched.split(":")[0]
    cases = ["SEM-SHF:duration_ms=100", patch.untouched]

    def one_run() -> tuple[Run, int]:
        elf = ensure_firmware(port, BOARD)
        return _measure(cases, port), elf.stat().st_mtime_ns

    stock, built = one_run()
    # The same sources again: the cache answers, nothing is rebuilt, and a
    # run would store the same kernel digest (its plan's target metadata,
    # what `stock` stored; no second boot needed to read it).
    assert ensure_firmware(port, BOARD).stat().st_mtime_ns == built
    again = plan_for(resolve(f"qemu:{port}-{BOARD}"), cases).target_meta
    assert again["kernel_digest"] == stock.machine["target"]["kernel_digest"]
    # A patch of the copy, in place: same path, other content.
    post = kernel / patch.file
    text = post.read_text()
    assert text.count(patch.anchor) == 1, patch.anchor
    # Written out, not `.rept`: GCC sizes an asm by its lines, and a branch
    # over a `.rept` it thought one instruction long went out of range.
    nops = "nop\\n" * NOPS
    loop = f'    __asm__ volatile("{nops}" ::: "memory");\n'
    post.write_text(text.replace(patch.anchor, patch.anchor + loop))
    patched, rebuilt = one_run()
    assert rebuilt != built, "the firmware was not rebuilt for the edited kernel"
    meta, meta0 = patched.machine["target"], stock.machine["target"]
    assert meta["kernel_digest"] != meta0["kernel_digest"]
    assert meta["firmware_sha256"] != meta0["firmware_sha256"]
    assert meta["kernel_version"] == meta0["kernel_version"] == patch.version
    expected = NOPS * INSN_NS
    (shf,) = _medians(stock, "SEM-SHF", "give_to_run")
    (shf_patched,) = _medians(patched, "SEM-SHF", "give_to_run")
    moved = shf_patched - shf
    print(f"{port}: SEM-SHF median {shf:.0f} -> {shf_patched:.0f} ns, moved {moved:.0f}, "
          f"expected {expected}")  # fmt: skip
    assert abs(moved - expected) <= 0.01 * expected, (moved, expected)
    # Left alone: the loop ran before the case (the runner's watchdog is
    # armed with a post), which moves where its samples fall on the 40 ns
    # timestamp grid, never by the loop: within the same 1 %.
    names = {s.name for s in cast(CaseResult, stock.case(untouched)).series}
    assert names, untouched
    for name in sorted(names):
        for a, b in zip(_medians(stock, untouched, name), _medians(patched, untouched, name),
                        strict=True):  # fmt: skip
            assert abs(b - a) <= 0.01 * expected, (untouched, name, a, b)
