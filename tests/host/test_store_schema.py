"""The store's location, its schema and its migrations, on SQLite and on
PostgreSQL alike (the `store_at` fixture; test_store_hosts.py: many hosts)."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import platformdirs
import pytest
from stores import Raw, StoreAt, simple_run

from rtbench.store import Store, StoreError, default_store_path, locate, schema
from rtbench.store.dialects import VERSION_DDL, VERSION_TABLE, to_postgresql
from rtbench.store.schema import Migrating

I64_MIN, I64_MAX = -(2**63), 2**63 - 1


@contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    """A plain sqlite3 connection that commits and closes."""
    db = sqlite3.connect(path)
    try:
        with db:
            yield db
    finally:
        db.close()


# --- file, path, schema --------------------------------------------------


def test_default_store_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("RTBENCH_DB", raising=False)
    assert default_store_path() == platformdirs.user_data_path("rtbench") / "rtbench.sqlite"
    monkeypatch.setenv("RTBENCH_DB", str(tmp_path / "env.sqlite"))
    assert default_store_path() == tmp_path / "env.sqlite"
    assert default_store_path(tmp_path / "x.sqlite") == tmp_path / "x.sqlite"
    with Store() as s:
        assert s.path == tmp_path / "env.sqlite"
    assert (tmp_path / "env.sqlite").exists()


def test_locations(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RTBENCH_DB", "postgresql://ann:secret@db.lab:5433/runs?sslmode=require")
    env = locate()
    assert (env.kind, env.path, env.url) == ("postgresql", None, os.environ["RTBENCH_DB"])
    # The password never reaches a journal's header, a message or a file name.
    assert str(env) == env.key == "postgresql://ann@db.lab:5433/runs?sslmode=require"
    assert "secret" not in str(env.journal_dir) and env.journal_dir.name.startswith("pg-db.lab-")
    other = locate("postgres:///runs?host=/run/pg&password=x")
    assert other.kind == "postgresql" and "password" not in other.key
    assert other.journal_dir != env.journal_dir
    assert locate(tmp_path / "a.sqlite").journal_dir == tmp_path / "a.sqlite.journals"
    with pytest.raises(StoreError, match="an SQLite file path or a postgresql:// URL"):
        Store("mysql://db.lab/runs")


def test_open_creates_directories_and_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "runs.sqlite"
    with Store(path) as s:
        assert s.schema_version == len(schema.MIGRATIONS)
    with raw(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# --- migrations ------------------------------------------------------------


def build_version_1(at: StoreAt) -> None:
    """A database as the first rtbench wrote it, built without the Store."""
    with at.raw() as db:
        if at.dialect == "sqlite":
            for statement in schema.V1:
                db.execute(statement)
        else:  # the same statements, as the PostgreSQL backend translates them
            for statement in schema.V1[1:]:
                db.execute(to_postgresql(statement))
        db.execute(
            "INSERT INTO runs VALUES (7, '2024-01-01T00:00:00Z', 'local', 'run', 'passed',"
            " 1, 1, '6.1', 0, '{}', '{\"result\":\"passed\",\"records\":2}', '{}')"
        )
        db.execute("INSERT INTO labels VALUES (7, 'old', 'yes')")
        db.execute(
            "INSERT INTO cases VALUES (7, 0, 'A', 'old case', '{}', 'passed', 9223372036854775807,"
            " '')"
        )
        db.execute(
            "INSERT INTO series VALUES (7, 0, 0, 'A', 's', '{}', '', 'ns', 3, -9223372036854775808,"
            " 12, '18446744073709551621', 0, 1, NULL, NULL, NULL, NULL)"
        )
        db.execute("INSERT INTO checks VALUES (7, 0, 0, 'A', 'c', 'pass', '')")
        set_version(at, db, 1)
        if at.dialect == "postgresql":
            # An id given explicitly leaves the identity sequence behind (a
            # store never does this; AUTOINCREMENT follows on its own).
            db.execute("SELECT setval(pg_get_serial_sequence('runs', 'id'), 7)")


def set_version(at: StoreAt, db: Raw, version: int) -> None:
    if at.dialect == "sqlite":
        db.execute(f"PRAGMA user_version = {version}")
    else:
        db.execute(VERSION_DDL)
        db.execute(f"DELETE FROM {VERSION_TABLE}")
        db.execute(f"INSERT INTO {VERSION_TABLE} VALUES (?)", (version,))


def add_note_column(db: Migrating) -> None:
    # One statement for both backends: the rule for a new migration.
    db.execute("ALTER TABLE runs ADD COLUMN note TEXT NOT NULL DEFAULT ''")
    db.execute("UPDATE runs SET note = 'migrated'")


def test_migration_from_version_1(store_at: StoreAt, monkeypatch: pytest.MonkeyPatch) -> None:
    build_version_1(store_at)
    latest = len(schema.MIGRATIONS) + 1
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, add_note_column])
    with store_at.open() as s:
        assert s.schema_version == latest
        assert [(r.id, r.labels) for r in s.list_runs()] == [(7, {"old": "yes"})]
        old = s.load(7)
        assert old.bye == {"result": "passed", "records": 2}
        # Version 2 turned the INTEGER figures into exact TEXT, children kept.
        (case,) = old.cases
        assert (case.title, case.duration_ns, len(case.checks)) == ("old case", I64_MAX, 1)
        got = case.series[0]
        assert (got.n, got.min, got.max, got.sum, got.holes) == (3, I64_MIN, 12, 2**64 + 5, 1)
        assert s.save(simple_run()) == 8
        # ...and a uint64 fits now, where version 1 could not hold it.
        big = simple_run()
        big.cases[0].duration_ns = 2**64 - 1
        assert s.load(s.save(big)).cases[0].duration_ns == 2**64 - 1
    with store_at.raw() as db:
        assert db.one("SELECT note FROM runs WHERE id = 7") == "migrated"
        assert db.one("SELECT duration_ns FROM cases WHERE run_id = 7") == str(I64_MAX)
    with store_at.open() as s:
        s.delete(7)  # the rebuilt (or altered) tables still cascade
    with store_at.raw() as db:
        assert db.one("SELECT count(*) FROM series WHERE run_id = 7") == 0
        assert db.one("SELECT count(*) FROM checks WHERE run_id = 7") == 0
        if store_at.dialect == "sqlite":
            assert db.execute("PRAGMA foreign_key_check") == []
    with store_at.open() as s:  # already at the latest: nothing runs again
        assert s.schema_version == latest


def test_migrations_of_two_hosts_at_once(store_at: StoreAt) -> None:
    """Two hosts open an old store at the same moment: one migrates, the
    other waits for it and finds the work done."""
    build_version_1(store_at)
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def open_it() -> None:
        try:
            start.wait()
            with store_at.open() as s:
                assert s.schema_version == len(schema.MIGRATIONS)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=open_it) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with store_at.open() as s:
        assert s.load(7).cases[0].duration_ns == I64_MAX


def test_failed_migration_changes_nothing(
    store_at: StoreAt, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_version_1(store_at)

    def half_done(db: Migrating) -> None:
        db.execute("CREATE TABLE extra (x INTEGER)")
        db.execute("DELETE FROM runs")
        raise RuntimeError("disk on fire")

    n = len(schema.MIGRATIONS)
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, half_done])
    with pytest.raises(StoreError, match=rf"from schema {n} to {n + 1} failed \(disk on fire\)"):
        store_at.open()
    with store_at.raw() as db:
        if store_at.dialect == "sqlite":
            assert db.one("PRAGMA user_version") == 1
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
        else:
            assert db.one(f"SELECT version FROM {VERSION_TABLE}") == 1
            tables = {r[0] for r in db.execute("SELECT tablename FROM pg_tables")}
            # Version 2's ALTER TABLE was rolled back with the rest.
            assert db.one("SELECT pg_typeof(duration_ns)::text FROM cases") == "bigint"
        assert db.execute("SELECT id FROM runs") == [(7,)]
        assert "extra" not in tables and "cases" in tables


def test_newer_schema_is_refused(store_at: StoreAt) -> None:
    build_version_1(store_at)
    with store_at.raw() as db:
        set_version(store_at, db, len(schema.MIGRATIONS) + 1)
    with pytest.raises(StoreError, match=r"created by a newer rtbench.*upgrade"):
        store_at.open()


def test_foreign_databases_are_refused(store_at: StoreAt) -> None:
    with store_at.raw() as db:
        db.execute("CREATE TABLE mine (x INTEGER)")
    with pytest.raises(StoreError, match="not an rtbench store"):
        store_at.open()
    with store_at.raw() as db:  # untouched
        assert db.execute("SELECT * FROM mine") == []


def test_junk_files_are_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError, match="not a database"):
        Store(junk)


def test_one_blob_series_migrate_to_chunks_with_identical_samples(store_at: StoreAt) -> None:
    """A store of schema 4 and before kept a series' samples as one zlib blob
    (written here byte for byte as that rtbench did): version 5 makes it
    the series' chunk 0, and the run loads the same samples."""
    import zlib

    import numpy as np

    values = np.array([I64_MIN, -1, 0, 1, I64_MAX, 812, 48213, 812], dtype=np.int64)
    blob = zlib.compress(values.view(np.uint8).reshape(-1, 8).T.tobytes(), 6)
    build_version_1(store_at)
    with store_at.raw() as db:
        db.execute(
            "INSERT INTO series VALUES (7, 0, 1, 'A', 'raw', '{}', '', 'ns', 8, 1, 2, '3', 0, 0,"
            " ?, 'i64le-shuffle-zlib', ?, NULL)",
            (values.size, blob),
        )
    with store_at.open() as s:
        assert s.schema_version == len(schema.MIGRATIONS)
        old, raw_series = s.load(7).cases[0].series
        assert old.samples is None
        assert raw_series.samples is not None and raw_series.samples.dtype == np.int64
        assert raw_series.samples.tolist() == values.tolist()
    with store_at.raw() as db:
        assert db.execute("SELECT seq, n, enc FROM chunks WHERE run_id = 7") == [
            (0, 8, "i64le-shuffle-zlib")
        ]
        assert bytes(db.one("SELECT data FROM chunks WHERE run_id = 7")) == blob
    with store_at.open() as s:
        s.delete(7)
    with store_at.raw() as db:
        assert db.one("SELECT count(*) FROM chunks") == 0
