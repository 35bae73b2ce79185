"""This machine, and a recorded stream: the two targets that need no link."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

from rtbench.machine.build import BuildError, ensure_agent
from rtbench.targets import Reachability, TargetError
from rtbench.transports import LocalTransport, ReplayTransport, Transport


class LocalTarget:
    kind = "local"
    emulated = False
    is_local = True

    def __init__(self, name: str = "local") -> None:
        self.name = name

    def metadata(self) -> dict[str, Any]:
        return {"kind": "local", "host": platform.node(), "arch": platform.machine()}

    def transport(self, agent: Path | None = None) -> Transport:
        if agent is None:
            try:
                agent = ensure_agent("release")
            except BuildError as e:
                raise TargetError(str(e)) from None
        return LocalTransport(agent)

    def check(self, timeout: float = 10.0) -> Reachability:
        del timeout
        return Reachability(True, "this machine")


class ReplayTarget:
    kind = "replay"
    emulated = False
    is_local = False

    def __init__(self, path: Path, name: str | None = None) -> None:
        self.path = path
        self.name = name or f"replay:{path}"

    def metadata(self) -> dict[str, Any]:
        return {"kind": "replay", "path": str(self.path)}

    def transport(self, agent: Path | None = None) -> Transport:
        del agent
        if not self.path.is_file():
            raise TargetError(f"replay: {self.path} is not a file")
        return ReplayTransport(self.path)

    def check(self, timeout: float = 10.0) -> Reachability:
        del timeout
        ok = self.path.is_file()
        return Reachability(ok, "a recorded stream" if ok else f"{self.path} is not a file")
