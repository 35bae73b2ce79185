"""A real PostgreSQL server for the tests: `initdb` and `postgres` (Debian's
`postgresql` package) in a temporary directory, listening on a free port of
127.0.0.1 and on a unix socket in that directory, stopped (SIGQUIT: an
immediate shutdown) and removed afterwards. The server is a child of the
tests (`postgres`, not `pg_ctl start`, which detaches it) and gets that
SIGQUIT from the kernel too when the tests end otherwise, even killed.

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
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tools
from helpers import die_with_parent, free_port

REQUIRE_ENV = "RTBENCH_REQUIRE_POSTGRES"
SUPERUSER = "rtbench"


# Durability is no concern of a server that lives for one test session.
FAST = ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]


TOOLS = ("initdb", "postgres", "pg_isready")


def find_bindir() -> Path | None:
    """The directory with initdb, postgres and pg_isready: initdb's on $PATH
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
        hint = tools.install_hint(["postgresql"])
        return f"no PostgreSQL server binaries (initdb, postgres): {hint}"
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
        self._server: subprocess.Popen[bytes] | None = None

    def _as_server_user(self, *, dying: bool = False) -> Callable[[], None] | None:
        """preexec_fn: the server's user; with `dying`, an immediate shutdown
        when the tests' process ends."""
        user = self.user
        if user is None and not dying:
            return None

        def drop() -> None:
            if user is not None:
                os.setgroups([])
                os.setresgid(user.pw_gid, user.pw_gid, user.pw_gid)
                os.setresuid(user.pw_uid, user.pw_uid, user.pw_uid)
            if dying:
                die_with_parent(signal.SIGQUIT)

        return drop

    def _env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"}

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=self.root,
            env=self._env(),
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
            options = [] if self.durable else FAST
            with open(self.root / "server.log", "ab") as log:
                self._server = subprocess.Popen(
                    [str(self.bindir / "postgres"), "-D", str(self.data), "-p", str(self.port),
                     "-k", str(self.sockets), "-c", "listen_addresses=127.0.0.1",
                     "-c", "max_connections=50", *options],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=self.root,
                    env=self._env(), preexec_fn=self._as_server_user(dying=True),
                )  # fmt: skip
            if self._wait_ready():
                return
            self.stop()
            if attempt == 2:
                self._check(subprocess.CompletedProcess([], 1, "", "it ended"), "postgres")

    def _wait_ready(self) -> bool:
        """Whether the server came up (False: it ended, its port taken)."""
        deadline = time.monotonic() + 60
        while True:
            proc = self._run("pg_isready", "-h", str(self.sockets), "-p", str(self.port), "-q")
            if proc.returncode == 0:
                return True
            assert self._server is not None
            if self._server.poll() is not None:
                return False
            if time.monotonic() > deadline:
                self._check(proc, "pg_isready")
            time.sleep(0.1)

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None and server.poll() is None:
            server.send_signal(signal.SIGQUIT)  # an immediate shutdown
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()

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
