"""Stored values, read defensively.

The store holds what a run held when it was saved: runs saved before the
stream had a schema, imported from a file, or built by another tool may
carry values the wire format does not allow (a histogram layout this host
does not know, a bucket index of 2**34, counts that do not add up). Every
figure, chart and export goes through these checks first, so that such a
run is shown with the part that cannot be used named, never a crash.
"""

from __future__ import annotations

from typing import Any

from rtbench.model import Histogram, Series
from rtbench.stream.schema import I64_MAX, check_hist


def hist_problem(h: Histogram) -> str | None:
    """Why the analysis cannot use this histogram; None when it can."""
    counts = h.counts if isinstance(h.counts, list | tuple) else None
    if counts is None:
        return f"counts are {type(h.counts).__name__}, not [index, count] pairs"
    body = h.as_record()
    problem = check_hist(body)
    if problem is not None:
        return problem[1].replace(" (newer agent?)", "")
    if h.n > I64_MAX:  # numpy counts are int64
        return f"n = {h.n} is beyond what the analysis counts (int64)"
    return None


def usable_hist(s: Series) -> Histogram | None:
    """The series' histogram when the analysis can bucket it, else None."""
    if s.hist is None or hist_problem(s.hist) is not None:
        return None
    return s.hist


def hist_note(s: Series) -> str | None:
    """'histogram not used: ...' for a series whose histogram is unusable."""
    if s.hist is None:
        return None
    problem = hist_problem(s.hist)
    return None if problem is None else f"hist not used: {problem}"


def dig(obj: Any, *keys: str) -> Any:
    """obj[k1][k2]...; None when a level is missing or not an object."""
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj
