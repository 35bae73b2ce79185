"""Repetitions pooled: the same series of several runs as one series, and
the runs of one configuration as one comparison column (`rtbench ab`,
`compare`, a campaign's report)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from rtbench.analysis.chunkwise import Concatenated
from rtbench.analysis.stats import has_all_samples
from rtbench.model import (
    ArraySamples,
    CaseResult,
    ChunkedSamples,
    Histogram,
    Int64Array,
    Run,
    Series,
    worst_outcome,
)


def _merge_hist(hists: list[Histogram]) -> Histogram | None:
    if any(h.layout != hists[0].layout for h in hists):
        return None
    counts: dict[int, int] = {}
    for h in hists:
        for i, c in h.counts:
            counts[i] = counts.get(i, 0) + c
    mins = [h.min for h in hists if h.min is not None]
    maxs = [h.max for h in hists if h.max is not None]
    return Histogram(
        layout=hists[0].layout,
        counts=sorted(counts.items()),
        n=sum(h.n for h in hists),
        min=min(mins) if mins else None,
        max=max(maxs) if maxs else None,
        sum=sum(h.sum for h in hists),
        underflow=sum(h.underflow for h in hists),
        overflow=sum(h.overflow for h in hists),
    )


def merge_series(parts: list[Series]) -> Series:
    """One series from the same series of several runs."""
    first = parts[0]
    samples: ChunkedSamples | Int64Array | None = None
    if all(has_all_samples(s) for s in parts):
        kept = [s.chunked for s in parts if s.chunked is not None]
        if all(isinstance(k, ArraySamples) for k in kept):
            samples = np.concatenate([k.array() for k in kept])
        else:  # a long stored series among them: pooled without reading any whole
            samples = Concatenated(kept)
    hists = [s.hist for s in parts if s.hist is not None]
    mins = [s.min for s in parts if s.min is not None]
    maxs = [s.max for s in parts if s.max is not None]
    merged = Series(
        case=first.case,
        name=first.name,
        point=dict(first.point),
        unit=first.unit,
        hist=_merge_hist(hists) if len(hists) == len(parts) else None,
        n=sum(s.n for s in parts),
        min=min(mins) if mins else None,
        max=max(maxs) if maxs else None,
        sum=sum(s.sum for s in parts),
        dropped=sum(s.dropped for s in parts),
        kind=first.kind,
        attrs=dict(first.attrs),
    )
    merged.chunked = samples
    return merged


def pool(runs: list[Run]) -> Run:
    """The runs of one side as one run: each series pooled over the rounds."""
    grouped: dict[tuple[str, str, str], list[Series]] = {}
    for run in runs:
        for c in run.cases:
            for s in c.series:
                grouped.setdefault(s.key, []).append(s)
    cases: dict[str, CaseResult] = {}
    for key, parts in grouped.items():
        case = cases.setdefault(key[0], CaseResult(case=key[0], outcome="passed"))
        case.series.append(merge_series(parts))
    # The pool is as bad as its worst run: each case's worst outcome, and
    # every run's checks and warnings, named by run (a failed repetition is
    # never merged into "passed · checks none").
    for run in runs:
        who = f"run #{run.id}: " if run.id is not None else ""
        for c in run.cases:
            case = cases.setdefault(c.case, CaseResult(case=c.case, outcome=c.outcome))
            case.title = case.title or c.title
            case.outcome = worst_outcome([case.outcome, c.outcome])  # type: ignore[assignment]
            case.reason = case.reason or c.reason
            case.checks += [replace(ch, detail=who + ch.detail) for ch in c.checks]
            case.warnings += [replace(w, detail=who + w.detail) for w in c.warnings]
    # A pooled run is as real-time as the runs it pools, not just its first.
    hello = {**runs[0].hello, "realtime": {"ok": all(r.realtime for r in runs)}} if runs else {}
    complete = all(r.complete for r in runs)
    return Run(hello=hello, cases=list(cases.values()), bye={} if complete else None)


def failed_runs(members: list[Run]) -> str:
    """The runs of a pool that did not pass, as `#id outcome` ('' if none)."""
    return ", ".join(f"#{r.id} {r.outcome}" for r in members if r.outcome in ("failed", "error"))


def column(members: list[Run]) -> Run:
    """A comparison column standing for `members`, repetitions of one
    configuration: the run itself, or their series pooled, with the labels
    they share and their ids (label `runs`)."""
    if len(members) == 1:
        return members[0]
    first = members[0]
    merged = pool(members)
    merged.machine = first.machine
    merged.target = first.target
    merged.started_at = first.started_at
    merged.source = f"runs {', '.join(str(r.id) for r in members)}"
    shared = {k: v for k, v in first.labels.items() if all(r.labels.get(k) == v for r in members)}
    merged.labels = {**shared, "runs": ",".join(str(r.id) for r in members)}
    bad = failed_runs(members)
    if bad:
        merged.labels["failed_runs"] = bad
    return merged
