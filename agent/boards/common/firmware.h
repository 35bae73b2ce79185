/* SPDX-License-Identifier: Apache-2.0 */
/* What the RTOS ports share on a bare-metal board with newlib (this
 * folder), and the few functions each RTOS port supplies for it. A port's
 * files include this beside the board's board.h. */
#ifndef RTB_FIRMWARE_H
#define RTB_FIRMWARE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "board.h"
#include "rtb/types.h"

/* ---- supplied by the RTOS port ------------------------------------------ */

/* A short lock of the kernel's scheduler for the C library's heap and the
 * stack notes (FreeRTOS: vTaskSuspendAll; uC/OS: OSSchedLock); a no-op
 * before the scheduler runs. */
void rtb_os_lock(void);
void rtb_os_unlock(void);
/* Brackets of an interrupt handler that may call the kernel (uC/OS:
 * OSIntEnter/OSIntExit; FreeRTOS: nothing, its FromISR calls yield). */
void rtb_os_isr_enter(void);
void rtb_os_isr_exit(void);
/* Bytes of the port's thread pool a run touched, and of stacks handed out. */
size_t rtb_os_thread_slots_used(void);
size_t rtb_os_stacks_reserved(void);
/* Bytes of the port's queue storage (its bulk arena) handed out. */
size_t rtb_os_queues_reserved(void);

/* The cases' kernel load (boards/common/load.c runs its threads): one
 * thread's storm of the kernel's calls that enter its critical sections,
 * counting rounds in *ops until *stop; `objects` holds its kernel objects
 * (FIRMWARE_LOAD_OBJECTS bytes, 8-aligned). */
#define FIRMWARE_LOAD_OBJECTS 192
void rtb_os_kernel_storm(void *objects, const atomic_bool *stop, _Atomic uint32_t *ops);

/* ---- shared (this folder) ------------------------------------------------- */

/* Reads the run's arguments (semihosting), plans and runs them; returns
 * the runner's status. Called by the port's first task. */
int firmware_run_agent(void);
/* A thread's stack use, noted when it is joined (bytes of its stack and
 * bytes it never touched); written after the agent's last record. */
void firmware_stack_note(const char *name, size_t size, size_t unused);
/* Writes the notes gathered since the last call, one line each, and RAM. */
void firmware_stack_report(void);
/* rtb_release_grain of a kernel whose timed waits end on its SysTick
 * interrupt every `tick_ns`: the tick and the time of the last one. */
rtb_time firmware_systick_grain(rtb_time *phase, rtb_time tick_ns);
/* The heap's high-water mark in bytes. */
size_t firmware_heap_used(void);

#endif
