"""Issue 22's table in one place: each figure of rtbench's own costs beside
its peer or floor and its goal, every row measured by the bench that owns
it (run here as a child with --json, so each keeps its own method: fresh
processes, CPU seconds, the fastest of its passes):

    bench_foundation.py  the window stamp against a bare counter read; parse
    bench_memory.py      ingest end to end, its peak RSS at 1e7 and 1e8; a
                         stored 1e8-sample run loaded and analysed
    bench_codec.py       store save and load against raw int64
    bench_reports.py     report and analyze of a quick run
    bench_rtos.py        each quick case's RAM on every RTOS kernel's board

    .venv/bin/python bench/bench_goals.py [--json] [--skip-rtos] [--smoke]

A row whose bench cannot apply here (no QEMU, no ARM toolchain) says
so. Takes about 10 minutes (the 1e8-sample run about 1 GB of disk).
--smoke: every bench at its smoke size (the figures mean nothing; that
the table still assembles), no RTOS board. Exit 0 whether goals are met
or missed; 2 if a bench could not run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
E7, E8 = 10_000_000, 100_000_000


class BenchError(RuntimeError):
    pass


@dataclass
class Row:
    figure: str
    rtbench: str
    floor: str
    goal: str
    met: bool | None  # None: not measured here (the reason in `rtbench`)


def bench(script: str, *args: str) -> dict[str, Any]:
    cmd = [sys.executable, str(HERE / script), "--json", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=HERE.parent)
    if proc.returncode != 0:
        raise BenchError(f"{' '.join(cmd[1:])}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def stamp_and_parse(f: dict[str, Any]) -> list[Row]:
    s, p = f["stamp"], f["parse"]
    rates = {k: v["samples_per_s"] / 1e6 for k, v in p["passes"].items()}
    parse, spilled, floor = rates["parse"], rates["spilled"], rates["numpy"]
    return [
        Row("window stamp vs bare counter read",
            f"{s['window_stamp_ns']:.1f} ns ({s['window_stamp']})",
            f"{s['bare_counter_ns']:.1f} ns", "<= 1.1x", s["window_ratio"] <= 1.1),
        Row(f"parse + assemble, {p['samples']:,} samples",
            f"{parse:.1f} M/s (spilled {spilled:.1f})", f"numpy pass {floor:.1f} M/s",
            ">= 50 M samples/s", parse >= 50),
    ]  # fmt: skip


def memory(m: dict[str, Any]) -> list[Row]:
    runs = {r["samples"]: r for r in m["runs"]}
    small, large = min(runs), max(runs)
    ingest = runs[small]["ingest"]
    rate = small / ingest["cpu_s"]
    peaks = [r[c]["peak_mib"] for r in runs.values() for c in ("ingest", "show", "analyze")]
    big = runs[large]
    ratio = big["analyze"]["cpu_s"] / big["numpy_floor_cpu_s"]
    return [
        Row(f"rtbench ingest end to end, {small:,} samples",
            f"{rate / 1e6:.1f} M/s ({ingest['cpu_s']:.2f} s)", "", ">= 30 M samples/s",
            rate >= 30e6),
        Row(f"ingest/show/analyze peak RSS, {small:,} -> {large:,} samples",
            f"{max(peaks):.0f} MiB at most", "", f"<= {m['goal_mib']} MiB",
            max(peaks) <= m["goal_mib"]),
        Row(f"stored run of {large:,} samples loaded + analysed",
            f"{big['analyze']['cpu_s']:.2f} s, {big['analyze']['peak_mib']:.0f} MiB",
            f"numpy pass {big['numpy_floor_cpu_s']:.2f} s ({ratio:.2f}x)", "<= 1x, <= 512 MiB",
            ratio <= 1.0 and big["analyze"]["peak_mib"] <= 512),
    ]  # fmt: skip


def codec(c: dict[str, Any]) -> list[Row]:
    g = c["goals_x"]
    return [
        Row(f"store / load a run of {c['samples']:,} samples",
            f"{c['save_s']:.3f} / {c['load_s']:.3f} s",
            f"raw int64 {c['floor_write_fsync_s']:.3f} / {c['floor_read_s']:.3f} s "
            f"({c['save_x']:.1f}x / {c['load_x']:.1f}x)",
            f"<= {g['save']:.0f}x / <= {g['load']:.0f}x",
            c["save_x"] <= g["save"] and c["load_x"] <= g["load"]),
    ]  # fmt: skip


def reports(r: dict[str, Any]) -> list[Row]:
    cpu, goals = r["cpu_s"], r["goals_s"]
    floor = f"--version {cpu['--version (floor)']:.2f} s"
    return [
        Row(f"rtbench {name} of a quick run", f"{cpu[name]:.2f} s", floor,
            f"<= {goals[name]:.0f} s", bool(r["pass"][name]))
        for name in ("report", "analyze")
    ]  # fmt: skip


def rtos(r: dict[str, Any]) -> list[Row]:
    rows = []
    for port, p in r["ports"].items():
        if "skipped" in p:
            rows.append(Row(f"{port}: RAM of each quick case", f"skipped: {p['skipped']}", "",
                            "<= 64 KiB", None))
            continue
        over = ", ".join(p["over_goal"]) or "none over"
        rows.append(Row(f"{port}: RAM of each quick case",
                        f"{p['ram_max']:,} B at most ({len(p['cases'])} cases; {over})", "",
                        f"<= {r['goal_ram']:,} B", not p["over_goal"]))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="the rows as JSON")
    ap.add_argument("--skip-rtos", action="store_true", help="leave out the boards' RAM")
    ap.add_argument("--smoke", action="store_true", help="each bench at its smoke size, no boards")
    a = ap.parse_args()
    smoke = ["--smoke"] if a.smoke else []
    rows: list[Row] = []
    try:
        rows += stamp_and_parse(bench("bench_foundation.py", "--skip-suite", *smoke))
        rows += memory(bench("bench_memory.py", *(smoke or ["--samples", f"{E7},{E8}"])))
        rows += codec(bench("bench_codec.py", *smoke))
        rows += reports(bench("bench_reports.py", *(smoke or ["--rounds", "2"])))
        if not (a.smoke or a.skip_rtos):
            rows += rtos(bench("bench_rtos.py", "--no-suite"))
    except (BenchError, KeyError, ValueError) as e:
        print(f"bench_goals: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps([asdict(r) for r in rows], indent=1))
        return 0
    verdicts = {True: "PASS", False: "MISS", None: "-"}
    width = max(len(r.figure) for r in rows)
    print(f"{'figure':<{width}}  {'rtbench':<40}  {'peer / floor':<40}  {'goal':<20}  verdict")
    for r in rows:
        print(f"{r.figure:<{width}}  {r.rtbench:<40}  {r.floor:<40}  {r.goal:<20}  "
              f"{verdicts[r.met]}")
    missed = [r.figure for r in rows if r.met is False]
    print(f"{sum(r.met is True for r in rows)} of {len(rows)} goals met" +
          (f"; missed: {'; '.join(missed)}" if missed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
