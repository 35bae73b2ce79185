# SPDX-License-Identifier: Apache-2.0
# The FreeRTOS port (docs/porting.md): the kernel for a firmware on one of
# the boards under agent/boards/ (port.toml lists them), with
# FreeRTOS-Kernel pinned to its upstream release. Included by
# agent/CMakeLists.txt after the board's board.cmake. Cross build:
#   cmake -DRTB_PORT=freertos -DRTB_BOARD=mps2-an385
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-cortex-m3.cmake
# Without internet, point CMake at a copy of the tag:
#   -DFETCHCONTENT_SOURCE_DIR_FREERTOS_KERNEL=/path/to/FreeRTOS-Kernel-V11.3.0
# (`rtbench build` passes it when it finds shared/vendor/FreeRTOS-Kernel-V11.3.0
# or $RTBENCH_FREERTOS_KERNEL: port.toml).
if(NOT RTB_BOARD_DIR)
  message(FATAL_ERROR "the freertos port builds a firmware: give -DRTB_BOARD=<a folder of boards/>")
endif()
set(_port ${CMAKE_CURRENT_SOURCE_DIR}/ports/freertos)
set(RTB_PORT_HAS_LOADS ON)

include(FetchContent)
FetchContent_Declare(freertos_kernel
  GIT_REPOSITORY https://github.com/FreeRTOS/FreeRTOS-Kernel.git
  GIT_TAG V11.3.0 # 9b777ae5c5b8e9e456065a00294d1e5f5f9facf5
  GIT_SHALLOW TRUE)
add_library(freertos_config INTERFACE)
target_include_directories(freertos_config SYSTEM INTERFACE ${_port} ${RTB_BOARD_DIR})
set(FREERTOS_PORT GCC_ARM_CM3 CACHE STRING "FreeRTOS port")
FetchContent_MakeAvailable(freertos_kernel)

target_sources(rtb_core PRIVATE
  ports/freertos/port.c
  ports/freertos/sync.c)
target_link_libraries(rtb_core PUBLIC freertos_kernel)
# The board's main stack is the interrupts' stack once the scheduler runs
# (MSP). The quick suite's deepest use is 152 bytes (IRQ-SUS's nested
# timer and tick, the reset's paint measures it: the `ram` note's
# irq_stack_used); the deepest path is an error's: the stack overflow hook
# prints from PendSV (fprintf), as uC/OS's fatal() does from main. 2 KiB as
# on uC/OS, not the board's 4 KiB default (issue 22: every case in 64 KiB).
target_link_options(rtbench-agent PRIVATE "LINKER:--defsym=__main_stack_size__=0x800")
target_sources(rtbench-agent PRIVATE
  ports/freertos/firmware.c
  ports/freertos/load.c
  boards/common/load.c)
