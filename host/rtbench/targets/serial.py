"""A system reached through a serial console: a board's UART, a USB serial
adapter, a console server (rfc2217:// or socket:// through pyserial).

Options (query string or targets file): `baud` (default 115200), `cmd` (the
command line that starts the agent at the target's shell; without it the
host waits for a firmware to start the agent by itself), `samples` (yes:
raw samples too, for a fast line), `wait` (seconds to wait for the agent's
`hello`, default 60).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rtbench.targets import (
    Options,
    Reachability,
    check_options,
    opt_bool,
    opt_float,
    opt_int,
    opt_str,
)
from rtbench.transports import TransportError
from rtbench.transports.serial import SerialTransport

OPTIONS = ("baud", "cmd", "samples", "wait")


class SerialTarget:
    kind = "serial"
    emulated = False
    is_local = False

    def __init__(
        self,
        name: str,
        device: str,
        baud: int = 115200,
        command: str | None = None,
        samples: bool = False,
        start_wait: float = 60.0,
    ) -> None:
        self.name = name
        self.device = device
        self.baud = baud
        self.command = command
        self.samples = samples
        self.start_wait = start_wait

    @classmethod
    def from_url(cls, device: str, opts: Options, label: str) -> SerialTarget:
        check_options("serial", opts, OPTIONS)
        return cls(
            label,
            device,
            opt_int(opts, "baud", 115200, lo=50),
            opt_str(opts, "cmd") or None,
            opt_bool(opts, "samples", False),
            opt_float(opts, "wait", 60.0),
        )

    def metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"kind": "serial", "device": self.device, "baud": self.baud}
        meta["start"] = "command" if self.command else "firmware"
        meta["samples"] = self.samples
        return meta

    def transport(self, agent: Path | None = None) -> SerialTransport:
        # The agent is already on the target (a firmware, or a file the
        # command names): nothing is copied over a console.
        del agent
        return SerialTransport(
            self.device, self.baud, self.command, self.samples, self.start_wait, self.name
        )

    def check(self, timeout: float = 10.0) -> Reachability:
        del timeout
        try:
            self.transport().open().close()
        except TransportError as e:
            return Reachability(False, str(e))
        return Reachability(True, f"{self.device} opens at {self.baud} baud")
