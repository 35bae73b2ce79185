"""Campaign files: the matrix, its order, resumption and bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rtbench.experiments.campaign import (
    LABEL_CELL,
    CampaignError,
    group_runs,
    load_campaign,
    parse_campaign,
    pending,
)
from rtbench.model import Run

DOC: dict[str, Any] = {
    "campaign": {"name": "c", "cases": ["CAL-REF"], "loads": ["none", "cpu"], "repetitions": 2},
    "target": [{"name": "a", "spec": "local"}, {"name": "b", "spec": "qemu:debian-rt"}],
}


def test_cells_are_interleaved_and_cover_the_matrix() -> None:
    c = parse_campaign(DOC, "x")
    keys = [cell.key for cell in c.cells()]
    assert len(keys) == len(set(keys)) == 2 * 2 * 2
    # every target and load once before the next repetition
    assert [k.split("/")[2] for k in keys] == ["1"] * 4 + ["2"] * 4
    assert keys[:4] == ["a/none/1", "a/cpu/1", "b/none/1", "b/cpu/1"]
    assert c.groups() == ["a · load=none", "a · load=cpu", "b · load=none", "b · load=cpu"]


def test_labels_name_every_axis() -> None:
    cell = parse_campaign(DOC, "x").cells()[3]
    assert cell.labels("c") == {
        "campaign": "c",
        LABEL_CELL: "b/cpu/1",
        "target": "b",
        "load": "cpu",
        "repetition": "1",
    }


def test_resume_runs_what_is_missing_or_errored_only() -> None:
    c = parse_campaign(DOC, "x")
    stored = {"a/none/1": "passed", "a/cpu/1": "failed", "b/none/1": "error"}
    left = [cell.key for cell in pending(c, stored)]
    assert "a/none/1" not in left and "a/cpu/1" not in left
    assert left[0] == "b/none/1"
    assert len(left) == 8 - 2


def test_group_runs_takes_the_newest_run_of_a_cell() -> None:
    c = parse_campaign(DOC, "x")
    old = Run(id=1, labels={LABEL_CELL: "a/none/1"})
    new = Run(id=5, labels={LABEL_CELL: "a/none/1"})
    other = Run(id=3, labels={LABEL_CELL: "b/cpu/2"})
    stray = Run(id=4, labels={LABEL_CELL: "zzz/none/9"})
    groups = group_runs(c, [new, other, old, stray])
    assert groups["a · load=none"] == [new]
    assert groups["b · load=cpu"] == [other]
    assert groups["a · load=cpu"] == []


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"campaign": {}}, "at least one [[target]]"),
        ({"campaign": {"repetitions": 0}, "target": [{"spec": "local"}]}, "repetitions"),
        ({"campaign": {"loads": [1]}, "target": [{"spec": "local"}]}, "loads"),
        ({"campaign": {"bogus": 1}, "target": [{"spec": "local"}]}, "unknown key"),
        ({"target": [{"name": "a"}]}, "`spec` is required"),
        ({"target": [{"spec": "local"}, {"spec": "local"}]}, "must differ"),
    ],
)
def test_bad_campaigns_are_clear_errors(doc: dict[str, object], message: str) -> None:
    with pytest.raises(CampaignError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_campaign(doc, "x")


def test_files_that_are_not_toml_are_clear_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[campaign\n")
    with pytest.raises(CampaignError, match="not valid TOML"):
        load_campaign(bad)
    with pytest.raises(CampaignError, match="cannot read"):
        load_campaign(tmp_path / "missing.toml")


def test_shipped_example_parses() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "rt-vs-generic.toml"
    c = load_campaign(example)
    assert {t.spec for t in c.targets} == {"qemu:debian-rt", "qemu:debian-generic"}
    assert set(c.loads) == {"none", "kernel"}


def test_kernels_example_names_four_known_kernels() -> None:
    from rtbench.targets import kernels, resolve

    example = Path(__file__).resolve().parents[2] / "examples" / "kernels.toml"
    c = load_campaign(example)
    names = [t.spec.removeprefix("qemu:") for t in c.targets]
    assert sorted(names) == sorted(
        ["debian-rt", "debian-generic", "debian-rt-6.12", "debian-generic-6.12"]
    )
    assert all(n in kernels.KNOWN for n in names) and c.repetitions >= 2
    for t in c.targets:
        resolve(t.spec)  # each spec is a valid QEMU target


def test_a_column_with_a_failed_run_says_failed_and_names_it() -> None:
    """Repetitions pooled into a report column: the column's outcome is its
    worst run's, its checks are every run's, and the failed run is named
    (a failed repetition was shown as "passed · checks none")."""
    from test_analysis_fixtures import C, S, build_run

    from rtbench.commands.campaign import _pooled
    from rtbench.reports.html import html_report

    c = parse_campaign({**DOC, "campaign": {**DOC["campaign"], "loads": ["none"]}}, "c")
    runs = []
    for rep, (target, order) in enumerate([("a", "pass"), ("a", "fail"), ("b", "pass"),
                                           ("b", "pass")]):  # fmt: skip
        run = build_run([C("SEM-SHF", [S("give_to_run", [1000, 1100 + rep])],
                           result="passed" if order == "pass" else "failed",
                           checks=[("order", order)])])  # fmt: skip
        run.id = rep + 1
        run.labels = {LABEL_CELL: f"{target}/none/{rep % 2 + 1}"}
        runs.append(run)
    a, b = _pooled(c, runs)
    assert a.outcome == "failed" and a.labels["failed_runs"] == "#2 failed"
    assert [ch.verdict for ch in a.cases[0].checks] == ["pass", "fail"]
    assert a.cases[0].checks[1].detail.startswith("run #2: ")
    assert b.outcome == "passed" and "failed_runs" not in b.labels
    page = html_report([a, b], "max", [runs[:2], runs[2:]])
    assert "failed_runs=#2 failed" in page
