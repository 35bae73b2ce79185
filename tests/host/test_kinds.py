"""A series knows what it is (issue 11): an injected count, timestamp and
period come out with their own unit, and with no statistic, score, star,
worst-case fit or test that their kind gives no meaning, in the analysis,
`analyze`, `compare` and the JSON and CSV exports. The latency beside them
in the same run gets all of those (the negative control: the gating is by
kind, not blanket). Each is checked for a stream that declares kinds and
for an older one that does not (the documented fallback)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from stores import StoreAt
from test_analysis_fixtures import C, S, build_run
from test_store_schema import build_version_1

from rtbench.analysis.compare import NothingInCommon, compare_runs
from rtbench.analysis.evt import worst_case
from rtbench.analysis.rating import rate_run
from rtbench.analysis.scores import indicator_scores
from rtbench.analysis.stats import series_stats
from rtbench.cli import main
from rtbench.commands import common
from rtbench.io.export import read_json, write_csv, write_json
from rtbench.kinds import TRAITS, display_unit, fallback_kind
from rtbench.model import Run, Series
from rtbench.store import Store, schema

LOSSES = 949  # IRQ-SUS: 949 events lost, not 0.949 µs
GAP_STARTS = [195_366_000, 391_000_000, 586_500_000]  # CLK-DUR: ns since the case began
TICK = 3_999_629  # CLK-DUR: the measured tick period, n = 1
SWITCH = [1000 + (i * 37) % 500 for i in range(2000)] + [9000]  # a latency: the control


def kinded_run(declared: bool, losses: int = LOSSES, scale: float = 1.0) -> Run:
    """The issue's series; `declared` False writes them as agents before
    kinds did (no `kind` field: the host's fallback applies)."""

    def k(kind: str) -> str | None:
        return kind if declared else None

    scaled = [int(v * scale) for v in SWITCH]
    return build_run(
        [
            C("CAL-REF", [S("t_std", [1000] * 10, kind=k("duration"))]),
            C("THR-SW", [S("switch", scaled, {"n": 2}, kind=k("latency"))]),
            C(
                "IRQ-SUS",
                [
                    S("losses", [losses], {"period_ns": 20000}, kind=k("count"), unit="count"),
                    S("sustained_period", [40000], kind=k("period")),
                ],
            ),
            C(
                "CLK-DUR",
                [
                    S("gap_start", GAP_STARTS, kind=k("timestamp")),
                    S("tick_period", [TICK], kind=k("period")),
                ],
            ),
        ]
    )  # fmt: skip


def series(run: Run, case: str, name: str) -> Series:
    c = run.case(case)
    assert c is not None
    s = c.find(name)
    assert s is not None
    return s


KINDS = {
    ("IRQ-SUS", "losses"): ("count", "count"),
    ("IRQ-SUS", "sustained_period"): ("period", "ns"),
    ("CLK-DUR", "gap_start"): ("timestamp", "ns"),
    ("CLK-DUR", "tick_period"): ("period", "ns"),
    ("THR-SW", "switch"): ("latency", "ns"),
    ("CAL-REF", "t_std"): ("duration", "ns"),
}
NOT_LATENCIES = [k for k, (kind, _) in KINDS.items() if kind in ("count", "timestamp", "period")]


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "fallback"])
def test_each_series_has_its_kind_and_unit(declared: bool) -> None:
    run = kinded_run(declared)
    got = {(c.case, s.name): (s.kind, s.unit) for c in run.cases for s in c.series}
    assert got == KINDS


def test_fallback_is_documented_and_defaults_to_latency() -> None:
    assert fallback_kind("IRQ-SUS", "losses", "count") == "count"
    assert fallback_kind("ANY-CASE", "anything", "count") == "count"
    assert fallback_kind("CLK-DUR", "gap_start", "ns") == "timestamp"
    assert fallback_kind("THR-SW", "switch", "ns") == "latency"  # negative control
    # A kind declared on the wire wins over the fallback's guess.
    run = build_run([C("CLK-DUR", [S("gap_start", [5, 6], kind="latency")])])
    assert series(run, "CLK-DUR", "gap_start").kind == "latency"


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "fallback"])
def test_analysis_gives_kinds_only_what_means_something(declared: bool) -> None:
    run = kinded_run(declared)
    scored = {(sc.case, sc.series) for sc in indicator_scores(run)}
    rated = {r.case for r in rate_run(run)}
    for case, name in NOT_LATENCIES:
        s = series(run, case, name)
        st = series_stats(s)
        # Only the exact figures: no mean, spread or percentile of a count,
        # a timestamp or a period.
        assert (st.n, st.mean, st.stddev, st.pct) == (s.n, None, None, {})
        assert st.max == s.max and (case, name) not in scored
        assert not (s.traits.histogram or s.traits.evt or s.traits.stars or s.traits.test)
    assert case not in rated or case == "THR-SW"
    assert series_stats(series(run, "IRQ-SUS", "losses")).max == LOSSES
    assert series_stats(series(run, "CLK-DUR", "gap_start")).min == GAP_STARTS[0]
    # The control: the latency has everything.
    switch = series(run, "THR-SW", "switch")
    st = series_stats(switch)
    assert st.mean is not None and st.pct and st.stddev is not None
    assert ("THR-SW", "switch") in scored and rated == {"THR-SW"}
    assert switch.samples is not None and worst_case(switch.samples, (1e-3,)).n_blocks > 0
    # The duration: statistics, no score.
    t_std = series_stats(series(run, "CAL-REF", "t_std"))
    assert t_std.mean == 1000 and ("CAL-REF", "t_std") not in scored


def test_traits_table_is_the_one_place() -> None:
    latency = TRAITS["latency"]
    assert latency.stats and latency.score and latency.stars and latency.evt and latency.test
    for kind in ("count", "timestamp", "period"):
        t = TRAITS[kind]
        assert not (
            t.stats or t.score or t.stars or t.evt or t.test or t.histogram or t.determinism
        )
    assert display_unit("ns") == (1000.0, "µs") and display_unit("count") == (1.0, "count")


# --- compare ------------------------------------------------------------------


def test_compare_shows_counts_as_counts_and_tests_none_of_them() -> None:
    a, b = kinded_run(True), kinded_run(False, losses=10, scale=1.5)
    for indicator in ("max", "p99", "mean"):
        rows = {(r.case, r.series): r for r in compare_runs([a, b], indicator).rows}
        for key in NOT_LATENCIES:
            r = rows[key]
            assert (r.kind, r.unit) == KINDS[key]
            assert r.pvalue is None and r.test.startswith("none: a "), r
        losses = rows["IRQ-SUS", "losses"]
        if indicator == "max":
            assert losses.values == [LOSSES, 10] and losses.ratios[1] == pytest.approx(10 / LOSSES)
        else:  # no mean or percentile of a count
            assert losses.values == [None, None]
    # The control: the latency's p99 is tested (over runs: two per side).
    a2, b2 = kinded_run(True, scale=1.02), kinded_run(False, losses=10, scale=1.55)
    p99_rows = compare_runs([a, b], "p99", members=[[a, a2], [b, b2]]).rows
    (switch,) = [r for r in p99_rows if r.series == "switch"]
    assert switch.pvalue is not None and switch.significant and switch.unit == "ns"


def test_no_test_of_one_run_per_side() -> None:
    one = [build_run([C("THR-PRE", [S("preempt", [v])])]) for v in (100, 900, 101, 903)]
    (row,) = compare_runs(one[:2], "p50").rows
    assert row.pvalue is None and row.test == "none: one run per side"
    # negative control: two runs per side are tested, one value each
    (row,) = compare_runs(one[:2], "p50", members=[one[::2], one[1::2]]).rows
    assert row.pvalue is not None


def recurring_run(periods: list[int], declared: bool) -> Run:
    """CLK-DUR as the agent reports it: recurring sources most frequent first."""
    gaps = [S("tick", [5000, 5100])]
    for rank, period in enumerate(periods, 1):
        values = [20_000 * rank, 20_000 * rank + 300]
        if declared:
            gaps.append(S("recurring", values, {"rank": rank}, attrs={"period_ns": period}))
        else:  # before attrs: the measured period was the key
            gaps.append(S("recurring", values, {"period_ns": period}))
    return build_run([C("CLK-DUR", gaps)])


@pytest.mark.parametrize("declared", [True, False], ids=["rank", "legacy period_ns"])
def test_recurring_sources_pair_across_runs_by_rank(declared: bool) -> None:
    a = recurring_run([3_999_629, 7_999_159], declared)
    b = recurring_run([4_000_371, 8_000_907], declared)
    rows = [r for r in compare_runs([a, b], "max").rows if r.series == "recurring"]
    assert [r.point_key for r in rows] == ["rank=1", "rank=2"]
    assert [r.values for r in rows] == [[20_300.0, 20_300.0], [40_300.0, 40_300.0]]
    # Negative control: the measured periods themselves never match.
    keys_a = {s.key for s in a.cases[0].series if s.name == "recurring"}
    keys_b = {s.key for s in b.cases[0].series if s.name == "recurring"}
    assert (keys_a == keys_b) is declared


def test_runs_with_no_series_in_common_are_an_error(tmp_path: Path) -> None:
    a = build_run([C("THR-SW", [S("switch", [1, 2, 3], {"n": 2})])])
    b = build_run([C("SEM-SHF", [S("give_to_run", [1, 2, 3])])])
    with pytest.raises(NothingInCommon, match=r"no series in common.*THR-SW.*SEM-SHF"):
        compare_runs([a, b])
    db = tmp_path / "s.sqlite"
    with Store(db) as store:
        store.save(a)
        store.save(b)
        store.save(build_run([C("THR-SW", [S("switch", [4, 5, 6], {"n": 2})])]))
    r = CliRunner().invoke(main, ["--db", str(db), "compare", "1", "2"])
    assert r.exit_code == 2 and "no series in common" in r.output, r.output
    ok = CliRunner().invoke(main, ["--db", str(db), "compare", "1", "3"])
    assert ok.exit_code == 0, ok.output  # negative control


# --- analyze (the terminal's analysis tables) ---------------------------------


def test_analyze_shows_each_figure_in_its_unit(tmp_path: Path) -> None:
    """`analyze`'s analysis results (its --format json: the same figures as
    its tables) give each series its kind and unit, and a count, a
    timestamp and a period no statistic, star or fit."""
    db = tmp_path / "s.sqlite"
    with Store(db) as store:
        store.save(kinded_run(True))
    r = CliRunner().invoke(main, ["--db", str(db), "analyze", "1", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    stats = {(x["case"], x["name"]): x for x in doc["statistics"]}
    for key, (kind, unit) in KINDS.items():
        assert (stats[key]["kind"], stats[key]["unit"]) == (kind, unit), key
    pct = ("mean", "stddev", "p50", "p90", "p99", "p99.9", "p99.99")
    for key in NOT_LATENCIES:
        assert {stats[key][k] for k in pct} == {None}, stats[key]
    losses = stats["IRQ-SUS", "losses"]
    assert (losses["unit"], losses["n"], losses["min"], losses["max"]) == (
        "count",
        1,
        949,
        949,
    )  # 949 events, never 0.949 µs
    gap = stats["CLK-DUR", "gap_start"]
    # The raw figures' unit, never the terminal's µs beside values in ns.
    assert (gap["unit"], gap["min"], gap["max"]) == ("ns", GAP_STARTS[0], GAP_STARTS[-1])
    assert stats["CLK-DUR", "tick_period"]["max"] == TICK
    switch = stats["THR-SW", "switch"]  # the control
    assert switch["kind"] == "latency" and None not in {switch[k] for k in pct}
    # Stars, fits and slopes only for the latency.
    assert [x["case"] for x in doc["ratings"]] == ["THR-SW"] and doc["unrated_because"] is None
    assert {x["case"] for x in doc["worst_case"]} == {"THR-SW"}
    assert doc["determinism"] == []  # one sweep point: no slope
    assert doc["composite_score"] is not None


def test_compare_command_carries_units_and_no_test_of_a_count(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    with Store(db) as store:
        store.save(kinded_run(True))
        store.save(kinded_run(False, losses=10, scale=1.5))
    r = CliRunner().invoke(main, ["--db", str(db), "compare", "1", "2", "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = {(x["case"], x["name"]): x for x in json.loads(r.output)["comparison"]}
    losses = rows["IRQ-SUS", "losses"]
    assert (losses["unit"], losses["run_1"], losses["run_2"]) == (
        "count",
        LOSSES,
        10,
    )
    for key in NOT_LATENCIES:
        assert rows[key]["pvalue"] is None and rows[key]["test"].startswith("none"), rows[key]


def test_analyze_of_a_not_realtime_run_has_no_stars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.sqlite"
    with Store(db) as store:
        store.save(build_run([C("THR-SW", [S("switch", SWITCH, {"n": 2})])], realtime=False))
        store.save(build_run([C("THR-SW", [S("switch", SWITCH, {"n": 2})])]))
    monkeypatch.setattr(common.out, "width", 300)
    r = CliRunner().invoke(main, ["--db", str(db), "analyze", "1"])
    assert r.exit_code == 0 and "no stars: the run had no real-time priority" in r.output
    assert "★" not in r.output
    r = CliRunner().invoke(main, ["--db", str(db), "analyze", "2"])
    assert "★" in r.output  # the control
    r = CliRunner().invoke(main, ["--db", str(db), "analyze", "1", "--format", "json"])
    doc = json.loads(r.output)
    assert doc["ratings"] == [] and "not_realtime" in doc["unrated_because"]


def test_an_unsupported_only_run_is_not_passed() -> None:
    run = build_run([C("THR-LOCK", [], result="unsupported"), C("MUT-B-PI", [], result="skipped")])
    assert run.outcome == "skipped"
    mixed = build_run([C("THR-LOCK", [], result="unsupported"), C("THR-SW", [S("switch", [1])])])
    assert mixed.outcome == "passed"  # the control: one judged case


# --- exports (golden) -----------------------------------------------------------

GOLDEN_JSON = {
    ("IRQ-SUS", "losses"): {
        "kind": "count", "unit": "count", "attrs": {}, "n": 1, "min": 949, "max": 949,
        "stats": {"source": "summary", "stddev": None, "stddev_exact": True, "percentiles": {},
                  "bounded": False, "max_3sigma": None, "filtered_out": 0},
        "scores": {"mean": None, "max": None},
    },
    ("CLK-DUR", "gap_start"): {
        "kind": "timestamp", "unit": "ns", "attrs": {}, "n": 3, "min": 195366000,
        "max": 586500000,
        "stats": {"source": "summary", "stddev": None, "stddev_exact": True, "percentiles": {},
                  "bounded": False, "max_3sigma": None, "filtered_out": 0},
        "scores": {"mean": None, "max": None},
    },
    ("CLK-DUR", "tick_period"): {
        "kind": "period", "unit": "ns", "attrs": {}, "n": 1, "min": 3999629, "max": 3999629,
        "stats": {"source": "summary", "stddev": None, "stddev_exact": True, "percentiles": {},
                  "bounded": False, "max_3sigma": None, "filtered_out": 0},
        "scores": {"mean": None, "max": None},
    },
}  # fmt: skip

GOLDEN_CSV = {
    # case, series, point, unit, n, min, mean, stddev, p50..p99.99, max, max_3sigma,
    # filtered_out, stats_source, percentiles_bounded, score_mean, score_max, dropped,
    # holes, kind
    ("IRQ-SUS", "losses"):
        "IRQ-SUS,losses,period_ns=20000,count,1,949,,,,,,,,949,,0,summary,0,,,0,0,count",
    ("CLK-DUR", "gap_start"):
        "CLK-DUR,gap_start,,ns,3,195366000,,,,,,,,586500000,,0,summary,0,,,0,0,timestamp",
    ("CLK-DUR", "tick_period"):
        "CLK-DUR,tick_period,,ns,1,3999629,,,,,,,,3999629,,0,summary,0,,,0,0,period",
}  # fmt: skip


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "fallback"])
def test_json_export_golden_per_kind(declared: bool) -> None:
    run = kinded_run(declared)
    buf = io.StringIO()
    write_json(run, buf)
    doc = json.loads(buf.getvalue())
    found: dict[tuple[str, str], dict[str, Any]] = {
        (c["case"], s["name"]): s for c in doc["cases"] for s in c["series"]
    }
    for key, golden in GOLDEN_JSON.items():
        assert {k: found[key][k] for k in golden} == golden, key
    switch = found["THR-SW", "switch"]  # the control
    assert switch["kind"] == "latency" and switch["scores"]["mean"] is not None
    assert switch["stats"]["percentiles"]["p99"]["value"] > 0
    # Read back, the kinds survive (an import is a run like any other).
    back = _reread(buf.getvalue())
    assert {(s.case, s.name): (s.kind, s.unit) for c in back.cases for s in c.series} == KINDS


def _reread(text: str) -> Run:
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(text)
    try:
        return read_json(f.name)
    finally:
        Path(f.name).unlink()


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "fallback"])
def test_csv_export_golden_per_kind(declared: bool) -> None:
    buf = io.StringIO()
    write_csv(kinded_run(declared), buf)
    rows = list(csv.reader(io.StringIO(buf.getvalue())))
    header = rows[0]
    # The run's identity is the last column (added after the kinds).
    assert header[-2:] == ["kind", "run_uuid"] and header[7] == "unit"
    body = {(r[4], r[5]): ",".join(r[4:-1]) for r in rows[1:]}
    for key, golden in GOLDEN_CSV.items():
        assert body[key] == golden, (key, body[key])
    switch = dict(zip(header, next(r for r in rows[1:] if r[5] == "switch"), strict=True))
    assert switch["kind"] == "latency" and switch["score_mean"] and switch["p99"]  # the control
    assert re.fullmatch(r"\d+(\.\d+)?", switch["mean"])


def test_store_keeps_kinds_and_attrs(tmp_path: Path) -> None:
    run = recurring_run([3_999_629], declared=True)
    run.cases[0].series[0].kind = "duration"
    with Store(tmp_path / "s.sqlite") as store:
        back = store.load(store.save(run))
    got = [(s.name, s.kind, s.point, s.attrs) for s in back.cases[0].series]
    assert got == [
        ("tick", "duration", {}, {}),
        ("recurring", "latency", {"rank": 1}, {"period_ns": 3_999_629}),
    ]


def test_schema_3_migration_gives_stored_series_their_kinds(store_at: StoreAt) -> None:
    """Runs stored before kinds get the fallback's kind in the column itself
    (a query of the store sees it), not only when loaded; on both backends."""
    build_version_1(store_at)  # run 7, case 0 'A', series 0 's' (ns)
    with store_at.raw() as db:
        for pos, (case, name, unit) in enumerate(
            [("CLK-DUR", "gap_start", "ns"), ("IRQ-SUS", "losses", "count")], 1
        ):
            db.execute(
                "INSERT INTO series VALUES (7, 0, ?, ?, ?, '{}', '', ?, 1, 5, 5, '5', 0, 0,"
                " NULL, NULL, NULL, NULL)",
                (pos, case, name, unit),
            )
    with store_at.open() as s:
        assert s.schema_version == len(schema.MIGRATIONS)
        kinds = [x.kind for x in s.load(7).cases[0].series]
    with store_at.raw() as db:
        raw = db.execute("SELECT name, kind, attrs FROM series WHERE run_id = 7 ORDER BY pos")
    assert [tuple(r) for r in raw] == [
        ("s", "latency", "{}"),  # the control: a latency stays one
        ("gap_start", "timestamp", "{}"),
        ("losses", "count", "{}"),
    ]
    assert kinds == ["latency", "timestamp", "count"]
