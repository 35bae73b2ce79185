"""The SQLite backend: one file, WAL, a busy timeout for writers' turns.

The file is marked as an rtbench store by `PRAGMA application_id` and keeps
its schema version in `PRAGMA user_version`.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from rtbench.store import schema
from rtbench.store.backend import Backend, Row, migrate
from rtbench.store.codec import StoreBusy, StoreError
from rtbench.store.location import ENV_VAR, StoreLocation


class SqliteBackend(Backend):
    dialect: ClassVar[schema.Dialect] = "sqlite"
    errors: ClassVar[tuple[type[BaseException], ...]] = (sqlite3.Error,)

    def __init__(self, location: StoreLocation, timeout: float) -> None:
        super().__init__(location, timeout)
        assert location.path is not None
        self.path = location.path
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create the store's directory: {e}") from e
        try:
            # isolation_level None: the module must not open transactions
            # behind our back; every transaction here is an explicit BEGIN.
            self._conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        except sqlite3.Error as e:
            raise StoreError(f"cannot open the store {self.path}: {e}") from e
        self._conn.row_factory = sqlite3.Row

    # -- statements --

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        rows: list[Row] = self._conn.execute(sql, params).fetchall()
        return rows

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._conn.execute(sql, params).rowcount

    def run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            self._conn.executemany(sql, rows)

    # -- values --

    def text(self, value: str) -> str | bytes:
        """Lone surrogates (console noise decoded with surrogateescape) are
        not UTF-8: such a str goes in as a BLOB of its surrogatepass bytes."""
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass")
        return value

    def py_text(self, value: Any) -> str:
        return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else str(value)

    # -- transactions --

    def begin(self, write: bool) -> None:
        # Writers take the write lock at BEGIN (IMMEDIATE): in WAL a deferred
        # reader that later writes cannot wait for the lock, it fails.
        self._conn.execute("BEGIN IMMEDIATE" if write else "BEGIN DEFERRED")

    def commit(self) -> None:
        self._conn.execute("COMMIT")

    def rollback(self) -> None:
        if self._conn.in_transaction:
            # A failure: SQLite has rolled back already (e.g. after SQLITE_FULL).
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")

    def store_error(self, e: BaseException) -> StoreError:
        text = str(e)
        busy = isinstance(e, sqlite3.OperationalError) and ("locked" in text or "busy" in text)
        return (StoreBusy if busy else StoreError)(f"store {self.path}: {text}")

    def close(self) -> None:
        self._conn.close()

    # -- schema --

    def _pragma_int(self, name: str) -> int:
        return int(self._conn.execute(f"PRAGMA {name}").fetchone()[0])

    def check_ours(self) -> None:
        # One snapshot: another process may be creating the schema right now,
        # and its tables must not be seen without its application_id.
        self.begin(False)
        try:
            app_id = self._pragma_int("application_id")
            version = self._pragma_int("user_version")
            tables = self._conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        finally:
            self.rollback()
        if app_id == schema.APPLICATION_ID:
            return
        if app_id == 0 and version == 0 and tables == 0:
            return  # a new, empty file
        raise StoreError(
            f"{self.path} is an SQLite database but not an rtbench store; "
            f"give the store another path (or set {ENV_VAR})"
        )

    def enable_wal(self) -> None:
        """Switch the file to WAL (it sticks to the file: later opens skip this).

        The switch needs an exclusive lock and SQLite answers "locked" at
        once, without its busy handler, when two first opens race for it; so
        this retries on its own, up to the busy timeout.
        """
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                mode = self._conn.execute("PRAGMA journal_mode").fetchone()[0]
                if str(mode).lower() != "wal":
                    self._conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def version(self) -> int:
        return self._pragma_int("user_version")

    @contextmanager
    def migration(self) -> Iterator[None]:
        # Off while migrating so that a migration may rebuild a table; it is
        # a no-op inside a transaction, hence before BEGIN.
        self._conn.execute("PRAGMA foreign_keys = OFF")
        self.begin(True)
        try:
            yield
            self.commit()
        except BaseException:
            self.rollback()
            raise

    def set_version(self, version: int) -> None:
        self._conn.execute(f"PRAGMA user_version = {int(version)}")

    def check_migrated(self) -> None:
        if self._conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
            raise StoreError(f"migrating {self.path} broke a foreign key; nothing changed")

    def open(self) -> None:
        """Checks, switches to WAL, migrates; foreign keys on from then."""
        self.check_ours()
        self.enable_wal()
        migrate(self)
        self._conn.execute("PRAGMA foreign_keys = ON")
