"""End-to-end: nothing measured is ever lost (issue 14).

A host killed (SIGKILL) at three moments of a quick-suite run, stopped by
SIGTERM and by two Ctrl-Cs; a store on a full tmpfs and a store whose write
lock another process holds; every file-writing option pointed at a missing
directory, a read-only mount and a full disk. Moments are chosen by what the
journal holds (N `end` records), never by sleeping: the last case of the run
is made long enough that the signal always lands inside the run.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import rtbench, rtbench_here
from procs import agents as _agents
from procs import alive as _alive

from rtbench.model import CaseResult
from rtbench.run.journal import journal_dir
from rtbench.store import Store
from rtbench.stream import parse_lines
from rtbench.stream.assemble import END_LOST, ENDED_INSIDE

# The quick suite with its last case (JIT-PER) long: every moment below falls
# before the run could end. The run is stopped long before it would.
QUICK_LONG_TAIL = ["run", "--set", "JIT-PER.cycles=600000"]
SHORT = ["run", "-c", "CAL-REF", "-c", "SYS-CALL"]
HANG_GUARD_S = 300.0  # only ends a hung test; no assertion depends on it


def _ends(journal: Path) -> list[str]:
    """Cases whose `end` record is in the journal (intact records only)."""
    try:
        lines = journal.read_bytes().splitlines()
    except FileNotFoundError:
        return []
    return [str(r.body["case"]) for r in parse_lines(lines).records if r.kind == "end"]


def _journal(db: Path) -> Path | None:
    found = sorted(journal_dir(db).glob("*.journal"))
    return found[0] if found else None


def _wait(pred: Callable[[], bool], what: str) -> None:
    end = time.monotonic() + HANG_GUARD_S
    while not pred():
        assert time.monotonic() < end, f"never happened: {what}"
        time.sleep(0.01)


def _host(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    # Output to files: a pipe nobody reads could block the host.
    return subprocess.Popen(
        [sys.executable, "-m", "rtbench.cli", *args],
        stdout=(tmp_path / "host.out").open("w"),
        stderr=(tmp_path / "host.err").open("w"),
        text=True,
        env={**os.environ, **(env or {})},
    )


def _running_with_ends(db: Path, tmp_path: Path, n: int) -> tuple[subprocess.Popen[str], set[int]]:
    """A quick-suite host whose journal holds at least `n` case ends."""
    proc = _host(tmp_path, *QUICK_LONG_TAIL, "--label", "moment=x")
    _wait(lambda: _journal(db) is not None, "a journal")
    agents: set[int] = set()

    def enough() -> bool:
        agents.update(_agents(proc.pid))
        journal = _journal(db)
        assert proc.poll() is None, (tmp_path / "host.err").read_text()
        return journal is not None and len(_ends(journal)) >= n

    _wait(enough, f"{n} case ends in the journal")
    return proc, agents


def _finished(run_cases: list[CaseResult]) -> list[str]:
    return [c.case for c in run_cases if c.reason not in (ENDED_INSIDE, END_LOST)]


@pytest.mark.parametrize(
    ("moment", "ends", "how"), [(1, 1, "recover"), (2, 12, "runs"), (3, 29, "recover")]
)
def test_kill_9_then_recovery_keeps_every_finished_case(
    db: Path, agent: Path, tmp_path: Path, moment: int, ends: int, how: str
) -> None:
    proc, agents = _running_with_ends(db, tmp_path, ends)
    journal = _journal(db)
    assert journal is not None
    if moment == 1:  # a live host's journal is not another process's to take
        r = rtbench("recover")
        assert r.returncode == 0 and "no interrupted runs" in r.stdout, r.stdout + r.stderr
        assert journal.exists()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    _wait(lambda: not _alive(agents), "the agent to die with its host")
    arrived = _ends(journal)
    assert len(arrived) >= ends

    r = rtbench(how)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(
        rf"recovered the journal of an interrupted run \(host pid {proc.pid}.*stored as run 1 "
        rf"\(incomplete, \d+ cases, {len(arrived)} of them finished\)",
        r.stderr.replace("\n", " "),
    ), r.stderr
    assert "Traceback" not in r.stderr
    assert not journal.exists()
    with Store(db) as store:
        run = store.load(1)
    assert _finished(run.cases) == arrived
    assert not run.complete and run.outcome == "error"
    assert run.labels == {"moment": "x"} and run.target == "local" and run.machine
    assert any(w.code == "recovered" for w in run.warnings)
    r = rtbench("recover")  # once only
    assert "no interrupted runs" in r.stdout and "1 " in rtbench("runs").stdout


@pytest.mark.parametrize(
    ("signals", "code"),
    [((signal.SIGTERM,), 143), ((signal.SIGHUP,), 129), ((signal.SIGINT, signal.SIGINT), 130)],
)
def test_signals_store_what_was_measured(
    db: Path, agent: Path, tmp_path: Path, signals: tuple[int, ...], code: int
) -> None:
    proc, agents = _running_with_ends(db, tmp_path, 3)
    journal = _journal(db)
    assert journal is not None
    before = _ends(journal)
    for sig in signals:  # a second one lands wherever the shutdown is
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    assert proc.wait(timeout=HANG_GUARD_S) == code, (tmp_path / "host.err").read_text()
    err = (tmp_path / "host.err").read_text()
    assert "Traceback" not in err and "Aborted" not in err, err
    assert not _alive(agents), "an agent outlived the run"
    assert not journal.exists()  # stored, so no journal left to recover
    with Store(db) as store:
        run = store.load(1)
    assert _finished(run.cases)[: len(before)] == before
    assert not run.complete
    why: dict[int, str] = {
        signal.SIGTERM: "SIGTERM",
        signal.SIGHUP: "SIGHUP",
        signal.SIGINT: "Ctrl-C",
    }
    assert any(why[signals[0]] in i.detail for i in run.issues), run.issues


# --- a full disk, a locked store ---------------------------------------------


@contextlib.contextmanager
def _mounted_tmpfs(where: Path, options: str) -> Iterator[Path]:
    """A tmpfs of the test's own at `where` (root only), unmounted however the test ends."""
    where.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 512 KiB tmpfs, to fill."""
    with _mounted_tmpfs(tmp_path / "mnt", "size=512k") as where:
        yield where


def _fill(directory: Path) -> Path:
    """Fills the file system of `directory` to the last byte."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (65536, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                continue
    finally:
        os.close(fd)
    return filler


def _kept(stderr: str) -> Path:
    m = re.search(r"store it later with\s+`rtbench ingest (\S+?)`", stderr.replace("\n", " "))
    assert m, stderr
    return Path(m.group(1))


def _cases_line(stdout: str) -> str:
    m = re.search(r"^Cases: .*$", stdout, re.M)
    assert m, stdout
    return m.group(0)


def _ingest_keeps_the_same_run(kept: Path, printed: str, db: Path) -> None:
    r = rtbench("ingest", str(kept))
    assert r.returncode == 0, r.stdout + r.stderr
    assert _cases_line(r.stdout) == printed
    assert "stored as run" in r.stdout
    with Store(db) as store:
        run = store.load(store.resolve("latest"))
    assert run.labels == {"keep": "me"} and run.target == "local"


@pytest.mark.root("mounting a tmpfs")
def test_full_disk_keeps_the_run_for_ingest(
    agent: Path, tmpfs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmpfs / "runs.sqlite"
    monkeypatch.setenv("RTBENCH_DB", str(db))
    assert rtbench("runs").returncode == 0  # the store exists
    # An open reader keeps the store's WAL and shared memory in place, as a
    # long-lived viewer would; then the disk fills up.
    reader = sqlite3.connect(db)
    reader.execute("SELECT count(*) FROM runs").fetchone()
    filler = _fill(tmpfs)
    try:
        r = rtbench(*SHORT, "--label", "keep=me")
        assert r.returncode == 2, r.stdout + r.stderr
        assert "Traceback" not in r.stderr
        printed = _cases_line(r.stdout)  # the result is shown all the same
        assert "could not be stored" in r.stderr and "full" in r.stderr, r.stderr
        kept = _kept(r.stderr)
        assert kept.is_file()
    finally:
        filler.unlink()
        reader.close()
    try:
        _ingest_keeps_the_same_run(kept, printed, db)
    finally:
        kept.unlink()


def test_locked_store_keeps_the_run_for_ingest(
    agent: Path, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RTBENCH_DB_TIMEOUT", "0.2")
    assert rtbench("runs").returncode == 0  # the store exists, in WAL mode
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        r = rtbench(*SHORT, "--label", "keep=me")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert "store is busy" in r.stderr and "locked" in r.stderr, r.stderr
    kept = _kept(r.stderr)
    try:
        _ingest_keeps_the_same_run(kept, _cases_line(r.stdout), db)
    finally:
        kept.unlink()


# --- every file rtbench writes ------------------------------------------------

CRITERIA = '"run.stars" = { min = 0 }\n'


WRITERS = ["save-stream", "report-html", "report-md", "export-json", "export-csv", "junit"]


def _writers(tmp_path: Path) -> dict[str, list[str]]:
    """Each file-writing option, as argv with OUT where its file goes."""
    criteria = tmp_path / "c.toml"
    criteria.write_text(CRITERIA)
    return {
        "save-stream": [*SHORT, "--save-stream", "OUT"],
        "report-html": ["report", "1", "-o", "OUT"],
        "report-md": ["report", "1", "--format", "markdown", "-o", "OUT"],
        "export-json": ["export", "1", "--samples", "-o", "OUT"],
        "export-csv": ["export", "1", "--format", "csv", "-o", "OUT"],
        "junit": ["check", "1", "--criteria", str(criteria), "--junit", "OUT"],
    }


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory, agent: Path) -> Path:
    """A store holding one short run, for the commands that read one."""
    db = tmp_path_factory.mktemp("stored") / "runs.sqlite"
    r = subprocess.run(
        [sys.executable, "-m", "rtbench.cli", "--db", str(db), *SHORT],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return db


def _write_to(
    db: Path, argv: list[str], out: Path, monkeypatch: pytest.MonkeyPatch
) -> subprocess.CompletedProcess[str]:
    monkeypatch.setenv("RTBENCH_DB", str(db))
    # A command that only writes a file runs in this process (no interpreter
    # start-up); `run` measures, as a process.
    command = rtbench if argv[0] == "run" else rtbench_here
    return command(*[str(out) if a == "OUT" else a for a in argv])


def _clear_failure(r: subprocess.CompletedProcess[str], out: Path, why: str) -> None:
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert f"cannot write {out}" in r.stderr.replace("\n", " ") and why in r.stderr, r.stderr


def _runs_in(db: Path) -> int:
    with Store(db) as store:
        return len(store.list_runs())


@pytest.mark.parametrize("option", WRITERS)
def test_missing_directory_fails_before_anything(
    stored: Path, tmp_path: Path, option: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "no" / "such" / "dir" / "file.out"
    before = _runs_in(stored)
    r = _write_to(stored, _writers(tmp_path)[option], out, monkeypatch)
    _clear_failure(r, out, "does not exist")
    assert _runs_in(stored) == before  # `run` refused before measuring
    assert not out.parent.exists()


def test_ab_json_into_a_missing_directory(db: Path, agent: Path, tmp_path: Path) -> None:
    out = tmp_path / "missing" / "ab.json"
    r = rtbench("ab", "--rounds", "1", "--json", str(out))
    _clear_failure(r, out, "does not exist")
    assert "round 1" not in r.stderr  # nothing ran


@pytest.mark.root("mounting a tmpfs")
@pytest.mark.parametrize("option", WRITERS)
def test_read_only_mount(
    stored: Path, tmp_path: Path, option: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _mounted_tmpfs(tmp_path / "ro", "ro,size=64k") as where:
        out = where / "file.out"
        before = _runs_in(stored)
        r = _write_to(stored, _writers(tmp_path)[option], out, monkeypatch)
        _clear_failure(r, out, "read-only")
        assert _runs_in(stored) == before
        assert list(where.iterdir()) == []


@pytest.mark.root("mounting a tmpfs")
@pytest.mark.parametrize("option", WRITERS)
def test_full_disk_leaves_no_partial_file(
    stored: Path, tmpfs: Path, tmp_path: Path, option: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    filler = _fill(tmpfs)
    out = tmpfs / "file.out"
    before = _runs_in(stored)
    r = _write_to(stored, _writers(tmp_path)[option], out, monkeypatch)
    _clear_failure(r, out, "No space left on device")
    assert [p.name for p in tmpfs.iterdir()] == [filler.name]  # no partial file
    if option == "save-stream":  # the run itself is stored in the healthy store
        assert _runs_in(stored) == before + 1
        assert "stored as run" in r.stdout
