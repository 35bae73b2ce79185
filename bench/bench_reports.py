"""Reports and analysis in seconds: CPU seconds of `rtbench report` and
`rtbench analyze` of a quick run, beside `rtbench --version` (the
interpreter and import floor of any command), in the same run.

    .venv/bin/python bench/bench_reports.py [--stream FILE] [--rounds 3] [--json] [--smoke]
    .venv/bin/python bench/bench_reports.py --phases [--stream FILE]

The run is a real one: the quick suite measured on this machine once
(`rtbench run --suite quick --no-store --save-stream`), or --stream, stored
into a temporary SQLite store with `rtbench ingest`. Each round runs the
three commands in turn (interleaved, so the machine's other work hits all
alike), each a fresh process; a command's CPU seconds (user + system, from
the kernel's accounting of the child) count, not wall time, which swings
3x on a shared machine. The fewest of the rounds count.

--phases: where the report's CPU goes instead, in one process: the CPU
seconds inside the chart functions, the series statistics, the EVT fits
and Jinja's template compilation, the rest (imports, store reads, page
rendering) by difference from the command's total.

Goals (issue 22): report <= 3 s, analyze <= 2 s of CPU.
Exit 0 whether the goals are met or missed; 2 if a step could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

GOALS = {"report": 3.0, "analyze": 2.0}
CLI = [sys.executable, "-m", "rtbench.cli"]


class BenchError(RuntimeError):
    pass


# Functions timed by --phases, none calling another of the list (so the
# phases do not overlap): module, attribute (a class method as "Class.name").
PHASES = {
    "charts": [("rtbench.reports.charts", n) for n in ("group_svg", "timeseries_svg", "curve_svg")]
    + [("rtbench.reports.plots", n) for n in ("summary_histogram_svg", "exceedance_svg")],
    "series statistics": [("rtbench.analysis.stats", "series_stats")],
    "EVT fits": [("rtbench.analysis.evt", "worst_case")],
    "template compile": [("jinja2.environment", "Environment.compile")],
}

# Run in a child (python -c) with the store in RTBENCH_DB: every holder of a
# timed function (a module that imported it by name too) gets the wrapper.
_PHASES_CHILD = """
import functools, importlib, json, sys, time
spec, out = json.loads(sys.argv[1]), sys.argv[2]
spent = {p: 0.0 for p in spec}
calls = {p: 0 for p in spec}
import rtbench.cli, rtbench.reports.content, rtbench.reports.summary, rtbench.reports.plots
def timed(phase, f):
    @functools.wraps(f)
    def w(*a, **k):
        t = time.process_time()
        try:
            return f(*a, **k)
        finally:
            spent[phase] += time.process_time() - t
            calls[phase] += 1
    return w
for phase, targets in spec.items():
    for mod, attr in targets:
        owner = importlib.import_module(mod)
        *cls, name = attr.split(".")
        if cls:
            owner = getattr(owner, cls[0])
        f = getattr(owner, name)
        w = timed(phase, f)
        setattr(owner, name, w)
        for m in list(sys.modules.values()):
            try:
                if getattr(m, name, None) is f:
                    setattr(m, name, w)
            except Exception:  # a module whose __getattr__ refuses
                pass
t0 = time.process_time()
rtbench.cli.main(["report", "latest", "-o", out], standalone_mode=False)
spent["command"] = time.process_time() - t0
spent["process"] = time.process_time()
print(json.dumps({"cpu_s": spent, "calls": calls}))
"""


def phases(tmp: Path, stream: Path | None, cases: list[str]) -> dict[str, Any]:
    """The report's CPU by phase, in one process."""
    env = {**os.environ, "RTBENCH_DB": str(tmp / "bench.sqlite")}
    stream = stored_stream(tmp, stream, cases, env)
    args = [sys.executable, "-c", _PHASES_CHILD, json.dumps(PHASES), str(tmp / "report.html")]
    proc = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise BenchError(f"report --phases (exit {proc.returncode}): {proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def stored_stream(tmp: Path, stream: Path | None, cases: list[str], env: dict[str, str]) -> Path:
    """The stream (the quick suite run here when none is given), ingested."""
    if stream is None:
        stream = tmp / "quick.rtb"
        chosen = [a for c in cases for a in ("-c", c)]
        cpu_seconds([*CLI, "run", "--suite", "quick", *chosen, "--no-store",
                     "--save-stream", str(stream)], env)  # fmt: skip
    cpu_seconds([*CLI, "ingest", str(stream)], env)
    return stream


def cpu_seconds(args: list[str], env: dict[str, str]) -> float:
    """User + system CPU seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):  # 1: the run's outcome (a failed case), still timed
        raise BenchError(f"{' '.join(args)} (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench(tmp: Path, stream: Path | None, rounds: int, cases: list[str]) -> dict[str, Any]:
    env = {**os.environ, "RTBENCH_DB": str(tmp / "bench.sqlite")}
    stream = stored_stream(tmp, stream, cases, env)
    commands = {
        "--version (floor)": [*CLI, "--version"],
        "analyze": [*CLI, "analyze", "latest"],
        "report": [*CLI, "report", "latest", "-o", str(tmp / "report.html")],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, args in commands.items():
            times[name].append(cpu_seconds(args, env))
    best = {name: min(ts) for name, ts in times.items()}
    return {
        "stream_bytes": stream.stat().st_size,
        "cpu_s": best,
        "rounds": times,
        "goals_s": GOALS,
        "pass": {name: best[name] <= goal for name, goal in GOALS.items()},
        "report_bytes": (tmp / "report.html").stat().st_size,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stream", type=Path, help="a saved stream of the quick suite")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="two cases, one round")
    ap.add_argument("--phases", action="store_true", help="the report's CPU by phase")
    a = ap.parse_args()
    cases = []
    if a.smoke:  # the suite runs this so that a bench that no longer runs fails CI
        a.rounds, cases = 1, ["CAL-REF", "SEM-ARN"]
    try:
        with tempfile.TemporaryDirectory(prefix="rtbench-bench-reports-") as tmp:
            if a.phases:
                result = phases(Path(tmp), a.stream, cases)
            else:
                result = bench(Path(tmp), a.stream, a.rounds, cases)
            if a.smoke:  # --phases too, on the same run, so that it cannot rot either
                phases(Path(tmp), a.stream or Path(tmp) / "quick.rtb", cases)
    except (BenchError, OSError) as e:
        print(f"bench_reports: {e}", file=sys.stderr)
        return 2
    if a.phases and not a.json:
        cpu, calls = result["cpu_s"], result["calls"]
        print("rtbench report in one process, CPU seconds by phase:")
        for name in PHASES:
            print(f"  {name:18} {cpu[name]:6.2f} s   ({calls[name]} calls)")
        rest = cpu["command"] - sum(cpu[name] for name in PHASES)
        before = cpu["process"] - cpu["command"]
        print(f"  {'rest of report':18} {rest:6.2f} s   (store reads, page rendering, imports)")
        print(f"  {'before report':18} {before:6.2f} s   (interpreter, the CLI's imports)")
        print(f"  {'process':18} {cpu['process']:6.2f} s")
        return 0
    if a.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"a stored run of {result['stream_bytes'] / 1e6:.1f} MB of stream; CPU seconds "
          f"(user + system), the fewest of {a.rounds} interleaved rounds")  # fmt: skip
    for name, secs in result["cpu_s"].items():
        goal = GOALS.get(name)
        verdict = "" if goal is None else f"goal <= {goal:g} s  " + (
            "PASS" if secs <= goal else "MISS")  # fmt: skip
        rounds = ", ".join(f"{t:.2f}" for t in result["rounds"][name])
        print(f"  {name:18} {secs:6.2f} s   ({rounds})  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
