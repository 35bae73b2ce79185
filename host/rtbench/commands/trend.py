"""`rtbench trend`: one figure over a labelled sequence of runs.

rtbench trend --label board=rpi4                       # JIT-PER latency, by date
rtbench trend --label board=rpi4 --by kernel -o t.html # by kernel release, with a plot
rtbench trend --series JIT-PER/latency[cpu=1] --format csv
"""

from __future__ import annotations

from pathlib import Path

import click

from rtbench.commands.common import (
    fail,
    format_option,
    label_filters,
    open_store,
    out,
    print_data,
    say,
)


@click.command()
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="KEY[=VALUE]",
    help="Only runs with these labels (e.g. board=rpi4).",
)
@click.option(
    "--series",
    "spec_text",
    default="JIT-PER/latency",
    show_default=True,
    metavar="CASE/SERIES[POINT]",
    help="The series to follow, e.g. JIT-PER/latency[cpu=1].",
)
@click.option(
    "--by",
    "order",
    type=click.Choice(["date", "kernel"]),
    default="date",
    show_default=True,
    help="Order of the runs: start time, or kernel release.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write an HTML page with the plot.",
)
@format_option
@click.pass_context
def trend(
    ctx: click.Context,
    labels: tuple[str, ...],
    spec_text: str,
    order: str,
    output: Path | None,
    fmt: str,
) -> None:
    """The p99 and max of one series over the stored runs that share labels."""
    from rtbench.analysis.trend import TrendError, parse_spec, points
    from rtbench.io.atomic import OutputError, write_text
    from rtbench.reports.tables import print_table
    from rtbench.reports.trend import trend_html, trend_table
    from rtbench.store import StoreError

    try:
        spec = parse_spec(spec_text)
    except TrendError as e:
        fail(str(e))
    filters = label_filters(labels)
    with open_store(ctx) as store:
        try:
            runs = [store.load(r.id) for r in store.list_runs(filters, newest=None)]
        except StoreError as e:
            fail(str(e))
    pts = points(runs, spec, "kernel" if order == "kernel" else "date")
    if not pts:
        fail(
            f"no stored run{' with ' + ' '.join(labels) if labels else ''} has {spec}"
            f" ({len(runs)} run{'s' if len(runs) != 1 else ''} looked at)"
        )
    table = trend_table(pts)
    if fmt != "table":
        print_data(fmt, {"series": str(spec), "order": order, "points": table.rows}, table)
    else:
        table.title = f"{spec} over {len(pts)} runs, by {order}"
        print_table(table, out)
    if output is not None:
        try:
            write_text(
                output,
                trend_html(
                    pts,
                    spec,
                    "kernel" if order == "kernel" else "date",
                    " ".join(labels),
                    len({p.run_id for p in pts}),
                ),
            )
        except OutputError as e:
            fail(str(e))
        say(f"trend written to {output}")


def register(group: click.Group) -> None:
    group.add_command(trend)
