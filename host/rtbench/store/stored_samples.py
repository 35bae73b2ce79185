"""A stored series' raw samples read a chunk at a time (ChunkedSamples), so
that showing, analysing or reporting a long run never holds its samples
whole. Shared by every backend: plain SELECTs in SQLite's SQL."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np

from rtbench.model import ChunkedSamples, Int64Array
from rtbench.store.backend import Backend
from rtbench.store.codec import StoreError, decode_into
from rtbench.store.location import StoreLocation

# A series this short is read whole when its run is loaded (8 MiB): a quick
# run's hundred series cost one query each, and its samples cannot vanish
# with a run deleted after the load.
EAGER_SAMPLES = 1 << 20
# Chunks fetched a query at a time (the compressed blobs of 32 chunks: a
# few MiB at most, whatever the series' length).
_BATCH = 32

_SELECT = (
    "SELECT seq, n, enc, data FROM chunks WHERE run_id = ? AND case_pos = ? AND series_pos = ?"
    " AND seq >= ? ORDER BY seq LIMIT ?"
)


def read_whole(db: Backend, where: tuple[int, int, int], total: int, name: str) -> Int64Array:
    """A series' stored samples in one array, each chunk decoded straight
    into its place (the only copy)."""
    out = np.empty(total, dtype=np.int64)
    at = 0
    for n, enc, data in _chunks(db, where, name):
        if at + n > total:
            raise StoreError(f"damaged store: series {name} has more than {total} samples")
        decode_into(out[at : at + n], data, enc)
        at += n
    if at != total:
        raise StoreError(f"damaged store: series {name} has {at} of {total} samples")
    return out


def _chunks(
    db: Backend, where: tuple[int, int, int], name: str
) -> Iterator[tuple[int, str, bytes]]:
    """(n, encoding, blob) of each chunk in order, a batch a query."""
    seq = 0
    while True:
        rows = db.rows(_SELECT, (*where, seq, _BATCH))
        for r in rows:
            if int(r["seq"]) != seq:
                raise StoreError(f"damaged store: series {name} lacks its chunk {seq}")
            yield int(r["n"]), str(r["enc"]), bytes(r["data"])
            seq += 1
        if len(rows) < _BATCH:
            return


# Connections the series read by chunk share, one per store and thread: a
# run of a hundred long series must not open a hundred (a PostgreSQL server
# allows about that many in all).
_READERS: dict[tuple[str, float, int], Backend] = {}


def _reader(location: StoreLocation, timeout: float) -> Backend:
    key = (str(location), timeout, threading.get_ident())
    if key not in _READERS:
        from rtbench.store.store import open_backend  # the store imports the rows

        _READERS[key] = open_backend(location, timeout)
    return _READERS[key]


class StoredSamples(ChunkedSamples):
    """The samples of one stored series, decoded a chunk at a time on each
    pass over them, through a connection of their own (the store that loaded
    the run may be closed by then), shared by every such series."""

    def __init__(
        self, location: StoreLocation, timeout: float, where: tuple[int, int, int], total: int,
        name: str,
    ) -> None:  # fmt: skip
        self.location, self.timeout = location, timeout
        self.where, self.total, self.name = where, total, name

    def __len__(self) -> int:
        return self.total

    def chunks(self) -> Iterator[Int64Array]:
        db = _reader(self.location, self.timeout)
        at = 0
        try:
            for n, enc, data in _chunks(db, self.where, self.name):
                if at + n > self.total:
                    raise StoreError(
                        f"damaged store: series {self.name} has more than {self.total} samples"
                    )
                out = np.empty(n, dtype=np.int64)
                decode_into(out, data, enc)
                at += n
                yield out
        except db.errors as e:
            raise db.store_error(e) from e
        if at != self.total:
            raise StoreError(
                f"series {self.name}: {at} of its {self.total} samples are in the store"
                " (the run was deleted or damaged after it was loaded)"
            )
