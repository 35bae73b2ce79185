"""The `rtbench` command line.

Exit codes follow the three outcomes: 0 passed, 1 failed (a check or a
case failed), 2 error (bad input, a broken stream, a case that could not
measure, a run that could not be stored or a file that could not be
written, an internal error: `rtbench.errors`). Ctrl-C, SIGTERM and SIGHUP
store what was measured and exit 130, 143 and 129 (`rtbench.run.measure`).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from rtbench import __version__, catalogue, errors, ports
from rtbench.commands.common import (
    busy,
    configure_output,
    fail,
    format_option,
    label_filters,
    open_store,
    out,
    print_data,
    say,
)
from rtbench.machine import doctor, probe
from rtbench.machine.build import (
    ARCHES,
    BuildError,
    Flavor,
    agent_source,
    ensure_agent,
    ensure_firmware,
)
from rtbench.store import StoreError, default_store_path

# The commands of rtbench.commands.*, by the module whose register() adds
# them: a module is imported when one of its commands runs (or for --help),
# so that `rtbench runs` starts without the analysis and report stack
# (matplotlib alone takes longer to import than listing 10,000 runs).
# tests/host/test_cli_commands.py checks this table against the modules.
COMMAND_MODULES: dict[str, str] = {
    "run": "rtbench.commands.run",
    "ingest": "rtbench.commands.run",
    "recover": "rtbench.commands.run",
    "analyze": "rtbench.commands.analysis",
    "compare": "rtbench.commands.analysis",
    "check": "rtbench.commands.analysis",
    "label": "rtbench.commands.analysis",
    "export": "rtbench.commands.analysis",
    "import": "rtbench.commands.analysis",
    "import-cyclictest": "rtbench.commands.analysis",
    "report": "rtbench.commands.report",
    "ab": "rtbench.commands.ab",
    "kernel": "rtbench.commands.kernel",
    "campaign": "rtbench.commands.campaign",
    "targets": "rtbench.commands.targets",
    "trend": "rtbench.commands.trend",
}


class LazyGroup(click.Group):
    """A group whose commands in COMMAND_MODULES load when first used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMAND_MODULES})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            importlib.import_module(COMMAND_MODULES[cmd_name]).register(self)
        return self.commands.get(cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        """The error boundary (`rtbench.errors`): what a command raises past
        click's own exits becomes exit 2 (130 for Ctrl-C), never click's
        "Aborted!" and exit 1, never a traceback."""
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except (Exception, KeyboardInterrupt) as e:
            raise SystemExit(errors.exit_for(e)) from None


@click.group(cls=LazyGroup)
@click.version_option(__version__, prog_name="rtbench")
@click.option(
    "--db",
    metavar="PATH|URL",
    default=None,
    help="Run store: an SQLite file or a postgresql:// URL "
    f"(default: $RTBENCH_DB or {default_store_path()}).",
)
@click.pass_context
def main(ctx: click.Context, db: str | None) -> None:
    """Measure and compare the real-time performance of operating systems."""
    errors.interrupt_on_sigint()  # (also for `python -m rtbench.cli`)
    ctx.ensure_object(dict)
    ctx.obj["db"] = db
    configure_output()


@main.command()
@click.option(
    "--flavor",
    type=click.Choice(["release", "test"]),
    default="release",
    help="test: fault-injection hooks and sanitizers.",
)
@click.option(
    "--arch",
    type=click.Choice(list(ARCHES)),
    default=None,
    help="Cross-build for a target architecture (default: this machine).",
)
@click.option(
    "--static/--dynamic",
    default=None,
    help="Link statically (default: static with --arch, dynamic without).",
)
@click.option(
    "--port",
    default="posix",
    show_default=True,
    help="The agent's port (a folder of agent/ports/); an RTOS port builds a firmware for --board.",
)
@click.option("--board", default=None, help="The board of an RTOS port (e.g. mps2-an385).")
def build(flavor: str, arch: str | None, static: bool | None, port: str, board: str | None) -> None:
    """Build the agent for this machine or a target architecture, or an RTOS
    port's firmware for a board."""
    kind: Flavor = "test" if flavor == "test" else "release"
    try:
        try:
            manifest = ports.port(agent_source(), port)
        except ports.ManifestError as e:
            fail(str(e))
        if manifest.firmware or board is not None:
            if arch is not None or static is not None:
                fail("--arch and --static are for the posix agent; a firmware's --board says both")
            boards = sorted(manifest.boards)
            if board is None and len(boards) != 1:
                fail(f"--port {port}: give --board ({', '.join(boards) or 'none known'})")
            exe = ensure_firmware(port, board or boards[0], kind, announce=busy)
        else:
            exe = ensure_agent(kind, arch, static, announce=busy)
    except BuildError as e:
        fail(str(e))
    out.print(str(exe), highlight=False, soft_wrap=True)  # one line, for $(rtbench build)


@main.command(name="list")
@click.option(
    "--agent",
    "agent_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
)
def list_cases(agent_path: Path | None) -> None:
    """The catalogue, with each case's status on each port.

    Each port's column comes from the case table shipped with rtbench (what
    its agent's --list said): nothing is built. --agent replaces the posix
    column with what that agent build says."""
    tables = catalogue.shipped_ports()
    if agent_path is not None:
        tables["posix"] = catalogue.agent_cases(agent_path)
    t = Table(header_style="bold")
    t.add_column("ID")
    t.add_column("family")
    t.add_column("what")
    for name in tables:
        t.add_column(name)
    style = {"implemented": "green", "unsupported": "yellow", "planned": "dim"}
    for cid, title in catalogue.CATALOGUE.items():
        cells = []
        for cases in tables.values():
            st, note = catalogue.status(cid, cases)
            cells.append(Text.assemble((st, style[st]), f" ({note})" if note else ""))
        fam = catalogue.FAMILIES.get(cid.split("-")[0], "")
        t.add_row(cid, fam, title, *cells)
    out.print(t)


@main.command()
@click.option("--label", "labels", multiple=True, metavar="KEY[=VALUE]", help="Filter by label.")
@click.option(
    "--limit", type=click.IntRange(1), default=100, show_default=True, help="Show the newest N."
)
@click.option("--all", "show_all", is_flag=True, help="Show every run (slow for thousands).")
@format_option
@click.pass_context
def runs(ctx: click.Context, labels: tuple[str, ...], fmt: str, limit: int, show_all: bool) -> None:
    """The stored runs, newest first (the newest --limit of them)."""
    from rtbench.reports.figures import runs_table
    from rtbench.reports.tables import print_table

    filters = label_filters(labels)
    with open_store(ctx) as store:
        try:
            rows = list(reversed(store.list_runs(filters, newest=None if show_all else limit)))
            total = len(rows) if show_all or len(rows) < limit else store.count_runs(filters)
        except StoreError as e:
            fail(str(e))
    table = runs_table(rows)
    if fmt != "table":
        print_data(fmt, {"runs": table}, table)
    elif not rows:
        out.print("no runs stored yet: try `rtbench run`" if not filters else "no run matches")
    else:
        print_table(table, out)
    if total > len(rows):
        say(f"the newest {len(rows)} of {total:,} runs; --limit N or --all for more")


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("ref", default="latest")
@format_option
@click.pass_context
def show(ctx: click.Context, ref: str, fmt: str) -> None:
    """Show a stored run (an id, 'latest', or -N for the N-th newest).

    --format json: the run's figures, checks, warnings and cases as data;
    --format csv: the figures.
    """
    with open_store(ctx) as store:
        try:
            result = store.load(store.resolve(ref))
        except StoreError as e:
            fail(str(e))
    if fmt != "table":
        from rtbench.reports.figures import run_document

        doc = run_document(result)
        print_data(fmt, doc, doc["figures"])
        return
    from rtbench.reports.terminal import render_run

    render_run(result, out)


@main.command(name="doctor")
def doctor_cmd() -> None:
    """Check what on this machine affects results, and how to fix it."""
    findings = doctor.run_doctor(probe.probe_machine(), probe.probe_privileges())
    doctor.render_findings(findings, out)
    sys.exit(doctor.doctor_exit_code(findings))


if __name__ == "__main__":
    main(prog_name="rtbench")
