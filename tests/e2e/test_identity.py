"""Runs known by their identity, never by what they look like (issue 26,
items 1-3; issue 18, item 7).

Each test is an attack of the adversarial pass that once lost or duplicated
a run: two runs alike in every listed field, one killed during its save; a
journal folder another user made first, a forged journal and a FIFO in it;
a record of a newer stream format mid-run; a journal that cannot be
removed; the same export imported twice and a stored stream ingested again.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import NOBODY, rtbench, rtbench_here
from stores import StoreAt

from rtbench.run.journal import Journal, fallback_dirs, journal_dir
from rtbench.run.measure import Plan, measure, read_stream, store_run
from rtbench.run.recovery import recover
from rtbench.store import Store, StoreLocation, locate
from rtbench.transports import ReplayTransport

CASES = ["SYS-CALL", "CAL-REF"]  # two short cases: a run in well under a second
HEADER = {"started_at": "2026-01-01T00:00:00+00:00", "target": "local", "labels": {"lab": "a"}}


def agent_stream(agent: Path, *args: str) -> list[bytes]:
    out = subprocess.run(
        [str(agent), "--no-samples", *args, *CASES], capture_output=True, check=True, timeout=120
    ).stdout
    return out.splitlines()


def record(ver: int, seq: int, kind: str, body: dict[str, object]) -> bytes:
    text = f"{ver} {seq} {kind} {json.dumps(body, separators=(',', ':'))}".encode()
    return b"@rtb " + text + b" %08x" % (zlib.crc32(text) & 0xFFFFFFFF)


def abandoned_journal(
    where: Path | StoreLocation, lines: list[bytes], header: dict[str, object]
) -> Path:
    """A journal as a host killed during its save leaves it: every line,
    the saving mark, and no lock (the process is gone)."""
    journal = Journal.create(where, header, print)
    assert journal is not None
    for line in lines:
        journal.write(line, sync=True)
    journal.mark_saving()
    journal.close()  # as the kernel does for a killed host: the lock goes
    return journal.path


# --- two runs alike in every field but their identity ------------------------


def test_two_alike_runs_one_killed_during_its_save_are_both_stored(
    store_at: StoreAt, agent: Path
) -> None:
    """Same start second, target, case count and labels: the run stored by
    its host and the one whose host was killed while it saved are two runs,
    and recovery deletes nothing it has not stored (SQLite, PostgreSQL)."""
    lines = agent_stream(agent)
    location = locate(store_at.where)
    stored = Journal.create(
        location, {**HEADER, "run": "0" * 8 + "-0000-4000-8000-" + "0" * 12}, print
    )
    assert stored is not None
    for line in lines:
        stored.write(line)
    first = read_stream(stored.path)
    stored.discard()
    with store_at.open() as store:
        first_id = store.save(first)
    killed = abandoned_journal(
        location, lines, {**HEADER, "run": "1" * 8 + "-1111-4111-8111-" + "1" * 12}
    )

    said: list[str] = []
    with store_at.open() as store:
        done = recover(store, said.append)
        runs = store.list_runs()
        assert [r.id for r in runs] == [first_id, done[0].run_id], said
        assert {store.load(r.id).uuid for r in runs} == {
            first.uuid,
            "11111111-1111-4111-8111-111111111111",
        }
    assert (runs[0].started_at, runs[0].target, runs[0].cases, runs[0].labels) == (
        runs[1].started_at,
        runs[1].target,
        runs[1].cases,
        runs[1].labels,
    )
    assert not killed.exists() and "stored as run" in said[0]
    with store_at.open() as store:  # and again: nothing more
        assert recover(store, said.append) == [] and store.count_runs() == 2


def test_a_journal_whose_run_is_stored_is_removed_and_not_stored_again(
    store_at: StoreAt, agent: Path
) -> None:
    """A host killed between its commit and the journal's removal: the
    identity is in the store, so the journal goes, with no second run."""
    lines = agent_stream(agent)
    path = abandoned_journal(
        locate(store_at.where), lines, {**HEADER, "run": "2" * 8 + "-2222-4222-8222-" + "2" * 12}
    )
    run = read_stream(path)
    with store_at.open() as store:
        run_id = store.save(run)
        said: list[str] = []
        recover(store, said.append)
        assert store.count_runs() == 1
    assert not path.exists() and f"already stored as run {run_id}" in said[0]


def test_a_journal_moved_while_its_host_was_killed_is_one_run(db: Path, agent: Path) -> None:
    """A kill -9 while the journal moved to the fallback folder leaves two
    copies of one run: the longer is stored, once; the shorter goes."""
    lines = agent_stream(agent)
    header: dict[str, object] = {**HEADER, "run": "3" * 8 + "-3333-4333-8333-" + "3" * 12}
    short = abandoned_journal(db, lines[:-3], header)
    # The copy in the fallback folder, which had one more case's end.
    fallback = fallback_dirs()[0]
    fallback.mkdir(parents=True, mode=0o700)
    longer = fallback / "20260101T000000-1-1.journal"
    longer.write_bytes(
        short.read_bytes().replace(b"#rtbench-saving\n", b"") + b"\n".join(lines[-3:]) + b"\n"
    )
    with Store(db) as store:
        said: list[str] = []
        recover(store, said.append)
        assert store.count_runs() == 1, said
        run = store.load(1)
    assert [c.case for c in run.cases] == CASES and run.complete
    assert not short.exists() and not longer.exists()


# --- journal folders another user made ----------------------------------------


@contextmanager
def _foreign(directory: Path) -> Iterator[None]:
    """`directory` as another user who made it first left it: theirs, mode 777."""
    directory.mkdir(parents=True)
    os.chown(directory, NOBODY, NOBODY)
    directory.chmod(0o777)
    yield


@pytest.mark.root("giving a folder and files to another user")
def test_foreign_journal_folders_forged_journals_and_fifos_are_ignored(
    db: Path, agent: Path, tmp_path: Path
) -> None:
    lines = agent_stream(agent)
    forged = (
        b"#rtbench-journal "
        + json.dumps(
            {
                "format": 1,
                "pid": 1,
                "store": str(db.resolve()),
                "run": "4" * 8 + "-4444-4444-8444-" + "4" * 12,
            }
        ).encode()
        + b"\n"
        + b"\n".join(lines)
        + b"\n"
    )
    # The store's journal folder, made first by another user, with a forged
    # journal and a FIFO named like a journal in it.
    theirs = journal_dir(db)
    with _foreign(theirs):
        (theirs / "20260101T000000-1-1.journal").write_bytes(forged)
        os.mkfifo(theirs / "20260101T000000-2-2.journal")
    # The fallback folder is ours, but holds a forged journal of another
    # user and a FIFO.
    mine = fallback_dirs()[0]
    mine.mkdir(parents=True, mode=0o700)
    theirs_file = mine / "20260101T000000-3-3.journal"
    theirs_file.write_bytes(forged)
    os.chown(theirs_file, NOBODY, NOBODY)
    os.mkfifo(mine / "20260101T000000-4-4.journal")

    r = rtbench("runs", timeout=120)  # a FIFO read would hang: the timeout fails the test
    assert r.returncode == 0, r.stderr
    assert f"{theirs}: owned by uid {NOBODY}, not by you" in r.stderr
    assert f"{theirs_file}: not a regular file of yours; ignored" in r.stderr
    assert "20260101T000000-4-4.journal: not a regular file of yours; ignored" in r.stderr
    with Store(db) as store:
        assert store.count_runs() == 0
    # A run measured now does not use the other user's folder, and is stored.
    r = rtbench("run", "--no-samples", *[a for c in CASES for a in ("-c", c)], timeout=300)
    assert "stored as run 1" in r.stdout, r.stdout + r.stderr
    assert "the journal is in" in r.stderr and str(theirs) in r.stderr
    assert stat.S_IMODE(theirs.stat().st_mode) == 0o777 and len(list(theirs.iterdir())) == 2


def test_a_journal_folder_others_may_enter_is_made_private(db: Path, agent: Path) -> None:
    folder = journal_dir(db)
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    r = rtbench("runs")
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


# --- a stream format this host does not read ------------------------------------


def test_a_newer_format_record_mid_run_keeps_what_arrived(
    db: Path, agent: Path, tmp_path: Path
) -> None:
    """One CRC-valid record of format 2 after the first case: the finished
    case is stored, the run is incomplete, the saved stream has every line."""
    lines = agent_stream(agent)
    first_end = next(i for i, line in enumerate(lines) if b" end " in line)
    newer = record(2, first_end + 1, "begin", {"case": "CAL-REF"})
    stream = tmp_path / "agent.rtb"
    stream.write_bytes(
        b"\n".join([*lines[: first_end + 1], newer, *lines[first_end + 1 :]]) + b"\n"
    )
    saved = tmp_path / "saved.rtb"
    measured = measure(ReplayTransport(stream), Plan([], save_stream=saved, store_path=locate(db)))
    run = measured.run
    assert [c.case for c in run.cases] == ["SYS-CALL"] and run.cases[0].outcome == "passed"
    assert not run.complete and any("stream format 2 is newer" in i.detail for i in run.issues)
    assert saved.read_bytes().splitlines()[: first_end + 2] == [*lines[: first_end + 1], newer]
    assert store_run(measured).run_id == 1
    assert list(journal_dir(db).glob("*.journal")) == []
    # The CLI: the same stream ingested ends with exit 2 and the case stored.
    r = rtbench_here("--db", str(tmp_path / "other.sqlite"), "ingest", str(stream))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "stream format 2 is newer" in r.stdout + r.stderr and "stored as run 1" in r.stdout


# --- a journal that cannot be removed ----------------------------------------------


@contextmanager
def _read_only(folder: Path) -> Iterator[None]:
    """`folder` read-only, also for root (a read-only tmpfs mount), with its files."""
    if os.geteuid() != 0:
        folder.chmod(0o500)
        try:
            yield
        finally:
            folder.chmod(0o700)
        return
    keep = {p.name: p.read_bytes() for p in folder.iterdir()}
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "mode=0700", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        for name, data in keep.items():
            (folder / name).write_bytes(data)
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        yield
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_a_journal_in_a_read_only_folder_is_stored_once(db: Path, agent: Path) -> None:
    lines = agent_stream(agent)
    path = abandoned_journal(db, lines, {**HEADER, "run": "5" * 8 + "-5555-4555-8555-" + "5" * 12})
    with _read_only(path.parent):
        said = [rtbench("runs").stderr for _ in range(3)]
        assert path.exists()
    with Store(db) as store:
        assert store.count_runs() == 1, said
    assert "stored as run 1" in said[0] and "marked done" in said[0]
    assert "journal" not in said[1] + said[2], said


# --- the same run taken in twice ------------------------------------------------------


def test_the_same_export_imported_twice_is_one_run(db: Path, agent: Path, tmp_path: Path) -> None:
    stream = tmp_path / "s.rtb"
    stream.write_bytes(b"\n".join(agent_stream(agent)) + b"\n")
    r = rtbench_here("ingest", str(stream))
    assert "stored as run 1" in r.stdout, r.stdout + r.stderr
    again = rtbench_here("ingest", str(stream))
    assert again.returncode == r.returncode
    assert "already stored as run 1" in again.stderr and "nothing stored" in again.stderr
    export = tmp_path / "e.json"
    assert rtbench_here("export", "1", "-o", str(export)).returncode == 0
    # The same store: the same run.
    assert rtbench_here("import", str(export)).returncode == r.returncode
    other = str(tmp_path / "other.sqlite")
    first = rtbench_here("--db", other, "import", str(export))
    second = rtbench_here("--db", other, "import", str(export))
    assert "stored as run 1" in first.stdout, first.stdout + first.stderr
    assert "already stored as run 1" in second.stderr, second.stdout + second.stderr
    copy = rtbench_here("--db", other, "import", "--force-copy", str(export))
    assert "stored as run 2" in copy.stdout, copy.stdout + copy.stderr
    with Store(db) as s, Store(other) as o:
        assert s.count_runs() == 1 and o.count_runs() == 2
        assert s.load(1).uuid == o.load(1).uuid != o.load(2).uuid


def test_a_run_and_its_saved_stream_are_one_run(db: Path, tmp_path: Path) -> None:
    """The host's identity reaches the agent's hello: ingesting the saved
    stream of a stored run stores nothing."""
    saved = tmp_path / "saved.rtb"
    r = rtbench("run", "--no-samples", "-c", "SYS-CALL", "--save-stream", str(saved), timeout=300)
    assert "stored as run 1" in r.stdout, r.stdout + r.stderr
    again = rtbench_here("ingest", str(saved))
    assert "already stored as run 1" in again.stderr, again.stdout + again.stderr
    with Store(db) as store:
        run = store.load(1)
        assert store.count_runs() == 1 and run.hello["run"] == run.uuid


def test_a_stream_without_identity_gets_its_digest(agent: Path, tmp_path: Path) -> None:
    """An old stream (no `run` in its hello): the same records give the
    same identity, other records another."""
    a, b = tmp_path / "a.rtb", tmp_path / "b.rtb"
    lines = agent_stream(agent)
    a.write_bytes(b"boot noise\n" + b"\n".join(lines) + b"\n")
    b.write_bytes(b"\n".join(lines[:-1]) + b"\n")
    assert read_stream(a).uuid == read_stream(a).uuid != read_stream(b).uuid
    with_id = agent_stream(agent, "--run-id=66666666-6666-4666-8666-666666666666")
    b.write_bytes(b"\n".join(with_id) + b"\n")
    assert read_stream(b).uuid == "66666666-6666-4666-8666-666666666666"


@pytest.mark.parametrize("bad", ["", 'a"b', "a b", "x" * 65, "é"])
def test_the_agent_refuses_an_identity_it_could_not_echo_as_it_is(agent: Path, bad: str) -> None:
    r = subprocess.run(
        [str(agent), f"--run-id={bad}", "CAL-REF"], capture_output=True, check=False, timeout=60
    )
    assert r.returncode == 2 and r.stdout == b"" and b"--run-id must be" in r.stderr
