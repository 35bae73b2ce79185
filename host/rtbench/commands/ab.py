"""`rtbench ab`: one experiment (JIT-AB) under configurations A and B.

rtbench ab --a load=none --b load=mixed
rtbench ab --a pin=on --b pin=off --rounds 5
rtbench ab --a preempt=none --b preempt=full -c JIT-PER --set JIT-PER.cycles=20000
rtbench ab --b set:JIT-PER.blocker_us=500            # a self-test: B is worse
"""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import click

from rtbench.analysis.compare import ALPHA
from rtbench.analysis.stats import INDICATORS
from rtbench.commands.common import (
    busy,
    check_output,
    check_store_writable,
    err,
    fail,
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
from rtbench.experiments.ab import (
    DEFAULT_INDICATORS,
    ABRow,
    Config,
    ConfigError,
    compare,
    parse_config,
)
from rtbench.io.atomic import OutputError, write_text
from rtbench.machine.build import BuildError, ensure_agent
from rtbench.machine.preempt import PreemptError, PreemptSwitch
from rtbench.model import Run, worst_outcome
from rtbench.outcomes import exit_code
from rtbench.reports.tables import Column, Tabular, print_table
from rtbench.reports.tables import Row as TRow
from rtbench.reports.units import us
from rtbench.run.measure import Plan, StopSignals, check_args, plan_for
from rtbench.run.measure_store import Taken, measure_and_store
from rtbench.run.suites import Planned, SelectionError, select
from rtbench.targets import Target
from rtbench.transports import TransportError


def _one_run(
    target: Target,
    exe: Path | None,
    cfg: Config,
    plan: Plan,
    switch: PreemptSwitch | None,
    stop: StopSignals,
) -> Taken:
    preempt: AbstractContextManager[None] = (
        switch.switched(cfg.preempt) if switch is not None else nullcontext()
    )
    with preempt:  # measure probes inside: it records the mode in effect
        return measure_and_store(open_transport(target, exe), plan, stop, say=say)


def _table(rows: list[ABRow]) -> Tabular:
    """B/A per indicator, printed at the terminal's width: columns are left
    out by priority, never a number cut (rtbench.reports.tables)."""

    def ratio(r: TRow) -> str:
        return "-" if r["ratio"] is None else f"{r['ratio']:.3f}"

    def pvalue(r: TRow) -> str:
        p = r["pvalue"]
        return "-" if p is None else f"{p:.3g}" if p > 0 else "<1e-300"

    def flag(r: TRow) -> str:
        text = "significant" if r["significant"] else ""
        if r["significant"] and r["beyond_noise"] is False:
            text += " (within the rounds' spread)"
        if r["unstable"]:
            text += (" · " if text else "") + "unstable: " + ", ".join(r["unstable"])
        return text

    cols = [
        Column("case", "case", 100, numeric=False),
        Column("series", "series", 100, numeric=False),
        Column("indicator", "indicator", 100, numeric=False),
        Column("a", "A", 99, show=lambda r: us(r["a"])),
        Column("b", "B", 99, show=lambda r: us(r["b"])),
        Column("ratio", "B/A", 99, show=ratio),
        Column("pvalue", "p", 95, show=pvalue),
        Column("flag", "", 60, numeric=False, show=flag),
    ]
    title = (
        f"B/A per indicator (µs); significant: p < {ALPHA}, Welch's t-test over the rounds "
        "(each run one observation; none with one round per side)"
    )
    return Tabular(title, cols, [r.as_dict() for r in rows])


@click.command(name="ab")
@selection_options
@click.option(
    "--a", "a_items", multiple=True, metavar="KEY=VALUE", help="Setting of A (repeatable)."
)
@click.option(
    "--b", "b_items", multiple=True, metavar="KEY=VALUE", help="Setting of B (repeatable)."
)
@click.option(
    "--rounds",
    type=click.IntRange(1, 1000),
    default=3,
    show_default=True,
    help="Runs per side, interleaved A, B, A, B ...",
)
@click.option(
    "--indicator",
    "indicators",
    multiple=True,
    type=click.Choice(INDICATORS),
    help="Indicators to compare (default: p50, p99, max).",
)
@click.option(
    "--json",
    "json_out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the comparison rows as JSON.",
)
@target_option
@click.pass_context
def ab(
    ctx: click.Context,
    a_items: tuple[str, ...],
    b_items: tuple[str, ...],
    cases: tuple[str, ...],
    suite: str,
    overrides: tuple[str, ...],
    rounds: int,
    indicators: tuple[str, ...],
    cpu: int | None,
    priority: int | None,
    labels: tuple[str, ...],
    agent_path: Path | None,
    json_out: Path | None,
    target_spec: str | None,
) -> None:
    """Run a case (default JIT-PER) under configurations A and B, interleaved,
    and report per indicator the ratio B/A with a significance test.

    Settings (KEY=VALUE, repeatable): load=SPEC, load_cpus=LIST,
    load_threads=N, pin=on|off, trace=off|on, preempt=none|voluntary|full|lazy,
    priority=P, cpu=N, and set:CASE.PARAM=VALUE for one side only.
    """
    user_labels = parse_labels(labels)
    try:
        sides = [parse_config("A", a_items), parse_config("B", b_items)]
    except ConfigError as e:
        fail(str(e))
    target = resolve_or_fail(target_spec, any(cfg.trace for cfg in sides))
    if not target.is_local and any(cfg.preempt for cfg in sides):
        fail(f"preempt= switches this machine's kernel: it cannot switch {target.name}'s")
    try:
        exe = agent_path
        if target.is_local and exe is None:
            exe = ensure_agent("release", announce=busy)
        known = target_cases(target, exe)
        names = {c.id: c.param_names for c in known.values()}
        plans: dict[str, list[Planned]] = {
            cfg.name: select(
                suite, list(cases or ("JIT-PER",)), [*overrides, *cfg.overrides], names
            )
            for cfg in sides
        }
    except (BuildError, SelectionError) as e:
        fail(str(e))
    for cfg in sides:  # the agent checks its options (a load spec) before anything runs
        args = cfg.request(plans[cfg.name], cpu, priority).argv()
        try:
            refused = check_args(open_transport(target, exe), args)
        except TransportError as e:
            refused = str(e)
        if refused is not None:
            fail(f"{cfg.name} ({cfg.describe()}): {refused}")
    if json_out is not None:
        check_output(json_out)
    check_store_writable(ctx)  # a store that cannot take runs says so before them
    switch: PreemptSwitch | None = None
    if any(cfg.preempt for cfg in sides):
        switch = PreemptSwitch()
        try:
            switch.open()
            for cfg in sides:
                if cfg.preempt:
                    switch.check(cfg.preempt)
        except PreemptError as e:
            switch.close()
            fail(str(e))
        err.print(
            f"preemption mode now {switch.original}; each run switches and puts it back",
            highlight=False,
        )

    ab_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    done: dict[str, list[Run]] = {"A": [], "B": []}
    unsaved: list[str] = []
    with StopSignals(say) as stop:
        try:
            for rnd in range(1, rounds + 1):
                for cfg in sides:
                    if stop.received is not None or unsaved:
                        break
                    err.print(
                        f"round {rnd}/{rounds} · {cfg.name}: {cfg.describe()} …", highlight=False
                    )
                    plan = plan_for(
                        target,
                        cfg.request(plans[cfg.name], cpu, priority),
                        labels={
                            **user_labels,
                            **cfg.labels(),
                            "ab_id": ab_id,
                            "ab_round": str(rnd),
                        },
                        source="ab",
                        trace=cfg.trace,
                        trace_cpu=cpu,
                        store_path=store_path(ctx),
                    )
                    try:
                        taken = _one_run(target, exe, cfg, plan, switch, stop)
                    except PreemptError as e:
                        fail(str(e))
                    if taken.measured is None:
                        fail(f"{cfg.name} ({cfg.describe()}): {taken.unmeasured}")
                    if taken.saved is not None and taken.saved.error is not None:
                        unsaved.append(f"round {rnd} {cfg.name}: {taken.problem}")
                    done[cfg.name].append(taken.measured.run)
        finally:
            if switch is not None:
                switch.close()
        stop.exiting()  # what follows only shows and writes what is stored
    interrupted = stop.exit_code

    a, b = sides
    ids = {k: ", ".join(str(r.id) for r in v) for k, v in done.items()}
    out.print(
        f"ab_id {ab_id}\nA: {a.describe()} (runs {ids['A'] or '-'})\n"
        f"B: {b.describe()} (runs {ids['B'] or '-'})",
        highlight=False,
    )
    if done["A"] and done["B"]:
        rows = compare(done["A"], done["B"], indicators or DEFAULT_INDICATORS)
        print_table(_table(rows), out)
        if json_out is not None:
            _write_json(
                json_out,
                json.dumps(
                    {
                        "ab_id": ab_id,
                        "a": a.describe(),
                        "b": b.describe(),
                        "runs": {k: [r.id for r in v] for k, v in done.items()},
                        "rows": [r.as_dict() for r in rows],
                    },
                    indent=2,
                ),
            )
    if unsaved:
        for line in unsaved:
            say(f"a run could not be stored: {line}")
        sys.exit(2)
    if interrupted is not None:
        err.print(f"{stop.why()}: the runs so far are stored", style="yellow")
        sys.exit(interrupted)
    outcome = worst_outcome([r.outcome for v in done.values() for r in v])
    sys.exit(exit_code(outcome))


def _write_json(path: Path, text: str) -> None:
    try:
        write_text(path, text)
    except OutputError as e:
        fail(str(e))


def register(main: click.Group) -> None:
    """Adds this module's commands to the `rtbench` group."""
    main.add_command(ab)
