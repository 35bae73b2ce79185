"""Where the runs are: an SQLite file (the default) or a PostgreSQL database.

`locate` turns what the user gave (`--db`, `$RTBENCH_DB`, nothing) into a
`StoreLocation`; the journals of runs being measured for that store go to
`StoreLocation.journal_dir` on this host (`rtbench.run.journal`).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import platformdirs

ENV_VAR = "RTBENCH_DB"
FILE_NAME = "rtbench.sqlite"
POSTGRES_SCHEMES = ("postgresql", "postgres")

PathArg = str | os.PathLike[str]


class LocationError(ValueError):
    """A store location that names no store rtbench can open."""


@dataclass(frozen=True)
class StoreLocation:
    """An SQLite file (`path`) or a PostgreSQL connection URL (`url`)."""

    path: Path | None = None
    url: str | None = None

    @property
    def kind(self) -> str:
        return "postgresql" if self.url is not None else "sqlite"

    @property
    def key(self) -> str:
        """What names this store in a journal's header: the resolved file,
        or the URL without its password (journals are plain files)."""
        if self.url is not None:
            return redact(self.url)
        assert self.path is not None
        return str(self.path.resolve())

    @property
    def journal_dir(self) -> Path:
        """Where this host journals the runs it measures for this store: beside
        the file, or (a database on another machine) in the user's data dir."""
        if self.path is not None:
            return self.path.parent / f"{self.path.name}.journals"
        key = self.key
        parts = urlsplit(key)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{parts.hostname or 'local'}-{parts.path}")
        digest = hashlib.sha256(key.encode()).hexdigest()[:12]
        return (
            platformdirs.user_data_path("rtbench") / "journals" / f"pg-{name.strip('-')}-{digest}"
        )

    def __str__(self) -> str:
        return self.key if self.url is not None else str(self.path)


def redact(url: str) -> str:
    """The URL without a password, in its user part or in its parameters."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}@{host}"
    query = "&".join(p for p in parts.query.split("&") if not p.startswith("password="))
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def is_url(text: str) -> bool:
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text) is not None


def default_store_path(explicit: PathArg | None = None) -> Path:
    """The SQLite file: `explicit`, else $RTBENCH_DB, else the user data dir's."""
    if explicit is not None:
        return Path(explicit).expanduser()
    env = os.environ.get(ENV_VAR, "")
    if env:
        return Path(env).expanduser()
    return platformdirs.user_data_path("rtbench") / FILE_NAME


def locate(explicit: PathArg | StoreLocation | None = None) -> StoreLocation:
    """The store: `explicit`, else $RTBENCH_DB, else the default SQLite file.

    A `postgresql://` (or `postgres://`) URL is a PostgreSQL database; any
    other URL is refused; anything else is a file path.
    """
    if isinstance(explicit, StoreLocation):
        return explicit
    text = os.fspath(explicit) if explicit is not None else os.environ.get(ENV_VAR, "")
    if isinstance(text, str) and is_url(text):
        scheme = text.split("://", 1)[0].lower()
        if scheme not in POSTGRES_SCHEMES:
            raise LocationError(
                f"{redact(text)!r}: a store is an SQLite file path or a postgresql:// URL"
            )
        return StoreLocation(url=text)
    return StoreLocation(path=default_store_path(explicit))
