"""`rtbench campaign FILE.toml`: the same cases on several targets and loads,
repeated and interleaved, resumable, ending with one comparison report.

Every cell goes through the one measuring path (`rtbench.run.measure`), like
`run` and `ab`: journaled as it arrives, stored with the cell's labels.
Running the same file again runs only the cells not stored yet (or stored
as an error); `rtbench campaign status FILE` (or `--status`) says which
cells are done, running, failed or still to run. The cells of a lab's
places run at once, one lane per place (`rtbench.experiments.campaign_run`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
from rich.table import Table
from rich.text import Text

from rtbench.analysis.health import set_apart
from rtbench.analysis.pooling import failed_runs, pool
from rtbench.commands.common import (
    check_output,
    err,
    fail,
    open_store,
    out,
    parse_labels,
    say,
    store_path,
)
from rtbench.commands.targets import target_cases
from rtbench.experiments.campaign import (
    LABEL_CAMPAIGN,
    LABEL_CELL,
    Campaign,
    CampaignError,
    Cell,
    group_runs,
    load_campaign,
    pending,
)
from rtbench.experiments.campaign_run import CellRunner, lane_cells
from rtbench.io.atomic import OutputError, write_text
from rtbench.model import Run, worst_outcome
from rtbench.model import Warning as RunWarning
from rtbench.outcomes import exit_code
from rtbench.run import journal
from rtbench.run.measure import StopSignals
from rtbench.run.suites import Planned, SelectionError, select
from rtbench.targets import Target

if TYPE_CHECKING:
    from rtbench.analysis.trend import SeriesSpec


def _stored(ctx: click.Context, name: str) -> tuple[dict[str, str], list[int]]:
    """The newest outcome of each stored cell, and the ids of its runs."""
    with open_store(ctx) as store:
        rows = store.list_runs({LABEL_CAMPAIGN: name})
    outcome: dict[str, str] = {}
    for r in rows:  # oldest first: the newest run of a cell wins
        key = r.labels.get(LABEL_CELL)
        if key is not None:
            outcome[key] = r.outcome
    return outcome, [r.id for r in rows]


def _running(ctx: click.Context, name: str) -> set[str]:
    """The cells of `name` an rtbench on this host is measuring now: their
    journals are held (locked) by a live process. A run on another host is
    seen once it is stored."""
    location = store_path(ctx)
    busy: set[str] = set()
    for path in journal.candidates(location):
        try:
            header = journal.read_header(path)
        except OSError:
            continue
        labels = header.get("labels")
        if header.get("store", location.key) != location.key or not isinstance(labels, dict):
            continue
        if labels.get(LABEL_CAMPAIGN) != name or not labels.get(LABEL_CELL):
            continue
        with journal.claimed(path) as free:
            if not free and path.exists():
                busy.add(str(labels[LABEL_CELL]))
    return busy


# A cell's state: its newest stored run's outcome, unless it is running now.
_STATE = {
    "passed": "[green]done[/green]",
    "failed": "[yellow]done: failed[/yellow]",
    "error": "[red]error[/red]",
    "running": "[cyan]running[/cyan]",
}


def _status_table(c: Campaign, stored: dict[str, str], running: set[str] | None = None) -> Table:
    running = running or set()
    t = Table(header_style="bold", title=f"campaign {c.name}")
    for col in ("cell", "target", "spec", "load", "repetition", "state"):
        t.add_column(col)
    for cell in c.cells():
        got = "running" if cell.key in running else stored.get(cell.key)
        shown = Text.from_markup(_STATE.get(got or "", "[dim]to run[/dim]"))
        t.add_row(
            cell.key, cell.target.name, cell.target.spec, cell.load, str(cell.repetition), shown
        )
    return t


def _status(ctx: click.Context, c: Campaign) -> None:
    stored, _ = _stored(ctx, c.name)
    running = _running(ctx, c.name)
    out.print(_status_table(c, stored, running))
    cells = c.cells()
    left = len(pending(c, stored))
    failed = sum(1 for cell in cells if stored.get(cell.key) == "failed")
    errors = sum(1 for cell in cells if stored.get(cell.key) == "error")
    out.print(
        f"{len(cells) - left} of {len(cells)} cells stored ({failed} failed a check); "
        f"{len(running & {cell.key for cell in cells})} running, {errors} ended in an error",
        highlight=False,
    )


def _pooled(c: Campaign, runs: list[Run]) -> list[Run]:
    """One run per report column (target and load): its repetitions pooled."""
    columns: list[Run] = []
    for group, found in group_runs(c, runs).items():
        if not found:
            continue
        # Repetitions checked before pooling: an odd one is set apart.
        (members,), apart = set_apart([found])
        first = members[0]
        merged = pool(members)
        merged.id = None
        merged.machine = first.machine
        merged.target = first.target
        merged.started_at = first.started_at
        merged.source = f"campaign {c.name}"
        target, _, load = group.partition(" · load=")
        merged.labels = {
            "target": target,
            "load": load,
            "runs": ",".join(str(r.id) for r in members),
        }
        # The column's outcome is its worst run's (the pool's cases carry
        # every run's checks); the failed runs are named.
        if bad := failed_runs(members):
            merged.labels["failed_runs"] = bad
        merged.warnings += [RunWarning("set_apart", line) for line in apart]
        for line in apart:
            say(f"{group}: {line}")
        columns.append(merged)
    return columns


def _report(ctx: click.Context, c: Campaign, html: Path, md: Path) -> list[Run]:
    with open_store(ctx) as store:
        ids = [r.id for r in store.list_runs({LABEL_CAMPAIGN: c.name})]
        runs = [store.load(i) for i in ids]
    pooled = _pooled(c, runs)
    # one per pooled column, as _pooled set them apart
    groups = set_apart([m for m in group_runs(c, runs).values() if m])[0]
    # A column whose runs were all cut short before a series (an interrupted
    # cell) has nothing to set beside the others; it is run again on resume.
    kept = [i for i, col in enumerate(pooled) if any(case.series for case in col.cases)]
    columns = [pooled[i] for i in kept]
    members = [groups[i] for i in kept]
    if len(columns) < len(pooled):
        say(f"{len(pooled) - len(columns)} columns have no series yet: left out of the report")
    if len(columns) < 1:
        return columns
    from rtbench.analysis.compare import NothingInCommon
    from rtbench.reports.html import html_report
    from rtbench.reports.markdown import render_markdown

    try:
        # The test is over each column's repetitions, not its pooled samples.
        write_text(html, html_report(columns, "max", members))
        write_text(md, render_markdown(columns, "max", members))
    except OutputError as e:
        fail(str(e))
    except NothingInCommon as e:
        say(f"no comparison report: {e}")
        return []
    return columns


@click.command()
@click.argument("words", nargs=-1, required=True, metavar="[status] FILE")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The comparison report (HTML; a Markdown copy beside it). "
    "Default: NAME-report.html beside the campaign file (never the current directory).",
)
@click.option(
    "--status", is_flag=True, help="Only say which cells are done, running, failed or to run."
)
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Tag every run.")
@click.option(
    "--trend",
    "trend_spec",
    metavar="CASE/SERIES[POINT]",
    default=None,
    help="Add the trend of this series over the campaign's runs (rtbench trend, by date): "
    "NAME-trend.html beside the report, its table in the terminal and the Markdown copy.",
)
# A place's lane: the process a campaign starts per labgrid place (campaign_run.py).
@click.option("--lane", metavar="TARGET", default=None, hidden=True)
@click.pass_context
def campaign(
    ctx: click.Context,
    words: tuple[str, ...],
    output: Path | None,
    status: bool,
    labels: tuple[str, ...],
    trend_spec: str | None,
    lane: str | None,
) -> None:
    """Run a campaign file: targets x loads x repetitions of the same cases,
    interleaved (a lab's places at once); resumable (stored cells are not run
    again); ends with one comparison report across the targets
    (examples/rt-vs-generic.toml, docs/lab.md). `rtbench campaign status
    FILE` says which cells are done, running, failed or to run."""
    if len(words) == 2 and words[0] == "status":
        status, words = True, words[1:]
    if len(words) != 1:
        fail("usage: rtbench campaign FILE, or rtbench campaign status FILE")
    file = Path(words[0])
    try:
        c = load_campaign(file)
    except CampaignError as e:
        fail(str(e))
    user_labels = parse_labels(labels)
    spec: SeriesSpec | None = None
    if trend_spec is not None:
        # Imported here: the trend's analysis is not needed to start a campaign.
        from rtbench.analysis.trend import TrendError, parse_spec

        try:
            spec = parse_spec(trend_spec)
        except TrendError as e:
            fail(str(e))
    if status:
        _status(ctx, c)
        sys.exit(0)
    stored, _ = _stored(ctx, c.name)
    # Beside the campaign file: a campaign run from a checkout must not
    # write its report into the checkout's root.
    html = output or file.parent / f"{c.name}-report.html"
    md = html.with_suffix(".md")
    for path in (html, md):
        check_output(path)
    from rtbench.targets import TargetError, resolve

    targets: dict[str, Target] = {}
    try:
        for t in c.targets:
            targets[t.name] = resolve(t.spec, dict(t.options), label=t.name)
        # Each target's cases from its own agent's table (a board's RTOS port's).
        plans: dict[str, list[Planned]] = {}
        for name, target in targets.items():
            known = target_cases(target, None)
            names = {k.id: k.param_names for k in known.values()}
            plans[name] = select(c.suite, c.cases, c.overrides, names)
    except (TargetError, SelectionError) as e:
        fail(str(e))
    todo = pending(c, stored)
    total = len(c.cells())
    if lane is not None:
        _lane(ctx, c, targets, plans, user_labels, lane_cells(todo, lane))
    if todo and len(todo) < total:
        say(f"resuming: {total - len(todo)} of {total} cells are stored already")
    done = 0

    def show(line: str) -> None:
        nonlocal done
        if "…" in line:
            done += 1
            line = f"[{done}/{len(todo)}] {line}"
        else:
            line = f"    {line}"
        err.print(line, highlight=False)

    def lane_argv(target: str) -> list[str]:
        db = ["--db", str(ctx.obj["db"])] if ctx.obj.get("db") else []
        tags = [f"--label={label}" for label in labels]
        return [sys.executable, "-m", "rtbench.cli", *db, "campaign", str(file),
                "--lane", target, *tags]  # fmt: skip

    runner = CellRunner(c, targets, plans, user_labels, store_path(ctx), say, show, lane_argv)
    with StopSignals(say) as stop:
        runner.run(todo, stop)
        outcomes = runner.outcomes
        code = _finish(ctx, c, html, md, stop, outcomes, spec)
        stop.exiting()
    sys.exit(code)


def _lane(
    ctx: click.Context,
    c: Campaign,
    targets: dict[str, Target],
    plans: dict[str, list[Planned]],
    labels: dict[str, str],
    cells: list[Cell],
) -> NoReturn:
    """One place's cells, in order (a lane of a campaign): no report, the
    campaign that started the lane writes it."""

    def show(line: str) -> None:
        err.print(f"    {line}", highlight=False)

    runner = CellRunner(c, targets, plans, labels, store_path(ctx), say, show)
    with StopSignals(say) as stop:
        runner.run(cells, stop)
        code = stop.exit_code or exit_code(worst_outcome(runner.outcomes or ["passed"]))
        stop.exiting()
    sys.exit(code)


def _finish(
    ctx: click.Context,
    c: Campaign,
    html: Path,
    md: Path,
    stop: StopSignals,
    outcomes: list[str],
    spec: SeriesSpec | None = None,
) -> int:
    stored, _ = _stored(ctx, c.name)
    left = pending(c, stored)
    columns = _report(ctx, c, html, md)
    out.print(_status_table(c, stored))
    if columns:
        out.print(
            f"comparison of {len(columns)} columns (target x load): {html} and {md}",
            highlight=False,
        )
    if spec is not None:
        _trend(ctx, c, spec, html, md if columns else None)
    if stop.exit_code is not None:
        say(f"{stop.why()}: {len(left)} cells remain; run the same command again to resume")
        return stop.exit_code
    if left:
        say(f"{len(left)} cells could not be measured; run the same command again to retry them")
        return 2
    every: list[Any] = [stored.get(cell.key, "error") for cell in c.cells()]
    return exit_code(worst_outcome([*every, *outcomes]))


def _trend(ctx: click.Context, c: Campaign, spec: SeriesSpec, html: Path, md: Path | None) -> None:
    """`rtbench trend` over the campaign's stored runs (by date): a page
    beside the report, the table here and under the Markdown report."""
    from rtbench.analysis.trend import points
    from rtbench.reports.markdown import md_escape
    from rtbench.reports.tables import print_table
    from rtbench.reports.trend import trend_html, trend_table

    with open_store(ctx) as store:
        runs = [store.load(r.id) for r in store.list_runs({LABEL_CAMPAIGN: c.name}, newest=None)]
    pts = points(runs, spec, "date")
    if not pts:
        say(f"no trend: none of the campaign's {len(runs)} runs has {spec}")
        return
    table = trend_table(pts)
    table.title = f"{spec} over the campaign's {len({p.run_id for p in pts})} runs, by date"
    print_table(table, out)
    page = html.parent / f"{c.name}-trend.html"
    try:
        write_text(page, trend_html(pts, spec, "date", f"campaign={c.name}", len(runs)))
        if md is not None:
            text = md.read_text(encoding="utf-8")
            rows = [
                "| " + " | ".join(col.header for col in table.columns) + " |",
                "|" + "|".join("---:" if col.numeric else "---" for col in table.columns) + "|",
            ]
            rows += [
                "| " + " | ".join(md_escape(col.cell(r).plain) for col in table.columns) + " |"
                for r in table.rows
            ]
            body = "\n".join(rows)
            write_text(md, f"{text.rstrip()}\n\n## Trend: {table.title}\n\n{body}\n")
    except OutputError as e:
        fail(str(e))
    out.print(f"trend of {spec}: {page}", highlight=False)


def register(main: click.Group) -> None:
    """Adds this module's commands to the `rtbench` group."""
    main.add_command(campaign)
