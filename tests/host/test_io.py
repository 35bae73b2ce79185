"""Exports (JSON round trip, CSV) and the cyclictest JSON import."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from test_analysis_fixtures import C, S, build_run, cal_ref

from rtbench.analysis.stats import series_stats
from rtbench.io.cyclictest import CyclictestError, parse_cyclictest
from rtbench.io.export import (
    CSV_COLUMNS,
    SCHEMA,
    SCHEMA_VERSION,
    ExportError,
    run_from_export,
    write_csv,
    write_json,
)
from rtbench.model import Run


def sample_run(samples: bool = True) -> Run:
    run = build_run(
        [
            cal_ref(1000),
            C("THR-SW", [S("switch", list(range(100, 5100)), {"n": n}) for n in (2, 10)],
              checks=[("rotation", "pass")]),
            C("SEM-SHF", [S("give_to_run", [int(v) for v in
                                             np.random.default_rng(1).lognormal(8, 1, 3000)])]),
        ],
        samples=samples,
    )  # fmt: skip
    run.labels = {"board": "rpi<4>"}
    return run


def export(run: Run, samples: bool) -> dict[str, object]:
    buf = io.StringIO()
    write_json(run, buf, samples=samples)
    doc = json.loads(buf.getvalue())
    assert isinstance(doc, dict)
    return doc


@pytest.mark.parametrize("samples", [True, False])
def test_json_round_trip(samples: bool) -> None:
    run = sample_run(samples=samples)
    doc = export(run, samples=True)
    assert (doc["schema"], doc["schema_version"]) == (SCHEMA, SCHEMA_VERSION)
    back = run_from_export(doc)
    assert back.labels == run.labels and back.hello == run.hello and back.outcome == "passed"
    assert [c.case for c in back.cases] == [c.case for c in run.cases]
    for c0, c1 in zip(run.cases, back.cases, strict=True):
        assert [(ch.name, ch.verdict) for ch in c0.checks] == [
            (ch.name, ch.verdict) for ch in c1.checks
        ]
        for s0, s1 in zip(c0.series, c1.series, strict=True):
            assert (s1.key, s1.n, s1.min, s1.max, s1.sum) == (s0.key, s0.n, s0.min, s0.max, s0.sum)
            assert s1.hist == s0.hist
            if samples:
                assert s0.samples is not None and s1.samples is not None
                assert np.array_equal(s0.samples, s1.samples)
            else:
                assert s1.samples is None
            assert series_stats(s1) == series_stats(s0)


def test_json_holds_the_derived_figures_and_leaves_samples_out_by_default() -> None:
    doc = export(sample_run(), samples=False)
    cases = doc["cases"]
    assert isinstance(cases, list)
    switch = cases[1]["series"][0]
    assert switch["samples"] is None and switch["point_key"] == "n=2"
    assert switch["stats"]["percentiles"]["p50"] == {"value": 2599.0, "lo": 2599.0, "hi": 2599.0}
    assert switch["scores"]["mean"] == pytest.approx(2.5995)
    run = doc["run"]
    assert isinstance(run, dict) and run["t_std_ns"] == 1000.0


def test_bad_exports_are_refused() -> None:
    with pytest.raises(ExportError, match="not an rtbench export"):
        run_from_export({"schema": "other"})
    with pytest.raises(ExportError, match="schema version 99"):
        run_from_export({"schema": SCHEMA, "schema_version": 99})
    with pytest.raises(ExportError, match="damaged"):
        run_from_export({"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "run": {}})


def test_csv_has_one_row_per_series() -> None:
    buf = io.StringIO()
    write_csv(sample_run(samples=False), buf)
    rows = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert [(r["case"], r["series"], r["point"]) for r in rows] == [
        ("CAL-REF", "t_std", ""),
        ("THR-SW", "switch", "n=2"),
        ("THR-SW", "switch", "n=10"),
        ("SEM-SHF", "give_to_run", ""),
    ]
    sw = rows[1]
    got = (sw["n"], sw["min"], sw["max"], sw["stats_source"])
    assert got == ("5000", "100", "5099", "histogram")
    assert sw["percentiles_bounded"] == "1" and float(sw["p99"]) >= 5049


# A file as `cyclictest -l 1000 -m -p 80 -t 2 -h 200 -i 200 --json=...` writes
# it (rt-tests 2.x write_stats / rt_write_json), including its quirks: the
# stray colons in two keys, and an unescaped quote in the command line.
CYCLICTEST = """{
  "file_version": 1,
  "cmdline:": "cyclictest -l 1000 -m -p 80 -t 2 -h 200 -i 200 --json=/tmp/"x".json",
  "rt_test_version:": "2.40",
  "start_time": "Sat, 21 Nov 2026 17:45:53 +0000",
  "end_time": "Sat, 21 Nov 2026 17:45:54 +0000",
  "return_code": 0,
  "sysinfo": {
    "sysname": "Linux",
    "nodename": "board7",
    "release": "6.6.0-rt15",
    "version": "#1 SMP PREEMPT_RT",
    "machine": "aarch64",
    "realtime": 1
  },
  "num_threads": 2,
  "resolution_in_ns": 0,
  "thread": {
    "0": {
      "histogram": {
        "9": 600,
        "10": 390,
        "12": 9,
        "150": 1
      },
      "cycles": 1000,
      "min": 9,
      "max": 150,
      "avg": 9.95,
      "cpu": 0,
      "node": 0
    },
    "1": {
      "histogram": {
        "8": 998
      },
      "cycles": 1000,
      "min": 8,
      "max": 391,
      "avg": 8.50,
      "cpu": 1,
      "node": 0
    }
  }
}
"""


def test_cyclictest_import() -> None:
    run = parse_cyclictest(CYCLICTEST, "x.json")
    # One JIT-PER case, a latency series per thread keyed by its CPU, as
    # `rtbench run -c JIT-PER --cpus LIST` keys its own.
    assert [c.case for c in run.cases] == ["JIT-PER"]
    assert [s.label for s in run.cases[0].series] == ["latency[cpu=0]", "latency[cpu=1]"]
    assert {s.kind for s in run.cases[0].series} == {"latency"}
    assert run.realtime and run.hello["params"]["priority"] == 80
    assert run.hello["version"] == "2.40" and run.target == "board7"
    assert run.started_at == "2026-11-21T17:45:53+00:00"
    assert run.machine["preemption"]["model"] == "PREEMPT_RT"
    assert run.complete and run.outcome == "passed"
    t0, t1 = run.cases[0].series
    assert (t0.n, t0.min, t0.max, t0.sum) == (1000, 9000, 150_000, 9_950_000)
    assert t0.hist is not None and t0.hist.layout["width"] == 1000
    assert t0.hist.layout["buckets"] == 200 and t0.hist.overflow == 0
    st = series_stats(t0)
    assert st.pct[50.0] == 9999 and st.pct_range[50.0] == (9000, 9999)  # the 9 µs bucket
    assert st.pct[99.99] == 150_000  # rank n: the exact max
    # thread 1: 2 cycles fell beyond the 200-µs histogram
    assert t1.hist is not None and t1.hist.overflow == 2 and t1.max == 391_000
    assert any(w.code == "hist_overflow" and "thread 1" in w.detail for w in run.cases[0].warnings)
    assert series_stats(t1).pct_range[99.9] == (200_000, 391_000)


def test_cyclictest_without_histogram_in_ns_and_nan() -> None:
    text = (
        CYCLICTEST.replace('"resolution_in_ns": 0', '"resolution_in_ns": 1')
        .replace("-p 80 ", "")
        .replace('"avg": 8.50', '"avg": -nan')
        .replace('"cycles": 1000,\n      "min": 8', '"cycles": 0,\n      "min": 1000000')
    )
    text = text.replace('"histogram": {\n        "8": 998\n      }', '"histogram": {}')
    run = parse_cyclictest(text)
    assert not run.realtime
    t0, t1 = run.cases[0].series
    assert (t0.min, t0.max) == (9, 150)  # already ns
    assert (t1.n, t1.min, t1.max, t1.hist) == (0, None, None, None)


@pytest.mark.parametrize(
    ("text", "message"),
    [("[1, 2]", "no \"thread\""), ("{oops", "not valid JSON"),
     ('{"thread": {"0": {"cycles": 5, "min": "x", "max": 1}}}', "do not read")],
)  # fmt: skip
def test_bad_cyclictest_files(text: str, message: str) -> None:
    with pytest.raises(CyclictestError, match=message):
        parse_cyclictest(text)


def test_cyclictest_beside_a_jit_per_run_lines_up_per_cpu() -> None:
    """A cyclictest file and a JIT-PER run on the same CPUs: compare pairs
    latency[cpu=N] with latency[cpu=N], and the comparison report renders
    (it crashed with a traceback when nothing paired)."""
    from test_analysis_fixtures import C, S, build_run

    from rtbench.analysis.compare import compare_runs
    from rtbench.reports.html import html_report

    ct = parse_cyclictest(CYCLICTEST, "x.json")
    jit = build_run([C("JIT-PER", [S("latency", [9000, 9500, 12000], {"cpu": cpu},
                                     kind="latency") for cpu in (0, 1)])])  # fmt: skip
    cmp = compare_runs([jit, ct], "max")
    rows = {r.label: r for r in cmp.rows}
    assert set(rows) == {"latency[cpu=0]", "latency[cpu=1]"}
    assert all(None not in r.values and r.unit == "ns" for r in rows.values())
    assert rows["latency[cpu=0]"].values == [12000.0, 150_000.0]
    page = html_report([jit, ct])
    assert "latency[cpu=1]" in page and "Traceback" not in page
