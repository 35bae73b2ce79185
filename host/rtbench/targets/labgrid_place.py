"""Holding a labgrid place: acquire, learn its resources, release, whatever
ends rtbench.

Every exchange with the coordinator goes through labgrid's own client,
`labgrid-client` (run as `python -m labgrid.remote.client` of the labgrid
rtbench imports), not its Python classes: the client's commands are
labgrid's documented, stable interface, while its `ClientSession` is
driven by argparse arguments and shares one asyncio loop per process,
which the threads of a campaign running several places at once must not
share.

Release on every exit path: right after the place is acquired a small
guard process is started in its own session, holding a pipe from rtbench.
When the pipe closes (rtbench releases the place, returns, raises, is
interrupted or is killed outright, even with SIGKILL) the guard runs
`labgrid-client release`. Only a guard killed too leaves the place
acquired; then `labgrid-client -p PLACE release` (the same user) or
`release --kick` (anyone) reclaims it (docs/lab.md).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from typing import Any

from rtbench.targets import TargetError

DEFAULT_COORDINATOR = "127.0.0.1:20408"
CLIENT_TIMEOUT_S = 120.0
# The guard's script: wait for the pipe to close, then release.
_GUARD = 'cat >/dev/null; exec "$@"'


def client_argv(coordinator: str) -> list[str]:
    return [sys.executable, "-m", "labgrid.remote.client", "-x", coordinator]


class Place:
    """One place of a labgrid coordinator, held between acquire() and release()."""

    def __init__(self, name: str, coordinator: str) -> None:
        self.name = name
        self.coordinator = coordinator
        self.guard: subprocess.Popen[bytes] | None = None

    def _client(self, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [*client_argv(self.coordinator), "-p", self.name, *args]
        try:
            return subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=CLIENT_TIMEOUT_S,
                check=False,
                # The place is named on the command line; LG_ENV would make
                # the client act on the places of an environment file instead.
                env={k: v for k, v in os.environ.items() if k not in ("LG_ENV", "LG_PLACE")},
            )
        except subprocess.TimeoutExpired:
            raise TargetError(
                f"labgrid place {self.name}: the coordinator at {self.coordinator} did not "
                f"answer `{args[0]}` within {CLIENT_TIMEOUT_S:.0f} s"
            ) from None

    def _failed(self, what: str, proc: subprocess.CompletedProcess[str]) -> TargetError:
        said = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        detail = said[-1] if said else f"labgrid-client exited {proc.returncode}"
        return TargetError(f"labgrid place {self.name} ({self.coordinator}): {what}: {detail}")

    def show(self) -> str:
        """The coordinator's description of the place (reachability check)."""
        proc = self._client("show")
        if proc.returncode != 0:
            raise self._failed("cannot see it", proc)
        return proc.stdout

    def acquire(self) -> None:
        proc = self._client("acquire")
        if proc.returncode != 0:
            raise self._failed("cannot acquire it", proc)
        try:
            self.guard = subprocess.Popen(
                ["sh", "-c", _GUARD, "rtbench-release", *client_argv(self.coordinator),
                 "-p", self.name, "release"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                # Its own session: a Ctrl-C at the terminal reaches rtbench,
                # which releases; the guard waits for the pipe alone.
                start_new_session=True,
            )
        except OSError as e:
            self._client("release")
            raise TargetError(f"labgrid place {self.name}: cannot start its guard: {e}") from e

    def resources(self) -> list[Any]:
        """The place's resources as a labgrid environment lists them
        (`labgrid-client env`): e.g. NetworkSerialPort with host and port."""
        proc = self._client("env")
        if proc.returncode != 0:
            raise self._failed("cannot read its resources", proc)
        import yaml  # the `lab` extra's, like labgrid (require_labgrid checked it)

        try:
            doc = yaml.safe_load(proc.stdout)
            resources = doc["targets"][self.name]["resources"]
        except (yaml.YAMLError, KeyError, TypeError) as e:
            raise TargetError(
                f"labgrid place {self.name}: unexpected `labgrid-client env` output ({e})"
            ) from None
        if not isinstance(resources, list | dict) or not resources:
            raise TargetError(f"labgrid place {self.name} has no resources (add matches to it)")
        return list(resources) if isinstance(resources, list) else [resources]

    def release(self) -> str | None:
        """Releases the place (through its guard); None, or why it failed."""
        guard, self.guard = self.guard, None
        if guard is None:
            return None
        assert guard.stdin is not None
        with contextlib.suppress(OSError):
            guard.stdin.close()
        try:
            code = guard.wait(timeout=CLIENT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return (
                f"labgrid place {self.name}: the release did not finish in "
                f"{CLIENT_TIMEOUT_S:.0f} s; `labgrid-client -p {self.name} release` frees it"
            )
        if code != 0:
            return (
                f"labgrid place {self.name}: release failed (labgrid-client exited {code}); "
                f"`labgrid-client -p {self.name} release` frees it"
            )
        return None
