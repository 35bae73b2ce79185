"""Bounded memory end to end: the peak RSS of `rtbench ingest`, `show` and
`analyze` of a run of N raw samples, each command a fresh child process
(its own `ru_maxrss`, from wait4), for each N given, beside the CPU seconds
each took.

The agent writes the run (`CAL-TIMER:reads=N/2+1`: two series of N/2
samples) into a file; it is ingested into a fresh SQLite store, then shown
and analysed from there. Goal (issue 22): <= 256 MiB whatever N (and <= 512
MiB for a stored 1e8-sample run loaded and analysed); a peak that grows with
N is memory that is not bounded. tests/e2e/test_memory.py checks 1e7.
`analyze` is also read against numpy's floor: the same number of int64
samples already in memory, their percentiles, mean and standard deviation
by numpy (goal: analyze <= 1x that pass).

    .venv/bin/python bench/bench_memory.py [--samples 10000000,20000000] [--json] [--smoke]

Exit 0 whether the goal is met or missed; 2 if a step could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from rtbench.machine.build import BuildError, ensure_agent

GOAL_MIB = 256
COMMANDS = (("ingest", "{stream}"), ("show", "latest"), ("analyze", "latest"))


# The floor `analyze` is read against: numpy's pass over two series of N/2
# int64 samples already in memory (the CPU of making them is not counted).
FLOOR = """
import sys, time
import numpy as np
n = int(sys.argv[1])
rng = np.random.default_rng(1)
series = [rng.integers(20, 5000, n // 2, dtype=np.int64) for _ in range(2)]
t0 = time.process_time()
for a in series:
    np.percentile(a, [50, 90, 99, 99.9, 99.99, 100]), a.mean(), a.std()
print(time.process_time() - t0)
"""


class BenchError(RuntimeError):
    pass


def numpy_floor(samples: int) -> float:
    """CPU seconds of numpy's percentile pass over `samples` (FLOOR)."""
    done = subprocess.run(
        [sys.executable, "-c", FLOOR, str(samples)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise BenchError(f"numpy floor: exit {done.returncode}\n{done.stderr[-2000:]}")
    return float(done.stdout)


def child(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(peak RSS in MiB, CPU seconds) of one command, its own."""
    with subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as p:
        assert p.stderr is not None
        err = p.stderr.read().decode(errors="replace")
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode not in (0, 1):
        raise BenchError(f"{' '.join(args[3:])}: exit {p.returncode}\n{err[-2000:]}")
    return usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime  # KiB on Linux


def bench(tmp: Path, samples: int) -> dict[str, Any]:
    stream = tmp / f"{samples}.rtb"
    agent = ensure_agent("release")
    with stream.open("wb") as f:
        subprocess.run(
            [str(agent), "--max-samples", str(samples),
             f"CAL-TIMER:reads={samples // 2 + 1}:rounds=10"],
            stdout=f, stderr=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    env = {**os.environ, "RTBENCH_DB": str(tmp / f"{samples}.sqlite")}
    out: dict[str, Any] = {"samples": samples, "stream_bytes": stream.stat().st_size}
    for name, arg in COMMANDS:
        cmd = [sys.executable, "-m", "rtbench.cli", name, arg.format(stream=stream)]
        peak, cpu = child(cmd, env)
        out[name] = {"peak_mib": peak, "cpu_s": cpu}
    stream.unlink()
    out["numpy_floor_cpu_s"] = numpy_floor(samples)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--samples",
        default="10000000,20000000",
        help="comma-separated run sizes (1e8 takes about a minute and 1 GB)",
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="100,000 samples")
    a = ap.parse_args()
    if sys.platform != "linux":
        print("bench_memory: ru_maxrss in KiB is Linux's", file=sys.stderr)
        return 2
    sizes = [100_000] if a.smoke else [int(float(x)) for x in a.samples.split(",")]
    try:
        with tempfile.TemporaryDirectory(prefix="rtbench-bench-memory-") as tmp:
            results = [bench(Path(tmp), n) for n in sizes]
    except (BuildError, BenchError, OSError) as e:
        print(f"bench_memory: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps({"goal_mib": GOAL_MIB, "runs": results}, indent=1))
        return 0
    print(f"peak RSS of each command, a fresh process (goal <= {GOAL_MIB} MiB whatever the run)")
    print(f"  {'samples':>12}" + "".join(f"{name:>22}" for name, _ in COMMANDS))
    for r in results:
        cells = "".join(
            f"{r[name]['peak_mib']:>9.0f} MiB {r[name]['cpu_s']:>6.1f} s" for name, _ in COMMANDS
        )
        print(f"  {r['samples']:>12,}{cells}")
    # Not the run's samples (those would cost the bench their memory): as
    # many int64 values of a similar range, already in memory.
    print("analyze against numpy's percentile pass over as many int64 samples in memory")
    print("(goal <= 1x)")
    for r in results:
        ratio = r["analyze"]["cpu_s"] / r["numpy_floor_cpu_s"]
        print(
            f"  {r['samples']:>12,}  analyze {r['analyze']['cpu_s']:.1f} s, "
            f"numpy {r['numpy_floor_cpu_s']:.1f} s: {ratio:.2f}x"
        )
    if len(results) > 1:
        first, last = results[0], results[-1]
        for name, _ in COMMANDS:
            grow = last[name]["peak_mib"] / first[name]["peak_mib"]
            verdict = "bounded" if grow <= 1.1 else "grows with the run"
            times = last["samples"] / first["samples"]
            print(f"  {name}: {grow:.2f}x the peak at {times:g}x the samples ({verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
