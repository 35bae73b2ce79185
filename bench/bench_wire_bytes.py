"""Bytes on the wire of the quick suite, with and without raw samples.

A board's console at 115200 baud carries about 11.5 KB/s (8N1: ten bits a
byte). The serial target runs the agent in summary-and-histogram mode
(`--no-samples`) by default; the goal is that the quick suite's stream in
that mode fits in 200 KB, so such a console carries it in under 20 s.

    .venv/bin/python bench/bench_wire_bytes.py [--json]

Prints both modes, the time each would take at 115200 baud, and PASS/MISS
against the goal. Exits 0 either way; 2 only when the agent could not run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any

from rtbench import catalogue
from rtbench.machine.build import ensure_agent
from rtbench.run.suites import select
from rtbench.stream import StreamParser

GOAL_BYTES = 200_000
BAUD = 115_200
BYTES_PER_S = BAUD / 10  # 8N1


def _stream(exe: str, args: list[str]) -> tuple[int, int, dict[str, int]]:
    """Bytes, records, and bytes per record kind of one agent run."""
    proc = subprocess.run([exe, *args], capture_output=True, check=False, timeout=900)
    if proc.returncode not in (0, 1):
        print(proc.stderr.decode(errors="replace")[-2000:], file=sys.stderr)
        sys.exit(2)
    parser = StreamParser()
    per_kind: dict[str, int] = {}
    for line in proc.stdout.splitlines():
        rec = parser.feed(line)
        if rec is not None:
            per_kind[rec.kind] = per_kind.get(rec.kind, 0) + len(line) + 1
    parser.finish()
    return len(proc.stdout), len(parser.records), per_kind


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--smoke", action="store_true",
                    help="two cases, not the quick suite: that the bench still runs")
    opts = ap.parse_args()
    exe = str(ensure_agent("release"))
    known = catalogue.posix_cases()
    plan = [
        p.agent_arg()
        for p in select(
            "quick",
            ["CAL-REF", "SEM-ARN"] if opts.smoke else [],
            [],
            {k: c.param_names for k, c in known.items()},
        )
    ]
    results: dict[str, dict[str, Any]] = {}
    for mode, extra in (("summary+histograms", ["--no-samples"]), ("raw samples", [])):
        size, records, per_kind = _stream(exe, [*extra, *plan])
        results[mode] = {
            "bytes": size,
            "records": records,
            "seconds_at_115200": round(size / BYTES_PER_S, 1),
            "bytes_per_kind": dict(sorted(per_kind.items(), key=lambda kv: -kv[1])),
        }
    hist = results["summary+histograms"]["bytes"]
    verdict = "PASS" if hist <= GOAL_BYTES else "MISS"
    if opts.json:
        print(json.dumps({"goal_bytes": GOAL_BYTES, "verdict": verdict, **results}, indent=2))
        return
    print(f"quick suite, {len(plan)} cases")
    for mode, r in results.items():
        kinds = ", ".join(f"{k} {v // 1000} KB" for k, v in list(r["bytes_per_kind"].items())[:4])
        print(
            f"  {mode:20s} {r['bytes'] / 1000:10.1f} KB  {r['records']:6d} records  "
            f"{r['seconds_at_115200']:7.1f} s at 115200 baud  ({kinds})"
        )
    print(f"goal: summary+histograms <= {GOAL_BYTES // 1000} KB: {verdict}")


if __name__ == "__main__":
    main()
