"""One store for the tests on either backend (the `store_at` fixture of
tests/conftest.py gives an empty one of each): where it is, and plain SQL
on it that bypasses `Store`, for building old schemas and looking inside."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgserver import PostgresServer

from rtbench.model import CaseResult, Check, Run, Series, Warning
from rtbench.store import Store


class Raw:
    """SQL in SQLite's dialect (`?` placeholders), committed on success."""

    def __init__(self, conn: Any, dialect: str) -> None:
        self._conn = conn
        self.dialect = dialect

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if self.dialect == "postgresql":
            cur = self._conn.execute(sql.replace("?", "%s"), params)
            return list(cur.fetchall()) if cur.description is not None else []
        return list(self._conn.execute(sql, params).fetchall())

    def one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first column of the first row."""
        return self.execute(sql, params)[0][0]


@dataclass
class StoreAt:
    """An empty store: an SQLite file or a database of the test server."""

    dialect: str  # "sqlite" | "postgresql"
    where: str  # what --db / RTBENCH_DB / Store() take
    path: Path | None = None
    server: PostgresServer | None = None
    dbname: str = ""

    def open(self, **kw: Any) -> Store:
        return Store(self.where, **kw)

    @contextmanager
    def raw(self) -> Iterator[Raw]:
        if self.server is not None:
            with self.server.connect(self.dbname) as conn, conn.transaction():
                yield Raw(conn, "postgresql")
            return
        assert self.path is not None
        db = sqlite3.connect(self.path)
        try:
            with db:
                yield Raw(db, "sqlite")
        finally:
            db.close()


def simple_run(**labels: str) -> Run:
    return Run(
        hello={"os": {"release": "6.6.0"}, "realtime": {"ok": False}},
        cases=[CaseResult("CAL-TIMER", outcome="passed")],
        bye={"result": "passed", "records": 3},
        labels=dict(labels),
    )


def writer_run(me: str, i: int) -> Run:
    """Run `i` of writer `me` (test_store_hosts.py's concurrent writers):
    every row of it carries the writer's name and the run's number."""
    tag = f"{me}-{i}"
    cases = [
        CaseResult(
            f"{tag}-c{k}",
            title=tag,
            outcome="passed",
            duration_ns=i * 1000 + k,
            series=[Series(f"{tag}-c{k}", "lat", point={"k": k}, n=3, min=i, max=k, sum=2**64 + i)],
            checks=[Check(f"{tag}-c{k}", "order", "pass", tag)],
            warnings=[Warning("w", tag, f"{tag}-c{k}")],
        )
        for k in range(4)
    ]
    return Run(
        hello={"writer": me, "seq": i},
        cases=cases,
        bye={"result": "passed", "records": 9},
        log=[f"{tag} line {j}" for j in range(5)],
        labels={"writer": me, "seq": str(i)},
        started_at=f"2026-01-01T00:00:{i:02d}Z",
        target=f"host-{me}",
    )
