"""A case's RAM on an RTOS board (issues 21, 22: every case of the quick
suite in 64 KiB on every kernel), as bench/bench_rtos.py measures it: the
firmware's RAM note (data + bss, the interrupts' main stack, the thread
slots, stacks and queue storage handed out, the heap's high-water mark)
after one boot per case. A real qemu-system-arm boots each kernel's
firmware.

- The bench lists a case over 64 KiB (CLK-RES asked for 3,000 sleeps of one
  request holds them all in a series that is not streamed, 24 KB of samples
  alone, beside what the quick case uses) and exactly those over it.
- Every quick-suite case is checked against 64 KiB on every kernel: the
  cases still over it are listed here by kernel (they hold whole series of
  samples, or many threads); a case that grows over the limit, or one that
  comes under it while still listed, fails the test.
- A thread given a stack too small for it (the test build's
  `thread_stack=512` under TM-BASIC, whose thread uses 1.1 KiB) ends the
  run with the overflow named, on every kernel: never a silent corruption.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tools
from boards import measure_board

pytestmark = pytest.mark.tools("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_rtos.py"
GOAL = 64 * 1024
PARTS = ("static_ram", "irq_stack", "thread_slots", "thread_stacks", "queue_storage", "heap_used")
KERNELS = ("freertos", "ucos3", "ucos2")

# Quick-suite cases still over 64 KiB, by kernel (bench/bench_rtos.py,
# 2026-11-26): each holds raw arrays of stamps beside its series (a
# streamed series keeps 1 KiB of samples, but its 2.1 KiB histogram, 528
# buckets, and the case's own arrays stay: CLK-RES came under at 528, not
# 1024; on uC/OS-II 60 B under, MEM-POOL on uC/OS-III 56 B over), series
# that are not streamed yet (16 KiB a series at the board's max_samples
# 2000). THR-SW, THR-CTX and SEM-ARC came under with their stamps in
# blocks, 512-byte worker stacks and the points of more than 16 threads
# (RTB_CASE_THREADS) skipped with the reason; THR-B-RR with a log of its
# threads' share of the tick's slices, its thread table out of the static
# RAM (1 KiB, every case). CAL-TIMER reads in blocks of
# rtb_stamp_block(reads) into a streamed series; SYS-CALL records 4 of its
# 16 rows at a time on a board (49-50 / 59-63 KiB); CLK-DUR holds 512
# gaps and writes its series one at a time (58-63 KiB). IRQ-RSP streams
# its series (56 KiB).
_OVER_ALL: frozenset[str] = frozenset()
OVER: dict[str, set[str]] = {
    # The interrupts' main stack 2 KiB, not 4 (the quick suite's deepest
    # use 152 B), the watchdog's record body 512 B, not 2 KiB, the agent's
    # task 6.5 KiB, not 8 (4,816 B used at most: a check's detail formatted
    # into the record's body), 48 stack notes, not 64: TM-COOP, TM-PRE,
    # RSP-IO (2.1-2.7 KiB under) and JIT-DL (1,624 B under) came under.
    # MQ-LAT 1.5 KiB under (64,036) with its stamps in blocks: the port's
    # queues of 1 KiB messages take 6.2 KiB of it (depth + 2 items a queue).
    "freertos": set(_OVER_ALL),
    # TM-COOP and TM-PRE 416 B under (65,120). A stack's high-water mark
    # holds the exception frames pushed on it, so code that moves when
    # interrupts come moves a case near the limit across it.
    # Its message pool 64, not 256, and its interrupt stack 1 KiB, not 2:
    # JIT-DL came under (before it asked the port for a deadline scheduler).
    "ucos3": set(_OVER_ALL),
    # uC/OS-II's static RAM (35,624 B, its task and event tables sized to
    # 40 threads) is 2.6 KiB above FreeRTOS's. Heaps grow in newlib's 4
    # KiB sbrk steps, so a shift of the heap's start moves a case by 4 KiB
    # either way.
    # THR-PRE, IRQ-RSP, JIT-PER (unsupported here: no kernel load of
    # several threads) came under when they asked before allocating.
    # THR-NEW came under (63,984) with 3 KiB less static RAM (the CRC
    # table constant, SEM-B-REL's and CLK-DUR's arrays in the case memory).
    "ucos2": set(_OVER_ALL),
}


def _bench(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(BENCH), *args],
        capture_output=True, text=True, timeout=1800, check=False, cwd=BENCH.parents[1],
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _ram(r: dict[str, Any]) -> dict[str, int]:
    return {case: sum(c[k] for k in PARTS) for case, c in r["cases"].items()}


def test_a_case_over_64_kib_is_reported() -> None:
    tools.firmware("freertos", "mps2-an385")
    over = "CLK-RES:count=3000:request_ns=1000"
    args = ("--ports", "freertos", "--cases", f"{over},SEM-B-LCK", "--max-samples", "8000")
    out = json.loads(_bench(*args, "--json"))
    r = out["ports"]["freertos"]
    assert out["goal_ram"] == GOAL
    ram = _ram(r)
    # Its held series of 3,000 samples at least, beside the static RAM.
    assert ram["CLK-RES"] > 3000 * 8 + r["cases"]["CLK-RES"]["static_ram"], ram
    assert "CLK-RES" in r["over_goal"], (r["over_goal"], ram)
    assert r["over_goal"] == [c for c, n in ram.items() if n > GOAL], (r["over_goal"], ram)
    assert r["ram_max"] == ram["CLK-RES"]
    assert r["firmware"]["text"] > 0 and r["firmware"]["bss"] > 0
    # The interrupts' stack is RAM the linker sets aside on every boot.
    assert all(c["irq_stack"] > 0 for c in r["cases"].values()), r["cases"]
    # The text of the same figures (the suite's one boot is the JSON's).
    text = _bench(*args, "--no-suite")
    for case, n in ram.items():
        line = next(x for x in text.splitlines() if x.strip().startswith(case + " "))
        assert ("over 64 KiB" in line) == (n > GOAL), line
    assert "freertos: most any case used" in text and "MISS; over: CLK-RES" in text


@pytest.mark.parametrize("kernel", KERNELS)
def test_every_quick_case_is_checked_against_64_kib(kernel: str) -> None:
    tools.firmware(kernel, "mps2-an385")
    r = json.loads(_bench("--ports", kernel, "--json", "--no-suite"))["ports"][kernel]
    if "skipped" in r:
        pytest.skip(r["skipped"])
    ram = _ram(r)
    # What gave RAM back (a smaller message pool, interrupt and agent
    # stacks) broke no case: each ran to a verdict (unsupported/skipped
    # where the kernel cannot run it, as before).
    outcomes = {case: c["outcomes"][case] for case, c in r["cases"].items()}
    assert "error" not in outcomes.values(), outcomes
    # A case asks the port for what it needs (JIT-DL a deadline scheduler;
    # THR-PRE, IRQ-RSP, JIT-PER a kernel load) before it sets anything up:
    # one unsupported here holds no buffer or thread (the least RAM).
    assert outcomes["JIT-DL"] == "unsupported", outcomes
    unsupported = {case: ram[case] for case, o in outcomes.items() if o == "unsupported"}
    assert set(unsupported.values()) == {min(ram.values())}, unsupported
    over = {case for case, n in ram.items() if n > GOAL}
    figures = {case: ram[case] for case in over ^ OVER[kernel]}
    assert over <= OVER[kernel], f"over 64 KiB on {kernel}, not listed: {figures}"
    assert over == OVER[kernel], f"under 64 KiB on {kernel} now, drop from OVER: {figures}"


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_too_small_stack_is_detected(kernel: str) -> None:
    tools.firmware(kernel, "mps2-an385", "test")
    spec = f"qemu:{kernel}-mps2-an385?flavor=test"
    args = ["TM-BASIC:duration_ms=50"]
    run, transport = measure_board(spec, args)
    assert run.complete and (c := run.case("TM-BASIC")) and c.outcome == "passed", run.issues
    assert not [n for n in transport.notes if "overflow" in n], transport.notes
    run, transport = measure_board(spec, ["--inject", "thread_stack=512", *args])
    assert not run.complete
    assert (c := run.case("TM-BASIC")) is not None and c.outcome == "error"
    assert [n for n in transport.notes if "stack overflow in task tm-basic" in n], transport.notes
    assert transport.proc is not None and transport.proc.returncode == 4


def test_the_interrupts_stack_is_measured() -> None:
    """FreeRTOS runs interrupts on the board's main stack (2 KiB): the
    reset paints it and the RAM note gives its high-water mark. It is more
    than nothing, within the stack, and deeper under IRQ-SUS (the timer's
    interrupt nested with the tick's) than under CAL-REF (the tick alone)."""
    tools.firmware("freertos", "mps2-an385")
    args = ("--ports", "freertos", "--cases", "CAL-REF,IRQ-SUS", "--json", "--no-suite")
    out = json.loads(_bench(*args))
    cases = out["ports"]["freertos"]["cases"]
    for c in cases.values():
        assert 0 < c["irq_stack_used"] <= c["irq_stack"] - 16, c
    assert cases["IRQ-SUS"]["irq_stack_used"] > cases["CAL-REF"]["irq_stack_used"], cases

