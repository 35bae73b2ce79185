"""A real PostgreSQL server for the tests: `initdb` and `pg_ctl` (Debian's
`postgresql` package) in a temporary directory, listening on a free port of
127.0.0.1 and on a unix socket in that directory, stopped (`pg_ctl stop -m
immediate`) and removed afterwards.

PostgreSQL refuses to run as root. As root, the server runs as the user
`postgres` (the Debian package creates it) or, where there is none, as
`nobody`; the temporary directory is handed to that user. As anyone else it
runs as the tests' own user. Either way the server trusts local connections
(`--auth=trust`) from its superuser `rtbench`: it lives only as long as the
tests, in a directory only its user can enter.

Without the binaries (or psycopg) the PostgreSQL tests skip, with the
reason, unless RTBENCH_REQUIRE_POSTGRES=1 (set by .ci/run): then they fail.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tools
from helpers import free_port

REQUIRE_ENV = "RTBENCH_REQUIRE_POSTGRES"
SUPERUSER = "rtbench"
# Durability is no concern of a server that lives for one test session.
FAST = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"


TOOLS = ("initdb", "pg_ctl", "pg_isready")


def find_bindir() -> Path | None:
    """The directory with initdb, pg_ctl and pg_isready: initdb's on $PATH
    (a symlink followed), else Debian's, the newest version first."""
    found = shutil.which("initdb")
    dirs = [str(Path(found).resolve().parent)] if found else []
    debian = glob.glob("/usr/lib/postgresql/*/bin")
    dirs += sorted(debian, key=lambda d: int(d.split("/")[-2]), reverse=True)
    for d in dirs:
        if all(Path(d, tool).is_file() for tool in TOOLS):
            return Path(d)
    return None


def missing() -> str:
    """Why the PostgreSQL tests cannot run here ('' when they can)."""
    try:
        import psycopg  # noqa: F401
    except ImportError as e:
        return f"psycopg is not installed ({e}): pip install -e '.[dev]'"
    if find_bindir() is None:
        return "no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql"
    return ""


def required() -> bool:
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0") or tools.required()


def _server_user() -> pwd.struct_passwd | None:
    """Who runs the server: None for the tests' own user (not root)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root, but there is neither a `postgres` nor a `nobody` user")


class PostgresServer:
    """One server in its own temporary directory (`start`, then `stop`)."""

    def __init__(self, *, durable: bool = False) -> None:
        """`durable`: fsync and full commits as a real server has them (the
        benchmarks); the tests' server does without."""
        bindir = find_bindir()
        assert bindir is not None
        self.bindir = bindir
        self.user = _server_user()
        self.root = Path(tempfile.mkdtemp(prefix="rtbench-pg-"))
        self.data = self.root / "data"
        self.sockets = self.root / "sock"
        self.sockets.mkdir()
        if self.user is not None:
            for p in (self.root, self.sockets):
                os.chown(p, self.user.pw_uid, self.user.pw_gid)
        self.durable = durable
        self.port = 0
        self._names = itertools.count(1)
        self._started = False

    def _as_server_user(self) -> Callable[[], None] | None:
        user = self.user
        if user is None:
            return None

        def drop() -> None:
            os.setgroups([])
            os.setresgid(user.pw_gid, user.pw_gid, user.pw_gid)
            os.setresuid(user.pw_uid, user.pw_uid, user.pw_uid)

        return drop

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"}
        return subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=self.root,
            env=env,
            preexec_fn=self._as_server_user(),
        )

    def _check(self, proc: subprocess.CompletedProcess[str], what: str) -> None:
        if proc.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise RuntimeError(f"{what} failed ({proc.returncode}): {proc.stderr}\n{tail}")

    def start(self) -> None:
        proc = self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--no-locale",
            "--no-sync",
        )
        self._check(proc, "initdb")
        for attempt in range(3):  # the free port may be taken before the server binds it
            self.port = free_port()
            options = (
                f"-p {self.port} -k {self.sockets} -c listen_addresses=127.0.0.1 "
                f"{'' if self.durable else FAST} -c max_connections=50"
            )
            proc = self._run(
                "pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"),
                "-w", "-t", "60", "-o", options, "start",
            )  # fmt: skip
            self._started = True
            if proc.returncode == 0:
                break
            self.stop()
            if attempt == 2:
                self._check(proc, "pg_ctl start")
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while True:
            proc = self._run("pg_isready", "-h", str(self.sockets), "-p", str(self.port), "-q")
            if proc.returncode == 0:
                return
            if time.monotonic() > deadline:
                self._check(proc, "pg_isready")
            time.sleep(0.1)

    def stop(self) -> None:
        if self._started:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=60)
            self._started = False

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    # -- databases --

    def url(self, dbname: str = "postgres", *, tcp: bool = False) -> str:
        """A URL of a database: over TCP, or (the default) over the socket."""
        if tcp:
            return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{dbname}"
        return f"postgresql://{SUPERUSER}@/{dbname}?host={self.sockets}&port={self.port}"

    def connect(self, dbname: str = "postgres") -> Any:
        """A plain psycopg connection (autocommit) to a database."""
        import psycopg

        return psycopg.connect(self.url(dbname), autocommit=True)

    def create_database(self) -> str:
        """A new, empty database; its name."""
        name = f"t{os.getpid()}_{next(self._names)}"
        with self.connect() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name
