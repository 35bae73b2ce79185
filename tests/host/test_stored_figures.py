"""show, analyze, report and export of a stored run print the same figures whether
its raw samples are read whole or a chunk at a time (a long stored series,
`rtbench.store.stored_samples`): every corpus stream, and long series with
the worst sample in a late chunk and ties at the percentile boundaries. In
the chunked pass nothing may read a series whole."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from rtbench.cli import main
from rtbench.model import Int64Array, Run
from rtbench.run.measure import read_stream
from rtbench.store import Store
from rtbench.store.codec import CHUNK_SAMPLES
from rtbench.store.stored_samples import StoredSamples

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def _log2_counts(values: list[int]) -> list[tuple[int, int]]:
    counts: dict[int, int] = {}
    for v in values:  # log2 buckets with 3 sub-bits, as the agent counts them
        shift = max(0, v.bit_length() - 4)
        index = (shift << 3) + (v >> shift)
        counts[index] = counts.get(index, 0) + 1
    return sorted(counts.items())


def _long_values(seed: int) -> dict[str, Int64Array]:
    rng = np.random.default_rng(seed)
    n = 3 * CHUNK_SAMPLES + 777
    body = (900 + rng.gamma(2.0, 60.0, n)).astype(np.int64)
    body[n - 500] = 987_654  # the worst sample, in the last chunk
    # Ties across the percentile boundaries: about 2 % of the samples share
    # p99's neighbourhood value, and p50's rank sits in a run of equals.
    ties = body.copy()
    ties[np.argsort(ties)[int(n * 0.985) : int(n * 0.995)]] = 1400
    ties[ties == ties[np.argsort(ties)[n // 2]]] = 1000
    ties[7] = 2_000_000  # the worst in the first chunk, equalled in a late one
    ties[n - 3] = 2_000_000
    return {"gamma": body, "ties": ties}


def _long_stream(path: Path, seed: int = 22) -> Path:
    from rtbench.stream.writer import StreamWriter, default_hello

    with path.open("w") as f:
        w = StreamWriter(f)
        w.hello(default_hello(["CAL-TIMER"]))
        w.begin("CAL-TIMER", "Timer calibration", {"cpu": 0})
        for name, arr in _long_values(seed).items():
            values = arr.tolist()
            stats = {"n": len(values), "min": min(values), "max": max(values), "sum": sum(values)}
            w.samples("CAL-TIMER", name, values, chunk=4096)
            if name == "gamma":  # guided percentiles on one path, plain on the other
                w.hist("CAL-TIMER", name, layout={"kind": "log2", "sub_bits": 3},
                       counts=_log2_counts(values), **stats)  # fmt: skip
            w.summary("CAL-TIMER", name, **stats)
        w.end("CAL-TIMER", "passed", duration_ns=1)
        w.bye("passed")
    return path


def _labelled(path: Path, cfg: str) -> Run:
    run = read_stream(path)
    run.labels = {"cfg": cfg}
    return run


def _outputs(db: str, run_id: int, tmp: Path, pooled: list[int] | None = None) -> dict[str, str]:
    runner = CliRunner()
    out: dict[str, str] = {}
    for name, args in {
        "show": ["show", str(run_id)],
        "show.json": ["show", str(run_id), "--format", "json"],
        "analyze": ["analyze", str(run_id)],
        "analyze.json": ["analyze", str(run_id), "--format", "json"],
        "export.json": ["export", str(run_id), "--samples", "-o", "-"],
        "export.csv": ["export", str(run_id), "--format", "csv", "-o", "-"],
    }.items():
        r = runner.invoke(main, ["--db", db, *args])
        assert r.exit_code in (0, 1), (name, r.output)
        out[name] = r.stdout
    reports = [("md", [run_id], "max"), ("html", [run_id], "max")]
    if pooled is not None:  # two repetitions: one column, their samples pooled
        reports.append(("pooled.md", pooled, "p99.9"))  # a percentile of the pool
    for ext, ids, indicator in reports:
        path = tmp / f"report.{ext}"
        args = ["report", *map(str, ids), "-o", str(path), "--indicator", indicator]
        r = runner.invoke(main, ["--db", db, *args])
        assert r.exit_code in (0, 1) and path.exists(), r.output
        # The report's generation time is not a figure.
        out[f"report.{ext}"] = re.sub(
            r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d)?", "T", path.read_text()
        )
    return out


_READ = StoredSamples.read


def _never_whole(self: StoredSamples, start: int = 0, stop: int | None = None) -> Int64Array:
    """A read of more than a chart's points (240) at once is a series read whole."""
    stop = len(self) if stop is None else stop
    if stop - start > 1000:
        raise AssertionError(f"series {self.name} was read whole")
    return _READ(self, start, stop)


@pytest.mark.parametrize(
    "stream",
    [
        "long",
        *sorted(p.name for p in CORPUS.glob("*.rtb") if p.name != "damaged_newer_version.rtb"),
    ],
)
def test_figures_are_the_same_read_whole_or_by_chunk(
    stream: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _long_stream(tmp_path / "long.rtb") if stream == "long" else CORPUS / stream
    db = str(tmp_path / "s.sqlite")
    with Store(db) as store:
        run_id = store.save(read_stream(path), copy=True)
        again = None
        if stream == "long":  # two repetitions of one configuration, and another
            again = [
                store.save(_labelled(_long_stream(tmp_path / f"{seed}.rtb", seed), cfg))
                for seed, cfg in [(1, "a"), (2, "a"), (3, "b")]
            ]
    whole = _outputs(db, run_id, tmp_path, again)
    monkeypatch.setattr("rtbench.store.rows.EAGER_SAMPLES", 0)  # every series by chunk
    monkeypatch.setattr(StoredSamples, "array", _never_whole)
    monkeypatch.setattr(StoredSamples, "read", _never_whole)
    with Store(db) as store:
        loaded = store.load(run_id)
    kept = [s for c in loaded.cases for s in c.series if s.chunked is not None]
    assert all(isinstance(s.chunked, StoredSamples) for s in kept)
    chunked = _outputs(db, run_id, tmp_path, again)
    for name in whole:
        assert chunked[name] == whole[name], (stream, name)
    if stream == "long":  # the figures the late-chunk worst and the tie give
        assert "987.654" in whole["show"] and "2000.000" in whole["show"]
        assert "(sample 8 of 393993)" in whole["report.md"]  # the first of two equal maxima
        assert "cfg=a, runs=2,3 vs run 4" in whole["report.pooled.md"]
