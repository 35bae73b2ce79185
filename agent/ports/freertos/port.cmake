# SPDX-License-Identifier: Apache-2.0
# The FreeRTOS port (docs/porting.md): a firmware for one board, with
# FreeRTOS-Kernel pinned to its upstream release. Included by
# agent/CMakeLists.txt once rtb_core and rtbench-agent exist. Cross build:
#   cmake -DRTB_PORT=freertos -DRTB_BOARD=mps2-an385
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-cortex-m3.cmake
# Without internet, point CMake at a copy of the tag:
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
set(RTB_PORT_FIRMWARE ON)
set(RTB_PORT_HAS_LOADS ON)

include(FetchContent)
FetchContent_Declare(freertos_kernel
  GIT_REPOSITORY https://github.com/FreeRTOS/FreeRTOS-Kernel.git
  GIT_TAG V11.3.0 # 9b777ae5c5b8e9e456065a00294d1e5f5f9facf5
  GIT_SHALLOW TRUE)
add_library(freertos_config INTERFACE)
target_include_directories(freertos_config SYSTEM INTERFACE ${_port} ${_board})
set(FREERTOS_PORT GCC_ARM_CM3 CACHE STRING "FreeRTOS port")
FetchContent_MakeAvailable(freertos_kernel)

target_sources(rtb_core PRIVATE
  ports/freertos/port.c
  ports/freertos/sync.c
  ports/freertos/event.c
  ports/freertos/timing.c
  ports/freertos/stacks.c
  ports/freertos/board/${RTB_BOARD}/board.c)
target_include_directories(rtb_core PUBLIC ${_board})
target_link_libraries(rtb_core PUBLIC freertos_kernel m)
# What Debian's newlib leaves out (PRId64 without <sys/types.h>, sched_getcpu).
target_compile_options(rtb_core PUBLIC -include ${_port}/compat.h)
# What newlib and the linker need (the C library's system calls, the
# printf fix, the vector table) is linked as objects, not from rtb_core's
# archive: the C library, linked after it, would not pull them in.
target_sources(rtbench-agent PRIVATE
  ports/freertos/firmware.c
  ports/freertos/load.c
  ports/freertos/syscalls.c
  ports/freertos/printf_z.c
  ports/freertos/board/${RTB_BOARD}/startup.c)
target_compile_definitions(rtbench-agent PRIVATE RTB_FIRMWARE_ARGS="${RTB_FIRMWARE_ARGS}")
# The start-up code and vector table come from the board: keep them whole.
target_link_options(rtbench-agent PRIVATE
  -T${_board}/${RTB_BOARD}.ld -Wl,-Map=rtbench-agent.map -Wl,--undefined=Reset_Handler
  -Wl,--wrap=_vfprintf_r,--wrap=_svfprintf_r,--wrap=_vfiprintf_r,--wrap=_svfiprintf_r)
set_target_properties(rtbench-agent PROPERTIES LINK_DEPENDS ${_board}/${RTB_BOARD}.ld)
