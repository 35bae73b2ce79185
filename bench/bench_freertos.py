"""The FreeRTOS firmware on QEMU mps2-an385: its size, its RAM and stacks per
case, boot to first record, and the quick suite's time.

    size          text, data, bss of the firmware ELF, and the bulk sections
                  (.psram: thread stacks and queue storage; .heap)
    per case      one boot per case of the quick suite (-icount shift=5): the
                  highest stack high-water mark of its threads (FreeRTOS's
                  uxTaskGetStackHighWaterMark, noted when a thread is joined)
                  and of the task that runs the plan; the RAM it used: data +
                  bss (static, mostly the object pools) + the thread stacks
                  handed out + the heap (sample buffers, histograms)
    boot          QEMU start -> the firmware's first record (wall seconds)
    quick suite   the whole quick suite in one boot (wall seconds, and the
                  virtual time the cases took)

Goal (issue 10): under 64 KiB of RAM for the quick suite.

    .venv/bin/python bench/bench_freertos.py [--json] [--cases SEM-SHF,THR-SW]
                                             [--max-samples N]

--max-samples: the board's sample buffers per series (the target's
max_samples option, 2000 by default), which most cases' RAM is.

Exit 0 whether the goal is met or missed; 2 if a step could not run.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rtbench.build import BuildError, ensure_firmware
from rtbench.measure import measure, plan_for
from rtbench.suites import SUITES, Planned
from rtbench.targets import resolve
from rtbench.targets.qemu_board import BoardTarget
from rtbench.transports import TransportError

SPEC = "qemu:freertos-mps2-an385"
GOAL_RAM = 64 * 1024


def sections(elf: Path) -> dict[str, int]:
    out = subprocess.run(
        ["arm-none-eabi-size", "-A", str(elf)], capture_output=True, text=True, check=True
    ).stdout
    sizes = {}
    for line in out.splitlines():
        m = re.match(r"(\.\S+)\s+(\d+)\s+\d+", line)
        if m:
            sizes[m.group(1)] = int(m.group(2))
    return sizes


def ram_note(notes: list[str]) -> dict[str, int]:
    for note in notes:
        if note.startswith("ram "):
            return {k: int(v) for k, v in re.findall(r"(\w[\w+]*)=(\d+)", note)}
    return {}


def ram_used(c: dict[str, Any]) -> int:
    return int(c["static_ram"] + c["thread_slots"] + c["thread_stacks"] + c["heap_used"])


def one_boot(args: list[str], spec: str = SPEC) -> dict[str, Any]:
    target = resolve(spec)
    assert isinstance(target, BoardTarget)
    transport = target.transport()
    t0 = time.monotonic()
    run = measure(transport, plan_for(target, args)).run
    wall = time.monotonic() - t0
    if not run.complete:
        raise TransportError(f"{args}: the run did not complete: {run.issues}")
    stacks = transport.stack_use()
    ram = ram_note(transport.notes)
    main = stacks.pop("rtb-main", (0, 0))
    threads = max((used for _, used in stacks.values()), default=0)
    return {
        "outcomes": {c.case: c.outcome for c in run.cases},
        "virtual_s": sum(c.duration_ns for c in run.cases) / 1e9,
        "wall_s": wall,
        "first_record_s": transport.timings.get("first_record", float("nan")),
        "main_stack_used": main[1],
        "thread_stack_used_max": threads,
        "static_ram": ram.get("data+bss", 0),
        "thread_slots": ram.get("thread_slots", 0),
        "thread_stacks": ram.get("thread_stacks", 0),
        "heap_used": ram.get("heap_used", 0),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cases", default="", help="comma-separated case IDs (default: quick)")
    ap.add_argument("--max-samples", type=int, default=0, help="the board's max_samples")
    ap.add_argument("--smoke", action="store_true",
                    help="one case (CAL-REF): that the bench still runs")
    a = ap.parse_args()
    if a.smoke and (missing := [t for t in ("qemu-system-arm", "arm-none-eabi-gcc")
                                 if shutil.which(t) is None]):
        print(f"skipped: {', '.join(missing)} not found")
        return 0
    if shutil.which("qemu-system-arm") is None:
        print("qemu-system-arm not found", file=sys.stderr)
        return 2
    if a.smoke:  # the suite runs this so that a bench that no longer runs fails CI
        a.cases = "CAL-REF"
    quick = SUITES["quick"]
    ids = [c for c in a.cases.split(",") if c] or list(quick)
    plans = [Planned(c, dict(quick.get(c, {}))).agent_arg() for c in ids]
    try:
        elf = ensure_firmware("freertos", "mps2-an385")
        size = sections(elf)
        spec = f"{SPEC}?max_samples={a.max_samples}" if a.max_samples else SPEC
        per_case = {p.split(":")[0]: one_boot([p], spec) for p in plans}
        suite = one_boot(plans, spec)
    except (BuildError, TransportError, subprocess.CalledProcessError) as e:
        print(f"bench_freertos: {e}", file=sys.stderr)
        return 2
    used = [ram_used(c) for c in per_case.values()]
    result = {
        "firmware": {"text": size.get(".text", 0), "data": size.get(".data", 0),
                     "bss": size.get(".bss", 0), "psram": size.get(".psram", 0),
                     "heap": size.get(".heap", 0)},
        "cases": per_case,
        "quick_suite": {k: suite[k] for k in ("wall_s", "virtual_s", "first_record_s")},
        "ram_max": max(used, default=0),
        "goal_ram": GOAL_RAM,
    }  # fmt: skip
    if a.json:
        print(json.dumps(result, indent=1))
        return 0
    f = result["firmware"]
    print(f"firmware: text {f['text']} data {f['data']} bss {f['bss']} bytes "
          f"(+ reserved: psram {f['psram']}, heap {f['heap']})")  # fmt: skip
    print(f"{'case':10} {'outcome':11} {'main stk':>8} {'thr stk':>7} {'static':>8} "
          f"{'tasks':>8} {'stacks':>8} {'heap':>8} {'RAM':>8} {'boot s':>6}")  # fmt: skip
    for case, c in per_case.items():
        print(f"{case:10} {c['outcomes'][case]:11} {c['main_stack_used']:8} "
              f"{c['thread_stack_used_max']:7} {c['static_ram']:8} {c['thread_slots']:8} "
              f"{c['thread_stacks']:8} {c['heap_used']:8} {ram_used(c):8} "
              f"{c['first_record_s']:6.2f}")  # fmt: skip
    q = result["quick_suite"]
    print(f"quick suite: {q['wall_s']:.1f} s wall, {q['virtual_s']:.1f} s virtual; "
          f"boot to first record {q['first_record_s']:.2f} s")
    verdict = "PASS" if result["ram_max"] <= GOAL_RAM else "MISS"
    print(f"RAM (most any case used): {result['ram_max']} bytes, goal {GOAL_RAM}: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
