"""`rtbench ab`: one experiment (JIT-AB) under configurations A and B.

rtbench ab --a load=none --b load=mixed
rtbench ab --a pin=on --b pin=off --rounds 5
rtbench ab --a preempt=none --b preempt=full -c JIT-PER --set JIT-PER.cycles=20000
rtbench ab --b set:JIT-PER.blocker_us=500            # a self-test: B is worse
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from types import FrameType

import click
from rich.markup import escape
from rich.table import Table

from rtbench import catalogue, probe
from rtbench.ab import (
    DEFAULT_INDICATORS,
    Config,
    ConfigError,
    PreemptSwitch,
    Row,
    compare,
    parse_config,
)
from rtbench.analysis.compare import ALPHA
from rtbench.analysis.stats import INDICATORS
from rtbench.build import BuildError, ensure_agent
from rtbench.commands.common import (
    EXIT,
    err,
    fail,
    open_store,
    out,
    parse_labels,
    selection_options,
)
from rtbench.model import Run, worst_outcome
from rtbench.session import Interrupted, collect
from rtbench.suites import Planned, SelectionError, select
from rtbench.transports import LocalTransport, TransportError


def us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1000:.3f}"


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # the same clean ending as Ctrl-C


def _one_run(
    exe: Path, cfg: Config, args: list[str], cpu: int | None, switch: PreemptSwitch | None
) -> tuple[Run, bool]:
    # Imported here: only trace=on needs the kernel-trace package.
    from rtbench import trace as kernel_trace

    interrupted = False
    preempt: AbstractContextManager[None] = (
        switch.switched(cfg.preempt) if switch is not None else nullcontext()
    )
    with preempt:
        machine = probe.probe_machine()  # inside: it records the mode in effect
        rec: kernel_trace.Recorder | None = None
        try:
            with kernel_trace.recording(cfg.trace, cpu) as rec:
                result = collect(LocalTransport(exe), [*kernel_trace.agent_args(rec), *args])
        except Interrupted as e:
            result, interrupted = e.run, True
    result.machine = machine
    if rec is not None:
        kernel_trace.finish(result, rec)
    return result, interrupted


def _table(rows: list[Row]) -> Table:
    t = Table(header_style="bold", title=f"B/A per indicator (µs); significant: p < {ALPHA}")
    for col in ("case", "series", "indicator", "A", "B", "B/A", "p", ""):
        t.add_column(col, justify="right" if col in ("A", "B", "B/A", "p") else "left")
    for r in rows:
        ratio = "-" if r.ratio is None else f"{r.ratio:.3f}"
        p = "-" if r.pvalue is None else f"{r.pvalue:.3g}" if r.pvalue > 0 else "<1e-300"
        flag = "significant" if r.significant else ""
        if r.unstable:
            flag += (" · " if flag else "") + "unstable: " + ", ".join(r.unstable)
        t.add_row(r.case, escape(r.series), r.indicator, us(r.a), us(r.b), ratio, p, flag)
    return t


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
    priority: int,
    labels: tuple[str, ...],
    agent_path: Path | None,
    json_out: Path | None,
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
    try:
        exe = agent_path or ensure_agent("release")
        known = catalogue.agent_cases(exe)
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
        args = cfg.agent_args(cpu, priority) + [p.agent_arg() for p in plans[cfg.name]]
        check = subprocess.run([str(exe), "--dry-run", *args], capture_output=True, text=True,
                               check=False)  # fmt: skip
        if check.returncode != 0:
            fail(f"{cfg.name} ({cfg.describe()}): {check.stderr.strip()}")
    switch: PreemptSwitch | None = None
    if any(cfg.preempt for cfg in sides):
        switch = PreemptSwitch()
        try:
            switch.open()
            for cfg in sides:
                if cfg.preempt:
                    switch.check(cfg.preempt)
        except ConfigError as e:
            switch.close()
            fail(str(e))
        err.print(
            f"preemption mode now {switch.original}; each run switches and puts it back",
            highlight=False,
        )

    ab_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    done: dict[str, list[Run]] = {"A": [], "B": []}
    interrupted = False
    old_term = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        with open_store(ctx) as store:
            for rnd in range(1, rounds + 1):
                for cfg in sides:
                    args = cfg.agent_args(cpu, priority) + [p.agent_arg() for p in plans[cfg.name]]
                    err.print(
                        f"round {rnd}/{rounds} · {cfg.name}: {cfg.describe()} …", highlight=False
                    )
                    try:
                        result, interrupted = _one_run(exe, cfg, args, cpu, switch)
                    except TransportError as e:
                        fail(f"{cfg.name} ({cfg.describe()}): {e}")
                    except ConfigError as e:
                        fail(str(e))
                    result.labels = {
                        **user_labels,
                        **cfg.labels(),
                        "ab_id": ab_id,
                        "ab_round": str(rnd),
                    }
                    result.source = "ab"
                    store.save(result)
                    done[cfg.name].append(result)
                    if interrupted:
                        break
                if interrupted:
                    break
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signal.signal(signal.SIGTERM, old_term)
        if switch is not None:
            switch.close()

    a, b = sides
    ids = {k: ", ".join(str(r.id) for r in v) for k, v in done.items()}
    out.print(
        f"ab_id {ab_id}\nA: {a.describe()} (runs {ids['A'] or '-'})\n"
        f"B: {b.describe()} (runs {ids['B'] or '-'})",
        highlight=False,
    )
    if done["A"] and done["B"]:
        rows = compare(done["A"], done["B"], indicators or DEFAULT_INDICATORS)
        out.print(_table(rows))
        if json_out is not None:
            json_out.write_text(
                json.dumps(
                    {
                        "ab_id": ab_id,
                        "a": a.describe(),
                        "b": b.describe(),
                        "runs": {k: [r.id for r in v] for k, v in done.items()},
                        "rows": [r.as_dict() for r in rows],
                    },
                    indent=2,
                )
            )
    if interrupted:
        err.print("interrupted: the runs so far are stored", style="yellow")
        sys.exit(130)
    outcome = worst_outcome([r.outcome for v in done.values() for r in v])
    sys.exit(EXIT.get(outcome, 2))


def register(main: click.Group) -> None:
    """Adds this module's commands to the `rtbench` group."""
    main.add_command(ab)
