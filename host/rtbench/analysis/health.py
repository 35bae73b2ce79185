"""Repetitions checked before they are pooled: each run's machine health,
and the repetition that stands apart from its siblings.

A repetition is one more measurement of the same configuration only if the
machine was the same. A guest that calibrated its TSC at 577 MHz instead of
2.44 GHz reads its clock in 613 ns instead of 83 ns, and every figure it
takes is off by the same factor: pooled with its sane twin it made
PREEMPT_RT look 5-7x worse than generic. So before a column pools its runs,
each run's health is compared with the median of its group's:

- the cost of a clock read (CAL-TIMER's clock_read p50 when the run has it,
  else the agent's own calibration, hello.clock.read_overhead_ns): more than
  CLOCK_FACTOR times apart;
- the cycle counter's rate (hello.clock.cycles.hz): more than RATE_TOLERANCE
  apart;
- the load average when the run started (the host probe): more than
  LOAD_EXCESS above (a machine busy with something else);
- the firmware an emulated board ran (machine.target.firmware_sha256):
  another build than its group's most common one. A source edited or
  pulled between a campaign's cells rebuilds it, and under -icount every
  figure moves with the code: the repetitions of the three-kernel campaign
  then "differed" in RSP-IO's maxima by up to 4.6 us, all of it the build.

A run that differs is set apart: left out of the pool and of the test,
and named with the reason. With two runs neither is the odd one: both stay,
and the disagreement is said.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

from rtbench.analysis.stats import series_stats
from rtbench.model import Run

CLOCK_FACTOR = 2.0
RATE_TOLERANCE = 0.05
LOAD_EXCESS = 4.0


@dataclass(frozen=True)
class Health:
    clock_read_ns: float | None
    counter_hz: float | None
    loadavg: float | None


def _num(v: object) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def health(run: Run) -> Health:
    clock = run.hello.get("clock") if isinstance(run.hello.get("clock"), dict) else {}
    assert isinstance(clock, dict)
    read = None
    cal = run.case("CAL-TIMER")
    s = cal.find("clock_read") if cal else None
    if s is not None and s.n:
        read = series_stats(s).pct.get(50.0)
    if read is None:
        read = _num(clock.get("read_overhead_ns"))
    cycles = clock.get("cycles") if isinstance(clock.get("cycles"), dict) else {}
    assert isinstance(cycles, dict)
    load = run.machine.get("loadavg") if isinstance(run.machine, dict) else None
    first = _num(load[0]) if isinstance(load, list) and load else None
    return Health(read, _num(cycles.get("hz")), first)


def _odd(value: float | None, others: list[float | None], what: str) -> str:
    known = [o for o in others if o is not None]
    if value is None or not known:
        return ""
    mid = statistics.median(known)
    if what == "clock" and mid > 0 and value > 0:
        ratio = value / mid
        if ratio > CLOCK_FACTOR or ratio < 1 / CLOCK_FACTOR:
            return f"clock read {value:.0f} ns against {mid:.0f} ns for its group"
    if what == "rate" and mid > 0 and abs(value / mid - 1) > RATE_TOLERANCE:
        return f"cycle counter at {value / 1e6:.0f} MHz against {mid / 1e6:.0f} MHz"
    if what == "load" and value > mid + LOAD_EXCESS:
        return f"load average {value:.1f} at its start against {mid:.1f}"
    return ""


def _build(run: Run) -> str | None:
    target = run.machine.get("target") if isinstance(run.machine, dict) else None
    digest = target.get("firmware_sha256") if isinstance(target, dict) else None
    return digest if isinstance(digest, str) and digest else None


def _other_build(run: Run, group: list[Run]) -> str:
    mine, known = _build(run), [b for r in group if (b := _build(r))]
    if mine is None or not known:
        return ""
    common = Counter(known).most_common(1)[0][0]
    if mine == common:
        return ""
    return f"firmware {mine[:12]} against {common[:12]} for its group (another build)"


def why_apart(run: Run, group: list[Run]) -> str:
    """Why `run` stands apart from its `group` (itself included, so that
    one odd run does not move the median it is held against)."""
    h, others = health(run), [health(r) for r in group]
    reasons = [
        _odd(h.clock_read_ns, [o.clock_read_ns for o in others], "clock"),
        _odd(h.counter_hz, [o.counter_hz for o in others], "rate"),
        _odd(h.loadavg, [o.loadavg for o in others], "load"),
        _other_build(run, group),
    ]
    return "; ".join(r for r in reasons if r)


def set_apart(groups: list[list[Run]]) -> tuple[list[list[Run]], list[str]]:
    """The groups without their odd repetitions, and a line per run set
    apart (or per pair of two that disagree, both kept)."""
    kept: list[list[Run]] = []
    said: list[str] = []
    for g in groups:
        if len(g) == 2:
            why = why_apart(g[0], [g[1]]) or why_apart(g[1], [g[0]])
            if why:
                said.append(f"runs #{g[0].id} and #{g[1].id} disagree ({why}): both kept")
            kept.append(g)
            continue
        odd = {id(r): why_apart(r, g) for r in g} if len(g) > 2 else {}
        good = [r for r in g if not odd.get(id(r))]
        said += [f"run #{r.id} set apart: {odd[id(r)]}" for r in g if odd.get(id(r))]
        kept.append(good if good else g)
    return kept, said
