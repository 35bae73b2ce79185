"""The agent at a shell on a labgrid console (labgrid's `ConsoleProtocol`:
a `SerialDriver` on a board's UART or an exported `NetworkSerialPort`).

It is the serial transport (transports/serial.py) with labgrid's console as
its line: the host types the agent's command line with an exit marker,
reads records between the console's noise, and ends at the agent's `bye`
and the marker. The console stays open after a run (the place's labgrid
target owns it); the target releases it with the place.
"""

from __future__ import annotations

from typing import Any

from rtbench.transports.base import TransportError
from rtbench.transports.serial import SerialTransport

_POLL_S = 0.1
_CHUNK = 1 << 16


class ConsoleTransport(SerialTransport):
    def __init__(
        self,
        console: Any,  # a labgrid ConsoleProtocol driver, active
        command: str,
        name: str,
        samples: bool = False,
        start_wait: float = 60.0,
    ) -> None:
        super().__init__(str(console), 0, command, samples, start_wait, name)
        self.console = console
        self._open = False

    def connect(self) -> None:
        self._open = True  # labgrid activated the console with its place

    def _timeout_error(self) -> type[Exception]:
        from pexpect import TIMEOUT  # labgrid's consoles signal "nothing yet" with it

        nothing: type[Exception] = TIMEOUT
        return nothing

    def _discard(self) -> None:
        nothing = self._timeout_error()
        for _ in range(1000):  # a console that never pauses still ends this
            try:
                self.console.read(size=1, timeout=0.0, max_size=_CHUNK)
            except nothing:
                return
            except Exception as e:
                raise TransportError(f"{self.name}: {e}") from None

    def _write(self, data: bytes) -> None:
        try:
            self.console.write(data)
        except Exception as e:
            raise TransportError(f"cannot write to the console of {self.name}: {e}") from None

    def _read(self) -> bytes:
        try:
            return bytes(self.console.read(size=1, timeout=_POLL_S, max_size=_CHUNK))
        except self._timeout_error():
            return b""
        except Exception as e:
            raise TransportError(f"{self.name}: {e}") from None

    def _close(self) -> None:
        self._open = False

    def _connected(self) -> bool:
        return self._open
