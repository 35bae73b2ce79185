"""End-to-end: the analysis commands as a user runs them (command, exit code,
expected patterns): analyze, compare, check, label, export, import,
import-cyclictest (also on a real cyclictest file when rt-tests is here).
They run in this process (helpers.rtbench_here: the same entry point, no
interpreter start-up per command); the measuring `run` as a process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from helpers import rtbench, rtbench_here

from rtbench.stream import StreamWriter, default_hello


def stream(path: Path, scale: float, seed: int) -> Path:
    """A run with CAL-REF (T_std 1 µs), THR-SW at n=2,10 and SEM-SHF."""
    w = StreamWriter()
    w.hello(default_hello(["CAL-REF", "THR-SW", "SEM-SHF"]))
    rng = np.random.default_rng(seed)
    w.begin("CAL-REF")
    w.series("CAL-REF", "t_std", [1000] * 100)
    w.end("CAL-REF")
    w.begin("THR-SW")
    for n in (2, 10):
        values = [int(v * scale) for v in rng.lognormal(7, 0.2, 3000)]
        w.series("THR-SW", "switch", values, point={"n": n})
    w.end("THR-SW")
    w.begin("SEM-SHF")
    w.series("SEM-SHF", "give_to_run", [int(v * scale) for v in rng.lognormal(7.5, 0.2, 3000)])
    w.end("SEM-SHF")
    w.bye()
    path.write_text("".join(w.lines))
    return path


@pytest.fixture
def two_runs(db: Path, tmp_path: Path) -> Path:
    for i, scale in enumerate((1.0, 1.5)):
        r = rtbench_here("ingest", str(stream(tmp_path / f"{i}.rtb", scale, i)), "--label", "os=x")
        assert r.returncode == 0, r.stdout + r.stderr
    return db


def test_compare(two_runs: Path) -> None:
    r = rtbench_here("compare", "1", "2", "--indicator", "p50")
    assert r.returncode == 0, r.stderr
    # One run per side: the ratio, no p-value, and why.
    row = r"THR-SW\s+│ switch\[n=2\]\s+│ µs\s+│.*│\s+1\.5\d\s+│\s+-\s+│"
    assert re.search(row, r.stdout), r.stdout
    flat = " ".join(r.stdout.split())
    assert "No test: one run per side" in flat and "--repeat k" in flat, flat
    r = rtbench_here("compare", "--label", "os=x")
    assert r.returncode == 0 and "#2/#1" in r.stdout
    r = rtbench_here("compare", "1")
    assert r.returncode == 2 and "needs two runs" in r.stderr
    r = rtbench_here("compare", "1", "7")
    assert r.returncode == 2 and "no run '7'" in r.stderr


def test_compare_groups_of_repetitions(db: Path, tmp_path: Path) -> None:
    """Runs sharing labels (but for `repeat`) are one side; REF 1,2,3 is too.
    The 1.5x side differs beyond run-to-run noise, the same configuration
    split in two does not."""
    for i, (scale, os_) in enumerate([(1.0, "a")] * 4 + [(1.5, "b")] * 3):
        path = stream(tmp_path / f"{i}.rtb", scale, i)
        r = rtbench_here("ingest", str(path), "--label", f"os={os_}", "--label", f"repeat={i}")
        assert r.returncode == 0, r.stdout + r.stderr
    r = rtbench_here("compare", "--label", "os", "--indicator", "p50")
    flat = " ".join(r.stdout.split())
    assert r.returncode == 0 and "3 series differ beyond run-to-run noise" in flat, flat
    assert "Welch's t-test on the per-run p50 (log scale, 4 vs 3 runs)" in flat
    assert re.search(r"switch\[n=2\].*│\s+1\.5\d\s+│\s+[\d.e-]+\*\s+│.*│ yes", r.stdout)
    r = rtbench_here("compare", "1,2", "3,4", "--indicator", "p50")
    flat = " ".join(r.stdout.split())
    assert r.returncode == 0 and "No difference beyond run-to-run noise" in flat, flat
    r = rtbench_here("compare", "1,2", "5", "--indicator", "p50", "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["members"] == [[1, 2], [5]] and doc["note"].startswith("one run per side")


def test_check_outcomes_and_junit(two_runs: Path, tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text('"THR-SW.switch[n=2].p50" = { max_us = 50 }\n"run.stars" = { min = 0 }\n')
    junit = tmp_path / "out.xml"
    r = rtbench_here("check", "1", "--criteria", str(good), "--junit", str(junit))
    assert r.returncode == 0 and "Check: passed" in r.stdout, r.stdout + r.stderr
    assert ET.parse(junit).getroot().get("tests") == "2"

    rel = tmp_path / "rel.toml"
    rel.write_text('"SEM-SHF.give_to_run.p50" = { max_ratio = 1.2 }\n')
    r = rtbench_here("check", "2", "--criteria", str(rel), "--baseline", "1", "--junit", str(junit))
    assert r.returncode == 1 and "Check: failed" in r.stdout, r.stdout
    failure = ET.parse(junit).getroot().find("testsuite/testcase/failure")
    assert failure is not None
    assert re.search(r"ratio 1\.\d+ breaks max_ratio = 1\.2", failure.get("message", ""))
    r = rtbench_here("check", "1", "--criteria", str(rel), "--baseline", "1")
    assert r.returncode == 0

    unknown = tmp_path / "unknown.toml"
    unknown.write_text('"THR-SW.switch[n=3].max" = { max_us = 5 }\n')
    r = rtbench_here("check", "1", "--criteria", str(unknown), "--junit", str(junit))
    assert r.returncode == 2 and "no point [n=3]" in r.stdout
    assert ET.parse(junit).getroot().get("errors") == "1"

    bad = tmp_path / "bad.toml"
    bad.write_text('"THR-SW.switch.p99" = 5\n')
    r = rtbench_here("check", "1", "--criteria", str(bad))
    assert r.returncode == 2 and "table of bounds" in r.stderr and "Traceback" not in r.stderr
    r = rtbench_here("check", "9", "--criteria", str(good))
    assert r.returncode == 2 and "no run '9'" in r.stderr


def test_label_and_filter(two_runs: Path) -> None:
    r = rtbench_here("label", "1", "kernel=rt", "board=pi")
    assert r.returncode == 0 and "board=pi, kernel=rt, os=x" in r.stdout
    r = rtbench_here("label", "1", "--remove", "board")
    assert r.returncode == 0 and "kernel=rt, os=x" in r.stdout and "board" not in r.stdout
    r = rtbench_here("runs", "--label", "kernel=rt")
    assert re.search(r"│ 1 ", r.stdout) and not re.search(r"│ 2 ", r.stdout)
    assert rtbench_here("label", "1").returncode == 2
    assert rtbench_here("label", "5", "a=b").returncode == 2


def test_export_and_import_round_trip(two_runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    assert rtbench_here("export", "1", "-o", str(out), "--samples").returncode == 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == "rtbench-export" and doc["schema_version"] == 1
    r = rtbench_here("export", "1", "--format", "csv", "-o", "-")
    assert r.returncode == 0 and r.stdout.startswith("run_id,") and len(r.stdout.splitlines()) == 5
    r = rtbench_here("import", str(out))  # the store holds this run (its identity)
    assert r.returncode == 0 and "already stored as run 1" in r.stderr, r.stdout + r.stderr
    r = rtbench_here("import", str(out), "--label", "copy=yes", "--force-copy")
    assert r.returncode == 0 and "stored as run 3" in r.stdout, r.stdout + r.stderr
    r = rtbench_here("compare", "1", "3", "--indicator", "mean")
    assert r.returncode == 0 and re.search(r"switch\[n=2\].*│\s+1\.00\s+│\s+- ", r.stdout)
    junk = tmp_path / "junk.json"
    junk.write_text('{"schema": "x"}')
    r = rtbench_here("import", str(junk))
    assert r.returncode == 2 and "not an rtbench export" in r.stderr


def test_analyze(two_runs: Path, tmp_path: Path) -> None:
    r = rtbench_here("analyze", "1", "--references")
    assert r.returncode == 0, r.stderr
    patterns: tuple[str, ...] = (
        r"Statistics",
        r"switch\[n=2\]",
        r"Composite score \d",
        r"Overall: [★☆]{5}",
    )
    patterns += (r"Determinism", r"Worst case beyond the samples", r"other hardware")
    for pattern in patterns:
        assert re.search(pattern, r.stdout), pattern
    rubric = tmp_path / "r.toml"
    rubric.write_text("[thresholds.default]\nhard_us = 1e6\nsoft_us = 1e6\nfail_us = 1e7\n")
    r = rtbench_here("analyze", "1", "--rubric", str(rubric), "--no-evt")
    assert r.returncode == 0 and "Overall: ★★★★★" in r.stdout
    rubric.write_text("oops")
    r = rtbench_here("analyze", "1", "--rubric", str(rubric))
    assert r.returncode == 2 and "not valid TOML" in r.stderr


CYCLICTEST = """{
  "file_version": 1,
  "cmdline:": "cyclictest -l 100 -m -p 90 -h 100 --json=out.json",
  "rt_test_version:": "2.40",
  "start_time": "Sat, 21 Nov 2026 17:45:53 +0000",
  "end_time": "Sat, 21 Nov 2026 17:45:54 +0000",
  "return_code": 0,
  "sysinfo": {"sysname": "Linux", "nodename": "b", "release": "6.6-rt", "version": "#1",
              "machine": "x86_64", "realtime": 1},
  "num_threads": 1,
  "resolution_in_ns": 0,
  "thread": {"0": {"histogram": {"4": 60, "5": 39, "30": 1}, "cycles": 100, "min": 4,
                   "max": 30, "avg": 4.69, "cpu": 0, "node": 0}}
}
"""


def test_import_cyclictest(db: Path, tmp_path: Path) -> None:
    f = tmp_path / "ct.json"
    f.write_text(CYCLICTEST)
    r = rtbench_here("import-cyclictest", str(f), "--label", "tool=cyclictest")
    assert r.returncode == 0, r.stdout + r.stderr
    row = r"JIT-PER\s+│ latency\[cpu=0\]\s+│ µs\s+│\s+100 │\s+4\.000 │\s+4\.690"
    assert re.search(row, r.stdout), r.stdout
    assert "stored as run 1" in r.stdout
    r = rtbench_here("runs", "--label", "tool=cyclictest")
    assert re.search(r"│ 1 .*│ b ", r.stdout), r.stdout
    f.write_text("not json")
    r = rtbench_here("import-cyclictest", str(f))
    assert r.returncode == 2 and "not valid JSON" in r.stderr


@pytest.mark.realtime  # cyclictest measures under SCHED_FIFO
@pytest.mark.tools("rt-tests")
def test_import_a_real_cyclictest_file(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "real.json"
    run = subprocess.run(
        ["cyclictest", "-l", "1000", "-m", "-q", "-i", "200", "-h", "400", f"--json={out}"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    if run.returncode != 0 or not out.exists():
        pytest.skip(f"cyclictest could not run here: {run.stderr.strip()[:200]}")
    r = rtbench_here("import-cyclictest", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"JIT-PER\s+│ latency\[cpu=\d+\]\s+│ µs\s+│\s+1000 │", r.stdout), r.stdout
    r = rtbench_here("export", "1", "--format", "csv", "-o", "-")
    row = r.stdout.splitlines()[1].split(",")
    assert row[4:6] == ["JIT-PER", "latency"] and row[6].startswith("cpu=")
    assert row[7:9] == ["ns", "1000"]


def test_cyclictest_beside_a_jit_per_run(db: Path, tmp_path: Path, agent: Path) -> None:
    """An imported cyclictest file and a JIT-PER run on the same CPUs:
    `compare` lines up latency[cpu=N] with latency[cpu=N], and `report` of
    the two writes a comparison (it crashed with a traceback)."""
    # The first two CPUs the tests may use (one under `taskset -c N`).
    cpus = sorted(os.sched_getaffinity(0))[:2]
    threads = ",\n".join(
        f'"{i}": {{"histogram": {{"6": 100}}, "cycles": 100, "min": 6, "max": 6, "avg": 6.00,'
        f' "cpu": {cpu}, "node": 0}}'
        for i, cpu in enumerate(cpus)
    )
    f = tmp_path / "ct.json"
    head, _ = CYCLICTEST.split('  "thread": ')
    f.write_text(
        head.replace('"num_threads": 1', f'"num_threads": {len(cpus)}')
        + f'  "thread": {{{threads}}}\n}}\n'
    )
    assert rtbench_here("import-cyclictest", str(f)).returncode == 0
    r = rtbench("run", "-c", "JIT-PER", "--cpus", ",".join(map(str, cpus)),
                "--set", "JIT-PER.period_us=1000",
                "--set", "JIT-PER.cycles=200", "--set", "JIT-PER.load_threads=0")  # fmt: skip
    assert r.returncode in (0, 1), r.stdout + r.stderr
    r = rtbench_here("compare", "1", "2", "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {row["series"]: row for row in json.loads(r.stdout)["comparison"]}
    for cpu in cpus:
        row = rows[f"latency[cpu={cpu}]"]
        assert row["run_1"] is not None and row["run_2"] is not None, row
    page = tmp_path / "both.html"
    r = rtbench_here("report", "1", "2", "-o", str(page))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert f"latency[cpu={cpus[-1]}]" in page.read_text(encoding="utf-8")
