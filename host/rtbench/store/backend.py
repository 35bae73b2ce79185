"""What the store needs of a database, and nothing more: one connection,
explicit transactions, statements in SQLite's SQL with `?` placeholders, and
the schema version. `SqliteBackend` and `PostgresBackend` fill it in; every
difference between the two (placeholders, types, locking, busy waits, how
text that UTF-8 cannot hold is kept, where the version lives) stays in them.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, ClassVar, Protocol

from rtbench.store import schema
from rtbench.store.codec import StoreError
from rtbench.store.location import StoreLocation

BUSY_TIMEOUT_S = 30.0
# Seconds a writer waits for another one's lock (tests make it short).
TIMEOUT_ENV_VAR = "RTBENCH_DB_TIMEOUT"


class Row(Protocol):
    """A result row, read by column name (sqlite3.Row, psycopg's dict_row)."""

    def __getitem__(self, key: str, /) -> Any: ...


def busy_timeout() -> float:
    """How long a writer waits for the lock: $RTBENCH_DB_TIMEOUT s, else 30 s."""
    text = os.environ.get(TIMEOUT_ENV_VAR, "")
    try:
        value = float(text) if text else BUSY_TIMEOUT_S
    except ValueError:
        raise StoreError(f"{TIMEOUT_ENV_VAR}={text!r}: give seconds, e.g. 30") from None
    if not 0 <= value < 1e6:
        raise StoreError(f"{TIMEOUT_ENV_VAR}={text!r}: give seconds, e.g. 30")
    return value


class Backend(ABC):
    """One open connection to one store's database."""

    dialect: ClassVar[schema.Dialect]
    # The driver's exceptions: the store turns them into StoreErrors.
    errors: ClassVar[tuple[type[BaseException], ...]]

    def __init__(self, location: StoreLocation, timeout: float) -> None:
        self.location = location
        self.timeout = timeout

    # -- statements (SQLite's SQL, `?` placeholders) --

    @abstractmethod
    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    def row(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        found = self.rows(sql, params)
        return found[0] if found else None

    @abstractmethod
    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Runs a statement; returns how many rows it changed."""

    @abstractmethod
    def run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    def insert_id(self, sql: str, params: Sequence[Any]) -> int:
        """Runs an INSERT into a table with an `id` column; the new id."""
        found = self.row(f"{sql} RETURNING id", params)
        assert found is not None
        return int(found["id"])

    # -- values --

    @abstractmethod
    def text(self, value: str) -> Any:
        """A str as this database can hold it in a TEXT column."""

    @abstractmethod
    def py_text(self, value: Any) -> str:
        """Inverse of `text`."""

    # -- transactions --

    @abstractmethod
    def begin(self, write: bool) -> None:
        """Starts a transaction: a writer's, or a reader's consistent snapshot."""

    @abstractmethod
    def commit(self) -> None: ...

    @abstractmethod
    def rollback(self) -> None:
        """Ends an open transaction, if any; never raises."""

    @abstractmethod
    def store_error(self, e: BaseException) -> StoreError:
        """The driver's exception `e` as a StoreError (StoreBusy when waiting
        and trying again may work)."""

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def open(self) -> None:
        """Makes the database ready: checks it is a store, migrates it."""

    # -- schema --

    @abstractmethod
    def check_ours(self) -> None:
        """Refuses a database that holds some other program's tables."""

    @abstractmethod
    def version(self) -> int: ...

    @abstractmethod
    def migration(self) -> AbstractContextManager[None]:
        """The one transaction all missing migrations run in, under a lock
        that another process migrating the same store waits for."""

    @abstractmethod
    def set_version(self, version: int) -> None: ...

    @abstractmethod
    def check_migrated(self) -> None:
        """Checks what the migrations may have broken, before the commit."""

    def ddl(self, sql: str) -> str:
        """A statement of a migration in this database's dialect."""
        return sql


class _Migrating:
    """What a migration sees (`schema.Migrating`)."""

    def __init__(self, db: Backend) -> None:
        self._db = db

    @property
    def dialect(self) -> schema.Dialect:
        return self._db.dialect

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._db.run(self._db.ddl(sql), params)


def _check_not_newer(db: Backend, version: int) -> None:
    known = len(schema.MIGRATIONS)
    if version > known:
        raise StoreError(
            f"the store {db.location} has schema version {version}, created by a newer "
            f"rtbench (this one knows up to {known}); upgrade rtbench"
        )


def migrate(db: Backend) -> None:
    """Brings the schema to len(schema.MIGRATIONS), all steps or none."""
    target = len(schema.MIGRATIONS)
    version = db.version()
    _check_not_newer(db, version)
    if version == target:
        return
    with db.migration():
        # Re-read under the lock: another process may have migrated between
        # the first look and taking the lock.
        version = db.version()
        _check_not_newer(db, version)
        for step in range(version, target):
            try:
                schema.MIGRATIONS[step](_Migrating(db))
            except StoreError:
                raise
            except Exception as e:
                raise StoreError(
                    f"migrating the store {db.location} from schema {step} to {step + 1} "
                    f"failed ({e}); nothing changed"
                ) from e
        if version != target:
            db.set_version(target)
            db.check_migrated()


@contextmanager
def transaction(db: Backend, write: bool = True) -> Iterator[Backend]:
    """One transaction; rolled back on any exception, the driver's errors
    made StoreErrors."""
    try:
        db.begin(write)
        try:
            yield db
            db.commit()
        except BaseException:
            db.rollback()
            raise
    except db.errors as e:
        raise db.store_error(e) from e
