"""The run store: runs saved in, and loaded back from, one SQLite file."""

from rtbench.store.sqlite import (
    ENV_VAR,
    SAMPLES_ENCODING,
    RunSummary,
    Store,
    StoreError,
    decode_samples,
    default_store_path,
    encode_samples,
    kernel_release,
)

__all__ = [
    "ENV_VAR",
    "SAMPLES_ENCODING",
    "RunSummary",
    "Store",
    "StoreError",
    "decode_samples",
    "default_store_path",
    "encode_samples",
    "kernel_release",
]
