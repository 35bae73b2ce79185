"""A run's identity: a UUID made when the run starts (docs/store.md).

The host makes it (`new`), writes it in the run's journal and hands it to
the agent (`--run-id`), which echoes it in its `hello` record; the store
keeps it and every export carries it. "Already stored" is decided by it
alone: recovery, `ingest` and `import` store a run whose identity the store
holds as a no-op that says so. A stream or file that carries none (written
before identities, a board's console captured without a host) gets a
deterministic one, a digest of its content, so taking in the same file twice
is still the same run.
"""

from __future__ import annotations

import hashlib
import uuid

# The namespace of the digest identities (a fixed, random UUID): the same
# content always gives the same identity, and never one a host would make.
_DIGESTS = uuid.UUID("6f1c2d0e-5b7a-4c39-9e57-2a4b8d3f10c6")


def new() -> str:
    """A fresh identity for a run that starts now."""
    return str(uuid.uuid4())


def of_content(data: bytes) -> str:
    """The identity of a stream or file that carries none: its digest."""
    return str(uuid.uuid5(_DIGESTS, hashlib.sha256(data).hexdigest()))


def parse(value: object) -> str | None:
    """`value` as an identity (a UUID, in its canonical text), else None."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None
