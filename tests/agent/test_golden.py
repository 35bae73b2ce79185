"""Golden tests of the agent's output: every line's grammar, each record
kind's keys, the order of records, and the command line's errors."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rtbench.stream import assemble, parse_lines

LINE = re.compile(rb"^@rtb (1) (\d+) ([a-z_]+) (\{.*\}) ([0-9a-f]{8})$")
SHORT = [
    "CAL-TIMER:reads=2000:rounds=200",
    "CAL-REF:repeats=20",
    "THR-SW:n=2,5:duration_ms=30",
    "SEM-SHF:duration_ms=30",
]


@pytest.fixture(scope="module")
def short_run(agent: Path, run_agent: Callable[..., Any]) -> Any:
    return run_agent(agent, SHORT)


def test_every_line_is_a_well_formed_record(short_run: Any) -> None:
    lines = short_run.stdout.splitlines()
    assert lines, short_run.stderr
    for seq, line in enumerate(lines):
        m = LINE.match(line)
        assert m, line[:200]
        assert int(m.group(2)) == seq
        covered = line[len(b"@rtb ") : -9]
        assert zlib.crc32(covered) == int(m.group(5), 16)
        assert isinstance(json.loads(m.group(4)), dict)


def test_record_order_and_counts(short_run: Any) -> None:
    kinds = [r.kind for r in short_run.parsed.records]
    assert kinds[0] == "hello" and kinds[-1] == "bye"
    assert short_run.parsed.issues == []
    bye = short_run.parsed.records[-1].body
    assert bye["records"] == len(kinds)
    # begin/end pairs, in the order asked for, nothing outside them but run-wide records
    begins = [r.body["case"] for r in short_run.parsed.records if r.kind == "begin"]
    ends = [r.body["case"] for r in short_run.parsed.records if r.kind == "end"]
    assert begins == ends == ["CAL-TIMER", "CAL-REF", "THR-SW", "SEM-SHF"]
    inside = None
    for r in short_run.parsed.records:
        if r.kind == "begin":
            inside = r.body["case"]
        elif r.kind == "end":
            inside = None
        elif r.kind in ("summary", "hist", "samples", "check"):
            assert r.body["case"] == inside


def test_hello_describes_the_run(short_run: Any) -> None:
    h = short_run.run.hello
    assert h["format"] == 1 and h["port"] == "posix"
    assert h["os"]["sysname"] == "Linux"
    # The kernel's own view, read on the target (the host's /proc is not the target's).
    assert h["os"]["cmdline"] == Path("/proc/cmdline").read_text().strip()
    for key in ("preempt", "preempt_mode", "clocksource", "isolated_cpus"):
        assert isinstance(h["os"][key], str)
    assert h["clock"]["source"].startswith("clock_gettime")
    assert h["clock"]["read_overhead_ns"] > 0
    assert h["build"]["test_hooks"] is False
    assert isinstance(h["realtime"]["ok"], bool)
    assert h["params"]["cases"] == ["CAL-TIMER", "CAL-REF", "THR-SW", "SEM-SHF"]


def test_series_are_complete_and_consistent(short_run: Any) -> None:
    run = short_run.run
    for case in run.cases:
        assert case.outcome in ("passed", "failed"), (case.case, case.reason)
        for s in case.series:
            assert s.hist is not None and s.samples is not None
            # conservation: summary, histogram and raw samples agree exactly
            assert s.n == s.hist.n == len(s.samples) + s.dropped
            assert s.hist.n == sum(c for _, c in s.hist.counts) + s.hist.underflow + s.hist.overflow
            if len(s.samples):
                assert int(s.samples.min()) == s.min and int(s.samples.max()) == s.max
                assert int(s.samples.sum()) == s.sum
    sweep = [s.point for s in run.case("THR-SW").series]
    assert sweep == [{"n": 2}, {"n": 5}]
    assert run.case("CAL-REF").find("t_std").n == 20


def test_both_parser_paths_read_it_alike(short_run: Any) -> None:
    """The parser's samples fast path and its plain path (json and the
    schema check of every record, issue 22) give the same records, bodies
    (key order too) and figures for a real agent's stream."""
    plain = parse_lines(short_run.stdout.splitlines(), fast=False)
    fast = short_run.parsed
    assert sum(r.kind == "samples" and r.checked for r in fast.records) >= 4
    assert [(r.seq, r.kind, json.dumps(r.body), r.line) for r in fast.records] == [
        (r.seq, r.kind, json.dumps(r.body), r.line) for r in plain.records
    ]
    assert fast.issues == plain.issues == []
    run = assemble(plain.records, plain.issues, plain.log)

    def shown(r: Any) -> list[Any]:
        return [
            (s.label, s.unit, s.kind, s.n, s.min, s.max, s.sum, s.holes, s.samples.tolist())
            for c in r.cases
            for s in c.series
            if s.samples is not None
        ]

    assert shown(short_run.run) == shown(run) != []


def test_no_samples_keeps_histograms(agent: Path, run_agent: Callable[..., Any]) -> None:
    r = run_agent(agent, ["--no-samples", "CAL-REF:repeats=10"])
    s = r.run.case("CAL-REF").find("t_std")
    assert s.samples is None and s.hist is not None and s.n == 10


def test_list_describes_every_case(agent: Path, run_agent: Callable[..., Any]) -> None:
    import subprocess

    out = subprocess.run([str(agent), "--list"], capture_output=True, text=True, check=True).stdout
    cases = [json.loads(line) for line in out.splitlines()]
    ids = [c["id"] for c in cases]
    assert ids[:4] == ["CAL-TIMER", "CAL-REF", "THR-SW", "SEM-SHF"]
    assert len(set(ids)) == len(ids)
    for c in cases:
        assert re.fullmatch(r"[A-Z]+(-[A-Z]+)+", c["id"])
        # a port that cannot run a case says why; it never fakes a number
        assert c["supported"] or c["reason"]
        for p in c["params"]:
            assert p["min"] <= min(p["default"]) and max(p["default"]) <= p["max"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["NOPE-1"], r"unknown case 'NOPE-1'; cases: CAL-TIMER CAL-REF THR-SW SEM-SHF"),
        (["THR-SW:m=3"], r"THR-SW has no parameter 'm'; it has: n, duration_ms"),
        (["THR-SW:n=1"], r"THR-SW.n=1 is out of range \[2, 4096\]"),
        (["THR-SW:n=2,x"], r"is not an integer list"),
        (["CAL-REF:repeats=50,60"], r"CAL-REF.repeats takes one value"),
        (["THR-SW:duration_ms"], r"is not name=value"),
        (["--priority", "99", "CAL-REF"], r"--priority must be"),
        (["--cpu", "4096", "CAL-REF"], r"--cpu 4096"),
        (["--inject", "yield_delay=1", "CAL-REF"], r"--inject needs a test build"),
        ([], r"usage"),
    ],
)
def test_bad_arguments_are_clear_errors(
    agent: Path, run_agent: Callable[..., Any], args: list[str], message: str
) -> None:
    r = run_agent(agent, args)
    assert r.code == 2
    assert re.search(message, r.stderr), r.stderr
    assert r.parsed.records == []  # nothing ran


def test_counts_are_not_called_nanoseconds(agent: Path, run_agent: Callable[..., Any]) -> None:
    r = run_agent(agent, ["IRQ-SUS:count=300:duration_ms=2000", "CAL-REF:repeats=10"])
    units = {(s.case, s.name): s.unit for c in r.run.cases for s in c.series}
    assert units[("IRQ-SUS", "losses")] == units[("IRQ-SUS", "delivered")] == "count"
    # The result is a period either way: the shortest lossless one, or, on a
    # machine that lost events at every period it could try, the bound.
    periods = {n for (c, n) in units if c == "IRQ-SUS"} & {"sustained_period", "lossy_period"}
    assert len(periods) == 1, units
    assert units[("IRQ-SUS", periods.pop())] == units[("CAL-REF", "t_std")] == "ns"


def test_every_series_record_declares_its_kind(agent: Path, run_agent: Callable[..., Any]) -> None:
    """The agent writes `kind` on every series record (the host's fallback
    for older streams is not what gives these their kinds)."""
    r = run_agent(agent, ["IRQ-SUS:count=300:duration_ms=2000", "CAL-REF:repeats=10",
                          "THR-SW:n=2:duration_ms=50"])  # fmt: skip
    declared = {
        (b["case"], b["series"]): (b["kind"], b["unit"])
        for rec in r.parsed.records
        if rec.kind in ("samples", "hist", "summary")
        for b in [rec.body]
    }
    assert all("kind" in rec.body for rec in r.parsed.records if rec.kind == "summary")
    assert (
        declared[("IRQ-SUS", "losses")]
        == declared[("IRQ-SUS", "delivered")]
        == (
            "count",
            "count",
        )
    )
    assert declared[("CAL-REF", "t_std")] == ("duration", "ns")
    assert declared[("THR-SW", "switch")] == ("latency", "ns")
    period = [k for (c, n), (k, _) in declared.items() if n.endswith("_period")]
    assert period == ["period"], declared


def test_list_declares_the_task_count_parameters(agent: Path) -> None:
    import subprocess

    out = subprocess.run([str(agent), "--list"], capture_output=True, text=True, check=True).stdout
    tasks = {c["id"]: c["tasks"] for c in map(json.loads, out.splitlines()) if "tasks" in c}
    # Only these sweeps count tasks: THR-NEW's scenario, SEM-NEW's used,
    # MQ-LAT's size, CLK-RES's request_ns and IRQ-SUS's period_ns do not.
    assert tasks == {"THR-SW": "n", "SEM-ARC": "n", "THR-CTX": "n"}


def test_hard_deadline_follows_the_run_asked_for(agent: Path) -> None:
    """JIT-PER's deadline comes from cycles x period (3x + slack), so a long
    run is not cut short by a default; read from `begin`, then stop it."""
    import subprocess

    from rtbench.stream import StreamParser

    proc = subprocess.Popen(
        [
            str(agent),
            "--deadline-slack",
            "1000",
            "JIT-PER:period_us=10000:cycles=50000:load_threads=0",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        parser = StreamParser()
        assert proc.stdout is not None
        for line in proc.stdout:
            rec = parser.feed(line)
            if rec is not None and rec.kind == "begin":
                assert rec.body["deadline_ms"] == 3 * 50000 * 10 + 1000
                assert rec.body["params"]["duration_ms"] == 0  # no cap by default
                break
        else:
            raise AssertionError("no begin record")
    finally:
        proc.kill()
        proc.wait()
