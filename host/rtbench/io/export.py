"""Exports of a run: canonical JSON (docs/export-format.md) and CSV.

The JSON holds the run as stored (everything `read_export` needs to rebuild
it) plus the derived statistics and scores, so a consumer need not recompute
them. Raw samples are included only when asked: they are most of the size.
Sample arrays are streamed slice by slice, never turned into one big
Python list, so exporting a 50-million-sample series stays bounded in
memory.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from rtbench import __version__, identity
from rtbench.analysis.scores import composite_score, is_scored
from rtbench.analysis.stats import PCT_NAMES, PERCENTILES, Stats, series_stats
from rtbench.model import (
    CaseResult,
    Check,
    ChunkedSamples,
    Int64Array,
    Run,
    Series,
    StreamIssue,
    Warning,
    point_key,
)

# An export's histogram object is the store's JSON form of one: both share
# the store's (de)serialisers.
from rtbench.store.codec import hist_from_dict
from rtbench.stream import schema

_ANY_INT = schema.integer(-(2**200), 2**200)  # derived counts (holes) may pass uint64

SCHEMA = "rtbench-export"
SCHEMA_VERSION = 1

CSV_COLUMNS = (
    "run_id", "started_at", "target", "realtime", "case", "series", "point", "unit",
    "n", "min", "mean", "stddev", *PCT_NAMES.values(), "max", "max_3sigma",
    "filtered_out", "stats_source", "percentiles_bounded", "score_mean", "score_max",
    "dropped", "holes", "kind", "run_uuid",
)  # fmt: skip  (new columns go at the end: scripts read columns by place)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False)


def _finite(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def stats_dict(st: Stats) -> dict[str, Any]:
    pct = {}
    for q in PERCENTILES:
        if q in st.pct:
            lo, hi = st.pct_range.get(q, (st.pct[q], st.pct[q]))
            pct[PCT_NAMES[q]] = {"value": st.pct[q], "lo": lo, "hi": hi}
    return {
        "source": st.source,
        "stddev": _finite(st.stddev),
        "stddev_exact": st.stddev_exact,
        "percentiles": pct,
        "bounded": st.bounded,
        "max_3sigma": st.filtered_max,
        "filtered_out": st.filtered_out,
    }


def _scores(s: Series, t_std: float | None) -> dict[str, float | None]:
    """Scores of a latency; None for a kind no score means anything for."""
    scored = is_scored(s)

    def sc(v: float | None) -> float | None:
        return v / t_std if v is not None and t_std and scored else None

    return {"mean": sc(s.mean), "max": sc(None if s.max is None else float(s.max))}


def run_header(run: Run) -> dict[str, Any]:
    return {
        "id": run.id,
        "uuid": run.uuid,
        "started_at": run.started_at,
        "target": run.target,
        "source": run.source,
        "labels": run.labels,
        "outcome": run.outcome,
        "complete": run.complete,
        "realtime": run.realtime,
        "t_std_ns": run.t_std_ns,
        "composite_score": composite_score(run),
        "hello": run.hello,
        "bye": run.bye,
        "machine": run.machine,
        "warnings": [{"code": w.code, "detail": w.detail, "case": w.case} for w in run.warnings],
        "issues": [{"kind": i.kind, "detail": i.detail, "line": i.line} for i in run.issues],
        "log": run.log,
    }


def case_header(c: CaseResult) -> dict[str, Any]:
    return {
        "case": c.case,
        "title": c.title,
        "params": c.params,
        "outcome": c.outcome,
        "duration_ns": c.duration_ns,
        "reason": c.reason,
        "checks": [
            {"name": ch.name, "verdict": ch.verdict, "detail": ch.detail} for ch in c.checks
        ],
        "warnings": [{"code": w.code, "detail": w.detail} for w in c.warnings],
    }


def series_header(s: Series, t_std: float | None) -> dict[str, Any]:
    return {
        "name": s.name,
        "point": s.point,
        "point_key": point_key(s.point),
        "kind": s.kind,
        "unit": s.unit,
        "attrs": s.attrs,
        "n": s.n,
        "min": s.min,
        "max": s.max,
        "sum": s.sum,
        "mean": s.mean,
        "dropped": s.dropped,
        "holes": s.holes,
        "stats": stats_dict(series_stats(s, sigma3=True)),
        "scores": _scores(s, t_std),
        "hist": None if s.hist is None else s.hist.as_record(),
    }


def _sample_text(values: ChunkedSamples) -> Iterator[str]:
    """The samples as JSON array items, a chunk at a time (a long stored
    series is never read whole)."""
    first = True
    for chunk in values.chunks():
        if chunk.size:
            yield ("" if first else ",") + ",".join(map(str, chunk.tolist()))
            first = False


def _open(obj: dict[str, Any]) -> str:
    """A JSON object's text without its closing brace, to append keys to."""
    text = _dumps(obj)
    assert text.endswith("}") and len(obj) > 0
    return text[:-1]


def write_json(run: Run, out: TextIO, samples: bool = False) -> None:
    """The canonical JSON export of `run` (schema SCHEMA, SCHEMA_VERSION)."""
    t_std = run.t_std_ns
    head = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "rtbench_version": __version__}
    out.write(_open(head) + ',"run":' + _dumps(run_header(run)) + ',"cases":[')
    for ci, c in enumerate(run.cases):
        out.write(("," if ci else "") + _open(case_header(c)) + ',"series":[')
        for si, s in enumerate(c.series):
            out.write(("," if si else "") + _open(series_header(s, t_std)) + ',"samples":')
            if samples and s.chunked is not None:
                out.write("[")
                for part in _sample_text(s.chunked):
                    out.write(part)
                out.write("]")
            else:
                out.write("null")
            out.write("}")
        out.write("]}")
    out.write("]}\n")


def _cell(value: Any) -> Any:
    if isinstance(value, float):
        return f"{value:.10g}" if np.isfinite(value) else ""
    return "" if value is None else value


def csv_rows(run: Run) -> Iterator[dict[str, Any]]:
    t_std = run.t_std_ns
    for c in run.cases:
        for s in c.series:
            st = series_stats(s, sigma3=True)
            scores = _scores(s, t_std)
            row: dict[str, Any] = {
                "run_id": run.id,
                "started_at": run.started_at,
                "target": run.target,
                "realtime": int(run.realtime),
                "case": c.case,
                "series": s.name,
                "point": point_key(s.point),
                "kind": s.kind,
                "unit": s.unit,
                "stats_source": st.source,
                "percentiles_bounded": int(st.bounded),
                "score_mean": scores["mean"],
                "score_max": scores["max"],
                "dropped": s.dropped,
                "holes": s.holes,
                "filtered_out": st.filtered_out,
                "run_uuid": run.uuid,
            }
            for name in ("n", "min", "mean", "stddev", *PCT_NAMES.values(), "max", "max_3sigma"):
                row[name] = st.value(name)
            row["n"] = s.n
            yield {k: _cell(v) for k, v in row.items()}


def write_csv(run: Run, out: TextIO) -> None:
    """One row per series: the statistics in the series' unit (ns)."""
    w = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    for row in csv_rows(run):
        w.writerow(row)


# --- reading back -------------------------------------------------------------


class ExportError(ValueError):
    """A file that is not an rtbench export this version reads."""


_MISSING = object()


def _get(d: dict[str, Any], key: str, t: schema.Type, default: Any = _MISSING) -> Any:
    """d[key] of the wire format's type `t` (the stream's schema: an import
    must not store what a stream could not): SchemaError, a ValueError, else."""
    if not isinstance(d, dict):
        raise schema.SchemaError(f"expected an object holding {key!r}, not {type(d).__name__}")
    value = d.get(key)
    if value is None and default is not _MISSING:
        return default
    schema.conform(t, value, key)
    return value


def _samples(case: str, d: dict[str, Any]) -> Int64Array | None:
    """The raw samples: whole numbers within int64, as the agent measures
    them (a float would be cut to an integer, 2**80 overflow)."""
    samples = d.get("samples")
    if samples is None:
        return None
    where = f"{case}.{d.get('name')}: samples"
    if not isinstance(samples, list):
        raise schema.SchemaError(f"{where}: expected a list, not {type(samples).__name__}")
    for i, v in enumerate(samples):
        if type(v) is not int or not schema.I64_MIN <= v <= schema.I64_MAX:
            raise schema.SchemaError(f"{where}[{i}]: {v!r} is not a 64-bit whole number")
    return np.asarray(samples, dtype=np.int64)


def _hist(case: str, d: dict[str, Any]) -> dict[str, Any] | None:
    """The histogram, checked as the stream's `hist` record is: its counts
    add up to n, its min is not above its max, its buckets fit its layout."""
    hist = _get(d, "hist", schema.any_object, None)
    if hist is None:
        return None
    name = _get(d, "name", schema.text)
    problem = schema.check_record("hist", {"case": case, "series": name, **hist})
    if problem is not None:
        raise schema.SchemaError(f"{case}.{name}: hist: {problem[1]}")
    return dict(hist)


def _series(case: str, d: dict[str, Any]) -> Series:
    low, high = _get(d, "min", schema.WIRE_INT, None), _get(d, "max", schema.WIRE_INT, None)
    if low is not None and high is not None and low > high:
        name = _get(d, "name", schema.text)
        raise schema.SchemaError(f"{case}.{name}: min {low} is above max {high}")
    return Series(
        case=case,
        name=_get(d, "name", schema.text),
        point=_get(d, "point", schema.point, {}),
        unit=_get(d, "unit", schema.text, "ns"),
        samples=_samples(case, d),
        holes=_get(d, "holes", _ANY_INT, 0),
        hist=hist_from_dict(_hist(case, d)),
        n=_get(d, "n", schema.U64),
        min=_get(d, "min", schema.WIRE_INT, None),
        max=_get(d, "max", schema.WIRE_INT, None),
        sum=_get(d, "sum", schema.SUM),
        dropped=_get(d, "dropped", schema.U64, 0),
        kind=_get(d, "kind", schema.kind_name, ""),
        attrs=_get(d, "attrs", schema.point, {}),
    )


def _case(d: dict[str, Any]) -> CaseResult:
    cid = _get(d, "case", schema.text)
    verdict = schema.choice(*schema.VERDICTS)
    return CaseResult(
        case=cid,
        title=_get(d, "title", schema.text, ""),
        params=_get(d, "params", schema.any_object, {}),
        outcome=_get(d, "outcome", schema.choice(*schema.OUTCOMES)),
        duration_ns=_get(d, "duration_ns", schema.WIRE_INT, 0),
        reason=_get(d, "reason", schema.text, ""),
        series=[_series(cid, s) for s in d.get("series", [])],
        checks=[
            Check(
                cid,
                _get(ch, "name", schema.text),
                _get(ch, "verdict", verdict),
                ch.get("detail", ""),
            )
            for ch in d["checks"]
        ],
        warnings=[Warning(w["code"], w.get("detail", ""), cid) for w in d.get("warnings", [])],
    )


def _identity(r: dict[str, Any]) -> str:
    """The run's identity; "" in an export written before identities (the
    importer then takes the file's digest)."""
    value = r.get("uuid")
    if value in (None, ""):
        return ""
    parsed = identity.parse(value)
    if parsed is None:
        raise ExportError(f"damaged export: run.uuid {value!r} is not a UUID")
    return parsed


def run_from_export(doc: dict[str, Any]) -> Run:
    """The Run an export describes (the derived figures are recomputed, not read)."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ExportError(f'not an rtbench export (no "schema": "{SCHEMA}")')
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ExportError(f"export schema version {version!r}; this rtbench reads {SCHEMA_VERSION}")
    try:
        r = doc["run"]
        return Run(
            hello=_get(r, "hello", schema.any_object, {}),
            cases=[_case(c) for c in doc["cases"]],
            warnings=[
                Warning(w["code"], w.get("detail", ""), w.get("case")) for w in r["warnings"]
            ],
            issues=[StreamIssue(i["kind"], i["detail"], i.get("line")) for i in r["issues"]],
            bye=_get(r, "bye", schema.any_object, None),
            log=list(r.get("log", [])),
            started_at=r.get("started_at", ""),
            target=r.get("target", "import"),
            labels=dict(r.get("labels", {})),
            machine=_get(r, "machine", schema.any_object, {}),
            source=r.get("source", ""),
            uuid=_identity(r),
        )
    except ExportError:
        raise
    except schema.SchemaError as e:
        raise ExportError(f"damaged export: {e}") from e
    except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as e:
        raise ExportError(f"damaged export: {type(e).__name__}: {e}") from e


def read_json(path: str | Path) -> Run:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ExportError(f"cannot read {path}: {e}") from e
    except RecursionError:
        raise ExportError(f"cannot read {path}: damaged export: nested too deeply") from None
    return run_from_export(doc)
