"""The tables the commands print (show/run, analyze, compare, runs), as
`Tabular`s: raw figures in each series' own unit, shown through
`rtbench.reports.units`, so the terminal, JSON and CSV carry the same
numbers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from rtbench import catalogue
from rtbench.analysis.compare import Comparison
from rtbench.analysis.scores import fmt_score
from rtbench.analysis.stats import PCT_NAMES, PCT_OF, Stats, case_stats
from rtbench.analysis.stored import hist_note
from rtbench.model import Run, Series, point_key
from rtbench.reports.tables import Column, Row, Tabular
from rtbench.reports.units import fmt_in, fmt_value, kind, shown, table_unit
from rtbench.store import RunSummary
from rtbench.verdict import verdict

# Priority of each figure when a narrow terminal must leave columns out:
# max first, then p99 (both essential), n, mean, min, the other percentiles.
PRIORITY = {
    "case": 100,
    "series": 100,
    "max": 99,
    "p99": 95,
    "unit": 85,
    "n": 80,
    "mean": 75,
    "min": 70,
    "p99.9": 65,
    "p50": 60,
    "stddev": 45,
    "p90": 40,
    "p99.99": 35,
    "max_3sigma": 30,
    "score": 25,
    "flags": 55,
}


def _figure(key: str, bounded_key: str | None = None) -> Column:
    """A figure column: the raw value in the row's unit, shown in its display unit."""

    def show(row: Row) -> str:
        mark = "≤" if bounded_key and key in row.get(bounded_key, ()) else ""
        approx = "~" if key == "stddev" and row.get("stddev_approx") else ""
        value = row.get(key)
        shown_in = row.get("shown_unit", "")
        return approx + mark + ("-" if value is None else fmt_in(value, row["unit"], shown_in))

    return Column(key, key, PRIORITY.get(key, 50), show=show, bold=key == "max")


def _series_row(run: Run, case: str, s: Series, st: Stats) -> Row:
    sh = shown(s)
    row: Row = {
        "case": case,
        "series": s.label,
        "name": s.name,
        "point": dict(s.point),
        "kind": kind(s),
        "unit": s.unit,
        "shown_unit": table_unit(s),  # the terminal's; scripts get `unit`
        "n": s.n,
        "min": s.min,
        "mean": st.mean,  # None where the kind has no mean (a count, a timestamp)
        "stddev": st.stddev,
        "stddev_approx": not st.stddev_exact,
        "max": s.max,
        "max_3sigma": st.filtered_max,
        "filtered_out": st.filtered_out if st.filtered_max is not None else None,
        "filtered_approx": st.filtered_approx,
        "bounded": [name for name in PCT_NAMES.values() if st.is_bounded(name)],
    }
    for q, name in PCT_NAMES.items():
        row[name] = st.pct.get(q)
    t_std = run.t_std_ns
    row["score"] = s.mean / t_std if sh.rated and t_std and s.mean is not None else None
    return row


def series_flags(run: Run, s: Series, st: Stats) -> list[tuple[str, str]]:
    """What qualifies a series' figures: (short flag for tables, sentence
    for reports), in one place for every renderer."""
    flags = []
    if not run.realtime:
        flags.append(("not_realtime", "not_realtime"))
    if run.emulated:
        flags.append(("emulated", "emulated"))
    if st.bounded:
        flags.append(("p≤bucket", "percentiles are bucket bounds (no raw samples)"))
    if s.dropped:
        flags.append(
            (f"dropped {s.dropped}", f"{s.dropped} samples not buffered (still in n/min/max)")
        )
    if s.holes:
        flags.append((f"lost {s.holes}", f"{s.holes} samples lost in the stream"))
    note = hist_note(s)
    if note:
        flags.append((note, note))
    p99 = st.pct.get(PCT_OF["p99"])
    if st.mean is not None and p99 is not None and st.mean > p99 and s.max is not None:
        # THR-CTX switch[n=0]: mean 5.745 above p99 4.168 from one 51.7 ms
        # sample: the mean says nothing of the other samples.
        flags.append(
            (
                "mean>p99",
                f"the mean is above p99: a few samples (the max, {fmt_value(s.max, s.unit)} "
                f"{shown(s).unit}) dominate it; the median (p50) is the typical figure",
            )
        )
    return flags


def _flags(run: Run, s: Series, st: Stats) -> list[str]:
    return [short for short, _ in series_flags(run, s, st)]


_FLAG_STYLE = {"not_realtime": "red", "emulated": "magenta"}


def _show_flags(row: Row) -> Text:
    text = Text()
    for i, flag in enumerate(row["flags"]):
        if i:
            text.append(" ")
        style = _FLAG_STYLE.get(flag, "yellow" if flag.startswith(("lost", "hist")) else "")
        text.append(flag, style=style)
    return text


def _unit_col() -> Column:
    """The terminal shows the display unit (µs); scripts get `unit`, the
    unit their raw figures are in (ns): a column never names another unit
    than its values'."""
    return Column(
        "unit", "unit", PRIORITY["unit"], numeric=False, show=lambda row: row["shown_unit"]
    )


def _max_3sigma(row: Row) -> str:
    if row.get("max_3sigma") is None:
        return "-"
    approx = "≈" if row.get("filtered_approx") else ""  # from the histogram
    value = fmt_in(row["max_3sigma"], row["unit"], row.get("shown_unit", ""))
    return f"{approx}{value} (-{row['filtered_out']})"


def _score(row: Row) -> str:
    return fmt_score(row.get("score"))


_EXTRA = (
    "name",
    "point",
    "kind",
    "unit",
    "bounded",
    "filtered_out",
    "filtered_approx",
    "stddev_approx",
)


def _rows(run: Run, flags: bool) -> list[Row]:
    """A row of figures per series of the run, with its flags for `show`."""
    rows = []
    table = catalogue.run_table(run)
    for c in run.cases:
        for s in c.series:
            st = case_stats(s, table)
            row = _series_row(run, c.case, s, st)
            if flags:
                row["flags"] = _flags(run, s, st)
            rows.append(row)
    return rows


def figures_table(run: Run) -> Tabular:
    """`show` and `run`: the headline figures of every series."""
    rows = _rows(run, flags=True)
    cols = [
        Column("case", "case", PRIORITY["case"], numeric=False),
        Column("series", "series", PRIORITY["series"], numeric=False),
        _unit_col(),
        Column("n", "n", PRIORITY["n"]),
        _figure("min"),
        _figure("mean"),
        _figure("p99", "bounded"),
        _figure("max"),
    ]
    # Columns that say nothing for this run are left out.
    if any(r["max_3sigma"] is not None for r in rows):
        cols.append(Column("max_3sigma", "max 3σ", PRIORITY["max_3sigma"], show=_max_3sigma))
    if any(r["score"] is not None for r in rows):
        cols.append(Column("score", "score", PRIORITY["score"], show=_score))
    if any(r["flags"] for r in rows):
        cols.append(Column("flags", "flags", PRIORITY["flags"], numeric=False, show=_show_flags))
    return Tabular("Figures", cols, rows, extra=_EXTRA)


def statistics_table(run: Run) -> Tabular:
    """`analyze`: every statistic of every series."""
    rows = _rows(run, flags=False)
    cols = [
        Column("case", "case", PRIORITY["case"], numeric=False),
        Column("series", "series", PRIORITY["series"], numeric=False),
        _unit_col(),
        Column("n", "n", PRIORITY["n"]),
        _figure("min"),
        _figure("mean"),
        _figure("stddev"),
        *(_figure(name, "bounded") for name in PCT_NAMES.values()),
        _figure("max"),
        Column("max_3sigma", "max 3σ (-out)", PRIORITY["max_3sigma"], show=_max_3sigma),
    ]
    title = "Statistics (≤ a histogram bucket's upper bound; ~ from bucket midpoints)"
    return Tabular(title, cols, rows, extra=_EXTRA)


def _column_name(r: Run, k: int) -> str:
    """#id, or #ids of the runs a pooled column stands for, or its place."""
    if r.id is not None:
        return f"#{r.id}"
    return f"#{r.labels['runs']}" if "runs" in r.labels else f"run {k}"


def comparison_table(cmp: Comparison, units: Sequence[str]) -> Tabular:
    """`compare`: the indicator per run, ratios to the first, the test.
    `units`: each row's stream unit."""
    # Runs by position (1 = the first, the baseline): one run may be
    # compared with itself, so ids are no keys.
    ids = [str(k) for k in range(1, len(cmp.runs) + 1)]
    names = [_column_name(r, k) for k, r in enumerate(cmp.runs, 1)]
    rows = []
    for row, unit in zip(cmp.rows, units, strict=True):
        shown_unit = "count" if cmp.indicator == "n" else unit
        unstable = {i: w for i, w, u in zip(ids, row.why_unstable, row.unstable, strict=True) if u}
        rows.append(
            {
                "case": row.case,
                "series": row.label,
                "name": row.series,
                "point": row.point_key,
                "unit": shown_unit,
                "shown_unit": shown(Series(row.case, row.series, unit=shown_unit)).unit,
                "indicator": cmp.indicator,
                **{f"run_{i}": v for i, v in zip(ids, row.values, strict=True)},
                **{f"ratio_{i}": r for i, r in zip(ids[1:], row.ratios[1:], strict=True)},
                "bounded": [int(i) for i, b in zip(ids, row.bounded, strict=True) if b],
                # Why a run has no value: its case's outcome there.
                **{f"absent_{i}": w for i, w in zip(ids, row.absent, strict=True) if w},
                "unstable": [int(i) for i in unstable],
                "pvalue": row.pvalue,
                "significant": row.significant,
                # Run-to-run noise: the widest range of the per-run figure
                # within a column, and whether the change exceeds it.
                "spread": row.spread,
                "beyond_noise": row.beyond_noise,
                "per_run": row.per_run,
                "test": row.test,
                "flags": "; ".join(f"{names[int(i) - 1]} {w}" for i, w in unstable.items()),
            }
        )

    def value(i: str) -> Column:
        def show(r: Row) -> Text:
            v = r.get(f"run_{i}")
            if v is None and r.get(f"absent_{i}"):
                return Text(str(r[f"absent_{i}"]), style="dim")
            text = ("≤" if int(i) in r["bounded"] else "") + fmt_value(v, r["unit"])
            unstable = int(i) in r["unstable"]
            return Text(text + ("~" if unstable else ""), style="yellow" if unstable else "")

        return Column(f"run_{i}", names[int(i) - 1], 99, show=show, bold=True)

    def ratio(i: str) -> Column:
        def show(r: Row) -> str:
            v = r.get(f"ratio_{i}")
            return "-" if v is None else f"{v:.2f}"

        return Column(f"ratio_{i}", f"{names[int(i) - 1]}/{names[0]}", 95, show=show)

    def pvalue(r: Row) -> str:
        p = r.get("pvalue")
        return "-" if p is None else f"{p:.2g}" + ("*" if r["significant"] else "")

    def beyond(r: Row) -> Text:
        b = r.get("beyond_noise")
        if b is None:
            return Text("-", style="dim")
        return Text("yes", style="bold") if b else Text("no", style="dim")

    cols = [
        Column("case", "case", 100, numeric=False),
        Column("series", "series", 100, numeric=False),
        _unit_col(),
        *(value(i) for i in ids),
        *(ratio(i) for i in ids[1:]),
        Column("pvalue", "p", 60, show=pvalue),
        Column("spread", "spread", 55, show=lambda r: fmt_value(r["spread"], r["unit"])),
        Column("beyond_noise", "beyond noise", 58, numeric=False, show=beyond),
        Column("flags", "flags", 30, numeric=False),
    ]
    extra = (
        "name", "point", "unit", "indicator", "bounded", "unstable", "significant", "test",
        "per_run",
    )  # fmt: skip
    return Tabular(f"Comparison: {cmp.indicator}", cols, rows, extra=extra)


def find_series(run: Run, case: str, name: str, pkey: str) -> Series | None:
    c = run.case(case)
    if c is None:
        return None
    return next((s for s in c.series if s.name == name and point_key(s.point) == pkey), None)


def run_info(run: Run) -> Row:
    """What identifies a run in JSON output."""
    return {
        "id": run.id,
        "started_at": run.started_at,
        "target": run.target,
        "labels": dict(run.labels),
        "outcome": run.outcome,
        # The verdict in two parts (rtbench.verdict).
        "behaviour": (v := verdict(run)).behaviour.outcome,
        "timing": v.timing.outcome,
        "timing_reasons": list(v.timing.reasons),
        "complete": run.complete,
        "realtime": run.realtime,
        "emulated": run.emulated,
        "os": run.system.sysname,
        "kernel": run.system.release,
        "t_std_ns": run.t_std_ns,
    }


def run_document(run: Run) -> dict[str, Any]:
    """`show --format json`: the run, its figures, cases, checks, warnings."""
    return {
        "run": run_info(run),
        "figures": figures_table(run),
        "cases": [
            {
                "case": c.case,
                "title": c.title,
                "outcome": c.outcome,
                "reason": c.reason,
                "duration_ns": c.duration_ns,
            }
            for c in run.cases
        ],
        "checks": [
            {"case": ch.case, "name": ch.name, "verdict": ch.verdict, "detail": ch.detail}
            for c in run.cases
            for ch in c.checks
        ],
        "warnings": [
            {"code": w.code, "case": w.case, "detail": w.detail} for w in run.all_warnings()
        ],
        "issues": [{"kind": i.kind, "line": i.line, "detail": i.detail} for i in run.issues],
    }


def runs_table(summaries: Sequence[RunSummary]) -> Tabular:
    """`runs`: one row per stored run."""
    rows = [
        {
            "id": r.id,
            "started_at": r.started_at,
            "target": r.target,
            "kernel": r.kernel,
            "cases": r.cases,
            "outcome": r.outcome,
            "realtime": r.realtime,
            "labels": dict(r.labels),
        }
        for r in summaries
    ]

    def realtime(r: Row) -> Text:
        return Text("yes") if r["realtime"] else Text("no", style="red")

    def labels(r: Row) -> str:
        return ", ".join(f"{k}={v}" for k, v in r["labels"].items())

    cols = [
        Column("id", "id", 100, numeric=False),
        Column("started_at", "started", 70, numeric=False),
        Column("target", "target", 60, numeric=False),
        Column("kernel", "kernel", 50, numeric=False),
        Column("cases", "cases", 40),
        Column("outcome", "result", 95, numeric=False),
        Column("realtime", "realtime", 90, numeric=False, show=realtime),
        Column("labels", "labels", 80, numeric=False, show=labels),
    ]
    return Tabular("", cols, rows)
