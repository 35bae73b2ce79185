"""Per-CPU and soak runs (`rtbench run --cpus all --duration 60m --break 500`),
as cyclictest's -S, -D and -b: which cases take them and what the agent is
told. See docs/soak.md.

The agent measures a per-CPU case on every listed CPU at once (one series
per CPU, point `cpu`), keeps exact n/min/max/sum and the histogram of any
length of run plus the last `--max-samples` raw samples (a ring: memory on
the target is allocated once, at the start), writes a `progress` record
every second for the live figures, and with `--break` stops at the first
latency over the threshold (a `break` record names it, and the kernel trace
stops there).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping

from rtbench.catalogue import AgentCase, posix_cases
from rtbench.run.request import AgentRequest

# A per-CPU case's `cycles` when --duration governs: its maximum, so that
# the duration (its `duration_ms` cap) ends the case.
SOAK_CYCLES = 1_000_000_000


def per_cpu_cases(known: Mapping[str, AgentCase] | None = None) -> list[str]:
    """The cases whose agent side honours --cpus, --break and --progress: the
    agent's own `per_cpu` trait (`--list`), from the target's case table
    (default: the shipped POSIX one)."""
    table = posix_cases() if known is None else known
    return sorted(cid for cid, c in table.items() if c.per_cpu)


PROGRESS_MS = 1000

_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m|h|d)?\s*$")


class SoakError(ValueError):
    pass


def parse_duration(text: str) -> float:
    """'10s', '60m', '2h', '1.5h', '500ms', '90' (seconds) -> seconds."""
    m = _DURATION.match(text.lower())
    if m is None:
        raise SoakError(f"--duration {text!r}: write a number and a unit, e.g. 10s, 60m, 2h")
    seconds = float(m.group(1)) * _UNITS[m.group(2) or "s"]
    if not 0.001 <= seconds <= 86400:
        raise SoakError(f"--duration {text!r}: between 1 ms and 24 h")
    return seconds


def parse_cpus(text: str) -> str:
    """'all' or a CPU list like 0-2,5 (the agent checks it against the target)."""
    t = text.strip().lower()
    if t == "all" or re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", t):
        return t
    raise SoakError(f"--cpus {text!r}: write 'all' or a list like 0-2,5")


def apply(
    request: AgentRequest,
    cpus: str | None,
    duration_s: float | None,
    break_us: float | None,
    user_set: set[tuple[str, str]],
    known: Mapping[str, AgentCase] | None = None,
) -> None:
    """Fills `request` for --cpus, --duration and --break: the per-CPU
    cases' parameters and the agent's options; SoakError when none of the
    selected cases takes them. `user_set`: (case, param) the user gave with
    --set, which win; `known`: the target agent's case table (default: the
    shipped POSIX one)."""
    table = posix_cases() if known is None else known
    names = per_cpu_cases(table)
    per_cpu = [p for p in request.plan if p.case in names]
    # Live figures whenever a per-CPU case runs (JIT-PER's default run is 50 s).
    if per_cpu:
        request.progress_ms = PROGRESS_MS
    if cpus is None and duration_s is None and break_us is None:
        return
    if not per_cpu:
        raise SoakError(
            "--cpus, --duration and --break apply to per-CPU cases ("
            + ", ".join(names)
            + "): select one, e.g. -c JIT-PER"
        )
    if duration_s is not None:
        for p in per_cpu:
            p.params["duration_ms"] = str(max(1, round(duration_s * 1000)))
            if "cycles" in table[p.case].param_names and (p.case, "cycles") not in user_set:
                p.params["cycles"] = str(SOAK_CYCLES)
    if cpus is not None:
        request.cpus = parse_cpus(cpus)
    if break_us is not None:
        if break_us <= 0:
            raise SoakError("--break must be above 0 µs")
        request.break_ns = round(break_us * 1000)


def user_overrides(
    overrides: tuple[str, ...] | list[str], known: Mapping[str, AgentCase] | None = None
) -> set[tuple[str, str]]:
    """(CASE, PARAM) of each --set CASE.PARAM=VALUE that names a per-CPU case."""
    out: set[tuple[str, str]] = set()
    for ov in overrides:
        target = ov.partition("=")[0]
        case, _, name = target.rpartition(".")
        for c in per_cpu_cases(known):
            if not case or fnmatch.fnmatchcase(c, case.upper()):
                out.add((c, name))
    return out
