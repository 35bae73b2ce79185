"""The agent's ports and boards, from the manifests in their folders.

Each port folder carries `port.toml` (agent/ports/<port>/): the OS, its
kernel with the sources the build fetches (URL, pinned tag, the variable
and mirror folder of a local copy), the boards it runs on, and what it
cannot run. Each board folder carries `board.toml` (agent/boards/<board>/):
its compiler and how QEMU emulates it. The host reads these and nothing
else about a port: a new port is a folder, no host edit. A QEMU board
target is named `qemu:<port>-<board>` for every board a port lists.

A kernel's identity is the content of its sources, not their path:
`kernel_digest` hashes a local copy's files (a copy edited in place gets
another digest, so the build cache rebuilds and the run says so); a kernel
CMake fetches is identified by its pinned commit.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PORT_MANIFEST = "port.toml"
BOARD_MANIFEST = "board.toml"


class ManifestError(RuntimeError):
    pass


@dataclass(frozen=True)
class KernelSource:
    """One source tree a port's build fetches (CMake FetchContent)."""

    fetch: str  # FetchContent name: a copy is -DFETCHCONTENT_SOURCE_DIR_<fetch>
    url: str
    tag: str
    commit: str
    env: str  # the variable naming a local copy
    mirror: str  # the folder of shared/vendor/ beside or above the checkout
    marker: str  # a file every copy holds

    def cmake_arg(self, path: Path) -> str:
        return f"-DFETCHCONTENT_SOURCE_DIR_{self.fetch}={path}"


@dataclass(frozen=True)
class Port:
    name: str  # the folder under agent/ports/
    os: str
    description: str
    boards: tuple[str, ...]
    kernel: str = ""  # the kernel's name ("" for an OS the build does not fetch)
    version: str = ""
    sources: tuple[KernelSource, ...] = ()
    tick_rate_hz: int | None = None
    cannot: dict[str, str] = field(default_factory=dict)  # case -> why

    @property
    def firmware(self) -> bool:
        """An RTOS port: it builds a firmware for a board."""
        return bool(self.boards)


@dataclass(frozen=True)
class Board:
    name: str  # the folder under agent/boards/
    cpu: str
    toolchain: str  # agent/cmake/toolchain-<this>.cmake
    compiler: str
    packages: str  # Debian packages providing the compiler and its C library
    qemu: str  # the qemu-system-* executable
    qemu_machine: str
    qemu_cpu: str
    qemu_package: str


def _load(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ManifestError(f"{path}: {e}") from None


def _str(d: dict[str, Any], key: str, where: Path, default: str | None = None) -> str:
    v = d.get(key, default)
    if not isinstance(v, str):
        raise ManifestError(f"{where}: `{key}` must be a string")
    return v


def read_port(path: Path) -> Port:
    d = _load(path)
    kernel = d.get("kernel", {})
    boards = d.get("boards", [])
    cannot = d.get("cannot", {})
    rate = d.get("tick_rate_hz")
    if not isinstance(kernel, dict) or not isinstance(cannot, dict):
        raise ManifestError(f"{path}: [kernel] and [cannot] must be tables")
    if not isinstance(boards, list) or not all(isinstance(b, str) for b in boards):
        raise ManifestError(f"{path}: `boards` must be a list of board names")
    if rate is not None and (not isinstance(rate, int) or rate <= 0):
        raise ManifestError(f"{path}: `tick_rate_hz` must be a positive integer")
    sources = tuple(
        KernelSource(**{k: _str(s, k, path) for k in KernelSource.__dataclass_fields__})
        for s in kernel.get("sources", [])
    )
    name = _str(d, "name", path)
    if name != path.parent.name:
        raise ManifestError(f"{path}: name {name!r} is not its folder's {path.parent.name!r}")
    return Port(
        name=name,
        os=_str(d, "os", path),
        description=_str(d, "description", path, ""),
        boards=tuple(boards),
        kernel=_str(kernel, "name", path, ""),
        version=_str(kernel, "version", path, ""),
        sources=sources,
        tick_rate_hz=rate,
        cannot={str(k): str(v) for k, v in cannot.items()},
    )


def read_board(path: Path) -> Board:
    d = _load(path)
    q = d.get("qemu", {})
    if not isinstance(q, dict):
        raise ManifestError(f"{path}: [qemu] must be a table")
    return Board(
        name=_str(d, "name", path),
        cpu=_str(d, "cpu", path),
        toolchain=_str(d, "toolchain", path),
        compiler=_str(d, "compiler", path),
        packages=_str(d, "packages", path),
        qemu=_str(q, "executable", path),
        qemu_machine=_str(q, "machine", path),
        qemu_cpu=_str(q, "cpu", path),
        qemu_package=_str(q, "package", path),
    )


@functools.cache
def _ports(agent: Path) -> dict[str, Port]:
    return {p.parent.name: read_port(p) for p in sorted(agent.glob(f"ports/*/{PORT_MANIFEST}"))}


@functools.cache
def _boards(agent: Path) -> dict[str, Board]:
    return {p.parent.name: read_board(p) for p in sorted(agent.glob(f"boards/*/{BOARD_MANIFEST}"))}


def ports(agent: Path) -> dict[str, Port]:
    """Every port of the agent sources at `agent` (its folder name -> manifest)."""
    return _ports(agent.resolve())


def boards(agent: Path) -> dict[str, Board]:
    return _boards(agent.resolve())


def port(agent: Path, name: str) -> Port:
    known = ports(agent)
    if name not in known:
        raise ManifestError(
            f"no port {name!r} (agent/ports/{name}/{PORT_MANIFEST}); known: {', '.join(known)}"
        )
    return known[name]


def board(agent: Path, p: Port, name: str) -> Board:
    if name not in p.boards:
        known = ", ".join(f"--port {p.name} --board {b}" for b in p.boards) or "none"
        raise ManifestError(f"no board {name!r} for port {p.name!r}: known are {known}")
    found = boards(agent).get(name)
    if found is None:
        raise ManifestError(f"port {p.name} lists board {name!r}: no agent/boards/{name}/")
    return found


def board_targets(agent: Path) -> dict[str, tuple[Port, Board]]:
    """`<port>-<board>` (as qemu:NAME spells it) for every board a port lists."""
    out: dict[str, tuple[Port, Board]] = {}
    for p in ports(agent).values():
        for b in p.boards:
            out[f"{p.name}-{b}"] = (p, board(agent, p, b))
    return out


def local_source(src: KernelSource, agent: Path) -> Path | None:
    """A local copy of `src` at the pinned tag: $<env>, else `shared/vendor/<mirror>`
    beside or above the checkout; None: CMake fetches it from upstream."""
    env = os.environ.get(src.env)
    if env:
        path = Path(env).expanduser()
        if not (path / src.marker).is_file():
            raise ManifestError(f"{src.env}={env}: no {src.fetch} sources there ({src.marker})")
        return path.resolve()
    start = agent.resolve().parent
    for folder in (start, *start.parents):
        candidate = folder / "shared" / "vendor" / src.mirror
        if (candidate / src.marker).is_file():
            return candidate
    return None


def tree_digest(root: Path) -> str:
    """SHA-256 of the files under `root` (relative names and contents; hidden
    files aside): the same tree anywhere gives the same digest."""
    h = hashlib.sha256()
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not any(x.startswith(".") for x in p.relative_to(root).parts)
    )
    for f in files:
        rel = f.relative_to(root).as_posix().encode()
        data = f.read_bytes()
        h.update(len(rel).to_bytes(4, "little") + rel + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def kernel_digest(sources: dict[KernelSource, Path | None]) -> str:
    """One digest of a port's kernel sources: a local copy by its content, a
    fetched one by its pinned commit."""
    h = hashlib.sha256()
    for s, path in sources.items():
        h.update(f"{s.fetch}\0".encode())
        h.update((tree_digest(path) if path is not None else f"commit {s.commit}").encode())
    return h.hexdigest()
