"""The run store: runs saved in, and loaded back from, an SQLite file (the
default) or a PostgreSQL database that many hosts share (docs/store.md)."""

from rtbench.store.backend import TIMEOUT_ENV_VAR, busy_timeout
from rtbench.store.codec import (
    SAMPLES_ENCODING,
    AlreadyStored,
    StoreBusy,
    StoreError,
    decode_samples,
    encode_samples,
)
from rtbench.store.location import ENV_VAR, StoreLocation, default_store_path, locate
from rtbench.store.rows import kernel_release
from rtbench.store.store import RunSummary, Store

__all__ = [
    "ENV_VAR",
    "SAMPLES_ENCODING",
    "TIMEOUT_ENV_VAR",
    "AlreadyStored",
    "RunSummary",
    "Store",
    "StoreBusy",
    "StoreError",
    "StoreLocation",
    "busy_timeout",
    "decode_samples",
    "default_store_path",
    "encode_samples",
    "kernel_release",
    "locate",
]
