# SPDX-License-Identifier: Apache-2.0
# The POSIX port (docs/porting.md, "Files a port provides"): included by
# agent/CMakeLists.txt once the rtb_core library and rtbench-agent exist.
target_sources(rtb_core PRIVATE
  ports/posix/port.c
  ports/posix/power.c
  ports/posix/timing.c
)
# power.c is in rtb_core: port.c attaches it, and rtbench-roundtrip links
# rtb_core without the agent's main.
target_sources(rtbench-agent PRIVATE ports/posix/main.c)
# OFF builds the agent as a port without loads (core/load_none.c): the path
# such a port takes, testable on this machine (tests/agent/test_port_contract.py).
option(RTB_POSIX_LOADS "Build the POSIX port with its background loads" ON)
if(RTB_POSIX_LOADS)
  target_sources(rtbench-agent PRIVATE
    loads/posix_kernel.c
    loads/posix_load.c
    loads/posix_kinds.c
    loads/posix_stress.c
    loads/load_spec.c
  )
  set(RTB_PORT_HAS_LOADS ON)
endif()

find_package(Threads REQUIRED)
target_link_libraries(rtb_core PUBLIC Threads::Threads m)
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  target_link_libraries(rtb_core PUBLIC rt)
endif()

