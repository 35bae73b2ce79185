"""The `rtbench` command line.

Exit codes follow the three outcomes: 0 passed, 1 failed (a check or a
case failed), 2 error (bad input, a broken stream, a case that could not
measure). Ctrl-C stores what was measured and exits 130.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from rtbench import __version__, catalogue, doctor, probe
from rtbench.ab import load_args
from rtbench.build import BuildError, ensure_agent
from rtbench.commands import ab as ab_commands
from rtbench.commands import analysis as analysis_commands
from rtbench.commands import report as report_commands
from rtbench.commands.common import (
    EXIT,
    err,
    fail,
    open_store,
    out,
    parse_labels,
    selection_options,
)
from rtbench.model import Run
from rtbench.reports.terminal import render_run
from rtbench.session import Interrupted, collect
from rtbench.session import Progress as RunProgress
from rtbench.store import StoreError, default_store_path
from rtbench.stream import Record, StreamError
from rtbench.suites import SelectionError, select
from rtbench.transports import LocalTransport, ReplayTransport, TransportError


@click.group()
@click.version_option(__version__, prog_name="rtbench")
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=f"Run store (default: $RTBENCH_DB or {default_store_path()}).",
)
@click.pass_context
def main(ctx: click.Context, db: Path | None) -> None:
    """Measure and compare the real-time performance of operating systems."""
    ctx.ensure_object(dict)
    ctx.obj["db"] = db


@main.command()
@click.option(
    "--flavor",
    type=click.Choice(["release", "test"]),
    default="release",
    help="test: fault-injection hooks and sanitizers.",
)
def build(flavor: str) -> None:
    """Build the agent for this machine."""
    try:
        exe = ensure_agent("test" if flavor == "test" else "release")
    except BuildError as e:
        fail(str(e))
    out.print(str(exe), highlight=False)


def _agent(path: Path | None) -> Path:
    if path is not None:
        return path
    try:
        with err.status("building the agent…"):
            return ensure_agent("release")
    except BuildError as e:
        fail(str(e))


def _finish(ctx: click.Context, run: Run, store_it: bool) -> None:
    if store_it:
        with open_store(ctx) as store:
            store.save(run)
    render_run(run, out)
    if run.id is not None:
        out.print(
            f"stored as run {run.id} in {ctx.obj['db'] or default_store_path()}",
            style="dim",
            highlight=False,
        )


@main.command()
@selection_options
@click.option("--no-samples", is_flag=True, help="Keep histograms only, no raw samples.")
@click.option(
    "--max-samples",
    type=click.IntRange(1, 100_000_000),
    default=1_000_000,
    show_default=True,
    help="Samples buffered per series on the target.",
)
@click.option(
    "--save-stream",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the raw stream to this file.",
)
@click.option("--no-store", is_flag=True, help="Do not store the run.")
@click.option(
    "--trace",
    "trace_kernel",
    is_flag=True,
    help="Linux, root: record kernel events (tracefs) and add the in-kernel split "
    "(irq, tick, wake-up) to each case.",
)
@click.option(
    "--load",
    metavar="SPEC",
    default=None,
    help="Background load during every case: none, cpu, memory, kernel, io, irq, mixed, "
    "stress[:ARGS], or a list like cpu:prio=90,io (docs/loads.md). Labels the run load=SPEC.",
)
@click.option("--load-cpus", metavar="LIST", default=None, help="CPUs of the load (default: all).")
@click.option(
    "--load-threads",
    type=click.IntRange(1, 64),
    default=None,
    help="Threads per load kind (default: one per load CPU).",
)
@click.option("--no-pin", is_flag=True, help="Do not pin case threads to the measurement CPU.")
@click.pass_context
def run(
    ctx: click.Context,
    suite: str,
    cases: tuple[str, ...],
    overrides: tuple[str, ...],
    labels: tuple[str, ...],
    cpu: int | None,
    priority: int,
    no_samples: bool,
    max_samples: int,
    agent_path: Path | None,
    save_stream: Path | None,
    no_store: bool,
    trace_kernel: bool,
    load: str | None,
    load_cpus: str | None,
    load_threads: int | None,
    no_pin: bool,
) -> None:
    """Run a suite (or chosen cases) on this machine, store and show it."""
    # Imported here: only `run --trace` needs the kernel-trace package.
    from rtbench import trace as kernel_trace

    label_map = parse_labels(labels)
    exe = _agent(agent_path)
    try:
        known = catalogue.agent_cases(exe)
        plan = select(
            suite, list(cases), list(overrides), {c.id: c.param_names for c in known.values()}
        )
    except SelectionError as e:
        fail(str(e))
    args = [f"--priority={priority}", f"--max-samples={max_samples}"]
    if cpu is not None:
        args.append(f"--cpu={cpu}")
    if no_samples:
        args.append("--no-samples")
    args += load_args(load, load_cpus, load_threads, no_pin)
    if load is not None:
        label_map.setdefault("load", load)
    args += [p.agent_arg() for p in plan]

    machine = probe.probe_machine()
    transport = LocalTransport(exe)
    saved = save_stream.open("wb") if save_stream else None
    interrupted = False
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task("starting the agent", total=None)

        def on_record(rec: Record, p: RunProgress) -> None:
            bar.update(
                task,
                description=f"{p.case or 'starting'} · case {p.cases_done + 1}"
                f"/{len(plan)} · {p.records} records",
            )

        rec: kernel_trace.Recorder | None = None
        try:
            # tracefs is restored when this block ends, however it ends.
            with kernel_trace.recording(trace_kernel, cpu) as rec:
                run_args = [*kernel_trace.agent_args(rec), *args]
                result = collect(transport, run_args, on_record, raw_sink=saved)
        except Interrupted as e:
            result, interrupted = e.run, True
        except (TransportError, StreamError) as e:
            fail(str(e))
        finally:
            if saved:
                saved.close()
    result.machine = machine
    result.labels = label_map
    result.source = "run"
    if rec is not None:
        with err.status("decoding the kernel trace…"):
            kernel_trace.finish(result, rec)
    _finish(ctx, result, store_it=not no_store)
    if interrupted:
        err.print("interrupted: what was measured is stored", style="yellow")
        sys.exit(130)
    sys.exit(EXIT[result.outcome])


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Tag the run.")
@click.option(
    "--target", default="ingest", show_default=True, help="Name of the target it came from."
)
@click.pass_context
def ingest(ctx: click.Context, file: Path, labels: tuple[str, ...], target: str) -> None:
    """Store a saved stream (for example a board's captured serial console)."""
    label_map = parse_labels(labels)
    try:
        result = collect(ReplayTransport(file), [])
    except StreamError as e:
        fail(f"{file}: {e}")
    result.target = target
    result.labels = label_map
    result.source = f"ingest {file.name}"
    if not result.hello and not result.cases:
        fail(f"{file}: no rtbench records in this file ({len(result.log)} lines of other text)")
    _finish(ctx, result, store_it=True)
    sys.exit(EXIT[result.outcome])


@main.command(name="list")
@click.option(
    "--agent",
    "agent_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
)
def list_cases(agent_path: Path | None) -> None:
    """The catalogue, with each case's status on each port."""
    exe = _agent(agent_path)
    posix = catalogue.agent_cases(exe)
    t = Table(header_style="bold")
    t.add_column("ID")
    t.add_column("family")
    t.add_column("what")
    t.add_column("posix")
    style = {"implemented": "green", "unsupported": "yellow", "planned": "dim"}
    for cid, title in catalogue.CATALOGUE.items():
        st, note = catalogue.status(cid, posix)
        fam = catalogue.FAMILIES.get(cid.split("-")[0], "")
        t.add_row(cid, fam, title, f"[{style[st]}]{st}[/]" + (f" ({note})" if note else ""))
    out.print(t)


@main.command()
@click.option("--label", "labels", multiple=True, metavar="KEY[=VALUE]", help="Filter by label.")
@click.pass_context
def runs(ctx: click.Context, labels: tuple[str, ...]) -> None:
    """The stored runs, newest first."""
    filters: dict[str, str | None] = {}
    for pair in labels:
        key, sep, value = pair.partition("=")
        filters[key] = value if sep else None
    with open_store(ctx) as store:
        rows = list(reversed(store.list_runs(filters or None)))
    if not rows:
        out.print("no runs stored yet: try `rtbench run`")
        return
    t = Table(header_style="bold")
    for col in ("id", "started", "target", "kernel", "cases", "result", "realtime", "labels"):
        t.add_column(col)
    for r in rows:
        t.add_row(
            str(r.id),
            r.started_at,
            r.target,
            r.kernel,
            str(r.cases),
            r.outcome,
            "yes" if r.realtime else "[red]no[/red]",
            ", ".join(f"{k}={v}" for k, v in r.labels.items()),
        )
    out.print(t)


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("ref", default="latest")
@click.pass_context
def show(ctx: click.Context, ref: str) -> None:
    """Show a stored run (an id, 'latest', or -N for the N-th newest)."""
    with open_store(ctx) as store:
        try:
            result = store.load(store.resolve(ref))
        except StoreError as e:
            fail(str(e))
    render_run(result, out)


@main.command(name="doctor")
def doctor_cmd() -> None:
    """Check what on this machine affects results, and how to fix it."""
    findings = doctor.run_doctor(probe.probe_machine(), probe.probe_privileges())
    doctor.render_findings(findings, out)
    sys.exit(doctor.doctor_exit_code(findings))


analysis_commands.register(main)
report_commands.register(main)
ab_commands.register(main)

if __name__ == "__main__":
    main()
