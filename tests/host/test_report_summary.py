"""The run report's first screen: the result, the findings, one latency
histogram and one exceedance plot; and the size of a quick-suite report.

A 3 ms spike among 2000 wake-ups of ~10 µs must show in both charts and be
named on the first screen; without it (the negative control) nothing is
called a spike. The size test renders a run shaped like a real quick-suite
run (tests/corpus/quick_suite_shape.json: every series' case, name, point,
unit, kind, n and range, from a stored run; samples drawn seeded)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from rtbench.model import CaseResult, Histogram, Run, Series
from rtbench.reports import plots
from rtbench.reports.html import html_report
from rtbench.reports.markdown import render_markdown
from rtbench.reports.summary import summarize
from rtbench.stream import default_hello

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
SPIKE = 3_000_000  # ns


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_corpus", CORPUS / "make_corpus.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


log2_counts = _generator().log2_counts


def _hist(values: np.ndarray, layout: dict[str, Any]) -> Histogram:
    if layout.get("kind") == "linear":
        lo, width = int(layout["lo"]), int(layout["width"])
        idx, counts = np.unique((values - lo) // width, return_counts=True)
        cells = [(int(i), int(c)) for i, c in zip(idx, counts, strict=True)]
        under = 0
    else:
        positive = values[values >= 0]
        cells = log2_counts([int(v) for v in positive], int(layout["sub_bits"]))
        under = int(len(values) - len(positive))
    return Histogram(
        layout, cells, len(values), int(values.min()), int(values.max()), int(values.sum()), under
    )


def _series(case: str, name: str, values: np.ndarray, kind: str = "latency", **kw: Any) -> Series:
    values = values.astype(np.int64)
    layout = kw.pop("layout", {"kind": "log2", "sub_bits": 5})
    keep = kw.pop("keep", True)
    return Series(
        case,
        name,
        kw.pop("point", {}),
        kw.pop("unit", "ns"),
        samples=values if keep else None,
        hist=_hist(values, layout),
        n=len(values),
        min=int(values.min()),
        max=int(values.max()),
        sum=int(values.sum()),
        kind=kind,
    )


def _run(cases: list[CaseResult]) -> Run:
    hello = default_hello([c.case for c in cases])
    run = Run(hello=hello, cases=cases, bye={"cases": len(cases)})
    run.id = 1
    return run


def _jitter_run(spike: bool) -> Run:
    rng = np.random.default_rng(3)
    latency = rng.lognormal(np.log(10_000), 0.2, 2000)
    if spike:
        latency[1234] = SPIKE
    deviation = rng.normal(0, 4000, 2000)
    jit = CaseResult("JIT-PER", "Periodic task release jitter", outcome="passed")
    jit.series = [
        _series("JIT-PER", "latency", latency),
        _series(
            "JIT-PER",
            "deviation",
            deviation,
            kind="duration",
            layout={"kind": "linear", "lo": -1_023_000, "width": 1000, "buckets": 2047},
        ),
    ]
    sem = CaseResult("SEM-SHF", "Semaphore shuffle", outcome="passed")
    sem.series = [_series("SEM-SHF", "give_to_run", rng.lognormal(np.log(900), 0.1, 5000))]
    return _run([jit, sem])


def _first_screen(page: str) -> str:
    """What precedes the collapsed details: the summary section."""
    start = page.index('id="summary"')
    return page[start : page.index("</section>", start)]


def test_spike_is_named_and_drawn() -> None:
    run = _jitter_run(spike=True)
    sm = summarize(run)
    assert sm.spike is not None and sm.spike.series.label == "latency"
    assert sm.spike.index == 1234
    assert sm.findings[0].level == "bad" and "Spike: 3000.000 µs in JIT-PER latency" in (
        sm.findings[0].text
    )
    # the chart's lines: latencies only (the deviation is a duration), worst first
    assert [ln.label for ln in sm.lines] == ["JIT-PER latency", "SEM-SHF give_to_run"]
    edges = plots._edges(sm.lines)
    counts = plots._counts(sm.lines[0].series, edges)
    assert edges[-1] > SPIKE and counts[np.searchsorted(edges, SPIKE) - 1] == 1
    xs, ys = plots._survival(sm.lines[0].series, edges)
    assert ys[-1] == pytest.approx(1 / 2000) and xs[-1] <= SPIKE
    screen = _first_screen(html_report([run]))
    assert "Spike: 3000.000 µs in JIT-PER latency (sample 1235 of 2000)" in screen
    hist = re.search(r"<svg.*?<title>latency histogram of the run</title>.*?</svg>", screen, re.S)
    exceed = re.search(r"<svg.*?<title>exceedance plot of the run</title>.*?</svg>", screen, re.S)
    assert hist and exceed
    assert "JIT-PER latency: max 3000.000" in hist.group() and "max 3000.000" in hist.group()
    assert ">1000<" in exceed.group()  # the x axis reaches the spike's decade


def test_without_a_spike_nothing_is_called_one() -> None:
    run = _jitter_run(spike=False)
    sm = summarize(run)
    assert sm.spike is None
    assert not any("Spike" in f.text for f in sm.findings)
    assert any(f.text.startswith("no spike") for f in sm.findings)
    screen = _first_screen(html_report([run]))
    assert "3000.000" not in screen


def test_markdown_opens_with_the_summary() -> None:
    text = render_markdown([_jitter_run(spike=True)])
    head = text[: text.index("# Details")]
    assert "## Summary" in head and "Spike: 3000.000 µs in JIT-PER latency" in head
    assert "| JIT-PER latency | 2000 |" in head


def test_deviation_histogram_shows_negative_values() -> None:
    page = html_report([_jitter_run(spike=False)])
    chart = re.search(r"<svg.*?<title>histogram of JIT-PER deviation</title>.*?</svg>", page, re.S)
    assert chart
    # a symmetric linear axis: tick labels on both sides of 0
    ticks = [
        float(t.replace("−", "-")) for t in re.findall(r">(−?\d+(?:\.\d+)?)</text>", chart.group())
    ]
    assert min(ticks) < 0 < max(ticks)
    assert "|deviation|" in page and "|wake-up latency|" not in page


# --- size ----------------------------------------------------------------------------


def _quick_like() -> Run:
    shape = json.loads((CORPUS / "quick_suite_shape.json").read_text())
    rng = np.random.default_rng(11)
    cases: dict[str, CaseResult] = {
        c: CaseResult(c, title, outcome=outcome) for c, title, outcome in shape["cases"]
    }
    for d in shape["series"]:
        n, lo, hi = d["n"], d["min"], d["max"]
        if lo is None or n == 0:
            continue
        if "p50" in d and n > 2 and hi > lo:
            p50, p99 = max(d["p50"], 1), max(d["p99"], d["p50"] + 1)
            sigma = max(np.log(p99 / p50) / 2.326, 0.01)
            v = np.clip(rng.lognormal(np.log(p50), sigma, n), lo, hi)
            tail = max(1, n // 10_000)
            v[rng.integers(0, n, tail)] = np.geomspace(max(p99, 1), hi, tail)
            v[0], v[-1] = lo, hi
        else:
            v = np.linspace(lo, hi, max(n, 1))
        s = _series(
            d["case"], d["name"], v, kind=d["kind"], point=d["point"], unit=d["unit"],
            layout=d.get("hist", {"kind": "log2", "sub_bits": 5}), keep=d["samples"],
        )  # fmt: skip
        cases[d["case"]].series.append(s)
    return _run(list(cases.values()))


def test_quick_suite_report_is_under_a_megabyte() -> None:
    run = _quick_like()
    assert sum(len(c.series) for c in run.cases) >= 90
    page = html_report([run])
    size = len(page.encode("utf-8"))
    assert size < 1_000_000, size
    # the details are collapsed, and each case has a closed <details>
    assert page.count('<details class="case block"') == len(run.cases)
    assert "<details open" not in page
