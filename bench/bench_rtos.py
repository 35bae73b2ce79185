"""The RTOS firmwares on QEMU mps2-an385 (FreeRTOS, uC/OS-III, uC/OS-II):
their size, the RAM and stacks each case uses, boot to first record, and
the quick suite's time, per kernel.

    size          text, data, bss of each firmware ELF, and the bulk sections
                  (.psram: thread stacks and queue storage; .heap)
    per case      one boot per case of the quick suite (-icount shift=5): the
                  highest stack high-water mark of its threads (noted when a
                  thread is joined) and of the task that runs the plan; the
                  RAM it used: data + bss (static, with the stream's buffers
                  and the kernel's tables) + the main stack the linker sets
                  aside (the interrupts' stack) + the thread slots, stacks
                  and queue storage handed out + the heap's high-water mark
                  (sample buffers, histograms)
    boot          QEMU start -> the firmware's first record (wall seconds)
    quick suite   the whole quick suite in one boot (wall seconds, and the
                  virtual time the cases took)

Goal (issues 21, 22): every case of the quick suite in <= 64 KiB of RAM on
every kernel. A case over it is listed by kernel at the end (and in the
JSON's `over_goal`).

    .venv/bin/python bench/bench_rtos.py [--json] [--ports freertos,ucos3,ucos2]
                                         [--cases SEM-SHF,THR-SW] [--max-samples N]
                                         [--no-suite]

--max-samples: the board's sample buffers per series (the target's
max_samples option), which most cases' RAM is. A kernel whose sources
cannot be had here is skipped with the reason.

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

from rtbench.machine.build import BuildError, KernelUnavailable, ensure_firmware
from rtbench.run.measure import measure, plan_for
from rtbench.run.suites import SUITES, Planned
from rtbench.targets import resolve
from rtbench.targets.qemu_board import BoardTarget
from rtbench.transports import TransportError

BOARD = "mps2-an385"
PORTS = ("freertos", "ucos3", "ucos2")
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


# The parts of a case's RAM, each a key of its firmware's `ram` note.
RAM_PARTS = {
    "static_ram": "data+bss",
    "irq_stack": "irq_stack",
    "thread_slots": "thread_slots",
    "thread_stacks": "thread_stacks",
    "queue_storage": "queue_storage",
    "heap_used": "heap_used",
}


def ram_used(c: dict[str, Any]) -> int:
    return sum(int(c[k]) for k in RAM_PARTS)


def one_boot(args: list[str], target: BoardTarget, elf: Path) -> dict[str, Any]:
    # The image one_port built, booted as it is: not a walk of the sources
    # and the kernel's per boot (a port's quick suite is 44 boots).
    transport = target.transport(elf)
    t0 = time.monotonic()
    try:
        run = measure(transport, plan_for(target, args)).run
    finally:
        transport.stop()
    wall = time.monotonic() - t0
    if not run.complete:
        raise TransportError(f"{args}: the run did not complete: {run.issues}")
    stacks = transport.stack_use()
    ram = ram_note(transport.notes)
    if missing := [n for n in RAM_PARTS.values() if n not in ram]:
        raise TransportError(f"{args}: the firmware's RAM note lacks {missing}: {transport.notes}")
    main = stacks.pop("rtb-main", (0, 0))
    isr = stacks.pop("kernel-isr", (0, 0))  # uC/OS-III's own interrupt stack
    idle = stacks.pop("kernel-idle", (0, 0))  # FreeRTOS's idle task
    threads = max((used for _, used in stacks.values()), default=0)
    return {
        "outcomes": {c.case: c.outcome for c in run.cases},
        "virtual_s": sum(c.duration_ns for c in run.cases) / 1e9,
        "wall_s": wall,
        "first_record_s": transport.timings.get("first_record", float("nan")),
        "main_stack_used": main[1],
        "thread_stack_used_max": threads,
        # The main stack's high-water mark (the reset paints it): what the
        # interrupts (FreeRTOS) or main() before the kernel (uC/OS) used of it.
        "irq_stack_used": ram.get("irq_stack_used", 0),
        "kernel_isr_stack_used": isr[1],
        "kernel_idle_stack_used": idle[1],
        **{k: ram[note] for k, note in RAM_PARTS.items()},
    }


def one_port(port: str, plans: list[str], max_samples: int, suite: bool) -> dict[str, Any]:
    """Size, per-case RAM and (with `suite`) the plans in one boot, on `port`."""
    elf = ensure_firmware(port, BOARD)
    size = sections(elf)
    spec = f"qemu:{port}-{BOARD}" + (f"?max_samples={max_samples}" if max_samples else "")
    target = resolve(spec)
    assert isinstance(target, BoardTarget)
    per_case = {p.split(":")[0]: one_boot([p], target, elf) for p in plans}
    used = {case: ram_used(c) for case, c in per_case.items()}
    result: dict[str, Any] = {
        "firmware": {k.lstrip("."): size.get(k, 0)
                     for k in (".text", ".data", ".bss", ".psram", ".heap")},
        "cases": per_case,
        "ram_max": max(used.values(), default=0),
        "over_goal": [case for case, n in used.items() if n > GOAL_RAM],
    }  # fmt: skip
    if suite:
        whole = one_boot(plans, target, elf)
        result["quick_suite"] = {k: whole[k] for k in ("wall_s", "virtual_s", "first_record_s")}
    return result


def print_port(port: str, r: dict[str, Any]) -> None:
    f = r["firmware"]
    print(f"{port}: firmware text {f['text']} data {f['data']} bss {f['bss']} bytes "
          f"(+ reserved: psram {f['psram']}, heap {f['heap']})")  # fmt: skip
    print(f"  {'case':10} {'outcome':11} {'main stk':>8} {'thr stk':>7} {'static':>8} "
          f"{'irq stk':>7} {'tasks':>8} {'stacks':>8} {'queues':>6} {'heap':>8} {'RAM':>8} "
          f"{'boot s':>6}")  # fmt: skip
    for case, c in r["cases"].items():
        over = "  over 64 KiB" if case in r["over_goal"] else ""
        print(f"  {case:10} {c['outcomes'][case]:11} {c['main_stack_used']:8} "
              f"{c['thread_stack_used_max']:7} {c['static_ram']:8} {c['irq_stack']:7} "
              f"{c['thread_slots']:8} {c['thread_stacks']:8} {c['queue_storage']:6} "
              f"{c['heap_used']:8} {ram_used(c):8} "
              f"{c['first_record_s']:6.2f}{over}")  # fmt: skip
    if q := r.get("quick_suite"):
        print(
            f"  all in one boot: {q['wall_s']:.1f} s wall, {q['virtual_s']:.1f} s virtual; "
            f"boot to first record {q['first_record_s']:.2f} s"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--ports", default="", help="comma-separated RTOS ports (default: all)")
    ap.add_argument("--cases", default="", help="comma-separated case IDs (default: quick)")
    ap.add_argument("--max-samples", type=int, default=0, help="the board's max_samples")
    ap.add_argument(
        "--no-suite", action="store_true", help="per-case boots only, not the suite in one boot"
    )
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="one case (CAL-REF) on FreeRTOS: that the bench still runs",
    )
    a = ap.parse_args()
    missing = [t for t in ("qemu-system-arm", "arm-none-eabi-gcc") if shutil.which(t) is None]
    if missing:
        if a.smoke:
            print(f"skipped: {', '.join(missing)} not found")
            return 0
        print(f"{', '.join(missing)} not found", file=sys.stderr)
        return 2
    if a.smoke:  # the suite runs this so that a bench that no longer runs fails CI
        # One kernel: the bench's code is the same for each, and
        # tests/e2e/test_board_ram.py runs it on every kernel anyway.
        a.cases, a.ports = "CAL-REF", a.ports or "freertos"
    a.ports = a.ports or ",".join(PORTS)
    quick = SUITES["quick"]
    ids = [c for c in a.cases.split(",") if c] or list(quick)
    plans = [Planned(c, dict(quick.get(c, {}))).agent_arg() for c in ids]
    ports: dict[str, Any] = {}
    for port in (p for p in a.ports.split(",") if p):
        try:
            ports[port] = one_port(port, plans, a.max_samples, suite=not (a.smoke or a.no_suite))
        except KernelUnavailable as e:
            ports[port] = {"skipped": str(e).split("\n", 1)[0]}
        except (BuildError, TransportError, subprocess.CalledProcessError) as e:
            print(f"bench_rtos: {port}: {e}", file=sys.stderr)
            return 2
    if a.smoke and all("skipped" in r for r in ports.values()):
        print("skipped: " + "; ".join(f"{p}: {r['skipped']}" for p, r in ports.items()))
        return 0
    if a.json:
        print(json.dumps({"ports": ports, "goal_ram": GOAL_RAM}, indent=1))
        return 0
    for port, r in ports.items():
        if "skipped" in r:
            print(f"{port}: skipped: {r['skipped']}")
        else:
            print_port(port, r)
    print(f"RAM goal: every case <= {GOAL_RAM} bytes on every kernel")
    for port, r in ports.items():
        if "skipped" not in r:
            over = ", ".join(r["over_goal"]) or "none"
            verdict = "MISS" if r["over_goal"] else "PASS"
            print(f"  {port}: most any case used {r['ram_max']} bytes: {verdict}; over: {over}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
