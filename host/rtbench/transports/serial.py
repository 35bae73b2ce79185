"""Reads the agent's stream from a serial console (pyserial).

A console is shared: boot messages, a shell's prompt and echo, and kernel
messages interleave with the agent's records, even inside a record's line
(the parser finds the prefix and checks each record's CRC, so noise costs at
most the records it overwrote). A console also never closes, so a run ends
at the agent's `bye` (after a `hello` of this session), at the shell's exit
marker, or after the idle timeout. Intact records before the first `hello`
belong to an earlier run and are skipped.

Two ways to start the agent:
- `command`: a shell on the console; the host types the command line, with
  the run's arguments appended (or put where `{args}` stands), followed by
  an exit marker that carries the agent's exit status back.
- no command: an RTOS firmware starts the agent by itself (after a reset);
  the host waits up to `start_wait` seconds for its `hello`.

Over a slow line the agent sends summaries and histograms only
(`--no-samples`) unless `samples` is set: 115200 baud carries ~11 KB/s.
"""

from __future__ import annotations

import re
import shlex
import time
from collections import deque
from collections.abc import Iterator

import serial

from rtbench.stream import crc32
from rtbench.stream.limits import STDERR_LINES
from rtbench.transports.base import TransportError

PREFIX = b"@rtb "
EXIT_MARKER = "rtbench-exit:"
_EXIT = re.compile(rb"rtbench-exit:(\d+)")
_POLL_S = 0.1
_MAX_LINE = 1 << 20  # a console that never sends a newline still yields lines
_AFTER_BYE_S = 3.0  # how long to wait for the exit marker after `bye`
_CTRL_C = b"\x03"


def record_kind(line: bytes) -> str | None:
    """The kind of an intact record on `line` (CRC checked), else None."""
    at = line.find(PREFIX)
    if at < 0:
        return None
    rest = line[at + len(PREFIX) :].rstrip(b"\r")
    if len(rest) < 10 or rest[-9:-8] != b" ":
        return None
    try:
        if int(rest[-8:], 16) != crc32(rest[:-9]):
            return None
    except ValueError:
        return None
    fields = rest[:-9].split(b" ", 3)
    return fields[2].decode("ascii", "replace") if len(fields) == 4 else None


def _complete_lines(buf: bytearray) -> Iterator[bytes]:
    """Takes the complete lines out of `buf` (and a runaway line's first
    _MAX_LINE bytes), without their line end."""
    while (nl := buf.find(b"\n")) >= 0 or len(buf) > _MAX_LINE:
        cut = nl if nl >= 0 else _MAX_LINE
        line = bytes(buf[:cut])
        del buf[: cut + 1 if nl >= 0 else cut]
        yield line.rstrip(b"\r")


def command_line(command: str, args: list[str]) -> str:
    """What the host types at the target's shell for one run."""
    quoted = shlex.join(args)
    line = command.replace("{args}", quoted) if "{args}" in command else f"{command} {quoted}"
    # The marker is split by the quotes so that the shell's echo of this
    # line never matches: only the shell's output does.
    return f"{line.rstrip()}; echo \"rtbench-\"'exit:'$?"


class SerialTransport:
    def __init__(
        self,
        port: str,
        baud: int = 115200,
        command: str | None = None,
        samples: bool = False,
        start_wait: float = 60.0,
        name: str | None = None,
    ) -> None:
        self.port = port
        self.baud = baud
        self.command = command
        self.samples = samples
        self.start_wait = start_wait
        self.name = name or f"serial://{port}"
        self.idle_timeout: float | None = None
        self.status: int | None = None
        self._ser: serial.Serial | None = None
        self._noise: deque[str] = deque(maxlen=STDERR_LINES)  # its last lines only
        self._ended = False

    def open(self) -> serial.Serial:
        try:
            # serial_for_url: a device path, or rfc2217:// and socket://
            # for a console server.
            return serial.serial_for_url(self.port, baudrate=self.baud, timeout=_POLL_S)
        except (serial.SerialException, ValueError, OSError) as e:
            raise TransportError(f"cannot open {self.port}: {e}") from None

    def connect(self) -> None:
        """Opens the line (once): what arrives from then on is read, so a
        board may be reset after this."""
        if self._ser is None:
            self._ser = self.open()

    def start(self, args: list[str]) -> None:
        self.connect()
        if self.command is None:
            return  # the firmware starts the agent by itself
        if not self.samples and "--no-samples" not in args:
            args = ["--no-samples", *args]
        # Whatever an earlier run left unread (a `bye`!) is not this run's.
        self._discard()
        self._write(b"\n" + command_line(self.command, args).encode() + b"\n")

    # The line itself: pyserial here; a labgrid console in transports/labgrid.py.

    def _discard(self) -> None:
        assert self._ser is not None
        self._ser.reset_input_buffer()

    def _write(self, data: bytes) -> None:
        assert self._ser is not None
        try:
            self._ser.write(data)
            self._ser.flush()
        except serial.SerialException as e:
            raise TransportError(f"cannot write to {self.port}: {e}") from None

    def _read(self) -> bytes:
        """What arrived, waiting at most ~0.1 s for it."""
        assert self._ser is not None
        try:
            return bytes(self._ser.read(max(1, self._ser.in_waiting)))
        except serial.SerialException as e:
            raise TransportError(f"{self.port}: {e}") from None

    def _close(self) -> None:
        ser, self._ser = self._ser, None
        if ser is not None:
            ser.close()

    def _connected(self) -> bool:
        return self._ser is not None

    def lines(self) -> Iterator[bytes]:
        buf = bytearray()
        hello = False
        bye_at: float | None = None
        # Silence is counted from the last record line: console noise does
        # not keep a hung agent's run alive.
        last = time.monotonic()
        while True:
            buf += self._read()
            now = time.monotonic()
            for line in _complete_lines(buf):
                if hello and PREFIX in line:
                    last = now
                kind = record_kind(line)
                if kind is None:
                    self._noise.append(line.decode("utf-8", "replace"))
                    if self.command is not None and (m := _EXIT.search(line)):
                        self.status = int(m.group(1))
                        self._ended = True
                        return
                elif kind == "hello":
                    hello, last = True, now
                elif not hello:
                    continue  # an intact record of an earlier run, still on the line
                yield line
                if kind == "bye" and hello:
                    if self.command is None:
                        self._ended = True
                        return
                    bye_at = now  # the shell's exit marker follows
            if bye_at is not None and now - bye_at > _AFTER_BYE_S:
                self._ended = True
                return
            # Before the hello: the target's own start-up (a board reset, a
            # boot) takes what it takes, the `wait` option says how long.
            wait = self.idle_timeout if hello else self.start_wait
            if wait is not None and now - last > wait:
                raise TransportError(
                    f"the agent on {self.port} wrote nothing for {wait:.0f} s"
                    if hello
                    else f"no `hello` from the agent on {self.port} within {wait:.0f} s"
                )

    def stop(self) -> int | None:
        if not self._connected():
            return self.status
        try:
            if self.command is not None and not self._ended:
                # The shell's interrupt key ends an agent still running.
                self._write(_CTRL_C)
        except TransportError:
            pass
        finally:
            self._close()
        return self.status

    def diagnostics(self) -> str:
        return "\n".join(line for line in list(self._noise)[-20:] if line.strip())
