"""The run store: every run the hosts have seen, in an SQLite file or a
PostgreSQL database. See docs/store.md for where it is, its tables, the
sample encoding and the migrations.

Only this package talks SQL; callers get and give `rtbench.model` objects.
`Store` is the same for every backend: it speaks SQLite's SQL to a
`Backend` (`sqlite.py`, `postgresql.py`), which keeps the dialects apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self

from rtbench import identity
from rtbench.model import Run, RunOutcome
from rtbench.store.backend import Backend, Row, busy_timeout, transaction
from rtbench.store.codec import AlreadyStored, StoreError
from rtbench.store.location import LocationError, PathArg, StoreLocation, locate
from rtbench.store.rows import (
    check_label,
    insert_run,
    label_filter,
    labels_by_run,
    outcome,
    read_run,
)

_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class RunSummary:
    """One line of `list_runs`: what a listing shows without loading the run."""

    id: int
    started_at: str
    target: str
    outcome: RunOutcome
    realtime: bool
    cases: int  # how many cases the run has
    labels: dict[str, str] = field(default_factory=dict)
    kernel: str = ""  # OS release the run measured ('' when unknown)


def open_backend(location: StoreLocation, timeout: float) -> Backend:
    """A connection to the store at `location`, ready (checked, migrated)."""
    backend: Backend
    if location.url is not None:
        try:
            from rtbench.store.postgresql import PostgresBackend
        except ImportError as e:
            raise StoreError(
                f"the store {location} is a PostgreSQL database, which needs the psycopg "
                f"driver ({e}): pip install 'rtbench[postgresql]'"
            ) from e
        backend = PostgresBackend(location, timeout)
    else:
        from rtbench.store.sqlite import SqliteBackend

        backend = SqliteBackend(location, timeout)
    try:
        backend.open()
    except backend.errors as e:
        backend.close()
        kind = type(backend.store_error(e))  # StoreBusy: another process holds the lock
        raise kind(f"cannot open the store {location}: {e}") from e
    except BaseException:
        backend.close()
        raise
    return backend


class Store:
    """The run store; open it with `with Store(where) as s:`.

    `where` is an SQLite file path or a postgresql:// URL (default:
    $RTBENCH_DB, else the user's SQLite file). Opening creates the file (or
    the tables) and migrates an older schema. Many Store objects (threads,
    processes, hosts) may use one store at once: SQLite writers take turns
    (waiting up to `timeout` seconds), PostgreSQL ones do not wait at all.
    A Store object belongs to the thread that opened it.
    """

    def __init__(
        self, where: PathArg | StoreLocation | None = None, *, timeout: float | None = None
    ):
        try:
            self.location = locate(where)
        except LocationError as e:
            raise StoreError(str(e)) from None
        self._db = open_backend(self.location, busy_timeout() if timeout is None else timeout)

    @property
    def path(self) -> Path:
        """The SQLite file (a PostgreSQL store has none: see `location`)."""
        if self.location.path is None:
            raise StoreError(f"the store {self.location} is a database, not a file")
        return self.location.path

    @property
    def dialect(self) -> str:
        return self._db.dialect

    # -- lifetime --

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        with self._transaction(write=False) as db:
            return db.version()

    @contextmanager
    def _transaction(self, write: bool = True) -> Iterator[Backend]:
        with transaction(self._db, write) as db:
            yield db

    # -- runs --

    def check_writable(self) -> None:
        """StoreError when the store cannot take a run (a read-only file,
        folder or mount, a database role without the right to insert):
        found before a run measures, not after. Writes nothing."""
        with self._transaction(write=True) as db:
            db.run("INSERT INTO runs SELECT * FROM runs WHERE 1 = 0")

    def save(self, run: Run, *, copy: bool = False) -> int:
        """Store `run` as a new run (one transaction); set and return its id.

        Idempotent by identity (`Run.uuid`, docs/store.md): a run whose
        identity the store holds already is not stored again, and
        `AlreadyStored` says under which id. A run without an identity, or
        `copy`, gets a new one (and so is always stored).
        """
        if copy or not run.uuid:
            run.uuid = identity.new()
        try:
            with self._transaction() as db:
                found = self._stored_as(db, run.uuid)
                if found is not None:
                    raise AlreadyStored(found, run.uuid)
                run_id = insert_run(db, run)
        except AlreadyStored:
            raise
        except StoreError:
            # Another host stored the same run between the check and the
            # insert: the unique index refused the second copy.
            found = self.stored_as(run.uuid)
            if found is not None:
                raise AlreadyStored(found, run.uuid) from None
            raise
        run.id = run_id
        return run_id

    def stored_as(self, uuid: str) -> int | None:
        """The id of the run of identity `uuid`, None when none is stored."""
        with self._transaction(write=False) as db:
            return self._stored_as(db, uuid)

    @staticmethod
    def _stored_as(db: Backend, uuid: str) -> int | None:
        row = db.row("SELECT id FROM runs WHERE uuid = ?", (db.text(uuid),))
        return None if row is None else int(row["id"])

    def load(self, run_id: int) -> Run:
        with self._transaction(write=False) as db:
            row = (
                db.row("SELECT * FROM runs WHERE id = ?", (run_id,))
                if run_id <= _INT64_MAX
                else None
            )
            if row is None:
                raise StoreError(self._unknown(run_id))
            return read_run(db, row)

    def list_runs(
        self, labels: Mapping[str, str | None] | None = None, *, newest: int | None = None
    ) -> list[RunSummary]:
        """Summaries of the runs, oldest first (by id); only the `newest`
        ones when given (a listing of a lab's store need not read them all).

        `labels` filters: every key must be set on the run, to the given
        value, or to any value where the value is None.
        """
        with self._transaction(write=False) as db:
            where, params = label_filter(db, labels or {})
            select = (
                "SELECT id, started_at, target, outcome, realtime, n_cases, kernel "
                f"FROM runs {where}"
            )
            if newest is None:
                rows = db.rows(f"{select} ORDER BY id", params)
                all_labels = labels_by_run(db)
            else:
                rows = db.rows(f"{select} ORDER BY id DESC LIMIT ?", [*params, max(0, newest)])
                rows.reverse()
                all_labels = labels_by_run(db, [int(r["id"]) for r in rows])
        return [self._summary(r, all_labels.get(int(r["id"]), {})) for r in rows]

    def count_runs(self, labels: Mapping[str, str | None] | None = None) -> int:
        """How many runs `list_runs(labels)` gives."""
        with self._transaction(write=False) as db:
            where, params = label_filter(db, labels or {})
            found = db.row(f"SELECT count(*) AS n FROM runs {where}", params)
        return 0 if found is None else int(found["n"])

    def _summary(self, r: Row, labels: dict[str, str]) -> RunSummary:
        text = self._db.py_text
        return RunSummary(
            id=int(r["id"]),
            started_at=text(r["started_at"]),
            target=text(r["target"]),
            outcome=outcome(r["outcome"]),
            realtime=bool(r["realtime"]),
            cases=int(r["n_cases"]),
            labels=labels,
            kernel=text(r["kernel"]),
        )

    def resolve(self, ref: str | int) -> int:
        """The run id a user's reference means.

        `ref` is an id ("12"), "latest"/"last" (the newest), or a negative
        index: "-1" is the newest, "-2" the one before (list_runs()[-2]).
        "Newest" is the most recently saved, i.e. the highest id.
        """
        text = str(ref).strip()
        if text.lower() in ("latest", "last"):
            text = "-1"
        if re.fullmatch(r"[0-9]+", text):
            return self._existing(int(text), ref)
        if re.fullmatch(r"-[0-9]+", text) and int(text) != 0:
            return self._nth_newest(-int(text), ref)
        raise StoreError(
            f"{str(ref)!r} is not a run reference; use an id, 'latest' or a negative "
            "index (-1 = newest, -2 = the one before)"
        )

    def _existing(self, run_id: int, ref: str | int) -> int:
        found = None
        if run_id <= _INT64_MAX:  # larger ones are no id, and the drivers would overflow
            with self._transaction(write=False) as db:
                found = db.row("SELECT 1 AS one FROM runs WHERE id = ?", (run_id,))
        if found is None:
            raise StoreError(self._unknown(ref))
        return run_id

    def _nth_newest(self, n: int, ref: str | int) -> int:
        row = None
        if n <= _INT64_MAX:
            with self._transaction(write=False) as db:
                row = db.row("SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?", (n - 1,))
        if row is None:
            raise StoreError(self._unknown(ref))
        return int(row["id"])

    def _unknown(self, ref: str | int) -> str:
        """'no run X' plus what the store does hold.

        A plain SELECT, no BEGIN: callers may already be in a transaction."""
        try:
            ids = [int(r["id"]) for r in self._db.rows("SELECT id FROM runs ORDER BY id")]
        except self._db.errors as e:
            raise self._db.store_error(e) from e
        if not ids:
            return f"no run {str(ref)!r}: the store {self.location} holds no runs yet"
        return (
            f"no run {str(ref)!r} in {self.location}: it holds {len(ids)} run(s), "
            f"ids {_id_ranges(ids)}; use an id, 'latest' or -1 (newest), -2, ..."
        )

    def delete(self, run_id: int) -> None:
        """Remove a run and everything of it (cascading foreign keys)."""
        with self._transaction() as db:
            if db.run("DELETE FROM runs WHERE id = ?", (run_id,)) == 0:
                raise StoreError(self._unknown(run_id))

    def set_labels(
        self, run_id: int, labels: Mapping[str, str | None], *, merge: bool = False
    ) -> None:
        """Set a run's labels to `labels`.

        merge=False replaces the whole set. merge=True changes only the keys
        given and keeps the others. Either way a None value removes the key.
        """
        for key, value in labels.items():
            check_label(key, value)
        with self._transaction() as db:
            # The runs row is the lock that orders two hosts labelling one run.
            if db.run("UPDATE runs SET id = id WHERE id = ?", (run_id,)) == 0:
                raise StoreError(self._unknown(run_id))
            if not merge:
                db.run("DELETE FROM labels WHERE run_id = ?", (run_id,))
            for key, value in labels.items():
                k = db.text(key)
                db.run("DELETE FROM labels WHERE run_id = ? AND key = ?", (run_id, k))
                if value is not None:
                    db.run("INSERT INTO labels VALUES (?, ?, ?)", (run_id, k, db.text(value)))


def _id_ranges(ids: list[int]) -> str:
    """'1-4, 7, 9-10' for an ascending list of ids."""
    parts: list[str] = []
    start = prev = ids[0]
    for i in [*ids[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ", ".join(parts)
