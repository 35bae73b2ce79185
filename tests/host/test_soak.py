"""Soak options and the `progress` and `break` records on the host
(rtbench.run.soak, rtbench.reports.live, the schema and the assembler)."""

from __future__ import annotations

from typing import Any

import pytest

from rtbench.catalogue import AgentCase
from rtbench.model import Run
from rtbench.reports import live
from rtbench.run import soak
from rtbench.run.request import AgentRequest
from rtbench.run.suites import Planned
from rtbench.stream import StreamWriter, assemble, parse_lines

PROGRESS = {
    "case": "JIT-PER",
    "series": "latency",
    "elapsed_ns": 2_000_000_000,
    "cpus": [
        {"cpu": 0, "n": 4, "last": 12_000, "max": 40_000, "sum": 80_000},
        {"cpu": 1, "n": 0, "sum": 0},
    ],
}


def stream(*middle: tuple[str, dict[str, object]]) -> Run:
    w = StreamWriter()
    w.hello()
    w.begin("JIT-PER", "Periodic")
    for kind, body in middle:
        w.record(kind, body)
    w.series("JIT-PER", "latency", [10, 20, 30], point={"cpu": 1})
    w.end("JIT-PER", "passed")
    w.bye()
    result = parse_lines(w.lines)
    return assemble(result.records, result.issues, result.log)


def test_progress_records_cost_nothing() -> None:
    run = stream(("progress", PROGRESS), ("progress", PROGRESS))
    assert run.issues == [] and run.complete
    c = run.case("JIT-PER")
    assert c is not None and c.outcome == "passed" and [s.n for s in c.series] == [3]
    assert c.warnings == []


def test_a_damaged_progress_record_never_costs_the_case() -> None:
    bad = dict(PROGRESS, cpus=[{"cpu": 0, "n": "four", "sum": 0}])
    run = stream(("progress", bad))
    assert [i.kind for i in run.issues] == ["damaged"]
    assert "n" in run.issues[0].detail
    c = run.case("JIT-PER")
    assert c is not None and c.outcome == "passed" and c.series[0].n == 3


def test_a_break_record_becomes_the_case_warning() -> None:
    brk = {
        "case": "JIT-PER",
        "series": "latency",
        "point": {"cpu": 1},
        "cpu": 1,
        "index": 2,
        "value": 30_500,
        "threshold": 25_000,
        "at_ns": 1_500_000_000,
    }
    run = stream(("break", brk))
    assert run.issues == []
    c = run.case("JIT-PER")
    assert c is not None
    [w] = [w for w in c.warnings if w.code == "break"]
    assert w.detail.startswith(
        "stopped at the first latency over 25 µs: sample 2 on CPU 1, 30.5 µs"
    )
    assert "1.500 s into the case" in w.detail
    # Required fields: a break that does not name its sample is damage.
    run = stream(("break", {k: v for k, v in brk.items() if k != "index"}))
    assert [i.kind for i in run.issues] == ["damaged"]


def test_live_figures() -> None:
    snap = live.snapshot(PROGRESS)
    assert [(c.cpu, c.n, c.avg) for c in snap.cpus] == [(0, 4, 20_000.0), (1, 0, None)]
    line = live.one_line(snap, 60)
    assert line == (
        "JIT-PER 2 s of 60 s latency µs: CPU0 cur 12.0 avg 20.0 max 40.0 n 4 | "
        "CPU1 cur - avg - max - n 0"
    )
    rows = live.table_lines(snap)
    assert len(rows) == 2 + 2 and rows[2].split() == ["0", "12.0", "20.0", "40.0", "4"]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10s", 10), ("60m", 3600), ("2h", 7200), ("500ms", 0.5), ("90", 90), ("1.5h", 5400)],
)
def test_durations(text: str, seconds: float) -> None:
    assert soak.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "ten", "10 parsecs", "0s", "30d"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(soak.SoakError):
        soak.parse_duration(text)


def _apply(plan: list[Planned], *args: Any) -> list[str]:
    """soak.apply's options for the agent (the request rendered, cases aside)."""
    request = AgentRequest(plan)
    soak.apply(request, *args)
    return [a for a in request.argv() if a.startswith("--")]


def test_apply_sets_the_per_cpu_cases_only() -> None:
    plan = [Planned("JIT-PER", {"cycles": "5000"}), Planned("CAL-REF")]
    args = _apply(plan, "all", 10.0, 500.0, set())
    assert sorted(args) == sorted(["--progress=1000", "--cpus=all", "--break=500000"])
    assert plan[0].params == {"cycles": str(soak.SOAK_CYCLES), "duration_ms": "10000"}
    assert plan[1].params == {}
    # The user's own cycles win; without soak options only the live figures.
    plan = [Planned("JIT-PER", {"cycles": "77"})]
    _apply(plan, None, 1.0, None, soak.user_overrides(["JIT-*.cycles=77"]))
    assert plan[0].params["cycles"] == "77"
    assert _apply([Planned("JIT-PER")], None, None, None, set()) == ["--progress=1000"]
    assert _apply([Planned("CAL-REF")], None, None, None, set()) == []
    with pytest.raises(soak.SoakError, match="JIT-PER"):
        _apply([Planned("CAL-REF")], "all", None, None, set())
    with pytest.raises(soak.SoakError):
        _apply([Planned("JIT-PER")], "1;2", None, None, set())


def test_the_per_cpu_trait_comes_from_the_agents_table() -> None:
    """Issue 23: a trait declared once, in the agent's case table (`--list`:
    "per_cpu"); the host has no list of its own. A case the table calls
    per-CPU takes --cpus and --duration with no host edit; one it does not
    is refused."""
    table = {
        "CAL-REF": AgentCase("CAL-REF", "t", True, params=[{"name": "duration_ms"}],
                             per_cpu=True),
        "JIT-PER": AgentCase("JIT-PER", "t", True, params=[{"name": "cycles"}]),
    }  # fmt: skip
    plan = [Planned("CAL-REF")]
    assert sorted(_apply(plan, "all", 2.0, None, set(), table)) == ["--cpus=all", "--progress=1000"]
    assert plan[0].params == {"duration_ms": "2000"}  # no `cycles`: it has none
    with pytest.raises(soak.SoakError, match=r"\(CAL-REF\)"):
        _apply([Planned("JIT-PER")], "all", None, None, set(), table)
    assert soak.per_cpu_cases() == ["JIT-PER", "NOISE-OS"]  # the shipped POSIX table
