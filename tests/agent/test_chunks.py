"""Samples records on POSIX carry up to 16384 samples each (issue 22: the
host's work is per record as much as per sample), every line fits the
body cap the wire format documents, and the figures the host parses from
them are the agent's own: every series' decoded samples give exactly its
summary's n, min, max and 128-bit sum."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

CHUNK = 16384
BODY_CAP = 512 * 1024  # docs/wire-format.md: POSIX record bodies


def test_samples_chunks_of_16384_and_figures_exact(
    agent: Path, run_agent: Callable[..., Any]  # conftest's -> AgentResult
) -> None:
    r = run_agent(agent, ["--max-samples", "80000", "CAL-TIMER:reads=40001:rounds=10"])
    assert r.code == 0, r.stderr
    assert not r.parsed.issues, r.parsed.issues
    longest = max(len(line) for line in r.stdout.splitlines())
    assert longest <= BODY_CAP + 64  # the body, the prefix, seq, kind and CRC
    counts = [rec.body["count"] for rec in r.parsed.records if rec.kind == "samples"]
    assert max(counts) == CHUNK and all(0 < c <= CHUNK for c in counts)
    summaries = {
        rec.body["series"]: rec.body for rec in r.parsed.records if rec.kind == "summary"
    }
    checked = 0
    for s in (s for c in r.run.cases for s in c.series if s.samples is not None):
        want = summaries[s.name]
        assert len(s.samples) == want["n"] > CHUNK or s.name.startswith("xcpu")
        assert int(s.samples.min()) == want["min"] and int(s.samples.max()) == want["max"]
        assert sum(int(v) for v in s.samples) == want["sum"]
        checked += len(s.samples) > CHUNK
    assert checked >= 1
