"""CPU seconds per test, and per module/session fixture, listed after
--durations' wall seconds: on a shared machine the wall time is mostly the
others' load, the CPU time is the test's own.

A process's CPU counts the children it has reaped (agents, compilers, QEMU)
at the moment it reaps them, not while they run. A module's guest booted by
a fixture and killed at the module's end is reaped in the teardown of the
module's last test, and its build in the setup of the first: charged to
those two tests, the guest's whole life made one test look like the
heaviest of the suite. So the setup and the teardown of every fixture
wider than a test (class, module, package, session) are measured on their
own, take the CPU of the children they reap, and are listed as that
fixture; a test is charged with what is left of its run. A child a test
starts and reaps stays the test's.

Under xdist each worker measures its own tests and fixtures, and the
figures travel in the teardown report's user_properties to the controller,
which lists them (a fixture's setup and teardown, seen in two reports, are
added up into one line)."""

from __future__ import annotations

import os
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

# The keys of a teardown report's user_properties this plugin writes.
TEST_KEY = "cpu_s"
WALL_KEY = "wall_s"
FIXTURE_KEY = "fixture_cpu"


def cpu_s() -> float:
    """This process's CPU and that of the children it has reaped."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@dataclass
class _Span:
    """A fixture's setup or teardown being measured; `inner` is the CPU of
    wider fixtures set up or torn down inside it (listed on their own)."""

    label: str
    cpu: float
    wall: float
    inner: float = 0.0


@dataclass
class _Line:
    cpu: float = 0.0
    wall: float = 0.0


@dataclass(eq=False)
class CpuListing:
    """The plugin (one instance per pytest run: tests/conftest.py registers it)."""

    # Worker side: the spans open now (a fixture's setup requesting another
    # wider fixture nests), the CPU all fixtures' spans took so far, and the
    # finished spans not yet sent in a report.
    _open: list[_Span] = field(default_factory=list)
    _fixtures_cpu: float = 0.0
    _unsent: list[tuple[str, float, float]] = field(default_factory=list)
    _start: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    # Controller side: what the reports carried.
    tests: list[tuple[float, float, str]] = field(default_factory=list)
    fixtures: dict[str, _Line] = field(default_factory=dict)

    # -- worker: measuring ---------------------------------------------------

    def _begin(self, label: str) -> None:
        self._open.append(_Span(label, cpu_s(), time.monotonic()))

    def _end(self) -> None:
        span = self._open.pop()
        spent = cpu_s() - span.cpu
        own = max(0.0, spent - span.inner)  # rounding, as a test's below
        if self._open:
            self._open[-1].inner += spent
        else:
            self._fixtures_cpu += spent
        self._unsent.append((span.label, own, time.monotonic() - span.wall))

    @staticmethod
    def _label(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> str:
        where = request.node.nodeid or "session"
        param = f"[{request.param}]" if hasattr(request, "param") else ""
        return f"fixture {fixturedef.argname}{param} ({fixturedef.scope}) {where}"

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_fixture_setup(
        self, fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
    ) -> Iterator[None]:
        if fixturedef.scope == "function":
            yield
            return
        label = self._label(fixturedef, request)
        self._begin(label)
        try:
            yield
        finally:
            self._end()
        # Run first of the fixture's finalizers (they run last in, first
        # out): the teardown's span opens before the fixture's own code
        # after its yield and closes in pytest_fixture_post_finalizer, which
        # pytest runs last. (Without a cached result the fixture's finish
        # runs no finalizer: none may be left behind.)
        if fixturedef.cached_result is not None:
            fixturedef.addfinalizer(lambda: self._begin(label))

    def pytest_fixture_post_finalizer(
        self, fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
    ) -> None:
        if (
            fixturedef.scope != "function"
            and self._open
            and self._open[-1].label == self._label(fixturedef, request)
        ):
            self._end()

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        self._start[item.nodeid] = (cpu_s(), self._fixtures_cpu, time.monotonic())
        yield

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        start = self._start.get(item.nodeid)
        if report.when == "teardown" and start is not None:
            del self._start[item.nodeid]
            cpu, fixtures_cpu, wall = start
            # os.times() counts in clock ticks: the difference of sums of
            # them may come out a float's rounding below 0 ("-0.00 CPU s").
            spent = max(0.0, cpu_s() - cpu - (self._fixtures_cpu - fixtures_cpu))
            report.user_properties.append((TEST_KEY, spent))
            report.user_properties.append((WALL_KEY, time.monotonic() - wall))
            for line in self._unsent:
                report.user_properties.append((FIXTURE_KEY, line))
            self._unsent.clear()
        return report

    # -- controller: listing -------------------------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        test: dict[str, float] = {}
        for key, value in report.user_properties:
            if key in (TEST_KEY, WALL_KEY):
                test[key] = float(cast(float, value))
            elif key == FIXTURE_KEY:
                # A tuple, or a list once through xdist.
                label, cpu, wall = cast(tuple[str, float, float], value)
                line = self.fixtures.setdefault(str(label), _Line())
                line.cpu += float(cpu)
                line.wall += float(wall)
        if TEST_KEY in test:
            self.tests.append((test[TEST_KEY], test.get(WALL_KEY, 0.0), report.nodeid))

    def lines(self) -> list[tuple[float, float, str]]:
        """Tests and fixtures, most CPU first."""
        fixtures = [(line.cpu, line.wall, label) for label, line in self.fixtures.items()]
        return sorted([*self.tests, *fixtures], reverse=True)

    def pytest_terminal_summary(
        self, terminalreporter: pytest.TerminalReporter, config: pytest.Config
    ) -> None:
        count = config.getoption("durations", None)
        lines = self.lines()
        if count is None or not lines:
            return
        top = lines[:count] if count > 0 else lines  # --durations=0: all, as pytest's own
        total = sum(cpu for cpu, _, _ in lines)
        terminalreporter.write_sep(
            "=", f"most CPU: {len(top)} tests and wider fixtures ({total:.0f} CPU s in all)"
        )
        for cpu, wall, name in top:
            terminalreporter.write_line(f"{cpu:8.2f} CPU s {wall:8.2f} s wall  {name}")


def register(config: pytest.Config) -> None:
    config.pluginmanager.register(CpuListing(), "rtbench-cpu-listing")
