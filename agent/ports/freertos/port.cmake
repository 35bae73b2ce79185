# SPDX-License-Identifier: Apache-2.0
# The FreeRTOS firmware: the agent's core and cases, this port, one board,
# and FreeRTOS-Kernel pinned to its upstream release. Included by the
# agent's CMakeLists.txt when RTB_PORT is freertos (cross build:
# -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-cortex-m3.cmake).
#
# Without internet, point CMake at a copy of that tag:
#   -DFETCHCONTENT_SOURCE_DIR_FREERTOS_KERNEL=/path/to/FreeRTOS-Kernel-V11.3.0
# (`rtbench build` passes it when it finds shared/vendor/FreeRTOS-Kernel-V11.3.0
# or $RTBENCH_FREERTOS_KERNEL).
set(RTB_BOARD "mps2-an385" CACHE STRING "Board of the FreeRTOS port (a folder under board/)")
set(RTB_FIRMWARE_ARGS "--no-samples SEM-SHF" CACHE STRING
    "The plan a firmware runs when the host passes no arguments")
set(_port ${CMAKE_CURRENT_SOURCE_DIR}/ports/freertos)
set(_board ${_port}/board/${RTB_BOARD})
if(NOT EXISTS ${_board}/board.c)
  message(FATAL_ERROR "no board ${RTB_BOARD} in ${_port}/board")
endif()

include(FetchContent)
FetchContent_Declare(freertos_kernel
  GIT_REPOSITORY https://github.com/FreeRTOS/FreeRTOS-Kernel.git
  GIT_TAG V11.3.0 # 9b777ae5c5b8e9e456065a00294d1e5f5f9facf5
  GIT_SHALLOW TRUE)
add_library(freertos_config INTERFACE)
target_include_directories(freertos_config SYSTEM INTERFACE ${_port} ${_board})
set(FREERTOS_PORT GCC_ARM_CM3 CACHE STRING "FreeRTOS port")
FetchContent_MakeAvailable(freertos_kernel)

file(GLOB _core ${CMAKE_CURRENT_SOURCE_DIR}/core/*.c)
file(GLOB _cases ${CMAKE_CURRENT_SOURCE_DIR}/cases/*.c)
add_executable(rtbench-agent
  ${_core} ${_cases}
  ${_port}/port.c ${_port}/event.c ${_port}/timing.c ${_port}/firmware.c
  ${_port}/load.c ${_port}/stacks.c ${_port}/syscalls.c ${_port}/printf_z.c
  ${_board}/board.c ${_board}/startup.c)
target_include_directories(rtbench-agent PRIVATE include core ${_port} ${_board})
target_link_libraries(rtbench-agent PRIVATE freertos_kernel m)
# Debian's newlib defines PRId64 and friends only after <sys/types.h>.
target_compile_options(rtbench-agent PRIVATE ${RTB_WARNINGS} -include sys/types.h)
# uint32_t is `long` in newlib: THR-SW prints it with %u (a core fix is
# asked for in the contract work); until then no -Werror on its formats.
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/cases/thr_sw.c PROPERTIES
  COMPILE_OPTIONS -Wno-error=format)
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/core/main.c PROPERTIES
  COMPILE_DEFINITIONS main=rtb_agent_main)
target_link_options(rtbench-agent PRIVATE -T${_board}/${RTB_BOARD}.ld -Wl,-Map=rtbench-agent.map
  -Wl,--wrap=_vfprintf_r,--wrap=_svfprintf_r,--wrap=_vfiprintf_r,--wrap=_svfiprintf_r)
set_target_properties(rtbench-agent PROPERTIES LINK_DEPENDS ${_board}/${RTB_BOARD}.ld)

set(_flags "${CMAKE_C_FLAGS} ${CMAKE_C_FLAGS_${CMAKE_BUILD_TYPE}}")
if(RTB_TEST_BUILD)
  # No sanitizers on a microcontroller: the test build is the fault hooks.
  target_compile_definitions(rtbench-agent PRIVATE RTB_TEST_HOOKS=1)
endif()
string(STRIP "${_flags}" _flags)
target_compile_definitions(rtbench-agent PRIVATE
  RTB_BUILD_FLAGS="${_flags}"
  RTB_BUILD_TYPE="${CMAKE_BUILD_TYPE}$<$<BOOL:${RTB_TEST_BUILD}>:+test>"
  RTB_FIRMWARE_ARGS="${RTB_FIRMWARE_ARGS}"
  RTB_BOARD_NAME="${RTB_BOARD}")
