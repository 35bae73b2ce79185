"""The shipped reference datasets: provenance, the published totals
recomputed, internal consistency, and the mapping to rtbench indicators."""

from __future__ import annotations

import pytest

from rtbench.reference import (
    OTHER_HARDWARE,
    ReferenceDataset,
    ReferenceError,
    figures_for,
    load_datasets,
    parse_cell,
)


def dataset(ds_id: str) -> ReferenceDataset:
    (d,) = [d for d in load_datasets() if d.id == ds_id]
    return d


def values(ds_id: str, test: str, stat: str) -> dict[str, float]:
    return {f.os: f.value for f in dataset(ds_id).figures if f.indicator == test and f.stat == stat}


def test_every_dataset_has_its_provenance() -> None:
    sets = load_datasets()
    assert [d.id for d in sets] == ["A", "B", "C", "D", "E"]
    for d in sets:
        assert d.publication and d.hardware and d.unit and d.systems and d.figures
        assert OTHER_HARDWARE in d.provenance
        for f in d.figures:
            assert f.source == d.publication and f.hardware == d.hardware
            assert f.os in d.systems and OTHER_HARDWARE in f.label


def test_e_jitter_table_sums_to_the_5000_periods() -> None:
    e = dataset("E")
    counts = {b["bin"]: b["count"] for b in e.jitter}
    assert sum(counts.values()) == 5000
    assert counts["0"] == values("E", "intervals equal to the period", "count")["RTLinux 3.2-pre2"]
    # the published "85 % under 10 µs" is the 1-9 µs bin alone
    assert counts["1-9"] / 5000 == pytest.approx(0.854)
    assert (counts["0"] + counts["1-9"]) / 5000 == pytest.approx(0.9676)
    jitter_figures = [f for f in e.figures if f.indicator.startswith("jitter ")]
    assert sum(f.value for f in jitter_figures) == 5000


def test_e_shorter_equal_longer() -> None:
    rows = ("shorter than", "equal to", "longer than")
    counts = [values("E", f"intervals {r} the period", "count")["RTLinux 3.2-pre2"] for r in rows]
    percents = [values("E", f"intervals {r} the period", "percent")["RTLinux 3.2-pre2"]
                for r in rows]  # fmt: skip
    assert counts == [2853, 568, 1579] and sum(counts) == 5000
    for c, p in zip(counts, percents, strict=True):
        assert 100 * c / 5000 == pytest.approx(p, abs=0.005)
    assert sum(percents) == pytest.approx(100.0)


def test_e_extreme_intervals_are_the_period_plus_the_deviations() -> None:
    interval = values("E", "shortest / longest interval", "min")["RTLinux 3.2-pre2"]
    longest = values("E", "shortest / longest interval", "max")["RTLinux 3.2-pre2"]
    dev_min = values("E", "interval deviation from the period", "min")["RTLinux 3.2-pre2"]
    dev_max = values("E", "interval deviation from the period", "max")["RTLinux 3.2-pre2"]
    assert (interval, longest) == (10000 + dev_min, 10000 + dev_max) == (9906, 10093)


def test_c_and_d_cells_are_ordered() -> None:
    """avg <= max in every cell of C, min <= avg <= max in D: catches a
    transcription slip."""
    for ds_id, order in (("C", ("avg", "max")), ("D", ("min", "avg", "max"))):
        cells: dict[tuple[str, str], dict[str, float]] = {}
        for f in dataset(ds_id).figures:
            cells.setdefault((f.indicator, f.os), {})[f.stat] = f.value
        checked = 0
        for stats in cells.values():
            if set(order) <= set(stats):
                seq = [stats[s] for s in order]
                assert seq == sorted(seq), stats
                checked += 1
        assert checked >= 15


def test_c_counts_na_and_below_resolution() -> None:
    c = dataset("C")
    assert len(c.systems) == 4
    # 24 avg/max rows x 4 systems, two n/a cells (Android run+block), + 4 IRQ-SUS periods
    assert len(c.figures) == 24 * 4 * 2 - 2 * 2 + 4
    below = [f for f in c.figures if f.qualifier == "<"]
    assert below and all(f.value == 0.1 and f.published == "<0.1" for f in below)


@pytest.mark.parametrize(
    ("case", "series", "point", "test"),
    [
        ("THR-SW", "switch", {"n": 2}, "THR-P-SLS switch, 2 threads"),
        ("THR-SW", "switch", {"n": 10}, "THR-P-SLS switch, 10 threads"),
        ("THR-SW", "switch", {"n": 128}, "THR-P-SLS switch, 128 threads"),
        ("THR-SW", "switch", {"n": 1000}, "THR-P-SLS switch, 1000 threads"),
        ("SEM-ARN", "take", {}, "SEM-P-ARN acquire"),
        ("SEM-ARN", "give", {}, "SEM-P-ARN release"),
        ("SEM-ARC", "acquire", {"n": 128}, "SEM-P-ARC acquire (128 waiters)"),
        ("MUT-ARN", "lock", {}, "MUT-P-ARN acquire"),
        ("MUT-ARC", "release", {}, "MUT-P-ARC release"),
        ("SEM-NEW", "create", {"used": 0}, "SEM-P-NEW never used: create"),
        ("THR-NEW", "delete", {"scenario": 2}, "THR-P-NEW run+terminate: delete"),
        ("CLK-DUR", "tick", {}, "CLK-P-DUR clock tick duration"),
        ("IRQ-DLT", "dispatch", {}, "IRQ_P_DLT dispatch latency"),
        ("IRQ-SUS", "period", {}, "IRQ_S_SUS shortest period with no loss"),
        ("JIT-PER", "latency", {}, "kernel preemption time"),
    ],
)
def test_figures_for_maps_rtbench_indicators(
    case: str, series: str, point: dict[str, int | str], test: str
) -> None:
    found = figures_for(case, series, point)
    assert test in {f.indicator for f in found}
    assert all(f.case == case for f in found)


def test_scores_of_a_map_to_the_headline_cases() -> None:
    for case, series, test in (
        ("THR-SW", "switch", "task switching"),
        ("SEM-SHF", "give_to_run", "semaphore shuffling"),
        ("THR-PRE", "preempt", "task preemption"),
        ("IRQ-RSP", "latency", "interrupt response"),
    ):
        found = [f for f in figures_for(case, series, {}) if f.dataset == "A"]
        assert {f.indicator for f in found} == {test}
        assert {f.os for f in found} == {"RTLinux", "RGMP-ROS"}
        assert all(f.stat == "score" for f in found)


def test_figures_for_excludes_other_points_and_series() -> None:
    c_switch = [f for f in figures_for("THR-SW", "switch", {"n": 5}) if f.dataset == "C"]
    assert c_switch == []  # C has no 5-thread figure
    assert figures_for("SEM-NEW", "create", {"used": 1}) != figures_for(
        "SEM-NEW", "create", {"used": 0}
    )
    assert figures_for("NOPE", "x", {}) == []


def test_cells() -> None:
    assert parse_cell("<0.1") == ("<", 0.1)
    assert parse_cell("~9") == ("~", 9.0)
    assert parse_cell("+93") == ("", 93.0)
    assert parse_cell("n/a") is None
    with pytest.raises(ReferenceError):
        parse_cell("twelve")
