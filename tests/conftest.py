"""Shared fixtures: the agent builds (release and test), a helper that
runs the agent and parses what it wrote, and the one policy for tests that
need real-time priority: `@pytest.mark.realtime` skips them, with the
reason, where SCHED_FIFO is refused (docs/outcomes.md); likewise
`@pytest.mark.root("what needs it")` for tests that need root (mounting,
starting sshd, dropping privileges, tracefs). `pg_server` is a real
PostgreSQL server for the session (tests/pgserver.py); `store_at` is an
empty store on SQLite and, again, on PostgreSQL."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import cpu_listing
import exclusive
import pgserver
import pytest
import tools
from stores import StoreAt

from rtbench.machine.build import ensure_agent
from rtbench.model import Run
from rtbench.stream import ParseResult, assemble, parse_lines

ROOT = Path(__file__).resolve().parents[1]

# rtbench prints tables at COLUMNS' width, also into a pipe; under pytest
# COLUMNS is 80, which would leave columns out of the tables tests read.
# tests/host/test_tables.py sets narrow widths where it tests them.
os.environ["COLUMNS"] = "200"


@dataclass
class AgentResult:
    code: int
    stdout: bytes
    stderr: str
    parsed: ParseResult
    run: Run


# Only for an agent that hangs: the agent bounds its own run (each case's
# hard deadline plus 20 s of slack, the loads' start and stop waits), and on
# a loaded machine a run of two cases with loads legitimately took over 120 s
# (tests/agent/test_loads.py in a fresh chroot at load 51). A harness timeout
# below the agent's own bound would turn a slow machine into an error.
AGENT_HANG_S = 600.0


def _run(
    exe: Path,
    args: list[str],
    timeout: float = AGENT_HANG_S,
    preexec: Callable[[], None] | None = None,
) -> AgentResult:
    proc = subprocess.run(
        [str(exe), *args], capture_output=True, timeout=timeout, preexec_fn=preexec, check=False
    )
    parsed = parse_lines(proc.stdout.splitlines())
    return AgentResult(
        proc.returncode,
        proc.stdout,
        proc.stderr.decode("utf-8", "replace"),
        parsed,
        assemble(parsed.records, parsed.issues, parsed.log),
    )


@pytest.fixture(scope="session")
def agent() -> Path:
    return ensure_agent("release")


@pytest.fixture(scope="session")
def test_agent() -> Path:
    return ensure_agent("test")


@pytest.fixture(scope="session")
def run_agent() -> Callable[..., AgentResult]:
    return _run


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("RTBENCH_DB", str(path))
    return path


@pytest.fixture(autouse=True)
def private_state(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's state directory (fallback journals, the done list of
    rtbench.run.journal) of this test alone, never the real user's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[pgserver.PostgresServer]:
    """A PostgreSQL server for the whole session, killed at its end."""
    why = pgserver.missing()
    if why:
        if pgserver.required():
            pytest.fail(f"{pgserver.REQUIRE_ENV} is set, but {why}")
        pytest.skip(f"PostgreSQL tests: {why}")
    server = pgserver.PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()
        server.remove()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_at(request: pytest.FixtureRequest, tmp_path: Path) -> StoreAt:
    """An empty store, once on SQLite and once on PostgreSQL (a new database)."""
    if request.param == "sqlite":
        path = tmp_path / "s.sqlite"
        return StoreAt("sqlite", str(path), path=path)
    server: pgserver.PostgresServer = request.getfixturevalue("pg_server")
    name = server.create_database()
    return StoreAt("postgresql", server.url(name), server=server, dbname=name)


def pytest_report_header() -> str:
    refused = realtime_refused()
    rt = f"no real-time priority ({refused})" if refused else "real-time priority available"
    return f"rtbench tests as uid {os.geteuid()}; {rt}"


# In a child process: the test process itself must keep its own policy.
_TRY_FIFO = (
    "import os\n"
    "try:\n"
    "    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))\n"
    "except OSError as e:\n"
    "    raise SystemExit(f'SCHED_FIFO refused: {e.strerror}')\n"
)


@functools.cache
def realtime_refused() -> str:
    """Why this machine refuses SCHED_FIFO to the tests' user ('' when it
    grants it): no CAP_SYS_NICE and RLIMIT_RTPRIO 0, or a cgroup without a
    real-time budget. The agent asks for the same thing."""
    proc = subprocess.run(
        [sys.executable, "-c", _TRY_FIFO], capture_output=True, text=True, check=False, timeout=60
    )
    if proc.returncode == 0:
        return ""
    return (proc.stderr.strip().splitlines() or ["SCHED_FIFO refused"])[-1]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    tools.check(item)  # before the fixtures: a missing tool skips (CI: fails) first


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config, "workerinput", None) is None:
        config.pluginmanager.register(tools.SkipSummary(), "rtbench-skip-summary")
    cpu_listing.register(config)  # CPU s per test and wider fixture, after --durations
    config.addinivalue_line(
        "markers",
        "realtime: needs SCHED_FIFO (CAP_SYS_NICE or RLIMIT_RTPRIO); skipped with the reason "
        "where it is refused",
    )
    config.addinivalue_line(
        "markers",
        "exclusive: runs while no other test runs, also under pytest-xdist, for a reason a "
        "sibling test would break (tests/exclusive.py)",
    )
    config.addinivalue_line(
        "markers",
        "tools(*packages): needs these system packages (scripts/system-packages.txt); skipped "
        "naming them and the command that installs them, failed in CI (tests/tools.py)",
    )


def _root_skip_reason(item: pytest.Item) -> str:
    marker = item.get_closest_marker("root")
    assert marker is not None
    why = marker.args[0] if marker.args else "this test"
    return f"needs root ({why}); running as uid {os.geteuid()}"


# Under xdist (`--dist loadfile --no-loadscope-reorder`) files are handed to
# the workers in collection order. The files with exclusive tests first: an
# exclusive test waits for the other worker's test to end, seconds while that
# one is another short agent test, half a minute behind a QEMU guest's (82
# worker-seconds of waiting in a run, 2026-11-26). Then the long end-to-end
# files, so that none of them starts last and runs alone while the other
# worker idles.
_FIRST = ("tests/e2e/", "tests/agent/")


def _path(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _order(items: list[pytest.Item]) -> None:
    alone = list(dict.fromkeys(_path(item) for item in items if _exclusive(item)))
    beside = [p for p in dict.fromkeys(map(_path, items)) if p in BYSTANDER_MODULES]
    mixed = set(alone) & set(beside)
    assert not mixed, f"exclusive tests in a bystander's file: {mixed}"
    # One file with exclusive tests, one bystander's, and so on: whichever
    # worker asks next gets the other kind of file as often as not.
    first = {p: 2 * i for i, p in enumerate(alone)} | {p: 2 * i + 1 for i, p in enumerate(beside)}

    def rank(item: pytest.Item) -> int:
        p = _path(item)
        if p in first:
            return first[p]
        later = next((i for i, d in enumerate(_FIRST) if p.startswith(d)), len(_FIRST))
        return len(first) * 2 + later

    items.sort(key=rank)  # stable: each file's order is kept


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if getattr(config, "workerinput", None) is not None:
        _order(items)
    if os.geteuid() != 0:
        for item in items:
            if item.get_closest_marker("root"):
                item.add_marker(pytest.mark.skip(reason=_root_skip_reason(item)))
    wanted = [item for item in items if item.get_closest_marker("realtime")]
    if not wanted:
        return
    refused = realtime_refused()
    if refused:
        skip = pytest.mark.skip(reason=f"needs real-time priority: {refused}")
        for item in wanted:
            item.add_marker(skip)


# Modules whose every test is exclusive (tests/exclusive.py says when a test
# must be), besides the `realtime` tests and those marked `exclusive`: they
# run loads with real-time priority (starving a sibling for seconds), write
# tracefs or the CPUs' C-state request (global kernel state), or compare
# figures that a sibling's SCHED_FIFO agent, pinned to the same first CPU,
# would move (stress-ng at normal priority never preempts the agent; a
# sibling's agent does).
EXCLUSIVE_MODULES = frozenset(
    {
        # The agent's known answers: an injected fault against a threshold,
        # measured on this machine.
        "tests/agent/test_clk_jit.py",
        "tests/agent/test_compare_fault.py",
        "tests/agent/test_irq.py",
        "tests/agent/test_loads.py",
        "tests/agent/test_noise.py",
        "tests/agent/test_noise_hw.py",
        "tests/agent/test_rsp_io.py",
        "tests/agent/test_sem.py",
        "tests/agent/test_thr.py",
        "tests/agent/test_tm.py",
        "tests/e2e/test_loads.py",
        "tests/e2e/test_noise_trace.py",
        "tests/e2e/test_trace_mode.py",
    }
)


# Files that run beside an exclusive test, holding no lock (tests/exclusive.py):
# computation on the host, from files, fake /proc and /sys trees, in-process
# CLI calls and plain subprocesses, with no agent, no write to the kernel's
# state, no PostgreSQL server, and no clock, deadline or timeout under 60 s
# that seconds of a real-time load's starvation could cross (hypothesis's
# deadline off). Not here, for instance: test_error_boundary.py and
# test_probe.py (the privilege probe tries SCHED_FIFO), test_trace.py (the
# real tracefs), test_child_transport.py (a 2 s idle timeout), the store's
# files (a PostgreSQL server). The five first are 57 of their 73 CPU s.
BYSTANDER_MODULES = frozenset(
    {
        "tests/host/test_fuzz.py",
        "tests/host/test_stored_figures.py",
        "tests/host/test_compare_repetitions.py",
        "tests/host/test_parser_paths.py",
        "tests/host/test_reports.py",
        "tests/host/test_analysis_compare.py",
        "tests/host/test_analysis_criteria.py",
        "tests/host/test_analysis_evt.py",
        "tests/host/test_analysis_rating.py",
        "tests/host/test_analysis_scores.py",
        "tests/host/test_analysis_stats.py",
        "tests/host/test_architecture.py",
        "tests/host/test_assemble.py",
        "tests/host/test_attribution.py",
        "tests/host/test_campaign.py",
        "tests/host/test_case_traits.py",
        "tests/host/test_codec.py",
        "tests/host/test_corpus.py",
        "tests/host/test_doctor_cpu.py",
        "tests/host/test_emulated.py",
        "tests/host/test_guest_trace.py",
        "tests/host/test_health.py",
        "tests/host/test_hostile_text.py",
        "tests/host/test_ingest_stream.py",
        "tests/host/test_io.py",
        "tests/host/test_kernels.py",
        "tests/host/test_labgrid_target.py",
        "tests/host/test_measure.py",
        "tests/host/test_noise_trace.py",
        "tests/host/test_parser.py",
        "tests/host/test_probe_system.py",
        "tests/host/test_progress.py",
        "tests/host/test_pvh.py",
        "tests/host/test_qemu_version.py",
        "tests/host/test_reference.py",
        "tests/host/test_report_summary.py",
        "tests/host/test_soak.py",
        "tests/host/test_tables.py",
        "tests/host/test_targets.py",
        "tests/host/test_terminal_warnings.py",
        "tests/host/test_timerlat.py",
        "tests/host/test_trend.py",
        "tests/host/test_verdict.py",
    }
)


def _exclusive(item: pytest.Item) -> bool:
    return (
        item.get_closest_marker("exclusive") is not None
        or item.get_closest_marker("realtime") is not None
        or _path(item) in EXCLUSIVE_MODULES
    )


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker per CPU this process may run on (taskset, a
    container's cpuset), not per CPU of the machine."""
    return len(os.sched_getaffinity(0))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: object) -> None:
    node.workerinput[exclusive.WORKERINPUT_KEY] = exclusive.lock_folder()  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    if getattr(config, "workerinput", None) is None:
        exclusive.remove_folder()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    lock = exclusive.worker_lock(item.config)
    if lock is None:
        yield
        return
    if _path(item) in BYSTANDER_MODULES:
        with lock.beside():
            yield
        return
    alone = _exclusive(item)
    with lock.held(alone, keep=alone and nextitem is not None and _exclusive(nextitem)):
        yield
