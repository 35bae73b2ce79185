"""Many hosts on one store, on SQLite and on PostgreSQL alike (the
`store_at` fixture): writers at once, journals of a dead host, a database
out of reach or locked, and PostgreSQL's URL forms and schemas."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import free_port
from pgserver import PostgresServer
from stores import StoreAt, simple_run, writer_run

from rtbench.run.journal import Journal, candidates
from rtbench.run.measure import Measured, store_run
from rtbench.run.recovery import recover
from rtbench.store import Store, StoreBusy, StoreError, locate, schema
from rtbench.stream import StreamWriter, default_hello

# --- many writers at once ------------------------------------------------


def test_two_stores_on_one_database(store_at: StoreAt) -> None:
    with store_at.open() as one, store_at.open() as two:
        a = one.save(simple_run(by="one"))
        assert [r.id for r in two.list_runs()] == [a]
        b = two.save(simple_run(by="two"))
        assert one.resolve("latest") == b
        assert one.load(b).labels == {"by": "two"}


def test_concurrent_first_open_and_saves(store_at: StoreAt) -> None:
    saved: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def worker() -> None:
        try:
            start.wait()
            with store_at.open() as s:
                for _ in range(5):
                    saved.append(s.save(simple_run()))
        except BaseException as e:  # surfaced below: threads swallow them
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(saved) == list(range(1, 21))
    with store_at.open() as s:
        assert len(s.list_runs()) == 20
        assert s.schema_version == len(schema.MIGRATIONS)


# One writing host: saves N runs, each made of its name and number, in
# lockstep with the other writer (after its run i it waits for the other's
# run i), so that the two certainly write in the same moments.
WRITER = """
import sys, time
from pathlib import Path
from stores import writer_run
from rtbench.store import Store

where, me, other, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
folder = Path(sys.argv[5])
def count(name):
    try:
        return int((folder / name).read_text() or 0)
    except FileNotFoundError:
        return 0
with Store(where) as store:
    (folder / f"{me}.ready").touch()
    while not (folder / "go").exists():
        time.sleep(0.002)
    for i in range(n):
        print(store.save(writer_run(me, i)), flush=True)
        (folder / f"{me}.tmp").write_text(str(i + 1))
        (folder / f"{me}.tmp").replace(folder / me)
        deadline = time.monotonic() + 120
        while count(other) < i + 1 and time.monotonic() < deadline:
            time.sleep(0.001)
"""


def test_two_writer_processes_store_every_run_whole(store_at: StoreAt, tmp_path: Path) -> None:
    n = 12
    with store_at.open():
        pass  # the schema exists: the writers race on saves, not on its creation
    tests = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(tests), "RTBENCH_DB_TIMEOUT": "60"}
    writers = {
        me: subprocess.Popen(
            [sys.executable, "-c", WRITER, store_at.where, me, other, str(n), str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for me, other in (("a", "b"), ("b", "a"))
    }
    try:
        deadline = time.monotonic() + 120
        while not all((tmp_path / f"{me}.ready").exists() for me in writers):
            assert all(p.poll() is None for p in writers.values()), "a writer died"
            assert time.monotonic() < deadline, "the writers did not start"
            time.sleep(0.01)
        (tmp_path / "go").touch()
        outputs = {me: p.communicate(timeout=300) for me, p in writers.items()}
    finally:
        for p in writers.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    for me, (_, err) in outputs.items():
        assert writers[me].returncode == 0, err
    ids = {me: [int(x) for x in out.split()] for me, (out, _) in outputs.items()}
    assert all(len(v) == n for v in ids.values())
    assert len(set(ids["a"]) | set(ids["b"])) == 2 * n  # every save got its own id
    # The two wrote in the same moments: their ids interleave.
    assert min(ids["b"]) < max(ids["a"]) and min(ids["a"]) < max(ids["b"])
    with store_at.open() as store:
        summaries = store.list_runs()
        assert sorted(s.id for s in summaries) == sorted(ids["a"] + ids["b"])
        for me in ("a", "b"):
            for i, run_id in enumerate(ids[me]):
                got = store.load(run_id)
                want = writer_run(me, i)
                want.id, want.uuid = run_id, got.uuid  # the identity save gave it
                # Whole and unmixed: every row of the run is this writer's run i.
                assert got == want, (me, i)
        assert [s.id for s in store.list_runs({"writer": "a"})] == sorted(ids["a"])


def test_a_postgresql_store_recovers_the_journal_of_a_dead_host(
    store_at: StoreAt, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal of a run measured for a database server is kept on this
    host, and the next rtbench that opens that store stores it there."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    location = locate(store_at.where)
    header = {"started_at": "2026-01-01T00:00:00Z", "target": "local", "labels": {"x": "y"}}
    journal = Journal.create(location, header, pytest.fail)
    assert journal is not None
    if store_at.dialect == "postgresql":
        assert journal.path.is_relative_to(tmp_path / "data" / "rtbench" / "journals")
    w = StreamWriter()
    w.hello(default_hello(["CAL-REF"]))
    w.begin("CAL-REF")
    w.series("CAL-REF", "t_std", [1000] * 10)
    w.end("CAL-REF")
    for line in w.lines:
        journal.write(line.rstrip("\n").encode(), sync=True)
    journal.close()  # the host died: its lock is gone
    said: list[str] = []
    with store_at.open() as store:
        (done,) = recover(store, said.append)
        assert done.run_id == 1 and "stored as run 1 (incomplete, 1 cases" in said[0]
        run = store.load(1)
        assert run.labels == {"x": "y"} and run.cases[0].case == "CAL-REF"
    assert candidates(location) == []


def test_postgresql_errors_say_what_to_do(pg_server: PostgresServer) -> None:
    # No server on that port: busy (the run is retried, then kept).
    with pytest.raises(StoreBusy, match="cannot open the store"):
        Store(f"postgresql://rtbench@127.0.0.1:{free_port()}/x", timeout=1)
    # No such database: no use waiting.
    with pytest.raises(StoreError, match='database "nope" does not exist') as e:
        Store(pg_server.url("nope"))
    assert not isinstance(e.value, StoreBusy)
    # The search_path names no schema that exists.
    name = pg_server.create_database()
    url = pg_server.url(name) + "&options=-csearch_path%3Dmissing"
    with pytest.raises(StoreError, match="no schema of its search_path exists"):
        Store(url)


def test_a_schema_of_its_own_in_a_shared_database(pg_server: PostgresServer) -> None:
    """A store beside another application's tables, in a schema of its own."""
    name = pg_server.create_database()
    with pg_server.connect(name) as conn:
        conn.execute("CREATE TABLE someone_elses (x int)")
        conn.execute("CREATE SCHEMA lab")
    with pytest.raises(StoreError, match="not an rtbench store"):
        Store(pg_server.url(name))
    own = pg_server.url(name) + "&options=-csearch_path%3Dlab"
    with Store(own) as s:
        run_id = s.save(simple_run(where="schema"))
    with Store(own) as s:
        assert s.load(run_id).labels == {"where": "schema"}
    with pg_server.connect(name) as conn:
        assert conn.execute("SELECT count(*) FROM lab.runs").fetchone() == (1,)


def test_the_tcp_url_form(pg_server: PostgresServer) -> None:
    name = pg_server.create_database()
    with Store(pg_server.url(name, tcp=True)) as s:
        assert s.dialect == "postgresql"
        assert s.save(simple_run()) == 1


def test_a_database_out_of_reach_keeps_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saving into a server that does not answer: retried, then the run's
    journal is kept as a file for `rtbench ingest`; nothing is lost."""
    pytest.importorskip("psycopg")  # a dev dependency; only the driver is needed here
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("RTBENCH_DB_TIMEOUT", "0.05")
    location = locate(f"postgresql://rtbench@127.0.0.1:{free_port()}/gone")
    journal = Journal.create(location, {"target": "local"}, pytest.fail)
    assert journal is not None
    journal.write(b'{"t":"hello"}', sync=True)
    said: list[str] = []
    saved = store_run(Measured(simple_run(), journal, None, location), said.append)
    assert saved.run_id is None and saved.error and "cannot open the store" in saved.error
    assert len(said) == 2 and all("busy or out of reach" in s for s in said)
    assert saved.kept is not None and saved.kept.name.startswith("rtbench-unsaved-")
    assert b'{"t":"hello"}' in saved.kept.read_bytes()


def test_a_locked_sqlite_store_is_busy(tmp_path: Path) -> None:
    """Another process's lock is StoreBusy (retried by store_run), on
    opening and on saving."""
    fresh = tmp_path / "fresh.sqlite"
    holder = sqlite3.connect(fresh, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # the file is not in WAL yet: readers wait too
    with pytest.raises(StoreBusy, match=r"cannot open the store .*locked"):
        Store(fresh, timeout=0.05)
    holder.execute("ROLLBACK")
    holder.close()
    with Store(fresh) as store:
        holder = sqlite3.connect(fresh, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        with Store(fresh, timeout=0.05) as other, pytest.raises(StoreBusy, match="locked"):
            other.save(simple_run())
        holder.execute("ROLLBACK")
        holder.close()
        assert store.save(simple_run()) == 1


def test_without_the_driver_a_postgresql_store_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "rtbench.store.postgresql", raising=False)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if it were not installed
    with pytest.raises(StoreError, match=r"pip install 'rtbench\[postgresql\]'"):
        Store("postgresql://lab@db.lab/rtbench")
