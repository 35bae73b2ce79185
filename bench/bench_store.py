"""Store benchmark: the quick suite's runs saved into SQLite and PostgreSQL,
and `rtbench runs` over a store of 10,000 runs, on both.

The run is a real one: a stream of the quick suite measured on this machine
(`rtbench run --suite quick --no-store --save-stream`, or --stream FILE),
read back as `rtbench ingest` reads it. For each backend:

  save              Store.save of that run, --runs times (100) into an empty
                    store: ms per run stored (median, p95), each save its
                    own transaction, committed durably (SQLite in WAL with
                    its default synchronous; PostgreSQL with fsync on)
  fill              the store is filled to --list runs (10,000): copies of
                    the stored runs' `runs` row with three labels each, in
                    one transaction (a listing reads only `runs` and
                    `labels`; the 100 real runs keep all their rows)
  encode           (reference) encoding the run's raw samples alone, the
                    CPU work of a save that no database changes
  list_runs         Store.list_runs() of all 10,000, in this process
  rtbench runs      the command, in a fresh interpreter, its table piped:
                    the newest 100 of the 10,000 (its default --limit),
                    with the count of the rest
  runs --label      the same with a filter matching 1 run in 20
  runs --all        the table of all 10,000
  rtbench --version (reference) the interpreter and import floor of any
                    command, which the listings above are read against

The commands run 5 times each and the fastest counts; the load average is
printed with the figures.

Goal: `rtbench runs` on a store of 10,000 runs under 1 s on both.

PostgreSQL: a temporary server (initdb + postgres, tests/pgserver.py, durable
settings), or --pg URL naming an empty database of an existing one.

    .venv/bin/python bench/bench_store.py [--stream FILE] [--runs 100]
        [--list 10000] [--pg URL] [--json]

Exit 0 whether the goal is met or missed; 2 if a step could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from rtbench.run.measure import read_stream  # noqa: E402
from rtbench.store import Store, encode_samples  # noqa: E402

LIST_GOAL_S = 1.0
# Each command is timed this many times and the fastest counts (the machine
# is shared: the others' work only ever adds time).
REPEAT = 5
# The columns of a `runs` row that a copy takes over (all but the id).
RUN_COLUMNS = (
    "started_at, target, source, outcome, realtime, complete, kernel, n_cases, hello, bye, machine"
)


class BenchError(RuntimeError):
    pass


def rtbench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rtbench.cli", *args],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
        env=env,
    )


def quick_stream(folder: Path, cases: list[str]) -> Path:
    path = folder / "quick.rtb"
    print("measuring the quick suite once for its stream (about a minute)...", file=sys.stderr)
    chosen = [a for c in cases for a in ("-c", c)]
    r = rtbench("run", "--suite", "quick", *chosen, "--no-store", "--save-stream", str(path))
    if not path.exists() or r.returncode not in (0, 1):
        raise BenchError(f"the quick run failed ({r.returncode}): {r.stderr[-2000:]}")
    return path


def timed(fn: Any, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def fill(where: str, total: int) -> None:
    """Copies of the stored runs' rows (three labels each) up to `total` runs."""
    if where.startswith("postgresql://"):
        import psycopg

        conn: Any = psycopg.connect(where)
        q = "%s"
    else:
        conn = sqlite3.connect(where)
        q = "?"
    with conn:
        cur = conn.cursor()
        cur.execute("SELECT min(id), max(id), count(*) FROM runs")
        first, last, have = cur.fetchone()
        for i in range(have, total):
            source = first + i % (last - first + 1)
            cur.execute(
                f"INSERT INTO runs ({RUN_COLUMNS}) SELECT {RUN_COLUMNS} FROM runs WHERE id = {q}"
                " RETURNING id",
                (source,),
            )
            run_id = cur.fetchone()[0]
            labels = {"board": f"b{i % 20}", "campaign": f"c{i // 500}", "host": f"h{i % 7}"}
            cur.executemany(
                f"INSERT INTO labels VALUES ({q}, {q}, {q})",
                [(run_id, k, v) for k, v in labels.items()],
            )
    conn.close()


def bench_backend(name: str, where: str, run_stream: Path, runs: int, total: int) -> dict[str, Any]:
    run = read_stream(run_stream)
    with Store(where) as store:
        saves = []
        for _ in range(runs):
            run.id = None
            t0 = time.perf_counter()
            store.save(run, copy=True)  # the same stream again: a copy each time
            saves.append(time.perf_counter() - t0)
    fill(where, total)
    with Store(where) as store:
        count = len(store.list_runs())
        if count != total:
            raise BenchError(f"{name}: {count} runs listed, {total} expected")
        in_process = timed(store.list_runs, 5)
    env = {**os.environ, "RTBENCH_DB": where}
    cli = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        r = rtbench("runs", env=env)
        cli.append(time.perf_counter() - t0)
        if r.returncode != 0 or f"of {total:,} runs" not in r.stderr:
            raise BenchError(f"{name}: rtbench runs failed ({r.returncode}): {r.stderr[-1000:]}")
    filtered = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        r = rtbench("runs", "--label", "board=b3", env=env)
        filtered.append(time.perf_counter() - t0)
        if r.returncode != 0:
            raise BenchError(f"{name}: rtbench runs --label failed: {r.stderr[-1000:]}")
    t0 = time.perf_counter()
    r = rtbench("runs", "--all", env=env)
    everything = time.perf_counter() - t0
    if r.returncode != 0 or r.stdout.count("\n") < total:
        raise BenchError(f"{name}: rtbench runs --all failed: {r.stderr[-1000:]}")
    return {
        "backend": name,
        "save_ms_median": 1000 * statistics.median(saves),
        "save_ms_p95": 1000 * sorted(saves)[int(0.95 * (len(saves) - 1))],
        "save_ms_mean": 1000 * statistics.fmean(saves),
        "runs_saved": runs,
        "listed": total,
        "list_runs_s": min(in_process),
        "cli_runs_s": min(cli),
        "cli_runs_label_s": min(filtered),
        "cli_runs_all_s": everything,
    }


def describe(path: Path) -> dict[str, Any]:
    run = read_stream(path)
    series = [s for c in run.cases for s in c.series if s.samples is not None]

    def encode_all() -> None:
        for s in series:
            assert s.samples is not None
            encode_samples(s.samples)

    return {
        "cases": len(run.cases),
        "series": sum(len(c.series) for c in run.cases),
        "samples": sum(0 if s.samples is None else s.samples.size for s in series),
        "stream_bytes": path.stat().st_size,
        "encode_ms": 1000 * statistics.median(timed(encode_all, 5)),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stream", type=Path, help="a saved stream of the quick suite")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--list", type=int, default=10_000, dest="total")
    ap.add_argument("--pg", help="an empty PostgreSQL database (default: a temporary server)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--smoke", action="store_true",
                    help="two cases, 2 saves, 120 runs listed: that the bench still runs")
    args = ap.parse_args()
    if args.smoke:  # the suite runs this so that a bench that no longer runs fails CI
        global REPEAT
        REPEAT, args.runs, args.total = 1, 2, 120

    server = None
    with tempfile.TemporaryDirectory(prefix="rtbench-bench-store-") as tmp:
        folder = Path(tmp)
        try:
            smoke_cases = ["CAL-REF", "SEM-ARN"] if args.smoke else []
            stream = args.stream or quick_stream(folder, smoke_cases)
            pg = args.pg
            if pg is None:
                from pgserver import PostgresServer, missing

                why = missing()
                if why and args.smoke:
                    print(f"bench_store: PostgreSQL skipped: {why}", file=sys.stderr)
                elif why:
                    raise BenchError(f"PostgreSQL: {why}")
                else:
                    server = PostgresServer(durable=True)
                    server.start()
                    pg = server.url(server.create_database(), tcp=True)
            floor = min(timed(lambda: rtbench("--version"), REPEAT))
            results = [
                bench_backend(
                    "sqlite", str(folder / "bench.sqlite"), stream, args.runs, args.total
                ),
            ]
            if pg is not None:
                results.append(bench_backend("postgresql", pg, stream, args.runs, args.total))
            shape = describe(stream)
        except BenchError as e:
            print(f"bench_store: {e}", file=sys.stderr)
            return 2
        finally:
            if server is not None:
                server.stop()
                server.remove()
    load = os.getloadavg()[1]  # the machine's business meanwhile (5-minute average)
    report = {
        "run": shape,
        "cli_floor_s": floor,
        "results": results,
        "goal_s": LIST_GOAL_S,
        "loadavg_5min": load,
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"the run: {shape['cases']} cases, {shape['series']} series, {shape['samples']:,} raw "
        f"samples, a {shape['stream_bytes'] / 1e6:.1f} MB stream"
    )
    print(f"encoding its raw samples alone (the floor of a save): {shape['encode_ms']:.0f} ms")
    print(f"load average at the end: {load:.1f} on {os.cpu_count()} CPUs (other work slows all)")
    print(f"`rtbench --version` (interpreter + imports, the floor of a command): {floor:.2f} s")
    head = f"{'backend':<11} {'save ms (median/p95/mean)':>26} {'list_runs':>10} "
    print(
        head + f"{'rtbench runs':>13} {'runs --label':>13} {'runs --all':>11}"
        f"  goal: runs < {LIST_GOAL_S:g} s"
    )
    for r in results:
        ok = "PASS" if r["cli_runs_s"] < LIST_GOAL_S else "MISS"
        saves = f"{r['save_ms_median']:.1f} / {r['save_ms_p95']:.1f} / {r['save_ms_mean']:.1f}"
        print(
            f"{r['backend']:<11} {saves:>26} {r['list_runs_s']:>9.3f}s {r['cli_runs_s']:>12.2f}s "
            f"{r['cli_runs_label_s']:>12.2f}s {r['cli_runs_all_s']:>10.2f}s  {ok} "
            f"({r['runs_saved']} runs saved, {r['listed']:,} listed)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
