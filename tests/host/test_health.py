"""Repetitions checked before pooling (rtbench.analysis.health): a run whose
clock read, counter rate or start load stands apart from its group's is set
apart and named; five real repetitions of one configuration are not."""

from __future__ import annotations

from pathlib import Path

from test_analysis_fixtures import C, S, build_run

from rtbench.analysis.health import health, set_apart
from rtbench.model import Run
from rtbench.stream import load_run

DATA = Path(__file__).parent / "data" / "repetitions"


def rep(read_ns: int, ident: int, hz: float = 2.445e9, load: float | None = None) -> Run:
    run = build_run([C("CAL-TIMER", [S("clock_read", [read_ns] * 200)]),
                     C("SEM-SHF", [S("give_to_run", [4000 + ident, 4100, 4200])])])  # fmt: skip
    run.id = ident
    run.hello["clock"] = {"read_overhead_ns": read_ns, "cycles": {"hz": hz}}
    if load is not None:
        run.machine = {"loadavg": [load, load, load]}
    return run


def test_real_repetitions_are_all_kept() -> None:
    runs = [load_run(p) for p in sorted(DATA.glob("rep-*.rtb"))]
    kept, said = set_apart([runs])
    assert kept == [runs] and said == []


def test_a_scaled_clock_is_set_apart_and_named() -> None:
    # A guest that calibrated its counter at 577 MHz reads its clock 7x slower.
    sane = [rep(83, k) for k in (1, 2, 3)]
    odd = rep(613, 4, hz=0.577e9)
    assert health(odd).clock_read_ns == 613 and health(odd).counter_hz == 0.577e9
    kept, said = set_apart([[*sane, odd], [rep(80, 5), rep(81, 6), rep(82, 7)]])
    assert kept[0] == sane and len(kept[1]) == 3
    assert len(said) == 1 and said[0].startswith("run #4 set apart: clock read 613 ns against")
    assert "cycle counter at 577 MHz" in said[0]


def test_a_busy_start_is_set_apart() -> None:
    runs = [rep(83, 1, load=0.5), rep(83, 2, load=0.7), rep(83, 3, load=21.0)]
    kept, said = set_apart([runs])
    assert kept == [runs[:2]] and "load average 21.0 at its start" in said[0]


def test_two_that_disagree_are_both_kept_and_said() -> None:
    a, b = rep(83, 1), rep(613, 2)
    kept, said = set_apart([[a, b]])
    assert kept == [[a, b]] and said == [f"runs #1 and #2 disagree ({said[0].split('(')[1]}"]


def test_a_campaign_column_pools_without_the_odd_repetition() -> None:
    from rtbench.commands.campaign import _pooled
    from rtbench.experiments.campaign import LABEL_CELL, parse_campaign

    doc = {
        "campaign": {"name": "c", "cases": ["CAL-TIMER"], "loads": ["none"], "repetitions": 3},
        "target": [{"name": "a", "spec": "local"}],
    }
    c = parse_campaign(doc, "c")
    runs = [rep(83, 1), rep(83, 2), rep(613, 3)]
    for k, r in enumerate(runs, 1):
        r.labels = {LABEL_CELL: f"a/none/{k}"}
    (col,) = _pooled(c, runs)
    assert col.labels["runs"] == "1,2"
    assert any(w.code == "set_apart" and "run #3" in w.detail for w in col.warnings)


def test_a_repetition_of_another_firmware_is_named() -> None:
    # A source edited between a campaign's cells rebuilt one board's firmware.
    def board(ident: int, digest: str) -> Run:
        run = rep(83, ident)
        run.machine = {"target": {"firmware_sha256": digest}}
        return run

    same = [board(1, "a" * 64), board(2, "a" * 64), board(3, "a" * 64)]
    odd = board(4, "b" * 64)
    kept, said = set_apart([[*same, odd]])
    assert kept == [same]
    assert said == [f"run #4 set apart: firmware {'b' * 12} against {'a' * 12} for its group "
                    "(another build)"]  # fmt: skip
    kept, said = set_apart([[same[0], odd]])
    assert kept == [[same[0], odd]] and "firmware" in said[0] and "both kept" in said[0]
    assert set_apart([same]) == ([same], [])
