"""Bounded ingest (issue 22, item 3): taking a saved stream into the store
(`read_stream`, the parse and assembly `rtbench ingest` and `rtbench run`
share, then `Store.save`) holds the samples a store chunk at a time, not
the run whole. Each size runs in a child process of its own, whose peak
RSS (`ru_maxrss` from wait4) must stay within 256 MiB at 10 million
samples and not grow with the run: 20 million within 10 % of it (the
samples as int64 alone would add 80 MB)."""

from __future__ import annotations

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


def ingest_peak(stream: Path, db: Path) -> float:
    """Peak RSS in MiB of a child process that ingests `stream` into `db`."""
    code, peak, err = peak_mib([sys.executable, "-c", _INGEST, str(stream), str(db)])
    assert code == 0, err[-2000:]
    return peak


@pytest.mark.e2e
@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB: Linux")
def test_ingest_peak_does_not_grow_with_the_run(agent: Path, tmp_path: Path) -> None:
    peaks = {}
    for samples in (10_000_000, 20_000_000):
        stream, db = tmp_path / f"{samples}.rtb", tmp_path / f"{samples}.sqlite"
        cal_timer_stream(agent, stream, samples)
        peaks[samples] = ingest_peak(stream, db)
        stream.unlink()
        # Every sample is stored (CAL-TIMER: two series of half the run).
        with sqlite3.connect(db) as con:
            (stored,) = con.execute("SELECT sum(n_samples) FROM series").fetchone()
            (chunks,) = con.execute("SELECT count(*) FROM chunks").fetchone()
        assert stored >= samples // 2, (samples, stored)
        assert chunks >= stored // (1 << 17), chunks  # the store's chunks, not one blob
    assert peaks[10_000_000] <= LIMIT_MIB, peaks
    assert peaks[20_000_000] <= 1.1 * peaks[10_000_000], peaks
