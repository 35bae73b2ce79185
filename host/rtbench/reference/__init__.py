"""Published results of the five methods rtbench implements, as reference data.

The datasets ship in the package (data/reference_*.toml, one per
publication, values as published) so that a report can set a user's figure
beside a published one without anything outside the package. Every figure
was measured on other hardware, with another harness: it places a result,
it is not a target. `figures_for` maps an rtbench series to the published
figures of the same indicator.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from rtbench.model import Point

DATASET_IDS = ("A", "B", "C", "D", "E")
OTHER_HARDWARE = "other hardware"
# A published cell: optional qualifier ("<0.1", "~9", "+93"), then a number.
_CELL = re.compile(r"^(?P<q>[<>~]?)\s*(?P<num>[+-]?[0-9]*\.?[0-9]+)$")
NOT_MEASURED = "n/a"


class ReferenceError(ValueError):
    """A dataset file that does not follow the layout (a packaging bug)."""


@dataclass
class ReferenceFigure:
    dataset: str  # "A".."E"
    source: str  # the publication
    hardware: str
    os: str  # the system measured, as the publication names it
    indicator: str  # the published test's name
    value: float
    unit: str  # as published: "us", "ms", "score", "periods", "%"
    stat: str  # "avg" | "max" | "min" | "score" | "count" | "percent" | ...
    case: str | None  # the rtbench case it corresponds to
    series: str | None  # None: any series of the case
    point: dict[str, int | str] = field(default_factory=dict)  # {}: any point
    qualifier: str = ""  # "<" below, ">" above, "~" about (as published)
    published: str = ""  # the value's text as published

    @property
    def label(self) -> str:
        """e.g. 'C, QNX (other hardware): max 6.3 us'."""
        text = self.published or f"{self.qualifier}{self.value:g}"
        unit = {"score": "", "us": " µs"}.get(self.unit, f" {self.unit}")
        return f"{self.dataset}, {self.os} ({OTHER_HARDWARE}): {self.stat} {text}{unit}"

    def matches(self, case: str, series: str, point: Point) -> bool:
        if self.case != case or (self.series is not None and self.series != series):
            return False
        return all(point.get(k) == v for k, v in self.point.items())


@dataclass
class ReferenceDataset:
    id: str
    title: str
    publication: str
    hardware: str
    unit: str
    note: str
    systems: dict[str, str]  # name as published -> full description
    figures: list[ReferenceFigure]
    jitter: list[dict[str, Any]] = field(default_factory=list)  # E's categorical table

    @property
    def provenance(self) -> str:
        return f"{self.publication}; {self.hardware} ({OTHER_HARDWARE}); units as published"


def parse_cell(text: str) -> tuple[str, float] | None:
    """('<', 0.1) for '<0.1'; None for 'n/a'."""
    text = text.strip()
    if text == NOT_MEASURED:
        return None
    m = _CELL.match(text)
    if not m:
        raise ReferenceError(f"cannot read the published value {text!r}")
    return m["q"], float(m["num"])


def _row_figures(doc: dict[str, Any], row: dict[str, Any]) -> list[ReferenceFigure]:
    stats: list[str] = row.get("stats", doc["stats"])
    units: list[str] = row.get("units", [row.get("unit", doc["unit"])] * len(stats))
    figures = []
    for os_name, cell in row["values"].items():
        if os_name not in doc["systems"]:
            raise ReferenceError(f"{doc['id']}: {row['test']}: unknown system {os_name!r}")
        parts = [p.strip() for p in cell.split("/")] if cell != NOT_MEASURED else []
        if parts and len(parts) != len(stats):
            raise ReferenceError(f"{doc['id']}: {row['test']}: {cell!r} is not {stats}")
        for stat, unit, text in zip(stats, units, parts, strict=False):
            parsed = parse_cell(text)
            if parsed is None:
                continue
            qualifier, value = parsed
            figures.append(
                ReferenceFigure(
                    dataset=doc["id"],
                    source=doc["publication"],
                    hardware=doc["hardware"],
                    os=os_name,
                    indicator=row["test"],
                    value=value,
                    unit=unit,
                    stat=stat,
                    case=row.get("case"),
                    series=row.get("series"),
                    point=dict(row.get("point", {})),
                    qualifier=qualifier,
                    published=text,
                )
            )
    return figures


def _jitter_figures(doc: dict[str, Any]) -> list[ReferenceFigure]:
    (os_name,) = doc["systems"]
    return [
        ReferenceFigure(
            dataset=doc["id"],
            source=doc["publication"],
            hardware=doc["hardware"],
            os=os_name,
            indicator=f"jitter {b['bin']} µs",
            value=float(b["count"]),
            unit="periods",
            stat="count",
            case="JIT-PER",
            series="deviation",
            published=str(b["count"]),
        )
        for b in doc.get("jitter", [])
    ]


def parse_dataset(doc: dict[str, Any]) -> ReferenceDataset:
    try:
        figures = [f for row in doc.get("row", []) for f in _row_figures(doc, row)]
        figures += _jitter_figures(doc) if doc.get("jitter") else []
        return ReferenceDataset(
            id=doc["id"],
            title=doc["title"],
            publication=doc["publication"],
            hardware=doc["hardware"],
            unit=doc["unit"],
            note=doc.get("note", ""),
            systems=dict(doc["systems"]),
            figures=figures,
            jitter=list(doc.get("jitter", [])),
        )
    except KeyError as e:
        raise ReferenceError(f"dataset {doc.get('id', '?')}: missing key {e}") from e


@cache
def _load_all() -> tuple[ReferenceDataset, ...]:
    base = resources.files("rtbench").joinpath("data")
    out = []
    for ds_id in DATASET_IDS:
        text = base.joinpath(f"reference_{ds_id.lower()}.toml").read_text("utf-8")
        out.append(parse_dataset(tomllib.loads(text)))
    return tuple(out)


def load_datasets() -> list[ReferenceDataset]:
    """Every shipped dataset, A to E, with its provenance."""
    return list(_load_all())


def figures_for(case: str, series: str, point: Point) -> list[ReferenceFigure]:
    """The published figures of the indicator an rtbench series measures."""
    return [f for ds in _load_all() for f in ds.figures if f.matches(case, series, point)]
