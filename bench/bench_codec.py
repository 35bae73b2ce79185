"""Store at the speed of the disk: Store.save and Store.load of a run of 10
million raw samples (SQLite, CPU seconds), beside the floor (the same
samples as raw int64: write + fsync, read), and the codec's size/speed trade
(zlib levels 1 and 6 and zstd level 1 of the shuffled samples).

    .venv/bin/python bench/bench_codec.py [--samples 10000000] [--json] [--smoke]

The agent writes the run (`CAL-TIMER:reads=N/2+1`: two series of N/2
samples). Each step is timed in CPU seconds of this process (user +
system), the fastest of 3. Goals (issue 22): save <= 5x and load <= 2x the
raw floor. Exit 0 whether met or missed; 2 if a step could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import zstandard

from rtbench.machine.build import BuildError, ensure_agent
from rtbench.model import Run
from rtbench.store import Store, decode_samples, encode_samples
from rtbench.stream import assemble, parse_file

GOALS = {"save": 5.0, "load": 2.0}


def cpu(fn: Callable[[], Any], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def make_run(tmp: Path, samples: int) -> Run:
    stream = tmp / "run.rtb"
    args = [str(ensure_agent("release")), "--max-samples", str(samples),
            f"CAL-TIMER:reads={samples // 2 + 1}:rounds=10"]  # fmt: skip
    with stream.open("wb") as f:
        subprocess.run(args, stdout=f, stderr=subprocess.DEVNULL, check=False)
    parsed = parse_file(stream)
    return assemble(parsed.records, parsed.issues, parsed.log)


def bench(tmp: Path, samples: int, repeat: int) -> dict[str, Any]:
    run = make_run(tmp, samples)
    arrays = [s.samples for c in run.cases for s in c.series if s.samples is not None]
    n = sum(len(a) for a in arrays)
    raw = tmp / "raw.int64"

    def write_raw() -> None:
        with raw.open("wb") as f:
            for a in arrays:
                f.write(a.tobytes())
            f.flush()
            os.fsync(f.fileno())

    floor_write = cpu(write_raw, repeat)
    floor_read = cpu(lambda: np.fromfile(raw, dtype=np.int64), repeat)
    planes = [np.ascontiguousarray(a).view(np.uint8).reshape(-1, 8).T.tobytes() for a in arrays]
    zstd_c, zstd_d = zstandard.ZstdCompressor(level=1), zstandard.ZstdDecompressor()
    trades: dict[str, tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]] = {
        "zlib 1": (lambda p: zlib.compress(p, 1), zlib.decompress),
        "zlib 6": (lambda p: zlib.compress(p, 6), zlib.decompress),
        "zstd 1": (zstd_c.compress, zstd_d.decompress),  # the store's (codec.py)
    }
    levels = {}
    for name, (comp, decomp) in trades.items():
        blobs = [comp(p) for p in planes]
        enc = cpu(lambda c=comp: [c(p) for p in planes], 1)  # type: ignore[misc]
        dec = cpu(lambda d=decomp, bs=blobs: [d(b) for b in bs], repeat)  # type: ignore[misc]
        levels[name] = {"bytes_per_sample": sum(map(len, blobs)) / n,
                        "encode_s": enc, "decompress_s": dec}  # fmt: skip
    codec = {"encode_s": cpu(lambda: [encode_samples(a) for a in arrays], repeat)}
    blobs2 = [encode_samples(a) for a in arrays]
    codec["decode_s"] = cpu(lambda: [decode_samples(c, b) for c, b in blobs2], repeat)
    db = tmp / "bench.sqlite"
    with Store(db) as store:
        saves = []
        for _ in range(repeat):
            run.id = None
            saves.append(cpu(lambda: store.save(run, copy=True), 1))  # a new identity each
        run_id = store.list_runs()[-1].id

        def load_all() -> int:
            # A load reads a series' chunks when they are asked for: the
            # figure is the run and every sample in memory, as the floor's
            # np.fromfile gives them (not the lazy load alone: ~0 s).
            loaded = store.load(run_id)
            return sum(len(s.samples) for c in loaded.cases for s in c.series
                       if s.samples is not None)  # fmt: skip

        load = cpu(load_all, repeat)
        if load_all() != n:
            raise RuntimeError(f"the loaded run has {load_all()} samples, not {n}")
    save = min(saves)
    return {
        "samples": n,
        "floor_write_fsync_s": floor_write,
        "floor_read_s": floor_read,
        "save_s": save,
        "load_s": load,
        "save_x": save / max(floor_write, 1e-3),
        "load_x": load / max(floor_read, 1e-3),
        "codec": codec,
        "zlib_levels": levels,
        "goals_x": GOALS,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=10_000_000)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="100,000 samples, one pass each")
    a = ap.parse_args()
    repeat = 3
    if a.smoke:  # the suite runs this so that a bench that no longer runs fails CI
        a.samples, repeat = 100_000, 1
    try:
        with tempfile.TemporaryDirectory(prefix="rtbench-bench-codec-") as tmp:
            r = bench(Path(tmp), a.samples, repeat)
    except (BuildError, OSError, RuntimeError) as e:
        print(f"bench_codec: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(r, indent=1))
        return 0
    print(f"{r['samples']:,} samples, CPU seconds (fastest of {repeat})")
    print(f"  raw int64 write + fsync (floor)  {r['floor_write_fsync_s']:7.3f} s")
    print(f"  raw int64 read (floor)           {r['floor_read_s']:7.3f} s")
    for step in ("save", "load"):
        x, goal = r[f"{step}_x"], GOALS[step]
        print(f"  Store.{step:<27}{r[f'{step}_s']:7.3f} s  {x:6.1f}x the floor  goal <= {goal:g}x"
              f"  {'PASS' if x <= goal else 'MISS'}")  # fmt: skip
    c = r["codec"]
    print(f"  encode_samples / decode_samples  {c['encode_s']:7.3f} / {c['decode_s']:.3f} s")
    for level, z in r["zlib_levels"].items():
        print(f"  {level}: {z['bytes_per_sample']:.3f} bytes a sample, compress "
              f"{z['encode_s']:.3f} s, decompress {z['decompress_s']:.3f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
