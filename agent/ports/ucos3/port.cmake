# SPDX-License-Identifier: Apache-2.0
# The uC/OS-III port (docs/porting.md): the kernel for a firmware on one of
# the boards under agent/boards/ (port.toml lists them). uC/OS-III, uC/CPU
# and uC/LIB come from upstream at pinned tags (CMake FetchContent); none
# of them has a CMake file, so this lists their files. Without internet,
# point CMake at copies of the tags:
#   -DFETCHCONTENT_SOURCE_DIR_UC_OS3=/path/to/uC-OS3-v3.08.02
#   -DFETCHCONTENT_SOURCE_DIR_UC_CPU=/path/to/uC-CPU-v1.32.01
#   -DFETCHCONTENT_SOURCE_DIR_UC_LIB=/path/to/uC-LIB-v1.39.01
# (`rtbench build` passes them from $RTBENCH_UCOS3_KERNEL, $RTBENCH_UC_CPU,
# $RTBENCH_UC_LIB or shared/vendor/: port.toml).
if(NOT RTB_BOARD_DIR)
  message(FATAL_ERROR "the ucos3 port builds a firmware: give -DRTB_BOARD=<a folder of boards/>")
endif()
enable_language(ASM)
set(_port ${CMAKE_CURRENT_SOURCE_DIR}/ports/ucos3)
set(RTB_PORT_HAS_LOADS ON)

include(FetchContent)
FetchContent_Declare(uc_os3
  GIT_REPOSITORY https://github.com/weston-embedded/uC-OS3.git
  GIT_TAG v3.08.02 # 93d6e79023f1031480c20f479ca7662f3f1c3c3a
  GIT_SHALLOW TRUE)
FetchContent_Declare(uc_cpu
  GIT_REPOSITORY https://github.com/weston-embedded/uC-CPU.git
  GIT_TAG v1.32.01 # fe140a6f4d65636b43b3a6a03c6f63b50dc2c5bc
  GIT_SHALLOW TRUE)
FetchContent_Declare(uc_lib
  GIT_REPOSITORY https://github.com/weston-embedded/uC-LIB.git
  GIT_TAG v1.39.01 # 68e44026f0173399e2dbfa2ed873f3b261b3b815
  GIT_SHALLOW TRUE)
FetchContent_MakeAvailable(uc_os3 uc_cpu uc_lib)

# The kernel as its own library, with its own (the vendor's) warnings: the
# agent's -Werror holds for rtbench's code, not for the kernel's.
set(_os ${uc_os3_SOURCE_DIR})
set(_cpu ${uc_cpu_SOURCE_DIR})
set(_arch ARM-Cortex-M/ARMv7-M)
add_library(ucos3_kernel STATIC
  ${_os}/Source/os_core.c
  ${_os}/Source/os_cfg_app.c
  ${_os}/Source/os_mem.c
  ${_os}/Source/os_msg.c
  ${_os}/Source/os_mutex.c
  ${_os}/Source/os_prio.c
  ${_os}/Source/os_q.c
  ${_os}/Source/os_sem.c
  ${_os}/Source/os_stat.c
  ${_os}/Source/os_task.c
  ${_os}/Source/os_tick.c
  ${_os}/Source/os_time.c
  ${_os}/Source/os_var.c
  ${_os}/Ports/${_arch}/os_cpu_c.c
  ${_os}/Ports/${_arch}/GNU/os_cpu_a.S
  ${_cpu}/cpu_core.c
  ${_cpu}/${_arch}/cpu_c.c
  ${_cpu}/${_arch}/GNU/cpu_a.s)
target_include_directories(ucos3_kernel SYSTEM PUBLIC
  ${_port} ${_os}/Source ${_os}/Ports/${_arch}/GNU ${_cpu} ${_cpu}/${_arch}/GNU
  ${uc_lib_SOURCE_DIR})
# The board's vector table names the kernel's handlers as CMSIS does.
target_compile_definitions(ucos3_kernel PUBLIC
  OS_CPU_PendSVHandler=PendSV_Handler OS_CPU_SysTickHandler=SysTick_Handler)

target_sources(rtb_core PRIVATE
  ports/ucos3/port.c
  ports/ucos3/sync.c)
target_link_libraries(rtb_core PUBLIC ucos3_kernel)
# Interrupts run on the kernel's own stack (OSCfg_ISRStk) once it starts: the
# board's main stack serves main() until OSStart only (OSInit, creating the
# first task; fatal()'s snprintf the deepest), 2 KiB, not the 4 KiB a
# port whose interrupts use it needs (issue 22: every case in 64 KiB).
target_link_options(rtbench-agent PRIVATE "LINKER:--defsym=__main_stack_size__=0x800")
target_sources(rtbench-agent PRIVATE ports/ucos3/firmware.c ports/ucos3/load.c boards/common/load.c)
