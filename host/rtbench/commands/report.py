"""Report commands: HTML and Markdown reports.

rtbench report latest -o report.html           # one run: a run report
rtbench report 3 7 -o compare.html             # several: a comparison
rtbench report latest -o -                     # Markdown to stdout
rtbench report saved.rtb --format markdown -o report.md
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rtbench.analysis.stats import INDICATORS
from rtbench.commands.common import busy, check_output, fail, open_store, out, say
from rtbench.io.atomic import OutputError, write_text
from rtbench.model import Run
from rtbench.store import StoreError
from rtbench.stream import StreamError, load_run

_MARKDOWN_SUFFIXES = {".md", ".markdown"}


def _format_for(fmt: str | None, output: str) -> str:
    """The format asked for, else the one the output name implies."""
    if fmt:
        return fmt
    if output == "-" or Path(output).suffix.lower() in _MARKDOWN_SUFFIXES:
        return "markdown"
    return "html"


def _load(ctx: click.Context, refs: tuple[str, ...]) -> list[Run]:
    """Stored runs by reference (id, 'latest', -N) or saved stream files."""
    runs: list[Run] = []
    stored = [r for r in refs if not _is_stream_file(r)]
    store = open_store(ctx) if stored else None
    try:
        for ref in refs:
            if _is_stream_file(ref):
                runs.append(_load_stream(Path(ref)))
            else:
                assert store is not None
                runs.append(store.load(store.resolve(ref)))
    except StoreError as e:
        fail(str(e))
    finally:
        if store is not None:
            store.close()
    return runs


def _is_stream_file(ref: str) -> bool:
    return ref.endswith(".rtb") and Path(ref).is_file()


def _load_stream(path: Path) -> Run:
    try:
        run = load_run(path)
    except (OSError, StreamError) as e:
        fail(f"{path}: {e}")
    run.source = f"file {path.name}"
    return run


def _write(text: str, output: str) -> None:
    if output == "-":
        sys.stdout.write(text)
        return
    try:
        write_text(Path(output), text)
    except OutputError as e:
        fail(str(e))


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("refs", nargs=-1, metavar="RUN [RUN ...]")
@click.option(
    "-o",
    "--output",
    default="report.html",
    show_default=True,
    metavar="FILE|-",
    help="Where to write the report; - for stdout (Markdown).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["html", "markdown"]),
    default=None,
    help="Default: from the output name (.md: markdown, - : markdown, else html).",
)
@click.option(
    "--indicator",
    type=click.Choice(INDICATORS),
    default="max",
    show_default=True,
    help="The figure several runs are compared by.",
)
@click.pass_context
def report(
    ctx: click.Context, refs: tuple[str, ...], output: str, fmt: str | None, indicator: str
) -> None:
    """Write a report of a run, or a comparison of several runs.

    RUN is a stored run (an id, 'latest', -N for the N-th newest) or a saved
    stream file (*.rtb); default: latest. The HTML report is one
    self-contained file (charts inline, nothing loaded from the network).
    """
    if output != "-":
        check_output(Path(output))  # before loading and rendering
    loaded = _load(ctx, refs or ("latest",))
    # Runs sharing their labels (but for a repetition's) are one column, the
    # test over its runs (rtbench.analysis.compare), as in `compare`.
    from rtbench.analysis.compare import NothingInCommon, configurations
    from rtbench.analysis.health import set_apart
    from rtbench.analysis.pooling import column
    from rtbench.model import Warning

    members, apart = set_apart(configurations(loaded) if len(loaded) > 1 else [loaded])
    runs = [column(g) for g in members]
    for line in apart:  # said on the report's first run, and here
        say(line)
        runs[0].warnings.append(Warning("set_apart", line))
    # Imported here: matplotlib and the analysis take a second to import,
    # which every other command would pay for.
    kind = "comparison" if len(runs) > 1 else "report"
    try:
        # On stderr: a report piped from stdout stays clean.
        with busy(f"writing the {kind} to {'stdout' if output == '-' else output}"):
            if _format_for(fmt, output) == "markdown":
                from rtbench.reports.markdown import render_markdown

                _write(render_markdown(runs, indicator, members), output)
            else:
                from rtbench.reports.html import html_report

                _write(html_report(runs, indicator, members), output)
    except NothingInCommon as e:
        fail(str(e))  # a clear error (exit 2), not a traceback
    if output != "-":
        out.print(f"wrote the {kind} to {output}", highlight=False)


def register(main: click.Group) -> None:
    """Adds this module's commands to the `rtbench` group."""
    main.add_command(report)
