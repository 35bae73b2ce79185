"""Bounded ingest (issue 22, item 3): taking a saved stream into the store
(`read_stream`, the parse and assembly `rtbench ingest` and `rtbench run`
share, then `Store.save`) holds the run's samples up to a budget
(RTBENCH_INGEST_MIB, 96 MiB by default) and writes the rest out a store
chunk at a time, never the run whole. Each ingest runs in a child process
of its own, whose peak RSS (`ru_maxrss` from wait4) is measured:

- at a budget of 16 MiB the peak does not grow with the run: 20 million
  samples within 10 % of 10 million (the samples as int64 alone would add
  80 MB);
- at the default budget, 10 million samples (held: no spill) and 20
  million (spilled) each stay within 256 MiB.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import pytest
from helpers import cal_timer_stream, peak_mib

LIMIT_MIB = 256

_INGEST = """
import sys
from pathlib import Path
from rtbench.run.measure import read_stream
from rtbench.store import Store
run = read_stream(Path(sys.argv[1]))
with Store(sys.argv[2]) as store:
    store.save(run)
"""


def ingest_peak(stream: Path, db: Path, budget_mib: str) -> float:
    """Peak RSS in MiB of a child process that ingests `stream` into `db`
    with a memory budget (RTBENCH_INGEST_MIB; "": the default)."""
    env = {**os.environ, "RTBENCH_INGEST_MIB": budget_mib}
    args = [sys.executable, "-c", _INGEST, str(stream), str(db)]
    code, peak, err = peak_mib(args, env=env)
    assert code == 0, err[-2000:]
    return peak


@pytest.mark.e2e
@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB: Linux")
def test_ingest_peak_does_not_grow_with_the_run(agent: Path, tmp_path: Path) -> None:
    peaks: dict[tuple[int, str], float] = {}
    for samples in (10_000_000, 20_000_000):
        stream = tmp_path / f"{samples}.rtb"
        cal_timer_stream(agent, stream, samples)
        for budget in ("16", ""):
            db = tmp_path / f"{samples}-{budget or 'default'}.sqlite"
            peaks[samples, budget] = ingest_peak(stream, db, budget)
            # Every sample is stored (CAL-TIMER: two series of half the run).
            with sqlite3.connect(db) as con:
                (stored,) = con.execute("SELECT sum(n_samples) FROM series").fetchone()
                (chunks,) = con.execute("SELECT count(*) FROM chunks").fetchone()
            assert stored >= samples // 2, (samples, budget, stored)
            assert chunks >= stored // (1 << 17), chunks  # the store's chunks, not one blob
        stream.unlink()
    assert peaks[20_000_000, "16"] <= 1.1 * peaks[10_000_000, "16"], peaks
    assert max(peaks.values()) <= LIMIT_MIB, peaks
    # The budget is what the default holds beyond: a run under it is held.
    assert peaks[10_000_000, ""] > peaks[10_000_000, "16"] + 40, peaks
