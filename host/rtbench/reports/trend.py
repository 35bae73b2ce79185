"""The trend view: a table for the terminal and scripts, an HTML page with
the p99 and max of one series over a sequence of runs (OSADL-style)."""

from __future__ import annotations

from collections.abc import Sequence

from rtbench.analysis.trend import Order, SeriesSpec, TrendPoint
from rtbench.reports.tables import Column, Tabular
from rtbench.reports.units import fmt_value, unit_of


def trend_table(points: Sequence[TrendPoint]) -> Tabular:
    unit = unit_of(points[0].unit).unit if points else "µs"
    columns = [
        Column("index", "#", 95),
        Column("run", "run", 95),
        Column("started", "started", 40, numeric=False),
        Column("kernel", "kernel", 85, numeric=False),
        Column("target", "target", 30, numeric=False),
        Column("series", "series", 92, numeric=False),
        Column("n", "n", 20),
        Column("p99", f"p99 ({unit})", 98, show=lambda r: fmt_value(r["p99"], r["unit"])),
        Column("max", f"max ({unit})", 99, show=lambda r: fmt_value(r["max"], r["unit"])),
    ]
    rows = [
        {
            "index": i,
            "run": p.run_id,
            "started": p.started_at,
            "kernel": p.kernel or "?",
            "target": p.target + (" (emulated)" if p.emulated else ""),
            "series": p.series,
            "n": p.n,
            "p99": p.p99,
            "max": p.max,
            "unit": p.unit,
        }
        for i, p in enumerate(points, 1)
    ]
    return Tabular("", columns, rows, extra=("unit",))


def trend_svg(points: Sequence[TrendPoint], spec: SeriesSpec, order: Order) -> str:
    """p99 and max against the point's place in the sequence, one line pair
    per series label (a per-CPU series gives one pair per CPU)."""
    from rtbench.reports.mpl import _figure, to_svg

    fig, ax = _figure(7.2, 3.0)
    shown = unit_of(points[0].unit)
    labels = sorted({p.series for p in points})
    xs_all = list(range(1, len(points) + 1))
    for label in labels:
        mine = [(x, p) for x, p in zip(xs_all, points, strict=True) if p.series == label]
        xs = [x for x, _ in mine]
        suffix = f" {label}" if len(labels) > 1 else ""
        ax.plot(xs, [_div(p.max, shown.divisor) for _, p in mine], marker="o", label=f"max{suffix}")
        ax.plot(
            xs,
            [_div(p.p99, shown.divisor) for _, p in mine],
            marker=".",
            linestyle="--",
            label=f"p99{suffix}",
        )
    ticks = [p.kernel if order == "kernel" else p.started_at[:10] for p in points]
    ax.set_xticks(xs_all, ticks, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel(shown.unit)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    ax.set_title(str(spec), fontsize=9)
    return to_svg(fig, f"p99 and max of {spec} over {len(points)} runs")


def _div(value: float | None, divisor: float) -> float:
    return float("nan") if value is None else value / divisor


def trend_html(
    points: Sequence[TrendPoint], spec: SeriesSpec, order: Order, filters: str, runs: int
) -> str:
    from rtbench import __version__
    from rtbench.reports.content import fmt
    from rtbench.reports.jinja import environment

    env = environment(autoescape=True)
    env.filters["fmt"] = fmt
    return env.get_template("trend.html.j2").render(
        version=__version__,
        title=f"rtbench trend: {spec}",
        spec=str(spec),
        points=points,
        order=order,
        filters=filters,
        runs=runs,
        unit=unit_of(points[0].unit).unit,
        emulated=any(p.emulated for p in points),
        svg=trend_svg(points, spec, order),
    )
