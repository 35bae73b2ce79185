"""Runs the agent on another machine through the system `ssh`.

The agent must never outlive the run, whatever ends it: the host's Ctrl-C,
the host killed, the link cut, sshd killed. sshd sends no signal when a
session without a terminal ends, but it does close the session's stdin. So
the agent is started by a small remote wrapper that puts it in its own
process group, watches its own stdin, and kills that group when stdin
reaches its end. The host keeps ssh's stdin open for the whole run and
closes it to stop the agent; a dead host or a cut link closes it too.

The wrapper also gives the agent a fresh working and temporary folder
(TMPDIR: the `io` load writes there) and removes it afterwards.
"""

from __future__ import annotations

import contextlib
import shlex
import subprocess
from collections.abc import Callable
from typing import Any

from rtbench.machine.probe_remote import probe_over
from rtbench.model import Run
from rtbench.targets.guest_trace import DUMP_SCRIPT, SETUP_SCRIPT, Received, Request, attach
from rtbench.transports.process import ChildTransport

# Exit status of the wrapper when it cannot even start the agent.
WRAPPER_FAILED = 125

# $1 the agent, $2 the folder for per-run folders, then the agent's arguments.
# Background jobs of a non-interactive shell read /dev/null, hence fd 3.
WRAPPER = r"""
exe=$1; base=$2; shift 2
run=$(mktemp -d "$base/run.XXXXXX") || exit 125
cd "$run" || exit 125
TMPDIR=$run; export TMPDIR
{TRACE_SETUP}exec 3<&0
if command -v setsid >/dev/null 2>&1; then
  setsid "$exe" "$@" </dev/null &
else
  "$exe" "$@" </dev/null &
fi
pid=$!
(
  while read -r _ <&3; do :; done
  kill -TERM -"$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
  sleep 2
  kill -KILL -"$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
) >/dev/null 2>&1 &
watch=$!
exec 3<&-
trap 'kill -KILL -"$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null' HUP INT TERM PIPE
wait "$pid"; status=$?
kill "$watch" 2>/dev/null
{TRACE_DUMP}cd / && rm -rf "$run"
exit "$status"
"""


# Lines of the wrapper's own on the stream (the trace), not the agent's.
MARKER = "rtbench-ssh:"
_MARK = MARKER.encode()

# --trace: a private instance of the target's tracefs (mounted if it is
# not, unmounted after), set up as a QEMU guest's top level is
# (targets/guest_trace.py), the agent writing its marks there; after the
# agent, its buffers go back on the stream as marker lines and the
# instance is removed.
TRACE_PROLOGUE = r"""
tb=/sys/kernel/tracing; tm=""
if [ ! -d $tb/instances ] && grep -qw tracefs /proc/filesystems; then
  mount -t tracefs nodev $tb 2>/dev/null && tm=1
fi
TRACEFS=$tb/instances/rtbench-ssh-$$; TRACETMP=$run/trace.d
if mkdir $TRACEFS 2>/dev/null; then
  printf '%s\n' REQUEST >"$run/trace"
else
  echo "MARKER trace none cannot make a trace instance in $tb (needs root and tracefs)"
  TRACEFS=""
fi
"""
TRACE_EPILOGUE = r"""
if [ -n "$TRACEFS" ]; then
  echo 0 >$TRACEFS/tracing_on
  rmdir $TRACEFS
fi
[ -n "$tm" ] && umount $tb
"""


def _script(script: str) -> str:
    return script.replace("MARKER", MARKER).replace("/dev/PORT", "/dev/stdout").lstrip("\n")


def remote_command(
    exe: str, run_base: str, args: list[str], sudo: bool, trace: Request | None = None
) -> str:
    """The command line the target's login shell runs for one agent run
    (`trace`: with the kernel trace recorded there)."""
    setup = dump = ""
    if trace is not None:
        setup = (
            _script(TRACE_PROLOGUE).replace("REQUEST", shlex.quote(trace.line().strip()))
            + _script(SETUP_SCRIPT).replace("/rtbench/trace", '"$run/trace"')
            + '[ -n "$TRACEFS" ] && set -- "--trace-marker=$TRACEFS/trace_marker" "$@"\n'
        )
        dump = _script(DUMP_SCRIPT).replace("/rtbench/trace", '"$run/trace"') + _script(
            TRACE_EPILOGUE
        )
    wrapper = WRAPPER.replace("{TRACE_SETUP}", setup).replace("{TRACE_DUMP}", dump)
    argv = ["sh", "-c", wrapper, "rtbench-run", exe, run_base, *args]
    return ("sudo -n " if sudo else "") + shlex.join(argv)


class SshTransport(ChildTransport):
    """The agent on a target reached with `ssh`, its stream on ssh's stdout."""

    def __init__(
        self,
        ssh: Callable[[str], list[str]],
        exe: str,
        run_base: str,
        sudo: bool,
        name: str,
    ) -> None:
        super().__init__()
        self.ssh = ssh  # remote command -> the ssh argv running it
        self.exe = exe
        self.run_base = run_base
        self.sudo = sudo
        self.name = name
        # --trace: recorded in the target's tracefs (remote_command).
        self.trace: Request | None = None
        self.traced = Received()

    def start(self, args: list[str]) -> None:
        self.traced = Received(self.trace, source=f"{self.name} over SSH (instance)")
        argv = self.ssh(remote_command(self.exe, self.run_base, args, self.sudo, self.trace))
        # stdin stays open for the whole run: closing it stops the agent.
        self._spawn(argv, "ssh", stdin=subprocess.PIPE)

    def _silence(self, timeout: float) -> str:
        return f"the agent on {self.name} wrote nothing for {timeout:.0f} s; stopped it"

    def _line(self, line: bytes) -> bytes | None:
        if line.startswith(_MARK):
            body = line[len(_MARK) :].strip()
            if body.startswith(b"trace "):
                self.traced.feed(body[len(b"trace ") :])
            return None
        return line

    def probe_machine(self) -> dict[str, Any]:
        """The target's system report, read there (rtbench.machine.probe_remote)."""
        return probe_over(self.ssh, self.sudo)

    def finish_run(self, run: Run) -> None:
        """The target's kernel trace, split or attributed as a local one."""
        attach(run, self.traced)

    def stop(self) -> int | None:
        proc = self.proc
        if proc is None:
            return None
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()  # the wrapper's cue to end the agent
        try:
            # The wrapper's TERM, then KILL 2 s later, then the round trip.
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            # The link is gone: ending ssh ends the session, and the wrapper
            # sees its stdin close whenever sshd notices.
            proc.kill()
        return self._reap(proc)
