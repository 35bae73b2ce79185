"""A Linux machine or board reached over SSH.

The system `ssh` does the connecting, so whatever the user's ssh does
applies: ~/.ssh/config aliases, keys and agents, ProxyJump, ControlMaster.
rtbench never asks for a password (BatchMode): keys or an agent must work.

Before a run one round trip learns the target's architecture, its user's
privileges and the checksum of the agent already cached there
(~/.cache/rtbench/rtbench-agent-ARCH); the agent built for that architecture
is copied only when the checksums differ, and checked again after the copy.

Options (query string or targets file): `config` (an ssh_config to use
instead of ~/.ssh/config), `dir` (the cache folder on the target), `sudo`
(auto: root or `sudo -n` when it works, else unprivileged; yes: require it;
no: never), `timeout` (seconds to connect).
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult

from rtbench.machine.build import (
    ARCHES,
    STIM_NAME,
    BuildError,
    agent_digest,
    ensure_agent,
    host_arch,
)
from rtbench.targets import (
    Options,
    Reachability,
    TargetError,
    check_options,
    opt_int,
    opt_str,
)
from rtbench.transports.ssh import SshTransport

OPTIONS = ("config", "dir", "sudo", "timeout")
DEFAULT_DIR = "~/.cache/rtbench"


@dataclass(frozen=True)
class Endpoint:
    """How to call `ssh` for one target."""

    destination: str  # [user@]host or an alias of the ssh config
    port: int | None = None
    config: Path | None = None
    timeout: int = 10

    def ssh(self, remote: str, *, batch: bool = True) -> list[str]:
        """The argv running the shell command `remote` on the target."""
        cmd = ["ssh", "-T", "-o", f"ConnectTimeout={self.timeout}"]
        if batch:
            cmd += ["-o", "BatchMode=yes"]
        # A dead link is noticed within ~15 s; the remote side notices
        # through the closed channel (transports/ssh.py).
        cmd += ["-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]
        if self.config is not None:
            cmd += ["-F", str(self.config)]
        if self.port is not None:
            cmd += ["-p", str(self.port)]
        return [*cmd, "--", self.destination, remote]


@dataclass
class Probe:
    """What one round trip learned about the target."""

    arch: str
    privilege: str  # root, sudo or none
    cached_digest: str | None
    remote_dir: str  # the cache folder, ~ expanded
    stim_digest: str | None = None  # RSP-IO's stimulator cached there


def _remote_path(path: str) -> str:
    """`path` as a remote shell word, with ~ meaning the login's home."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


class SshTarget:
    kind = "ssh"
    emulated = False
    is_local = False
    guest_trace = True  # `--trace` is recorded on the target (transports/ssh.py)

    def __init__(
        self, name: str, endpoint: Endpoint, remote_dir: str = DEFAULT_DIR, sudo: str = "auto"
    ) -> None:
        self.name = name
        self.endpoint = endpoint
        self.remote_dir = remote_dir
        self.sudo = sudo
        self.probe: Probe | None = None
        self.copied: bool | None = None  # whether the last transport() copied the agent

    @classmethod
    def from_url(cls, parts: SplitResult, opts: Options, label: str) -> SshTarget:
        check_options("ssh", opts, OPTIONS)
        user, _, hostport = parts.netloc.rpartition("@")
        # Not parts.hostname: it lowercases, and an alias keeps its case.
        if hostport.startswith("[") and "]" in hostport:
            host = hostport[1 : hostport.index("]")]
        elif parts.port is not None:
            host = hostport.rsplit(":", 1)[0]
        elif hostport.endswith(":"):
            raise TargetError(f"{label!r}: empty port; write ssh://host:22 or ssh://host")
        else:
            host = hostport
        if not host:
            raise TargetError(f"{label!r}: no host; write ssh://[user@]host[:port] or ssh://alias")
        sudo = (opt_str(opts, "sudo", "auto") or "auto").lower()
        if sudo not in ("auto", "yes", "no"):
            raise TargetError(f"sudo={sudo!r}: expected auto, yes or no")
        config = opt_str(opts, "config")
        if config is not None and not Path(config).expanduser().is_file():
            raise TargetError(f"config={config}: no such ssh config file")
        endpoint = Endpoint(
            f"{user}@{host}" if user else host,
            parts.port,
            Path(config).expanduser() if config else None,
            opt_int(opts, "timeout", 10),
        )
        return cls(label, endpoint, opt_str(opts, "dir", DEFAULT_DIR) or DEFAULT_DIR, sudo)

    def metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"kind": "ssh", "destination": self.endpoint.destination}
        if self.endpoint.port is not None:
            meta["port"] = self.endpoint.port
        if self.probe is not None:
            meta["arch"] = self.probe.arch
            meta["privilege"] = self.probe.privilege
        if self.copied is not None:
            meta["agent_copied"] = self.copied
        return meta

    def _call(
        self, remote: str, stdin: bytes | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        argv = self.endpoint.ssh(remote)
        try:
            return subprocess.run(
                argv,
                input=stdin,
                stdin=None if stdin is not None else subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout or self.endpoint.timeout + 60,
                check=False,
            )
        except FileNotFoundError:
            raise TargetError("the `ssh` command is not installed (openssh-client)") from None
        except subprocess.TimeoutExpired:
            raise TargetError(f"{self.name}: ssh did not answer in time") from None

    def _failed(self, what: str, proc: subprocess.CompletedProcess[bytes]) -> TargetError:
        msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = msg[-1] if msg else f"exit status {proc.returncode}"
        return TargetError(f"{self.name}: {what}: {detail}")

    def check(self, timeout: float = 10.0) -> Reachability:
        try:
            proc = self._call("true", timeout=timeout + 5)
        except TargetError as e:
            return Reachability(False, str(e))
        if proc.returncode != 0:
            return Reachability(False, str(self._failed("unreachable", proc)))
        return Reachability(True, f"ssh {self.endpoint.destination} answers")

    def _probe(self) -> Probe:
        d = _remote_path(self.remote_dir)
        script = (
            f'd={d}; a=$(uname -m); echo "arch=$a"; '
            'if [ "$(id -u)" = 0 ]; then echo priv=root; '
            "elif sudo -n true 2>/dev/null; then echo priv=sudo; else echo priv=none; fi; "
            'f="$d/rtbench-agent-$a"; '
            '[ -f "$f" ] && echo "sum=$(sha256sum "$f" | cut -d" " -f1)"; echo "dir=$d"; '
            'g="$d/rtb-stim-$a"; '
            'if [ -f "$g" ]; then echo "stimsum=$(sha256sum "$g" | cut -d" " -f1)"; fi'
        )
        proc = self._call(script)
        if proc.returncode != 0:
            raise self._failed("cannot reach the target", proc)
        text = proc.stdout.decode("utf-8", "replace")
        found = {k: v for k, eq, v in (ln.partition("=") for ln in text.splitlines()) if eq}
        if not {"arch", "priv", "dir"} <= found.keys():
            raise TargetError(f"{self.name}: the target's shell did not answer as a POSIX shell")
        return Probe(
            found["arch"],
            found["priv"],
            found.get("sum") or None,
            found.get("dir", ""),
            found.get("stimsum") or None,
        )

    def _privilege(self, probe: Probe) -> bool:
        """Whether to run the agent through `sudo -n`."""
        if probe.privilege == "root" or self.sudo == "no":
            return False
        if probe.privilege == "sudo":
            return True
        if self.sudo == "yes":
            raise TargetError(
                f"{self.name}: `sudo -n` does not work for this login (sudo=yes): allow it "
                "without a password, or log in as root"
            )
        return False  # unprivileged: the agent flags the run not_realtime itself

    def _install(self, agent: Path, probe: Probe) -> str:
        """Copies `agent` unless the target holds the same bytes; returns its path there.
        RSP-IO's stimulator, built beside it, goes beside it there (docs/rsp-io.md)."""
        digest = agent_digest(agent)
        path = f"{probe.remote_dir}/rtbench-agent-{probe.arch}"
        self.copied = digest != probe.cached_digest
        if self.copied:
            self._copy(agent, digest, path, "the agent")
        stim = agent.parent / STIM_NAME
        if stim.is_file():
            stim_digest = agent_digest(stim)
            if stim_digest != probe.stim_digest:
                self._copy(stim, stim_digest, f"{probe.remote_dir}/{STIM_NAME}-{probe.arch}",
                           "the stimulator")
        return path

    def _copy(self, exe: Path, digest: str, path: str, what: str) -> None:
        d, f = shlex.quote(path.rsplit("/", 1)[0]), shlex.quote(path)
        # Written aside and renamed: a run still using the old copy keeps it.
        script = (
            f'mkdir -p {d} && chmod 700 {d} && t={d}/.agent.$$ && cat > "$t" && '
            f'chmod 755 "$t" && mv -f "$t" {f} && sha256sum {f} | cut -d" " -f1'
        )
        proc = self._call(script, stdin=exe.read_bytes(), timeout=300)
        if proc.returncode != 0:
            raise self._failed(f"cannot copy {what}", proc)
        if proc.stdout.decode("utf-8", "replace").strip() != digest:
            raise TargetError(f"{self.name}: {what} copied to the target is damaged")


    def transport(self, agent: Path | None = None) -> SshTransport:
        probe = self._probe()
        self.probe = probe
        path = self._install(agent or agent_for(probe.arch), probe)
        return SshTransport(
            self.endpoint.ssh, path, probe.remote_dir, self._privilege(probe), self.name
        )


def agent_for(machine: str) -> Path:
    """The static agent for a target whose `uname -m` says `machine`."""
    arch = next((a.name for a in ARCHES.values() if machine.lower() in a.machines), None)
    if arch is None:
        raise TargetError(
            f"no agent build for a {machine} target (rtbench builds {', '.join(ARCHES)}); "
            "give one with --agent"
        )
    try:
        return ensure_agent("release", arch=None if arch == host_arch() else arch, static=True)
    except BuildError as e:
        raise TargetError(f"cannot build the agent for {arch}: {e}") from None
