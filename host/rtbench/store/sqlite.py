"""The run store: every run the host has seen, in one SQLite file.

See docs/store.md for the file's location, its tables and the sample encoding.
Only this module talks SQL; callers get and give `rtbench.model` objects.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self, cast

import numpy as np
import platformdirs

from rtbench.model import (
    CaseResult,
    Check,
    Histogram,
    Int64Array,
    Run,
    RunOutcome,
    Series,
    StreamIssue,
    Warning,
    point_key,
)
from rtbench.store import schema

ENV_VAR = "RTBENCH_DB"
FILE_NAME = "rtbench.sqlite"
# Byte k of every sample together, then zlib: latency samples differ mostly in
# their low bytes, so the high-byte planes are long runs of 0x00 (or 0xff).
SAMPLES_ENCODING = "i64le-shuffle-zlib"
BUSY_TIMEOUT_S = 30.0
# Seconds a writer waits for another one's lock (tests make it short).
TIMEOUT_ENV_VAR = "RTBENCH_DB_TIMEOUT"

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_RUN_OUTCOMES = ("passed", "failed", "error")

PathArg = str | os.PathLike[str]


class StoreError(Exception):
    """Anything the store cannot do, said so that a user can act on it."""


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


def default_store_path(explicit: PathArg | None = None) -> Path:
    """The store file: `explicit`, else $RTBENCH_DB, else the user data dir's."""
    if explicit is not None:
        return Path(explicit).expanduser()
    env = os.environ.get(ENV_VAR, "")
    if env:
        return Path(env).expanduser()
    return platformdirs.user_data_path("rtbench") / FILE_NAME


def kernel_release(run: Run) -> str:
    """The release of the OS the run measured (`Run.system`: the agent's
    `hello` first, the host probe only when it is the same system)."""
    return run.system.release


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


# --- encoding helpers ----------------------------------------------------


def encode_samples(samples: Int64Array) -> tuple[int, bytes]:
    """(count, blob) of a 1-D int64 array in SAMPLES_ENCODING."""
    try:
        values = np.asarray(samples).astype("<i8", casting="safe", copy=False)
    except TypeError as e:
        raise StoreError(f"samples must be int64, not {np.asarray(samples).dtype}") from e
    if values.ndim != 1:
        raise StoreError(f"samples must be one-dimensional, not shape {values.shape}")
    planes = np.ascontiguousarray(values).view(np.uint8).reshape(-1, 8).T
    return values.size, zlib.compress(planes.tobytes())


def decode_samples(count: int, blob: bytes, encoding: str = SAMPLES_ENCODING) -> Int64Array:
    """Inverse of `encode_samples`: a fresh, writable, native int64 array."""
    if encoding != SAMPLES_ENCODING:
        raise StoreError(f"unknown samples encoding {encoding!r}")
    try:
        raw = zlib.decompress(blob)
    except zlib.error as e:
        raise StoreError(f"damaged samples blob: {e}") from e
    if len(raw) != 8 * count:
        raise StoreError(f"damaged samples blob: {len(raw)} bytes for {count} samples")
    planes = np.frombuffer(raw, dtype=np.uint8).reshape(8, count)
    return planes.T.copy().view("<i8").reshape(count).astype(np.int64)


def _to_json(value: Any, what: str) -> str:
    # ensure_ascii: a lone surrogate (from a JSON "\ud800" escape) survives
    # as an escape instead of failing the UTF-8 encoding of the column.
    try:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise StoreError(f"{what} cannot be stored as JSON: {e}") from e


def _from_json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _db_text(value: str) -> str | bytes:
    """A str as SQLite can hold it: lone surrogates (console noise decoded
    with surrogateescape) are not UTF-8, so such a str goes in as a BLOB."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")
    return value


def _py_text(value: str | bytes) -> str:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def _opt_text(value: str | bytes | None) -> str | None:
    return None if value is None else _py_text(value)


def _row(*values: Any) -> tuple[Any, ...]:
    return tuple(_db_text(v) if isinstance(v, str) else v for v in values)


def _dec(value: int | None, what: str) -> str | None:
    """An exact integer as the store keeps it: decimal TEXT, of any size (the
    wire format's uint64 does not fit SQLite's INTEGER; schema version 2)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise StoreError(f"{what} = {value!r:.40} is not an integer")
    return str(int(value))


def _int(text: str | int | None) -> int:
    """Inverse of `_dec` (NULL is 0: only ever read where NOT NULL holds)."""
    return 0 if text is None else _opt_int(text) or 0


def _opt_int(text: str | int | None) -> int | None:
    if text is None or isinstance(text, int):
        return text
    try:
        return int(text)
    except ValueError:
        raise StoreError(f"damaged store: {text!r:.40} where an integer belongs") from None


def _outcome(text: str) -> RunOutcome:
    if text not in _RUN_OUTCOMES:
        raise StoreError(f"unknown run outcome {text!r} in the store")
    return cast(RunOutcome, text)


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


# --- the store -----------------------------------------------------------


class Store:
    """The run store on one SQLite file; open it with `with Store(path) as s:`.

    Opening creates the file and its directory, and migrates an older schema.
    Several Store objects (threads, processes) may have the same file open:
    WAL mode lets readers run beside a writer, and writers wait their turn
    (up to `timeout` seconds). A Store object belongs to the thread that
    opened it.
    """

    def __init__(self, path: PathArg | None = None, *, timeout: float | None = None):
        self.path = default_store_path(path)
        timeout = busy_timeout() if timeout is None else timeout
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create the store's directory: {e}") from e
        self._conn = self._connect(timeout)
        try:
            self._prepare(timeout)
        except BaseException:
            self._conn.close()
            raise

    # -- opening --

    def _connect(self, timeout: float) -> sqlite3.Connection:
        try:
            # isolation_level None: the module must not open transactions
            # behind our back; every transaction here is an explicit BEGIN.
            conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        except sqlite3.Error as e:
            raise StoreError(f"cannot open the store {self.path}: {e}") from e
        conn.row_factory = sqlite3.Row
        return conn

    def _prepare(self, timeout: float) -> None:
        try:
            self._check_ours()
            self._enable_wal(timeout)
            self._migrate()
            self._conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as e:
            raise StoreError(f"cannot open the store {self.path}: {e}") from e

    def _enable_wal(self, timeout: float) -> None:
        """Switch the file to WAL (it sticks to the file: later opens skip this).

        The switch needs an exclusive lock and SQLite answers "locked" at
        once, without its busy handler, when two first opens race for it; so
        this retries on its own, up to the busy timeout.
        """
        deadline = time.monotonic() + timeout
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

    def _pragma_int(self, name: str) -> int:
        return int(self._conn.execute(f"PRAGMA {name}").fetchone()[0])

    def _check_ours(self) -> None:
        """Refuse a file that is some other program's SQLite database."""
        # One snapshot: another process may be creating the schema right now,
        # and its tables must not be seen without its application_id.
        with self._transaction("DEFERRED"):
            app_id = self._pragma_int("application_id")
            version = self._pragma_int("user_version")
            tables = self._conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if app_id == schema.APPLICATION_ID:
            return
        if app_id == 0 and version == 0 and tables == 0:
            return  # a new, empty file
        raise StoreError(
            f"{self.path} is an SQLite database but not an rtbench store; "
            f"give the store another path (or set {ENV_VAR})"
        )

    def _check_not_newer(self, version: int) -> None:
        known = len(schema.MIGRATIONS)
        if version > known:
            raise StoreError(
                f"the store {self.path} has schema version {version}, created by a newer "
                f"rtbench (this one knows up to {known}); upgrade rtbench"
            )

    def _migrate(self) -> None:
        """Bring the schema to len(schema.MIGRATIONS), all steps or none."""
        target = len(schema.MIGRATIONS)
        version = self._pragma_int("user_version")
        self._check_not_newer(version)
        if version == target:
            return
        # Off while migrating so that a migration may rebuild a table; it is
        # a no-op inside a transaction, hence before BEGIN.
        self._conn.execute("PRAGMA foreign_keys = OFF")
        with self._transaction():
            # Re-read under the write lock: another process may have migrated
            # between our first look and BEGIN IMMEDIATE.
            version = self._pragma_int("user_version")
            self._check_not_newer(version)
            for step in range(version, target):
                self._run_migration(step)
            self._conn.execute(f"PRAGMA user_version = {target}")
            if self._conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
                raise StoreError(f"migrating {self.path} broke a foreign key; nothing changed")

    def _run_migration(self, step: int) -> None:
        try:
            schema.MIGRATIONS[step](self._conn)
        except StoreError:
            raise
        except Exception as e:
            raise StoreError(
                f"migrating the store {self.path} from schema {step} to {step + 1} failed "
                f"({e}); nothing changed"
            ) from e

    # -- lifetime --

    def close(self) -> None:
        self._conn.close()

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
        return self._pragma_int("user_version")

    @contextmanager
    def _transaction(
        self, mode: Literal["IMMEDIATE", "DEFERRED"] = "IMMEDIATE"
    ) -> Iterator[sqlite3.Connection]:
        """One transaction; rolled back on any exception, sqlite errors made
        StoreErrors. Writers take the write lock at BEGIN (IMMEDIATE): in WAL
        a deferred reader that later writes cannot wait for the lock, it fails."""
        conn = self._conn
        try:
            conn.execute(f"BEGIN {mode}")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            raise StoreError(f"store {self.path}: {e}") from e

    # -- runs --

    def save(self, run: Run) -> int:
        """Store `run` as a new run (one transaction); set and return its id.

        A run that already has an id is saved again as a copy with a new id.
        """
        with self._transaction() as db:
            run_id = _insert_run(db, run)
        run.id = run_id
        return run_id

    def load(self, run_id: int) -> Run:
        with self._transaction("DEFERRED") as db:
            row = db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise StoreError(self._unknown(run_id))
            return _read_run(db, row)

    def list_runs(self, labels: Mapping[str, str | None] | None = None) -> list[RunSummary]:
        """Summaries of the runs, oldest first (by id).

        `labels` filters: every key must be set on the run, to the given
        value, or to any value where the value is None.
        """
        where, params = _label_filter(labels or {})
        with self._transaction("DEFERRED") as db:
            rows = db.execute(
                "SELECT id, started_at, target, outcome, realtime, n_cases, kernel "
                f"FROM runs {where} ORDER BY id",
                params,
            ).fetchall()
            all_labels = _labels_by_run(db)
        return [_summary(r, all_labels.get(r["id"], {})) for r in rows]

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
        if run_id <= _INT64_MAX:  # larger ones are no id, and sqlite3 would overflow
            with self._transaction("DEFERRED") as db:
                found = db.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone()
        if found is None:
            raise StoreError(self._unknown(ref))
        return run_id

    def _nth_newest(self, n: int, ref: str | int) -> int:
        row = None
        if n <= _INT64_MAX:
            with self._transaction("DEFERRED") as db:
                row = db.execute(
                    "SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?", (n - 1,)
                ).fetchone()
        if row is None:
            raise StoreError(self._unknown(ref))
        return int(row[0])

    def _unknown(self, ref: str | int) -> str:
        """'no run X' plus what the store does hold.

        A plain SELECT, no BEGIN: callers may already be in a transaction."""
        try:
            ids = [int(r[0]) for r in self._conn.execute("SELECT id FROM runs ORDER BY id")]
        except sqlite3.Error as e:
            raise StoreError(f"store {self.path}: {e}") from e
        if not ids:
            return f"no run {str(ref)!r}: the store {self.path} holds no runs yet"
        return (
            f"no run {str(ref)!r} in {self.path}: it holds {len(ids)} run(s), "
            f"ids {_id_ranges(ids)}; use an id, 'latest' or -1 (newest), -2, ..."
        )

    def delete(self, run_id: int) -> None:
        """Remove a run and everything of it (cascading foreign keys)."""
        with self._transaction() as db:
            deleted = db.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount
            if deleted == 0:
                raise StoreError(self._unknown(run_id))

    def set_labels(
        self, run_id: int, labels: Mapping[str, str | None], *, merge: bool = False
    ) -> None:
        """Set a run's labels to `labels`.

        merge=False replaces the whole set. merge=True changes only the keys
        given and keeps the others. Either way a None value removes the key.
        """
        with self._transaction() as db:
            if db.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
                raise StoreError(self._unknown(run_id))
            if not merge:
                db.execute("DELETE FROM labels WHERE run_id = ?", (run_id,))
            for key, value in labels.items():
                _check_label(key, value)
                db.execute("DELETE FROM labels WHERE run_id = ? AND key = ?", _row(run_id, key))
                if value is not None:
                    db.execute("INSERT INTO labels VALUES (?, ?, ?)", _row(run_id, key, value))


# --- writing -------------------------------------------------------------


def _check_label(key: object, value: object) -> None:
    if not isinstance(key, str) or not key:
        raise StoreError(f"a label key must be a non-empty string, not {key!r}")
    if value is not None and not isinstance(value, str):
        raise StoreError(f"label {key!r}: the value must be a string, not {value!r}")


def _insert_run(db: sqlite3.Connection, run: Run) -> int:
    cur = db.execute(
        "INSERT INTO runs (started_at, target, source, outcome, realtime, complete, kernel,"
        " n_cases, hello, bye, machine) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        _row(
            run.started_at,
            run.target,
            run.source,
            run.outcome,
            int(run.realtime),
            int(run.complete),
            kernel_release(run),
            len(run.cases),
            _to_json(run.hello, "run.hello"),
            None if run.bye is None else _to_json(run.bye, "run.bye"),
            _to_json(run.machine, "run.machine"),
        ),
    )
    run_id = cur.lastrowid
    assert run_id is not None  # always set after an INSERT into a rowid table
    for key, value in run.labels.items():
        _check_label(key, value)
    db.executemany(
        "INSERT INTO labels VALUES (?, ?, ?)",
        [_row(run_id, k, v) for k, v in run.labels.items()],
    )
    db.executemany(
        "INSERT INTO log VALUES (?, ?, ?)",
        [_row(run_id, i, line) for i, line in enumerate(run.log)],
    )
    db.executemany(
        "INSERT INTO issues VALUES (?, ?, ?, ?, ?)",
        [_row(run_id, i, x.kind, x.detail, x.line) for i, x in enumerate(run.issues)],
    )
    _insert_warnings(db, run_id, None, run.warnings)
    for pos, case in enumerate(run.cases):
        _insert_case(db, run_id, pos, case)
    return run_id


def _insert_warnings(
    db: sqlite3.Connection, run_id: int, case_pos: int | None, warnings: list[Warning]
) -> None:
    db.executemany(
        "INSERT INTO warnings VALUES (?, ?, ?, ?, ?, ?)",
        [_row(run_id, case_pos, i, w.code, w.detail, w.case) for i, w in enumerate(warnings)],
    )


def _insert_case(db: sqlite3.Connection, run_id: int, pos: int, case: CaseResult) -> None:
    what = f"case {case.case}"
    db.execute(
        "INSERT INTO cases VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        _row(
            run_id,
            pos,
            case.case,
            case.title,
            _to_json(case.params, f"{what}: params"),
            case.outcome,
            _dec(case.duration_ns, f"{what}: duration_ns"),
            case.reason,
        ),
    )
    db.executemany(
        "INSERT INTO series VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [_series_row(run_id, pos, i, s) for i, s in enumerate(case.series)],
    )
    db.executemany(
        "INSERT INTO checks VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            _row(run_id, pos, i, c.case, c.name, c.verdict, c.detail)
            for i, c in enumerate(case.checks)
        ],
    )
    _insert_warnings(db, run_id, pos, case.warnings)


def _series_row(run_id: int, case_pos: int, pos: int, s: Series) -> tuple[Any, ...]:
    what = f"series {s.case}/{s.label}"
    n_samples: int | None = None
    blob: bytes | None = None
    if s.samples is not None:
        n_samples, blob = encode_samples(s.samples)
    return _row(
        run_id,
        case_pos,
        pos,
        s.case,
        s.name,
        _to_json(s.point, f"{what}: point"),
        point_key(s.point),
        s.unit,
        _dec(s.n, f"{what}: n"),
        _dec(s.min, f"{what}: min"),
        _dec(s.max, f"{what}: max"),
        _dec(s.sum, f"{what}: sum"),
        _dec(s.dropped, f"{what}: dropped"),
        _dec(s.holes, f"{what}: holes"),
        n_samples,
        None if blob is None else SAMPLES_ENCODING,
        blob,
        None if s.hist is None else _to_json(_hist_dict(s.hist), f"{what}: hist"),
        s.kind,
        _to_json(s.attrs, f"{what}: attrs"),
    )


def _hist_dict(h: Histogram) -> dict[str, Any]:
    return {
        "layout": h.layout,
        "counts": [[i, c] for i, c in h.counts],
        "n": h.n,
        "min": h.min,
        "max": h.max,
        "sum": h.sum,
        "underflow": h.underflow,
        "overflow": h.overflow,
    }


# --- reading -------------------------------------------------------------


def _read_run(db: sqlite3.Connection, row: sqlite3.Row) -> Run:
    run_id = int(row["id"])
    run = Run(
        hello=_from_json(row["hello"]),
        bye=_from_json(row["bye"]),
        id=run_id,
        started_at=_py_text(row["started_at"]),
        target=_py_text(row["target"]),
        labels=_labels_by_run(db, run_id).get(run_id, {}),
        machine=_from_json(row["machine"]),
        source=_py_text(row["source"]),
    )
    run.log = [_py_text(r[0]) for r in _rows(db, "SELECT line FROM log", run_id)]
    run.issues = [
        StreamIssue(kind=r["kind"], detail=_py_text(r["detail"]), line=r["line"])
        for r in _rows(db, "SELECT kind, detail, line FROM issues", run_id)
    ]
    run.cases = [_case(r) for r in _rows(db, "SELECT * FROM cases", run_id)]
    _attach_children(db, run)
    return run


def _rows(db: sqlite3.Connection, select: str, run_id: int) -> Iterable[sqlite3.Row]:
    """`select` of one run's rows, in the model's list order."""
    return db.execute(f"{select} WHERE run_id = ? ORDER BY pos", (run_id,)).fetchall()


def _case(r: sqlite3.Row) -> CaseResult:
    return CaseResult(
        case=_py_text(r["case_id"]),
        title=_py_text(r["title"]),
        params=_from_json(r["params"]),
        outcome=r["outcome"],
        duration_ns=_int(r["duration_ns"]),
        reason=_py_text(r["reason"]),
    )


def _attach_children(db: sqlite3.Connection, run: Run) -> None:
    """Series, checks and warnings into their cases (and run-wide warnings)."""
    assert run.id is not None
    order = "WHERE run_id = ? ORDER BY case_pos, pos"
    for r in db.execute(f"SELECT * FROM series {order}", (run.id,)):
        run.cases[r["case_pos"]].series.append(_series(r))
    for r in db.execute(f"SELECT * FROM checks {order}", (run.id,)):
        run.cases[r["case_pos"]].checks.append(
            Check(
                case=_py_text(r["case_id"]),
                name=_py_text(r["name"]),
                verdict=r["verdict"],
                detail=_py_text(r["detail"]),
            )
        )
    for r in db.execute(f"SELECT * FROM warnings {order}", (run.id,)):
        w = Warning(
            code=_py_text(r["code"]), detail=_py_text(r["detail"]), case=_opt_text(r["case_id"])
        )
        (run.warnings if r["case_pos"] is None else run.cases[r["case_pos"]].warnings).append(w)


def _series(r: sqlite3.Row) -> Series:
    samples = None
    if r["samples"] is not None:
        samples = decode_samples(r["n_samples"], r["samples"], r["samples_enc"])
    return Series(
        case=_py_text(r["case_id"]),
        name=_py_text(r["name"]),
        point=_from_json(r["point"]),
        unit=_py_text(r["unit"]),
        samples=samples,
        holes=_int(r["holes"]),
        hist=_hist(_from_json(r["hist"])),
        n=_int(r["n"]),
        min=_opt_int(r["min"]),
        max=_opt_int(r["max"]),
        sum=_int(r["sum"]),
        dropped=_int(r["dropped"]),
        kind=_py_text(r["kind"]),
        attrs=_from_json(r["attrs"]),
    )


def _hist(d: dict[str, Any] | None) -> Histogram | None:
    if d is None:
        return None
    return Histogram(
        layout=d["layout"],
        counts=[(int(i), int(c)) for i, c in d["counts"]],
        n=d["n"],
        min=d["min"],
        max=d["max"],
        sum=d["sum"],
        underflow=d["underflow"],
        overflow=d["overflow"],
    )


def _labels_by_run(db: sqlite3.Connection, run_id: int | None = None) -> dict[int, dict[str, str]]:
    """{run id: labels sorted by key}, for one run or for all."""
    sql = "SELECT run_id, key, value FROM labels"
    params: tuple[int, ...] = ()
    if run_id is not None:
        sql, params = sql + " WHERE run_id = ?", (run_id,)
    out: dict[int, dict[str, str]] = {}
    for r in db.execute(sql + " ORDER BY run_id, key", params):
        out.setdefault(int(r[0]), {})[_py_text(r[1])] = _py_text(r[2])
    return out


def _label_filter(labels: Mapping[str, str | None]) -> tuple[str, list[Any]]:
    """A WHERE clause (and its parameters) for runs carrying all `labels`."""
    terms: list[str] = []
    params: list[Any] = []
    for key, value in labels.items():
        if value is None:
            terms.append("EXISTS (SELECT 1 FROM labels l WHERE l.run_id = runs.id AND l.key = ?)")
            params.extend(_row(key))
        else:
            terms.append(
                "EXISTS (SELECT 1 FROM labels l WHERE l.run_id = runs.id"
                " AND l.key = ? AND l.value = ?)"
            )
            params.extend(_row(key, value))
    return ("WHERE " + " AND ".join(terms) if terms else ""), params


def _summary(r: sqlite3.Row, labels: dict[str, str]) -> RunSummary:
    return RunSummary(
        id=int(r["id"]),
        started_at=_py_text(r["started_at"]),
        target=_py_text(r["target"]),
        outcome=_outcome(r["outcome"]),
        realtime=bool(r["realtime"]),
        cases=int(r["n_cases"]),
        labels=labels,
        kernel=_py_text(r["kernel"]),
    )
