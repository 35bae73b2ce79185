"""What every command shares: the consoles, errors and exit codes, the store."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.segment import Segment

from rtbench.io.atomic import OutputError, check_writable
from rtbench.store import Store, StoreBusy, StoreError, StoreLocation, locate
from rtbench.store.location import LocationError
from rtbench.text import printable

# Piped output (CI logs, files) without COLUMNS gets a width a figures
# table fits in; COLUMNS, when set, wins on a terminal and in a pipe.
PIPED_WIDTH = 132


def output_width() -> int | None:
    """COLUMNS when set, else PIPED_WIDTH when piped, else None (the terminal's)."""
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    return None if sys.stdout.isatty() else PIPED_WIDTH


class TextConsole(Console):
    """A console on which every string is text: stream strings (an OS
    release `6.1.0-custom[/rt]`, a case id `[/bad]`) are never read as
    markup or emoji codes, and their control characters (ANSI and OSC
    sequences) are shown escaped, never sent to the terminal
    (`rtbench.text`). Styles come from Text, Table and `style=`; where code
    means markup it says `markup=True` or uses `Text.from_markup`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(markup=False, emoji=False, **kwargs)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        # Every segment of text passes here on its way out (tables, the live
        # bar included); control segments are rich's own cursor moves.
        return super()._render_buffer(
            s if s.control else Segment(printable(s.text), s.style) for s in buffer
        )


out = TextConsole(width=output_width())
err = TextConsole(stderr=True)


def configure_output() -> None:
    """Re-reads the width for this command (COLUMNS may differ from import time)."""
    width = output_width()
    if width is not None:
        out.width = width


FORMATS = ("table", "json", "csv")


def format_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """`--format table|json|csv` for the commands that print tables."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default="table",
        show_default=True,
        help="table: for people (at the terminal's width: columns are left out, "
        "numbers never cut); json, csv: every figure, raw, in the series' unit, for scripts.",
    )(f)


def print_data(fmt: str, doc: dict[str, Any], main: Any) -> None:
    """`doc` as JSON, or every table of it as one CSV (a `table` column
    names each row's table, `main` first), on stdout."""
    from rtbench.reports.tables import tables_to_csv, to_json

    sys.stdout.write(to_json(doc) if fmt == "json" else tables_to_csv(doc, main))


@contextmanager
def busy(doing: str) -> Iterator[None]:
    """Says what rtbench is doing while it may take seconds (a build, a
    fetch, a boot, a report): a spinner on a terminal, else one line on
    stderr, so that a piped run (CI logs) is never silent either."""
    if err.is_terminal:
        with err.status(f"{doing}…"):
            yield
    else:
        err.print(f"rtbench: {doing}…", highlight=False, markup=False, soft_wrap=True)
        yield


def fail(message: str, code: int = 2) -> NoReturn:
    err.print("[bold red]rtbench:[/bold red] ", end="", markup=True)
    err.print(message, highlight=False, markup=False, soft_wrap=True)
    sys.exit(code)


def parse_labels(pairs: tuple[str, ...]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"--label {pair!r}: write KEY=VALUE")
        labels[key] = value
    return labels


def label_filters(pairs: tuple[str, ...] | list[str]) -> dict[str, str | None]:
    """--label KEY[=VALUE] filters for Store.list_runs: KEY alone matches any value."""
    filters: dict[str, str | None] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        filters[key] = value if sep else None
    return filters


def say(message: str) -> None:
    """A plain note on stderr ("rtbench: ..."), for what the user must know."""
    err.print("[bold yellow]rtbench:[/bold yellow] ", end="", markup=True)
    err.print(message, highlight=False, markup=False, soft_wrap=True)


def store_path(ctx: click.Context) -> StoreLocation:
    """The store the command uses (--db, else $RTBENCH_DB, else the default
    file): an SQLite file or a PostgreSQL database."""
    try:
        return locate(ctx.obj["db"])
    except LocationError as e:
        fail(str(e))


def check_store_writable(ctx: click.Context) -> None:
    """Fails (exit 2) when the store cannot take a run: said before a run
    measures, not after (a read-only store)."""
    with open_store(ctx) as store:
        try:
            store.check_writable()
        except StoreBusy as e:
            # Another writer, or a full disk: either may pass by the run's end;
            # if not, the run is kept as a stream file to ingest (rtbench.run.measure).
            say(f"the store {store.location} cannot take a run now ({e}); measuring all the same")
        except StoreError as e:
            if "full" not in str(e):
                fail(f"the store {store.location} cannot store a run: {e}")
            say(f"the store {store.location} has no room now ({e}); measuring all the same")


def open_store(ctx: click.Context, recover: bool = True) -> Store:
    """The store; first, the runs of hosts that died while measuring are
    stored from their journals (`rtbench.run.recovery`), said on stderr."""
    try:
        store = Store(ctx.obj["db"])
    except StoreError as e:
        fail(str(e))
    if recover:
        from rtbench.run.recovery import recover as recover_journals

        recover_journals(store, say)
    return store


def check_output(path: Path) -> None:
    """Fails (exit 2) when `path` clearly cannot be written; before a long
    run, this says so before measuring."""
    try:
        check_writable(path)
    except OutputError as e:
        fail(str(e))


def selection_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """What `run` and `ab` both take: which cases, with which settings, on
    which CPU and priority, by which agent, tagged how."""
    from rtbench.run.suites import SUITES  # here: suites is not needed by every command

    for opt in reversed(
        [
            click.option(
                "--suite", type=click.Choice(sorted(SUITES)), default="quick", show_default=True
            ),
            click.option(
                "-c",
                "--case",
                "cases",
                multiple=True,
                metavar="ID|GLOB",
                help="Only these cases (repeatable), e.g. -c THR-SW -c 'SEM-*'.",
            ),
            click.option(
                "--set",
                "overrides",
                multiple=True,
                metavar="CASE.PARAM=VALUE",
                help="Override a parameter, e.g. --set THR-SW.n=2,10.",
            ),
            click.option(
                "--label", "labels", multiple=True, metavar="KEY=VALUE", help="Tag the run(s)."
            ),
            click.option(
                "--cpu",
                type=click.IntRange(0),
                default=None,
                help="Measurement CPU (default: the last one the agent may run on).",
            ),
            click.option(
                "--priority",
                type=click.IntRange(1, 97),
                default=None,
                help="Base real-time priority of the case threads (default: the agent's, "
                "`rtbench-agent --help`).",
            ),
            click.option(
                "--agent",
                "agent_path",
                type=click.Path(exists=True, dir_okay=False, path_type=Path),
                default=None,
                help="Use this agent executable instead of building one.",
            ),
        ]
    ):
        f = opt(f)
    return f
