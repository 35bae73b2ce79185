"""A result several test modules read, taken once per test run.

Under xdist (`--dist loadfile`) the modules run on different workers, so a
session fixture would take it once per worker: an emulated board's whole
quick suite twice, say. `once` takes it in the first worker that asks,
under a lock in the run's lock folder (tests/exclusive.py), and leaves it
there pickled; a worker asking later waits for it and reads it. Only for
results that do not depend on when or where they are taken (a board under
-icount gives the same figures twice: tests/e2e/test_target_freertos.py's
test_icount_gives_the_same_figures_twice), and that the tests only read.
A computation that fails leaves nothing: the next test to ask tries again
(and fails or skips with its own reason). Without xdist, once per process.
"""

from __future__ import annotations

import fcntl
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import exclusive
import pytest

T = TypeVar("T")

_taken: dict[str, Any] = {}


def once(config: pytest.Config, key: str, take: Callable[[], T]) -> T:
    """`take()`'s result, taken once for the whole run under the name `key`."""
    if key in _taken:
        return cast(T, _taken[key])
    workerinput = getattr(config, "workerinput", None)
    folder = None if workerinput is None else workerinput.get(exclusive.WORKERINPUT_KEY)
    if folder is None:
        value = take()
    else:
        kept = Path(folder) / f"{key}.pickle"
        fd = os.open(Path(folder) / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if kept.is_file():
                value = pickle.loads(kept.read_bytes())
            else:
                value = take()
                part = kept.with_suffix(".part")
                part.write_bytes(pickle.dumps(value))
                part.replace(kept)
        finally:
            os.close(fd)  # and with it the lock
    _taken[key] = value
    return value
