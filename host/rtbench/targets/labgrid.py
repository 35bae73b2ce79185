"""labgrid places as targets: `labgrid:PLACE`.

rtbench acquires the place from the lab's labgrid coordinator
(targets/labgrid_place.py), builds a labgrid target from the place's
resources and the drivers of the user's labgrid environment file (or, with
none, a `SerialDriver` and a `ShellDriver`), brings it to a shell through
the environment's strategy when it has one (power, boot), copies the agent
onto it over that shell when it is not there yet, and runs it on the
console through the one measuring path (transports/labgrid.py). The place
is released when rtbench is done with the target, and by the place's guard
whatever ends rtbench.

Options (query string or targets file):

    coordinator=HOST:PORT  default: LG_COORDINATOR, the environment's
                           coordinator_address, else 127.0.0.1:20408
    env=FILE               a labgrid environment (default: LG_ENV); its
                           target for the place (a RemotePlace of that name,
                           or `role`) gives the drivers and the strategy
    role=NAME              the environment's target to use
    state=shell            the strategy state that gives a shell
    prompt, login_prompt, username, password
                           the ShellDriver's settings without an environment
    dir=/tmp/rtbench       where the agent is kept on the target
    samples=no             yes: raw samples too (a fast console)
    wait=60                seconds for the agent's hello (and the login)
    emulated=no            yes: the place is an emulator (QEMU): flag its runs
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import os
import shlex
import threading
from pathlib import Path
from typing import Any

from rtbench.targets import (
    Options,
    Reachability,
    TargetError,
    check_options,
    opt_bool,
    opt_float,
    opt_str,
)
from rtbench.targets.labgrid_place import DEFAULT_COORDINATOR, Place
from rtbench.targets.ssh import agent_for
from rtbench.transports.labgrid import ConsoleTransport

OPTIONS = (
    "coordinator", "env", "role", "state", "prompt", "login_prompt", "username",
    "password", "dir", "samples", "wait", "emulated",
)
MIN_LABGRID = 26
DEFAULT_PROMPT = r"[^\r\n]*[#$] "
DEFAULT_DIR = "/tmp/rtbench"
SHELL_TRIES = 3
SHELL_TIMEOUT_S = 60.0
COPY_BLOCK = 4096  # bytes per console write while copying the agent
# How long the copy may take: ~700 KB of base64 at 115200 baud is ~60 s.
COPY_TIMEOUT_S = 900.0


def require_labgrid() -> None:
    """A clear error when the labgrid package is missing or too old."""
    try:
        import labgrid
        import yaml  # noqa: F401  (labgrid_place reads `labgrid-client env` with it)
    except ModuleNotFoundError:
        raise TargetError(
            "labgrid targets need the labgrid package (version 26 or later): "
            "pip install 'rtbench[lab]'"
        ) from None
    version = str(getattr(labgrid, "__version__", "0"))
    try:
        major = int(version.split(".")[0])
    except ValueError:
        major = 0
    if major < MIN_LABGRID:
        raise TargetError(
            f"labgrid {version} is too old for rtbench's labgrid targets (26 or later): "
            "pip install -U 'rtbench[lab]'"
        )


def _coordinator(opts: Options, env_file: str | None) -> str:
    given = opt_str(opts, "coordinator") or os.environ.get("LG_COORDINATOR")
    if given:
        return given
    if env_file:
        from labgrid import Environment

        found = Environment(env_file).config.get_option("coordinator_address", "")
        if found:
            return str(found)
    return DEFAULT_COORDINATOR


class LabgridTarget:
    kind = "labgrid"
    is_local = False

    def __init__(self, place: str, opts: Options, name: str) -> None:
        check_options("labgrid", opts, OPTIONS)
        require_labgrid()
        self.name = name
        self.env_file = opt_str(opts, "env") or os.environ.get("LG_ENV") or None
        if self.env_file and not Path(self.env_file).is_file():
            raise TargetError(f"env={self.env_file}: no such labgrid environment file")
        self.role = opt_str(opts, "role")
        self.state = opt_str(opts, "state", "shell") or "shell"
        self.shell = {
            "prompt": opt_str(opts, "prompt", DEFAULT_PROMPT) or DEFAULT_PROMPT,
            "login_prompt": opt_str(opts, "login_prompt", " login: ") or " login: ",
            "username": opt_str(opts, "username", "root") or "root",
        }
        password = opt_str(opts, "password")
        if password is not None:
            self.shell["password"] = password
        self.dir = opt_str(opts, "dir", DEFAULT_DIR) or DEFAULT_DIR
        self.samples = opt_bool(opts, "samples", False)
        self.wait = opt_float(opts, "wait", 60.0)
        self.emulated = opt_bool(opts, "emulated", False)
        self.place = Place(place, _coordinator(opts, self.env_file))
        self.lg: Any = None  # the labgrid Target while the place is held
        self.arch: str | None = None
        self.copied: bool | None = None
        self.has_power = False
        self.strategy: str | None = None
        self._lock = threading.Lock()

    def metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "kind": "labgrid",
            "place": self.place.name,
            "coordinator": self.place.coordinator,
        }
        if self.env_file:
            meta["env"] = str(Path(self.env_file).resolve())
        if self.strategy:
            meta["strategy"] = self.strategy
        meta["power"] = self.has_power
        if self.arch is not None:
            meta["arch"] = self.arch
        if self.copied is not None:
            meta["agent_copied"] = self.copied
        return meta

    def check(self, timeout: float = 10.0) -> Reachability:
        del timeout
        try:
            shown = self.place.show()
        except TargetError as e:
            return Reachability(False, str(e))
        holder = next(
            (ln.split(":", 1)[1].strip() for ln in shown.splitlines()
             if ln.strip().startswith("acquired:")),
            "",
        )
        if holder not in ("", "None"):
            return Reachability(True, f"place {self.place.name} exists, acquired by {holder}")
        return Reachability(True, f"place {self.place.name} exists and is free")

    # The place: held from the first transport() until close().

    def _drivers(self) -> tuple[Any, Any]:
        """(the labgrid Environment or None, the drivers of the place's target)."""
        if not self.env_file:
            return None, [{"SerialDriver": {}}, {"ShellDriver": {**self.shell,
                          "login_timeout": int(self.wait)}}]  # fmt: skip
        from labgrid import Environment

        env = Environment(self.env_file)
        targets = env.config.get_targets()
        role = self.role or _role_for(targets, self.place.name)
        if role is None or role not in targets:
            raise TargetError(
                f"{self.env_file}: no target for place {self.place.name} (a RemotePlace named "
                f"so, or role=NAME; it has {', '.join(targets) or 'none'})"
            )
        return env, (targets[role] or {}).get("drivers", {})

    def _hold(self) -> None:
        from labgrid.factory import target_factory

        env, drivers = self._drivers()
        self.place.acquire()
        try:
            resources = self.place.resources()
            lg = target_factory.make_target(
                self.place.name, {"resources": resources, "drivers": drivers}, env=env
            )
            self.lg = lg
            self._to_shell(lg)
        except BaseException:
            self._drop()
            raise

    def _to_shell(self, lg: Any) -> None:
        from labgrid.exceptions import NoDriverFoundError

        try:
            lg.get_driver("PowerProtocol", activate=False)
            self.has_power = True
        except NoDriverFoundError:
            self.has_power = False
        try:
            strategy = lg.get_driver("Strategy")
        except NoDriverFoundError:
            strategy = None
        try:
            if strategy is not None:
                # labgrid's convention: the strategy powers, boots and logs in.
                self.strategy = type(strategy).__name__
                strategy.transition(self.state)
            else:
                console = lg.get_driver("ConsoleProtocol")
                # Whatever an earlier, killed run left in the foreground ends.
                console.write(b"\x03\n")
        except Exception as e:
            raise TargetError(
                f"labgrid place {self.place.name}: no shell ({type(e).__name__}: {_said(e)})"
            ) from None
        self._shell()

    def _shell(self) -> Any:
        """The place's shell (CommandProtocol), answering. One that does not
        answer in time (a slow or busy target, noise on the console) is
        woken with a Ctrl-C and asked again."""
        lg = self.lg
        for attempt in range(1, SHELL_TRIES + 1):
            try:
                shell = lg.get_driver("CommandProtocol")
                shell.run("true", timeout=SHELL_TIMEOUT_S)
                return shell
            except Exception as e:
                if attempt == SHELL_TRIES:
                    raise TargetError(
                        f"labgrid place {self.place.name}: its shell does not answer "
                        f"({SHELL_TRIES} tries; {type(e).__name__}: {_said(e)})"
                    ) from None
            with contextlib.suppress(Exception):
                lg.deactivate(lg.get_driver("CommandProtocol", activate=False))
                lg.get_driver("ConsoleProtocol").write(b"\x03\n")
        raise AssertionError("unreachable")

    def _drop(self) -> None:
        lg, self.lg = self.lg, None
        try:
            if lg is not None:
                lg.cleanup()
        finally:
            error = self.place.release()
            if error:
                raise TargetError(error)

    def close(self) -> None:
        """Ends the labgrid target and releases the place (idempotent)."""
        with self._lock:
            if self.lg is not None or self.place.guard is not None:
                self._drop()

    # The agent on the place.

    def _run(self, cmd: str, timeout: float = 60.0) -> list[str]:
        out, _, code = self._shell().run(cmd, timeout=timeout)
        if code != 0:
            raise TargetError(
                f"labgrid place {self.place.name}: `{cmd[:60]}` failed ({code}): "
                + " ".join(out)[-200:]
            )
        return [str(line) for line in out]

    def _install(self, agent: Path | None) -> str:
        d = shlex.quote(self.dir)
        said = self._run(
            f'a=$(uname -m); echo "arch=$a"; f={d}/rtbench-agent-$a; '
            f'[ -f "$f" ] && echo "sum=$(sha256sum "$f" | cut -d" " -f1)"; true'
        )
        found = {k: v for k, eq, v in (ln.strip().partition("=") for ln in said) if eq}
        if "arch" not in found:
            raise TargetError(f"labgrid place {self.place.name}: the shell did not say its arch")
        self.arch = found["arch"]
        exe = agent or agent_for(self.arch)
        data = exe.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        path = f"{self.dir}/rtbench-agent-{self.arch}"
        self.copied = digest != found.get("sum")
        if self.copied:
            self._copy(data, path)
            if self._run(f"sha256sum {shlex.quote(path)}")[-1].split()[0] != digest:
                raise TargetError(
                    f"labgrid place {self.place.name}: the agent copied there is damaged"
                )
        return path

    def _copy(self, data: bytes, path: str) -> None:
        """Over the console itself: the gzipped agent in base64 lines, read
        by `head -c` with the terminal's echo off, then decoded, written
        aside and renamed; the caller checks its checksum. (labgrid's
        ShellDriver.put needs an XMODEM receiver, which busybox images
        lack, and a command per chunk costs a round trip each.)"""
        text = base64.encodebytes(gzip.compress(data, 9))
        tmp, new = shlex.quote(path + ".b64"), shlex.quote(path + ".new")
        self._run(f"mkdir -p {shlex.quote(self.dir)} && rm -f {tmp} {new}")
        console = self.lg.get_driver("ConsoleProtocol")
        console.write(f"stty -echo; head -c {len(text)} >{tmp}; stty echo\n".encode())
        for at in range(0, len(text), COPY_BLOCK):
            console.write(text[at : at + COPY_BLOCK])
        # The shell's prompt comes back once `head` has read it all (a slow
        # line takes a while: no command may be typed before).
        shell = self.lg.get_driver("CommandProtocol")
        if isinstance(getattr(shell, "prompt", None), str):
            console.expect(shell.prompt, timeout=COPY_TIMEOUT_S)
        self._run(f"base64 -d {tmp} | gunzip >{new} && rm -f {tmp}", timeout=COPY_TIMEOUT_S)
        self._run(f"chmod 755 {new} && mv -f {new} {shlex.quote(path)}")

    def transport(self, agent: Path | None = None) -> ConsoleTransport:
        with self._lock:
            if self.lg is None:
                self._hold()
            try:
                path = self._install(agent)
                console = self.lg.get_driver("ConsoleProtocol")
            except TargetError:
                raise
            except Exception as e:
                raise TargetError(
                    f"labgrid place {self.place.name}: {type(e).__name__}: {_said(e)}"
                ) from None
        return ConsoleTransport(console, shlex.quote(path), self.name, self.samples, self.wait)


def _said(e: BaseException) -> str:
    """An exception's first line (pexpect's carry their whole state)."""
    return (str(e).strip().splitlines() or [""])[0][:200]


def _role_for(targets: dict[str, Any], place: str) -> str | None:
    """The environment's target using `place` (labgrid-client's rule), else
    the one named so."""
    for role, config in targets.items():
        resources = (config or {}).get("resources", {})
        items = resources if isinstance(resources, list) else [resources]
        for item in items:
            remote = item.get("RemotePlace") if isinstance(item, dict) else None
            if isinstance(remote, dict) and remote.get("name") == place:
                return str(role)
    return place if place in targets else None


def make_target(place: str, opts: Options, label: str) -> LabgridTarget:
    """`labgrid:PLACE` with its options (the entry point of targets.resolve)."""
    if not place or "/" in place:
        raise TargetError(f"labgrid:{place}: write labgrid:PLACE (a place of the coordinator)")
    return LabgridTarget(place, opts, label)
