"""The case catalogue (docs/catalogue.md) and each case's status per port.

The IDs and titles are the spec's; whether a case is implemented on a port
comes from the agent itself (`rtbench-agent --list`), so this table can
never claim more than the agent does. Each port's answer is also shipped
as `data/<port>-cases.jsonl` (regenerated with `make catalogue`: the POSIX
agent's `--list`, an RTOS firmware's `--list` under QEMU; a test fails when
one differs from its agent's), so `rtbench list` shows every port without
building anything.
"""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rtbench.model import Run

FAMILIES: dict[str, str] = {
    "CAL": "timing and calibration",
    "THR": "scheduler",
    "SYS": "system calls",
    "SEM": "semaphores",
    "MUT": "mutexes",
    "MQ": "message queues",
    "IRQ": "interrupts",
    "CLK": "system clock",
    "JIT": "periodic release jitter",
    "NOISE": "OS and hardware noise",
    "MEM": "memory allocation",
    "TM": "throughput (Thread-Metric)",
    "RSP": "external stimulus response",
}

CATALOGUE: dict[str, str] = {
    "CAL-TIMER": "The timestamp source",
    "CAL-REF": "Hardware calibration unit T_std",
    "THR-SW": "Switch between threads of the same priority",
    "THR-PRE": "Task preemption time",
    "THR-CTX": "Context switch vs number of tasks",
    "THR-NEW": "Thread create and delete time",
    "THR-B-NEW": "Creation semantics",
    "THR-B-RR": "Round-robin fairness",
    "THR-LOCK": "Scheduler lock / unlock",
    "SYS-CALL": "System call latency table",
    "SEM-SHF": "Semaphore shuffle",
    "SEM-B-LCK": "Counting semaphore semantics",
    "SEM-B-REL": "Release order",
    "SEM-NEW": "Semaphore create / delete time",
    "SEM-ARN": "Take / give, no contention",
    "SEM-ARC": "Take / give, contention",
    "SEM-TAKE": "Binary semaphore take",
    "MUT-B-PI": "Priority-inversion avoidance",
    "MUT-ARN": "Lock / unlock, no contention",
    "MUT-ARC": "Lock / unlock under inversion",
    "MQ-SEND": "Send variants",
    "MQ-LAT": "Message latency",
    "IRQ-LAT": "Interrupt latency",
    "IRQ-RSP": "Interrupt response under load",
    "IRQ-DLT": "Dispatch latency",
    "IRQ-TLT": "Interrupt to thread",
    "IRQ-SUS": "Maximum sustained interrupt rate",
    "CLK-DUR": "Clock tick processing duration",
    "CLK-RES": "Timer granularity",
    "JIT-PER": "Periodic task release jitter",
    "JIT-AB": "Same experiment, two configurations",
    "JIT-DL": "Deadline task releases, misses and overruns",
    "RSP-IO": "Input edge to output edge",
    "NOISE-OS": "OS noise seen by a busy-polling thread (oslat)",
    "NOISE-HW": "Hardware latency with interrupts off (hwlatdetect)",
    "MEM-HEAP": "Heap allocate and free, alone and contended",
    "MEM-POOL": "Fixed-block pool get and put, and an exhausted pool",
    "TM-COOP": "Throughput: cooperative scheduling",
    "TM-PRE": "Throughput: preemptive scheduling",
    "TM-IRQ": "Throughput: interrupt processing",
    "TM-IRQ-PRE": "Throughput: interrupt preemption",
    "TM-MSG": "Throughput: message passing (16-byte queue round trip)",
    "TM-SYNC": "Throughput: synchronisation (semaphore take and give)",
    "TM-MEM": "Throughput: memory allocation (heap, 128 bytes)",
    "TM-BASIC": "Throughput: basic processing (no OS call)",
}


@dataclass
class AgentCase:
    id: str
    title: str
    supported: bool
    reason: str = ""
    params: list[dict[str, Any]] = field(default_factory=list)
    tasks: str | None = None  # the point key that counts tasks (determinism slopes)
    per_cpu: bool = False  # honours --cpus, --break and --progress (soak runs)
    # How the host shows and scores it (the agent's rtb_case declares them):
    sigma3: bool = False  # its figures filter gross errors (mean +- 3 sigma)
    headline: int = 0  # its place in the composite score (0: not in it)
    unscored: bool = False  # no score against T_std (CAL-REF is the unit)
    jitter: bool = False  # its `deviation` series is the published jitter table

    @property
    def param_names(self) -> set[str]:
        return {str(p["name"]) for p in self.params}


POSIX_SNAPSHOT = "posix-cases.jsonl"
_SNAPSHOT_SUFFIX = "-cases.jsonl"


def snapshot_name(port: str) -> str:
    return f"{port}{_SNAPSHOT_SUFFIX}"


def agent_cases(exe: Path) -> dict[str, AgentCase]:
    """What this agent build implements, from `rtbench-agent --list`."""
    out = subprocess.run(
        [str(exe), "--list"], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    return parse_list(out)


def posix_cases() -> dict[str, AgentCase]:
    """What the POSIX port implements, from the shipped `--list` snapshot."""
    return port_cases("posix")


def port_cases(port: str) -> dict[str, AgentCase]:
    """What `port` implements, from its shipped `--list` snapshot
    (FileNotFoundError: none is shipped for it)."""
    text = resources.files("rtbench").joinpath("data", snapshot_name(port)).read_text("utf-8")
    return parse_list(text)


def shipped_ports() -> dict[str, dict[str, AgentCase]]:
    """Every port whose case table is shipped (`data/<port>-cases.jsonl`),
    with that table: posix first, then by name."""
    names = [
        f.name.removesuffix(_SNAPSHOT_SUFFIX)
        for f in resources.files("rtbench").joinpath("data").iterdir()
        if f.name.endswith(_SNAPSHOT_SUFFIX)
    ]
    return {n: port_cases(n) for n in sorted(names, key=lambda n: (n != "posix", n))}


def firmware_list(lines: str) -> str:
    """The case table out of a firmware's console (`--list` under QEMU):
    its JSON lines, without the firmware's own notes or carriage returns."""
    rows = [line.rstrip("\r") for line in lines.splitlines()]
    return "".join(f"{r}\n" for r in rows if r.startswith("{"))


def parse_list(out: str) -> dict[str, AgentCase]:
    """`rtbench-agent --list` output: one JSON object per case."""
    cases: dict[str, AgentCase] = {}
    for line in out.splitlines():
        d = json.loads(line)
        tasks = d.get("tasks")
        cases[d["id"]] = AgentCase(
            d["id"],
            d["title"],
            bool(d["supported"]),
            d.get("reason", ""),
            d.get("params", []),
            tasks if isinstance(tasks, str) else None,
            d.get("per_cpu") is True,
            d.get("sigma3") is True,
            headline if isinstance(headline := d.get("headline"), int) else 0,
            d.get("unscored") is True,
            d.get("jitter") is True,
        )
    return cases


def task_count_key(case_id: str) -> str | None:
    """The sweep coordinate of `case_id` that counts tasks, as the agent's case
    table declares it (`--list`: "tasks"), or None: a determinism slope is
    drawn over it only. Read from the shipped POSIX snapshot, so a stored run
    needs no agent."""
    c = _snapshot().get(case_id)
    return c.tasks if c is not None else None


@functools.cache
def _snapshot() -> dict[str, AgentCase]:
    return posix_cases()


# --- case traits: read from a case table, never from a host list -------------

Table = Mapping[str, AgentCase]


def run_table(run: Run) -> Table:
    """The case table of the agent that made `run`: the shipped table of the
    port its hello names, else (no such port shipped) the POSIX one."""
    port = run.hello.get("port")
    return _port_table(port if isinstance(port, str) else "posix")


@functools.cache
def _port_table(port: str) -> Table:
    try:
        return port_cases(port)
    except FileNotFoundError:
        return _snapshot()


def _or_posix(table: Table | None) -> Table:
    return _snapshot() if table is None else table


def sigma3_cases(table: Table | None = None) -> frozenset[str]:
    """Cases whose published method filters gross errors (their `sigma3`)."""
    return frozenset(cid for cid, c in _or_posix(table).items() if c.sigma3)


def headline_cases(table: Table | None = None) -> tuple[str, ...]:
    """The composite score's cases, in their declared order (`headline`)."""
    cases = [c for c in _or_posix(table).values() if c.headline > 0]
    return tuple(c.id for c in sorted(cases, key=lambda c: c.headline))


def unscored_cases(table: Table | None = None) -> frozenset[str]:
    """Cases with no score against T_std (`unscored`)."""
    return frozenset(cid for cid, c in _or_posix(table).items() if c.unscored)


def jitter_cases(table: Table | None = None) -> frozenset[str]:
    """Cases whose `deviation` series is the published jitter table (`jitter`)."""
    return frozenset(cid for cid, c in _or_posix(table).items() if c.jitter)


# Cases the host carries out by running others (no agent code of their own).
HOST_CASES: dict[str, str] = {"JIT-AB": "rtbench ab"}


def status(case_id: str, port_cases: dict[str, AgentCase]) -> tuple[str, str]:
    """(status, note) of a catalogue case on a port."""
    if case_id in HOST_CASES:
        return "implemented", f"on the host: {HOST_CASES[case_id]}"
    c = port_cases.get(case_id)
    if c is None:
        return "planned", ""
    if not c.supported:
        return "unsupported", c.reason
    return "implemented", ""
