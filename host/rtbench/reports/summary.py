"""The first screen of a run report: the result, what is good and what is
bad and why, and the run's latencies in one OSADL-style histogram and one
exceedance (1 - CDF) plot.

Findings are ordered worst first: failed checks and cases that errored,
NOT REAL-TIME, severe warnings (grouped by code), a spike (a max far above
its series' p99, named with where it happened), the worst latency; then
what went well. The chart draws every latency series of the run when they
are few (one CPU each, as OSADL draws them); otherwise each case's worst
series (the one with the highest max, so no spike is left out), the
highest maxima first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from rtbench import catalogue
from rtbench.analysis.chunkwise import argmax
from rtbench.analysis.compare import UNSTABLE_MAX_P99, instability
from rtbench.analysis.stats import Stats, case_stats, has_all_samples
from rtbench.model import Run, Series
from rtbench.reports import plots
from rtbench.reports.units import fmt_value, is_latency
from rtbench.verdict import Verdict, verdict

SEVERE = frozenset({"not_realtime", "overrun", "buffer_full", "lost_wakeups", "incomplete"})
MAX_LINES = 10  # series in the summary chart: more lines than this are unreadable

Level = Literal["bad", "warn", "good"]


@dataclass
class Finding:
    level: Level
    text: str


@dataclass
class Spike:
    series: Series
    max: float
    p99: float
    index: int | None  # the sample's position, when raw samples were kept

    @property
    def ratio(self) -> float:
        return self.max / self.p99 if self.p99 > 0 else float("inf")

    def text(self) -> str:
        where = f" (sample {self.index + 1} of {self.series.n})" if self.index is not None else ""
        times = f"{self.ratio:.0f}× its p99" if self.p99 > 0 else "above a p99 of 0"
        return (
            f"Spike: {fmt_value(self.max)} µs in {self.series.case} {self.series.label}{where}, "
            f"{times} of {fmt_value(self.p99)} µs: one rare event, not the usual latency"
        )


@dataclass
class Summary:
    outcome: str
    findings: list[Finding]
    lines: list[plots.Line]
    left_out: str  # the latency series the chart leaves out, if any
    spike: Spike | None
    histogram: str | None = None  # inline SVG
    exceedance: str | None = None
    counts: dict[str, int] = field(default_factory=dict)  # case outcome -> count
    # The verdict in two parts: what held of the behaviour, what of timing.
    verdict: Verdict | None = None


def _line(s: Series, st: Stats) -> plots.Line:
    return plots.Line(
        label=f"{s.case} {s.label}",
        series=s,
        n=s.n,
        max=float(s.max) if s.max is not None else 0.0,
        p99=st.pct.get(99.0),
        p999=st.pct.get(99.9),
    )


def _spike(latencies: list[tuple[Series, Stats]]) -> Spike | None:
    """The highest max that is far above its own series' p99."""
    found: Spike | None = None
    for s, st in latencies:
        p99 = st.pct.get(99.0)
        if s.max is None or p99 is None or s.n < 100:
            continue
        if not instability(st, "max"):  # the rule `compare` flags a max by
            continue
        if found is None or s.max > found.max:
            # A position among every sample only when every sample was kept
            # (a soak run keeps a ring of the last ones).
            kept = s.chunked if has_all_samples(s) else None
            index = argmax(kept) if kept is not None else None
            found = Spike(s, float(s.max), float(p99), index)
    return found


def _chart_lines(latencies: list[tuple[Series, Stats]]) -> tuple[list[plots.Line], str]:
    if len(latencies) <= MAX_LINES:
        chosen = latencies
    else:
        worst: dict[str, tuple[Series, Stats]] = {}
        for s, st in latencies:
            if s.case not in worst or (s.max or 0) > (worst[s.case][0].max or 0):
                worst[s.case] = (s, st)
        chosen = sorted(worst.values(), key=lambda x: -(x[0].max or 0))[:MAX_LINES]
    chosen = sorted(chosen, key=lambda x: -(x[0].max or 0))
    rest = [s for s, _ in latencies if all(s is not c for c, _ in chosen)]
    note = ""
    if rest:
        top = max((s.max or 0) for s in rest)
        note = (
            f"{len(rest)} more latency series not drawn (each case's worst series is): "
            f"their maxima are at most {fmt_value(top)} µs"
        )
    return [_line(s, st) for s, st in chosen], note


def _warning_findings(run: Run) -> list[Finding]:
    by_code: dict[str, list[str]] = {}
    for w in run.all_warnings():
        cases = by_code.setdefault(w.code, [])
        if w.case and w.case not in cases:
            cases.append(w.case)
    found = []
    for code, cases in by_code.items():
        if code not in SEVERE or code == "not_realtime":
            continue
        where = f" in {', '.join(cases)}" if cases else ""
        found.append(Finding("bad", f"{code}{where}: the figures concerned say less (see below)"))
    others = [c for c in by_code if c not in SEVERE]
    if others:
        found.append(Finding("warn", f"{len(others)} other warnings ({', '.join(others)})"))
    return found


def summarize(run: Run, draw: bool = True) -> Summary:
    findings: list[Finding] = []
    counts: dict[str, int] = {}
    for c in run.cases:
        counts[c.outcome] = counts.get(c.outcome, 0) + 1
    for c in run.cases:
        for ch in c.checks:
            if ch.verdict in ("fail", "error"):
                findings.append(Finding("bad", f"{c.case} {ch.name} {ch.verdict}ed: {ch.detail}"))
        if c.outcome == "error":
            findings.append(Finding("bad", f"{c.case} could not measure: {c.reason or 'error'}"))
    if not run.realtime:
        findings.append(
            Finding("bad", "NOT REAL-TIME: measured without real-time priority, no figure rated")
        )
    if run.emulated:
        findings.append(Finding("warn", f"emulated ({run.emulated}): compare with the same only"))
    if run.issues:
        findings.append(Finding("bad", f"{len(run.issues)} stream problems: {run.issues[0]}"))
    table = catalogue.run_table(run)
    latencies = [
        (s, case_stats(s, table)) for c in run.cases for s in c.series if is_latency(s) and s.n
    ]
    spike = _spike(latencies)
    if spike is not None:
        findings.append(Finding("bad", spike.text()))
    findings += _warning_findings(run)
    if latencies:
        s, st = max(latencies, key=lambda x: x[0].max or 0)
        if spike is None or s is not spike.series:
            p99 = st.pct.get(99.0)
            tail = f" (its p99: {fmt_value(p99)} µs)" if p99 is not None else ""
            findings.append(
                Finding("warn", f"Worst latency: {fmt_value(s.max)} µs in {s.case} {s.label}{tail}")
            )
    checks = [ch for c in run.cases for ch in c.checks]
    passed = sum(ch.verdict == "pass" for ch in checks)
    if checks and passed == len(checks):
        findings.append(Finding("good", f"all {passed} behaviour checks passed"))
    elif passed:
        findings.append(Finding("good", f"{passed} of {len(checks)} behaviour checks passed"))
    if latencies and spike is None:
        p99s = [st.pct[99.0] for _, st in latencies if 99.0 in st.pct]
        if p99s:
            findings.append(
                Finding(
                    "good",
                    f"no spike: every latency's max is within {UNSTABLE_MAX_P99:g}× its p99 "
                    f"or its series is short; p99 at most {fmt_value(max(p99s))} µs",
                )
            )
    idle = counts.get("skipped", 0) + counts.get("unsupported", 0)
    if idle:
        what = "1 case" if idle == 1 else f"{idle} cases"
        findings.append(Finding("warn", f"{what} skipped or unsupported here (not passes)"))

    lines, left_out = _chart_lines(latencies)
    summary = Summary(
        run.outcome, findings, lines, left_out, spike, counts=counts, verdict=verdict(run)
    )
    if draw and lines:
        summary.histogram = plots.summary_histogram_svg(lines)
        summary.exceedance = plots.exceedance_svg(lines)
    return summary
