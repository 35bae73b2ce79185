"""A run as rows of the store's tables, and back: the same SQL for every
backend (`Backend` keeps the dialects apart). One statement per table and
run, so a save costs the same few round trips to a database server
whatever the number of cases."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, cast

from rtbench.model import (
    CaseResult,
    Check,
    ChunkedSamples,
    Int64Array,
    Run,
    RunOutcome,
    Series,
    StreamIssue,
    Warning,
    point_key,
)
from rtbench.store.backend import Backend, Row
from rtbench.store.codec import (
    SAMPLES_ENCODING,
    StoreError,
    dec,
    encode_chunks,
    from_json,
    hist_from_dict,
    opt_int,
    to_int,
    to_json,
)
from rtbench.store.spill import SpilledSamples
from rtbench.store.stored_samples import EAGER_SAMPLES, StoredSamples, read_whole

_RUN_OUTCOMES = ("passed", "failed", "error", "skipped")


def kernel_release(run: Run) -> str:
    """The release of the OS the run measured (`Run.system`: the agent's
    `hello` first, the host probe only when it is the same system)."""
    return run.system.release


def check_label(key: object, value: object) -> None:
    if not isinstance(key, str) or not key:
        raise StoreError(f"a label key must be a non-empty string, not {key!r}")
    if value is not None and not isinstance(value, str):
        raise StoreError(f"label {key!r}: the value must be a string, not {value!r}")


class _Rows:
    """Rows for one table, with str values as the backend keeps text."""

    def __init__(self, db: Backend) -> None:
        self.db = db
        self.rows: list[tuple[Any, ...]] = []

    def add(self, *values: Any) -> None:
        self.rows.append(tuple(self.db.text(v) if isinstance(v, str) else v for v in values))


def insert_run(db: Backend, run: Run) -> int:
    def row(*values: Any) -> tuple[Any, ...]:
        return tuple(db.text(v) if isinstance(v, str) else v for v in values)

    for key, value in run.labels.items():
        check_label(key, value)
    run_id = db.insert_id(
        "INSERT INTO runs (started_at, target, source, outcome, realtime, complete, kernel,"
        " n_cases, hello, bye, machine, uuid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        row(
            run.started_at,
            run.target,
            run.source,
            run.outcome,
            int(run.realtime),
            int(run.complete),
            kernel_release(run),
            len(run.cases),
            to_json(run.hello, "run.hello"),
            None if run.bye is None else to_json(run.bye, "run.bye"),
            to_json(run.machine, "run.machine"),
            run.uuid or None,
        ),
    )
    labels, log, issues = _Rows(db), _Rows(db), _Rows(db)
    cases, series, checks, warnings = _Rows(db), _Rows(db), _Rows(db), _Rows(db)
    for k, v in run.labels.items():
        labels.add(run_id, k, v)
    for i, line in enumerate(run.log):
        log.add(run_id, i, line)
    for i, x in enumerate(run.issues):
        issues.add(run_id, i, x.kind, x.detail, x.line)
    for i, w in enumerate(run.warnings):
        warnings.add(run_id, None, i, w.code, w.detail, w.case)
    for pos, case in enumerate(run.cases):
        what = f"case {case.case}"
        cases.add(
            run_id,
            pos,
            case.case,
            case.title,
            to_json(case.params, f"{what}: params"),
            case.outcome,
            dec(case.duration_ns, f"{what}: duration_ns"),
            case.reason,
        )
        for i, s in enumerate(case.series):
            series.add(*_series_values(run_id, pos, i, s))
        for i, c in enumerate(case.checks):
            checks.add(run_id, pos, i, c.case, c.name, c.verdict, c.detail)
        for i, w in enumerate(case.warnings):
            warnings.add(run_id, pos, i, w.code, w.detail, w.case)
    # Parents before children: the foreign keys are checked per statement.
    db.run_many("INSERT INTO labels VALUES (?, ?, ?)", labels.rows)
    db.run_many("INSERT INTO log VALUES (?, ?, ?)", log.rows)
    db.run_many("INSERT INTO issues VALUES (?, ?, ?, ?, ?)", issues.rows)
    db.run_many("INSERT INTO cases VALUES (?, ?, ?, ?, ?, ?, ?, ?)", cases.rows)
    db.run_many(
        f"INSERT INTO series ({SERIES_COLUMNS}) VALUES ({_marks(SERIES_COLUMNS)})", series.rows
    )
    _insert_chunks(db, run_id, run)
    db.run_many("INSERT INTO checks VALUES (?, ?, ?, ?, ?, ?, ?)", checks.rows)
    db.run_many("INSERT INTO warnings VALUES (?, ?, ?, ?, ?, ?)", warnings.rows)
    return run_id


SERIES_COLUMNS = (
    "run_id, case_pos, pos, case_id, name, point, point_key, unit, n, min, max, sum, dropped,"
    " holes, n_samples, samples_enc, hist, kind, attrs"
)


def _marks(columns: str) -> str:
    return ", ".join("?" * len(columns.split(",")))


# Chunks go to the database in batches of about this many compressed bytes:
# a few round trips to a server for a quick run's hundred short series, and
# a bounded batch whatever a series' length.
_BATCH_BYTES = 4 << 20


def _insert_chunks(db: Backend, run_id: int, run: Run) -> None:
    """Every series' samples as chunks, each encoded only when the batch
    before it has gone to the database."""
    sql = "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?)"
    batch: list[tuple[Any, ...]] = []
    size = 0
    for case_pos, case in enumerate(run.cases):
        for pos, s in enumerate(case.series):
            if s.chunked is None:
                continue
            for seq, (count, blob) in enumerate(_encoded(s.chunked)):
                batch.append((run_id, case_pos, pos, seq, count, SAMPLES_ENCODING, blob))
                size += len(blob)
                if size >= _BATCH_BYTES:
                    db.run_many(sql, batch)
                    batch, size = [], 0
    if batch:
        db.run_many(sql, batch)


def _encoded(samples: ChunkedSamples) -> Iterator[tuple[int, bytes]]:
    """(count, blob) of each chunk to store, never the series whole: the
    chunks spilled while the run came in are copied as they are."""
    if isinstance(samples, SpilledSamples):
        yield from samples.encoded()
        return
    for chunk in samples.chunks():
        yield from encode_chunks(chunk)


def _series_values(run_id: int, case_pos: int, pos: int, s: Series) -> tuple[Any, ...]:
    what = f"series {s.case}/{s.label}"
    n_samples = None if s.chunked is None else len(s.chunked)
    return (
        run_id,
        case_pos,
        pos,
        s.case,
        s.name,
        to_json(s.point, f"{what}: point"),
        point_key(s.point),
        s.unit,
        dec(s.n, f"{what}: n"),
        dec(s.min, f"{what}: min"),
        dec(s.max, f"{what}: max"),
        dec(s.sum, f"{what}: sum"),
        dec(s.dropped, f"{what}: dropped"),
        dec(s.holes, f"{what}: holes"),
        n_samples,
        None if n_samples is None else SAMPLES_ENCODING,
        None if s.hist is None else to_json(s.hist.as_record(), f"{what}: hist"),
        s.kind,
        to_json(s.attrs, f"{what}: attrs"),
    )


def read_run(db: Backend, row: Row) -> Run:
    text = db.py_text
    run_id = int(row["id"])
    run = Run(
        hello=from_json(row["hello"]),
        bye=from_json(row["bye"]),
        id=run_id,
        started_at=text(row["started_at"]),
        target=text(row["target"]),
        labels=labels_by_run(db, run_id).get(run_id, {}),
        machine=from_json(row["machine"]),
        source=text(row["source"]),
        uuid=text(row["uuid"] or ""),
    )
    run.log = [text(r["line"]) for r in _ordered(db, "SELECT line FROM log", run_id)]
    run.issues = [
        StreamIssue(kind=r["kind"], detail=text(r["detail"]), line=r["line"])
        for r in _ordered(db, "SELECT kind, detail, line FROM issues", run_id)
    ]
    run.cases = [
        CaseResult(
            case=text(r["case_id"]),
            title=text(r["title"]),
            params=from_json(r["params"]),
            outcome=r["outcome"],
            duration_ns=to_int(r["duration_ns"]),
            reason=text(r["reason"]),
        )
        for r in _ordered(db, "SELECT * FROM cases", run_id)
    ]
    _attach_children(db, run)
    return run


def _ordered(db: Backend, select: str, run_id: int) -> list[Row]:
    """`select` of one run's rows, in the model's list order."""
    return db.rows(f"{select} WHERE run_id = ? ORDER BY pos", (run_id,))


def _attach_children(db: Backend, run: Run) -> None:
    """Series, checks and warnings into their cases (and run-wide warnings)."""
    assert run.id is not None
    text = db.py_text
    # NULLS FIRST: SQLite's order for the run-wide warnings, on every backend.
    order = "WHERE run_id = ? ORDER BY case_pos NULLS FIRST, pos"
    for r in db.rows(f"SELECT * FROM series {order}", (run.id,)):
        run.cases[r["case_pos"]].series.append(_series(db, r))
    for r in db.rows(f"SELECT * FROM checks {order}", (run.id,)):
        run.cases[r["case_pos"]].checks.append(
            Check(
                case=text(r["case_id"]),
                name=text(r["name"]),
                verdict=r["verdict"],
                detail=text(r["detail"]),
            )
        )
    for r in db.rows(f"SELECT * FROM warnings {order}", (run.id,)):
        case_id = r["case_id"]
        w = Warning(
            code=text(r["code"]),
            detail=text(r["detail"]),
            case=None if case_id is None else text(case_id),
        )
        (run.warnings if r["case_pos"] is None else run.cases[r["case_pos"]].warnings).append(w)


def _samples(db: Backend, r: Row) -> ChunkedSamples | Int64Array | None:
    """A series' stored samples: a short one read whole now, a long one a
    chunk at a time when a consumer reads it (bounded memory)."""
    if r["n_samples"] is None:
        return None
    total = int(r["n_samples"])
    where = (int(r["run_id"]), int(r["case_pos"]), int(r["pos"]))
    if total <= EAGER_SAMPLES:
        return read_whole(db, where, total, str(r["name"]))
    return StoredSamples(db.location, db.timeout, where, total, str(r["name"]))


def _series(db: Backend, r: Row) -> Series:
    text = db.py_text
    s = Series(
        case=text(r["case_id"]),
        name=text(r["name"]),
        point=from_json(r["point"]),
        unit=text(r["unit"]),
        holes=to_int(r["holes"]),
        hist=hist_from_dict(from_json(r["hist"])),
        n=to_int(r["n"]),
        min=opt_int(r["min"]),
        max=opt_int(r["max"]),
        sum=to_int(r["sum"]),
        dropped=to_int(r["dropped"]),
        kind=text(r["kind"]),
        attrs=from_json(r["attrs"]),
    )
    s.chunked = _samples(db, r)
    return s


def labels_by_run(db: Backend, run_ids: int | list[int] | None = None) -> dict[int, dict[str, str]]:
    """{run id: labels sorted by key}, for one run, some, or all."""
    sql = "SELECT run_id, key, value FROM labels"
    params: list[int] = []
    if isinstance(run_ids, int):
        sql, params = sql + " WHERE run_id = ?", [run_ids]
    elif run_ids is not None:
        if not run_ids:
            return {}
        sql += f" WHERE run_id IN ({', '.join('?' * len(run_ids))})"
        params = run_ids
    out: dict[int, dict[str, str]] = {}
    text = db.py_text
    for r in db.rows(sql + " ORDER BY run_id, key", params):
        out.setdefault(int(r["run_id"]), {})[text(r["key"])] = text(r["value"])
    return out


def label_filter(db: Backend, labels: Mapping[str, str | None]) -> tuple[str, list[Any]]:
    """A WHERE clause (and its parameters) for runs carrying all `labels`."""
    terms: list[str] = []
    params: list[Any] = []
    for key, value in labels.items():
        if value is None:
            terms.append("EXISTS (SELECT 1 FROM labels l WHERE l.run_id = runs.id AND l.key = ?)")
            params.append(db.text(key))
        else:
            terms.append(
                "EXISTS (SELECT 1 FROM labels l WHERE l.run_id = runs.id"
                " AND l.key = ? AND l.value = ?)"
            )
            params += [db.text(key), db.text(value)]
    return ("WHERE " + " AND ".join(terms) if terms else ""), params


def outcome(text: str) -> RunOutcome:
    if text not in _RUN_OUTCOMES:
        raise StoreError(f"unknown run outcome {text!r} in the store")
    return cast(RunOutcome, text)
