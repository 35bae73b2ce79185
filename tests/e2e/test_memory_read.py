"""Bounded memory when reading a stored run (issue 22, item 3): `show`,
`analyze` and `report` of a stored run of 2e7 raw samples peak within 10 %
of the same commands on a run of 1e7 (each a child process, its own
`ru_maxrss` from wait4; a ratio measured in one run, no absolute figure):
a long series is read a chunk at a time, never whole."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import peak_mib

from rtbench.model import CaseResult, Run, Series
from rtbench.store import Store

SIZES = (10_000_000, 20_000_000)
GROWTH = 1.10


def _run(n: int) -> Run:
    """A latency series of n samples, its worst in the last chunk (so that
    the report's spike, chart and EVT read it all)."""
    rng = np.random.default_rng(n)
    values = (2000 + rng.gamma(2.0, 300.0, n)).astype(np.int64)
    values[n - 1000] = 5_000_000
    s = Series(
        "CAL-TIMER", "clock_read", unit="ns", kind="latency", samples=values,
        n=n, min=int(values.min()), max=int(values.max()), sum=int(values.sum()),
    )  # fmt: skip
    return Run(
        hello={"os": {"release": "6.6.0"}, "realtime": {"ok": False}},
        cases=[CaseResult("CAL-TIMER", outcome="passed", series=[s])],
        bye={"result": "passed", "records": 3},
    )


def _peak_mib(args: list[str], env: dict[str, str]) -> float:
    code, peak, err = peak_mib(args, env)
    assert code in (0, 1), f"{' '.join(args[3:])}: exit {code}\n{err[-2000:]}"
    return peak


@pytest.mark.e2e
@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB: Linux")
def test_reading_a_stored_run_does_not_grow_with_its_length(tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "rtbench.cli"]
    peaks: dict[str, list[float]] = {}
    for n in SIZES:
        db = tmp_path / f"{n}.sqlite"
        with Store(db) as store:
            run_id = store.save(_run(n))
        env = {**os.environ, "RTBENCH_DB": str(db)}
        out = tmp_path / f"{n}.md"
        for name, args in {
            "show": ["show", str(run_id)],
            "analyze": ["analyze", str(run_id)],
            "report": ["report", str(run_id), "-o", str(out)],
        }.items():
            peaks.setdefault(name, []).append(_peak_mib([*cli, *args], env))
        assert "5000.000" in out.read_text()  # the report read the last chunk's worst
    growth = {name: p[1] / p[0] for name, p in peaks.items()}
    assert all(g <= GROWTH for g in growth.values()), (growth, peaks)
