"""`rtbench campaign FILE.toml`: the same cases on several targets and loads,
repeated and interleaved, resumable, ending with one comparison report.

Every cell goes through the one measuring path (`rtbench.measure`), like
`run` and `ab`: journaled as it arrives, stored with the cell's labels.
Running the same file again runs only the cells not stored yet (or stored
as an error); `--status` says which those are.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from rtbench import catalogue
from rtbench.ab import load_args, pool
from rtbench.campaign import (
    LABEL_CAMPAIGN,
    LABEL_CELL,
    Campaign,
    CampaignError,
    Cell,
    group_runs,
    load_campaign,
    pending,
)
from rtbench.commands.common import (
    EXIT,
    check_output,
    err,
    fail,
    open_store,
    out,
    parse_labels,
    say,
    store_path,
)
from rtbench.io.atomic import OutputError, write_text
from rtbench.measure import StopSignals, measure, plan_for, store_run
from rtbench.model import Run, worst_outcome
from rtbench.stream import StreamError
from rtbench.suites import SelectionError, select
from rtbench.transports import TransportError


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


def _agent_args(c: Campaign, cell: Cell, plan_args: list[str]) -> list[str]:
    args = load_args(None if cell.load == "none" else cell.load, None, None, False)
    if c.no_samples:
        args.append("--no-samples")
    return [*args, *plan_args]


def _status_table(c: Campaign, stored: dict[str, str]) -> Table:
    t = Table(header_style="bold", title=f"campaign {c.name}")
    for col in ("cell", "target", "spec", "load", "repetition", "stored"):
        t.add_column(col)
    style = {"passed": "green", "failed": "yellow", "error": "red"}
    for cell in c.cells():
        got = stored.get(cell.key)
        shown = f"[{style.get(got, 'white')}]{got}[/]" if got else "[dim]to run[/dim]"
        t.add_row(
            cell.key, cell.target.name, cell.target.spec, cell.load, str(cell.repetition), shown
        )
    return t


def _pooled(c: Campaign, runs: list[Run]) -> list[Run]:
    """One run per report column (target and load): its repetitions pooled."""
    columns: list[Run] = []
    for group, members in group_runs(c, runs).items():
        if not members:
            continue
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
        # A column is as complete and as real-time as the runs it pools.
        merged.hello = {**first.hello, "realtime": {"ok": all(r.realtime for r in members)}}
        columns.append(merged)
    return columns


def _report(ctx: click.Context, c: Campaign, html: Path, md: Path) -> list[Run]:
    with open_store(ctx) as store:
        ids = [r.id for r in store.list_runs({LABEL_CAMPAIGN: c.name})]
        runs = [store.load(i) for i in ids]
    columns = _pooled(c, runs)
    if len(columns) < 1:
        return columns
    from rtbench.reports.html import html_report
    from rtbench.reports.markdown import render_markdown

    try:
        write_text(html, html_report(columns, "max"))
        write_text(md, render_markdown(columns, "max"))
    except OutputError as e:
        fail(str(e))
    return columns


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The comparison report (HTML; a Markdown copy beside it). "
    "Default: NAME-report.html in this directory.",
)
@click.option("--status", is_flag=True, help="Only say which cells are stored and which remain.")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Tag every run.")
@click.pass_context
def campaign(
    ctx: click.Context, file: Path, output: Path | None, status: bool, labels: tuple[str, ...]
) -> None:
    """Run a campaign file: targets x loads x repetitions of the same cases,
    interleaved; resumable (stored cells are not run again); ends with one
    comparison report across the targets (examples/rt-vs-generic.toml)."""
    try:
        c = load_campaign(file)
    except CampaignError as e:
        fail(str(e))
    user_labels = parse_labels(labels)
    stored, _ = _stored(ctx, c.name)
    if status:
        out.print(_status_table(c, stored))
        left = len(pending(c, stored))
        out.print(f"{len(c.cells()) - left} of {len(c.cells())} cells stored", highlight=False)
        sys.exit(0)
    html = output or Path(f"{c.name}-report.html")
    md = html.with_suffix(".md")
    for path in (html, md):
        check_output(path)
    from rtbench.targets import Target, TargetError, resolve

    targets: dict[str, Target] = {}
    try:
        for t in c.targets:
            targets[t.name] = resolve(t.spec, dict(t.options), label=t.name)
        known = catalogue.posix_cases()
        plan = select(
            c.suite, c.cases, c.overrides, {k.id: k.param_names for k in known.values()}
        )
    except (TargetError, SelectionError) as e:
        fail(str(e))
    plan_args = [p.agent_arg() for p in plan]
    todo = pending(c, stored)
    total = len(c.cells())
    if todo and len(todo) < total:
        say(f"resuming: {total - len(todo)} of {total} cells are stored already")
    outcomes: list[str] = []
    with StopSignals(say) as stop:
        for n, cell in enumerate(todo, 1):
            target = targets[cell.target.name]
            err.print(
                f"[{n}/{len(todo)}] {cell.key}: {cell.target.spec}, load {cell.load} …",
                highlight=False,
            )
            try:
                # First: a target knows some of its metadata (e.g. the
                # accelerator QEMU will use) only once its transport exists.
                transport = target.transport()
            except (TransportError, OSError) as e:
                say(f"{cell.key}: cannot reach {cell.target.spec}: {e}")
                outcomes.append("error")
                continue
            how = plan_for(
                target,
                _agent_args(c, cell, plan_args),
                labels={**user_labels, **cell.labels(c.name)},
                source="campaign",
                store_path=store_path(ctx),
            )
            try:
                measured = measure(transport, how, stop, None, say)
            except (TransportError, StreamError, OSError) as e:
                say(f"{cell.key}: could not measure: {e}")
                outcomes.append("error")
                if stop.received is not None:
                    break
                continue
            saved = store_run(measured, say)
            if saved.error is not None:
                say(
                    f"{cell.key}: could not be stored ({saved.error}); stream kept in "
                    f"{saved.kept}: `rtbench ingest {saved.kept}` stores it"
                )
                outcomes.append("error")
            else:
                outcomes.append(measured.run.outcome)
                run = measured.run
                err.print(
                    f"    run {saved.run_id}: {run.outcome}, {len(run.cases)} cases",
                    highlight=False,
                )
            if stop.received is not None:
                break
        code = _finish(ctx, c, html, md, stop, outcomes)
        stop.exiting()
    sys.exit(code)


def _finish(
    ctx: click.Context,
    c: Campaign,
    html: Path,
    md: Path,
    stop: StopSignals,
    outcomes: list[str],
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
    if stop.exit_code is not None:
        say(f"{stop.why()}: {len(left)} cells remain; run the same command again to resume")
        return stop.exit_code
    if left:
        say(f"{len(left)} cells could not be measured; run the same command again to retry them")
        return 2
    every: list[Any] = [stored.get(cell.key, "error") for cell in c.cells()]
    return EXIT.get(worst_outcome([*every, *outcomes]), 2)


def register(main: click.Group) -> None:
    """Adds this module's commands to the `rtbench` group."""
    main.add_command(campaign)
