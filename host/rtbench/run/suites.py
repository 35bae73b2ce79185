"""Named suites: which cases a run takes, with which settings.

`quick` fits in about a minute on a small machine and is what `make run`
runs; `full` uses the published settings. A user picks cases by ID or glob
(`THR-*`) and overrides any parameter (`--set THR-SW.n=2,10`).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

# Per case: (quick settings, full settings). Quick keeps the whole suite
# within about a minute on a 2-core machine; full uses the published
# settings (30 s per case where the method says so, 10,000 iterations ...).
CASES: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "CAL-TIMER": ({"reads": "100000", "rounds": "5000"}, {"reads": "1000000", "rounds": "100000"}),
    "CAL-REF": ({}, {}),
    "THR-SW": ({"duration_ms": "200"}, {"duration_ms": "30000"}),
    "SEM-SHF": ({"duration_ms": "300"}, {"duration_ms": "30000"}),
    # @THR-suites
    "THR-PRE": ({"duration_ms": "300"}, {"duration_ms": "30000"}),
    "THR-CTX": (
        {"iterations": "10000", "extra": "0,500"},
        {"iterations": "10000", "extra": "0,500"},
    ),
    "THR-NEW": ({"iterations": "200"}, {"iterations": "1000"}),
    "THR-B-NEW": ({"repeats": "20"}, {"repeats": "100"}),
    "THR-B-RR": ({"duration_ms": "600"}, {"threads": "3", "duration_ms": "3000"}),
    "THR-LOCK": ({}, {}),
    # @SEM-suites
    "SEM-B-LCK": ({}, {"count": "3", "rounds": "100"}),
    "SEM-B-REL": ({}, {"waiters": "8"}),
    "SEM-NEW": ({"iterations": "2000"}, {"iterations": "10000"}),
    "SEM-ARN": ({"iterations": "2000"}, {"iterations": "10000"}),
    "SEM-ARC": ({"rounds": "20"}, {"waiters": "1,8,32,128", "rounds": "100"}),
    "SEM-TAKE": ({"iterations": "2000"}, {"iterations": "10000"}),
    # @MUTMQ-suites
    "MUT-B-PI": ({"rounds": "3"}, {"rounds": "100"}),
    "MUT-ARN": ({"iterations": "10000"}, {"iterations": "100000"}),
    "MUT-ARC": ({"iterations": "1000"}, {"iterations": "10000"}),
    "MQ-SEND": ({"iterations": "1000"}, {"iterations": "10000"}),
    "MQ-LAT": ({"iterations": "1000"}, {"iterations": "10000"}),
    "SYS-CALL": ({"iterations": "1000"}, {"iterations": "10000"}),
    # @IRQ-suites
    "IRQ-LAT": ({"count": "2000", "period_us": "500"}, {"count": "10000", "period_us": "1000"}),
    "IRQ-RSP": ({"count": "20000", "period_us": "50"}, {"count": "500000", "period_us": "50"}),
    "IRQ-DLT": ({"count": "1000", "period_us": "500"}, {"count": "5000", "period_us": "1000"}),
    "IRQ-TLT": ({"count": "1000", "period_us": "500"}, {"count": "5000", "period_us": "1000"}),
    "IRQ-SUS": (
        {"count": "2000", "start_period_ns": "20000", "duration_ms": "3000"},
        {"count": "1000000", "start_period_ns": "20000", "duration_ms": "120000"},
    ),
    # @CLKJIT-suites
    "CLK-DUR": ({"duration_ms": "400"}, {"duration_ms": "10000"}),
    "CLK-RES": ({"count": "200"}, {"count": "2000"}),
    "JIT-PER": ({"period_us": "1000", "cycles": "2000"}, {"period_us": "10000", "cycles": "5000"}),
    "JIT-DL": ({"cycles": "500"}, {"cycles": "10000"}),
    "MEM-HEAP": ({"iterations": "1000"}, {"iterations": "10000"}),
    "MEM-POOL": ({"iterations": "1000"}, {"iterations": "10000"}),
    "TM-COOP": ({"duration_ms": "300"}, {"duration_ms": "30000"}),
    "TM-PRE": ({"duration_ms": "300"}, {"duration_ms": "30000"}),
    "TM-IRQ": ({"duration_ms": "300"}, {"duration_ms": "30000"}),
    "TM-IRQ-PRE": ({"duration_ms": "300"}, {"duration_ms": "30000"}),
    "TM-MSG": ({"duration_ms": "300"}, {"duration_ms": "30000"}),
    "TM-SYNC": ({"duration_ms": "300"}, {"duration_ms": "30000"}),
    "TM-MEM": ({"duration_ms": "300"}, {"duration_ms": "30000"}),
    "TM-BASIC": ({"duration_ms": "300"}, {"duration_ms": "30000"}),
    "NOISE-OS": ({"duration_ms": "300"}, {"duration_ms": "60000"}),
    "NOISE-HW": ({"duration_ms": "300"}, {"duration_ms": "60000"}),
    # @RSP-suites
    "RSP-IO": (
        {"count": "200"},
        {"count": "2000", "gap_min_us": "1000", "gap_max_us": "10000"},
    ),
}

SUITES: dict[str, dict[str, dict[str, str]]] = {
    "quick": {case: quick for case, (quick, _) in CASES.items()},
    "full": {case: full for case, (_, full) in CASES.items()},
}


class SelectionError(ValueError):
    pass


@dataclass
class Planned:
    case: str
    params: dict[str, str] = field(default_factory=dict)

    def agent_arg(self) -> str:
        """`CASE:name=value:...`, the agent's command-line form."""
        return ":".join([self.case, *(f"{k}={v}" for k, v in self.params.items())])


def select(
    suite: str,
    patterns: list[str],
    overrides: list[str],
    known: dict[str, set[str]],
) -> list[Planned]:
    """Resolves a suite, case patterns and NAME.PARAM=VALUE overrides against
    what the agent knows (`known`: case ID -> parameter names)."""
    if suite not in SUITES:
        raise SelectionError(f"unknown suite {suite!r}; suites: {', '.join(SUITES)}")
    base = SUITES[suite]
    if patterns:
        ids: list[str] = []
        for pat in patterns:
            hits = [c for c in known if fnmatch.fnmatchcase(c, pat.upper())]
            if not hits:
                raise SelectionError(f"no case matches {pat!r}; cases: {', '.join(sorted(known))}")
            ids += [h for h in hits if h not in ids]
        plan = [Planned(c, dict(base.get(c, {}))) for c in ids]
    else:
        plan = [Planned(c, dict(p)) for c, p in base.items() if c in known]
    for ov in overrides:
        _apply_override(plan, ov, known)
    return plan


def _apply_override(plan: list[Planned], ov: str, known: dict[str, set[str]]) -> None:
    target, sep, value = ov.partition("=")
    case, dot, name = target.rpartition(".")
    if not sep or not name or not value:
        raise SelectionError(f"--set {ov!r}: write CASE.PARAM=VALUE (or PARAM=VALUE for all)")
    hits = [p for p in plan if (not dot or fnmatch.fnmatchcase(p.case, case.upper()))]
    applied = False
    for p in hits:
        if name in known.get(p.case, set()):
            p.params[name] = value
            applied = True
        elif dot:
            raise SelectionError(
                f"{p.case} has no parameter {name!r}; it has: "
                f"{', '.join(sorted(known[p.case])) or '(none)'}"
            )
    if not applied:
        raise SelectionError(f"--set {ov!r} matches no selected case with parameter {name!r}")
