"""Building the agent, for this machine or for a target architecture.

Sources: $RTBENCH_AGENT_SRC, else the copy shipped inside the installed
package (`rtbench/agent/`), else `agent/` of the checkout this module sits
in. Builds go to $RTBENCH_BUILD_DIR, else `build/` beside the checkout's
`agent/`, else the user's cache directory (an installed rtbench builds on
first use, from any working directory).

Every build directory keeps a stamp: the SHA-256 of the agent's sources
plus the build settings. A call whose stamp matches returns the binary at
once, without running CMake; a source change rebuilds.

An RTOS port builds a firmware instead (`ensure_firmware`): the agent, the
port and one board in one ELF file, cross-compiled for the board's CPU.
What to build comes from the port's and the board's manifests
(rtbench.ports): the port's kernel is fetched by CMake at a pinned tag; on
a machine without internet a copy of that tag is used instead, from the
variable the manifest names (RTBENCH_FREERTOS_KERNEL...) or its folder of
`shared/vendor/` beside or above the checkout. The firmware's stamp holds
the kernel's content digest, not its path: a copy edited in place is
rebuilt. Targets get a
static binary by default, so one file runs on any Linux of its
architecture (an initramfs, a board): `agent_digest` lets a target copy it
only when it changed.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import platformdirs

from rtbench import ports

Flavor = Literal["release", "test"]

AGENT_NAME = "rtbench-agent"
# RSP-IO's stimulator, built beside the agent (agent/tools/rtb-stim.c).
STIM_NAME = "rtb-stim"
# The rtbench package (this file is rtbench/machine/build.py): an installed
# package carries the agent's sources in it.
_PACKAGE = Path(__file__).resolve().parents[1]
ENV_SRC = "RTBENCH_AGENT_SRC"
ENV_BUILD = "RTBENCH_BUILD_DIR"
_STAMP = ".rtbench-stamp"
_CONFIG = ".rtbench-config"
# Files outside agent/ that a checkout's CMakeLists builds too (the test
# round trip, a bench tool): their changes must rebuild like the agent's.
_EXTRA_SOURCES = ("tests/agent/roundtrip.c", "bench/stamp_cost.c")


# Told what a build is about to do, around it (the CLI shows a spinner or a
# line: a first build takes tens of seconds); called only when one runs.
Announce = Callable[[str], AbstractContextManager[object]]


def _quiet(doing: str) -> AbstractContextManager[object]:
    return nullcontext()


class BuildError(RuntimeError):
    pass


class KernelUnavailable(BuildError):
    """An RTOS kernel neither mirrored locally nor fetchable from upstream."""


@dataclass(frozen=True)
class Arch:
    name: str  # as `rtbench build --arch` spells it
    machines: tuple[str, ...]  # platform.machine() values of a native host
    compiler: str  # the cross compiler's command
    packages: str  # Debian packages providing it
    qemu_user: tuple[str, ...]  # user-mode emulators that run its binaries


ARCHES: dict[str, Arch] = {
    a.name: a
    for a in (
        Arch(
            "x86_64",
            ("x86_64", "amd64"),
            "x86_64-linux-gnu-gcc",
            "gcc-x86-64-linux-gnu libc6-dev-amd64-cross",
            ("qemu-x86_64-static", "qemu-x86_64"),
        ),
        Arch(
            "aarch64",
            ("aarch64", "arm64"),
            "aarch64-linux-gnu-gcc",
            "gcc-aarch64-linux-gnu libc6-dev-arm64-cross",
            ("qemu-aarch64-static", "qemu-aarch64"),
        ),
        Arch(
            "armhf",
            ("armv7l", "armv8l", "armhf"),
            "arm-linux-gnueabihf-gcc",
            "gcc-arm-linux-gnueabihf libc6-dev-armhf-cross",
            ("qemu-arm-static", "qemu-arm"),
        ),
    )
}


def host_arch() -> str | None:
    """This machine's architecture as ARCHES names it (None: not one of them)."""
    m = platform.machine().lower()
    return next((a.name for a in ARCHES.values() if m in a.machines), None)


def agent_source() -> Path:
    env = os.environ.get(ENV_SRC)
    here = _PACKAGE
    candidates = [Path(env)] if env else [here / "agent", here.parents[1] / "agent"]
    for src in candidates:
        if (src / "CMakeLists.txt").is_file():
            return src
    raise BuildError(
        f"agent sources not found at {' or '.join(map(str, candidates))}; set {ENV_SRC} to "
        "the agent/ folder of an rtbench checkout"
    )


def _source_files(src: Path) -> list[Path]:
    # Every file of the agent folder, as setup.py ships it (hidden ones aside).
    files = [
        p
        for p in src.rglob("*")
        if p.is_file() and not any(x.startswith(".") for x in p.relative_to(src).parts)
    ]
    files += [src.parent / x for x in _EXTRA_SOURCES if (src.parent / x).is_file()]
    return sorted(files)


def source_digest(src: Path, settings: str) -> str:
    """SHA-256 of every file the build reads, with their names, and the settings."""
    h = hashlib.sha256(settings.encode())
    for f in _source_files(src):
        rel = os.path.relpath(f, src).encode()
        h.update(len(rel).to_bytes(4, "little") + rel)
        data = f.read_bytes()
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def agent_digest(path: Path) -> str:
    """SHA-256 of a built agent: a target copies the binary only when this changed."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _build_root(src: Path) -> Path:
    env = os.environ.get(ENV_BUILD)
    if env:
        return Path(env)
    # A checkout builds beside its sources; an installed package's folder
    # belongs to pip, and a checkout may belong to another user (CI's root):
    # those build in the user's cache.
    local = src.parent / "build"
    if src.parent != _PACKAGE and os.access(
        local if local.exists() else src.parent, os.W_OK
    ):
        return local
    return platformdirs.user_cache_path("rtbench") / "build"


def build_name(flavor: Flavor, arch: str | None = None, static: bool = False) -> str:
    native = arch is None or arch == host_arch()
    if native and not static:
        return flavor  # build/release, build/test: the names a checkout always had
    return f"{arch or host_arch() or 'native'}-{flavor}" + ("-static" if static else "")


def build_dir(flavor: Flavor, arch: str | None = None, static: bool = False) -> Path:
    return _build_root(agent_source()) / build_name(flavor, arch, static)


def _configure_args(flavor: Flavor, src: Path, arch: str | None, static: bool) -> list[str]:
    args = (
        ["-DRTB_TEST_BUILD=ON", "-DCMAKE_BUILD_TYPE=Debug"]
        if flavor == "test"
        else ["-DCMAKE_BUILD_TYPE=Release"]
    )
    if static:
        args.append("-DRTB_STATIC=ON")
    if arch is not None and arch != host_arch():
        args.append(f"-DCMAKE_TOOLCHAIN_FILE={src / 'cmake' / f'toolchain-{arch}.cmake'}")
    return args


def _run(cmd: list[str]) -> None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as e:
        raise BuildError(f"{cmd[0]}: {e.strerror}") from e
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
        raise BuildError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{tail}")


@contextmanager
def _locked(out: Path) -> Iterator[None]:
    # Test sessions and CLI calls may build the same directory at once;
    # two CMake builds in one tree corrupt it.
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def _check_settings(flavor: Flavor, arch: str | None, static: bool) -> None:
    if arch is not None and arch not in ARCHES:
        raise BuildError(f"unknown architecture {arch!r}: choose one of {', '.join(ARCHES)}")


def _check_tools(arch: str | None) -> None:
    if shutil.which("cmake") is None:
        raise BuildError("'cmake' not found: rtbench needs a C compiler and CMake")
    if arch is None or arch == host_arch():
        if shutil.which("cc") is None:
            raise BuildError("'cc' not found: rtbench needs a C compiler and CMake")
        return
    a = ARCHES[arch]
    if shutil.which(a.compiler) is None:
        raise BuildError(
            f"'{a.compiler}' not found: building for {arch} needs a cross compiler "
            f"(Debian: apt-get install {a.packages})"
        )


def ensure_agent(
    flavor: Flavor = "release",
    arch: str | None = None,
    static: bool | None = None,
    announce: Announce = _quiet,
) -> Path:
    """Builds the agent if its sources or settings changed; returns the executable.

    `arch` None builds for this machine; a name from ARCHES cross-builds.
    `static` None links statically exactly when an arch is given (a target).
    """
    static = arch is not None if static is None else static
    _check_settings(flavor, arch, static)
    src = agent_source()
    out = _build_root(src) / build_name(flavor, arch, static)
    exe = out / AGENT_NAME
    args = _configure_args(flavor, src, arch, static)
    config = "\n".join([str(src), *args])
    digest = source_digest(src, config)
    if exe.is_file() and _read(out / _STAMP) == digest:
        return exe  # current: no compiler or CMake needed
    _check_tools(arch)
    try:
        with announce(f"building the agent ({flavor}) in {out}"):
            _build(src, out, args, config, digest)
    except OSError as e:
        raise BuildError(f"cannot build in {out}: {e}; set {ENV_BUILD} to a writable folder") from e
    return exe


def _build(src: Path, out: Path, args: list[str], config: str, digest: str) -> None:
    exe = out / AGENT_NAME
    with _locked(out):
        if exe.is_file() and _read(out / _STAMP) == digest:
            return  # another process built it while this one waited
        if _read(out / _CONFIG) != config and out.exists():
            # Configured for other sources or settings: CMake refuses to
            # switch a build tree to another source folder or toolchain.
            shutil.rmtree(out)
        if not (out / "CMakeCache.txt").is_file():
            _run(["cmake", "-S", str(src), "-B", str(out), *args])
            _write(out / _CONFIG, config)
        _run(["cmake", "--build", str(out), "-j", str(os.cpu_count() or 2)])
        if not exe.is_file():
            raise BuildError(f"the build did not produce {exe}")
        _write(out / _STAMP, digest)


def kernel_sources(port: str, src: Path | None = None) -> dict[ports.KernelSource, Path | None]:
    """The local copy of each kernel source of `port` (None: CMake fetches it)."""
    src = src or agent_source()
    try:
        p = ports.port(src, port)
        return {s: ports.local_source(s, src) for s in p.sources}
    except ports.ManifestError as e:
        raise BuildError(str(e)) from None


def kernel_identity(port: str) -> dict[str, str]:
    """What a firmware's kernel is: name, version, and the digest of its
    sources' content (rtbench.ports.kernel_digest)."""
    src = agent_source()
    try:
        p = ports.port(src, port)
    except ports.ManifestError as e:
        raise BuildError(str(e)) from None
    if not p.sources:
        return {}
    return {
        "kernel": p.kernel,
        "kernel_version": p.version,
        "kernel_digest": ports.kernel_digest(kernel_sources(port, src)),
    }


def firmware_dir(port: str, board: str, flavor: Flavor = "release") -> Path:
    return _build_root(agent_source()) / f"{port}-{board}-{flavor}"


def ensure_firmware(
    port: str, board: str, flavor: Flavor = "release", announce: Announce = _quiet
) -> Path:
    """Builds the firmware of `port` for `board` when its sources, its
    kernel's or its settings changed; returns the ELF file (what QEMU's
    -kernel or a flasher takes)."""
    src = agent_source()
    try:
        p = ports.port(src, port)
        b = ports.board(src, p, board)
    except ports.ManifestError as e:
        raise BuildError(str(e)) from None
    out = _build_root(src) / f"{port}-{board}-{flavor}"
    args = [
        f"-DRTB_PORT={port}",
        f"-DRTB_BOARD={board}",
        f"-DCMAKE_TOOLCHAIN_FILE={src / 'cmake' / f'toolchain-{b.toolchain}.cmake'}",
        "-DRTB_TEST_BUILD=ON" if flavor == "test" else "-DRTB_TEST_BUILD=OFF",
        "-DCMAKE_BUILD_TYPE=Release",
    ]
    sources = kernel_sources(port, src)
    fetched = [s for s, path in sources.items() if path is None]
    # The stamp keys on the kernel's content; the configuration (which
    # CMake must redo for another copy) on its path too.
    settings = "\n".join([str(src), *args, ports.kernel_digest(sources)])
    args += [s.cmake_arg(path) for s, path in sources.items() if path is not None]
    config = "\n".join([str(src), *args])
    digest = source_digest(src, settings)
    exe = out / AGENT_NAME
    if exe.is_file() and _read(out / _STAMP) == digest:
        return exe
    if shutil.which("cmake") is None:
        raise BuildError("'cmake' not found: rtbench needs CMake to build a firmware")
    if shutil.which(b.compiler) is None:
        raise BuildError(
            f"'{b.compiler}' not found: the {port} firmware for {board} needs it "
            f"(Debian: apt-get install {b.packages})"
        )
    doing = f"building the {port} firmware for {board} ({flavor}) in {out}"
    if fetched:
        doing += ", fetching " + ", ".join(f"{s.url} {s.tag}" for s in fetched)
    try:
        with announce(doing):
            _build(src, out, args, config, digest)
    except OSError as e:
        raise BuildError(f"cannot build in {out}: {e}; set {ENV_BUILD} to a writable folder") from e
    except BuildError as e:
        missing = [s for s in fetched if s.fetch.lower() in str(e).lower()]
        if missing:
            names = ", ".join(f"{s.url} {s.tag}" for s in missing)
            envs = ", ".join(s.env for s in missing)
            mirrors = ", ".join(f"shared/vendor/{s.mirror}" for s in missing)
            raise KernelUnavailable(
                f"{names} could not be fetched from upstream and no mirror was found: set "
                f"{envs} to a copy of that tag, or put it at {mirrors} beside the checkout."
                f"\n{e}"
            ) from None
        raise
    return exe
