"""Soak benchmark: JIT-PER on every CPU for a long time, the agent's
resident memory sampled throughout (docs/soak.md).

    .venv/bin/python bench/bench_soak.py [--minutes 10] [--period-us 100] [--json]

The release agent runs `--cpus all --progress 1000 --max-samples 100000`
JIT-PER for the duration; every 10 s this reads its VmRSS from /proc. The
raw samples are a ring and the histograms fixed size, so memory is all
taken before the first release.

Goal: the resident memory at the end within 1% of the first reading after
the start (and no progress record missing: one a second).

Exit 0 whether the goal is met or missed; 2 if the run could not be made.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rtbench.machine.build import ensure_agent
from rtbench.stream import parse_lines


def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--period-us", type=int, default=100)
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--smoke", action="store_true", help="3 s without load threads: that the bench still runs"
    )
    a = ap.parse_args()
    # The suite runs --smoke so that a bench that no longer runs fails CI:
    # three readings, and no busy load thread on every CPU (10 CPU s of the
    # suite's for figures nobody reads).
    load_threads = 0 if a.smoke else 1
    if a.smoke:
        a.minutes = 0.05
    seconds = a.minutes * 60
    agent = ensure_agent("release")
    case = (
        f"JIT-PER:period_us={a.period_us}:cycles=1000000000:"
        f"duration_ms={int(seconds * 1000)}:load_threads={load_threads}"
    )
    args = [str(agent), "--cpus=all", "--progress=1000", "--max-samples=100000", case]
    t0 = time.monotonic()
    readings: list[tuple[float, int]] = []
    # A file, not a pipe: nobody reads while the agent runs.
    with (
        tempfile.TemporaryFile() as stream,
        subprocess.Popen(args, stdout=stream, stderr=subprocess.DEVNULL) as proc,
    ):
        time.sleep(2.0)
        while proc.poll() is None:
            kib = rss_kib(proc.pid)
            if kib is not None:
                readings.append((time.monotonic() - t0, kib))
            time.sleep(min(10.0, max(0.5, seconds / 10)))
        stream.seek(0)
        out = stream.read()
    parsed = parse_lines(out.splitlines())
    progress = sum(r.kind == "progress" for r in parsed.records)
    releases = sum(
        r.body["n"]
        for r in parsed.records
        if r.kind == "summary" and r.body.get("series") == "latency"
    )
    if len(readings) < 2 or not releases:
        print(f"the run could not be made (exit {proc.returncode})", file=sys.stderr)
        return 2
    first, last = readings[0][1], readings[-1][1]
    growth = (last - first) / first
    result = {
        "seconds": round(time.monotonic() - t0, 1),
        "releases": releases,
        "progress_records": progress,
        "rss_first_kib": first,
        "rss_last_kib": last,
        "rss_max_kib": max(k for _, k in readings),
        "growth": round(growth, 4),
        "goal_met": abs(growth) <= 0.01 and progress >= int(seconds) - 2,
    }
    if a.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:18} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
