"""`rtbench list` shows a column per port from the case tables shipped in
`host/rtbench/data/<port>-cases.jsonl`, so that listing builds nothing; each
RTOS port's table must be what its firmware's `--list` says, booted once in
QEMU (the POSIX one: tests/agent/test_catalogue_snapshot.py)."""

from __future__ import annotations

import pytest
import tools

from rtbench.catalogue import parse_list, port_cases, shipped_ports
from rtbench.targets.qemu_board import BoardSettings, BoardSpec, BoardTarget, board_specs

pytestmark = pytest.mark.tools("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi")

# The first board of each RTOS port: the one `make catalogue` lists.
FIRST_BOARD: dict[str, BoardSpec] = {}
for _spec in board_specs().values():
    FIRST_BOARD.setdefault(_spec.port.name, _spec)


def test_every_rtos_port_ships_its_table() -> None:
    assert set(FIRST_BOARD) <= set(shipped_ports()), "run `make catalogue` and commit the files"


@pytest.mark.parametrize("port", sorted(FIRST_BOARD))
def test_shipped_case_table_is_the_firmwares(port: str) -> None:
    spec = FIRST_BOARD[port]
    tools.firmware(port, spec.board.name)  # a kernel neither mirrored nor fetchable: skip
    listed = parse_list(BoardTarget(spec, BoardSettings.from_options({})).case_table())
    assert listed == port_cases(port), (
        f"host/rtbench/data/{port}-cases.jsonl differs from the {port} firmware's --list: "
        "run `make catalogue` and commit the file"
    )
