"""The kernel's timerlat beside JIT-PER: the settings the guest gets, the
samples it sends back, the series and the cross-check they become."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rtbench import catalogue
from rtbench.model import CaseResult, Run, Series
from rtbench.targets import timerlat
from rtbench.targets.initramfs import MARKER, init_script


def test_request_follows_jit_per() -> None:
    assert timerlat.request(["--priority=80", "CAL-REF:repeats=10"], smp=2) is None
    req = timerlat.request(["JIT-PER:period_us=1000:cycles=500"], smp=2)
    assert req == timerlat.Request(1000, "1", 0.5)  # the agent's default CPU: the last
    # Defaults (10 ms x 5000) capped; --cpu and --cpus name the CPUs.
    req = timerlat.request(["--cpu=0", "JIT-PER"], smp=4)
    assert req is not None and req.cpus == "0" and req.seconds == timerlat.MAX_SECONDS
    req = timerlat.request(["--cpus=all", "JIT-PER:duration_ms=3000"], smp=4)
    assert req is not None and (req.cpus, req.seconds, req.period_us) == ("0-3", 3.0, 10000)
    assert req.line() == "10000 0-3 3\n"


def test_jit_per_defaults_come_from_the_agents_case_table(monkeypatch: pytest.MonkeyPatch) -> None:
    # The tracer follows JIT-PER's period as the agent declares it: a
    # changed default in the case table changes the request, no host edit.
    assert timerlat.request(["JIT-PER"], 2) == timerlat.Request(10000, "1", 20.0)
    table = catalogue.posix_cases()
    jit = table["JIT-PER"]
    params = [dict(p, default=[500]) if p["name"] == "period_us" else p for p in jit.params]
    monkeypatch.setitem(table, "JIT-PER", replace(jit, params=params))
    monkeypatch.setattr(catalogue, "posix_cases", lambda: table)
    assert timerlat.request(["JIT-PER"], 2) == timerlat.Request(500, "1", 2.5)


def test_the_guest_script_writes_markers_on_the_stream_port() -> None:
    init = init_script("hvc0")
    assert f'echo "{MARKER} timerlat end" >/dev/hvc0' in init
    assert "/dev/PORT" not in init and "/dev/ttyS1" not in init
    # The tracer runs after the agent and before the exit marker.
    assert init.index("/rtbench-agent") < init.index("timerlat") < init.index("exit=$status")


def _feed(*lines: str) -> timerlat.Result:
    result = timerlat.Result(timerlat.Request(1000, "1", 1.0))
    for line in lines:
        result.feed(line.encode())
    return result


def _run(jit_min: int) -> Run:
    lat = Series("JIT-PER", "latency", n=3, min=jit_min, max=jit_min * 3, kind="latency")
    return Run(
        hello={"clock": {"resolution_ns": 1}},
        cases=[CaseResult("JIT-PER", outcome="passed", series=[lat])],
    )


def test_samples_become_kernel_series_and_the_check_passes() -> None:
    result = _feed(" start period=1000 cpus=1 seconds=1", " 1 irq 3000 4000", " 1 thread 9000")
    result.feed(b" 1 thread 8000 12000")
    result.feed(b" end")
    run = _run(jit_min=10000)
    timerlat.attach(run, result, emulated=False)
    case = run.case("JIT-PER")
    assert case is not None
    irq, thread = case.find("kernel_irq_latency"), case.find("kernel_thread_latency")
    assert irq is not None and thread is not None
    assert (irq.n, irq.min, irq.max) == (2, 3000, 4000)
    assert thread.samples is not None and list(thread.samples) == [9000, 8000, 12000]
    assert thread.kind == "latency" and thread.attrs == {"source": "kernel timerlat"}
    (check,) = case.checks
    assert check.name == "above_kernel_timerlat" and check.verdict == "pass", check.detail


def test_jit_per_below_the_kernels_thread_fails_the_check() -> None:
    run = _run(jit_min=5000)  # better than the kernel's own thread: not a wake-up latency
    timerlat.attach(run, _feed(" 1 irq 3000", " 1 thread 8000", " end"), emulated=False)
    case = run.case("JIT-PER")
    assert case is not None and case.checks[0].verdict == "fail"
    assert "cannot be earlier" in case.checks[0].detail
    # On an emulator the two windows are not comparable to that precision.
    emulated = _run(jit_min=5000)
    timerlat.attach(emulated, _feed(" 1 thread 8000", " end"), emulated=True)
    case = emulated.case("JIT-PER")
    assert case is not None and case.checks[0].verdict == "skip"
    assert "5.0 us" in case.checks[0].detail and "8.0 us" in case.checks[0].detail


def test_a_kernel_without_timerlat_is_a_warning_and_the_run_goes_on() -> None:
    run = _run(jit_min=5000)
    timerlat.attach(run, _feed(" none blk function nop"), emulated=True)
    case = run.case("JIT-PER")
    assert case is not None and len(case.series) == 1 and not case.checks
    (warning,) = run.warnings
    assert warning.code == "timerlat" and "blk function nop" in warning.detail
    # Without JIT-PER nothing was asked: nothing to say.
    other = Run(cases=[CaseResult("CAL-REF", series=[])])
    timerlat.attach(other, _feed(" none nop"), emulated=True)
    assert not other.warnings


def test_multi_cpu_series_are_per_cpu() -> None:
    run = _run(jit_min=10000)
    timerlat.attach(run, _feed(" 0 thread 9000", " 1 thread 9500", " end"), emulated=True)
    case = run.case("JIT-PER")
    assert case is not None
    points = [s.point for s in case.series if s.name == "kernel_thread_latency"]
    assert points == [{"cpu": 0}, {"cpu": 1}]
    assert np.asarray(case.series[1].samples).tolist() == [9000]
