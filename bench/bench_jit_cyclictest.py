"""JIT-PER against cyclictest: the same periodic SCHED_FIFO wake-up, measured by both.

Each round runs the agent directly (`rtbench-agent --cpu C --priority P
JIT-PER:period_us=..:cycles=..:load_threads=0`, raw samples of series
`latency`) and then `cyclictest -m -q -t1 -a C -p P -i PERIOD -l COUNT -h ..
--default-system --json=FILE` (its JSON histogram), with the same period, count,
priority and CPU; rounds alternate the two so machine noise hits both alike.
The rounds are pooled per tool and p50, p99 and max compared at cyclictest's
resolution: whole µs, rtbench's ns truncated the same way. rtbench's exact ns
figures are printed beside. Goal: p50 within 25 % of cyclictest's.

    .venv/bin/python bench/bench_jit_cyclictest.py [--period-us 1000] [--count 5000]
        [--rounds 3] [--cpu N] [--priority 80] [--pm-qos] [--json]

Exit 0 whether the goal is met or missed, and when skipped (no cyclictest, no
SCHED_FIFO); 2 if a step could not run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from rtbench.io.cyclictest import CyclictestError, read_cyclictest
from rtbench.machine.build import BuildError, ensure_agent
from rtbench.stream import load_run

GOAL = 0.25  # |rtbench p50 / cyclictest p50 - 1|
HIST_US = 100_000  # cyclictest -h: whole-µs buckets 0..HIST_US-1; beyond is overflow
QS = {"p50": 50.0, "p99": 99.0}
Counts = npt.NDArray[np.int64]  # samples per whole µs; the last cell is overflow


class BenchError(RuntimeError):
    pass


class Skip(RuntimeError):  # exit 0 with the reason
    pass


def fifo_refusal(prio: int) -> str | None:
    """Why this user may not run SCHED_FIFO at prio (None: it may), tried in a child."""
    code = f"import os; os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param({prio}))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return proc.stderr.strip().splitlines()[-1] if proc.returncode else None


def rank_of(q: float, n: int) -> int:
    return max(1, math.ceil(q / 100 * n))  # nearest rank, the same rule for both tools


def pct_us(counts: Counts, q: float) -> int:
    cum = np.cumsum(counts)
    return int(np.searchsorted(cum, rank_of(q, int(cum[-1]))))  # == HIST_US: overflow


def to_counts(us: npt.NDArray[np.int64]) -> Counts:
    return np.bincount(np.minimum(us, HIST_US), minlength=HIST_US + 1).astype(np.int64)


def run_rtbench(agent: Path, a: argparse.Namespace, out: Path) -> npt.NDArray[np.int64]:
    duration_ms = min(86_400_000, a.count * a.period_us // 1000 + 10_000)
    spec = (f"JIT-PER:period_us={a.period_us}:cycles={a.count}:load_threads=0"
            f":duration_ms={duration_ms}")
    cmd = [str(agent), "--cpu", str(a.cpu), "--priority", str(a.priority),
           "--max-samples", str(a.count), spec]
    with out.open("wb") as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE, text=True, check=False)
    run = load_run(out)
    if not (run.hello.get("realtime") or {}).get("ok"):
        raise Skip(f"the agent got no real-time priority: {run.hello.get('realtime')}")
    case = next((c for c in run.cases if c.case == "JIT-PER"), None)
    lat = next((s for s in case.series if s.name == "latency"), None) if case else None
    if proc.returncode or case is None or case.outcome != "passed" or lat is None \
            or lat.samples is None or len(lat.samples) != lat.n or lat.n == 0:
        detail = f"{case.outcome} {case.reason} {case.checks}" if case else "no JIT-PER case"
        raise BenchError(f"{' '.join(cmd)} (exit {proc.returncode}): {detail}\n"
                         f"{proc.stderr[-2000:]} {run.issues[:3]}")
    for w in case.warnings:
        print(f"  (rtbench warning {w.code}: {w.detail})", file=sys.stderr)
    return lat.samples


def run_cyclictest(a: argparse.Namespace, out: Path) -> tuple[Counts, int]:
    cmd = ["cyclictest", "-m", "-q", "-t1", "-a", str(a.cpu), "-p", str(a.priority),
           "-i", str(a.period_us), "-l", str(a.count), "-h", str(HIST_US),
           "--default-system", f"--json={out}"]
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        s = read_cyclictest(out).cases[0].series[0]
    except (CyclictestError, IndexError) as e:
        raise BenchError(f"{' '.join(cmd)} (exit {proc.returncode}): {e}\n{proc.stderr}") from e
    if proc.returncode or s.hist is None or s.n != a.count or s.max is None:
        raise BenchError(f"{' '.join(cmd)} (exit {proc.returncode}, {s.n} cycles): "
                         f"{proc.stderr[-2000:]}")
    counts = np.zeros(HIST_US + 1, dtype=np.int64)
    for bucket, n in s.hist.counts:
        counts[min(bucket, HIST_US)] += n
    counts[HIST_US] += s.hist.overflow
    return counts, s.max // 1000


def figures(counts: list[Counts], maxes: list[int]) -> dict[str, Any]:
    def one(c: Counts, mx: int) -> dict[str, Any]:
        return {**{f"{k}_us": pct_us(c, q) for k, q in QS.items()}, "max_us": mx,
                "n": int(c.sum()), "overflow": int(c[-1])}

    return {**one(np.sum(counts, axis=0), max(maxes)),
            "rounds": [one(c, m) for c, m in zip(counts, maxes, strict=True)]}


def bench(agent: Path, a: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    rt_ns: list[npt.NDArray[np.int64]] = []
    ct: list[tuple[Counts, int]] = []
    for i in range(a.rounds):
        print(f"round {i + 1}/{a.rounds}: rtbench, cyclictest", file=sys.stderr)
        rt_ns.append(run_rtbench(agent, a, tmp / f"rt{i}.rtb"))
        ct.append(run_cyclictest(a, tmp / f"ct{i}.json"))
    rt_us = [s // 1000 for s in rt_ns]  # latencies are >= 0: truncation, as cyclictest does
    rt = figures([to_counts(u) for u in rt_us], [int(u.max()) for u in rt_us])
    every = np.sort(np.concatenate(rt_ns))
    rt["exact_ns"] = {**{k: int(every[rank_of(q, len(every)) - 1]) for k, q in QS.items()},
                      "max": int(every[-1]), "mean": float(every.mean())}
    cy = figures([c for c, _ in ct], [m for _, m in ct])
    ratio = {k: rt[f"{k}_us"] / cy[f"{k}_us"] if cy[f"{k}_us"] else None
             for k in ("p50", "p99", "max")}
    ok = abs(rt["p50_us"] - cy["p50_us"]) <= GOAL * cy["p50_us"]
    return {"agent": str(agent), "period_us": a.period_us, "count": a.count,
            "rounds": a.rounds, "cpu": a.cpu, "priority": a.priority, "pm_qos": a.pm_qos,
            "rtbench": rt, "cyclictest": cy, "ratio": ratio, "goal": GOAL, "pass": ok,
            "coarse": cy["p50_us"] < 4}  # one µs step is > 25 % of p50


def print_table(r: dict[str, Any]) -> None:
    rt, cy, ex = r["rtbench"], r["cyclictest"], r["rtbench"]["exact_ns"]
    print(f"JIT-PER vs cyclictest: period {r['period_us']} us, {r['count']} cycles x "
          f"{r['rounds']} rounds, CPU {r['cpu']}, SCHED_FIFO {r['priority']}"
          f"{', /dev/cpu_dma_latency held at 0' if r['pm_qos'] else ''}\n")
    print(f"   {'whole us':<16}{'p50':>8}{'p99':>8}{'max':>9}{'samples':>9}   "
          "by round (p50/p99/max)")
    for name, f in (("rtbench", rt), ("cyclictest", cy)):
        print(f"   {name:<16}{f['p50_us']:>8}{f['p99_us']:>8}{f['max_us']:>9}{f['n']:>9}   "
              + ", ".join(f"{x['p50_us']}/{x['p99_us']}/{x['max_us']}" for x in f["rounds"]))
    print("   " + f"{'ratio rt/ct':<16}" + "".join(
        f"{v:>{w}.2f}" if v is not None else f"{'n/a':>{w}}"
        for v, w in zip(r["ratio"].values(), (8, 8, 9), strict=True)))
    print(f"   rtbench exact   p50 {ex['p50'] / 1e3:.3f} us, p99 {ex['p99'] / 1e3:.3f} us, "
          f"max {ex['max'] / 1e3:.3f} us, mean {ex['mean'] / 1e3:.3f} us")
    if rt["overflow"] or cy["overflow"]:
        print(f"   samples >= {HIST_US} us (a p at {HIST_US} means 'at least'): "
              f"rtbench {rt['overflow']}, cyclictest {cy['overflow']}")
    verdict = "PASS" if r["pass"] else "MISS"
    print(f"\np50 within {GOAL:.0%} of cyclictest's: {verdict}"
          + ("  (p50 < 4 us: one us of resolution is more than the margin)" if r["coarse"]
             else ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--period-us", type=int, default=1000, help="period in us (>= 100)")
    ap.add_argument("--count", type=int, default=5000, help="cyclictest -l, JIT-PER cycles (>= 2)")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each tool, alternating")
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)),
                    help="measurement CPU (default: the last one)")
    ap.add_argument("--priority", type=int, default=80, help="SCHED_FIFO priority, 1..97")
    ap.add_argument("--pm-qos", action="store_true",
                    help="hold /dev/cpu_dma_latency at 0 through all rounds (both tools)")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    ap.add_argument("--smoke", action="store_true",
                    help="one round of 100 periods: that the bench still runs")
    a = ap.parse_args()
    if a.smoke:  # the suite runs this so that a bench that no longer runs fails CI
        a.count, a.rounds = 100, 1
    if a.period_us < 100 or a.count < 2 or a.rounds < 1 or not 1 <= a.priority <= 97 \
            or a.cpu not in os.sched_getaffinity(0):
        ap.error("need --period-us >= 100, --count >= 2, --rounds >= 1, --priority 1..97 "
                 f"and --cpu in {sorted(os.sched_getaffinity(0))}")
    try:
        if shutil.which("cyclictest") is None:
            raise Skip("cyclictest not found (rt-tests: apt-get install rt-tests)")
        if (why := fifo_refusal(a.priority)) is not None:
            raise Skip(f"SCHED_FIFO {a.priority} not permitted here: {why}")
        if a.pm_qos:  # the request holds while the fd is open: until this process exits
            os.write(os.open("/dev/cpu_dma_latency", os.O_WRONLY), (0).to_bytes(4, "little"))
        agent = ensure_agent("release")
        with tempfile.TemporaryDirectory(prefix="rtbench-bench-") as tmp:
            result = bench(agent, a, Path(tmp))
    except Skip as e:
        print(json.dumps({"skipped": str(e)}) if a.json else f"bench_jit_cyclictest: skipped: {e}")
        return 0
    except (BenchError, BuildError, subprocess.CalledProcessError, OSError) as e:
        print(f"bench_jit_cyclictest: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
