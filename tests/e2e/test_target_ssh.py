"""End-to-end: the SSH target against a real sshd started by the test.

sshd listens on a free port of 127.0.0.1 with a temporary host key and
accepts one temporary user key; the client reaches it through an alias of
an ssh_config written for the test, so alias resolution is what `ssh` does.
The agent is copied there (cached by checksum), runs as root through the
remote wrapper (or, for a non-root login, through `sudo -n` when sudoers
allows it, else unprivileged and flagged not real-time), and must be gone
after Ctrl-C at the host, after the host is killed, and after the
connection is cut (sshd's session process killed).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import die_with_parent, free_port, rtbench
from procs import children

from rtbench.model import Run
from rtbench.run.session import collect
from rtbench.store import Store
from rtbench.targets import guest_trace, resolve
from rtbench.targets.ssh import SshTarget
from rtbench.trace import snapshot
from rtbench.trace.tracefs import kernel_has_tracefs, toplevel_lock
from rtbench.transports import TransportError

SSHD = "/usr/sbin/sshd"
ALIAS = "rtb-test-alias"
CLI_CASES = ["-c", "CAL-TIMER", "-c", "CAL-REF", "-c", "THR-SW",
             "--set", "CAL-TIMER.reads=2000", "--set", "CAL-TIMER.rounds=100",
             "--set", "CAL-REF.repeats=20", "--set", "THR-SW.n=2",
             "--set", "THR-SW.duration_ms=50"]  # fmt: skip
# Interrupted long before it ends.
LONG = ["-c", "CAL-REF", "-c", "THR-SW", "--set", "CAL-REF.repeats=20",
        "--set", "THR-SW.n=2", "--set", "THR-SW.duration_ms=120000"]  # fmt: skip
WAIT_S = 60.0  # bound on waiting for a condition; never a measured time

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.root("starting sshd and logging in as root"),
    pytest.mark.tools("openssh-server", "openssh-client"),
]


@dataclass
class Sshd:
    proc: subprocess.Popen[bytes]
    port: int
    config: Path  # the client's ssh_config with the alias
    remote_dir: Path  # the agent cache on the "target"
    user_key: Path  # the public key the client logs in with

    def spec(self) -> str:
        return f"ssh://{ALIAS}?config={self.config}&dir={self.remote_dir}"

    def sessions(self) -> list[int]:
        """sshd's per-connection processes (children of the listener)."""
        return children(self.proc.pid)


def _agents_running(exe_dir: Path) -> list[int]:
    """Processes executing an agent from the target's cache folder."""
    found = []
    for exe in Path("/proc").glob("[0-9]*/exe"):
        try:
            target = os.readlink(exe)
        except OSError:
            continue
        if target.startswith(str(exe_dir) + "/"):
            found.append(int(exe.parent.name))
    return found


def _until(cond: object, what: str) -> None:
    end = time.monotonic() + WAIT_S
    while time.monotonic() < end:
        if callable(cond) and cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"still waiting after {WAIT_S:.0f} s for {what}")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    d = tmp_path_factory.mktemp("sshd")
    for key in ("host_key", "user_key"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)], check=True
        )
    shutil.copy(d / "user_key.pub", d / "authorized_keys")
    port = free_port()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\n"
        # A user's own file too: sshd reads it as that user (the non-root login).
        f"AuthorizedKeysFile {d}/authorized_keys .ssh/authorized_keys\nPidFile none\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nLogLevel ERROR\n"
    )
    (d / "ssh_config").write_text(
        f"Host {ALIAS}\n  HostName 127.0.0.1\n  Port {port}\n  User root\n"
        f"  IdentityFile {d}/user_key\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n"
        f"  UserKnownHostsFile {d}/known_hosts\n  LogLevel ERROR\n"
    )
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation
    proc = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(d / "sshd_config")],
        stderr=subprocess.PIPE,
        preexec_fn=die_with_parent,  # gone with the tests, even if they are killed
    )
    try:

        def listening() -> bool:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        _until(listening, "sshd to listen")
        yield Sshd(proc, port, d / "ssh_config", d / "remote", d / "user_key.pub")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _shape(run: Run) -> list[tuple[str, list[tuple[str, str]]]]:
    return [(c.case, sorted((s.name, str(s.point)) for s in c.series)) for c in run.cases]


def test_a_run_through_an_alias_stores_the_same_cases_as_a_local_run(
    sshd: Sshd, db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # By name from a targets file: the options go with it.
    targets = tmp_path / "targets.toml"
    targets.write_text(
        f'[lab]\nspec = "ssh://{ALIAS}"\nconfig = "{sshd.config}"\ndir = "{sshd.remote_dir}"\n'
    )
    monkeypatch.setenv("RTBENCH_TARGETS", str(targets))
    r = rtbench("targets", "lab")
    assert r.returncode == 0 and "yes" in r.stdout, r.stdout + r.stderr

    for target in ("lab", "local"):
        r = rtbench("run", "--target", target, *CLI_CASES)
        assert r.returncode in (0, 1), r.stdout + r.stderr
    with Store(db) as store:
        remote, local = store.load(1), store.load(2)
    assert remote.complete, remote.issues
    assert (remote.target, local.target) == ("lab", "local")
    assert _shape(remote) == _shape(local)
    assert [c.case for c in remote.cases] == ["CAL-TIMER", "CAL-REF", "THR-SW"]
    assert all(c.outcome in ("passed", "failed") for c in remote.cases)
    assert remote.realtime  # root on the target
    meta = remote.machine["target"]
    assert meta["kind"] == "ssh" and meta["destination"] == ALIAS
    assert meta["arch"] == os.uname().machine and meta["privilege"] == "root"
    assert meta["emulated"] is False
    # The system report read on the target over the same SSH path (here the
    # same machine: its kernel and configuration, as the local run's).
    assert remote.machine["probed_on"] == "target"
    for key in ("kernel_release", "cpus_online", "kernel_config", "cpuidle", "services"):
        assert remote.machine[key] == local.machine[key], key
    assert remote.machine["kernel_release"] == os.uname().release
    # Each run's folder on the target is removed, and no agent is left.
    arch = os.uname().machine
    # The agent and RSP-IO's stimulator beside it.
    names = [f"rtb-stim-{arch}", f"rtbench-agent-{arch}"]
    assert sorted(p.name for p in sshd.remote_dir.iterdir()) == names
    assert not _agents_running(sshd.remote_dir)


def test_the_agent_is_copied_only_when_its_checksum_differs(sshd: Sshd) -> None:
    target = resolve(sshd.spec())
    assert isinstance(target, SshTarget)
    target.transport()
    target.transport()
    assert target.metadata()["agent_copied"] is False  # the same bytes are there
    # A changed copy on the target is found and replaced.
    cached = sshd.remote_dir / f"rtbench-agent-{os.uname().machine}"
    size = cached.stat().st_size
    with cached.open("ab") as f:
        f.write(b"damage")
    target.transport()
    assert target.metadata()["agent_copied"] is True
    assert cached.stat().st_size == size


def test_rsp_io_runs_on_the_target_with_its_stimulator(sshd: Sshd) -> None:
    target = resolve(sshd.spec())
    run = collect(target.transport(), ["RSP-IO:scenario=0,4:count=10:timeout_ms=20000"])
    (case,) = run.cases
    checks = {c.name: c for c in case.checks}
    assert case.outcome == "passed", [(c.name, c.detail) for c in case.checks]
    assert "rtb-stim over a pipe line" in checks["stimulator"].detail
    for s in "ae":
        assert "10 edges, 10 answered" in checks[f"{s}_pipe_edges"].detail
    assert not _agents_running(sshd.remote_dir)


def test_the_agents_complaint_comes_back_as_the_error(sshd: Sshd) -> None:
    target = resolve(sshd.spec())
    with pytest.raises(TransportError, match="NO-SUCH-CASE"):
        collect(target.transport(), ["NO-SUCH-CASE"])


def test_an_unreachable_target_says_why(sshd: Sshd) -> None:
    closed = resolve(f"ssh://root@127.0.0.1:{free_port()}?config={sshd.config}&timeout=5")
    reach = closed.check(timeout=5)
    assert not reach.ok and "refused" in reach.detail.lower(), reach.detail


def _began(db: Path, case: str) -> bool:
    """The host's journal (written as the stream arrives) shows `case` begun."""
    marker = f'"case":"{case}"'.encode()
    for journal in db.parent.glob(f"{db.name}.journals/*.journal"):
        for line in journal.read_bytes().splitlines():
            if b" begin " in line and marker in line:
                return True
    return False


@pytest.mark.parametrize("how", ["ctrl-c", "connection-cut", "host-killed"])
def test_the_remote_agent_dies_with_the_run(sshd: Sshd, db: Path, how: str) -> None:
    host = subprocess.Popen(
        [sys.executable, "-m", "rtbench.cli", "run", "--target", sshd.spec(), *LONG],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _until(lambda: _began(db, "THR-SW") or host.poll() is not None, "THR-SW to begin")
        assert host.poll() is None, host.communicate()
        assert _agents_running(sshd.remote_dir)
        if how == "ctrl-c":
            host.send_signal(signal.SIGINT)
        elif how == "connection-cut":
            sessions = sshd.sessions()
            assert sessions
            for pid in sessions:
                os.kill(pid, signal.SIGKILL)
        else:
            host.kill()
        stdout, stderr = host.communicate(timeout=WAIT_S)
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
    if how != "host-killed":
        # What was measured is stored: CAL-REF whole, THR-SW cut short.
        assert host.returncode == (130 if how == "ctrl-c" else 2), stdout + stderr
        with Store(db) as store:
            run = store.load(store.resolve("latest"))
        assert not run.complete
        assert [c.case for c in run.cases] == ["CAL-REF", "THR-SW"]
        assert run.cases[0].outcome == "passed" and run.cases[1].outcome == "error"
    # Gone: no agent, no run folder left on the target.
    _until(lambda: not _agents_running(sshd.remote_dir), "the remote agent to end")
    _until(lambda: not list(sshd.remote_dir.glob("run.*")), "the remote run folder to go")


@pytest.fixture
def login(sshd: Sshd) -> Iterator[str]:
    """A non-root user of this machine who can log in with the test's key;
    removed afterwards (with its sudoers entry, if a test gave it one)."""
    user = f"rtb{os.getpid() % 100000}"
    # -p '*': no password, yet not locked ('!'), which sshd without PAM refuses.
    subprocess.run(["useradd", "-m", "-s", "/bin/sh", "-p", "*", user], check=True)
    home = Path(f"/home/{user}")
    try:
        ssh = home / ".ssh"
        ssh.mkdir(mode=0o700)
        shutil.copy(sshd.user_key, ssh / "authorized_keys")
        subprocess.run(["chown", "-R", f"{user}:{user}", str(ssh)], check=True)
        yield user
    finally:
        Path(f"/etc/sudoers.d/{user}").unlink(missing_ok=True)
        subprocess.run(["userdel", "-r", "-f", user], check=False, capture_output=True)


NON_ROOT_CASES = ["CAL-REF:repeats=20", "THR-SW:n=2:duration_ms=50"]


def _as(user: str, sshd: Sshd) -> SshTarget:
    # user@alias: the login's user wins over the config's `User root`.
    target = resolve(f"ssh://{user}@{ALIAS}?config={sshd.config}")
    assert isinstance(target, SshTarget)
    return target


@pytest.mark.tools("sudo")
def test_a_non_root_login_runs_with_sudo_and_without(sshd: Sshd, login: str) -> None:
    # Without sudo: the run completes, flagged not real-time, and passes.
    target = _as(login, sshd)
    plain = collect(target.transport(), NON_ROOT_CASES)
    assert plain.complete, plain.issues
    assert target.metadata()["privilege"] == "none" and not plain.realtime
    assert plain.outcome == "passed", [(c.case, c.outcome, c.reason) for c in plain.cases]
    # With `sudo -n` allowed: the agent runs as root there, real time.
    entry = Path(f"/etc/sudoers.d/{login}")
    entry.write_text(f"{login} ALL=(root) NOPASSWD: ALL\n")
    entry.chmod(0o440)
    target = _as(login, sshd)
    run = collect(target.transport(), NON_ROOT_CASES)
    assert run.complete, run.issues
    assert target.metadata()["privilege"] == "sudo" and run.realtime
    assert all(c.outcome in ("passed", "failed") for c in run.cases), run.cases
    assert not _agents_running(Path(f"/home/{login}/.cache/rtbench"))


@pytest.mark.exclusive  # compares the whole tracefs before and after: global kernel state
@pytest.mark.skipif(not kernel_has_tracefs(), reason="needs a kernel with tracefs")
def test_trace_is_recorded_on_the_target_and_split_per_case(sshd: Sshd) -> None:
    """--trace over SSH: recorded in a private instance of the target's
    tracefs (here this machine's), brought back on the stream and split per
    case as a local trace is; the target's tracefs is as it was after."""
    target = resolve(sshd.spec())
    with toplevel_lock(shared=True):
        before = snapshot(own_instances=False)
        transport = target.transport()
        assert hasattr(transport, "trace")
        transport.trace = guest_trace.request(flight=False)
        try:
            run = collect(transport, ["CAL-REF:repeats=20", "THR-SW:n=2:duration_ms=50"])
        finally:
            transport.stop()
        assert snapshot(own_instances=False) == before
    assert run.complete, run.issues
    assert not [w.detail for w in run.warnings if w.code == "trace" and "no kernel" in w.detail]
    for case in run.cases:
        said = [w.detail for w in case.warnings if w.code == "trace"]
        assert any("over SSH (instance)" in d for d in said), (case.case, said)
        kernel = [s for s in case.series if s.name.startswith("kernel.")]
        assert any(s.name == "kernel.local_timer" for s in kernel), (case.case, kernel)
    # THR-SW's threads wake each other: the kernel saw it.
    thr = run.case("THR-SW")
    assert thr is not None and any(s.name == "kernel.wakeup" and s.n > 0 for s in thr.series)
    assert not list(Path("/sys/kernel/tracing/instances").glob("rtbench-ssh-*"))
