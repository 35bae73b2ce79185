"""Known answers for MEM-HEAP and MEM-POOL (rtb/alloc.h): a busy-wait
injected into every allocator call (the test build's op_delay) sits once
in every timed allocation and free, and the figures without it do not;
every round gives a sample, alone and contended; a port without a pool
says unsupported with its reason, never a zero."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rtbench.model import CaseResult

Runner = Callable[..., Any]
D = 20_000  # ns, the injected delay
ARGS = ["MEM-HEAP:size=16,4096:iterations=200"]
SERIES = ("alloc", "free", "alloc_contended", "free_contended")


def _case(result: Any, case: str) -> CaseResult:
    c = result.run.case(case)
    assert isinstance(c, CaseResult), result.stderr
    return c


def test_op_delay_sits_in_every_allocation(run_agent: Runner, test_agent: Path) -> None:
    base = _case(run_agent(test_agent, ARGS), "MEM-HEAP")
    slow = _case(run_agent(test_agent, ["--inject", f"op_delay={D}", *ARGS]), "MEM-HEAP")
    for c in (base, slow):
        assert c.outcome == "passed", (c.checks, c.warnings)
        assert {(s.name, s.point.get("size")) for s in c.series} == {
            (n, size) for n in SERIES for size in (16, 4096)
        }
        assert all(s.n == 200 for s in c.series)
    for s in slow.series:
        v = s.samples
        assert v is not None and v.min() >= D, s.label
        # one delay, not two: the quickest holds a single one
        assert v.min() < 2 * D, s.label
        b = base.find(s.name, s.point)
        assert b is not None and b.samples is not None
        assert float(np.median(b.samples)) < float(np.median(v)), s.label


def test_a_port_without_a_pool_says_why(run_agent: Runner, agent: Path) -> None:
    c = _case(run_agent(agent, ["MEM-POOL"]), "MEM-POOL")
    assert c.outcome == "unsupported" and "no fixed-block allocator" in c.reason
    assert not c.series
