"""The HTML and Markdown reports (rtbench.reports.html / markdown / charts).

Runs are built with StreamWriter, so every figure, warning and check in them
is known; the reports must show all of it, escaped, and say what they
cannot show (no CAL-REF: no scores; no raw samples: histogram only)."""

from __future__ import annotations

import html as html_lib
import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from rtbench.analysis.evt import worst_case
from rtbench.cli import main
from rtbench.model import Histogram, Run, Series, StreamIssue
from rtbench.reference import figures_for
from rtbench.reports import charts, svgchart
from rtbench.reports.html import html_report, render_html
from rtbench.reports.jitter import jitter_table
from rtbench.reports.markdown import md_escape, render_markdown
from rtbench.stream import StreamWriter, assemble, default_hello, parse_lines

HOSTILE = "<script>window.__pwned=1</script><img src=x onerror=alert(1)>"
CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_corpus", CORPUS / "make_corpus.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


log2_counts = _generator().log2_counts


def series(
    w: StreamWriter,
    case: str,
    name: str,
    values: list[int],
    samples: bool = True,
    **point: int | str,
) -> None:
    """A series as the agent sends it: samples (optional), hist, summary."""
    if samples:
        w.samples(case, name, values, point=point or None)
    stats: dict[str, Any] = {
        "n": len(values),
        "min": min(values),
        "max": max(values),
        "sum": sum(values),
    }
    layout = {"kind": "log2", "sub_bits": 3}
    positive = [v for v in values if v >= 0]
    w.hist(
        case,
        name,
        layout=layout,
        counts=log2_counts(positive, 3),
        point=point or None,
        underflow=len(values) - len(positive),
        **stats,
    )
    w.summary(case, name, point=point or None, **stats)


def gumbel(seed: int, n: int, loc: float, scale: float) -> list[int]:
    rng = np.random.default_rng(seed)
    return [int(x) for x in rng.gumbel(loc, scale, n)]


def make_run(
    *,
    cal_ref: bool = True,
    samples: bool = True,
    realtime: bool = True,
    factor: float = 1.0,
    labels: dict[str, str] | None = None,
) -> Run:
    """CAL-REF (optional), THR-SW at n=2 and 5, SEM-SHF with a failed check,
    warnings run-wide and per case, and a stream issue."""
    w = StreamWriter()
    hello = default_hello(["CAL-REF", "THR-SW", "SEM-SHF"])
    if not realtime:
        hello["realtime"] = {"ok": False, "policy": "SCHED_OTHER", "detail": "SCHED_FIFO refused"}
    w.hello(hello)
    if not realtime:
        w.warn("not_realtime", "figures measured without real-time priority")
    if cal_ref:
        w.begin("CAL-REF", "Hardware calibration unit", {"repeats": 50})
        series(w, "CAL-REF", "t_std", [3000 + i % 7 for i in range(50)], samples)
        w.end("CAL-REF", "passed", duration_ns=1_000_000)
    w.begin("THR-SW", "Switch between threads", {"n": [2, 5]})
    for n, loc in ((2, 900), (5, 1200)):
        values = [int(v * factor) for v in gumbel(n, 20_000, loc, 40)]
        series(w, "THR-SW", "switch", values, samples, n=n)
        w.check("THR-SW", "rotation", "pass", f"n={n}: 0 out of turn")
    w.warn("tick_in_window", "3 scheduler ticks fell in the window", case="THR-SW")
    w.end("THR-SW", "passed", duration_ns=400_000_000)
    w.begin("SEM-SHF", "Semaphore shuffle")
    series(
        w, "SEM-SHF", "give_to_run", [int(v * factor) for v in gumbel(7, 5000, 1500, 60)], samples
    )
    w.check("SEM-SHF", "order", "fail", "B ran before A gave | twice")
    w.warn("overrun", "the period was overrun 4 times", case="SEM-SHF")
    w.end("SEM-SHF", "failed", duration_ns=300_000_000)
    w.warn("affinity", "CPU 1 shares a core with CPU 0")
    w.bye()
    parsed = parse_lines(w.lines)
    run = assemble(parsed.records, parsed.issues, parsed.log)
    run.issues.append(StreamIssue("gap", "records 40-41 missing", line=40))
    run.labels = labels or {}
    run.id = 7
    return run


@pytest.fixture(scope="module")
def run() -> Run:
    return make_run(labels={"board": "pc", "note": HOSTILE})


@pytest.fixture(scope="module")
def html(run: Run) -> str:
    return html_report([run])


@pytest.fixture(scope="module")
def md(run: Run) -> str:
    return render_markdown([run])


# --- escaping ----------------------------------------------------------------


def test_hostile_label_is_text_in_html(html: str) -> None:
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<script" not in html.lower()
    assert "<img" not in html.lower()
    # also in the title element, the first place a reader sees the label
    title = re.search(r"<title>(.*?)</title>", html, re.S)
    assert title and "&lt;script&gt;" in title.group(1)


def test_page_forbids_scripts_and_network(html: str) -> None:
    csp = re.search(r'Content-Security-Policy" content="([^"]*)"', html)
    assert csp and "default-src 'none'" in csp.group(1)
    assert not re.search(r"(src|href)=\"(https?:)?//", html)


def test_hostile_label_is_text_in_markdown(md: str) -> None:
    assert md_escape(HOSTILE) in md
    assert not re.search(r"(?<!\\)<", md), "an unescaped < could open an HTML tag"


def test_md_escape() -> None:
    assert md_escape("a|b") == r"a\|b"
    assert md_escape("[x](http://e)") == r"\[x\](http://e)"
    assert md_escape("*bold* _em_ give_to_run") == r"\*bold\* \_em\_ give_to_run"
    assert md_escape("two\nlines") == "two lines"
    assert md_escape(None) == "-"


def test_chart_text_is_escaped() -> None:
    s = make_run().case("SEM-SHF")
    assert s is not None
    svg = charts.overlay_svg(f"title {HOSTILE} $x$", [(HOSTILE, s.series[0]), ("$b$", s.series[0])])
    assert svg is not None
    assert "<script" not in svg and "<img" not in svg
    assert "&lt;script&gt;" in svg


# --- content -------------------------------------------------------------------


def test_every_warning_check_and_issue_appears(run: Run, html: str, md: str) -> None:
    warnings = run.all_warnings()
    assert {w.code for w in warnings} >= {"tick_in_window", "overrun", "affinity"}
    for w in warnings:
        assert w.code in html and w.detail in html
        assert md_escape(w.detail) in md
    checks = [ch for c in run.cases for ch in c.checks]
    assert len(checks) == 3
    for ch in checks:
        assert ch.detail in html and md_escape(ch.detail) in md
    assert "records 40-41 missing" in html and "records 40-41 missing" in md
    # the severe ones are in red
    assert re.search(r'<li class="severe"><code>overrun</code>', html)
    assert re.search(r'<li class="warn"><code>affinity</code>', html)


def test_not_realtime_is_a_red_banner_at_the_top() -> None:
    run = make_run(realtime=False)
    page = html_report([run])
    banner = page.index('id="not-realtime"')
    assert banner < page.index('id="overview"')
    assert "SCHED_FIFO refused" in page
    assert re.search(r'<li class="severe"><code>not_realtime</code>', page)
    assert "NOT REAL-TIME" in render_markdown([run])


def test_histogram_chart_per_series_name_and_series_over_time(run: Run, html: str) -> None:
    names = {(c.case, s.name) for c in run.cases for s in c.series}
    assert len(names) == 3
    for case, name in names:
        assert f"<title>histogram of {case} {name}</title>" in html
    # the sweep's points on one chart, each max in its legend
    chart = html[html.index("<title>histogram of THR-SW switch</title>") :]
    chart = chart[: chart.index("</svg>")]
    assert "switch[n=2]: max" in chart and "switch[n=5]: max" in chart
    # one series over time per case (its worst series), not one per series
    assert html.count(" over time</title>") == len(run.cases) == 3
    assert html.count("<title>THR-SW switch[") == 1
    # + the summary's two charts and the determinism curve
    assert html.count("<svg") == len(names) + 3 + 2 + 1


def test_svg_ids_are_unique(html: str) -> None:
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))


def test_run_without_samples_renders_from_histograms() -> None:
    run = make_run(samples=False)
    assert all(s.samples is None for c in run.cases for s in c.series)
    page = html_report([run])
    for c in run.cases:
        for s in c.series:
            assert f"<title>histogram of {c.case} {s.name}</title>" in page
    assert "over time</title>" not in page
    assert "histogram only (no raw samples kept)" in page
    assert "≤" in page  # percentiles known to their bucket only, and marked so
    assert "Worst-case estimate" not in page  # needs raw samples
    assert "percentiles are bucket bounds" in render_markdown([run])


def test_no_cal_ref_means_no_scores() -> None:
    run = make_run(cal_ref=False)
    assert run.t_std_ns is None
    assert "Scores unavailable: this run has no CAL-REF" in html_report([run])
    assert "Scores unavailable: this run has no CAL-REF" in render_markdown([run])


def test_scores_ratings_and_composite(html: str, md: str) -> None:
    assert "Scores unavailable" not in html
    assert "mean score" in html and "mean score" in md
    assert "composite score" in html
    assert 'class="stars"' in html  # the rubric rates THR-SW and SEM-SHF


def test_determinism_curve_for_the_sweep(html: str, md: str) -> None:
    assert "Determinism: switch against n" in html
    assert "<title>THR-SW switch: mean and max against n</title>" in html
    assert "Determinism: switch against n" in md


def test_published_figures_beside_matching_series(run: Run, html: str, md: str) -> None:
    assert figures_for("THR-SW", "switch", {"n": 2})  # the reference data has some
    # one box per case, each published row once, beside the series it places
    assert html.count("Published, other hardware: THR-SW") == 1
    assert "Published, other hardware: switch" not in html
    assert "Published, other hardware: THR-SW" in md
    assert "BeagleBoard-xM" in html


def test_a_comparison_shows_the_published_figures_once() -> None:
    # A campaign over kernels repeats a study: its figures stand beside the
    # compared cases once, whatever the number of columns.
    a, b = make_run(), make_run(factor=1.2)
    b.id = 8
    page, text = html_report([a, b]), render_markdown([a, b])
    assert page.count('<section id="published">') == 1
    section = page.split('<section id="published">')[1].split("</section>")[0]
    rows = re.findall(r"<tr><td>THR-SW .*?</tr>", section)
    assert rows and len(rows) == len(set(rows))  # each published row once
    assert "BeagleBoard-xM" in page
    assert "## Published, other hardware" in text
    # the control: no case with published figures, no section
    w = StreamWriter()
    w.hello(default_hello(["CAL-REF"]))
    w.begin("CAL-REF", "Hardware calibration unit", {"repeats": 50})
    series(w, "CAL-REF", "t_std", [3000 + i % 7 for i in range(50)])
    w.end("CAL-REF", "passed", duration_ns=1_000_000)
    w.bye()
    parsed = parse_lines(w.lines)
    only = assemble(parsed.records, parsed.issues, parsed.log)
    assert not figures_for("CAL-REF", "t_std", {})
    assert '<section id="published">' not in html_report([only, only])


def test_worst_case_estimate_labelled_as_estimate(run: Run, html: str) -> None:
    thr = run.case("THR-SW")
    assert thr is not None and thr.series[0].samples is not None
    evt = worst_case(thr.series[0].samples)
    if evt.valid:
        assert "Worst-case estimate (an estimate, not a guarantee)" in html
    assert evt.verdict.replace("'", "&#39;") in html


def test_machine_metadata(run: Run, html: str, md: str) -> None:
    assert "Test CPU" in html and "cpu.model" in html
    assert "clock.read_overhead_ns" in md


# --- comparison ------------------------------------------------------------------


def test_comparison_shows_ratios_and_overlays() -> None:
    a, b = make_run(), make_run(factor=2.0, labels={"kernel": "slow"})
    b.id = 8
    page = html_report([a, b])
    text = render_markdown([a, b])
    assert "rtbench comparison: run 7 vs run 8 (kernel=slow)" in page
    assert "2.000×" in page and "2.000×" in text  # every max doubled
    # One run per side: no test, and the report says why.
    assert "none: one run per side" in page and "No test:" in page and "--repeat" in page
    assert "<title>THR-SW switch[n=2]</title>" in page  # an overlaid histogram
    assert "ratio 2/1" in text


# --- markdown shape ----------------------------------------------------------------


def _cells(line: str) -> int:
    return len(re.split(r"(?<!\\)\|", line.strip())) - 2


def _tables(text: str) -> list[list[str]]:
    tables: list[list[str]] = []
    current: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return tables


@pytest.mark.parametrize("which", ["run", "comparison"])
def test_markdown_tables_are_well_formed(which: str, run: Run, md: str) -> None:
    text = md if which == "run" else render_markdown([run, make_run(factor=1.5)])
    tables = _tables(text)
    assert len(tables) >= (4 if which == "run" else 1)
    for t in tables:
        assert len(t) >= 2, t
        assert re.fullmatch(r"\|(-+:?\|)+", t[1]), t[1]
        widths = {_cells(line) for line in t}
        assert len(widths) == 1, t
    # no table runs into a paragraph: a blank line before each
    for t in tables:
        before = text.splitlines()[text.splitlines().index(t[0]) - 1]
        assert before == ""


# --- jitter table (JIT-PER) ---------------------------------------------------------


def _jit_run(samples: bool) -> Run:
    w = StreamWriter()
    w.hello()
    w.begin("JIT-PER", "Periodic task release jitter", {"period_us": 1000})
    values = [0, -500, 999, -1000, 9999, 2500, -10_000, 19_999, 55_000, -150_000]
    series(w, "JIT-PER", "deviation", values, samples)
    series(w, "JIT-PER", "interval", [1_000_000 + v for v in values], samples)
    series(w, "JIT-PER", "latency", [abs(v) for v in values], samples)
    w.end("JIT-PER", "passed")
    w.bye()
    parsed = parse_lines(w.lines)
    return assemble(parsed.records, parsed.issues, parsed.log)


def test_jitter_categories_known_answer() -> None:
    run = _jit_run(samples=True)
    c = run.case("JIT-PER")
    assert c is not None
    table = jitter_table(c.series[0])
    assert table is not None and table.exact
    counts = {r.label: r.count for r in table.rows}
    assert counts["0"] == 3 and counts["1-9"] == 3 and counts["10-99"] == 3
    assert counts["10-19"] == 2 and counts["50-59"] == 1 and counts["≥ 100"] == 1
    top = [r for r in table.rows if not r.sub]
    assert sum(r.count for r in top) == table.n == 10
    # beside it, the published table (5000 periods), its 10 µs bins summed
    published = {r.label: r.published for r in table.rows}
    assert published["10-99"] == 162
    assert sum(r.published or 0 for r in top) == 5000
    assert table.published_source.startswith("[E]")
    page = html_report([run])
    assert "Release jitter categories: deviation" in page
    assert "Release jitter categories: interval" not in page
    assert "Release jitter categories: latency" not in page


def test_jitter_from_histogram_conserves_counts() -> None:
    run = _jit_run(samples=False)
    c = run.case("JIT-PER")
    assert c is not None
    table = jitter_table(c.series[0])
    assert table is not None
    assert sum(r.count for r in table.rows if not r.sub) == table.n == 10
    # log2 buckets (3 sub-bits) straddle the 1 µs and 10 µs boundaries here,
    # and log2 histograms count the negative deviations as underflow
    assert not table.exact and table.note


def test_jitter_from_a_linear_histogram_counts_both_signs() -> None:
    """JIT-PER's own layout: 1 µs buckets around 0; negative deviations
    count by their magnitude (approximate where a bucket spans two)."""
    values = [0, -1000, 3000, -3000, 12_000, -47_000, 250_000]
    lo, width = -1_023_000, 1000
    counts: dict[int, int] = {}
    for v in values:
        counts[(v - lo) // width] = counts.get((v - lo) // width, 0) + 1
    hist = Histogram(
        {"kind": "linear", "lo": lo, "width": width, "buckets": 2047},
        sorted(counts.items()),
        n=len(values),
        min=min(values),
        max=max(values),
        sum=sum(values),
    )
    table = jitter_table(Series("JIT-PER", "deviation", hist=hist, n=len(values)))
    assert table is not None
    got = {r.label: r.count for r in table.rows}
    assert sum(r.count for r in table.rows if not r.sub) == table.n == len(values)
    assert (got["10-19"], got["40-49"], got["≥ 100"]) == (1, 1, 1)
    assert got["0"] + got["1-9"] == 4


# --- charts ---------------------------------------------------------------------------


def test_downsample_keeps_spikes() -> None:
    values = np.full(100_000, 1000, dtype=np.int64)
    values[31_337] = 999_999
    values[77_000] = 3
    x, lo, hi = charts.downsample_minmax(values, 500)
    assert len(x) == len(lo) == len(hi) == 500
    assert hi.max() == 999_999 and lo.min() == 3
    assert np.all(lo <= hi)
    small = np.arange(10, dtype=np.int64)
    x, lo, hi = charts.downsample_minmax(small, 500)
    assert list(hi) == list(range(10)) and len(x) == 10


def test_dense_fills_gaps() -> None:
    bars = [charts.Bar(0, 1, 5), charts.Bar(4, 8, 2)]
    edges, counts = charts.dense(bars)
    assert list(edges) == [0, 1, 4, 8] and list(counts) == [5, 0, 2]


# --- the command ------------------------------------------------------------------------


def test_report_command(tmp_path: Path) -> None:
    stream = tmp_path / "run.rtb"
    stream.write_text((CORPUS / "good_small.rtb").read_text())
    runner = CliRunner()
    db = str(tmp_path / "db.sqlite")
    result = runner.invoke(main, ["--db", db, "report", str(stream), "-o", "-"])
    assert result.exit_code == 0, result.output
    # The report on stdout; what rtbench is doing goes to stderr.
    assert result.stdout.startswith("# rtbench report")
    assert "writing the report" in result.stderr
    assert "tick\\_in\\_window" in result.stdout or "tick_in_window" in result.stdout
    out = tmp_path / "r.html"
    result = runner.invoke(main, ["--db", db, "report", str(stream), str(stream), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert "rtbench comparison" in out.read_text()
    md_out = tmp_path / "r.md"
    result = runner.invoke(main, ["--db", db, "report", str(stream), "-o", str(md_out)])
    assert result.exit_code == 0, result.output
    assert md_out.read_text().startswith("# rtbench report")
    missing = runner.invoke(main, ["--db", db, "report", "42", "-o", "-"])
    assert missing.exit_code == 2


def test_render_html_writes_a_file(tmp_path: Path, run: Run) -> None:
    path = tmp_path / "report.html"
    render_html([run], path)
    assert path.read_text(encoding="utf-8").rstrip().endswith("</html>")
    with pytest.raises(ValueError):
        html_report([])


def test_comparison_leads_with_what_changed_in_the_tested_figure() -> None:
    a, b = make_run(), make_run(factor=2.0, labels={"kernel": "slow"})
    b.id = 8
    # Two runs per side: the test is over runs.
    a2, b2 = make_run(factor=1.05), make_run(factor=2.1, labels={"kernel": "slow"})
    members = [[a, a2], [b, b2]]
    page = html_report([a, b], members=members)
    lead = page[page.index('id="changed"') : page.index('id="runs"')]
    assert page.index('id="changed"') < page.index('id="comparison"')
    assert "max, by the Welch&#39;s t-test on the per-run max" in lead
    assert "switch[n=2]" in lead and "give_to_run" in lead and "2.000×" in lead
    assert "differ beyond run-to-run noise" in lead and "No test" not in lead
    md = render_markdown([a, b], members=members)
    assert md.index("## Differs beyond run-to-run noise (max") < md.index("## Runs")
    # negative control: a configuration against itself differs in nothing
    same = html_report([a, make_run()], members=[[a, a2], [make_run(), make_run(factor=1.03)]])
    assert "No difference beyond run-to-run noise in the max" in same
    # one run per side: no lead, the reason instead
    one = html_report([a, b])
    one = one[one.index('id="changed"') : one.index('id="runs"')]
    assert "No test:" in one and "one run per side" in one and "2.000×" not in one


def _texts_outside(svg: str) -> list[str]:
    """Text elements of a chart whose estimated extent (the widths the
    chart lays out with) leaves its viewBox."""
    width, height = (float(v) for v in re.findall(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg)[0])
    default = float(re.findall(r'<svg[^>]*font-size="([\d.]+)"', svg)[0])
    out = []
    for attrs, text in re.findall(r"<text ([^>]*)>([^<]*)</text>", svg):
        x, y = (float(v) for v in re.findall(r'\b[xy]="([-\d.]+)"', attrs)[:2])
        size = float((re.findall(r'font-size="([\d.]+)"', attrs) or [default])[0])
        w = svgchart.text_width(html_lib.unescape(text), size)
        anchor = (re.findall(r'text-anchor="(\w+)"', attrs) or ["start"])[0]
        start = {"start": 0.0, "middle": -w / 2, "end": -w}[anchor]
        along, across = (start, start + w), (-size * 0.8, size * 0.25)  # baseline-relative
        if "rotate(-90" in attrs:  # reads upwards: along the text is -y
            box = (x + across[0], y - along[1], x + across[1], y - along[0])
        else:
            box = (x + along[0], y + across[0], x + along[1], y + across[1])
        if box[0] < 0 or box[1] < 0 or box[2] > width or box[3] > height:
            out.append(f"{text}: {box} outside {width} x {height}")
    return out


def test_chart_text_stays_inside_the_chart() -> None:
    """Every label of every chart of a report (long titles, wide values,
    both signs, legends) lies inside its chart: the canvas grows to hold
    what is written (the browser test checks the same with real fonts)."""
    from rtbench.reports.content import run_view

    w = StreamWriter()
    w.hello(default_hello(["CLK-RES", "JIT-PER"]))
    w.begin("CLK-RES", "Timer granularity")
    series(w, "CLK-RES", "overshoot", [10**k + k for k in range(2, 9)] * 40)
    w.end("CLK-RES", "passed", duration_ns=1)
    w.begin("JIT-PER", "Jitter")
    series(w, "JIT-PER", "latency", [(-1) ** i * 37 * i for i in range(4000)])
    w.end("JIT-PER", "passed", duration_ns=1)
    w.bye()
    parsed = parse_lines(w.lines)
    wide = assemble(parsed.records, parsed.issues, parsed.log)
    svgs: list[str] = []
    for r in (make_run(), wide):
        view = run_view(r)
        assert view.summary is not None
        svgs += [x for x in (view.summary.histogram, view.summary.exceedance) if x]
        for c in view.cases:
            svgs += [*c.charts, *([c.timeseries] if c.timeseries else [])]
            svgs += [cv.svg for cv in c.curves if cv.svg]
    assert len(svgs) >= 8
    clipped = [f"{title}: {t}" for svg in svgs
               for title in re.findall(r"<title>(.*?)</title>", svg)[:1]
               for t in _texts_outside(svg)]  # fmt: skip
    assert not clipped, clipped


def _path_points(d: str) -> list[tuple[float, float]]:
    nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", d)]
    return list(zip(nums[::2], nums[1::2], strict=True))


def test_histogram_bars_are_the_known_counts() -> None:
    """Known answer: a histogram of counts 1, 10, 100, 1000 and 30 in
    buckets [10, 11), [11, 12), [12, 13), [13, 14) and [20, 21) µs is drawn
    as steps whose heights above the floor (half a count) are log10(2c)
    in one pixel scale, at those x positions in one scale, and empty
    buckets between them at the floor; the max is marked where it is."""
    counts = {0: 1, 1: 10, 2: 100, 3: 1000, 10: 30}
    hist = Histogram(
        {"kind": "linear", "lo": 10_000, "width": 1000, "buckets": 64},
        sorted(counts.items()),
        n=sum(counts.values()),
        min=10_000,
        max=20_999,
        sum=0,
    )
    s = Series("CASE-X", "latency", hist=hist, n=hist.n, min=10_000, max=20_999)
    svg = charts.group_svg("CASE-X", "latency", [s])
    assert svg is not None
    filled = re.findall(r'<path d="([^"]*) Z" fill="#1f77b4"', svg)
    assert len(filled) == 1
    pts = _path_points(filled[0])
    base = pts[0][1]
    assert pts[-1][1] == base  # closed down to the floor at both ends
    steps = pts[1:-1]  # (x0, y), (x1, y) per bucket, the gap as one bucket
    levels = [y for (_, y), (_, y2) in zip(steps[::2], steps[1::2], strict=True) if y == y2]
    heights = [base - y for y in levels]
    expected = [1, 10, 100, 1000, 0, 30]  # the gap [14, 20) at the floor
    assert len(heights) == len(expected)
    assert heights[4] == pytest.approx(0, abs=0.1)
    per_decade = (heights[3] - heights[0]) / 3  # 1 to 1000: three decades
    for h, c in zip(heights, expected, strict=True):
        want = np.log10(2 * c) * per_decade if c else 0.0
        assert h == pytest.approx(want, abs=0.25), (heights, expected)
    xs = sorted({x for x, _ in steps})
    per_us = (xs[-1] - xs[0]) / 11  # 10 to 21 µs
    for x, edge in zip(xs, [10, 11, 12, 13, 14, 20, 21], strict=True):
        assert x - xs[0] == pytest.approx((edge - 10) * per_us, abs=0.25)
    # the max (20.999 µs): a dashed line inside the last bucket
    mark = re.findall(r'<path d="([^"]*)" fill="none" stroke="#d62728"[^>]*dasharray', svg)
    assert len(mark) == 1
    mx = _path_points(mark[0])[0][0]
    assert mx - xs[0] == pytest.approx((20.999 - 10) * per_us, abs=0.25)
    assert "max 20.999 µs" in svg and "n = 1141" in svg
