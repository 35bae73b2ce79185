"""Commands that measure or take in a stream: run, ingest, recover.

All of them go through `rtbench.run.measure`, which journals the stream as it
arrives; `finish` stores, shows, and says what happened to the run.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import click

from rtbench.commands.common import (
    busy,
    check_output,
    check_store_writable,
    err,
    fail,
    open_store,
    out,
    parse_labels,
    say,
    selection_options,
    store_path,
)
from rtbench.commands.targets import (
    open_transport,
    resolve_or_fail,
    target_cases,
    target_option,
)
from rtbench.machine.build import BuildError, ensure_agent
from rtbench.outcomes import exit_code
from rtbench.reports.progress import RunProgress
from rtbench.reports.terminal import render_run
from rtbench.run import soak
from rtbench.run.measure import Measured, StopSignals, plan_for, read_stream
from rtbench.run.measure_store import Taken, measure_and_store, store_measured
from rtbench.run.request import AgentRequest
from rtbench.run.session import Interrupted, StreamProgress
from rtbench.run.suites import SelectionError, select
from rtbench.stream import Record, StreamError


def agent_exe(path: Path | None) -> Path:
    if path is not None:
        return path
    try:
        return ensure_agent("release", announce=busy)
    except BuildError as e:
        fail(str(e))


def finish(taken: Taken, stop: StopSignals | None, again: str | None = None) -> int:
    """Shows a run measured (or read) and stored by `measure_and_store`,
    says what became of it; returns the exit code. `again` is how to retry
    when the run's source is a file."""
    measured, saved = taken.measured, taken.saved
    assert measured is not None  # a run that could not be measured fails before
    run = measured.run
    render_run(run, out)
    if saved is not None and saved.already:
        say(
            f"this run ({run.uuid}) is already stored as run {saved.run_id} in "
            f"{measured.store_path}; nothing stored (--force-copy stores a copy)"
        )
    elif saved is not None and saved.run_id is not None:
        out.print(
            f"stored as run {saved.run_id} in {measured.store_path}", style="dim", highlight=False
        )
    if measured.stream_error:
        say(f"--save-stream: {measured.stream_error}")
    if saved is not None and saved.error is not None:
        if again:
            kept = f"it is unchanged: store it later with `{again}`"
        elif saved.kept is not None:
            kept = (
                f"its stream is kept in {saved.kept}: store it later with "
                f"`rtbench ingest {saved.kept}`"
            )
        else:
            kept = "no journal of it could be kept (see above)"
        say(f"the run could not be stored ({saved.error}); {kept}")
        return taken.code
    if stop is not None and stop.exit_code is not None:
        stored = "what was measured is stored" if saved else "nothing is stored (--no-store)"
        err.print(f"{stop.why()}: {stored}", style="yellow", highlight=False)
        return stop.exit_code
    return taken.code


@click.command()
@selection_options
@click.option("--no-samples", is_flag=True, help="Keep histograms only, no raw samples.")
@click.option(
    "--max-samples",
    type=click.IntRange(1, 100_000_000),
    default=None,
    help="Samples buffered per series on the target (default: its agent's, "
    "`rtbench-agent --help`; a board's at most its RAM's).",
)
@click.option(
    "--save-stream",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the raw stream to this file (with --repeat: FILE-1, FILE-2...).",
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
@click.option(
    "--cstates",
    type=click.Choice(["hold", "leave"]),
    default=None,
    help="Linux: hold C-states off while the agent runs (/dev/cpu_dma_latency = 0, as "
    "cyclictest does), or leave them to measure with the machine's idle states. "
    "Default: the agent's (hold).",
)
@click.option(
    "--cpus",
    metavar="all|LIST",
    default=None,
    help="Per-CPU cases (JIT-PER): measure on each of these CPUs at once, one series per CPU.",
)
@click.option(
    "--duration",
    metavar="TIME",
    default=None,
    help="Per-CPU cases: run this long (10s, 60m, 2h) in bounded memory on the target.",
)
@click.option(
    "--break",
    "break_us",
    type=float,
    metavar="US",
    default=None,
    help="Per-CPU cases: stop at the first latency over US µs; with --trace, keep and "
    "explain the kernel trace before it.",
)
@click.option(
    "--allow-misses",
    type=click.IntRange(0, None),
    default=None,
    metavar="N",
    help="Deadline misses tolerated per case warning before timing fails (default 0); "
    "recorded as the label allow_misses=N (docs/outcomes.md).",
)
@click.option(
    "--repeat",
    type=click.IntRange(1, 1000),
    default=1,
    show_default=True,
    help="Measure K times, one stored run each, labelled repeat=1..K and one repeat_id: "
    "`compare` tests over these runs (docs/analysis.md).",
)
@click.option(
    "--timerlat/--no-timerlat",
    default=None,
    help="Also record the kernel's own timerlat (timer IRQ and thread latency) for "
    "JIT-PER's CPUs and period, right after the cases: on by default in QEMU guests "
    "whose kernel has it; elsewhere it says why not.",
)
@target_option
@click.option(
    "--exit-zero-if-stored",
    is_flag=True,
    help="Exit 0 once the run completed and is stored, whatever the OS scored (make run).",
)
@click.pass_context
def run(
    ctx: click.Context,
    suite: str,
    cases: tuple[str, ...],
    overrides: tuple[str, ...],
    labels: tuple[str, ...],
    cpu: int | None,
    priority: int | None,
    no_samples: bool,
    max_samples: int | None,
    agent_path: Path | None,
    save_stream: Path | None,
    no_store: bool,
    trace_kernel: bool,
    load: str | None,
    load_cpus: str | None,
    load_threads: int | None,
    no_pin: bool,
    cstates: str | None,
    cpus: str | None,
    duration: str | None,
    break_us: float | None,
    repeat: int,
    allow_misses: int | None,
    timerlat: bool | None,
    target_spec: str | None,
    exit_zero_if_stored: bool,
) -> None:
    """Run a suite (or chosen cases) on this machine or a --target, store and show it.

    The stream is journaled beside the store as it arrives: if this host is
    killed, the next rtbench command stores every finished case. Ctrl-C,
    SIGTERM and SIGHUP stop the agent, store what was measured and exit
    130, 143 and 129.
    """
    label_map = parse_labels(labels)
    if save_stream is not None:
        check_output(save_stream)
    target = resolve_or_fail(target_spec, trace_kernel)
    # Another system runs the same port's agent, built for it by its target.
    exe = agent_exe(agent_path) if target.is_local else agent_path
    try:
        known = target_cases(target, exe)
        plan = select(
            suite, list(cases), list(overrides), {c.id: c.param_names for c in known.values()}
        )
        duration_s = soak.parse_duration(duration) if duration is not None else None
        request = AgentRequest(
            plan,
            priority=priority,
            cpu=cpu,
            samples=not no_samples,
            max_samples=max_samples,
            load=load,
            load_cpus=load_cpus,
            load_threads=load_threads,
            pin=not no_pin,
            cstates=cstates,  # unset: the agent's own default
        )
        soak.apply(
            request, cpus, duration_s, break_us, soak.user_overrides(overrides, known), known
        )
    except (SelectionError, soak.SoakError) as e:
        fail(str(e))
    if load is not None:
        label_map.setdefault("load", load)
    if not no_store:
        check_store_writable(ctx)  # a store that cannot take the run says so before it
    if allow_misses is not None:
        label_map["allow_misses"] = str(allow_misses)  # rtbench.verdict reads it
    if repeat > 1:
        # Repetitions of one configuration: `compare` groups runs by their
        # labels but for `repeat`, so one repeat_id makes them one group.
        label_map.setdefault("repeat_id", uuid.uuid4().hex[:8])
    codes: list[int] = []
    with StopSignals(say) as stop:
        for k in range(1, repeat + 1):
            if repeat > 1:
                label_map["repeat"] = str(k)
                say(f"repetition {k} of {repeat}")
            # Before the plan: the target's metadata includes what its set-up learned.
            transport = open_transport(target, exe)
            _timerlat(transport, timerlat, request)
            if trace_kernel and hasattr(transport, "trace"):  # recorded in the guest
                from rtbench.targets import guest_trace

                transport.trace = guest_trace.request(flight=break_us is not None)
            how = plan_for(
                target,
                request,
                labels=dict(label_map),
                trace=trace_kernel,
                trace_cpu=cpu,
                trace_flight=trace_kernel and break_us is not None,
                save_stream=_numbered(save_stream, k if repeat > 1 else None),
                store_path=None if no_store else store_path(ctx),
            )
            defaults = {cid: c.params for cid, c in known.items()}
            with RunProgress(plan, defaults, err, duration_s, target.name) as progress:

                def on_record(rec: Record, p: StreamProgress) -> None:
                    progress.on_record(rec.kind, rec.body)

                taken = measure_and_store(
                    transport, how, stop, on_record, say, store=not no_store
                )
            if taken.measured is None:
                fail(str(taken.unmeasured))
            code = finish(taken, stop)
            # docs/outcomes.md: for a person trying rtbench a finished, stored run is
            # a success even when the OS failed a check; the result above says so.
            run = taken.measured.run
            done = run.complete and run.id is not None
            if exit_zero_if_stored and done and code == exit_code(run.outcome):
                code = 0
            codes.append(code)
            if stop.exit_code is not None:
                break
        stop.exiting()
        # The worst: an interruption, then an error, then a failed check.
        sys.exit(stop.exit_code if stop.exit_code is not None else max(codes))


def _numbered(path: Path | None, k: int | None) -> Path | None:
    """--save-stream of repetition k: NAME-k.EXT, so none overwrites another."""
    if path is None or k is None:
        return path
    return path.with_name(f"{path.stem}-{k}{path.suffix}")


def _timerlat(transport: object, wanted: bool | None, request: AgentRequest) -> None:
    """Turns the guest's timerlat on or off, or says why --timerlat cannot be."""
    if hasattr(transport, "timerlat"):  # a QEMU guest
        transport.timerlat = wanted is not False
        if wanted and "JIT-PER" not in request.case_ids:
            say("--timerlat: it runs beside JIT-PER, which this run does not have")
        return
    if wanted:
        from rtbench.machine.probe import TRACEFS_PATHS

        have: list[str] | None = None
        for root in TRACEFS_PATHS:
            try:
                have = (Path(root) / "available_tracers").read_text().split()
                break
            except OSError:
                continue
        if have is None:
            why = "no tracefs is readable here (mount -t tracefs nodev /sys/kernel/tracing)"
        elif "timerlat" not in have:
            why = f"this kernel has no timerlat tracer (its tracers: {' '.join(have)})"
        else:
            why = "it runs in QEMU guests only so far"
        say(f"--timerlat: {why}; the run goes on without it")


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Tag the run.")
@click.option(
    "--target",
    default=None,
    help="Name of the target it came from (default: the journal's, else 'ingest').",
)
@click.option(
    "--keep-partial",
    is_flag=True,
    help="On Ctrl-C, store what was read so far (an incomplete run); by default nothing is.",
)
@click.option(
    "--force-copy",
    is_flag=True,
    help="Store it even when the store holds this run already, as a copy with a new identity.",
)
@click.pass_context
def ingest(
    ctx: click.Context,
    file: Path,
    labels: tuple[str, ...],
    target: str | None,
    keep_partial: bool,
    force_copy: bool,
) -> None:
    """Store a saved stream: a board's captured serial console, a
    `--save-stream` file, or a run rtbench could not store (its journal).
    A run the store holds already (the same identity) is not stored again."""
    label_map = parse_labels(labels)
    check_store_writable(ctx)
    interrupted = False
    try:
        result = read_stream(file)
    except Interrupted as e:
        # docs/outcomes.md: an interrupted ingest stores nothing partial unless asked.
        if not keep_partial:
            say("interrupted: nothing was stored (--keep-partial stores what was read)")
            sys.exit(130)
        result, interrupted = e.run, True
    except StreamError as e:
        fail(f"{file}: {e}")
    except OSError as e:
        fail(f"{file}: {e.strerror or e}")
    if not result.hello and not result.cases:
        fail(f"{file}: no rtbench records in this file ({len(result.log)} lines of other text)")
    if target is not None or not result.target or result.target == "replay":
        result.target = target or "ingest"
    result.labels = {**result.labels, **label_map}
    measured = Measured(result, store_path=store_path(ctx))
    taken = store_measured(measured, say, copy=force_copy)
    code = finish(taken, None, again=f"rtbench ingest {file}")
    sys.exit(130 if interrupted else code)


@click.command()
@click.pass_context
def recover(ctx: click.Context) -> None:
    """Store the runs of hosts that died while measuring (kill -9, OOM,
    power loss). Every command that opens the store does this by itself."""
    from rtbench.run.recovery import recover as recover_journals

    with open_store(ctx, recover=False) as store:
        found = recover_journals(store, say)
    if not found:
        out.print("no interrupted runs to recover", highlight=False)
    sys.exit(2 if any(r.run_id is None and "cannot" in r.message for r in found) else 0)


def register(main: click.Group) -> None:
    """Adds this module's commands to the `rtbench` group."""
    for command in (run, ingest, recover):
        main.add_command(command)
