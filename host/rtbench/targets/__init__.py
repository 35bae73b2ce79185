"""Targets: the systems rtbench measures, and how the agent gets onto them.

A target says how the agent is put on a system, started there with the
privileges it needs, and how its stream comes back (a `Transport`). It is
chosen with a spec:

    local                                   this machine (the default)
    ssh://[user@]host[:port] or ssh://alias a Linux machine or board over SSH
                                            (~/.ssh/config aliases and keys apply)
    serial:///dev/ttyUSB0?baud=115200&cmd=… a console line (a shell or a firmware)
    qemu:NAME                               a kernel booted in QEMU
    labgrid:PLACE                           a place of a labgrid coordinator
    replay:PATH                             a recorded stream
    NAME                                    an entry of the targets file

The targets file is TOML, one table per name, in the user's config directory
(`rtbench targets` prints where) or where RTBENCH_TARGETS points:

    [rpi4]
    spec = "ssh://pi@rpi4"

    [board]
    spec = "serial:///dev/ttyUSB0"
    baud = 921600
    cmd = "/root/rtbench-agent"

Every key but `spec` (and `description`) is an option of that kind of target;
the same options may be given in the spec's query string.
"""

from __future__ import annotations

import importlib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import SplitResult, parse_qsl, urlsplit

import platformdirs

from rtbench.transports import Transport

Options = Mapping[str, Any]


class TargetError(ValueError):
    """A spec or targets file that cannot be used, said plainly."""


@dataclass(frozen=True)
class Reachability:
    ok: bool
    detail: str


class Target(Protocol):
    """A system the agent can run on."""

    name: str  # what the run stores as its target (the spec or the file's name)
    kind: str  # local, ssh, serial, qemu, replay
    # Timings come from an emulator (QEMU TCG): they compare only with runs
    # of the same emulator.
    emulated: bool
    # The agent runs on this machine: the host's own probes and tracefs apply.
    is_local: bool

    def metadata(self) -> dict[str, Any]:
        """What the host knows about the target (kind, address, baud...)."""
        ...

    def transport(self, agent: Path | None = None) -> Transport:
        """A transport that starts the agent there; `agent` overrides the
        executable rtbench would build or pick for the target."""
        ...

    def check(self, timeout: float = 10.0) -> Reachability:
        """Whether the target can be reached now, without running anything."""
        ...


def targets_file() -> Path:
    env = os.environ.get("RTBENCH_TARGETS")
    if env:
        return Path(env)
    return platformdirs.user_config_path("rtbench") / "targets.toml"


def load_targets_file(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The named targets: {name: {"spec": ..., other options}}; {} when the
    file does not exist."""
    path = path or targets_file()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise TargetError(f"{path}: cannot read the targets file: {e.strerror}") from None
    except UnicodeDecodeError as e:
        why = f"not UTF-8 text (byte {e.start}): damaged targets file"
        raise TargetError(f"{path}: {why}") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TargetError(f"{path}: not valid TOML: {e}") from None
    named: dict[str, dict[str, Any]] = {}
    for name, entry in doc.items():
        if not isinstance(entry, dict):
            raise TargetError(f"{path}: '{name}' must be a table ([{name}] with spec = \"...\")")
        spec = entry.get("spec")
        if not isinstance(spec, str) or not spec:
            raise TargetError(f'{path}: [{name}] needs spec = "ssh://..." (or serial:, qemu:)')
        if "://" not in spec and ":" not in spec and spec != "local":
            raise TargetError(f"{path}: [{name}] spec {spec!r} must be a spec, not another name")
        named[name] = dict(entry)
    return named


def resolve(spec: str | None, options: Options | None = None, label: str | None = None) -> Target:
    """The target a spec or a targets-file name means; TargetError if none.
    `options` add to (and override) the spec's query string; `label` is the
    name runs store (default: the spec)."""
    spec = (spec or "local").strip()
    opts: dict[str, Any] = dict(options or {})
    label = label or spec
    if spec == "local":
        from rtbench.targets.local import LocalTarget

        check_options("local", opts, ())
        return LocalTarget(label)
    if spec.startswith("replay:"):
        from rtbench.targets.local import ReplayTarget

        check_options("replay", opts, ())
        return ReplayTarget(Path(spec.removeprefix("replay:")), label)
    if spec.startswith("ssh:"):
        from rtbench.targets.ssh import SshTarget

        parts = _split(spec, "ssh://[user@]host[:port] or ssh://alias")
        if not parts.netloc or parts.path not in ("", "/"):
            raise TargetError(f"{spec!r}: write ssh://[user@]host[:port] or ssh://alias")
        return SshTarget.from_url(parts, {**dict(parse_qsl(parts.query)), **opts}, label)
    if spec.startswith("serial:"):
        from rtbench.targets.serial import SerialTarget

        parts = _split(spec, "serial:///dev/ttyUSB0?baud=115200")
        device = parts.netloc + parts.path
        if not device:
            raise TargetError(f"{spec!r}: no device; write serial:///dev/ttyUSB0?baud=115200")
        return SerialTarget.from_url(device, {**dict(parse_qsl(parts.query)), **opts}, label)
    if spec.startswith("qemu:"):
        return _qemu(spec, opts, label)
    if spec.startswith("labgrid:"):
        from rtbench.targets.labgrid import make_target

        place, _, query = spec.removeprefix("labgrid:").partition("?")
        return make_target(place, {**dict(parse_qsl(query)), **opts}, label)
    if "://" in spec or ":" in spec:
        scheme = spec.split(":", 1)[0]
        raise TargetError(
            f"unknown target kind {scheme!r} in {spec!r}: use local, ssh://[user@]host[:port], "
            "serial:///dev/ttyX?baud=N, qemu:NAME, labgrid:PLACE, replay:PATH or a name from "
            f"{targets_file()}"
        )
    return _named(spec, opts)


def close(target: Target) -> None:
    """Ends what a target holds beyond its runs (a labgrid place); targets
    that hold nothing have no `close`."""
    ender = getattr(target, "close", None)
    if ender is not None:
        ender()


def _named(name: str, opts: dict[str, Any]) -> Target:
    path = targets_file()
    named = load_targets_file(path)
    entry = named.get(name)
    if entry is None:
        known = ", ".join(sorted(named)) or "none"
        raise TargetError(
            f"no target named {name!r} in {path} (known: {known}); or give a spec: "
            "ssh://host, serial:///dev/ttyX, qemu:NAME"
        )
    spec = entry.pop("spec")
    entry.pop("description", None)
    try:
        return resolve(spec, {**entry, **opts}, label=name)
    except TargetError as e:
        raise TargetError(f"{path}: [{name}]: {e}") from None


def _qemu(spec: str, opts: dict[str, Any], label: str) -> Target:
    name, _, query = spec.removeprefix("qemu:").partition("?")
    if not name:
        raise TargetError(f"{spec!r}: write qemu:NAME (e.g. qemu:debian-rt)")
    try:
        qemu = importlib.import_module("rtbench.targets.qemu")
    except ModuleNotFoundError as e:
        if e.name != "rtbench.targets.qemu":
            raise
        raise TargetError(f"{spec!r}: QEMU targets are not available in this rtbench") from None
    target: Target = qemu.make_target(name, {**dict(parse_qsl(query)), **opts}, label)
    return target


def _split(spec: str, form: str) -> SplitResult:
    try:
        parts = urlsplit(spec)
        parts.port  # noqa: B018  (urlsplit checks the port only when asked)
    except ValueError as e:
        raise TargetError(f"{spec!r} is not a valid target spec ({e}); write {form}") from None
    return parts


def check_options(kind: str, opts: Options, known: tuple[str, ...]) -> None:
    """A clear error for an option this kind of target does not take."""
    unknown = sorted(set(opts) - set(known))
    if unknown:
        takes = f"take {', '.join(known)}" if known else "take no options"
        raise TargetError(f"{kind} targets {takes}; unknown: {', '.join(unknown)}")


def opt_int(opts: Options, key: str, default: int, lo: int = 1) -> int:
    value = opts.get(key, default)
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise TargetError(f"{key}={value!r}: expected a whole number") from None
    if isinstance(value, bool) or n < lo:
        raise TargetError(f"{key}={value!r}: expected a whole number >= {lo}")
    return n


def opt_float(opts: Options, key: str, default: float) -> float:
    value = opts.get(key, default)
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise TargetError(f"{key}={value!r}: expected a number of seconds") from None
    if isinstance(value, bool) or not x > 0:
        raise TargetError(f"{key}={value!r}: expected a number of seconds > 0")
    return x


def opt_bool(opts: Options, key: str, default: bool) -> bool:
    value = opts.get(key, default)
    if isinstance(value, bool):
        return value
    text = str(value).lower()
    if text in ("1", "yes", "true", "on"):
        return True
    if text in ("0", "no", "false", "off"):
        return False
    raise TargetError(f"{key}={value!r}: expected yes or no")


def opt_str(opts: Options, key: str, default: str | None = None) -> str | None:
    value = opts.get(key, default)
    if value is None or isinstance(value, str):
        return value
    raise TargetError(f"{key}={value!r}: expected text")


__all__ = [
    "Reachability",
    "Target",
    "TargetError",
    "check_options",
    "close",
    "load_targets_file",
    "opt_bool",
    "opt_float",
    "opt_int",
    "opt_str",
    "resolve",
    "targets_file",
]
