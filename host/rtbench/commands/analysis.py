"""Analysis commands: analyze, compare, check, label, export, import, import-cyclictest."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO, cast

import click
from rich.table import Table
from rich.text import Text

from rtbench import identity
from rtbench.analysis import criteria as crit
from rtbench.analysis.compare import (
    ALPHA,
    MIN_TAIL_SAMPLES,
    UNSTABLE_CV,
    UNSTABLE_MAX_P99,
    Comparison,
    NothingInCommon,
    compare_runs,
    configurations,
)
from rtbench.analysis.determinism import curves
from rtbench.analysis.evt import DEFAULT_PROBABILITIES, MIN_BLOCKS, worst_case
from rtbench.analysis.health import set_apart
from rtbench.analysis.pooling import column
from rtbench.analysis.rating import (
    Rating,
    Rubric,
    RubricError,
    load_rubric,
    overall_rating,
    rate_run,
    unrated_because,
)
from rtbench.analysis.scores import composite_parts, composite_score, fmt_score
from rtbench.analysis.stats import (
    INDICATORS,
    has_all_samples,
)
from rtbench.commands.common import (
    check_output,
    fail,
    format_option,
    label_filters,
    open_store,
    out,
    parse_labels,
    print_data,
    say,
)
from rtbench.io.atomic import OutputError, atomic_binary, atomic_text
from rtbench.io.cyclictest import read_cyclictest
from rtbench.io.export import read_json, write_csv, write_json
from rtbench.io.junit import junit_tree
from rtbench.model import Run
from rtbench.outcomes import exit_code, outcome_of_exit
from rtbench.reference import figures_for
from rtbench.reports.figures import comparison_table, find_series, run_info, statistics_table
from rtbench.reports.tables import Column, Row, Tabular, print_table
from rtbench.reports.terminal import render_run
from rtbench.reports.units import fmt_value
from rtbench.store import AlreadyStored, Store, StoreError, kernel_release

_VERDICT_STYLE = {"passed": "green", "failed": "red", "error": "bold red", "skipped": "yellow"}
_RUBRIC_OPTION = click.option(
    "--rubric",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Star-rating rubric (TOML) replacing the built-in one (docs/analysis.md).",
)


# --- helpers ----------------------------------------------------------------


def _load(store: Store, ref: str) -> Run:
    try:
        return store.load(store.resolve(ref))
    except StoreError as e:
        fail(str(e))


def _select(store: Store, refs: tuple[str, ...], labels: tuple[str, ...]) -> list[Run]:
    """The runs named by reference, then those carrying every --label, by id."""
    ids = []
    try:
        ids = [store.resolve(r) for r in refs]
        if labels:
            filters = label_filters(labels)
            ids += [s.id for s in store.list_runs(filters) if s.id not in ids]
        return [store.load(i) for i in ids]
    except StoreError as e:
        fail(str(e))


def _rubric(path: Path | None) -> Rubric:
    try:
        return load_rubric(path)
    except RubricError as e:
        fail(str(e))


def _add(t: Table, *cells: str | Text) -> None:
    """A row of plain text: series labels like switch[n=2] are not markup."""
    t.add_row(*(c if isinstance(c, Text) else Text(c) for c in cells))


def _stars(n: int) -> str:
    return "★" * n + "☆" * (5 - n)


def _run_line(run: Run) -> str:
    labels = ", ".join(f"{k}={v}" for k, v in run.labels.items())
    rt = "" if run.realtime else " · NOT REAL-TIME"
    if run.emulated:
        rt += f" · EMULATED ({run.emulated})"
    # A pooled column (compare of repetitions) is named by its runs' ids.
    ident = run.id if run.id is not None else run.labels.get("runs", "-")
    return (
        f"#{ident} · {run.started_at} · {run.target} · {kernel_release(run) or '?'}"
        f"{rt}{' · ' + labels if labels else ''}"
    )


# --- analyze ----------------------------------------------------------------


def _ratings(ratings: list[Rating], rubric: Rubric) -> Tabular:
    rows = [
        {"case": r.case, "series": r.series, "stars": r.stars, "why": r.reason} for r in ratings
    ]
    cols = [
        Column("case", "case", 100, numeric=False),
        Column("series", "series", 100, numeric=False),
        Column("stars", "stars", 100, numeric=False, show=lambda r: _stars(r["stars"])),
        Column("why", "why", 100, numeric=False),
    ]
    return Tabular(f"Rating (rubric: {rubric.source})", cols, rows)


def _rating_table(run: Run, ratings: list[Rating], t: Tabular) -> None:
    why_not = unrated_because(run)
    if why_not is not None:
        out.print(Text(f"Rating: {why_not}", style="yellow"))
        return
    if not ratings:
        out.print("Rating: no rated series in this run (calibration only, or skipped)")
        return
    print_table(t, out)
    overall = overall_rating(ratings)
    out.print(Text(f"Overall: {_stars(overall.stars)} {overall.reason}", style="bold"))


def _scores_lines(run: Run) -> None:
    comp = composite_score(run)
    if run.t_std_ns is None:
        out.print("Scores: no CAL-REF in this run, so no T_std and no scores")
        return
    parts = ", ".join(f"{p.case} {fmt_score(p.score)}" for p in composite_parts(run) if p.score)
    shown = fmt_score(comp)
    out.print(f"Composite score {shown} (geometric mean of mean/T_std of: {parts or 'none'})")


def _slope(row: Row, key: str) -> str:
    v = row.get(key)
    return "-" if v is None else f"{v:+.3f}"


def _curves(run: Run) -> Tabular:
    rows = [
        {
            "case": cv.case,
            "series": cv.series,
            "over": cv.key,
            "points": cv.xs,
            "slope_mean": cv.slope_mean,
            "slope_max": cv.slope_max,
            "unit": "ns/task",  # the slopes' unit (the raw values are ns)
        }
        for cv in curves(run)
    ]
    cols = [
        Column("case", "case", 100, numeric=False),
        Column("series", "series", 100, numeric=False),
        Column("over", "over", 100, numeric=False),
        Column(
            "points", "points", 40, numeric=False, show=lambda r: ",".join(map(str, r["points"]))
        ),
        Column("slope_mean", "mean ns/task", 95, show=lambda r: _slope(r, "slope_mean")),
        Column("slope_max", "max ns/task", 99, show=lambda r: _slope(r, "slope_max")),
    ]
    title = "Determinism: growth per task (least-squares slope)"
    return Tabular(title, cols, rows, extra=("unit",))


def _evt(run: Run) -> Tabular:
    rows = []
    for c in run.cases:
        for s in c.series:
            if not (s.traits.evt and has_all_samples(s)) or s.chunked is None:
                continue
            r = worst_case(s.chunked, DEFAULT_PROBABILITIES)
            row: Row = {"case": c.case, "series": s.label, "unit": s.unit, "verdict": r.verdict}
            for p in DEFAULT_PROBABILITIES:
                row[f"p={p:g}"] = r.estimates.get(p) if r.valid else None
            rows.append(row)

    def est(key: str) -> Column:
        return Column(key, key, 95, show=lambda r: fmt_value(r.get(key), r["unit"]))

    cols = [
        Column("case", "case", 100, numeric=False),
        Column("series", "series", 100, numeric=False),
        *(est(f"p={p:g}") for p in DEFAULT_PROBABILITIES),
        Column("verdict", "verdict", 90, numeric=False),
    ]
    title = "Worst case beyond the samples (EVT estimates, not guarantees)"
    # Scripts get the estimates raw, in the row's `unit`.
    return Tabular(title, cols, rows, extra=("unit",))


def _no_estimate(verdict: str) -> str | None:
    """Why a fit could not be made, as one reason for many series (the
    block counts differ from series to series), or None for an estimate."""
    if not verdict.startswith("no estimate: "):
        return None
    why = verdict.removeprefix("no estimate: ")
    return f"too few samples (fewer than {MIN_BLOCKS} blocks)" if "block(s) of" in why else why


def _print_evt(t: Tabular) -> None:
    """The estimates made, in a table; the fits that could not be made in
    one line with their reasons (a full suite has dozens of short series:
    a row of "no estimate" each said nothing)."""
    made = [r for r in t.rows if _no_estimate(str(r["verdict"])) is None]
    if made:
        print_table(Tabular(t.title, t.columns, made, t.extra), out)
    why = Counter(
        w for r in t.rows if (w := _no_estimate(str(r["verdict"]))) is not None
    )
    if why:
        reasons = ", ".join(f"{n} {w}" for w, n in why.most_common())
        out.print(
            f"Worst case: no estimate for {sum(why.values())} series: {reasons}", highlight=False
        )


def _references(run: Run) -> Tabular:
    rows = []
    for c in run.cases:
        for s in c.series:
            figs = figures_for(c.case, s.name, s.point)
            if figs:
                rows.append(
                    {
                        "case": c.case,
                        "series": s.label,
                        "published": "; ".join(f.label for f in figs),
                    }
                )
    cols = [
        Column("case", "case", 100, numeric=False),
        Column("series", "series", 100, numeric=False),
        Column("published", "published", 100, numeric=False),
    ]
    return Tabular("Published figures (other hardware)", cols, rows)


@click.command()
@click.argument("ref", default="latest")
@_RUBRIC_OPTION
@click.option("--no-evt", is_flag=True, help="Skip the extreme-value estimates.")
@click.option("--references", is_flag=True, help="Also list the published figures.")
@format_option
@click.pass_context
def analyze(
    ctx: click.Context,
    ref: str,
    rubric: Path | None,
    no_evt: bool,
    references: bool,
    fmt: str,
) -> None:
    """Statistics, scores, star rating, determinism and worst-case estimates of a run.

    --format json: every table below as data; --format csv: the statistics.
    """
    rb = _rubric(rubric)
    with open_store(ctx) as store:
        run = _load(store, ref)
    stats = statistics_table(run)
    rated = rate_run(run, rb)
    ratings = _ratings(rated, rb)
    found = _curves(run)
    if fmt != "table":
        doc: dict[str, object] = {
            "run": run_info(run),
            "statistics": stats,
            "composite_score": composite_score(run),
            "ratings": ratings,
            "unrated_because": unrated_because(run),
            "determinism": found,
        }
        if not no_evt:
            doc["worst_case"] = _evt(run)
        if references:
            doc["references"] = _references(run)
        print_data(fmt, doc, stats)
        return
    out.print(Text(_run_line(run), style="bold"), highlight=False)
    print_table(stats, out)
    _scores_lines(run)
    _rating_table(run, rated, ratings)
    if found.rows:
        print_table(found, out)
    if not no_evt:
        _print_evt(_evt(run))
    if references:
        print_table(_references(run), out)


# --- compare ----------------------------------------------------------------


def _units(cmp: Comparison) -> list[str]:
    """Each row's stream unit, from the first run that has the series."""
    units = []
    for row in cmp.rows:
        found = (find_series(r, row.case, row.series, row.point_key) for r in cmp.runs)
        units.append(next((s.unit for s in found if s is not None), "ns"))
    return units


def _groups(store: Store, refs: tuple[str, ...], labels: tuple[str, ...]) -> list[list[Run]]:
    """The columns' runs: a REF of ids joined by commas (1,2,3) is one
    configuration measured several times; otherwise runs whose labels are
    the same but for a repetition's are grouped (rtbench.analysis.compare)."""
    if not any("," in r for r in refs):
        return configurations(_select(store, refs, labels))
    groups = [_select(store, tuple(p for p in r.split(",") if p), ()) for r in refs]
    if labels:
        groups.append(_select(store, (), labels))
    return [g for g in groups if g]


@click.command()
@click.argument("refs", nargs=-1)
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="KEY[=VALUE]",
    help="Also compare every run carrying this label (repeatable: all must match).",
)
@click.option("--indicator", type=click.Choice(INDICATORS), default="max", show_default=True)
@format_option
@click.pass_context
def compare(
    ctx: click.Context, refs: tuple[str, ...], labels: tuple[str, ...], indicator: str, fmt: str
) -> None:
    """Runs side by side: an indicator, its ratio to the first, and whether it
    differs beyond run-to-run noise.

    A REF may name several runs of one configuration (1,2,3); runs sharing
    their labels (but for a repetition's) are grouped too. The test is over
    runs: with one run per side nothing is significant.
    """
    with open_store(ctx) as store:
        groups = _groups(store, refs, labels)
    # Repetitions checked before pooling: an odd one is set apart, named.
    groups, apart = set_apart(groups)
    if len(groups) < 2:
        got = sum(map(len, groups))
        fail(f"compare needs two runs or groups of runs, got {got}: name them or use --label")
    columns = [column(g) for g in groups]
    try:
        cmp = compare_runs(columns, indicator, members=groups)
    except NothingInCommon as e:
        fail(str(e))
    table = comparison_table(cmp, _units(cmp))
    differ = cmp.differing
    verdict = (
        f"{len(differ)} series differ beyond run-to-run noise"
        if differ
        else "no difference beyond run-to-run noise"
        if cmp.tested
        else "no test: " + (cmp.note or f"none compares the {indicator}")
    )
    if fmt != "table":
        doc = {
            "runs": [run_info(r) for r in columns],
            "members": [[r.id for r in g] for g in groups],
            "indicator": indicator,
            "verdict": verdict,
            "note": cmp.note,
            "set_apart": apart,
            "comparison": table,
        }
        print_data(fmt, doc, table)
        return
    for k, (run, members) in enumerate(zip(columns, groups, strict=True), 1):
        reps = f" · {len(members)} runs pooled, each one observation" if len(members) > 1 else ""
        out.print(f"{k}. {_run_line(run)}{reps}", highlight=False, markup=False)
    for line in apart:
        out.print(Text(line[0].upper() + line[1:], style="yellow"))
    print_table(table, out)
    tests = sorted({r.test for r in cmp.rows if r.pvalue is not None})
    tested = (
        f"p: {' / '.join(tests)}, adjusted for the {cmp.tested} series tested "
        f"(Benjamini-Hochberg); * p < {ALPHA:g}. spread: the widest range of the per-run "
        f"{indicator} among one side's repetitions; beyond noise: the change between the "
        "sides' medians exceeds it. "
        if tests
        else ""
    )
    out.print(
        f"{tested}~ unstable (max: max/p99 > {UNSTABLE_MAX_P99:g}; mean: CV > {UNSTABLE_CV:g}; "
        f"percentile: < {MIN_TAIL_SAMPLES} samples beyond it); "
        "≤ a histogram bucket's upper bound.",
        highlight=False,
        markup=False,
    )
    style = "bold yellow" if differ or cmp.note else "bold"
    out.print(Text(verdict[0].upper() + verdict[1:] + ".", style=style))


# --- check ------------------------------------------------------------------


@click.command()
@click.argument("ref")
@click.option(
    "--criteria",
    "criteria_file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Criteria file (TOML, docs/analysis.md).",
)
@click.option("--baseline", default=None, help="Run the *_ratio bounds are relative to.")
@click.option(
    "--junit",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the outcome as JUnit XML.",
)
@_RUBRIC_OPTION
@click.pass_context
def check(
    ctx: click.Context,
    ref: str,
    criteria_file: Path,
    baseline: str | None,
    junit: Path | None,
    rubric: Path | None,
) -> None:
    """Check a run against thresholds: exit 0 passed, 1 failed, 2 error."""
    try:
        criteria = crit.load_criteria(criteria_file)
    except crit.CriteriaError as e:
        fail(str(e))
    rb = _rubric(rubric)
    if junit is not None:
        check_output(junit)
    with open_store(ctx) as store:
        run = _load(store, ref)
        base = _load(store, baseline) if baseline is not None else None
    outcomes = crit.evaluate(run, criteria, base, rb)
    t = Table(title=f"Check of run #{run.id} against {criteria_file.name}", title_justify="left")
    for col in ("criterion", "bounds", "result", "detail"):
        t.add_column(col)
    for o in outcomes:
        bounds = ", ".join(f"{k} = {v:g}" for k, v in o.criterion.bounds.items())
        detail = "; ".join([o.message, *o.notes])
        _add(t, o.criterion.key, bounds, Text(o.verdict, style=_VERDICT_STYLE[o.verdict]), detail)
    out.print(t)
    code = crit.exit_code(outcomes)
    if junit is not None:
        try:
            with atomic_binary(junit) as f:
                junit_tree(outcomes, f"rtbench check run {run.id}").write(
                    f, encoding="utf-8", xml_declaration=True
                )
        except OutputError as e:
            fail(str(e))
    verdict = outcome_of_exit(code)
    out.print(Text(f"Check: {verdict}", style=f"bold {_VERDICT_STYLE[verdict]}"))
    sys.exit(code)


# --- label ------------------------------------------------------------------


@click.command()
@click.argument("ref")
@click.argument("pairs", nargs=-1, metavar="KEY=VALUE...")
@click.option("--remove", "removals", multiple=True, metavar="KEY", help="Remove this label.")
@click.pass_context
def label(ctx: click.Context, ref: str, pairs: tuple[str, ...], removals: tuple[str, ...]) -> None:
    """Set (KEY=VALUE) or remove (--remove KEY) labels of a stored run."""
    changes: dict[str, str | None] = dict(parse_labels(pairs))
    changes.update({key: None for key in removals})
    if not changes:
        fail("give KEY=VALUE pairs to set and/or --remove KEY")
    with open_store(ctx) as store:
        try:
            run_id = store.resolve(ref)
            store.set_labels(run_id, changes, merge=True)
            labels = store.load(run_id).labels
        except StoreError as e:
            fail(str(e))
    shown = ", ".join(f"{k}={v}" for k, v in labels.items()) or "(none)"
    out.print(f"run {run_id} labels: {shown}", highlight=False, markup=False)


# --- export / import --------------------------------------------------------


@contextmanager
def _output(path: Path) -> Iterator[TextIO]:
    if str(path) == "-":
        yield sys.stdout
        return
    try:
        with atomic_text(path, newline="") as f:
            yield cast(TextIO, f)
    except OutputError as e:
        fail(str(e))


@click.command()
@click.argument("ref")
@click.option(
    "--format", "fmt", type=click.Choice(["json", "csv"]), default="json", show_default=True
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Output file ('-': standard output).",
)
@click.option("--samples", is_flag=True, help="JSON: include the raw samples (large).")
@click.pass_context
def export(ctx: click.Context, ref: str, fmt: str, output: Path, samples: bool) -> None:
    """Write a run as JSON (docs/export-format.md) or CSV (one row per series)."""
    if str(output) != "-":
        check_output(output)
    with open_store(ctx) as store:
        run = _load(store, ref)
    with _output(output) as f:
        if fmt == "json":
            write_json(run, f, samples=samples)
        else:
            write_csv(run, f)
    if str(output) != "-":
        # On stderr: the output may be stdout itself (`-o /dev/stdout`).
        say(f"run {run.id} written to {output} ({fmt})")


def _store_import(
    ctx: click.Context,
    file: Path,
    labels: tuple[str, ...],
    reader: Callable[[Path], Run],
    force_copy: bool = False,
) -> None:
    """Read a run with `reader` (a ValueError says what is wrong), store it
    unless the store holds its identity already, show it."""
    label_map = parse_labels(labels)
    try:
        run = reader(file)
        if not run.uuid:  # written before identities: the file's digest is one
            run.uuid = identity.of_content(file.read_bytes())
    except ValueError as e:
        fail(f"{file}: {e}")
    except OSError as e:
        fail(f"{file}: {e.strerror or e}")
    run.labels = {**run.labels, **label_map}
    with open_store(ctx) as store:
        try:
            store.save(run, copy=force_copy)
        except AlreadyStored as e:
            run.id = e.run_id
            render_run(run, out)
            say(
                f"{file}: this run ({e.identity}) is already stored as run {e.run_id}; "
                "nothing stored (--force-copy stores a copy with a new identity)"
            )
            sys.exit(exit_code(run.outcome))
        except StoreError as e:
            fail(str(e))
    render_run(run, out)
    out.print(f"stored as run {run.id}", style="dim", highlight=False)
    sys.exit(exit_code(run.outcome))


_FILE = click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
_LABELS = click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Tag the run.")
_FORCE_COPY = click.option(
    "--force-copy",
    is_flag=True,
    help="Store it even when the store holds this run already, as a copy with a new identity.",
)


@click.command(name="import-cyclictest")
@_FILE
@_LABELS
@_FORCE_COPY
@click.pass_context
def import_cyclictest(
    ctx: click.Context, file: Path, labels: tuple[str, ...], force_copy: bool
) -> None:
    """Store rt-tests' `cyclictest --json=FILE` output as a run (a case per thread)."""
    _store_import(ctx, file, labels, read_cyclictest, force_copy)


@click.command(name="import")
@_FILE
@_LABELS
@_FORCE_COPY
@click.pass_context
def import_export(
    ctx: click.Context, file: Path, labels: tuple[str, ...], force_copy: bool
) -> None:
    """Store a run from an `rtbench export --format json` file (e.g. from another store).

    A run the store holds already (the same identity) is not stored again."""
    _store_import(ctx, file, labels, read_json, force_copy)


def register(main: click.Group) -> None:
    """Adds this module's commands to the `rtbench` group."""
    for command in (analyze, compare, check, label, export, import_export, import_cyclictest):
        main.add_command(command)
