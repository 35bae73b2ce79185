"""Issue 23: how the host shows and scores a case is declared once, in the
agent's case table (`rtbench-agent --list`: sigma3, headline, unscored,
jitter; per_cpu in test_soak.py), and read from it: a trait changed in the
table changes what the host does, with no host edit. The shipped tables
(host/rtbench/data/*-cases.jsonl, `make catalogue`) carry them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from test_analysis_fixtures import C, S, build_run, cal_ref

from rtbench import catalogue
from rtbench.analysis.scores import composite_parts, headline_series, indicator_scores
from rtbench.analysis.stats import case_stats
from rtbench.catalogue import AgentCase, Table
from rtbench.reports.jitter import jitter_series


def _with(case: str, **traits: Any) -> Table:
    """The shipped POSIX table with one case's traits changed."""
    table = dict(catalogue.posix_cases())
    base = table.get(case, AgentCase(case, case, True))
    table[case] = replace(base, **traits)
    return table


def test_the_shipped_table_declares_the_traits() -> None:
    assert catalogue.sigma3_cases() == {"THR-SW"}
    assert catalogue.headline_cases() == ("THR-SW", "THR-PRE", "IRQ-RSP", "SEM-SHF")
    assert catalogue.unscored_cases() == {"CAL-REF"}
    assert catalogue.jitter_cases() == {"JIT-PER"}
    for port, table in catalogue.shipped_ports().items():  # every port's table alike
        have = {c for c in ("THR-SW", "CAL-REF", "JIT-PER") if c in table}
        assert catalogue.sigma3_cases(table) == {"THR-SW"} & have, port
        assert catalogue.unscored_cases(table) == {"CAL-REF"} & have, port


def test_sigma3_trait_turns_the_gross_error_filter_on() -> None:
    run = build_run(
        [C("SEM-SHF", [S("give_to_run", [1000 + (i % 7) for i in range(10000)] + [50000])])]
    )
    s = run.cases[0].series[0]
    assert case_stats(s).filtered_max is None  # SEM-SHF: no filter in its method
    st = case_stats(s, _with("SEM-SHF", sigma3=True))
    assert st.filtered_max == 1006 and st.filtered_out == 1 and st.max == 50000
    assert case_stats(s, _with("SEM-SHF", sigma3=False)).filtered_max is None


def test_headline_trait_puts_a_case_in_the_composite() -> None:
    run = build_run(
        [cal_ref(1000), C("SEM-SHF", [S("give_to_run", [2000])]), C("MUT-ARN", [S("lock", [3000])])]
    )
    assert [p.case for p in composite_parts(run)] == ["SEM-SHF"]
    table = _with("MUT-ARN", headline=1)
    assert [s.case for s in headline_series(run, table)] == ["MUT-ARN", "SEM-SHF"]
    table = _with("SEM-SHF", headline=0)
    assert headline_series(run, table) == []


def test_unscored_trait_leaves_a_case_out_of_the_scores() -> None:
    run = build_run([cal_ref(1000), C("SEM-SHF", [S("give_to_run", [2000])])])
    assert {s.case for s in indicator_scores(run)} == {"SEM-SHF"}
    assert {s.case for s in indicator_scores(run, _with("SEM-SHF", unscored=True))} == set()


def test_jitter_trait_gives_a_case_the_jitter_table() -> None:
    run = build_run([C("NOISE-OS", [S("deviation", [100, 200, 300])])])
    c = run.cases[0]
    assert jitter_series(c) == []
    assert [s.name for s in jitter_series(c, _with("NOISE-OS", jitter=True))] == ["deviation"]
