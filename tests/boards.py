"""One measurement on an emulated board, the way every board test takes it:
the target resolved from its spec, the plan run, QEMU stopped after (and
checked stopped, so no test leaves a board behind)."""

from __future__ import annotations

import pytest
import shared
from tools import firmware

from rtbench.model import CaseResult, Run
from rtbench.run.measure import measure, plan_for
from rtbench.run.suites import SUITES, Planned
from rtbench.targets import resolve
from rtbench.targets.qemu_board import BoardTarget
from rtbench.transports.board import BoardTransport


def measure_board(spec: str, args: list[str]) -> tuple[Run, BoardTransport]:
    target = resolve(spec)
    assert isinstance(target, BoardTarget), spec
    # Built here first: without its RTOS kernel (no network, no mirror
    # named) a skip naming the variable, a fail in CI, not a build error.
    # The transport boots that image (not a second walk of the sources).
    elf = firmware(target.spec.port.name, target.spec.board.name,
                   "test" if target.settings.flavor == "test" else "release")  # fmt: skip
    transport = target.transport(elf)
    try:
        run = measure(transport, plan_for(target, args)).run
    finally:
        transport.stop()
    assert transport.proc is not None and transport.proc.poll() is not None, "QEMU still runs"
    return run, transport


def board_case(spec: str, args: list[str], case: str) -> CaseResult:
    run, _ = measure_board(spec, args)
    c = run.case(case)
    assert c is not None, f"{case} missing from the run on {spec}"
    return c


def quick_suite_args() -> list[str]:
    return [Planned(c, dict(p)).agent_arg() for c, p in SUITES["quick"].items()]


def quick_suite(
    config: pytest.Config, spec: str
) -> tuple[Run, dict[str, tuple[int, int]]]:
    """The quick suite's run on the board of `spec` and its tasks' stack use,
    taken once for the whole test run (tests/shared.py): several modules
    check it, and under -icount it is the same run each time."""

    def take() -> tuple[Run, dict[str, tuple[int, int]]]:
        run, transport = measure_board(spec, quick_suite_args())
        return run, transport.stack_use()

    return shared.once(config, "quick-suite-" + spec.replace(":", "-"), take)
