# SPDX-License-Identifier: Apache-2.0
# What every RTOS firmware with newlib shares (boards/common/): the agent's
# entry (agent_main.c), events on the board's timers, timestamps, stack
# notes, the C library's system calls and its printf fix. A board's
# board.cmake includes this; the port supplies what firmware.h lists.
set(RTB_PORT_FIRMWARE ON)
set(RTB_FIRMWARE_ARGS "--no-samples SEM-SHF" CACHE STRING
    "The plan a firmware runs when the host passes no arguments")
set(_common ${CMAKE_CURRENT_SOURCE_DIR}/boards/common)
target_include_directories(rtb_core PUBLIC ${_common})
target_sources(rtb_core PRIVATE
  boards/common/event.c
  boards/common/timing.c
  boards/common/stacks.c)
# NOISE-HW: the agent masks interrupts itself (rtb/hwlat.h).
target_sources(rtb_core PRIVATE boards/common/hwlat.c)
set(RTB_BOARD_HWLAT ON)
target_link_libraries(rtb_core PUBLIC m)
# What Debian's newlib leaves out (PRId64 without <sys/types.h>, sched_getcpu).
target_compile_options(rtb_core PUBLIC -include ${_common}/compat.h)
# Linked as objects, not from rtb_core's archive: the C library, linked
# after it, would not pull in the system calls and the printf fix.
target_sources(rtbench-agent PRIVATE
  boards/common/agent_main.c
  boards/common/syscalls.c
  boards/common/printf_z.c)
target_compile_definitions(rtbench-agent PRIVATE RTB_FIRMWARE_ARGS="${RTB_FIRMWARE_ARGS}")
target_link_options(rtbench-agent PRIVATE
  -Wl,--wrap=_vfprintf_r,--wrap=_svfprintf_r,--wrap=_vfiprintf_r,--wrap=_svfiprintf_r)
