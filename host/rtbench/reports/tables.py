"""Tables for the terminal and for scripts, from one set of rows.

A `Tabular` holds raw values (numbers in the series' own unit, text) and
how to show each column. `print_table` draws it with rich at the console's
width, never cutting a figure: when the table does not fit, whole columns
are left out, lowest priority first (max and p99 last: the max is the
figure an RT engineer reads first), and the note under the table says
which. Only when even the essential columns do not fit are their numbers
folded onto a second line, never truncated. `to_json` / `to_csv` give the
same rows to scripts (`--format json|csv`): raw figures in the unit the
row's `unit` field names, never the display unit.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

Row = dict[str, Any]
# A column at or above this priority is never left out.
ESSENTIAL = 90


@dataclass
class Column:
    key: str  # the row's key and the JSON/CSV field name
    header: str
    priority: int = 50  # higher: kept longer when the terminal is narrow
    numeric: bool = True
    show: Callable[[Row], str | Text] | None = None  # default: str(row[key])
    bold: bool = False

    def cell(self, row: Row) -> Text:
        value = self.show(row) if self.show else _plain(row.get(self.key))
        text = value if isinstance(value, Text) else Text(value)
        if self.bold:
            text.stylize("bold")
        return text


@dataclass
class Tabular:
    title: str
    columns: list[Column]
    rows: list[Row] = field(default_factory=list)
    # JSON/CSV fields beyond the columns (e.g. the unit, the sweep point).
    extra: Sequence[str] = ()


def _plain(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and math.isnan(value):
        return "-"
    return str(value)


def _table(t: Tabular, columns: list[Column]) -> Table:
    table = Table(title=t.title or None, title_justify="left", header_style="bold")
    for col in columns:
        # Wrapping allowed but a number is one word: its full width is the
        # column's minimum, so rich never truncates it with an ellipsis;
        # "fold" breaks it onto a second line in the last resort.
        table.add_column(
            col.header, justify="right" if col.numeric else "left", overflow="fold", no_wrap=False
        )
    for row in t.rows:
        table.add_row(*(col.cell(row) for col in columns))
    return table


def _min_width(col: Column, cells: list[Text]) -> int:
    """The narrowest the column can be without cutting a word: a number or
    a label is one word; text with spaces may wrap between words."""
    words = col.header.split() + [w for c in cells for w in c.plain.split()]
    return max((cell_len(w) for w in words), default=1)


def fit(t: Tabular, width: int) -> tuple[Table, list[str]]:
    """The table with as many columns as fit `width`; the headers left out."""
    columns = list(t.columns)
    cells = {c.key: [c.cell(row) for row in t.rows] for c in columns}
    dropped: list[str] = []
    while True:
        # rich's default table: each column its cells, a space either side
        # and a rule; one rule more at the right edge
        need = sum(_min_width(c, cells[c.key]) + 3 for c in columns) + 1
        optional = [c for c in columns if c.priority < ESSENTIAL]
        if need <= width or not optional:
            return _table(t, columns), dropped
        # the lowest priority goes first; among equals, the rightmost
        victim = min(reversed(optional), key=lambda c: c.priority)
        columns.remove(victim)
        dropped.append(victim.header)


def print_table(t: Tabular, console: Console) -> None:
    table, dropped = fit(t, console.width)
    console.print(table)
    if dropped:
        console.print(
            Text(
                f"  left out to fit {console.width} columns: {', '.join(dropped)} "
                "(wider terminal or COLUMNS=..., or --format json|csv)",
                style="dim",
            ),
            highlight=False,
        )


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, Text):
        return value.plain
    return value


def records(t: Tabular) -> list[Row]:
    """The rows as scripts get them: every column and extra field, raw."""
    keys = [*dict.fromkeys([c.key for c in t.columns] + list(t.extra))]
    return [{k: _jsonable(row.get(k)) for k in keys} for row in t.rows]


def to_json(doc: dict[str, Any]) -> str:
    """A document of tables (each a `Tabular`) and plain values as JSON."""

    def convert(v: Any) -> Any:
        if isinstance(v, Tabular):
            return records(v)
        if isinstance(v, dict):
            return {k: convert(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [convert(x) for x in v]
        return _jsonable(v)

    return json.dumps(convert(doc), indent=2, ensure_ascii=False) + "\n"


def _csv_cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, dict | list | tuple):
        return json.dumps(v, ensure_ascii=False)  # a point, a list of flags
    return v


def _tables(doc: Any, name: str = "") -> list[tuple[str, Tabular]]:
    """Every Tabular in a document, named by its key path (a.b)."""
    if isinstance(doc, Tabular):
        return [(name, doc)]
    if isinstance(doc, dict):
        return [
            t for k, v in doc.items() for t in _tables(v, f"{name}.{k}" if name else str(k))
        ]
    return []


def tables_to_csv(doc: dict[str, Any], main: Tabular) -> str:
    """Every table of `doc` in one CSV: column `table` first (the document
    key of the row's table), then the union of the tables' fields; `main`'s
    rows first. A field a table does not have is empty."""
    found = _tables(doc) or [("", main)]
    found.sort(key=lambda nt: nt[1] is not main)  # stable: main first, then in order
    keys = ["table"]
    for _, t in found:
        keys += [k for k in dict.fromkeys([c.key for c in t.columns] + list(t.extra))]
    fields = [*dict.fromkeys(keys)]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n", restval="")
    w.writeheader()
    for name, t in found:
        for row in records(t):
            w.writerow({"table": name, **{k: _csv_cell(v) for k, v in row.items()}})
    return buf.getvalue()


def to_csv(t: Tabular) -> str:
    rows = records(t)
    keys = [*dict.fromkeys([c.key for c in t.columns] + list(t.extra))]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: _csv_cell(v) for k, v in row.items()})
    return buf.getvalue()
