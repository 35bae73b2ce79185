# SPDX-License-Identifier: Apache-2.0
# The uC/OS-II port (docs/porting.md): the kernel for a firmware on one of
# the boards under agent/boards/ (port.toml lists them). uC/OS-II comes
# from upstream at a pinned tag (CMake FetchContent); it needs neither
# uC/CPU nor uC/LIB and has no CMake file, so this lists its files.
# Without internet, point CMake at a copy of the tag:
#   -DFETCHCONTENT_SOURCE_DIR_UC_OS2=/path/to/uC-OS2-v2.93.01
# (`rtbench build` passes it from $RTBENCH_UCOS2_KERNEL or shared/vendor/:
# port.toml).
if(NOT RTB_BOARD_DIR)
  message(FATAL_ERROR "the ucos2 port builds a firmware: give -DRTB_BOARD=<a folder of boards/>")
endif()
enable_language(ASM)
set(_port ${CMAKE_CURRENT_SOURCE_DIR}/ports/ucos2)
set(RTB_PORT_HAS_LOADS ON)

include(FetchContent)
FetchContent_Declare(uc_os2
  GIT_REPOSITORY https://github.com/weston-embedded/uC-OS2.git
  GIT_TAG v2.93.01 # 0c4a48e6fbc6e915714e816196619a5481accf0c
  GIT_SHALLOW TRUE)
FetchContent_MakeAvailable(uc_os2)

# The kernel as its own library with the vendor's code as it is; ucos_ii.c
# includes every os_*.c itself (its "master file").
set(_os ${uc_os2_SOURCE_DIR})
set(_arch ARM-Cortex-M/ARMv7-M)
add_library(ucos2_kernel STATIC
  ${_os}/Source/ucos_ii.c
  ${_os}/Ports/${_arch}/os_cpu_c.c
  ${_os}/Ports/${_arch}/GNU/os_cpu_a.S)
target_include_directories(ucos2_kernel SYSTEM PUBLIC
  ${_port} ${_os}/Source ${_os}/Ports/${_arch}/GNU)
# The board's vector table names the kernel's handlers as CMSIS does.
target_compile_definitions(ucos2_kernel PUBLIC
  OS_CPU_PendSVHandler=PendSV_Handler OS_CPU_SysTickHandler=SysTick_Handler)

target_sources(rtb_core PRIVATE
  ports/ucos2/port.c
  ports/ucos2/sync.c)
target_link_libraries(rtb_core PUBLIC ucos2_kernel)
# Interrupts run on the kernel's own stack (OS_CPU_ExceptStk) once it starts: the
# board's main stack serves main() until OSStart only (OSInit, creating the
# first task; fatal()'s snprintf the deepest), 2 KiB, not the 4 KiB a
# port whose interrupts use it needs (issue 22: every case in 64 KiB).
target_link_options(rtbench-agent PRIVATE "LINKER:--defsym=__main_stack_size__=0x800")
target_sources(rtbench-agent PRIVATE ports/ucos2/firmware.c ports/ucos2/load.c boards/common/load.c)
