"""The store's schema, as an ordered list of migrations, for every backend.

`MIGRATIONS[i]` turns a database of schema version `i` into version `i + 1`;
the code's schema version is `len(MIGRATIONS)`. Version 0 is an empty
database. The runner (one transaction, the version kept by the backend) is
`rtbench.store.backend.migrate`; this module only says what each version is.

A migration is written once, in SQLite's SQL; `Migrating.execute` gives it
to PostgreSQL with the type names translated (INTEGER -> BIGINT, BLOB ->
BYTEA, INTEGER PRIMARY KEY AUTOINCREMENT -> an identity column). Where the two
differ in what DDL can do (SQLite cannot change a column's type and rebuilds
the table; PostgreSQL's foreign keys follow a table, not its name, so it must
not), the migration says so with `per_dialect`.

Rules for adding a migration (docs/store.md): append, never edit or reorder a
released one (databases in the field were built by it); never COMMIT or
`executescript` (the runner holds the transaction); it runs on SQLite and on
PostgreSQL alike, and tests run it on both; foreign keys are off on SQLite
while it runs, and the runner checks them before it commits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

Dialect = Literal["sqlite", "postgresql"]


class Migrating(Protocol):
    """What a migration gets: the database being migrated, in a transaction."""

    @property
    def dialect(self) -> Dialect: ...

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Runs one statement (SQLite's SQL, `?` placeholders)."""


Migration = Callable[[Migrating], None]

# Marks the file as an rtbench store ("RTBs"), so the store refuses to
# migrate some other program's SQLite file that RTBENCH_DB points at.
APPLICATION_ID = 0x52544273

# Version 1. Every list of the model keeps its order in a `pos` column.
# Exact figures that may exceed int64 (sums) are decimal TEXT: an INTEGER
# column would silently turn them into a lossy REAL.
V1: tuple[str, ...] = (
    f"PRAGMA application_id = {APPLICATION_ID}",
    # AUTOINCREMENT: an id is never reused after a delete, so a run id
    # written in a note or a report keeps meaning the same run.
    """CREATE TABLE runs (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        started_at  TEXT    NOT NULL,
        target      TEXT    NOT NULL,
        source      TEXT    NOT NULL,
        outcome     TEXT    NOT NULL,
        realtime    INTEGER NOT NULL,
        complete    INTEGER NOT NULL,
        kernel      TEXT    NOT NULL,
        n_cases     INTEGER NOT NULL,
        hello       TEXT    NOT NULL,
        bye         TEXT,
        machine     TEXT    NOT NULL
    )""",
    """CREATE TABLE labels (
        run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key     TEXT    NOT NULL,
        value   TEXT    NOT NULL,
        PRIMARY KEY (run_id, key)
    )""",
    "CREATE INDEX labels_by_key ON labels(key, value)",
    """CREATE TABLE cases (
        run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        pos          INTEGER NOT NULL,
        case_id      TEXT    NOT NULL,
        title        TEXT    NOT NULL,
        params       TEXT    NOT NULL,
        outcome      TEXT    NOT NULL,
        duration_ns  INTEGER NOT NULL,
        reason       TEXT    NOT NULL,
        PRIMARY KEY (run_id, pos)
    )""",
    """CREATE TABLE series (
        run_id      INTEGER NOT NULL,
        case_pos    INTEGER NOT NULL,
        pos         INTEGER NOT NULL,
        case_id     TEXT    NOT NULL,
        name        TEXT    NOT NULL,
        point       TEXT    NOT NULL,
        point_key   TEXT    NOT NULL,
        unit        TEXT    NOT NULL,
        n           INTEGER NOT NULL,
        min         INTEGER,
        max         INTEGER,
        sum         TEXT    NOT NULL,
        dropped     INTEGER NOT NULL,
        holes       INTEGER NOT NULL,
        n_samples   INTEGER,
        samples_enc TEXT,
        samples     BLOB,
        hist        TEXT,
        PRIMARY KEY (run_id, case_pos, pos),
        FOREIGN KEY (run_id, case_pos) REFERENCES cases(run_id, pos) ON DELETE CASCADE
    )""",
    """CREATE TABLE checks (
        run_id    INTEGER NOT NULL,
        case_pos  INTEGER NOT NULL,
        pos       INTEGER NOT NULL,
        case_id   TEXT    NOT NULL,
        name      TEXT    NOT NULL,
        verdict   TEXT    NOT NULL,
        detail    TEXT    NOT NULL,
        PRIMARY KEY (run_id, case_pos, pos),
        FOREIGN KEY (run_id, case_pos) REFERENCES cases(run_id, pos) ON DELETE CASCADE
    )""",
    # case_pos NULL: a run-wide warning (Run.warnings); otherwise it sits in
    # that case's list. case_id is Warning.case, kept apart from where it sits.
    """CREATE TABLE warnings (
        run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        case_pos  INTEGER,
        pos       INTEGER NOT NULL,
        code      TEXT    NOT NULL,
        detail    TEXT    NOT NULL,
        case_id   TEXT,
        FOREIGN KEY (run_id, case_pos) REFERENCES cases(run_id, pos) ON DELETE CASCADE
    )""",
    "CREATE INDEX warnings_by_run ON warnings(run_id, case_pos, pos)",
    """CREATE TABLE issues (
        run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        pos     INTEGER NOT NULL,
        kind    TEXT    NOT NULL,
        detail  TEXT    NOT NULL,
        line    INTEGER,
        PRIMARY KEY (run_id, pos)
    )""",
    """CREATE TABLE log (
        run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        pos     INTEGER NOT NULL,
        line    TEXT    NOT NULL,
        PRIMARY KEY (run_id, pos)
    )""",
)


# Version 2. The wire format's integers fill int64 and uint64 (a count of
# 2**64 - 1, a max of UINT64_MAX), which an SQLite INTEGER cannot hold: every
# figure that comes from the stream is exact decimal TEXT, like `sum`. (TEXT,
# not INTEGER affinity: SQLite turns an integer literal above int64 into a
# lossy REAL.) The two tables are rebuilt the SQLite way; their children's
# foreign keys name the table, so they follow the rename.
_CASES_V2 = """CREATE TABLE cases_v2 (
        run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        pos          INTEGER NOT NULL,
        case_id      TEXT    NOT NULL,
        title        TEXT    NOT NULL,
        params       TEXT    NOT NULL,
        outcome      TEXT    NOT NULL,
        duration_ns  TEXT    NOT NULL,
        reason       TEXT    NOT NULL,
        PRIMARY KEY (run_id, pos)
    )"""
_SERIES_V2 = """CREATE TABLE series_v2 (
        run_id      INTEGER NOT NULL,
        case_pos    INTEGER NOT NULL,
        pos         INTEGER NOT NULL,
        case_id     TEXT    NOT NULL,
        name        TEXT    NOT NULL,
        point       TEXT    NOT NULL,
        point_key   TEXT    NOT NULL,
        unit        TEXT    NOT NULL,
        n           TEXT    NOT NULL,
        min         TEXT,
        max         TEXT,
        sum         TEXT    NOT NULL,
        dropped     TEXT    NOT NULL,
        holes       TEXT    NOT NULL,
        n_samples   INTEGER,
        samples_enc TEXT,
        samples     BLOB,
        hist        TEXT,
        PRIMARY KEY (run_id, case_pos, pos),
        FOREIGN KEY (run_id, case_pos) REFERENCES cases(run_id, pos) ON DELETE CASCADE
    )"""
V2: tuple[str, ...] = (
    _CASES_V2,
    "INSERT INTO cases_v2 SELECT run_id, pos, case_id, title, params, outcome,"
    " CAST(duration_ns AS TEXT), reason FROM cases",
    _SERIES_V2,
    "INSERT INTO series_v2 SELECT run_id, case_pos, pos, case_id, name, point, point_key, unit,"
    " CAST(n AS TEXT), CAST(min AS TEXT), CAST(max AS TEXT), sum, CAST(dropped AS TEXT),"
    " CAST(holes AS TEXT), n_samples, samples_enc, samples, hist FROM series",
    "DROP TABLE series",
    "DROP TABLE cases",
    "ALTER TABLE cases_v2 RENAME TO cases",
    "ALTER TABLE series_v2 RENAME TO series",
)


# Version 2 on PostgreSQL: its columns change type in place (a rebuilt table
# would leave the children's foreign keys on the dropped one). BIGINT becomes
# the same decimal text as SQLite's CAST.
V2_POSTGRESQL: tuple[str, ...] = (
    "ALTER TABLE cases ALTER COLUMN duration_ns TYPE TEXT USING duration_ns::text",
    "ALTER TABLE series "
    + ", ".join(
        f"ALTER COLUMN {c} TYPE TEXT USING {c}::text"
        for c in ("n", "min", "max", "dropped", "holes")
    ),
)


# Version 3. A series knows what it is (rtbench.kinds): its kind, and the
# measured attributes that do not identify it. Rows saved before get the
# kind the documented fallback gives a record without one (a `count` unit is
# a count; the series below were what the cases of that time meant; the rest
# are latencies), written out here because a released migration never
# changes. Plain SQL that SQLite and PostgreSQL both run.
_V3_LEGACY = (
    ("CAL-REF", "t_std", "duration"),
    ("CAL-TIMER", "xcpu_fwd", "duration"),
    ("CAL-TIMER", "xcpu_back", "duration"),
    ("CLK-DUR", "gap_start", "timestamp"),
    ("CLK-DUR", "tick_period", "period"),
    ("IRQ-SUS", "losses", "count"),
    ("IRQ-SUS", "delivered", "count"),
    ("IRQ-SUS", "sustained_period", "period"),
    ("IRQ-SUS", "lossy_period", "period"),
    ("JIT-PER", "interval", "duration"),
    ("JIT-PER", "deviation", "duration"),
    ("THR-B-RR", "slice", "duration"),
)
V3: tuple[str, ...] = (
    "ALTER TABLE series ADD COLUMN kind TEXT NOT NULL DEFAULT 'latency'",
    "ALTER TABLE series ADD COLUMN attrs TEXT NOT NULL DEFAULT '{}'",
    "UPDATE series SET kind = CASE"
    + "".join(f" WHEN case_id = '{c}' AND name = '{n}' THEN '{k}'" for c, n, k in _V3_LEGACY)
    + " WHEN unit = 'count' THEN 'count' ELSE 'latency' END",
)


# Version 4. A run's identity (rtbench.identity), which decides "already
# stored". Unique, so that two hosts storing one run at once store it once;
# runs stored before have none (NULL: unique indexes allow many).
V4: tuple[str, ...] = (
    "ALTER TABLE runs ADD COLUMN uuid TEXT",
    "CREATE UNIQUE INDEX runs_by_uuid ON runs(uuid)",
)


# Version 5. A series' raw samples are a sequence of chunks (codec.CHUNK_SAMPLES
# each), written and read one at a time, so that neither a save nor a load
# holds a long series' blob whole. A series row keeps `n_samples` (how many in
# all; NULL: none kept) and `samples_enc` (the encoding of the chunks it had
# when stored: 'i64le-shuffle-zstd' from version 5, the zlib one before). Each
# one-blob series of older versions becomes its chunk 0, byte for byte (its
# encoding still reads); the blob column goes.
V5: tuple[str, ...] = (
    """CREATE TABLE chunks (
        run_id      INTEGER NOT NULL,
        case_pos    INTEGER NOT NULL,
        series_pos  INTEGER NOT NULL,
        seq         INTEGER NOT NULL,
        n           INTEGER NOT NULL,
        enc         TEXT    NOT NULL,
        data        BLOB    NOT NULL,
        PRIMARY KEY (run_id, case_pos, series_pos, seq),
        FOREIGN KEY (run_id, case_pos, series_pos) REFERENCES series(run_id, case_pos, pos)
            ON DELETE CASCADE
    )""",
    "INSERT INTO chunks SELECT run_id, case_pos, pos, 0, n_samples, samples_enc, samples"
    " FROM series WHERE samples IS NOT NULL",
    "ALTER TABLE series DROP COLUMN samples",
)


def sql(*statements: str) -> Migration:
    """A migration that runs `statements` in order, on every backend."""

    def migrate(db: Migrating) -> None:
        for statement in statements:
            db.execute(statement)

    return migrate


def per_dialect(*, sqlite: Migration, postgresql: Migration) -> Migration:
    """A migration whose DDL differs between the backends."""

    def migrate(db: Migrating) -> None:
        (sqlite if db.dialect == "sqlite" else postgresql)(db)

    return migrate


MIGRATIONS: list[Migration] = [
    # 0 -> 1: the first schema (the application_id mark is SQLite's own; a
    # PostgreSQL store is marked by the runner's version table)
    per_dialect(sqlite=sql(*V1), postgresql=sql(*V1[1:])),
    # 1 -> 2: integers from the stream as exact decimal TEXT (uint64)
    per_dialect(sqlite=sql(*V2), postgresql=sql(*V2_POSTGRESQL)),
    sql(*V3),  # 2 -> 3: series kind and attributes (rtbench.kinds)
    sql(*V4),  # 3 -> 4: the run's identity
    sql(*V5),  # 4 -> 5: raw samples in chunks
]
