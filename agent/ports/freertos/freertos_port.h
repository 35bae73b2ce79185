/* SPDX-License-Identifier: Apache-2.0 */
/* The FreeRTOS port's own sizes and internal functions. */
#ifndef RTB_FREERTOS_PORT_H
#define RTB_FREERTOS_PORT_H

#include <stddef.h>

#include "board.h"

/* Object pools (static: the kernel has no heap). */
#define RTB_FREERTOS_THREADS 24
#define RTB_FREERTOS_MUTEXES 16
#define RTB_FREERTOS_QUEUES 8
#define RTB_FREERTOS_EVENTS 4
/* Stacks of case threads; cases ask for up to 64 KiB while series (with
 * their 16 KiB histograms) live on their stacks. */
#define RTB_FREERTOS_STACK_ARENA (512 * 1024)
#define RTB_FREERTOS_DEFAULT_STACK (8 * 1024)
#define RTB_FREERTOS_QUEUE_ARENA (64 * 1024)
/* The task that runs the agent's plan (the core's runner, the cases). */
#define RTB_FREERTOS_MAIN_STACK (160 * 1024)

/* A thread's stack use, noted when it is joined: the firmware reports the
 * high-water mark of every case (freertos_stack_report). */
void freertos_stack_note(const char *name, size_t size, size_t unused);
/* Writes the notes gathered since the last call as one line each. */
void freertos_stack_report(void);

#endif
