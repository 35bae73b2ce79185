# SPDX-License-Identifier: Apache-2.0
# The mps2-an385 board (ARM's MPS2 FPGA image for Cortex-M3, as QEMU
# emulates it), for every RTOS port: start-up and vector table, UART,
# timers, NVIC, semihosting exit, the linker script. Included by
# agent/CMakeLists.txt before the port's port.cmake, with
# cmake/toolchain-cortex-m3.cmake. The board's facts for the host
# (compiler, QEMU machine) are in board.toml.
set(_board ${CMAKE_CURRENT_SOURCE_DIR}/boards/mps2-an385)
target_sources(rtb_core PRIVATE boards/mps2-an385/board.c)
target_include_directories(rtb_core PUBLIC ${_board})
# The start-up code and vector table are linked as objects: the C
# library, linked after rtb_core's archive, would not pull them in.
target_sources(rtbench-agent PRIVATE boards/mps2-an385/startup.c)
target_link_options(rtbench-agent PRIVATE
  -T${_board}/mps2-an385.ld -Wl,-Map=rtbench-agent.map -Wl,--undefined=Reset_Handler)
set_target_properties(rtbench-agent PROPERTIES LINK_DEPENDS ${_board}/mps2-an385.ld)
include(${CMAKE_CURRENT_SOURCE_DIR}/boards/common/firmware.cmake)
# RSP-IO's line: the dual timer's emulated edges in, the FPGA IO LED out.
set(RTB_BOARD_LINE ON)
