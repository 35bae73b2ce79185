"""Building the agent for this machine with CMake.

The host finds the agent's sources beside the package (a checkout) or where
RTBENCH_AGENT_SRC points, and builds into RTBENCH_BUILD_DIR or `build/` next
to them. CMake decides what is out of date, so calling this before every run
costs a fraction of a second when nothing changed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Literal

import platformdirs

Flavor = Literal["release", "test"]

AGENT_NAME = "rtbench-agent"


class BuildError(RuntimeError):
    pass


def agent_source() -> Path:
    env = os.environ.get("RTBENCH_AGENT_SRC")
    src = Path(env) if env else Path(__file__).resolve().parents[2] / "agent"
    if not (src / "CMakeLists.txt").is_file():
        raise BuildError(
            f"agent sources not found at {src}; set RTBENCH_AGENT_SRC to the agent/ folder "
            "of an rtbench checkout"
        )
    return src


def build_dir(flavor: Flavor) -> Path:
    env = os.environ.get("RTBENCH_BUILD_DIR")
    if env:
        return Path(env) / flavor
    root = agent_source().parent / "build"
    if os.access(root.parent, os.W_OK):
        return root / flavor
    return platformdirs.user_cache_path("rtbench") / "build" / flavor


def _configure_args(flavor: Flavor) -> list[str]:
    if flavor == "test":
        return ["-DRTB_TEST_BUILD=ON", "-DCMAKE_BUILD_TYPE=Debug"]
    return ["-DCMAKE_BUILD_TYPE=Release"]


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
        raise BuildError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{tail}")


def ensure_agent(flavor: Flavor = "release") -> Path:
    """Configures (once) and builds the agent; returns the executable's path."""
    for tool in ("cmake", "cc"):
        if shutil.which(tool) is None:
            raise BuildError(f"'{tool}' not found: rtbench needs a C compiler and CMake")
    src, out = agent_source(), build_dir(flavor)
    if not (out / "CMakeCache.txt").is_file():
        _run(["cmake", "-S", str(src), "-B", str(out), *_configure_args(flavor)])
    _run(["cmake", "--build", str(out), "-j", str(os.cpu_count() or 2)])
    exe = out / AGENT_NAME
    if not exe.is_file():
        raise BuildError(f"the build did not produce {exe}")
    return exe
