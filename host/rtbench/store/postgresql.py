"""The PostgreSQL backend: one database that many hosts write at once.

Concurrency is the server's: a save is one transaction (READ COMMITTED: it
only inserts, and run ids come from the `runs.id` identity sequence, so two
hosts never wait for each other); a read is one REPEATABLE READ snapshot, so
a run deleted meanwhile is never half loaded. Migrations run in one
transaction under an advisory lock. The schema version is the one row of
`rtbench_schema`, whose presence also marks the database's schema (the
search_path's first) as an rtbench store.

Needs psycopg 3 (the `postgresql` extra); this module is imported only for a
postgresql:// store.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row

from rtbench.store import schema
from rtbench.store.backend import Backend, Row, migrate
from rtbench.store.codec import StoreBusy, StoreError
from rtbench.store.dialects import ESCAPED, VERSION_DDL, VERSION_TABLE, to_postgresql
from rtbench.store.location import StoreLocation

# SQLSTATE classes and codes after which trying again later may work:
# connection exceptions, serialization failures and deadlocks, lock_timeout,
# a server that is starting or shutting down.
_RETRY_CLASSES = ("08", "40")
_RETRY_CODES = ("55P03", "57P01", "57P02", "57P03")
# Connection failures that waiting does not cure.
_FINAL_CONNECT = ("password authentication", "does not exist", "pg_hba.conf", "invalid")


class PostgresBackend(Backend):
    dialect: ClassVar[schema.Dialect] = "postgresql"
    errors: ClassVar[tuple[type[BaseException], ...]] = (psycopg.Error,)

    def __init__(self, location: StoreLocation, timeout: float) -> None:
        super().__init__(location, timeout)
        assert location.url is not None
        self._queries: dict[str, str] = {}
        try:
            self._conn = psycopg.connect(
                location.url,
                autocommit=True,  # every transaction here is an explicit BEGIN
                row_factory=dict_row,
                connect_timeout=max(1, math.ceil(timeout)),
                application_name="rtbench",
            )
        except psycopg.Error as e:
            text = _first_line(e)
            final = not isinstance(e, psycopg.OperationalError) or any(
                s in text for s in _FINAL_CONNECT
            )
            raise (StoreError if final else StoreBusy)(
                f"cannot open the store {location}: {text}"
            ) from e
        try:
            # lock_timeout 0 means "wait forever"; a timeout of 0 means "do not wait".
            ms = max(1, round(timeout * 1000))
            self._conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{ms}ms",))
        except psycopg.Error as e:
            self._conn.close()
            raise self.store_error(e) from e

    # -- statements --

    def _q(self, sql: str) -> str:
        q = self._queries.get(sql)
        if q is None:
            q = self._queries[sql] = sql.replace("%", "%%").replace("?", "%s")
        return q

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        cur = self._conn.execute(self._q(sql), params)
        return list(cur.fetchall()) if cur.description is not None else []

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._conn.execute(self._q(sql), params).rowcount

    def run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with self._conn.cursor() as cur:
                cur.executemany(self._q(sql), rows)

    # -- values --

    def text(self, value: str) -> str:
        if "\x00" in value or value.startswith(ESCAPED) or not _is_utf8(value):
            return ESCAPED + json.dumps(value, ensure_ascii=True)
        return value

    def py_text(self, value: Any) -> str:
        text = str(value)
        if text.startswith(ESCAPED):
            decoded = json.loads(text[1:])
            if not isinstance(decoded, str):
                raise StoreError(f"damaged store: {text!r:.40} is no escaped text")
            return decoded
        return text

    # -- transactions --

    def begin(self, write: bool) -> None:
        self._conn.execute("BEGIN" if write else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    def commit(self) -> None:
        self._conn.execute("COMMIT")

    def rollback(self) -> None:
        status = self._conn.info.transaction_status
        if status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
            # A failure: the connection is gone, and its transaction with it.
            with contextlib.suppress(psycopg.Error):
                self._conn.execute("ROLLBACK")

    def store_error(self, e: BaseException) -> StoreError:
        state = getattr(e, "sqlstate", None) or ""
        busy = state.startswith(_RETRY_CLASSES) or state in _RETRY_CODES
        if not state and isinstance(e, psycopg.OperationalError):
            busy = True  # the connection broke: no answer from the server
        return (StoreBusy if busy else StoreError)(f"store {self.location}: {_first_line(e)}")

    def close(self) -> None:
        self._conn.close()

    # -- schema --

    def _has_version_table(self) -> bool:
        found = self.row(
            "SELECT count(*) AS n FROM pg_tables WHERE schemaname = current_schema()"
            " AND tablename = ?",
            (VERSION_TABLE,),
        )
        return found is not None and int(found["n"]) > 0

    def check_ours(self) -> None:
        found = self.row(
            "SELECT current_schema() AS schema, current_setting('server_encoding') AS encoding,"
            " (SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()) AS tables"
        )
        assert found is not None
        if found["schema"] is None:
            raise StoreError(
                f"the store {self.location}: no schema of its search_path exists; "
                "create one (CREATE SCHEMA rtbench) or name an existing one"
            )
        if found["encoding"] != "UTF8":
            raise StoreError(
                f"the store {self.location}: the database's encoding is {found['encoding']}; "
                "rtbench needs UTF8 (CREATE DATABASE ... ENCODING 'UTF8')"
            )
        if found["tables"] and not self._has_version_table():
            raise StoreError(
                f"{self.location} is not an rtbench store: its schema {found['schema']!r} "
                "holds other tables; give the store an empty database, or a schema of its "
                "own (e.g. ?options=-csearch_path%3Drtbench)"
            )

    def version(self) -> int:
        if not self._has_version_table():
            return 0
        found = self.row(f"SELECT version FROM {VERSION_TABLE}")
        return 0 if found is None else int(found["version"])

    @contextmanager
    def migration(self) -> Iterator[None]:
        self.begin(True)
        try:
            # Two hosts opening a new store at once: the second waits here,
            # then finds the schema made (READ COMMITTED sees the commit).
            self.run("SELECT pg_advisory_xact_lock(?)", (schema.APPLICATION_ID,))
            if not self._has_version_table():
                self.check_ours()
                self.run(VERSION_DDL)
                self.run(f"INSERT INTO {VERSION_TABLE} VALUES (0)")
            yield
            self.commit()
        except BaseException:
            self.rollback()
            raise

    def set_version(self, version: int) -> None:
        self.run(f"UPDATE {VERSION_TABLE} SET version = ?", (version,))

    def check_migrated(self) -> None:
        """Nothing to check: PostgreSQL enforces foreign keys in migrations too."""

    def ddl(self, sql: str) -> str:
        return to_postgresql(sql)

    def open(self) -> None:
        self.check_ours()
        migrate(self)


def _is_utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]
