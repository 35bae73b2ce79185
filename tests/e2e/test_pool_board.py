"""MEM-POOL on uC/OS-III's memory partitions (the emulated board): the
pool's get and put are timed, an exhausted partition says so (never a
crash) and its blocks come back; a busy-wait injected into every pool call
(the test firmware's op_delay) sits once in every timed get and put."""

from __future__ import annotations

import pytest
from boards import board_case

from rtbench.model import CaseResult

pytestmark = pytest.mark.tools("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi")

D = 20_000  # ns
ARGS = ["MEM-POOL:iterations=200:blocks=16"]


def _pool(args: list[str], spec: str) -> CaseResult:
    return board_case(spec, args, "MEM-POOL")


def test_pool_known_answer_on_ucos3() -> None:
    spec = "qemu:ucos3-mps2-an385?flavor=test"
    base = _pool(ARGS, spec)
    slow = _pool(["--inject", f"op_delay={D}", *ARGS], spec)
    for c in (base, slow):
        assert c.outcome == "passed", c.checks
        assert {ch.name: ch.verdict for ch in c.checks} == {"exhausted": "pass", "reuse": "pass"}
        assert {s.name: s.n for s in c.series} == {"get": 200, "put": 200}
    for name in ("get", "put"):
        b, s = base.find(name), slow.find(name)
        assert b is not None and s is not None and b.max is not None
        assert s.samples is not None and b.samples is not None
        assert s.min is not None and s.min >= D and b.max < D
        # one delay, not two
        assert s.min < 2 * D
