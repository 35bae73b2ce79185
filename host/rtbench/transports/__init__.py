"""Transports: how the host starts the agent on a target and reads its stream.

One small interface (start, lines, stop) and a driver per kind of target, in
the manner of labgrid: `local` (a process on this machine) and `replay` (a
recorded stream, for tests and `rtbench ingest`). SSH, serial and QEMU
drivers implement the same interface.
"""

from rtbench.transports.base import Transport, TransportError
from rtbench.transports.local import LocalTransport
from rtbench.transports.replay import ReplayTransport

__all__ = ["LocalTransport", "ReplayTransport", "Transport", "TransportError"]
