"""The verdict in two parts (rtbench.verdict): behaviour and timing, each
with its own outcome, in the run's outcome, the terminal and the report's
first screen. A deadline miss fails timing even when every behaviour check
held; a failed behaviour check with no miss fails behaviour only."""

from __future__ import annotations

import io
from typing import cast

from rich.console import Console

from rtbench.model import Run
from rtbench.reports.html import html_report
from rtbench.reports.markdown import render_markdown
from rtbench.reports.terminal import render_run
from rtbench.stream import StreamWriter, assemble, default_hello, parse_lines
from rtbench.verdict import deadline_misses, miss_count, verdict

OVERRUN = (
    "CPU 1: 3 of 994 releases came after the next planned release; 7 periods skipped; "
    "max latency 6862.4 us (period 1000 us)"
)


def make(
    *,
    overrun: str | None = None,
    order: str = "pass",
    brk: str | None = None,
    cases: tuple[str, ...] = ("SEM-SHF", "JIT-PER"),
) -> Run:
    w = StreamWriter()
    w.hello(default_hello(list(cases)))
    if "SEM-SHF" in cases:
        w.begin("SEM-SHF")
        w.series("SEM-SHF", "give_to_run", [1000, 1100, 1200])
        w.check("SEM-SHF", "order", order, "the order held" if order == "pass" else "out of order")
        w.end("SEM-SHF", "passed" if order == "pass" else "failed")
    if "JIT-PER" in cases:
        w.begin("JIT-PER")
        w.series("JIT-PER", "latency", [5000, 6000, 7000])
        w.check("JIT-PER", "releases", "pass", "none early")
        if brk is not None:
            w.check("JIT-PER", "break", brk, "latency 900.0 us at release 12, over the 500 us")
        if overrun is not None:
            w.warn("overrun", overrun, case="JIT-PER")
        w.end("JIT-PER", "failed" if brk == "fail" else "passed")
    w.bye()
    parsed = parse_lines([line.encode() for line in w.lines])
    return assemble(parsed.records, parsed.issues, parsed.log)


def test_counts_of_the_agents_miss_warnings() -> None:
    assert miss_count("overrun", OVERRUN) == 3
    assert miss_count("overrun", "timer: 9510 of 20000 expiries came while ...") == 9510
    assert miss_count("lost_wakeups", "100 gives but 97 wake-ups") == 3


def test_a_deadline_miss_fails_timing_and_the_run_not_behaviour() -> None:
    run = make(overrun=OVERRUN)
    assert all(c.outcome == "passed" for c in run.cases)  # every check held
    v = verdict(run)
    assert (v.behaviour.outcome, v.timing.outcome) == ("passed", "failed")
    assert v.timing.reasons == (f"JIT-PER: {OVERRUN}",) and deadline_misses(run)
    assert run.outcome == "failed"  # exit 1: never "passed" with late releases
    # Negative control: no miss, no failed timing.
    clean = make()
    assert clean.outcome == "passed" and verdict(clean).timing.outcome == "passed"


def test_a_break_crossed_is_timing_a_failed_order_is_behaviour() -> None:
    v = verdict(make(brk="fail"))
    assert (v.behaviour.outcome, v.timing.outcome) == ("passed", "failed")
    assert v.timing.reasons == ("JIT-PER break failed",)
    v = verdict(make(order="fail"))
    assert (v.behaviour.outcome, v.timing.outcome) == ("failed", "passed")
    assert v.behaviour.reasons == ("SEM-SHF order failed",)


def test_timing_not_judged_without_a_case_with_deadlines() -> None:
    v = verdict(make(cases=("SEM-SHF",)))
    assert v.timing.outcome == "skipped" and v.timing.reasons == ("no case here has deadlines",)


def test_every_output_shows_both_parts() -> None:
    run = make(overrun=OVERRUN)
    buf = io.StringIO()
    render_run(run, Console(file=buf, width=200, color_system=None))
    text = buf.getvalue()
    assert "Result: failed" in text
    assert "Behaviour: passed" in text and "Timing: failed (JIT-PER: CPU 1: 3 of 994" in text
    page = html_report([run])
    first = page[page.index('id="summary"') : page.index("</section>", page.index('id="summary"'))]
    assert 'id="verdict-parts"' in first and "timing <span class=\"badge failed\">failed" in first
    assert "behaviour <span class=\"badge passed\">passed" in first
    md = render_markdown([run])
    assert "Behaviour **passed**, timing **failed**" in md


def test_the_tolerance_is_the_runs_own() -> None:
    run = make(overrun=OVERRUN)  # 3 misses
    run.labels = {"allow_misses": "3"}
    assert run.outcome == "passed" and verdict(run).timing.outcome == "passed"
    run.labels = {"allow_misses": "2"}
    assert cast(str, run.outcome) == "failed" and verdict(run).timing.outcome == "failed"
