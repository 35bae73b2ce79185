"""A run's verdict in two parts (docs/outcomes.md, "Behaviour and timing").

- **Behaviour**: the OS did what the primitive promises (priority
  inheritance, order, creation, counts): every check but the timing ones.
- **Timing**: the deadlines held: no periodic release after its next planned
  release and no event lost to an overrun (the agent's `overrun` and
  `lost_wakeups` warnings, counted), no `--break` threshold crossed (the
  `break` check), no deadline missed (JIT-DL's `deadlines` check).

A deadline miss is a failed timing check: a run with misses is `failed`
(exit 1) even when every behaviour check held, so a "passed" never hides
2,607 skipped periods. The tolerance per warning is the run's label
`allow_misses` (`rtbench run --allow-misses N`), else ALLOWED_MISSES (0: a
single late release fails); `rtbench check --criteria` bounds the figures
themselves (docs/analysis.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rtbench.model import Run, worst_outcome

# Checks that judge time, not behaviour.
TIMING_CHECKS = frozenset({"break", "deadlines"})
# Warnings that count deadline misses or events lost to lateness.
MISS_WARNINGS = frozenset({"overrun", "lost_wakeups"})
ALLOWED_MISSES = 0
ALLOW_LABEL = "allow_misses"
# Cases whose figures have deadlines: timing is judged where one ran (not
# IRQ-SUS: its losses are the search for the rate where they begin).
DEADLINE_CASES = frozenset(
    {"JIT-PER", "JIT-DL", "IRQ-LAT", "IRQ-RSP", "IRQ-DLT", "IRQ-TLT", "THR-PRE"}
)

_OF = re.compile(r"(\d+) of (\d+)")
_GIVES = re.compile(r"(\d+) gives but (\d+) wake-ups")


@dataclass(frozen=True)
class Part:
    outcome: str  # passed, failed, error, skipped (nothing judged it here)
    reasons: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return self.outcome + (f" ({'; '.join(self.reasons)})" if self.reasons else "")


@dataclass(frozen=True)
class Verdict:
    behaviour: Part
    timing: Part
    misses: list[str] = field(default_factory=list)

    @property
    def line(self) -> str:
        return f"behaviour {self.behaviour.text} · timing {self.timing.text}"


def miss_count(code: str, detail: str) -> int:
    """How many deadlines a miss warning counts (1 when it does not say)."""
    if code == "lost_wakeups" and (m := _GIVES.search(detail)):
        return max(1, int(m.group(1)) - int(m.group(2)))
    m = _OF.search(detail)
    return int(m.group(1)) if m else 1


def allowed_misses(run: Run) -> int:
    """The run's tolerance: its label allow_misses, else ALLOWED_MISSES."""
    text = run.labels.get(ALLOW_LABEL, "")
    return int(text) if text.isdigit() else ALLOWED_MISSES


def deadline_misses(run: Run) -> list[str]:
    """Each deadline miss beyond the tolerance, as `CASE: what happened`."""
    out = []
    allowed = allowed_misses(run)
    for c in run.cases:
        for w in c.warnings:
            if w.code in MISS_WARNINGS and miss_count(w.code, w.detail) > allowed:
                out.append(f"{c.case}: {w.detail}")
    return out


def verdict(run: Run) -> Verdict:
    """Behaviour and timing, each with its own outcome and reasons."""
    behaviour: list[str] = []
    timing: list[str] = []
    why_b: list[str] = []
    why_t: list[str] = []
    for c in run.cases:
        bad = {ch.name: ch.verdict for ch in c.checks if ch.verdict in ("fail", "error")}
        bad_t = {n: v for n, v in bad.items() if n in TIMING_CHECKS}
        bad_b = {n: v for n, v in bad.items() if n not in TIMING_CHECKS}
        why_b += [f"{c.case} {n} {v}ed" for n, v in bad_b.items()]
        why_t += [f"{c.case} {n} {v}ed" for n, v in bad_t.items()]
        if c.outcome in ("skipped", "unsupported"):
            behaviour.append("skipped")
            continue
        # A case's error or failure that no timing check explains is behaviour's.
        own = c.outcome if c.outcome in ("error", "failed") and not bad_t else "passed"
        if own != "passed" and not bad_b:
            why_b.append(f"{c.case} {'ended in an error' if own == 'error' else 'failed'}")
        behaviour.append(worst_outcome([own, *(_OUT[v] for v in bad_b.values())]))
        if bad_t or c.case in DEADLINE_CASES or any(ch.name in TIMING_CHECKS for ch in c.checks):
            timing.append(worst_outcome(["passed", *(_OUT[v] for v in bad_t.values())]))
    misses = deadline_misses(run)
    why_t += misses
    if misses:
        timing.append("failed")
    b = worst_outcome(behaviour) if behaviour else "skipped"
    if behaviour and all(o == "skipped" for o in behaviour):
        b = "skipped"
    if not run.complete:
        b = "error"
        why_b.append("the stream is incomplete")
    if not timing:
        why_t.append("no case here has deadlines")
    t = worst_outcome(timing) if timing else "skipped"
    return Verdict(Part(b, tuple(why_b)), Part(t, tuple(why_t)), misses)


_OUT = {"fail": "failed", "error": "error"}
